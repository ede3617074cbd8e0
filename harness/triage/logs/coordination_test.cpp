// Unit tests of the JAX/TSL coordination service's reading (logs/coordination.cpp): lines in the emitters'
// own formats (catalogue emitters tsl-6a79f3a, tsl-2e2b2c7, xla-zkx-7068370), each quoted from the source
// line named in its comment, and the answers they lead to.
#include <catch2/catch.hpp>

#include "triage/log_test_support.hpp"
#include "triage/logs/catalogue.hpp"
#include "triage/logs/coordination.hpp"
#include "triage/reason/log.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

namespace {

TriageResult triage_text(const std::string& name, const std::string& text) {
  TempDir d(name);
  write_file(d.dir / "train.log", text);
  return triage_logs({d.dir / "train.log"});
}

// The glog prefix jaxlib's C++ lines carry.
const std::string kGlog = "E0312 10:00:05.000000 140000 coordination_service.cc:470] ";

}  // namespace

TEST_CASE("a TSL task name is its JAX process index, and a status is read inside the message that carries it",
          "[triage_logs]") {
  CHECK(jax_task_rank("/job:jax_worker/replica:0/task:12") == 12);
  CHECK(jax_task_rank("/job:jax_worker/replica:0/task:12", /*whole=*/true) == 12);
  CHECK(jax_task_rank(" /job:jax_worker/replica:0/task:12 x", /*whole=*/true) == -1);
  CHECK(jax_task_rank("/job:worker/replica:0/task:3") == -1);  // a TensorFlow job counts its own tasks
  CHECK(jax_task_rank("/job:jax_worker/replica:0/task:") == -1);
  // SetTaskError's LOG(ERROR) << task_name << " has been set to ERROR in coordination service: " << error
  // (coordination_service.cc:923@google/tsl 6a79f3a2), the error being the staleness check's
  // errors::Unavailable("Task ", task_name, " heartbeat timeout. This indicates that the remote task has failed,
  // got preempted, or crashed unexpectedly.") (:394-397), printed with its payload by Status::ToString.
  const std::string line =
      "/job:jax_worker/replica:0/task:5 has been set to ERROR in coordination service: UNAVAILABLE: Task "
      "/job:jax_worker/replica:0/task:5 heartbeat timeout. This indicates that the remote task has failed, got "
      "preempted, or crashed unexpectedly. [type.googleapis.com/tensorflow.CoordinationServiceError='']";
  const auto hit = builtin_catalogue().match(line);
  REQUIRE(hit);
  CHECK(hit->entry->emitter == "tsl");
  CHECK(hit->entry->format.rfind("Task {} heartbeat timeout.", 0) == 0);
  CHECK(hit->named_int("peer_rank") == 5);  // the task's number, not the replica's 0
}

