// Unit tests of lines where a tool states its own verdict (triage v2, issue 11): Slurm's
// preemption of a job and its OOM kills (srun's "task N: Out Of Memory", slurmstepd's memory
// limit), and c10d's monitored_barrier naming the ranks that never reached it (rank 0's
// verdict only: another rank's "received errors ... from rank 0" names no one).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "triage/log_test_support.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

TEST_CASE("a Slurm preemption ends every rank alike and names none", "[triage_logs]") {
  TempDir t("preempt_srun");
  write_file(t.dir / "slurm-557341.out",
             "0: step 10/100\n1: step 10/100\n0: step 11/100\n"
             "srun: Force Terminated job 557341\n"
             "0: slurmstepd: error: *** STEP 557341.0 ON c4-n12 CANCELLED AT 2025-03-11T13:26:25 DUE TO PREEMPTION ***\n"
             "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "preemption");
  CHECK(r.missing_ranks.empty());
  CHECK(r.scope == "all");
}

TEST_CASE("srun's 'task N: Out Of Memory' is that task's OOM kill", "[triage_logs]") {
  auto l = parse("srun: error: o0616: task 0: Out Of Memory");
  CHECK(l.kind == LogKind::kSrunTask);
  CHECK(l.other_rank == 0);
  TempDir t("srun_oom");
  write_file(t.dir / "slurm-14604003.out",
             "0: step 1/100\n1: step 1/100\n0: step 2/100\n1: step 2/100\n"
             "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=14604003.0 cgroup. Some of your processes may "
             "have been killed by the cgroup out-of-memory handler.\n"
             "srun: error: o0616: task 1: Out Of Memory\n"
             "srun: error: o0616: task 0: Terminated\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "oom");
  CHECK(r.missing_ranks == std::vector<int>{1});
}

// srun's "task N" is SLURM_PROCID, the Nth process srun started. Where those are torch's launchers
// (one elastic agent per node), the ranks are the agents' workers, numbered by the rendezvous
// (logs/anon.cpp decide_srun_agents): task N is agent N, and naming rank N would be an over-claim.
TEST_CASE("srun's task N is an agent, not rank N, where srun started torch's launcher", "[triage_logs]") {
  const std::string srun = "srun: error: node-3: task 3: Killed\n"
                           "srun: error: node-2: task 1: Exited with exit code 1\n";
  const auto run = [](const std::string& name, const std::string& text) {
    TempDir t(name);
    write_file(t.dir / "slurm-77.out", text);
    return triage_logs({t.dir});
  };
  SECTION("srun started the ranks: task N is rank N") {
    const auto r = run("srun_ranks", "For gpu:0. Running epoch: 3\n" + srun);
    INFO(render_text(r));
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 3);
  }
  SECTION("a rank's own @record wrapper is torch's elastic code, not its agent") {
    const auto r = run("srun_record",
                       "Traceback (most recent call last):\n"
                       "  File \"/opt/venv/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/"
                       "errors/__init__.py\", line 346, in wrapper\n"
                       "    return f(*args, **kwargs)\n" +
                           srun);
    INFO(render_text(r));
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 3);
  }
  for (const std::string agent :
       {std::string("WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting down "
                    "workers\n"),
        std::string("Traceback (most recent call last):\n  File \"/opt/venv/bin/torchrun\", line 8, in <module>\n"
                    "    sys.exit(main())\n"),
        std::string("[INFO] 2021-09-14 14:02:56,862 api: [default] Rendezvous'ing worker group\n")}) {
    SECTION("the agent's line: " + agent.substr(0, 40)) {
      const auto r = run("srun_agents", "For gpu:0. Running epoch: 3\n" + srun + agent);
      INFO(render_text(r));
      CHECK((!r.first_failure || r.first_failure->rank < 0));
      CHECK(r.missing_ranks.empty());
      CHECK(r.world_size < 4);  // "task 3" says nothing of the world either
    }
  }
}

