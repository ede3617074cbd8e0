// Unit tests of causes read from one line or one shape (issue 24, category/cause misses): the kubelet's
// eviction by the resource it names, Ray's memory-monitor kill summary, NCCL's queue-pair bring-up failure,
// and ranks that only wait in init_process_group's store barrier.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "triage/log_test_support.hpp"
#include "triage/logs/parse.hpp"
#include "triage/model/causes.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

TEST_CASE("kubelet eviction: disk pressure is a full disk, memory pressure an OOM kill", "[triage_logs]") {
  auto l = parse(
      "The node was low on resource: ephemeral-storage. Container trainer was using 912Mi, which exceeds "
      "its request of 0.");
  CHECK(l.kind == LogKind::kDiskFull);
  l = parse("Pod is in Failed phase due to Evicted: The node was low on resource: inodes.");
  CHECK(l.kind == LogKind::kDiskFull);
  l = parse("The node was low on resource: memory. Container trainer was using 31Gi, which exceeds its request of 0.");
  CHECK(l.kind == LogKind::kOomKill);
  TempDir t("evict_disk");
  write_file(t.dir / "pod.yaml",
             "status:\n  message: 'The node was low on resource: ephemeral-storage. Container trainer was using "
             "912Mi, which exceeds its request of 0. '\n  phase: Failed\n  reason: Evicted\n");
  const auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "disk_full");
}

TEST_CASE("Ray's memory monitor: a kill summary counting kills is an OOM kill, a zero count is none", "[triage_logs]") {
  auto l = parse(
      "(raylet) [2024-01-02 10:00:00,117 E 1357 1357] (raylet) node_manager.cc:3069: 2 Workers (tasks / "
      "actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
      "abc, IP: 10.0.0.7) over the last time period.");
  CHECK(l.kind == LogKind::kOomKill);
  l = parse(
      "(raylet) [2024-01-02 10:00:00,117 E 1357 1357] (raylet) node_manager.cc:3069: 0 Workers (tasks / "
      "actors) killed due to memory pressure (OOM), 3 Workers crashed due to other reasons at node (ID: abc, "
      "IP: 10.0.0.7) over the last time period.");
  CHECK(l.kind != LogKind::kOomKill);
  TempDir t("ray_oom");
  write_file(t.dir / "driver.log",
             "(raylet) [2024-01-02 10:00:00,117 E 1357 1357] (raylet) node_manager.cc:3069: 1 Workers (tasks / "
             "actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: abc, "
             "IP: 10.0.0.7) over the last time period.\n");
  const auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "oom");
}

