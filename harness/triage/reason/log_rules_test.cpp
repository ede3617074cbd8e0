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

TEST_CASE("host:N tags whose numbers do not fit the world are pids, not ranks", "[triage_logs]") {
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

TEST_CASE("scope by the cause: a setting every rank shares, a rendezvous short of ranks, a straggler",
          "[triage_logs]") {
  // Two ranks on one device: NCCL's init fails on both and the communicator never forms for
  // anyone, so the whole job is stuck in init even though one process's line is all there is.
  TempDir t("scope_dup_gpu");
  write_file(t.dir / "nccl.log",
             "n1:100:101 [0] init.cc:771 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
             "device 1a000\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "duplicate_gpu");
  CHECK(r.scope == "all");
  // The store's port in use: no rank can rendezvous.
  TempDir t2("scope_port");
  write_file(t2.dir / "out.log",
             "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
             "address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). "
             "The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).\n");
  r = triage_logs({t2.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "address_in_use");
  CHECK(r.scope == "all");
  // A store barrier that 7 of 16 ranks reached: the nine that never arrived are a subset, unnamed.
  TempDir t3("scope_barrier");
  std::string lines;
  for (int rank : {6, 3, 4})
    lines += fmt::format(
        "[2021-12-17 16:36:32,821][torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to "
        "initialize process group for rank: {}, key: store_based_barrier_key:1 (world_size=16, worker_count=7, "
        "timeout=0:30:00)\n",
        rank);
  write_file(t3.dir / "train.log", lines);
  r = triage_logs({t3.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "rendezvous_timeout");
  CHECK(r.missing_ranks.empty());
  CHECK(r.scope == "subset");
  // A process still busy in its data scan while its peers time out: a straggler is some ranks.
  TempDir t4("scope_busy");
  write_file(t4.dir / "train.log",
             "train: Scanning 'labels' images and labels...43718 found:  97%|##9| 43830/45049 [01:07<00:18, "
             "66.12it/s][E ProcessGroupNCCL.cpp:567] [Rank 1] Watchdog caught collective operation timeout: "
             "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67438 milliseconds before timing out.\n"
             "[E ProcessGroupNCCL.cpp:567] [Rank 2] Watchdog caught collective operation timeout: "
             "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67441 milliseconds before timing out.\n"
             "train: Scanning 'labels' images and labels...43731 found:  97%|##9| 43843/45049 [01:08<00:18, "
             "66.12it/s]\n");
  r = triage_logs({t4.dir});
  CHECK(r.category == "straggler");
  CHECK(r.scope == "subset");
}

TEST_CASE("a rank whose own watchdog was stuck is not missing for not reporting its peers' timeout",
          "[triage_logs]") {
  // Rank 7's heartbeat monitor says its watchdog thread is stuck: the watchdog is what would report
  // the collective's timeout, so rank 7's silence about SeqNum 120049 says nothing of where it is.
  TempDir t("watchdog_stuck");
  const std::string stuck =
      "[rank7]:[E626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 7] "
      "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
      "collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog.\n";
  const std::string timeout =
      "[rank2]:[E626 05:06:30.929096625 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=120049, OpType=_ALLGATHER_BASE, NumelIn=16384000, NumelOut=131072000, "
      "Timeout(ms)=1800000) ran for 1800065 milliseconds before timing out.\n";
  write_file(t.dir / "train.log", stuck + timeout);
  auto r = triage_logs({t.dir});
  CHECK(r.missing_ranks.empty());
  CHECK(r.category != "straggler");
  // Without the heartbeat line, a rank that logs after its peer's timeout and never reports it is
  // still read as alive and absent (the rule the stuck watchdog is an exception to).
  TempDir t2("watchdog_fine");
  write_file(t2.dir / "train.log",
             timeout + "[rank7]:[W626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [Rank 7] some warning\n");
  r = triage_logs({t2.dir});
  INFO(r.category << "/" << r.cause);
  CHECK(r.missing_ranks == std::vector<int>{7});
}

TEST_CASE("no_error_logged is said of every rank's own log, nothing less", "[triage_logs]") {
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

TEST_CASE("a process killed after its own exception died of the kill -- an epoch in a line is training",
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
  // Two killed, one of them failed: a subset. Which one is not said: the launcher quotes the last command it
  // built ('--local_rank=1' of two), whichever process failed (launch.py sigkill_handler's `cmd`).
  TempDir t2("ds_two");
  write_file(t2.dir / "ds.log",
             "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266\n"
             "[2023-04-14 13:11:27,880] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13267\n"
             "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', "
             "'--local_rank=1'] exits with return code = -9\n");
  r = triage_logs({t2.dir});
  CHECK(r.world_size == 2);
  CHECK(r.missing_ranks.empty());
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

TEST_CASE("a save under way while some ranks time out is a checkpoint stall -- a finished one only names the phase",
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

TEST_CASE("Horovod's stall check names the missing rank -- the cause stays open", "[triage_logs]") {
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
  CHECK(r.phase != "init");  // an allreduce of gradients is no start-up broadcast
  // A garbled rank number does not make a world.
  TempDir t2("hvd_stall_garbage");
  write_file(t2.dir / "train.log", "allreduce.x [missing ranks: 2147483000]\n");
  r = triage_logs({t2.dir});
  CHECK(r.missing_ranks.empty());
  CHECK(r.world_size < 1000);
}

TEST_CASE("Horovod's stall check over TF variables' broadcasts only: the start-up state sync, phase init",
          "[triage_logs]") {
  // horovod/tensorflow/mpi_ops.py broadcast(): 'HorovodBroadcast_%s' % _normalize_name(tensor.name); the
  // Horovod 0.16 stall check (common/operations.cc:588) prints "<op> [missing ranks: N]" per stalled op.
  const std::string head =
      "[2019-04-13 13:56:31.861697: W horovod/common/operations.cc:588] One or more tensors were submitted to be "
      "reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 "
      "seconds. This may indicate that different ranks are trying to submit different tensors or that only subset "
      "of ranks is submitting tensors, which will cause deadlock.\n"
      "Stalled ops:HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]\n"
      "[2019-04-13 13:56:31.861765: W horovod/common/operations.cc:588] HorovodBroadcast_conv2d_kernel_Momentum_0 "
      "[missing ranks: 1]\n";
  {
    TempDir t("hvd_bcast_init");
    write_file(t.dir / "train.log", head);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "unknown");
    CHECK(r.missing_ranks == std::vector<int>{1});
    CHECK(r.phase == "init");
  }
  {
    // One stalled op that is not such a broadcast (a gradient's allreduce): not the start-up sync.
    TempDir t("hvd_bcast_mixed");
    write_file(t.dir / "train.log", head + "[2019-04-13 13:56:31.861786: W horovod/common/operations.cc:588] "
                                           "DistributedMomentumOptimizer_Allreduce/HorovodAllreduce_gradients_0 "
                                           "[missing ranks: 1]\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.missing_ranks == std::vector<int>{1});
    CHECK(r.phase != "init");
  }
  {
    // Steps logged before the stall: the job was training, whatever the op.
    TempDir t("hvd_bcast_after_steps");
    write_file(t.dir / "train.log", "step 120/1000 loss 0.31\n" + head);
    const auto r = triage_logs({t.dir});
    CHECK(r.phase != "init");
  }
}

TEST_CASE("Horovod's stall report of 0.20 on: one missing rank per line after 'Missing ranks:'", "[triage_logs]") {
  // horovod/common/stall_inspector.cc: the warning, std::endl, "Missing ranks:", then per missing rank
  // std::endl << global rank << ('!' past the shutdown time) << ": [" << up to 6 tensor names << "]".
  const std::string head =
      "[2021-06-01 10:00:00.000000: W /tmp/pip-req-build/horovod/common/stall_inspector.cc:107] One or more "
      "tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for "
      "remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit "
      "different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. \n"
      "Missing ranks:\n";
  {
    TempDir t("hvd_stall_block");
    write_file(t.dir / "train.log", "step 40 loss 0.3\n" + head +
                                        "1: [allreduce.grad.fc1.weight, allreduce.grad.fc1.bias]\n"
                                        "3!: [allreduce.grad.fc1.weight]\n"
                                        "an unrelated line after the report\n"
                                        "7: [not a report entry]\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "unknown");
    CHECK(r.missing_ranks == std::vector<int>{1, 3});
    CHECK(r.scope == "subset");
    CHECK(r.phase == "training");
  }
  {
    // The start-up broadcast of TF variables, in the new form: init.
    TempDir t("hvd_stall_block_bcast");
    write_file(t.dir / "train.log", head + "1: [HorovodBroadcast_dense_kernel_0, HorovodBroadcast_dense_bias_0]\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.missing_ranks == std::vector<int>{1});
    CHECK(r.phase == "init");
  }
  // Without the header such a line is nothing.
  CHECK(parse("1: [allreduce.grad.fc1.weight]").kind != LogKind::kDesyncMissing);
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

TEST_CASE("a CUDA OOM no line ties to a rank is the GPU's memory limit -- a named rank's is that rank's exit",
          "[triage_logs]") {
  const std::string oom =
      "  File \"/opt/venv/lib/python3.11/site-packages/torch/autograd/__init__.py\", line 204, in backward\n"
      "    Variable._execution_engine.run_backward(\n"
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 564.00 MiB. GPU 1 has a total capacity of "
      "22.20 GiB of which 203.12 MiB is free.\n";
  TempDir t("oom_rankless");
  write_file(t.dir / "train.log", "Traceback (most recent call last):\n" + oom);
  auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "cuda_oom");
  CHECK(r.phase == "training");  // raised in the backward pass
  CHECK(r.missing_ranks.empty());
  TempDir n("oom_ranked");
  std::string ranked = "[rank3]:Traceback (most recent call last):\n";
  for (size_t from = 0; from < oom.size();) {
    const size_t nl = oom.find('\n', from);
    ranked += "[rank3]:" + oom.substr(from, nl + 1 - from);
    from = nl + 1;
  }
  write_file(n.dir / "train.log", ranked);
  r = triage_logs({n.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "cuda_oom");
  CHECK(r.missing_ranks == std::vector<int>{3});
}

// Each rank's watchdog reports its oldest unfinished collective (ProcessGroupNCCL's watchdog loop walks
// workMetaList_ in issue order): a rank at a lower SeqNum stalled first. The fewer ranks are named only when
// they are also the ones that stalled first; fewer ranks AHEAD of the rest name no side.
TEST_CASE("a SeqNum mismatch names the fewer ranks only when they stalled at the earlier collective",
          "[triage_logs]") {
  TriageOptions opts;
  opts.world_size = 4;
  const auto run = [&](long long odd_seq, const char* name) {
    TempDir t(name);
    std::string log = watchdog_line(0, odd_seq, "BROADCAST");
    for (int r = 1; r < 4; ++r) log += watchdog_line(r, 900);
    write_file(t.dir / "train.log", log);
    return triage_logs({t.dir}, opts);
  };
  const auto behind = run(898, "seq_behind");
  INFO(render_text(behind));
  CHECK(behind.category == "collective_mismatch");
  CHECK(behind.missing_ranks == std::vector<int>{0});
  const auto ahead = run(902, "seq_ahead");
  INFO(render_text(ahead));
  CHECK(ahead.category == "collective_mismatch");
  CHECK(ahead.missing_ranks.empty());
  CHECK((!ahead.first_failure || ahead.first_failure->rank < 0));
}
