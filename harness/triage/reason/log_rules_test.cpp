// Unit tests of the plain-log reasoning rules on logs written by the tests: agreement with
// the full triage, clocks and interleaving, pids vs ranks, large worlds, pastes without
// ranks, mismatches, scope, kills, checkpoint stalls, partial waits, uneven data, stalls.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "triage/log_test_support.hpp"
#include "triage/logs/parse.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/logs/reader.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

namespace fs = std::filesystem;
using namespace hanglab;
using namespace hanglab::logtest;
using nlohmann::json;

TEST_CASE("logs-only agrees with the full triage where the logs decide, and says unknown where not",
          "[triage_logs]") {
  const fs::path root = fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/triage";
  TriageOptions lo;
  lo.logs_only = true;
  for (const char* name : {"healthy", "killed", "skip_collective", "uneven_batches", "init_hang", "truncated",
                           "exception", "wrong_ifname", "uneven_barrier", "late_rank"}) {
    INFO(name);
    const auto full = triage_run_dir(root / name);
    const auto logs = triage_paths({root / name}, lo);
    CHECK(logs.category == full.category);
    CHECK(logs.missing_ranks == full.missing_ranks);
  }
  // Frozen, checkpoint and all-stuck runs were torn down before any rank logged an
  // error: only the trace's heartbeats and phases tell; the logs must not guess.
  for (const char* name : {"frozen", "checkpoint_hang", "all_stuck"}) {
    INFO(name);
    const auto logs = triage_paths({root / name}, lo);
    CHECK(logs.category == "unknown");
    CHECK(logs.confidence == "low");
  }
}

TEST_CASE("interleaving and missing clocks do not change the answer", "[triage_logs]") {
  // The same incident as one combined file (interleaved by rank) and as per-rank files.
  TempDir t("interleave");
  std::string combined;
  std::vector<std::string> per(4);
  for (int s = 1; s <= 30; ++s) {
    for (int r : {2, 0, 3, 1}) {
      if (r == 1 && s > 20) continue;
      const std::string l = "step " + std::to_string(s) + " loss 0.5";
      combined += "[rank" + std::to_string(r) + "]:" + l + "\n";
      per[r] += l + "\n";
    }
  }
  for (int r : {0, 2, 3}) {
    const std::string l = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
                          "peer [10.0.0.2]:5000";
    combined += "[rank" + std::to_string(r) + "]:" + l + "\n";
    per[r] += l + "\n";
  }
  combined += "[rank0]:world_size=4\n";
  write_file(t.dir / "combined/all.log", combined);
  for (int r = 0; r < 4; ++r) write_file(t.dir / ("split/rank-" + std::to_string(r) + ".log"), per[r] + "world_size=4\n");
  const auto a = triage_logs({t.dir / "combined"});
  const auto b = triage_logs({t.dir / "split"});
  CHECK(a.category == "rank_exit");
  CHECK(a.missing_ranks == std::vector<int>{1});
  CHECK(b.category == a.category);
  CHECK(b.missing_ranks == a.missing_ranks);
  CHECK(a.last_good_step == 20);
  bool clockless = false;
  for (const auto& n : a.notes) clockless |= mentions(n, "no timestamps");
  CHECK(clockless);
}

TEST_CASE("\"[host:N]\" numbers that do not fit the world are pids, not ranks", "[triage_logs]") {
  TempDir t("hostpid");
  std::string log;
  for (int r = 0; r < 4; ++r) log += "[rank " + std::to_string(r) + "] torch_ddp starting: world_size 4\n";
  for (int r = 0; r < 4; ++r) log += "[rank " + std::to_string(r) + "] step 4/12 loss 0.5 dur_ms 100\n";
  // mpirun's own crash while aborting, in Open MPI's "[host:pid]" format
  log += "[vm:18471] *** Process received signal ***\n[vm:18471] Signal: Segmentation fault (11)\n";
  write_file(t.dir / "launcher.log", log);
  const auto r = triage_logs({t.dir});
  CHECK(r.world_size == 4);
  CHECK(r.missing_ranks.empty());
  CHECK(r.category == "unknown");
  bool noted = false;
  for (const auto& n : r.notes) noted |= mentions(n, "18471") && mentions(n, "process ids");
  CHECK(noted);
}

TEST_CASE("no error at all (MPI): a rank that finished while the others stopped a step short", "[triage_logs]") {
  TempDir t("mpi_skip");
  for (int r = 0; r < 4; ++r) {
    std::string log = "[rank " + std::to_string(r) + "] mpi_ddp starting: world_size 4\n";
    const int last = r == 1 ? 12 : 11;
    for (int s = 1; s <= last; ++s) log += "[rank " + std::to_string(r) + "] step " + std::to_string(s) + "/12\n";
    if (r == 1) log += "[rank 1] done: 12/12 steps in 1.5 s\n";
    write_file(t.dir / ("ranks/" + std::to_string(r) + "/stdout.log"), log);
  }
  const auto r = triage_logs({t.dir});
  CHECK(r.category == "collective_mismatch");
  CHECK(r.cause == "skipped_collective");
  CHECK(r.missing_ranks == std::vector<int>{1});
  CHECK(r.confidence == "medium");
  bool snapshot = false;
  for (const auto& n : r.notes) snapshot |= mentions(n, "snapshot");
  CHECK(snapshot);
  // ... while every rank merely stopping, with nobody finished, is not decidable.
  TempDir u("mpi_freeze");
  for (int r = 0; r < 4; ++r) {
    std::string log = "[rank " + std::to_string(r) + "] mpi_ddp starting: world_size 4\n";
    for (int s = 1; s <= 4; ++s) log += "[rank " + std::to_string(r) + "] step " + std::to_string(s) + "/12\n";
    write_file(u.dir / ("rank-" + std::to_string(r) + ".log"), log);
  }
  const auto f = triage_logs({u.dir});
  CHECK(f.category == "unknown");
  CHECK(f.cause == "no_error_logged");
  CHECK(f.missing_ranks.empty());
}