TEST_CASE("NCCL cannot bring a queue pair up: the IB/RoCE set-up, at connection time", "[triage_logs]") {
  // NCCL 2.2x+ wording (ibvwrap.cc: the QP's states and GIDs), and the older "failed with error <strerror>".
  for (const char* line :
       {"h-1:4242:4300 [5] ibvwrap.cc:376 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on "
        "dev mlx5_3:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.1.0.5, remote GID "
        "::ffff:10.2.0.9",
        "h-1:4242:4300 [0] ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out."}) {
    INFO(line);
    TempDir t("modify_qp");
    write_file(t.dir / "nccl.log", std::string(line) + "\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.category == "network");
    CHECK(r.cause == "ib_config");
    CHECK(r.phase == "init");
  }
  // A completion error on a connected queue pair stays a transport error.
  TempDir t("ib_completion");
  write_file(t.dir / "nccl.log",
             "w-1:946:988 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion with error 12, opcode 1, len "
             "0, vendor err 129\n");
  const auto r = triage_logs({t.dir});
  CHECK(r.cause == "ib_error");
}

static std::string barrier_wait(int rank, int key, int world, int count, int sec) {
  return fmt::format(
      "[2023-07-14 18:21:{:02d},182][torch.distributed.distributed_c10d][INFO] - Waiting in store based "
      "barrier to initialize process group for rank: {}, key: store_based_barrier_key:{} (world_size={}, "
      "worker_count={}, timeout=0:30:00)\n",
      sec, rank, key, world, count);
}

TEST_CASE("ranks that only wait in init's store barrier: who never arrived, a stale count, a late rank",
          "[triage_logs]") {
  // One waiter repeating a count of 1 of 2: it counted itself; rank 1 never arrived.
  TempDir t("barrier_short");
  write_file(t.dir / "train.log",
             barrier_wait(0, 1, 2, 1, 10) + barrier_wait(0, 1, 2, 1, 20) + barrier_wait(0, 1, 2, 1, 30));
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "rendezvous_timeout");
  CHECK(r.phase == "init");
  CHECK(r.missing_ranks == std::vector<int>{1});
  CHECK((!r.first_failure || r.first_failure->rank < 0));
  // Several waiters, one line each: the count is a moment's; which ranks are missing is not said.
  TempDir t2("barrier_moment");
  write_file(t2.dir / "train.log", barrier_wait(6, 1, 16, 7, 32) + barrier_wait(3, 1, 16, 7, 32));
  r = triage_logs({t2.dir});
  CHECK(r.cause == "rendezvous_timeout");
  CHECK(r.missing_ranks.empty());
  // More arrivals than the world: the count never comes down to it.
  TempDir t3("barrier_over");
  write_file(t3.dir / "train.log", barrier_wait(0, 1, 4, 8, 10) + barrier_wait(0, 1, 4, 8, 20));
  r = triage_logs({t3.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "stale_rendezvous");
  CHECK(r.missing_ranks.empty());
  // A later group's barrier: everyone passed the default group's, so the rank not counted is alive and late.
  TempDir t4("barrier_later_group");
  write_file(t4.dir / "train.log", barrier_wait(2, 2, 8, 7, 4) + barrier_wait(7, 2, 8, 7, 4));
  r = triage_logs({t4.dir});
  CHECK(r.category == "straggler");
  CHECK(r.cause == "stuck_in_init");
  CHECK(r.phase == "init");
  // A failure of its own decides, not the wait.
  TempDir t5("barrier_and_oom");
  write_file(t5.dir / "train.log", barrier_wait(0, 1, 2, 1, 10) + barrier_wait(0, 1, 2, 1, 20) +
                                       "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n");
  r = triage_logs({t5.dir});
  CHECK(r.cause != "rendezvous_timeout");
}

TEST_CASE("torchelastic: a rendezvous already closed at an agent's first join is an earlier run's", "[triage_logs]") {
  const std::string start =
      "INFO:torch.distributed.elastic.agent.server.api:[default] starting workers for entrypoint: python\n"
      "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous'ing worker group\n";
  TempDir t("rdzv_closed");
  write_file(t.dir / "agent.log", start + "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "stale_rendezvous");
  CHECK(r.phase == "init");
  // With a failure of the job's own before it, the closed rendezvous is that failure's consequence.
  TempDir t2("rdzv_closed_after_crash");
  write_file(t2.dir / "agent.log", start +
                                       "[2024-01-02 10:00:00,000] torch.distributed.elastic.multiprocessing.api: "
                                       "[ERROR] failed (exitcode: -11) local_rank: 0 (pid: 48) of binary: python\n"
                                       "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n");
  r = triage_logs({t2.dir});
  CHECK(r.cause != "stale_rendezvous");
}

TEST_CASE("an NCCL set-up failure after the process-group banner is init -- after a step it is not", "[triage_logs]") {
  // ProcessGroupNCCL builds its communicator at the first collective, after init_process_group
  // returned and Lightning printed its banner: NCCL's topology search failing then is still set-up.
  const std::string banner =
      "distributed_backend=nccl\nAll distributed processes registered. Starting with 2 processes\n";
  const std::string topo = "node-1:4242:4300 [0] graph/topo.h:230 NCCL WARN Could not find NET with id 0\n";
  TempDir t("nccl_setup_after_banner");
  write_file(t.dir / "train.log", banner + topo);
  auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.cause == "topology_error");
  CHECK(r.phase == "init");
  // The same failure after the job logged a training step: a communicator made mid-run (a new group).
  TempDir t2("nccl_setup_after_step");
  write_file(t2.dir / "train.log", banner + "Epoch 0: step 12/100 loss=0.52\n" + topo);
  r = triage_logs({t2.dir});
  INFO(render_text(r));
  CHECK(r.cause == "topology_error");
  CHECK(r.phase != "init");
}

TEST_CASE("torchrun's RendezvousConnectionError under a store connect timeout: the store was never reached", "[triage_logs]") {
  // c10d_rendezvous_backend.py raises RendezvousConnectionError when its TCPStore client never
  // connected; the store's own timeout line says what happened.
  TempDir t("rdzv_connection");
  write_file(t.dir / "torchrun.log",
             "[E socket.cpp:793] [c10d] The client socket has timed out after 60s while trying to connect to "
             "(10.0.0.9, 29400).\n"
             "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d "
             "store has failed. See inner exception for details.\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "store_timeout");
  CHECK(r.phase == "init");
}

TEST_CASE("c10d's warning that one address of the store's name is unusable here is not a failure", "[triage_logs]") {
  // socket.cpp records it and tries the name's next address; only "... any network address of" says
  // that none worked.
  TempDir t("c10d_addr_99");
  write_file(t.dir / "train.log",
             "[W socket.cpp:663] [c10d] The client socket has failed to connect to [ip6-localhost]:24355 (errno: 99 - "
             "Cannot assign requested address).\n");
  auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "unknown");
  TempDir t2("c10d_addr_all");
  write_file(t2.dir / "train.log",
             "torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of "
             "(ip6-localhost, 24355). The client socket has failed to connect to [ip6-localhost]:24355 (errno: 99 - "
             "Cannot assign requested address).\n");
  r = triage_logs({t2.dir});
  INFO(render_text(r));
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "store_unreachable");
}