// srun -l's "N: " label is the task id (slurm src/common/write_labelled_message.c:143 "%*d: "), the
// Nth process srun started. Under torch's launcher that process is a node's elastic agent, and its
// stream holds its own lines and its workers' (logs/corpus.cpp srun_started_agents): a line that only
// the label names is no rank's. A worker's own "[rankN]:" prefix still names its rank.
TEST_CASE("srun -l's label is an agent, not a rank, where srun started torch's launcher", "[triage_logs]") {
  const auto run = [](const std::string& name, const std::string& text) {
    TempDir t(name);
    write_file(t.dir / "slurm-88.out", text);
    return triage_logs({t.dir});
  };
  const std::string worker = "1: Traceback (most recent call last):\n"
                             "1:   File \"/work/train.py\", line 40, in <module>\n"
                             "1:     loss.backward()\n"
                             "1: RuntimeError: CUDA error: an illegal memory access was encountered\n";
  const std::string agent =
      "1: WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4243 closing signal SIGTERM\n";
  const std::string srun = "srun: error: node-2: task 1: Exited with exit code 1\n";
  CHECK(parse("  1: x").rank_src == RankSource::kSrunLabel);
  CHECK(parse("1: x").rank_src == RankSource::kSrunLabel);
  SECTION("srun started the ranks: the label names the rank") {
    const auto r = run("srunlabel_ranks", "0: step 10 loss 0.5\n" + worker + srun);
    INFO(render_text(r));
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 1);
  }
  SECTION("a worker's traceback without a rank prefix under the agent's label") {
    const auto r = run("srunlabel_worker", "0: step 10 loss 0.5\n" + worker + agent + srun);
    INFO(render_text(r));
    CHECK((!r.first_failure || r.first_failure->rank < 0));
    CHECK(r.missing_ranks.empty());
    CHECK(r.world_size < 2);
  }
  SECTION("the agent's own RendezvousClosedError, padded labels") {
    const auto r = run("srunlabel_rdzv",
                       "  0: step 10 loss 0.5\n"
                       "  1: Traceback (most recent call last):\n"
                       "  1:   File \"/opt/venv/bin/torchrun\", line 8, in <module>\n"
                       "  1:     sys.exit(main())\n"
                       "  1:   File \"/opt/venv/lib/python3.10/site-packages/torch/distributed/elastic/agent/server/"
                       "api.py\", line 735, in run\n"
                       "  1:     result = self._invoke_run(role)\n"
                       "  1: torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n" +
                           srun);
    INFO(render_text(r));
    CHECK((!r.first_failure || r.first_failure->rank < 0));
    CHECK(r.missing_ranks.empty());
    CHECK(r.world_size < 2);
  }
  SECTION("a worker's own [rankN]: prefix outranks the label") {
    const auto r = run("srunlabel_prefix", "1: [rank5]: RuntimeError: CUDA error: an illegal memory access was "
                                           "encountered\n" + agent + srun);
    INFO(render_text(r));
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 5);
  }
}