TEST_CASE("a large world: absence found, report collapsed", "[triage_logs]") {
  TempDir t("large");
  const int world = 512;
  std::string all;
  all.reserve(static_cast<size_t>(world) * 400);
  for (int r = 0; r < world; ++r) {
    all += "[rank" + std::to_string(r) + "]:world_size=512\n";
    all += "[rank" + std::to_string(r) + "]:step 99 loss 1.0\n";
  }
  for (int r = 0; r < world; ++r) {
    if (r == 301) continue;
    all += "[rank" + std::to_string(r) + "]:[E1129 09:00:00.000000001 ProcessGroupNCCL.cpp:616] [Rank " +
           std::to_string(r) +
           "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=200, OpType=ALLREDUCE, NumelIn=1000, "
           "NumelOut=1000, Timeout(ms)=600000) ran for 600100 milliseconds before timing out.\n";
  }
  write_file(t.dir / "job.log", all);
  const auto r = triage_logs({t.dir / "job.log"});
  CHECK(r.world_size == world);
  CHECK(r.missing_ranks == std::vector<int>{301});
  const auto text = render_text(r);
  CHECK(mentions(text, "0-300"));
  CHECK(mentions(text, "302-511"));
  CHECK(std::count(text.begin(), text.end(), '\n') < 200);
}