TEST_CASE("NCCL's Init COMPLETE alone does not show that training began", "[triage_logs]") {
  // An IB completion error in the proxy thread right after the communicators' set-up, no step anywhere:
  // the collective in flight may be set-up's own broadcast or an inference job's.
  const std::string init =
      "node-a:100:200 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 5000 - Init COMPLETE\n"
      "node-a:101:201 [1] NCCL INFO comm 0x55d1 rank 1 nranks 2 cudaDev 1 busId 6000 - Init COMPLETE\n";
  const std::string ib =
      "node-a:101:230 [1] ib_plugin.c:978 NCCL WARN NET/IB : Got completion from peer 10.0.0.8<48598> with error 12, "
      "opcode 0, len 0, vendor err 129\n";
  TempDir t("init_complete_then_ib");
  write_file(t.dir / "train.log", init + ib);
  auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "network");
  CHECK(r.phase != "training");
  TempDir t2("init_complete_step_ib");
  write_file(t2.dir / "train.log", init + "step 40/1000 loss 2.31\n" + ib);
  r = triage_logs({t2.dir});
  INFO(render_text(r));
  CHECK(r.category == "network");
  CHECK(r.phase == "training");
}

// Slurm's step OOM summary (every wording, 20.02-24.11 task_cgroup_memory.c) names no process; beside a
// launcher's "exited on signal 9 (Killed)" it says why the rank was killed: an OOM kill (gh-chombo-discharge-501).
TEST_CASE("a SIGKILL beside Slurm's step OOM summary is an OOM kill", "[triage_logs]") {
  const char* kSummaries[] = {
      "slurmstepd: error: Detected 88 oom_kill events in StepId=1103245.batch. Some of the step tasks have been OOM "
      "Killed.",
      "slurmstepd: error: Detected 1 oom_kill event in StepId=7.0. Some of the step tasks have been OOM Killed.",
      "slurmstepd: error: Detected 2 oom-kill event(s) in StepId=191.batch. Some of your processes may have been "
      "killed by the cgroup out-of-memory handler.",
      "slurmstepd: error: Detected 1 oom-kill event(s) in step 191.batch cgroup. Some of your processes may have been "
      "killed by the cgroup out-of-memory handler.",
  };
  for (const char* summary : kSummaries) {
    TempDir t("slurm_oom");
    write_file(t.dir / "job.log",
               std::string("> mpirun noticed that process rank 5 with PID 1035144 on node b3168 exited on signal 9 "
                           "(Killed).\n> 256 total processes killed (some possibly by mpirun during cleanup)\n> ") +
                   summary + "\n");
    const auto r = triage_logs({t.dir});
    INFO(summary);
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "oom");
    CHECK(r.missing_ranks == std::vector<int>{5});
  }
  // Without the summary the same kill stays a kill of unknown origin.
  TempDir t("slurm_kill");
  write_file(t.dir / "job.log",
             "mpirun noticed that process rank 5 with PID 1035144 on node b3168 exited on signal 9 (Killed).\n");
  const auto r = triage_logs({t.dir});
  CHECK(r.cause == "killed");
}

TEST_CASE("two processes that took the same ranks: their join lines twice, interleaved, and the others' never",
          "[triage_logs]") {
  // Lightning's per-rank join line on two nodes that both took global ranks 0-3 of 8.
  std::string two;
  for (int r : {1, 2, 3, 0})
    for (int copy = 0; copy < 2; ++copy)
      two += fmt::format("LOCAL_RANK: {0} - CUDA_VISIBLE_DEVICES: [0,1,2,3]\ninitializing ddp: GLOBAL_RANK: {0}, "
                         "MEMBER: {1}/8\n",
                         r, r + 1);
  {
    TempDir t("dup_interleaved");
    write_file(t.dir / "train.log", two);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "duplicate_rank");
    CHECK(r.missing_ranks == std::vector<int>{4, 5, 6, 7});
  }
  {
    // A logger with two handlers writes each line twice in a row: one process each, ranks 4-7 never joined.
    std::string doubled;
    for (int r : {0, 1, 2, 3})
      doubled += fmt::format("initializing ddp: GLOBAL_RANK: {0}, MEMBER: {1}/8\ninitializing ddp: GLOBAL_RANK: {0}, "
                             "MEMBER: {1}/8\n",
                             r, r + 1);
    TempDir t("dup_doubled_handler");
    write_file(t.dir / "train.log", doubled);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause != "duplicate_rank");
  }
  {
    // A failure between the two rounds: the second is a restart's.
    std::string restart;
    for (int r : {0, 1, 2, 3})
      restart += fmt::format("initializing ddp: GLOBAL_RANK: {0}, MEMBER: {1}/8\n", r, r + 1);
    restart += "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
               "store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)\n";
    for (int r : {0, 1, 2, 3})
      restart += fmt::format("initializing ddp: GLOBAL_RANK: {0}, MEMBER: {1}/8\n", r, r + 1);
    TempDir t("dup_restart");
    write_file(t.dir / "train.log", restart);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause != "duplicate_rank");
  }
}