TEST_CASE("coordination service lines", "[triage_logs]") {
  SECTION("a heartbeat timeout names the task that stopped heartbeating") {
    // The same status (coordination_service.cc:411-415@2e2b2c7) in the agent's SetError
    // (coordination_service_agent.cc:761@2e2b2c7).
    const auto l = parse(kGlog + "Coordination agent is set to ERROR: UNAVAILABLE: Task /job:jax_worker/replica:0/task:2 "
                                 "heartbeat timeout. This indicates that the remote task has failed, got preempted, or "
                                 "crashed unexpectedly. Check the task logs for an earlier error to debug further.");
    CHECK(l.kind == LogKind::kDesyncMissing);
    CHECK(l.word == "coordination");
    CHECK(l.ranks == std::vector<int>{2});
    // A TensorFlow cluster's task is no rank.
    const auto tf = parse(kGlog + "Task /job:worker/replica:0/task:2 heartbeat timeout. This indicates that the remote "
                                  "task has failed, got preempted, or crashed unexpectedly.");
    CHECK(tf.kind == LogKind::kDesyncMissing);
    CHECK(tf.ranks.empty());
  }
  SECTION("a start-up barrier's timeout is a rendezvous that timed out; another barrier only names tasks") {
    // errors::DeadlineExceeded(StrCat("Barrier timed out. Barrier_id: ", barrier_id, ". Timed out task names:\n",
    // pending_tasks)) (coordination_service.cc:466-470@2e2b2c7) raised by jaxlib from Connect()'s
    // WaitAtBarrier("PjRT_Client_Connect", ...) (xla/pjrt/distributed/client.cc).
    const auto c = parse("jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
                         "PjRT_Client_Connect. Timed out task names:");
    CHECK(c.kind == LogKind::kRendezvousError);
    CHECK(c.category == "rendezvous");
    CHECK(c.cause == "rendezvous_timeout");
    CHECK(c.phase == "init");
    CHECK(c.op == "PjRT_Client_Connect");
    // 2022's text ends with the id (coordination_service.cc:436-437@6a79f3a2), its payload after it.
    const auto old = parse("jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
                           "PjRT_Client_Connect [type.googleapis.com/tensorflow.CoordinationServiceError='']");
    CHECK(old.kind == LogKind::kRendezvousError);
    CHECK(old.op == "PjRT_Client_Connect");
    // The 2025 text (absl::StrFormat, xla/tsl/.../coordination_service.cc:697-704@zkx 7068370) of a program's own
    // barrier (orbax's wait_at_barrier): no phase, no rendezvous.
    const auto o = parse("jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: "
                         "1_checkpoint_save.0.1. This usually happens because a task triggered the barrier too early or "
                         "too slowly. Please look at the task logs (both timed out and first task) to debug further.");
    CHECK(o.kind == LogKind::kDesyncMissing);
    CHECK(o.category.empty());
    CHECK(o.phase.empty());
    CHECK(o.op == "1_checkpoint_save.0.1");
  }
  SECTION("cluster registration failed: a rendezvous timeout in init") {
    // LOG(ERROR) << "Stopping coordination service as cluster registration failed. ..." << cluster_register_timeout_
    // << ".\n\nOriginal error: " << result (coordination_service.cc:1767-1772@zkx 7068370).
    const auto l = parse("Stopping coordination service as cluster registration failed. This may be due to 1) some "
                         "tasks crashed earlier before connecting, 2) some tasks were never scheduled, or 3) scheduling "
                         "delays. Consider setting a longer initialization timeout if such delays are expected, the "
                         "timeout is currently set to: 30m.");
    CHECK(l.kind == LogKind::kRendezvousError);
    CHECK(l.category == "rendezvous");
    CHECK(l.cause == "rendezvous_timeout");
    CHECK(l.phase == "init");
  }
  SECTION("XLA's rendezvous: initializing a clique is start-up work, acquiring one is not") {
    // LOG(ERROR) << absl::StreamFormat("This thread has been waiting for `%s` for %d seconds and may be stuck. Expected
    // %d threads to join the rendezvous, but not all of them arrived on time.", ...) (zkx/service/rendezvous.cc:106-110),
    // its name from InitializeGpuClique (zkx/backends/gpu/collectives/gpu_cliques.cc:293-295).
    const auto i = parse("E0729 17:14:59.920189 1234 rendezvous.cc:38] This thread has been waiting for `initialize "
                         "clique for rank 2; clique=devices=[0,1,2,3]; run_id=77` for 10 seconds and may be stuck. "
                         "Expected 4 threads to join the rendezvous, but not all of them arrived on time.");
    CHECK(i.kind == LogKind::kInitBegin);
    const auto a = parse("E0729 17:14:59.920189 1234 rendezvous.cc:38] This thread has been waiting for `acquire clique "
                         "for rank 2; clique=devices=[0,1,2,3]; run_id=77` for 10 seconds and may be stuck. Expected 4 "
                         "threads to join the rendezvous, but not all of them arrived on time.");
    CHECK(a.kind == LogKind::kNone);
  }
}