TEST_CASE("a paste from one process without a rank still gets its answer", "[triage_logs]") {
  TempDir t("onepaste");
  write_file(t.dir / "nccl.log",
             "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied\n"
             "node08:27106:27302 [0] NCCL INFO include/shm.h:41 -> 2\n"
             "node08:27106:27302 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
             "nccl-shm-recv-b7948f403864987a-0-3-0 (size 4460544)\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "nccl_shm");
  CHECK(r.phase == "init");
  CHECK(r.scope == "unknown");
  CHECK(r.missing_ranks.empty());
  TempDir t2("onepaste_bus");
  write_file(t2.dir / "train.log",
             "Traceback (most recent call last):\n"
             "RuntimeError: DataLoader worker (pid 729) is killed by signal: Bus error. It is possible that "
             "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n");
  r = triage_logs({t2.dir});
  CHECK(r.category == "data_loading");
  CHECK(r.cause == "shm_exhausted");
  CHECK(r.phase == "training");
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == -1);
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("a SIGBUS whose backtrace runs through libnccl is NCCL's /dev/shm, not a program bug", "[triage_logs]") {
  TempDir t("ncclbus");
  write_file(t.dir / "train.log",
             "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
             "==== backtrace (tid:   3095) ====\n"
             " 2 0x000000000007587d ncclGroupEnd()  ???:0\n"
             " 5 0x00000000000489b1 ???()  /usr/lib/x86_64-linux-gnu/libnccl.so.2:0\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "nccl_shm");
  CHECK(r.missing_ranks.empty());
  TempDir t2("plainbus");
  write_file(t2.dir / "train.log",
             "[host:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
             " 2 0x000000000007587d my_kernel()  ???:0\n");
  r = triage_logs({t2.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "crashed");
}

TEST_CASE("a mismatch whose odd side the logs cannot prove names no rank", "[triage_logs]") {
  TempDir t("mismatch_sides");
  // Ranks 1,2 vs rank 3 at the same SeqNum, rank 0 silent in a world of 4: 2 vs 1+1 is no majority.
  std::string log;
  for (int r : {1, 2})
    log += "[rank" + std::to_string(r) + "]:[E ProcessGroupNCCL.cpp:563] [Rank " + std::to_string(r) +
           "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4084, OpType=ALLREDUCE, NumelIn=4821568, "
           "NumelOut=4821568, Timeout(ms)=600000) ran for 600077 milliseconds before timing out.\n";
  log += "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
         "WorkNCCL(SeqNum=4084, OpType=BROADCAST, NumelIn=56623104, NumelOut=56623104, Timeout(ms)=600000) ran for "
         "600059 milliseconds before timing out.\n";
  write_file(t.dir / "train.log", log);
  TriageOptions o;
  o.world_size = 4;
  auto r = triage_logs({t.dir}, o);
  CHECK(r.category == "collective_mismatch");
  CHECK(r.missing_ranks.empty());
  CHECK(r.scope == "subset");
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == -1);
  // With rank 0 on the majority's side too, rank 3 is provably the odd one.
  log += "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
         "WorkNCCL(SeqNum=4084, OpType=ALLREDUCE, NumelIn=4821568, NumelOut=4821568, Timeout(ms)=600000) ran for "
         "600077 milliseconds before timing out.\n";
  write_file(t.dir / "train.log", log);
  r = triage_logs({t.dir}, o);
  CHECK(r.missing_ranks == std::vector<int>{3});
}

TEST_CASE("one rank's log says nothing about the ranks whose logs were not given", "[triage_logs]") {
  TempDir t("onerank");
  write_file(t.dir / "rank0.log",
             "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/8 clients joined.\n");
  const auto r = triage_logs({t.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.missing_ranks.empty());
  CHECK(r.scope == "subset");
}

TEST_CASE("scope of a paste from some of the processes: what it shows of the others", "[triage_logs]") {
  // One process's NCCL proxy runs out of GPU memory, another process only sees the socket
  // to it close: the failure spread from a process's own resource -> subset.
  TempDir t("scope_oom");
  write_file(t.dir / "nccl.log",
             "n1:100:101 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer n1<5>\n"
             "n1:200:201 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "cuda_oom");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks.empty());
  // An IB link error in one process while the others only see it go: the link took the job down.
  TempDir t2("scope_ib");
  const std::string ib =
      "n2:300:301 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.0.1<1> with error 4, "
      "opcode 5, len 5, vendor err 81 (Send)\n";
  write_file(t2.dir / "nccl.log", ib +
                                      "n2:310:311 [1] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed "
                                      "by remote peer n2<7>\n");
  r = triage_logs({t2.dir});
  CHECK(r.category == "network");
  CHECK(r.cause == "ib_error");
  CHECK(r.scope == "all");
  // The same error from one process alone: the paste cannot tell.
  TempDir t3("scope_ib_one");
  write_file(t3.dir / "nccl.log", ib);
  r = triage_logs({t3.dir});
  CHECK(r.category == "network");
  CHECK(r.scope == "unknown");
  // Every process shown hit the root itself: nothing shows a process it spared.
  TempDir t4("scope_shm_both");
  write_file(t4.dir / "nccl.log",
             "h:1:2 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n"
             "h:3:4 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n");
  r = triage_logs({t4.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "nccl_shm");  // /dev/shm, not a full disk
  CHECK(r.scope == "unknown");
}

TEST_CASE("\"no error logged\" is said of every rank's own log, nothing less", "[triage_logs]") {
  // A paste whose lines no rank can be named for: its silence says nothing of the others.
  TempDir t("noerr_anon");
  write_file(t.dir / "out.log", "Epoch 1/3\nEpoch 2/3\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "unknown");
  CHECK(r.cause == "unknown");
  CHECK(r.scope == "unknown");
  // A dump signal relays a peer's collective timeout: an error was logged, only elsewhere.
  TempDir t2("noerr_dump");
  write_file(t2.dir / "rank5.log",
             "[rank5]:[E723 01:58:45.667329643 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 5] "
             "Received a dump signal due to a collective timeout from  rank 2 and we will try our best to dump the "
             "debug info. Last enqueued NCCL work: 136, last completed NCCL work: 136.\n");
  r = triage_logs({t2.dir});
  CHECK(r.category == "unknown");
  CHECK(r.cause == "unknown");
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("a process killed after its own exception died of the kill; an epoch in a line is training",
          "[triage_logs]") {
  // The shell's notices of a SIGKILLed child.
  auto k = parse("Killed");
  CHECK(k.kind == LogKind::kExitStatus);
  CHECK(k.signal == 9);
  k = parse("/var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed                  python3 main.py");
  CHECK(k.kind == LogKind::kExitStatus);
  CHECK(k.signal == 9);
  CHECK(parse("Killed process 4242 (python) total-vm:1kB").kind != LogKind::kExitStatus);
  // An exception never ends a process by SIGKILL: the kill is the death its peers saw.
  TempDir t("exc_then_kill");
  write_file(t.dir / "run.log",
             "[0]<stderr>:RuntimeError: stop here epoch=1 batch=0\n"
             "[0]<stderr>:Killed\n"
             "[1]<stderr>:terminate called after throwing an instance of 'gloo::IoException'\n"
             "[1]<stderr>:  what():  [pair.cc:589] Read error [127.0.0.1]:3977: Connection reset by peer\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "killed");
  CHECK(r.phase == "training");  // "epoch=1" in the failing line
  CHECK(r.missing_ranks == std::vector<int>{0});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 0);
  // A launcher's kill after the exception is the teardown's: the exception stays the cause.
  TempDir t3("exc_then_srun_kill");
  write_file(t3.dir / "run.log",
             "3: RuntimeError: boom\n"
             "0: [E ProcessGroupGloo.cpp:138] Gloo connectFullMesh failed with Connection reset by peer\n"
             "srun: error: node1: task 3: Killed\n");
  r = triage_logs({t3.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "exception");
  // The shell's "Killed" and the cgroup's OOM kill of one process are one death: the OOM names why.
  TempDir t2("kill_then_oom");
  write_file(t2.dir / "job.err",
             "/var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed                  python3 main.py\n"
             "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup. Some of your processes may "
             "have been killed by the cgroup out-of-memory handler.\n");
  r = triage_logs({t2.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "oom");
}

TEST_CASE("a launcher that kills every process it started states the world on one node", "[triage_logs]") {
  const auto l = parse("[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266");
  CHECK(l.kind == LogKind::kLauncherSignal);
  CHECK(l.pid == 13266);
  CHECK(l.signal == 9);
  // One subprocess killed, and it is the one that died: the whole job.
  TempDir t("ds_one");
  write_file(t.dir / "ds.log",
             "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266\n"
             "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', "
             "'--local_rank=0'] exits with return code = -9\n");
  auto r = triage_logs({t.dir});
  CHECK(r.world_size == 1);
  CHECK(r.cause == "killed");
  CHECK(r.missing_ranks == std::vector<int>{0});
  CHECK(r.scope == "all");
  // Two killed, one of them failed: a subset.
  TempDir t2("ds_two");
  write_file(t2.dir / "ds.log",
             "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266\n"
             "[2023-04-14 13:11:27,880] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13267\n"
             "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', "
             "'--local_rank=1'] exits with return code = -9\n");
  r = triage_logs({t2.dir});
  CHECK(r.world_size == 2);
  CHECK(r.missing_ranks == std::vector<int>{1});
  CHECK(r.scope == "subset");
}

namespace {
std::string watchdog_line(int rank, long long seq, const char* op = "ALLREDUCE") {
  return fmt::format("[rank{0}]:[E1129 11:56:57.642513817 ProcessGroupNCCL.cpp:632] [Rank {0}] Watchdog caught "
                     "collective operation timeout: WorkNCCL(SeqNum={1}, OpType={2}, NumelIn=1, NumelOut=1, "
                     "Timeout(ms)=600000) ran for 600058 milliseconds before timing out.\n",
                     rank, seq, op);
}
}  // namespace

TEST_CASE("a save under way while some ranks time out is a checkpoint stall; a finished one only names the phase",
          "[triage_logs]") {
  TriageOptions opts;
  opts.world_size = 8;
  TempDir t("ckpt_stall");
  write_file(t.dir / "console.log", "INFO: Saving checkpoint to /ckpt/step_900\n");
  write_file(t.dir / "train.log", watchdog_line(3, 900) + watchdog_line(7, 900));
  auto r = triage_logs({t.dir}, opts);
  CHECK(r.category == "straggler");
  CHECK(r.cause == "checkpoint_stall");
  CHECK(r.phase == "checkpoint");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks.empty());  // the saving rank is not named by an unattributed line

  // The save's own rank said so and does not report the collective: it is the one named
  // (stuck_in_checkpoint: the rank is known).
  TempDir t2("ckpt_stall_rank");
  write_file(t2.dir / "rank0.log", "step 899 loss 1.2\nSaving checkpoint to /ckpt/step_900\n");
  write_file(t2.dir / "train.log", watchdog_line(3, 900) + watchdog_line(7, 900));
  r = triage_logs({t2.dir}, opts);
  CHECK(r.category == "straggler");
  CHECK(r.cause == "stuck_in_checkpoint");
  CHECK(r.missing_ranks == std::vector<int>{0});

  // Training went on after the save: the hang is not the save's.
  TempDir t3("ckpt_then_steps");
  write_file(t3.dir / "console.log", "Saving checkpoint to /ckpt/step_900\nstep 901 loss 1.1\n");
  write_file(t3.dir / "train.log", watchdog_line(3, 950) + watchdog_line(7, 950));
  r = triage_logs({t3.dir}, opts);
  CHECK(r.category == "unknown");
  CHECK(r.phase == "training");

  // A committed save, then one rank's timeout: the phase, not a cause; one rank's lines
  // say nothing of the others (scope unknown).
  TempDir t4("ckpt_done");
  write_file(t4.dir / "train.log", "[commit] [Torch] Checkpoint global_step900 is ready now!\n" + watchdog_line(6, 901));
  r = triage_logs({t4.dir}, opts);
  CHECK(r.category == "unknown");
  CHECK(r.phase == "checkpoint");
  CHECK(r.scope == "unknown");
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("a partial wait is a subset only when the other ranks are seen elsewhere", "[triage_logs]") {
  TriageOptions opts;
  opts.world_size = 4;
  TempDir t("partial_seen");
  write_file(t.dir / "rank1.log", watchdog_line(1, 40));
  write_file(t.dir / "rank2.log", "step 12 loss 0.4\n");
  auto r = triage_logs({t.dir}, opts);
  INFO(render_text(r));
  CHECK(r.scope != "unknown");
  TempDir t2("partial_alone");
  write_file(t2.dir / "rank1.log", watchdog_line(1, 40));
  r = triage_logs({t2.dir}, opts);
  CHECK(r.category == "unknown");
  CHECK(r.scope == "unknown");
}

TEST_CASE("the heartbeat monitor's pending works: several mean collectives were running", "[triage_logs]") {
  const std::string many = "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process "
                           "will be terminated after dumping debug info. workMetaList_.size()=57\n";
  CHECK(parse(many).pending == 57);
  TempDir t("hb_many");
  write_file(t.dir / "train.log", many);
  auto r = triage_logs({t.dir});
  CHECK(r.cause == "heartbeat_timeout");
  CHECK(r.phase == "training");
  // One pending work can be the job's first collective: the phase stays open.
  TempDir t2("hb_one");
  write_file(t2.dir / "train.log", "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! "
                                   "Process will be terminated after dumping debug info. workMetaList_.size()=1\n");
  r = triage_logs({t2.dir});
  CHECK(r.cause == "heartbeat_timeout");
  CHECK(r.phase == "unknown");
}

TEST_CASE("a rank out of data while its peer waits in a collective is uneven data", "[triage_logs]") {
  TempDir t("no_tasks");
  write_file(t.dir / "worker-0.log", "[2020-07-15 06:29:15,255] [INFO] [svc.py:220:_gen] No tasks for now, maybe more "
                                     "later\n[2020-07-15 06:29:20,302] [INFO] [svc.py:220:_gen] No tasks for now, "
                                     "maybe more later\n");
  write_file(t.dir / "worker-1.log", "ERROR:root:[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:84] "
                                     "Timed out waiting 60000ms for recv operation to complete\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "collective_mismatch");
  CHECK(r.cause == "uneven_batches");
  CHECK(r.missing_ranks == std::vector<int>{0});
  CHECK(r.phase == "training");
}

TEST_CASE("SIGABRT on several ranks at once (torchrun summary only) is a collective timeout in training",
          "[triage_logs]") {
  TempDir t("abort_together");
  write_file(t.dir / "torchrun.log",
             "Failures:\n[1]:\n  time      : 2025-05-01_11:12:35\n  host      : node\n  rank      : 7 (local_rank: 7)\n"
             "  exitcode  : -6 (pid: 3438)\n  error_file: <N/A>\n  traceback : Signal 6 (SIGABRT) received by PID "
             "3438\n-----------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n"
             "  time      : 2025-05-01_11:12:35\n  host      : node\n  rank      : 0 (local_rank: 0)\n"
             "  exitcode  : -6 (pid: 3431)\n  error_file: <N/A>\n  traceback : Signal 6 (SIGABRT) received by PID "
             "3431\n=====================================================\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "unknown");
  CHECK(r.phase == "training");
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("Horovod's stall check names the missing rank; the cause stays open", "[triage_logs]") {
  auto l = parse("allreduce.grad.fc1 [missing ranks: 2, 3]");
  CHECK(l.kind == LogKind::kDesyncMissing);
  CHECK(l.ranks == std::vector<int>{2, 3});
  TempDir t("hvd_stall");
  write_file(t.dir / "train.log",
             "WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks "
             "and are waiting for remainder of ranks for more than 60 seconds.\nStalled ops:\n"
             "allreduce.grad.fc1 [missing ranks: 2]\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "unknown");
  CHECK(r.missing_ranks == std::vector<int>{2});
  CHECK(r.scope == "subset");
  // A garbled rank number does not make a world.
  TempDir t2("hvd_stall_garbage");
  write_file(t2.dir / "train.log", "allreduce.x [missing ranks: 2147483000]\n");
  r = triage_logs({t2.dir});
  CHECK(r.missing_ranks.empty());
  CHECK(r.world_size < 1000);
}

TEST_CASE("torchrun's SIGKILL of a rank it had sent SIGTERM (a frozen rank) is its teardown, not the root",
          "[triage_logs]") {
  TempDir t("torchrun_frozen");
  // Rank 1 froze after step 4; rank 0's allreduce timed out; torchrun sent rank 1 SIGTERM,
  // waited 30 s, then SIGKILLed it, and its summary lists that -9 among the failures.
  write_file(t.dir / "rank0.log",
             "2026-12-02T04:32:07.100000Z [rank 0] step 4 done\n"
             "2026-12-02T04:32:13.493360Z [rank 0] ERROR (timeout) in backward at step 5: Timed out waiting 5000ms "
             "for recv operation to complete (in allreduce seq 10, numel 4225)\n");
  write_file(t.dir / "rank1.log", "2026-12-02T04:32:07.000000Z [rank 1] step 4 done\n");
  write_file(t.dir / "torchrun.log",
             "2026-12-02T04:32:13.560214Z W1202 04:32:13.559000 24412 torch/distributed/elastic/multiprocessing/"
             "api.py:1028] Sending process 24539 closing signal SIGTERM\n"
             "2026-12-02T04:32:43.560873Z W1202 04:32:43.560000 24412 torch/distributed/elastic/multiprocessing/"
             "api.py:1047] Unable to shutdown process 24539 via 15, forcefully exiting via 9\n"
             "2026-12-02T04:32:43.605731Z Failures:\n2026-12-02T04:32:43.605731Z [1]:\n"
             "2026-12-02T04:32:43.605731Z   time      : 2026-12-02_04:32:43\n"
             "2026-12-02T04:32:43.605731Z   host      : localhost\n"
             "2026-12-02T04:32:43.605731Z   rank      : 1 (local_rank: 1)\n"
             "2026-12-02T04:32:43.605731Z   exitcode  : -9 (pid: 24539)  (SIGKILL)\n"
             "2026-12-02T04:32:43.605731Z   error_file: <N/A>\n"
             "2026-12-02T04:32:43.605731Z   traceback : Signal 9 (SIGKILL) received by PID 24539\n"
             "2026-12-02T04:32:43.605731Z ------------------------------------------------------------\n"
             "2026-12-02T04:32:43.605731Z Root Cause (first observed failure):\n2026-12-02T04:32:43.605731Z [0]:\n"
             "2026-12-02T04:32:43.605731Z   time      : 2026-12-02_04:32:13\n"
             "2026-12-02T04:32:43.605731Z   host      : localhost\n"
             "2026-12-02T04:32:43.605731Z   rank      : 0 (local_rank: 0)\n"
             "2026-12-02T04:32:43.605731Z   exitcode  : 11 (pid: 24537)\n"
             "2026-12-02T04:32:43.605731Z   error_file: <N/A>\n"
             "2026-12-02T04:32:43.605731Z ============================================================\n");
  TriageOptions o;
  o.world_size = 2;
  const auto r = triage_logs({t.dir}, o);
  INFO(render_text(r));
  CHECK(r.category != "rank_exit");
  CHECK(r.missing_ranks == std::vector<int>{1});
}

TEST_CASE("two ranks, one stuck and one gone on: a mismatch, but which side skipped is not in the logs",
          "[triage_logs]") {
  TempDir t("two_rank_ahead");
  std::string r0, r1;
  for (int step = 1; step <= 11; ++step) {
    r0 += fmt::format("2026-12-02T04:33:{:02d}.100000Z [rank 0] step {}/12 loss 0.5 dur_ms 100\n", step, step);
    r1 += fmt::format("2026-12-02T04:33:{:02d}.100000Z [rank 1] step {}/12 loss 0.5 dur_ms 100\n", step, step);
  }
  r1 += "2026-12-02T04:33:12.100000Z [rank 1] step 12/12 loss 0.5 dur_ms 100\n"
        "2026-12-02T04:33:12.200000Z [rank 1] lingering after the training loop until killed\n";
  r0 += "2026-12-02T04:33:17.200000Z [rank 0] ERROR (timeout) in backward at step 12: Timed out waiting 5000ms "
        "for recv operation to complete (in allreduce seq 24, numel 4225)\n";
  write_file(t.dir / "rank0.log", r0);
  write_file(t.dir / "rank1.log", r1);
  TriageOptions o;
  o.world_size = 2;
  const auto r = triage_logs({t.dir}, o);
  INFO(render_text(r));
  CHECK(r.category == "collective_mismatch");
  CHECK(r.missing_ranks.empty());
  bool says = false;
  for (const auto& n : r.notes) says |= n.find("undecidable from these logs") != std::string::npos;
  CHECK(says);
}

TEST_CASE("an NCCL socket that timed out is the link, one reset or closed is a peer gone (undecided)", "[triage_logs]") {
  // ETIMEDOUT: the peer's host never answered; the proxy's error trace that follows is its echo.
  TempDir t("sock_timeout");
  write_file(t.dir / "nccl.log",
             "w-2:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from 10.0.0.9<41468> failed : Connection "
             "timed out\n"
             "w-2:83:2526 [0] NCCL INFO misc/socket.cc:520 -> 2\n"
             "w-2:83:2526 [0] transport/net_socket.cc:219 NCCL WARN NET/Socket : socket progress error\n"
             "w-2:83:2520 [0] NCCL INFO proxy.cc:614 -> 2 [Proxy Thread]\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "network");
  CHECK(r.cause == "connection_timeout");
  CHECK(r.missing_ranks.empty());
  // A reset alone: a dead peer and a reset link look the same from this side.
  TempDir t2("sock_reset");
  write_file(t2.dir / "nccl.log",
             "w-2:15:91 [3] include/socket.h 398 NCCL WARN Call to recv failed : Connection reset by peer.\n"
             "w-2:15:91 [3] transport.cu:153 NCCL WARN transport.cu:153 ->2 [Proxy thread error]\n");
  r = triage_logs({t2.dir});
  CHECK(r.category == "unknown");
  CHECK(r.missing_ranks.empty());
  // The EFA provider's "invalid receiver QPN" is a crashed peer's echo, not an EFA fault.
  TempDir t3("efa_qpn");
  write_file(t3.dir / "nccl.log",
             "w-0:199:263 [2] process_err_completion:1562 NCCL WARN NET/OFI Request 0x7f08c0001d30 completed with "
             "error. RC: 5. Error: Invalid receiver queue pair number (QPN) My EFA addr: fi_addr_efa://[fe80::1]:0:1\n");
  r = triage_logs({t3.dir});
  CHECK(r.category != "network");
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("torch.distributed.launch's CalledProcessError: the worker that died, and of what", "[triage_logs]") {
  TempDir t("called_process");
  write_file(t.dir / "launch.log",
             "Traceback (most recent call last):\n"
             "  File \"/opt/conda/lib/python3.7/site-packages/torch/distributed/launch.py\", line 259, in main\n"
             "    cmd=cmd)\n"
             "subprocess.CalledProcessError: Command '['/opt/conda/bin/python3', '-u', 'train.py', '--local_rank=2', "
             "'--epochs', '90']' died with <Signals.SIGSEGV: 11>.\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "segfault");
}

TEST_CASE("the kernel's segfault report of a pid belongs to the rank that pid is", "[triage_logs]") {
  TempDir t("kernel_segv");
  write_file(t.dir / "rank-0.log",
             "2026-12-01T10:00:00Z node1:4241:4300 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init "
             "COMPLETE\n"
             "2026-12-01T10:00:05Z step 1\n");
  write_file(t.dir / "rank-1.log",
             "2026-12-01T10:00:00Z node1:4242:4301 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init "
             "COMPLETE\n"
             "2026-12-01T10:00:05Z step 1\n");
  write_file(t.dir / "dmesg.log",
             "[Tue Dec  1 10:00:06 2026] python3[4242]: segfault at 8 ip 00007f10a6fc1202 sp 00007ffd1c2e8a10 error 4 "
             "in libnccl.so.2[7f10a0000000+9a00000]\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "segfault");
  CHECK(r.missing_ranks == std::vector<int>{1});
}

namespace {
// A DETAIL-mode ProcessGroupWrapper INFO line, as PyTorch 2.x writes it.
std::string entered(int rank, int seq, const char* op, const char* shape, const char* dtype) {
  return fmt::format("[I ProcessGroupWrapper.cpp:562] [Rank {}] Running collective: CollectiveFingerPrint("
                     "SequenceNumber={}, OpType={}, TensorShape=[{}], TensorDtypes={}, TensorDeviceTypes="
                     "TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), requires_grad=false "
                     "(default), pinned_memory=false (default), memory_format=(nullopt)))\n",
                     rank, seq, op, shape, dtype);
}
}  // namespace

TEST_CASE("DETAIL mode: a rank whose last entered collective is behind its peers' never entered theirs",
          "[triage_logs]") {
  TempDir t("detail_lag");
  std::string log;
  for (int seq = 1; seq <= 3; ++seq) {
    for (int r : {0, 1, 2, 3}) log += entered(r, seq, "BROADCAST", "1", "Long");
  }
  SECTION("another op or size than the peers run: mismatched, the lagging rank named") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "73", "Byte");
    write_file(t.dir / "train.log", log);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "collective_mismatch");
    CHECK(r.cause == "mismatched_collective");
    CHECK(r.missing_ranks == std::vector<int>{1});
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 1);
    CHECK(r.phase == "training");
  }
  SECTION("the same collective one behind: skipped") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "1", "Long");
    write_file(t.dir / "train.log", log);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "collective_mismatch");
    CHECK(r.cause == "skipped_collective");
    CHECK(r.missing_ranks == std::vector<int>{1});
  }
  SECTION("ranks of the world that logged nothing could be on either side: no rank named") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "73", "Byte");
    write_file(t.dir / "train.log", log);
    TriageOptions o;
    o.world_size = 8;
    const auto r = triage_logs({t.dir}, o);
    INFO(render_text(r));
    CHECK(r.missing_ranks.empty());
    CHECK(r.cause != "mismatched_collective");
  }
  SECTION("sequence numbers that count down on a rank are several process groups': not compared") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "73", "Byte");
    log += entered(1, 2, "ALLGATHER", "8", "Float");  // a subgroup's counter, its local rank 1
    write_file(t.dir / "train.log", log);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.missing_ranks.empty());
    CHECK(r.category != "collective_mismatch");
  }
  SECTION("a lagging rank that was killed stopped entering collectives by its death") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "73", "Byte");
    log += "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
           "capacity of 79.10 GiB of which 1.06 GiB is free.\n";
    write_file(t.dir / "train.log", log);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category != "collective_mismatch");
  }
}

TEST_CASE("a rank evaluating alone while its peers wait in a collective is a slow rank in eval", "[triage_logs]") {
  TempDir t("eval_alone");
  std::string r0, peers;
  for (int step = 1; step <= 5; ++step) {
    for (int r = 0; r < 4; ++r)
      (r == 0 ? r0 : peers) += fmt::format("2026-12-02T05:00:{:02d}.000000Z [rank{}]: step {} loss 0.5\n", step, r, step);
  }
  r0 += "2026-12-02T05:00:06.000000Z [rank0]: Running validation on 200 prompts\n";
  SECTION("the peers are not evaluating: rank 0 holds them") {
    for (int r = 1; r < 4; ++r)
      peers += fmt::format("2026-12-02T05:30:06.100000Z [rank{0}]:[E1202 05:30:06.100000000 ProcessGroupNCCL.cpp:607] "
                           "[Rank {0}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, "
                           "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800090 "
                           "milliseconds before timing out.\n",
                           r);
    write_file(t.dir / "rank0.log", r0);
    write_file(t.dir / "peers.log", peers);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "straggler");
    CHECK(r.cause == "slow_rank");
    CHECK(r.missing_ranks == std::vector<int>{0});
    CHECK(r.phase == "eval");
  }
  SECTION("its evaluation ended only after the peers had timed out: it came back, slow") {
    r0 += "2026-12-02T05:41:00.000000Z [rank0]: validation finished: accuracy 0.71\n";
    for (int r = 1; r < 4; ++r)
      peers += fmt::format("2026-12-02T05:30:06.100000Z [rank{0}]:[E1202 05:30:06.100000000 ProcessGroupNCCL.cpp:607] "
                           "[Rank {0}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, "
                           "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800090 "
                           "milliseconds before timing out.\n",
                           r);
    write_file(t.dir / "rank0.log", r0);
    write_file(t.dir / "peers.log", peers);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "straggler");
    CHECK(r.cause == "slow_rank");
    CHECK(r.missing_ranks == std::vector<int>{0});
    CHECK(r.phase == "eval");
  }
  SECTION("the peers evaluate too: uneven evaluation batches fit as well, no slow rank is claimed") {
    for (int r = 1; r < 4; ++r) {
      peers += fmt::format("2026-12-02T05:00:06.000000Z [rank{}]: Running validation on 200 prompts\n", r);
      peers += fmt::format("2026-12-02T05:30:06.100000Z [rank{0}]:[E1202 05:30:06.100000000 ProcessGroupNCCL.cpp:607] "
                           "[Rank {0}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, "
                           "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800090 "
                           "milliseconds before timing out.\n",
                           r);
    }
    write_file(t.dir / "rank0.log", r0);
    write_file(t.dir / "peers.log", peers);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause != "slow_rank");
  }
}