TEST_CASE("Ray's raylet: a worker process dead before it registered crashed in its start-up", "[triage_logs]") {
  const std::string dead = "(raylet) [2025-10-31 17:08:05,490 E 24507 24507] (raylet) worker_pool.cc:586: Some workers "
                           "of the worker process(26154) have not registered within the timeout. The process is dead, "
                           "probably it crashed during start.\n";
  auto l = parse(dead);
  CHECK(l.kind == LogKind::kCrash);
  CHECK(l.cause == "crashed");
  // Its sibling: alive and slow to start is no death.
  CHECK(parse("(raylet) worker_pool.cc:586: Some workers of the worker process(26154) have not registered within the "
              "timeout. The process is still alive, probably it's hanging during start.")
            .kind != LogKind::kCrash);
  TempDir t("ray_worker_dead");
  write_file(t.dir / "raylet.log", dead);
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "crashed");
  CHECK(r.phase == "init");
  CHECK(!mentions(render_text(r), "signal 0"));
}

TEST_CASE("a kill right after the model's loading bar, before any step: the job was still starting", "[triage_logs]") {
  const std::string load = "Loading checkpoint shards: 100%|##########| 61/61 [05:45<00:00,  5.66s/it]\n";
  const std::string kill = "[2024-06-01 10:00:00,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
                           "(exitcode: -9) local_rank: 5 (pid: 22) of binary: /opt/conda/bin/python\n";
  {
    TempDir t("kill_after_loading");
    write_file(t.dir / "train.log", load + kill);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "killed");
    CHECK(r.phase == "init");
  }
  {
    TempDir t("kill_after_steps");
    write_file(t.dir / "train.log", load + " 12%|#         | 120/1000 [02:00<14:40,  1.00s/it]\n" + kill);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase != "init");
  }
}

// NCCL's socket connect: 2.4's "Connect to %s failed : %s" (src/include/socket.h:390@v2.4.8-1), its retry
// "Call to connect returned %s, retrying" (socket.h:385), then NCCLCHECK's unwinding trace, one
// "file.cc:line -> code" INFO line per function (src/include/checks.h). Through bootstrap.cc, a refusal is
// NCCL's own rendezvous failing at communicator init; an unreachable host stays the network's; neither is
// a rendezvous store's refusal.
TEST_CASE("NCCL's bootstrap refused: its own rendezvous failed, not the store and not the link", "[triage_logs]") {
  const std::string p = "node13:941227:943077 [0] ";
  CHECK(parse(p + "NCCL INFO Call to connect returned Connection refused, retrying").kind == LogKind::kNone);
  const auto warn = parse(p + "include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused");
  CHECK(warn.kind == LogKind::kSocketError);
  CHECK(warn.category == "network");
  const std::string trace = p + "NCCL INFO bootstrap.cc:100 -> 2\n" + p + "NCCL INFO bootstrap.cc:326 -> 2\n" + p +
                            "NCCL INFO init.cc:695 -> 2\n";
  {
    TempDir t("nccl_boot_refused");
    write_file(t.dir / "nccl.log", p + "NCCL INFO Call to connect returned Connection refused, retrying\n" + p +
                                       "NCCL INFO Call to connect returned Connection refused, retrying\n" + p +
                                       "include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : "
                                       "Connection refused\n" +
                                       trace);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rendezvous");
    CHECK(r.cause == "bootstrap_error");
    CHECK(r.phase == "init");
  }
  {
    // 2.2x: "socketPollConnect: Connect to %s returned %d(%s) errno %d(%s)" (misc/socket.cc): no route.
    TempDir t("nccl_boot_noroute");
    write_file(t.dir / "nccl.log", p + "misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> "
                                       "returned 113(No route to host) errno 115(Operation now in progress)\n" +
                                       trace);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "network");
  }
  {
    // The same refusal unwound through the transport's connect (not the bootstrap): a link, not a store.
    TempDir t("nccl_net_refused");
    write_file(t.dir / "nccl.log", p + "include/socket.h:390 NCCL WARN Connect to 10.38.10.112<41017> failed : "
                                       "Connection refused\n" +
                                       p + "NCCL INFO transport/net_socket.cc:330 -> 2\n" + p +
                                       "NCCL INFO transport/net.cc:300 -> 2\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause != "connection_refused");
    CHECK(r.cause != "bootstrap_error");
  }
  {
    // The refusal beside a watchdog's collective timeout (a communicator set up while others wait, e.g. a new
    // subgroup's): the answer keeps the refusal's own meaning, never network/bootstrap_error (a pair no
    // category holds; found by the fuzzer).
    TempDir t("nccl_boot_refused_waiting");
    write_file(t.dir / "nccl.log",
               "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600004 "
               "milliseconds before timing out.\n" +
                   p + "include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused\n" +
                   trace);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(listed_cause(r.category, r.cause));
    CHECK(r.category == "rendezvous");
    CHECK(r.cause == "bootstrap_error");
    CHECK(r.phase == "init");
  }
}