TEST_CASE("slurmstepd's memory-limit kill is an OOM kill", "[triage_logs]") {
  auto l = parse("slurmstepd: Job 6398 exceeded memory limit (50385312 > 49152000), being killed");
  CHECK(l.kind == LogKind::kOomKill);
  TempDir t("slurm_memlimit");
  write_file(t.dir / "job.err",
             "slurmstepd: Job 6398 exceeded memory limit (50385312 > 49152000), being killed\n"
             "slurmstepd: Exceeded job memory limit\n"
             "slurmstepd: *** JOB 6398 CANCELLED AT 2015-09-04T16:40:47 *** on a1a-u2-c10-b1\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "oom");
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("monitored_barrier: rank 0's verdict names the ranks that never arrived", "[triage_logs]") {
  auto one = parse("RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms");
  CHECK(one.kind == LogKind::kDesyncMissing);
  CHECK(one.ranks == std::vector<int>{1});
  auto all = parse("RuntimeError: [Rank 0]: Ranks 4, 5, 6, 7 failed to pass monitoredBarrier in 2000000 ms");
  CHECK(all.kind == LogKind::kDesyncMissing);
  CHECK(all.ranks == std::vector<int>{4, 5, 6, 7});
  // Not a list before "failed": no ranks.
  auto odd = parse("Rank of worker x failed to pass monitoredBarrier in 10 ms");
  CHECK(odd.ranks.empty());

  TempDir t("monitored");
  write_file(t.dir / "rank-0.log",
             "step 1 loss 0.5\nstep 2 loss 0.4\n"
             "RuntimeError: [Rank 0]: Ranks 2, 3 failed to pass monitoredBarrier in 30000 ms\n");
  write_file(t.dir / "rank-1.log", "step 1 loss 0.5\nstep 2 loss 0.4\n");
  write_file(t.dir / "rank-2.log", "step 1 loss 0.5\n");
  write_file(t.dir / "rank-3.log", "step 1 loss 0.5\n");
  TriageOptions o;
  o.world_size = 4;
  auto r = triage_logs({t.dir}, o);
  CHECK(r.missing_ranks == std::vector<int>{2, 3});
  CHECK(mentions(r.summary, "monitored_barrier"));
}

TEST_CASE("monitored_barrier: with wait_all_ranks every per-rank verdict counts", "[triage_logs]") {
  TempDir t("monitored_all");
  write_file(t.dir / "rank-0.log",
             "[E ProcessGroupGloo.cpp:2810] [Rank 0]: Rank 2 failed to pass monitoredBarrier in 5000 ms\n"
             "[E ProcessGroupGloo.cpp:2810] [Rank 0]: Rank 5 failed to pass monitoredBarrier in 5000 ms\n");
  TriageOptions o;
  o.world_size = 8;
  auto r = triage_logs({t.dir}, o);
  CHECK(r.missing_ranks == std::vector<int>{2, 5});
}

TEST_CASE("monitored_barrier: a non-zero rank's error from rank 0 blames no one", "[triage_logs]") {
  TempDir t("monitored_peer");
  write_file(t.dir / "rank-2.log",
             "RuntimeError: Rank 2 successfully reached monitoredBarrier, but received errors while waiting for "
             "send/recv from rank 0. Please check rank 0 logs for faulty rank.\n");
  TriageOptions o;
  o.world_size = 8;
  auto r = triage_logs({t.dir}, o);
  CHECK(r.missing_ranks.empty());
  CHECK((!r.first_failure || r.first_failure->rank == -1 || r.first_failure->rank == 2));
}

TEST_CASE("Horovod's 'has been shut down' is an echo, never its rank's own failure", "[triage_logs]") {
  const std::string shut =
      "tensorflow.python.framework.errors_impl.UnknownError:  Horovod has been shut down. This was caused by an "
      "exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the "
      "ranks finished execution. If the shutdown was caused by an exception, you should see the exception in the "
      "log before the first shutdown message.\n";
  {
    TempDir t("hvd_shut_alone");
    write_file(t.dir / "rank-3.log", "step 1 loss 0.5\n" + shut);
    TriageOptions o;
    o.world_size = 4;
    auto r = triage_logs({t.dir}, o);
    CHECK(r.missing_ranks.empty());
    CHECK((!r.first_failure || r.first_failure->rank != 3));
  }
  {
    TempDir t("hvd_shut_root");
    write_file(t.dir / "rank-0.log", "step 1 loss 0.5\n" + shut);
    write_file(t.dir / "rank-1.log", "step 1 loss 0.5\nValueError: bad shape in batch 17\n");
    auto r = triage_logs({t.dir});
    CHECK(r.category == "rank_exit");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 1);
  }
}

TEST_CASE("Open MPI's 'MPI_ABORT was invoked on rank N in MPI_COMM_WORLD' is rank N's exit", "[triage_logs]") {
  auto l = parse("MPI_ABORT was invoked on rank 52 in communicator MPI_COMM_WORLD");
  CHECK(l.kind == LogKind::kMpiExit);
  CHECK(l.other_rank == 52);
  // Another communicator's rank is no global rank.
  auto sub = parse("MPI_ABORT was invoked on rank 1 in communicator MPI COMMUNICATOR 3 SPLIT FROM 0");
  CHECK(sub.kind != LogKind::kMpiExit);
  TempDir t("mpi_abort");
  write_file(t.dir / "mpirun.log",
             "--------------------------------------------------------------------------\n"
             "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\n"
             "with errorcode 1.\n"
             "\n"
             "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n"
             "You may or may not see output from other processes, depending on\n"
             "exactly when Open MPI kills them.\n"
             "--------------------------------------------------------------------------\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 3);
}

TEST_CASE("Slurm's own 'Connection refused' is no rendezvous store's", "[triage_logs]") {
  auto l = parse("slurmstepd: error: Failed to send MESSAGE_TASK_EXIT: Connection refused");
  CHECK(l.kind == LogKind::kNone);
  TempDir t("slurm_refused");
  write_file(t.dir / "job.out",
             "slurmstepd: error: *** JOB 37361369 ON learnfair5146 CANCELLED AT 2021-03-15T18:00:46 DUE TO PREEMPTION "
             "***\n"
             "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
             "slurmstepd: error: Failed to send MESSAGE_TASK_EXIT: Connection refused\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "preemption");
}

TEST_CASE("a store barrier counting more ranks than the world is a stale rendezvous", "[triage_logs]") {
  TempDir t("stale_store");
  write_file(t.dir / "job.out",
             "Traceback (most recent call last):\n"
             "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
             "store_based_barrier_key:1 (world_size=8, worker_count=16, timeout=0:30:00)\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "stale_rendezvous");
  CHECK(r.phase == "init");
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("a pod evicted for node memory pressure is an OOM kill", "[triage_logs]") {
  TempDir t("evicted");
  write_file(t.dir / "describe-train-worker-1.txt",
             "Status:       Failed\n"
             "Reason:       Evicted\n"
             "Message:      The node was low on resource: memory. Container pytorch was using 61440Mi, which exceeds "
             "its request of 0.\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "oom");
}

// Question 1 is the headline's phase: a collective timeout with no step line shows a job past init,
// not one that was training; the answer never says "training" while the headline says unknown
// (gh-verl-1158, gh-ofa-271).
TEST_CASE("'Init or training' answers from the headline's phase", "[triage_logs]") {
  TempDir t("q1_phase");
  write_file(t.dir / "train.log",
             "[rank7]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] [Rank 7] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=4486, OpType=ALLTOALL, NumelIn=46684160, NumelOut=46684160, "
             "Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n"
             "[rank3]:[E419 10:42:28.883292273 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=4486, OpType=ALLTOALL, NumelIn=46684160, NumelOut=46684160, "
             "Timeout(ms)=600000) ran for 600088 milliseconds before timing out.\n"
             "E0419 11:01:25.597000 245 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) "
             "local_rank: 1 (pid: 314) of binary: /usr/bin/python\n");
  const auto r = triage_logs({t.dir});
  REQUIRE(!r.answers.empty());
  const std::string& q1 = r.answers.front();
  INFO(q1 << " / phase " << r.phase);
  REQUIRE(q1.rfind("Init or training: ", 0) == 0);
  const std::string said = q1.substr(18, q1.find(" —") - 18);
  if (r.phase == "unknown") {
    CHECK(said.rfind("training", 0) != 0);
    CHECK(said == "past init; phase unknown");
  } else {
    CHECK(said.rfind(r.phase, 0) == 0);
  }
}

TEST_CASE("a peer's silence at the very end of a paste proves nothing: the excerpt may end before its report",
          "[triage_logs]") {
  // Lightning's per-rank join lines show both ranks; only rank 0's watchdog line follows, and it ends the paste.
  const std::string head =
      "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
      "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n"
      "All distributed processes registered. Starting with 2 processes\n"
      "\n";
  const std::string wd =
      "[rank0]:[E329 20:14:15.456510711 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800015 "
      "milliseconds before timing out.\n";
  {
    TempDir t("silence_at_end");
    write_file(t.dir / "train.log", head + wd + "\n\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.missing_ranks.empty());
    CHECK(r.cause != "rank_absent");
  }
  {
    // The paste goes on after the report (rank 0's abort, torchrun's summary): rank 1 never reported it.
    TempDir t("silence_then_more");
    write_file(t.dir / "train.log",
               head + wd +
                   "[rank0]:[E329 20:14:15.457000000 ProcessGroupNCCL.cpp:1682] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
                   "Timeout at NCCL work: 3, last enqueued NCCL work: 3, last completed NCCL work: 2.\n"
                   "[rank0]:[E329 20:14:15.458000000 ProcessGroupNCCL.cpp:630] [Rank 0] Some NCCL operations have "
                   "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
                   "might run on corrupted/incomplete data.\n"
                   "[rank0]:[E329 20:14:15.459000000 ProcessGroupNCCL.cpp:636] [Rank 0] To avoid data inconsistency, "
                   "we are taking the entire process down.\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.missing_ranks == std::vector<int>{1});
  }
}

TEST_CASE("torchrun's summary at one whole second: its Root Cause, printed last, is its first failure",
          "[triage_logs]") {
  // errors/__init__.py prints the other failures under "Failures:" and its pick (get_first_failure) last.
  std::string log = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n\nFailures:\n";
  const auto entry = [](int rank) {
    return fmt::format("[{0}]:\n  time      : 2024-03-27_14:52:55\n  host      : node-a\n  rank      : {0} (local_rank: "
                       "{0})\n  exitcode  : -11 (pid: 4562{0})\n  error_file: <N/A>\n  traceback : Signal 11 (SIGSEGV) "
                       "received by PID 4562{0}\n",
                       rank);
  };
  log += entry(1) + entry(2) + "\nRoot Cause (first observed failure):\n" + entry(0);
  TempDir t("torchrun_root_last");
  write_file(t.dir / "torchrun.log", log);
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 0);
  CHECK(r.cause == "segfault");
}

TEST_CASE("ranks absent from an excerpt are elsewhere only against a stated world", "[triage_logs]") {
  // srun --label: ranks 1 and 2 time out; rank 0 has no line. The world taken as 2 + 1 is the excerpt's own bound.
  std::string log;
  for (int r : {1, 2})
    log += fmt::format("{0}: [rank{0}]:[E702 12:22:50.10311047{0} ProcessGroupNCCL.cpp:629] [Rank {0}] Watchdog caught "
                       "collective operation timeout: WorkNCCL(SeqNum=52, OpType=ALLREDUCE, NumelIn=11, NumelOut=11, "
                       "Timeout(ms)=240000) ran for 240000 milliseconds before timing out.\n",
                       r);
  TempDir t("excerpt_world");
  write_file(t.dir / "slurm.out", log);
  {
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.scope == "unknown");
    CHECK(r.missing_ranks.empty());
  }
  {
    TriageOptions o;
    o.world_size = 3;  // stated: rank 0's silence among three is telling
    const auto r = triage_logs({t.dir}, o);
    INFO(render_text(r));
    CHECK(r.scope == "subset");
  }
}

TEST_CASE("the watchdog's repeat of a timeout alone shows collectives ran, past the first ones", "[triage_logs]") {
  const auto paste = [](const std::string& work) {
    return "[rank1]:[E ProcessGroupNCCL.cpp:543] To avoid data inconsistency, we are taking the entire process down.\n"
           "[rank1]:[E ProcessGroupNCCL.cpp:1182] [Rank 1] NCCL watchdog thread terminated with exception: [Rank 1] "
           "Watchdog caught collective operation timeout: " +
           work + " ran for 1800136 milliseconds before timing out.\n";
  };
  {
    TempDir t("repeat_seq61");
    write_file(t.dir / "train.log",
               paste("WorkNCCL(SeqNum=61, OpType=_ALLGATHER_BASE, NumelIn=7168, NumelOut=14336, Timeout(ms)=1800000)"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    REQUIRE(!r.answers.empty());
    CHECK(mentions(r.answers[0], "past init"));
  }
  {
    // torch 1.x's repeat carries no sequence number: a BROADCAST may be DDP's set-up one.
    TempDir t("repeat_noseq");
    write_file(t.dir / "train.log", paste("WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000)"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    REQUIRE(!r.answers.empty());
    CHECK(!mentions(r.answers[0], "past init"));
  }
}

TEST_CASE("torchrun's teardown in its own summary: SIGTERM at once, SIGKILL 30 s on, after a worker's failure",
          "[triage_logs]") {
  const auto entry = [](int idx, int rank, const std::string& time, const std::string& code, const std::string& tb) {
    return fmt::format("[{}]:\n  time      : 2026-09-07_{}\n  host      : localhost\n  rank      : {} (local_rank: {})\n"
                       "  exitcode  : {} (pid: 1469{})\n  error_file: <N/A>\n  traceback : {}\n",
                       idx, time, rank, rank, code, rank, tb);
  };
  const std::string head = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                           "============================================================\n"
                           "/root/train.py FAILED\n"
                           "------------------------------------------------------------\n"
                           "Failures:\n";
  std::string log = head + entry(1, 3, "13:02:58", "1", "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html") +
                    entry(2, 0, "13:03:29", "-9", "Signal 9 (SIGKILL) received by PID 14690") +
                    entry(3, 2, "13:03:29", "-15", "Signal 15 (SIGTERM) received by PID 14692") +
                    "------------------------------------------------------------\n"
                    "Root Cause (first observed failure):\n[0]:\n  time      : 2026-09-07_13:02:58\n"
                    "  host      : localhost\n  rank      : 1 (local_rank: 1)\n";  // the paste ends here
  TempDir t("torchrun_teardown_in_summary");
  write_file(t.dir / "torchrun.log", log);
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rank_exit");
  CHECK(r.cause != "killed");
  CHECK(r.missing_ranks == std::vector<int>{1, 3});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 1);
  CHECK(!mentions(render_text(r), "-2147483648"));
  CHECK(!mentions(render_text(r), "-214748"));
}

TEST_CASE("Horovod before 0.13.6 listed the ready ranks: a gap below the highest is the missing rank", "[triage_logs]") {
  // operations.cc CheckForStalledTensors @v0.13.0: "Stalled ops: <tensor> [ready ranks: r, ...], <tensor> [...]".
  const std::string warn =
      "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting "
      "for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit "
      "different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. Stalled ops: ";
  auto l = parse("HorovodBroadcast_conv1_weights_0 [ready ranks: 5, 6, 3, 1, 4, 0], ");
  CHECK(l.kind == LogKind::kDesyncMissing);
  CHECK(l.ranks == std::vector<int>{2});
  // No gap: which ranks above the highest ready one exist is not in the line.
  CHECK(parse("HorovodBroadcast_w_0 [ready ranks: 0, 1, 2]").kind != LogKind::kDesyncMissing);
  {
    TempDir t("hvd_ready_bcast");
    write_file(t.dir / "train.log", warn + "HorovodBroadcast_conv1_weights_0 [ready ranks: 5, 6, 3, 1, 4, 0], "
                                           "HorovodBroadcast_conv1_bias_0 [ready ranks: 5, 6, 3, 1, 4, 0]\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.missing_ranks == std::vector<int>{2});
    CHECK(r.world_size >= 7);
    CHECK(r.phase == "init");  // only the start-up broadcasts of the variables stalled
  }
  {
    TempDir t("hvd_ready_mixed");
    write_file(t.dir / "train.log", warn + "HorovodBroadcast_conv1_weights_0 [ready ranks: 1, 0], "
                                           "DistributedOptimizer_Allreduce/HorovodAllreduce_grad_0 [ready ranks: 1, "
                                           "0, 3]\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase != "init");
  }
}

// NCCL's prefix "host:pid:tid [dev]" (src/debug.cc: "%s:%d:%d [%d] NCCL ...", host, pid, tid, cudaDev) names
// the process and the device on every line it prints: distinct processes on distinct devices are that
// many ranks at least, so three ranks timing out do not make "all ranks waiting" when a fourth is seen.
TEST_CASE("NCCL's line prefixes count the processes of the job: the world is at least that", "[triage_logs]") {
  const auto wd = [](int rank) {
    return fmt::format(
        "[rank{0}]:[E ProcessGroupNCCL.cpp:754] [Rank {0}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=305, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600381 "
        "milliseconds before timing out.\n",
        rank);
  };
  const auto svc = [](int pid, int dev, int peer) {
    return fmt::format("node1:{}:{} [{}] NCCL INFO [Service thread] Connection closed by localRank {}\n", pid,
                       pid + 441, dev, peer);
  };
  SECTION("a fourth process on a fourth device: not all of the world reported") {
    TempDir t("nccl_procs_four");
    write_file(t.dir / "train.log", wd(2) + svc(6727, 1, 2) + svc(6728, 2, 2) + svc(6729, 3, 2) + wd(0) +
                                        svc(6727, 1, 0) + svc(6726, 0, 0) + wd(1));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.world_size == 4);
    CHECK(r.cause != "all_ranks_waiting");
    CHECK(r.scope != "all");
    CHECK(r.missing_ranks.empty());
  }
  SECTION("a restart's new processes on the same devices, or one process on several devices, add no rank") {
    TempDir t("nccl_procs_same");
    // pids 100/101 then 200/201 (a restart) on devices 0 and 1; pid 300 alone prints for devices 0-3.
    write_file(t.dir / "train.log", svc(100, 0, 1) + svc(101, 1, 0) + svc(200, 0, 1) + svc(201, 1, 0) + wd(0) +
                                        wd(1));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.world_size == 2);
    CHECK(r.cause == "all_ranks_waiting");
    TempDir t2("nccl_procs_one");
    write_file(t2.dir / "train.log", svc(300, 0, 1) + svc(300, 1, 0) + svc(300, 2, 0) + svc(300, 3, 0) + wd(0) +
                                         wd(1));
    const auto r2 = triage_logs({t2.dir});
    INFO(render_text(r2));
    CHECK(r2.world_size == 2);
  }
}

// Open MPI 4.1's orte/mca/errmgr/base/help-errmgr-base.txt: [node-died] names two causes itself (the TCP
// link to the node, or the daemon's own failure) and ends the job: the line decides neither. [failed-daemon]
// is a daemon that died before it reported back to mpirun: the job never launched.
TEST_CASE("ORTE's lost daemon names no cause -- a daemon dead before it reported back is a launch failure",
          "[triage_logs]") {
  const std::string rule = "--------------------------------------------------------------------------\n";
  {
    TempDir t("orte_node_died");
    write_file(t.dir / "mpiexec.log",
               "^Zmpiexec: Forwarding signal 20 to job\n" + rule +
                   "ORTE has lost communication with a remote daemon.\n\n"
                   "  HNP daemon   : [[64112,0],0] on node head\n"
                   "  Remote daemon: [[64112,0],1] on node 10.1.1.10\n\n"
                   "This is usually due to either a failure of the TCP network\n"
                   "connection to the node, or possibly an internal failure of\n"
                   "the daemon itself. We cannot recover from this failure, and\n"
                   "therefore will terminate the job.\n" +
                   rule);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "unknown");
    CHECK(r.cause == "unknown");
    CHECK(r.summary.find("ORTE has lost communication") != std::string::npos);
    CHECK(r.summary.find("exit status is cut") == std::string::npos);
  }
  {
    TempDir t("orte_failed_daemon");
    write_file(t.dir / "mpirun.log",
               rule +
                   "An ORTE daemon has unexpectedly failed after launch and before\n"
                   "communicating back to mpirun. This could be caused by a number\n"
                   "of factors, including an inability to create a connection back\n"
                   "to mpirun due to a lack of common network interfaces and/or no\n"
                   "route found between them. Please check network connectivity\n"
                   "(including firewalls and network routing requirements).\n" +
                   rule);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rendezvous");
    CHECK(r.cause == "launch_error");
    CHECK(r.phase == "init");
  }
}

// WorkNCCL's NumelIn/NumelOut (ProcessGroupNCCL.cpp): an all-gather's output is its input once per member of the
// group, a reduce-scatter's the other way round: the world has at least that many ranks.
TEST_CASE("an all-gather's sizes count its group: one rank's timeout is not the whole world's", "[triage_logs]") {
  const auto wd = [](const char* op, long long in, long long out) {
    return fmt::format(
        "[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=40402014, OpType={}, NumelIn={}, NumelOut={}, Timeout(ms)=600000) ran for 600044 "
        "milliseconds before timing out.\n",
        op, in, out);
  };
  {
    TempDir t("gather_world");
    write_file(t.dir / "train.log", wd("_ALLGATHER_BASE", 513, 2052));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.world_size == 4);
    CHECK(r.cause != "all_ranks_waiting");
  }
  {
    TempDir t("scatter_world");
    write_file(t.dir / "train.log", wd("_REDUCE_SCATTER_BASE", 4096, 512));
    CHECK(triage_logs({t.dir}).world_size == 8);
  }
  {
    TempDir t("allreduce_world");
    write_file(t.dir / "train.log", wd("ALLREDUCE", 513, 513));
    CHECK(triage_logs({t.dir}).world_size == 1);
  }
}

// ProcessGroupNCCL's two-line timeout report (2.5 era): "[Rank N] Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=S, ...)" with no group tag, then "[PG ID i PG GUID g(desc) Rank N] Exception (either an error or
// timeout) detected by watchdog at work: S, ...". The GUID names the group on every member (the ID counts this
// process's groups): timeouts in two different groups are no mismatch of one sequence.
TEST_CASE("watchdog timeouts of two process groups (by the GUID the second line names) are not compared",
          "[triage_logs]") {
  const auto report = [](int rank, int pg_rank, long long seq, const char* op, long long numel, const char* guid) {
    return fmt::format(
        "[rank{0}]:[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616] [Rank {1}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum={2}, OpType={3}, NumelIn={4}, NumelOut={4}, Timeout(ms)=600000) ran for 600045 "
        "milliseconds before timing out.\n"
        "[rank{0}]:[E218 04:54:22.864535778 ProcessGroupNCCL.cpp:1795] [PG ID 11 PG GUID {5}(undefined) Rank {1}] "
        "Exception (either an error or timeout) detected by watchdog at work: {2}, last enqueued NCCL work: {2}, last "
        "completed NCCL work: {6}.\n",
        rank, pg_rank, seq, op, numel, guid, seq - 1);
  };
  {
    TempDir t("two_groups");
    write_file(t.dir / "train.log", report(13, 1, 216, "ALLTOALL_BASE", 1379328, "119") +
                                        report(15, 0, 57, "ALLREDUCE", 32, "112"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category != "collective_mismatch");
  }
  {
    // One group (the same GUID on both): their sequences differ, the collectives too.
    TempDir t("one_group");
    write_file(t.dir / "train.log", report(13, 1, 216, "ALLTOALL_BASE", 1379328, "119") +
                                        report(15, 0, 215, "ALLREDUCE", 32, "119"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "collective_mismatch");
  }
}

// torchrun's elastic agent prints where its node's workers sit (agent/server/api.py:552@2.15.0): its local ranks
// map onto the global ranks it lists, and a group of several agents (nodes) makes a local rank alone no global one.
TEST_CASE("torchrun's agent layout maps its local ranks onto global ranks, and says when the job spans nodes",
          "[triage_logs]") {
  CHECK(parse("  global_ranks=[8, 9, 10, 11]").kind == LogKind::kAgentLayout);
  CHECK(parse("  global_ranks=[8, 9, 10, 11]").ranks == std::vector<int>{8, 9, 10, 11});
  CHECK(parse("  group_world_size=2").word == "group_world_size");
  CHECK(parse("  global_world_sizes=[16, 16]").world == 16);
  CHECK(parse("  min_nodes                : 2").kind == LogKind::kAgentLayout);
  CHECK(parse("  global_ranks=[8, x]").kind != LogKind::kAgentLayout);
  CHECK(parse("group_rank=1 and more").kind != LogKind::kAgentLayout);
  const std::string exit_line =
      "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 4711) of binary: "
      "/usr/bin/python3\n";
  const auto result = [](int group_rank, const char* locals, const char* globals) {
    return fmt::format(
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:\n"
        "  restart_count=0\n  master_addr=node-a\n  master_port=29500\n  group_rank={}\n  group_world_size=2\n"
        "  local_ranks={}\n  role_ranks={}\n  global_ranks={}\n  role_world_sizes=[4, 4]\n"
        "  global_world_sizes=[4, 4]\n\n",
        group_rank, locals, globals, globals);
  };
  {
    // The second node's agent: local rank 1 is global rank 3.
    TempDir t("agent_layout_map");
    write_file(t.dir / "node1.log", result(1, "[0, 1]", "[2, 3]") + exit_line);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "killed");
    CHECK(r.missing_ranks == std::vector<int>{3});
    CHECK(r.world_size == 4);
  }
  {
    // Two agents' results in one paste (no host to tell them apart): local rank 1 is rank 1 or 3.
    TempDir t("agent_layout_two");
    write_file(t.dir / "job.log", result(0, "[0, 1]", "[0, 1]") + result(1, "[0, 1]", "[2, 3]") + exit_line);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "killed");
    CHECK(r.missing_ranks.empty());
  }
  {
    // The launcher's banner alone: two nodes, no layout. The local rank names no global rank.
    TempDir t("agent_layout_banner");
    write_file(t.dir / "node.log",
               "INFO:torch.distributed.launcher.api:Starting elastic_operator with launch configs:\n"
               "  entrypoint       : train.py\n  min_nodes        : 2\n  max_nodes        : 2\n"
               "  nproc_per_node   : 2\n" +
                   exit_line);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "killed");
    CHECK(r.missing_ranks.empty());
  }
  {
    // Without any of it (one host's paste): the corpus convention, local rank 1 is rank 1.
    TempDir t("agent_layout_none");
    write_file(t.dir / "node.log", exit_line);
    CHECK(triage_logs({t.dir}).missing_ranks == std::vector<int>{1});
  }
  // torchrun --tee's "[default1]:" prefix (tail_log.py:141@2.15.0) names the same local rank.
  const std::string tee_lines =
      "[default0]:step 10 loss 1.2\n[default1]:step 10 loss 1.2\n[default1]:Traceback (most recent call last):\n"
      "[default1]:  File \"train.py\", line 50, in <module>\n"
      "[default1]:RuntimeError: CUDA error: an illegal memory access was encountered\n";
  {
    TempDir t("agent_layout_tee_map");
    write_file(t.dir / "node1.log", result(1, "[0, 1]", "[2, 3]") + tee_lines);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "cuda_error");
    CHECK(r.missing_ranks == std::vector<int>{3});
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 3);
  }
  {
    TempDir t("agent_layout_tee_banner");
    write_file(t.dir / "node.log",
               "INFO:torch.distributed.launcher.api:Starting elastic_operator with launch configs:\n"
               "  entrypoint       : train.py\n  min_nodes        : 2\n  max_nodes        : 2\n" +
                   tee_lines);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "cuda_error");
    CHECK(r.missing_ranks.empty());
    CHECK((!r.first_failure || r.first_failure->rank < 0));
  }
  {
    TempDir t("agent_layout_tee_none");
    write_file(t.dir / "node.log", tee_lines);
    CHECK(triage_logs({t.dir}).missing_ranks == std::vector<int>{1});
  }
}

// c10d's store-based barrier counts each rank as it arrives (store.add(key, 1)): when the ranks whose
// timeout lines name the same key are as many as it counted, the silent ones never arrived. The key is
// the reader's typed field (LogEvent::barrier_key); a different key is another group's barrier.
TEST_CASE("a store barrier whose timed-out ranks account for every arrival: the silent ranks never came",
          "[triage_logs]") {
  const auto run = [](int other_key) {
    TempDir t("barrier_counted");
    for (int r = 0; r < 4; ++r)
      write_file(t.dir / fmt::format("rank-{}.log", r),
                 fmt::format("RuntimeError: Timed out initializing process group in store based barrier on rank: {}, "
                             "for key: store_based_barrier_key:{} (world_size=8, worker_count=4, timeout=0:30:00)\n",
                             r, r == 3 ? other_key : 1));
    return triage_logs({t.dir});
  };
  const auto same = run(1);
  CHECK(same.category == "rendezvous");
  CHECK(same.missing_ranks == std::vector<int>{4, 5, 6, 7});
  // One of the four timed out at another group's barrier: the count is not accounted for.
  CHECK(run(2).missing_ranks.empty());
}