TEST_CASE("phase from a traceback: its innermost frame that names a phase", "[triage_logs]") {
  // Start-up, although collectives ran (a CUDA-graph capture at server start, the shape of
  // gh-sglang-16237): the frames say init, the fingerprint's sequence number does not say training.
  TempDir t("frame_init");
  write_file(t.dir / "server.log",
             "Traceback (most recent call last):\n"
             "  File \"/w/srt/model_executor/model_runner.py\", line 511, in initialize\n"
             "    self.init_device_graphs()\n"
             "  File \"/w/srt/model_executor/model_runner.py\", line 2448, in init_device_graphs\n"
             "    self.graph_runner = graph_runners[self.device](self)\n"
             "  File \"/w/srt/model_executor/cuda_graph_runner.py\", line 354, in __init__\n"
             "    raise Exception(\n"
             "Exception: Capture cuda graph failed: Detected mismatch between collectives on ranks. Rank 3 is "
             "running collective: CollectiveFingerPrint(SequenceNumber=17OpType=BARRIER), but Rank 0 is running "
             "collective: CollectiveFingerPrint(SequenceNumber=45OpType=BARRIER).\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "collective_mismatch");
  CHECK(r.phase == "init");
  // The same traceback after the job had logged its steps: a start-up frame does not undo them.
  TempDir t2("frame_init_after_steps");
  write_file(t2.dir / "server.log",
             "step 40 loss 1.25\n"
             "Traceback (most recent call last):\n"
             "  File \"/w/srt/model_executor/model_runner.py\", line 511, in initialize\n"
             "Exception: Capture cuda graph failed: Detected mismatch between collectives on ranks. Rank 3 is "
             "running collective: CollectiveFingerPrint(SequenceNumber=17OpType=BARRIER), but Rank 0 is running "
             "collective: CollectiveFingerPrint(SequenceNumber=45OpType=BARRIER).\n");
  r = triage_logs({t2.dir});
  CHECK(r.phase == "training");
  // A rank's own traceback: the save inside the training loop decides (innermost wins).
  TempDir t3("frame_save");
  write_file(t3.dir / "train.log",
             "[rank1]: Traceback (most recent call last):\n"
             "[rank1]:   File \"/w/transformers/trainer.py\", line 1938, in _inner_training_loop\n"
             "[rank1]:   File \"/w/transformers/trainer.py\", line 2390, in _save_checkpoint\n"
             "[rank1]:   File \"/w/transformers/modeling_utils.py\", line 2400, in save_pretrained\n"
             "[rank1]: OSError: [Errno 122] Disk quota exceeded\n");
  r = triage_logs({t3.dir});
  CHECK(r.phase == "checkpoint");
  // ...and evaluation; while the optimizer's _init_group (every step) is no start-up.
  TempDir t4("frame_eval");
  write_file(t4.dir / "train.log",
             "Traceback (most recent call last):\n"
             "  File \"/w/main.py\", line 80, in train\n"
             "  File \"/w/main.py\", line 120, in evaluate\n"
             "  File \"/w/model.py\", line 33, in forward\n"
             "RuntimeError: shape mismatch\n");
  r = triage_logs({t4.dir});
  CHECK(r.phase == "eval");
  TempDir t5("frame_adam");
  write_file(t5.dir / "train.log",
             "Traceback (most recent call last):\n"
             "  File \"/w/main.py\", line 80, in train\n"
             "  File \"/usr/lib/python3.10/site-packages/torch/optim/adam.py\", line 150, in _init_group\n"
             "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n");
  r = triage_logs({t5.dir});
  CHECK(r.phase == "training");
}

TEST_CASE("a platform's quoted copy of the process's last output: its progress lines count", "[triage_logs]") {
  // Kubernetes' termination message keeps the container's output tail with its newlines escaped
  // (the shape of gh-pai-5464): the program's "Start training" banner before the kill, joined in
  // one segment with the runtime's "Killed" (the banner had no newline of its own).
  const std::string head =
      "Pod failed: PodPattern matched: containers: - name: app reason: OOMKilled message: \"(7): Conv1d(256, 7, "
      "kernel_size=(1,), stride=(1,))\\n )\\n)\\n";
  TempDir t("quoted_progress");
  write_file(t.dir / "job-exit.txt",
             head + "2021-04-30 07:10:43,386 INFO *****Start training pv_rcnn(default)***** "
                    "/usr/local/pai/runtime: line 30: 7 Killed ${RUNTIME_SCRIPT_DIR}/runtime_entry.sh\\n\" code: 137\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "oom");
  CHECK(r.phase == "training");
  // Without the banner the same message says nothing of the phase.
  TempDir t2("quoted_no_progress");
  write_file(t2.dir / "job-exit.txt",
             head + "loading model\\n /usr/local/pai/runtime: line 30: 7 Killed ${RUNTIME_SCRIPT_DIR}/runtime_entry.sh\\n\" "
                    "code: 137\n");
  r = triage_logs({t2.dir});
  CHECK(r.cause == "oom");
  CHECK(r.phase == "unknown");
}

TEST_CASE("a hung process's stack with no error names the phase it stopped in", "[triage_logs]") {
  // py-spy/pystack dumped in traceback form (the shape of gh-pytorch-lightning-11267): no error
  // line, no rank; the innermost frame that names a phase is inside the checkpoint callback.
  TempDir t("stack_save");
  write_file(t.dir / "stack.txt",
             "  File \"/w/lightning/loops/epoch/training_epoch_loop.py\", line 298, in on_run_end\n"
             "  File \"/w/lightning/trainer/callback_hook.py\", line 93, in on_train_epoch_end\n"
             "  File \"/w/lightning/callbacks/model_checkpoint.py\", line 390, in save_checkpoint\n"
             "    self._save_none_monitor_checkpoint(trainer, monitor_candidates)\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "unknown");
  CHECK(r.phase == "checkpoint");
  // A rank's traceback cut before its exception line: its own frames still say where it was.
  TempDir t2("rank_stack_eval");
  write_file(t2.dir / "train.log",
             "[rank3]: Traceback (most recent call last):\n"
             "[rank3]:   File \"/w/transformers/trainer.py\", line 2589, in _inner_training_loop\n"
             "[rank3]:   File \"/w/transformers/trainer.py\", line 4000, in evaluation_loop\n");
  r = triage_logs({t2.dir});
  CHECK(r.phase == "eval");
  // Step lines after the save: the job went on training, the save says nothing of the stop.
  TempDir t3("stack_then_steps");
  write_file(t3.dir / "train.log",
             "[rank3]:   File \"/w/lightning/callbacks/model_checkpoint.py\", line 390, in save_checkpoint\n"
             "[rank3]: step 41 loss 0.5\n");
  r = triage_logs({t3.dir});
  CHECK(r.phase != "checkpoint");
}

TEST_CASE("a py-spy dump names the phase by its innermost frame, printed first", "[triage_logs]") {
  // The shape of pytorch/torchtitan#1342: the main thread stuck in destroy_process_group.
  TempDir t("pyspy_shutdown");
  write_file(t.dir / "pyspy.txt",
             "Thread 0x7F81445A8440 (active): \"MainThread\"\n"
             "    destroy_process_group (torch/distributed/distributed_c10d.py:2184)\n"
             "    <module> (torchtitan/train.py:554)\n"
             "    _run_code (runpy.py:86)\n"
             "Thread 0x7F7D9CFF9640 (idle): \"Thread-2\"\n"
             "    wait (threading.py:324)\n"
             "    run (tqdm/_monitor.py:60)\n");
  auto r = triage_logs({t.dir});
  CHECK(r.phase == "shutdown");
  // Innermost first: the save, not the training loop printed after it.
  TempDir t2("pyspy_save");
  write_file(t2.dir / "pyspy.txt",
             "Thread 0x7F81445A8440 (active): \"MainThread\"\n"
             "    barrier (torch/distributed/distributed_c10d.py:4159)\n"
             "    save_checkpoint (deepspeed/runtime/engine.py:3049)\n"
             "    _save_checkpoint (transformers/trainer.py:3191)\n"
             "    _inner_training_loop (transformers/trainer.py:2589)\n"
             "    train (transformers/trainer.py:2164)\n"
             "    <module> (train.py:702)\n");
  r = triage_logs({t2.dir});
  CHECK(r.phase == "checkpoint");
}

TEST_CASE("a chained traceback: the exception raised while handling another is the failure", "[triage_logs]") {
  // fsspec's commit: os.rename fails across devices (handled by a copy), the copy hits EIO.
  TempDir t("chained");
  write_file(t.dir / "rank_0.log",
             "[rank0]: Traceback (most recent call last):\n"
             "[rank0]:   File \"/usr/lib/python3.11/shutil.py\", line 825, in move\n"
             "[rank0]:     os.rename(src, real_dst)\n"
             "[rank0]: OSError: [Errno 18] Invalid cross-device link: '/tmp/tmpa4' -> '/ckpt/epoch=1.ckpt'\n"
             "\n"
             "[rank0]: During handling of the above exception, another exception occurred:\n"
             "\n"
             "[rank0]: Traceback (most recent call last):\n"
             "[rank0]:   File \"/usr/lib/python3.11/shutil.py\", line 258, in copyfile\n"
             "[rank0]:     with open(dst, 'wb') as fdst:\n"
             "[rank0]: OSError: [Errno 5] Input/output error: '/ckpt/epoch=1.ckpt'\n");
  auto r = triage_logs({t.dir});
  REQUIRE(r.first_failure);
  CHECK(mentions(r.first_failure->what, "Errno 5"));
  CHECK_FALSE(mentions(r.first_failure->what, "Errno 18"));
  // Explicit chaining ("raise ... from ..."): the first exception is the cause, and stays the failure.
  TempDir u("direct");
  write_file(u.dir / "rank_0.log",
             "[rank0]: Traceback (most recent call last):\n"
             "[rank0]: ValueError: bad shard index 7\n"
             "\n"
             "[rank0]: The above exception was the direct cause of the following exception:\n"
             "\n"
             "[rank0]: Traceback (most recent call last):\n"
             "[rank0]: RuntimeError: could not load the dataset\n");
  r = triage_logs({u.dir});
  REQUIRE(r.first_failure);
  CHECK(mentions(r.first_failure->what, "bad shard index"));
}

TEST_CASE("a peer's connection closed after the launcher began to stop a still job is the teardown, not a death",
          "[triage_logs]") {
  // Two ranks train; rank 1 goes silent at 00:05 (frozen); rank 0 waits. At 00:20 the
  // launcher (hanglab's supervisor, torchrun) sends its closing signals, rank 1 dies first
  // and rank 0 logs the closed connection before its own SIGKILL lands.
  TempDir t("outside_teardown");
  std::string r0, r1;
  for (int step = 1; step <= 5; ++step) {
    r0 += fmt::format("2026-12-02T05:00:{:02d}.000000Z [rank0]: step {} loss 0.5\n", step, step);
    r1 += fmt::format("2026-12-02T05:00:{:02d}.000000Z [rank1]: step {} loss 0.5\n", step, step);
  }
  const std::string echo =
      "2026-12-02T05:00:22.040000Z [rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
      "Connection closed by peer [127.0.0.1]:30517\n";
  const auto notice = [](const char* when, int pid, const char* sig) {
    return fmt::format("2026-12-02T05:00:{} hanglab supervisor: Sending process {} closing signal {} (rank {}, "
                       "teardown: hang)\n",
                       when, pid, sig, pid - 100);
  };
  write_file(t.dir / "rank0.log", r0 + echo);
  write_file(t.dir / "rank1.log", r1);
  SECTION("without a notice: rank 1 stopped logging and its peer lost it (a death, as far as the logs tell)") {
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rank_exit");
    CHECK(r.missing_ranks == std::vector<int>{1});
  }
  SECTION("the notice before the echo: the closed connection is the teardown's, no rank is said to have died") {
    write_file(t.dir / "supervisor.log", notice("20.000000Z", 100, "SIGTERM") + notice("20.000100Z", 101, "SIGTERM") +
                                             notice("22.000000Z", 100, "SIGKILL") + notice("22.000100Z", 101, "SIGKILL"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category != "rank_exit");
    CHECK(std::find(r.missing_ranks.begin(), r.missing_ranks.end(), 0) == r.missing_ranks.end());
    CHECK((!r.first_failure || r.first_failure->what.find("died") == std::string::npos));
  }
  SECTION("a failure before the notice: the launcher reacts to it, the echo keeps its meaning") {
    write_file(t.dir / "rank0.log", r0 + echo);
    write_file(t.dir / "supervisor.log", notice("23.000000Z", 100, "SIGTERM"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rank_exit");
    CHECK(r.missing_ranks == std::vector<int>{1});
  }
}