// torch's DataLoader: the main process raises "DataLoader worker (pid(s) %s) exited unexpectedly"
// (torch/utils/data/dataloader.py, _try_get_data) for a worker gone without a signal it can name; the
// worker's own SIGBUS handler writes "ERROR: Unexpected bus error encountered in worker. This might be caused
// by insufficient shared memory (shm)." (torch/csrc/DataLoader.cpp). Two processes' streams: the worker's
// words can land after the parent's traceback, and they say why.
TEST_CASE("a DataLoader worker's own shm message explains the parent's 'exited unexpectedly', in any order",
          "[triage_logs]") {
  const std::string parent =
      "Traceback (most recent call last):\n"
      "  File \"/opt/conda/lib/python3.7/site-packages/torch/utils/data/dataloader.py\", line 885, in _try_get_data\n"
      "    raise RuntimeError('DataLoader worker (pid(s) {}) exited unexpectedly'.format(pids_str)) from e\n"
      "RuntimeError: DataLoader worker (pid(s) 18894, 18897) exited unexpectedly\n";
  const std::string shm =
      "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
      "(shm).\n";
  {
    TempDir t("dl_shm_after");
    write_file(t.dir / "traceback.log", "Start training\n" + parent + shm);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "data_loading");
    CHECK(r.cause == "shm_exhausted");
  }
  {
    TempDir t("dl_alone");
    write_file(t.dir / "traceback.log", "Start training\n" + parent);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "data_loading");
    CHECK(r.cause == "data_loader_crash");
  }
}