TEST_CASE("coordination service verdicts: the tasks they name", "[triage_logs]") {
  SECTION("the connect barrier's list: the ranks that never arrived, in init") {
    // coordination_service.cc:458-470@2e2b2c7: one GetTaskName(task) + "\n" per task not at the barrier.
    const auto r = triage_text("tsl_connect",
                               "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
                               "PjRT_Client_Connect. Timed out task names:\n"
                               "/job:jax_worker/replica:0/task:3\n"
                               "/job:jax_worker/replica:0/task:1\n"
                               "\n"
                               "Additional GRPC error information from remote target unknown_target_for_coordination_leader "
                               "while calling /tensorflow.CoordinationService/Barrier:\n");
    CHECK(r.category == "rendezvous");
    CHECK(r.cause == "rendezvous_timeout");
    CHECK(r.phase == "init");
    CHECK(r.missing_ranks == std::vector<int>{1, 3});
    CHECK(r.scope == "subset");
  }
  SECTION("a list at the version's cap does not name every missing task") {
    // kPendingTaskLogLimit = 20 (coordination_service.cc:65@2e2b2c7): the 21st pending task breaks the loop.
    std::string text = "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
                       "PjRT_Client_Connect. Timed out task names:\n";
    for (int t = 1; t <= 20; ++t) text += fmt::format("/job:jax_worker/replica:0/task:{}\n", t);
    const auto r = triage_text("tsl_capped", text);
    CHECK(r.category == "rendezvous");
    CHECK(r.cause == "rendezvous_timeout");
    CHECK(r.missing_ranks.empty());
  }
  SECTION("2025's count says whether the names are all of them") {
    // coordination_service.cc:697-704@zkx 7068370: "# of tasks that reached the barrier: %d/%d.\nThe first task at
    // the barrier: %s. Some timed out task names:\n%s".
    const std::string head =
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: 1_checkpoint_save.0.1. This "
        "usually happens because a task triggered the barrier too early or too slowly. Please look at the task logs "
        "(both timed out and first task) to debug further.\n";
    const auto whole = triage_text("xla_whole", "step 40 loss 1.2\n" + head +
                                                    "# of tasks that reached the barrier: 2/4.\n"
                                                    "The first task at the barrier: /job:jax_worker/replica:0/task:0. "
                                                    "Some timed out task names:\n"
                                                    "/job:jax_worker/replica:0/task:3\n"
                                                    "/job:jax_worker/replica:0/task:2\n"
                                                    "\n");
    CHECK(whole.category == "unknown");
    CHECK(whole.missing_ranks == std::vector<int>{2, 3});
    CHECK(whole.scope == "subset");
    const auto cut = triage_text("xla_cut", "step 40 loss 1.2\n" + head +
                                                "# of tasks that reached the barrier: 2/8.\n"
                                                "The first task at the barrier: /job:jax_worker/replica:0/task:0. "
                                                "Some timed out task names:\n"
                                                "/job:jax_worker/replica:0/task:3\n"
                                                "/job:jax_worker/replica:0/task:2\n");
    CHECK(cut.missing_ranks.empty());
  }
  SECTION("a heartbeat timeout during training: that task is missing, the cause unknown") {
    const auto r = triage_text("tsl_heartbeat",
                               "I0312 10:00:00.000000 140000 trainer.py:501] Training: step 40\n"
                               "I0312 10:00:01.000000 140000 trainer.py:501] Training: step 41\n" +
                                   kGlog +
                                   "/job:jax_worker/replica:0/task:5 has been set to ERROR in coordination service: "
                                   "UNAVAILABLE: Task /job:jax_worker/replica:0/task:5 heartbeat timeout. This indicates "
                                   "that the remote task has failed, got preempted, or crashed unexpectedly. "
                                   "[type.googleapis.com/tensorflow.CoordinationServiceError='']\n");
    CHECK(r.category == "unknown");
    CHECK(r.cause == "unknown");
    CHECK(r.phase == "training");
    CHECK(r.missing_ranks == std::vector<int>{5});
    CHECK(r.scope == "subset");
  }
  SECTION("the unhealthy tasks' list: every stale task, the cause unknown") {
    // absl::UnavailableError(StrCat("The following tasks are unhealthy (stopped sending heartbeats):\n",
    // StrJoin(stale_task_names, "\n"), "\nThe tasks have crashed. ...")) (coordination_service.cc:659-665@zkx
    // 7068370), delivered to every task and raised by jaxlib.
    const auto r = triage_text("xla_unhealthy",
                               "step 12 loss 0.5\n"
                               "jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: The following tasks are unhealthy "
                               "(stopped sending heartbeats):\n"
                               "/job:jax_worker/replica:0/task:6\n"
                               "/job:jax_worker/replica:0/task:2\n"
                               "The tasks have crashed. Check the task logs for an earlier error, or scheduler events "
                               "(e.g. preemption, eviction) to debug further.\n");
    CHECK(r.category == "unknown");
    CHECK(r.missing_ranks == std::vector<int>{2, 6});
    CHECK(r.phase == "training");
  }
  SECTION("the shutdown barrier's absent tasks: shutdown") {
    // shutdown_barrier_id_ = StrCat("Shutdown::", service_incarnation_) (coordination_service.cc:251@2e2b2c7).
    const auto r = triage_text("tsl_shutdown",
                               "step 12 loss 0.5\n"
                               "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
                               "Shutdown::8813210937. Timed out task names:\n"
                               "/job:jax_worker/replica:0/task:1\n");
    CHECK(r.category == "unknown");
    CHECK(r.missing_ranks == std::vector<int>{1});
    CHECK(r.phase == "shutdown");
  }
  SECTION("cluster registration failed, no task named") {
    const auto r = triage_text(
        "xla_register",
        "Stopping coordination service as cluster registration failed. This may be due to 1) some tasks crashed earlier "
        "before connecting, 2) some tasks were never scheduled, or 3) scheduling delays. Consider setting a longer "
        "initialization timeout if such delays are expected, the timeout is currently set to: 30m.\n"
        "\n"
        "Original error: DEADLINE_EXCEEDED: Barrier timed out. Id: [Init]Wait_for_all_tasks_to_register::0. This usually "
        "happens because a task triggered the barrier too early or too slowly. Please look at the task logs (both timed "
        "out and first task) to debug further.\n");
    CHECK(r.category == "rendezvous");
    CHECK(r.cause == "rendezvous_timeout");
    CHECK(r.phase == "init");
    CHECK(r.missing_ranks.empty());
    CHECK(r.scope == "subset");
  }
  SECTION("a clique's first rendezvous stuck: the phase only") {
    const auto r = triage_text("xla_clique",
                               "2024-07-29 17:14:59.920189: E external/xla/xla/service/rendezvous.cc:38] This thread has "
                               "been waiting for `initialize clique for rank 2; clique=devices=[0,1,2,3]; run_id=77` for "
                               "10 seconds and may be stuck. Expected 4 threads to join the rendezvous, but not all of "
                               "them arrived on time.\n");
    CHECK(r.category == "unknown");
    CHECK(r.phase == "init");
  }
}