// traceback.py's StackSummary.format prints each frame as '  File "%s", line %d, in %s' and, indented
// under it, the frame's source line: the program's code, whatever words it holds, not its output.
TEST_CASE("a traceback's source lines are code, not messages", "[triage_logs]") {
  TempDir t("tb_code_line");
  write_file(t.dir / "train.log",
             "step 3 loss 0.5\n"
             "Traceback (most recent call last):\n"
             "  File \"train.py\", line 10, in <module>\n"
             "    raise ValueError(\"CUDA out of memory is not what this is\")\n"
             "ValueError: bad batch shape\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "exception");
}

// ProcessGroupGloo.cpp: logAndThrow("Gloo connectFullMesh failed with ", ex.what()): the hole is Gloo's
// error. Gloo's tcp/pair.cc connectCallback took its Error by value before 5ca057d ("gloo: fix error what"),
// so those builds print "no error" (tcp/error.cc): the line says the mesh did not connect, not why.
TEST_CASE("Gloo's connectFullMesh failing with 'no error' names no cause, only the init it failed in",
          "[triage_logs]") {
  TempDir t("gloo_no_error");
  write_file(t.dir / "train.log",
             "[E314 16:42:10.528865173 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
             "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "unknown");
  CHECK(r.cause == "unknown");
  CHECK(r.phase == "init");
}

// torch.multiprocessing.spawn's parent: ProcessContext.join raises "process %d terminated with signal %s" (a plain
// Exception before torch 1.6, ProcessExitedException since; torch/multiprocessing/spawn.py:201-214@2.15.0) when
// the child of that spawn index died of the signal; "... with exit code %d" when it exited.
TEST_CASE("torch.multiprocessing.spawn's 'process N terminated with signal' is child N's death", "[triage_logs]") {
  auto l = parse("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit code 1");
  CHECK(l.kind == LogKind::kLauncherExit);
  CHECK(l.local_rank == 0);
  CHECK(l.code == 1);
  CHECK(parse("Sending process 1365 closing signal SIGTERM").kind != LogKind::kLauncherExit);
  TempDir t("spawn_sigkill");
  write_file(t.dir / "train.log",
             "Epoch: [19][300/7922]\tTime: 0.630s (0.682s)\tSpeed: 12.7 samples/s\n"
             "Traceback (most recent call last):\n"
             "  File \"/usr/lib/python3.6/site-packages/torch/multiprocessing/spawn.py\", line 107, in join\n"
             "    (error_index, name)\n"
             "Exception: process 1 terminated with signal SIGKILL\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "killed");
  CHECK(r.missing_ranks == std::vector<int>{1});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 1);
}

// NCCL 2.4-2.7's warning form of its collective check (ncclCommGetAsyncError, src/init.cc:1254-1258@v2.4.8-1, set by
// checkMismatch in primitives.h): a peer's opCount ran past the collective this rank waits in. "around rank N" is
// the printing rank, no culprit.
TEST_CASE("NCCL's 'may be caused by a collective mismatch' warning: the ranks are in different collectives",
          "[triage_logs]") {
  TempDir t("nccl_suspected_mismatch");
  write_file(t.dir / "train.log",
             "[0] init.cc:1256 NCCL WARN Your program may be hanging, this may be caused by a collective mismatch "
             "around rank 1. Please check your collective calls at and around this rank. You can use NCCL_DEBUG=INFO "
             "and NCCL_DEBUG_SUBSYS=COLL to see the collective logs\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "collective_mismatch");
  CHECK(r.cause == "mismatched_collective");
  CHECK(r.missing_ranks.empty());
}

// Ultralytics' trainer before its first epoch (ultralytics/engine/trainer.py _setup_train): "Freezing layer '...'"
// for its .dfl layers, then rank 0's AMP check and dist.broadcast(self.amp, src=0), the job's first collective.
TEST_CASE("Ultralytics' set-up lines before the first collective's timeout: the job was starting", "[triage_logs]") {
  const auto wd = [](int rank) {
    return fmt::format(
        "[rank{0}]:[E ProcessGroupNCCL.cpp:563] [Rank {0}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=10800000) ran for 10800004 "
        "milliseconds before timing out.\n",
        rank);
  };
  TempDir t("ultralytics_setup");
  write_file(t.dir / "train.log", "Transferred 319/355 items from pretrained weights\n"
                                  "Freezing layer 'model.22.dfl.conv.weight'\n" +
                                      wd(1) + wd(3));
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.phase == "init");
}

// The catalogue over-claim audit (branch t24-audit): a line whose text does not decide a cause gives none.
// orte_quit.c:299-302@v4.1.4: mpirun's [proc-comm-failed] is its lost OOB link to a daemon (the state of
// [node-died], errmgr_default_hnp.c:448-455): the daemon's node died or the link broke, the block says neither.
TEST_CASE("Open MPI's lost communication path to a daemon is no proven network fault", "[triage_logs]") {
  TempDir t("ompi_comm_failed");
  write_file(t.dir / "mpirun.log",
             "--------------------------------------------------------------------------\n"
             "A critical communication path was lost to:\n"
             "\n"
             "  My name:      [[5140,0],0]\n"
             "  Process name: [[5140,0],1]\n"
             "  Node:         node-2\n"
             "--------------------------------------------------------------------------\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category != "network");
  CHECK(r.cause != "host_unreachable");
}

// Slurm's task/affinity plugin failing to bind a task's CPUs (sched_setaffinity(), src/plugins/task/affinity/
// affinity.c@slurm-22-05-8-1) is a local system call, not the Slurm RPC (network/slurm_rpc_error) it was filed under.
TEST_CASE("a Slurm daemon's failed local system call is no network fault", "[triage_logs]") {
  TempDir t("slurm_setaffinity");
  write_file(t.dir / "slurm-7.out",
             "slurmstepd: error: sched_setaffinity(12345,128,0x1) failed: Invalid argument\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "system_error");
}

// torchrun's agent after its workers succeeded: _exit_barrier (torch/distributed/elastic/agent/server/api.py@2.15.0)
// catches any error of the store barrier and logger.exception("Error waiting on exit barrier. Elapsed: %s seconds"):
// the message, then the traceback of the exception it handled (the store host's agent left first). That exception
// is the logged message's, no failure of a rank.
TEST_CASE("an exception logged under torchrun's exit-barrier error is that message's, not a rank's failure",
          "[triage_logs]") {
  const std::string h = "E1205 17:59:17.239000 30742 torch/distributed/elastic/agent/server/api.py:1007] ";
  TempDir t("exit_barrier");
  write_file(t.dir / "launcher.stderr.log",
             h + "Error waiting on exit barrier. Elapsed: 0.01123666763305664 seconds\n" + h +
                 "Traceback (most recent call last):\n" + h +
                 "  File \"/venv/lib/python3.11/site-packages/torch/distributed/elastic/utils/store.py\", line 201, "
                 "in barrier\n" +
                 h + "    store.wait([last_member_key])\n" + h +
                 "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did "
                 "the remote server shutdown or crash?\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category != "rank_exit");
  CHECK(r.cause != "exception");
}

// Every rank logged its normal end; afterwards a process no rank can be named for (torchrun's agent at its exit
// barrier, api.py _exit_barrier, meeting the others over the rendezvous store) lost the store's connection
// (TCPStore.cpp's "sendBytes failed ... Broken pipe"): the store's host left first. No failure of the job; the
// same loss before a rank's end is not explained away.
TEST_CASE("a store connection lost after every rank ended normally is the store's teardown", "[triage_logs]") {
  const auto done = [](int rank, const char* t) {
    return fmt::format("2026-12-05T17:59:{}Z [rank {}] step 12/12 loss 0.5655 dur_ms 108\n"
                       "2026-12-05T17:59:{}Z [rank {}] done: 12/12 steps in 1.7 s, last loss 0.5655\n",
                       t, rank, t, rank);
  };
  const auto lost = [](const char* t) {
    return fmt::format("2026-12-05T17:59:{}Z [W1205 17:59:18.673905346 TCPStore.cpp:106] [c10d] sendBytes failed on "
                       "SocketImpl(fd=4, addr=[::1]:63644, remote=[::1]:2618): Broken pipe\n",
                       t);
  };
  {
    TempDir t("store_lost_after");
    write_file(t.dir / "rank-0.log", done(0, "17.171700"));
    write_file(t.dir / "rank-1.log", done(1, "17.172000"));
    write_file(t.dir / "launcher.log", lost("18.368531"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "none");
  }
  {
    TempDir t("store_lost_before");
    write_file(t.dir / "rank-0.log", done(0, "17.171700"));
    write_file(t.dir / "rank-1.log", done(1, "19.172000"));
    write_file(t.dir / "launcher.log", lost("18.368531"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category != "none");
  }
}

// glog's failure handler (google/glog src/signalhandler.cc @v0.3.5): "*** Aborted at <t> (unix time) ..." first,
// then "*** SIGSEGV (@0x8) received by PID ..." and the stack, then the signal re-raised; installed only for
// SIGSEGV, SIGILL, SIGFPE, SIGABRT, SIGBUS and SIGTERM. A rank whose header alone is in the paste is dying too.
TEST_CASE("glog's failure header: every rank that printed it is dying -- the one that names SIGSEGV is the cause",
          "[triage_logs]") {
  const std::string hdr = "*** Aborted at 1547614213 (unix time) try \"date -d @1547614213\" if you are using GNU date ***\n";
  const std::string segv =
      "*** SIGSEGV (@0x8) received by PID 51898 (TID 0x7faae0dfa700) from PID 8; stack trace: ***\n";
  {
    // mpirun --timestamp-output: the headers of ranks 5, 0 and 2 in the same second as rank 5's SIGSEGV.
    TempDir t("glog_aborted_at");
    const std::string at = "Wed Jan 16 12:50:13 2019";
    write_file(t.dir / "train.log", "Wed Jan 16 12:49:48 2019[1,0]<stderr>:Pass 11, Batch 140, Cost 1.168355\n" + at +
                                        "[1,5]<stderr>:" + hdr + at + "[1,0]<stderr>:" + hdr + at + "[1,2]<stderr>:" +
                                        hdr + at + "[1,5]<stderr>:PC: @                0x0 (unknown)\n" + at +
                                        "[1,5]<stderr>:" + segv + "Wed Jan 16 12:49:48 2019[1,7]<stderr>:Pass 11, Batch 140\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "segfault");
    CHECK(r.missing_ranks == std::vector<int>{0, 2, 5});
    CHECK(r.phase == "training");
  }
  {
    // Without clocks the header still gives way to its own rank's signal line; whether the other headers were
    // crashes or mpirun's SIGTERM after rank 5's death (the handler traps SIGTERM too) is not said.
    TempDir t("glog_aborted_at_untimed");
    write_file(t.dir / "train.log", "[1,0]<stderr>:Pass 11, Batch 140, Cost 1.168355\n[1,5]<stderr>:" + hdr +
                                        "[1,0]<stderr>:" + hdr + "[1,5]<stderr>:" + segv);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "segfault");
    CHECK(r.missing_ranks == std::vector<int>{5});
  }
}

// Open MPI's signal handler (opal/util/stacktrace.c): "[host:pid] *** Process received signal ***", then "Signal:
// <name> (<n>)", "Signal code: ...", the stack, "*** End of error message ***". It is installed for opal_signal's
// list (default "6,7,8,11"): the header alone says the process is crashing, the next line says with which signal.
TEST_CASE("Open MPI's signal-handler header: a crash, its signal from the line after it", "[triage_logs]") {
  const std::string nccl = "rtptest1621:405884:407462 [0] NCCL INFO RAS client listening socket at ::1<28028>\n";
  {
    TempDir t("ompi_sig_header");
    write_file(t.dir / "alltoall.log", nccl + "[rtptest1621:405884] *** Process received signal ***\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "crashed");
    // After a line only NCCL's communicator set-up prints (the RAS client's socket, from rasInit in the
    // bootstrap) and nothing that shows training: it crashed while setting up.
    CHECK(r.phase == "init");
  }
  {
    TempDir t("ompi_sig_header_signal");
    write_file(t.dir / "alltoall.log", nccl + "[rtptest1621:405884] *** Process received signal ***\n"
                                              "[rtptest1621:405884] Signal: Segmentation fault (11)\n"
                                              "[rtptest1621:405884] Signal code: Address not mapped (1)\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "segfault");
  }
}

// NET/IB's size check (src/transport/net_ib.cc:665@v2.9.6-1 "collective mismatch error local size %d remote %d addr
// %lx rkey %x seq %x/%x", :1037@v2.14.3-1 "req %d/%d tag %x peer %s collective mismatch error, local size %d remote
// size %d"): fires for ranks in different collectives and for IB memory-ordering faults alike. Neither a proven
// mismatch nor a proven IB transport error.
TEST_CASE("NET/IB's 'collective mismatch error' names no cause of its own", "[triage_logs]") {
  for (const char* line :
       {"node-0:15483:15645 [0] transport/net_ib.cc:665 NCCL WARN NET/IB : collective mismatch error local size "
        "546816 remote 524288 addr 7ff7d1530000 rkey 2553d seq 14/1c\n",
        "node-1:1307367:1307586 [0] transport/net_ib.cc:1038 NCCL WARN NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> "
        "collective mismatch error, local size 496640 remote size 65536\n"}) {
    TempDir t("net_ib_mismatch");
    write_file(t.dir / "train.log", line);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "unknown");
    CHECK(r.cause == "unknown");
  }
}

// torch's DataLoader (torch/csrc/DataLoader.cpp) and Paddle's (data_loader.cc) report the signal that ended a
// worker: SIGKILL names no sender. An OOM only beside the kernel's report naming that worker (or the job's own).
TEST_CASE("a DataLoader worker SIGKILLed is a data-loader crash -- an OOM only where the OOM's report says so",
          "[triage_logs]") {
  const std::string killed =
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 10, in <module>\n"
      "    for batch in loader:\n"
      "RuntimeError: DataLoader worker (pid 22358) is killed by signal: Killed.\n";
  {
    TempDir t("dl_sigkill");
    write_file(t.dir / "train.log", "epoch 1 step 10 loss 0.5\n" + killed);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "data_loading");
    CHECK(r.cause == "data_loader_crash");
  }
  {
    TempDir t("dl_sigkill_oom");
    write_file(t.dir / "train.log", "epoch 1 step 10 loss 0.5\n" + killed);
    write_file(t.dir / "dmesg.txt", "[12345.678] Out of memory: Killed process 22358 (python) total-vm:100kB, "
                                    "anon-rss:90kB\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "data_loading");
    CHECK(r.cause == "oom");
  }
  {
    TempDir t("dl_sigbus");
    write_file(t.dir / "train.log", "RuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error. It is "
                                    "possible that dataloader's workers are out of shared memory.\n");
    CHECK(triage_logs({t.dir}).cause == "shm_exhausted");
  }
}

// ROCm's HSA runtime prints a GPU fault itself and aborts (runtime.cpp:1716/1818@rocm-6.2.4, catalogue
// rocr-runtime-6.2.4): the device fault, not the SIGABRT after it, ended the process.
TEST_CASE("ROCm's runtime: a GPU hang or memory-access fault before the abort is a device error", "[triage_logs]") {
  {
    TempDir t("rocm_hang");
    write_file(t.dir / "train.log",
               "{'loss': 0.45, 'epoch': 1.2}\n"
               "HW Exception by GPU node-9 (Agent handle: 0x631351bb5a20) reason :GPU Hang\n"
               "HW Exception by GPU node-9 (Agent handle: 0x64ff272d8ab0) reason :GPU Hang\n"
               "Aborted (core dumped)\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "cuda_error");
  }
  {
    TempDir t("rocm_fault");
    write_file(t.dir / "train.log",
               "Memory access fault by GPU node-2 (Agent handle: 0x55f1c0a1b2c0) on address 0x7f1a2b000000. Reason: "
               "Page not present or supervisor privilege.\n"
               "Aborted (core dumped)\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "cuda_error");
  }
}

// libmlx5's own completion-error report (providers/mlx5/cq.c:896@rdma-core v44.0, catalogue rdma-core-mlx5-44.0):
// a work request of this process completed in error on the NIC, whichever library posted it.
TEST_CASE("libmlx5's 'got completion with error' is an InfiniBand transport error", "[triage_logs]") {
  TempDir t("mlx5_cqe");
  write_file(t.dir / "job.log",
             "step 10 loss 1.0\n"
             "mlx5: node-031.cluster: got completion with error:\n"
             "00000000 00000000 00000000 00000000\n"
             "00000000 00000000 00000000 00000000\n"
             "00000007 00000000 00000000 00000000\n"
             "00000000 00008813 08000117 0001d4d2\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "network");
  CHECK(r.cause == "ib_error");
}
