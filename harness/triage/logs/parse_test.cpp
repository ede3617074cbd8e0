// Unit tests of the plain-log line parser on every recognised format: rank attribution,
// clocks, PyTorch/NCCL/Gloo/TCPStore/launcher/kernel lines, save lines.
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
#include "triage/logs/progress.hpp"
#include "triage/logs/reader.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

namespace fs = std::filesystem;
using namespace hanglab;
using namespace hanglab::logtest;
using nlohmann::json;

// ---- the line parser ------------------------------------------------------------------------

TEST_CASE("rank attribution", "[triage_logs]") {
  SECTION("[rankN]: prefix (PyTorch) wins over an in-message rank") {
    const auto l = parse("[rank3]:[E1129 08:26:59.123456789 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
                         "collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST, Timeout(ms)=1800000) ran "
                         "for 1800350 milliseconds before timing out.");
    CHECK(l.rank == 3);
    CHECK(l.rank_src == RankSource::kPrefix);
  }
  SECTION("[Rank N] inside the message") {
    const auto l = parse("[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
                         "WorkNCCL(SeqNum=7, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800350 milliseconds before "
                         "timing out.");
    CHECK(l.rank == 1);
    CHECK(l.rank_src == RankSource::kMessage);
  }
  SECTION("[PG x Rank N] is PG-local unless the PG is the default one") {
    const auto sub = parse("[rank6]:[E1129 08:26:59.1 ProcessGroupNCCL.cpp:616] [PG ID 1 PG GUID 1 Rank 2] Watchdog "
                           "caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLGATHER, NumelIn=4, "
                           "NumelOut=16, Timeout(ms)=600000) ran for 600050 milliseconds before timing out.");
    CHECK(sub.rank == 6);
    CHECK(sub.pg_rank == 2);
    CHECK(sub.pg == "1");
    CHECK_FALSE(sub.pg_default);
    const auto sub_only = parse("[PG 1 Rank 2] Some NCCL operations have failed or timed out.");
    CHECK(sub_only.rank == -1);  // never taken as global rank 2
    CHECK(sub_only.pg_rank == 2);
    const auto def = parse("[PG ID 0 PG GUID 0(default_pg) Rank 5] Heartbeat monitor timed out! Process will be "
                           "terminated after dumping debug info. workMetaList_.size()=1");
    CHECK(def.rank == 5);
    CHECK(def.pg_default);
    CHECK(def.kind == LogKind::kHeartbeatMonitor);
    const auto def_old = parse("[PG 0 Rank 4] ProcessGroupNCCL initialization options: size: 8, global rank: 4");
    CHECK(def_old.rank == 4);
  }
  SECTION("launcher labels: srun -l, Open MPI, host:rank, torchrun tee") {
    CHECK(parse("12: step 5 loss 0.3").rank == 12);
    CHECK(parse("  3: step 5 loss 0.3").rank == 3);
    const auto mpi = parse("[1,3]<stderr>:RuntimeError: Connection closed by peer");
    CHECK(mpi.rank == 3);
    CHECK(mpi.rank_src == RankSource::kLauncher);
    const auto hvd = parse("[2]<stderr>:terminate called after throwing an instance of 'gloo::IoException'");
    CHECK(hvd.rank == 2);  // horovodrun's "[rank]<stderr>:" tag
    CHECK(hvd.rank_src == RankSource::kLauncher);
    CHECK(hvd.kind == LogKind::kTerminate);
    CHECK(parse("[12] NCCL INFO Ring 00").rank == -1);  // NCCL's device tag is no rank
  }
  SECTION("Open MPI's --tag-output: [jobid,vpid]<stream>: names the rank, whatever the job id and stream") {
    // orte/mca/iof/base/iof_base_output.c: "[%s,%s]<%s>:" (local job id, vpid, stdout|stderr|stddiag).
    const auto out = parse("[1,2]<stdout>:smc-gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected : "
                           "rank 2 and rank 0 both on CUDA device 1000");
    CHECK(out.rank == 2);  // the tag's vpid, not a rank the message names
    CHECK(out.rank_src == RankSource::kLauncher);
    CHECK(out.msg.find("smc-gpu-03:29880") == 0);
    const auto diag = parse("[3,5]<stddiag>:[node7:01234] *** Process received signal ***");
    CHECK(diag.rank == 5);  // the job id (3) is not the rank
    CHECK(diag.rank_src == RankSource::kLauncher);
    const auto err = parse("[40112,0]<stderr>:RuntimeError: NCCL error");
    CHECK(err.rank == 0);
    CHECK(err.msg.find("RuntimeError") == 0);
    // A log collector's clock to the minute after a blank, before the program's own prefixes.
    const auto collected = parse(" 2025-02-18 12:54 [rank13]:[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616] [Rank 1] "
                                 "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=216, OpType=ALLTOALL_BASE, "
                                 "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600045 milliseconds before timing out.");
    CHECK(collected.rank == 13);
    CHECK(collected.has_t);
    CHECK(collected.kind == LogKind::kWatchdogTimeout);
    CHECK(parse("  File \"/x/train.py\", line 3, in <module>").rank == -1);
    // --timestamp-output puts ctime()'s time (its newline cut) right before the tag (iof_base_output.c:114-121).
    const auto stamped = parse("Wed Jan 16 12:50:13 2019[1,17]<stderr>:*** SIGSEGV (@0x8) received by PID 51898 (TID "
                               "0x7faae0dfa700) from PID 8; stack trace: ***");
    CHECK(stamped.rank == 17);
    CHECK(stamped.has_t);
    CHECK(stamped.msg.find("*** SIGSEGV") == 0);
    CHECK(stamped.kind == LogKind::kCrash);
    // NCCL's abort notice states the communicator's size, nothing more.
    const auto abort = parse("pt-worker-0:4288:4421 [1] NCCL INFO comm 0x5649149de2c0 rank 5 nranks 8 cudaDev 1 busId "
                             "a7000 - Abort COMPLETE");
    CHECK(abort.kind == LogKind::kWorldSize);
    CHECK(abort.world == 8);
    // So does its collective trace (NCCL_DEBUG_SUBSYS=COLL, enqueue.cc): the world is at least that.
    const auto coll = parse("node-l4-8:19799:38219 [3] NCCL INFO AllReduce: opCount 13a0 sendbuff 0x78fbaf7ce200 "
                            "recvbuff 0x78fbaf7ce200 count 554400 datatype 7 op 0 root 0 comm 0x78fbbf9d1bb0 "
                            "[nranks=128] stream 0x78fc4917d570");
    CHECK(coll.kind == LogKind::kWorldSize);
    CHECK(coll.world == 128);
    // A glog clock before "NCCL" is no "host:pid" prefix.
    const auto glog = parse("[rank5]:[E207 19:37:09.983540349 ProcessGroupNCCL.cpp:681] [Rank 5] Some NCCL operations "
                            "have failed or timed out.");
    CHECK(glog.rank == 5);
    CHECK(glog.pid == -1);
    CHECK(glog.host.empty());
    const auto host = parse("[gpu-node-7:5] step 10 loss 1.0");
    CHECK(host.rank == 5);
    CHECK(host.host == "gpu-node-7");
    const auto tee = parse("[default2]:step 10 loss 1.0");
    CHECK(tee.rank == 2);
    CHECK(tee.local_rank == 2);
    CHECK(tee.rank_src == RankSource::kLocal);
    CHECK(parse("[default2]:[rank10]:step 10 loss 1.0").rank == 10);
    CHECK(parse("[rank 7] step 3/12 loss 0.5 dur_ms 105").rank == 7);  // hanglab workloads
  }
  SECTION("world size statements") {
    CHECK(parse("world_size=8 rank=3").world == 8);
    CHECK(parse("INFO:train:launch RANK=0 WORLD_SIZE=16").world == 16);
    CHECK(parse("[rank 0] torch_ddp starting: world_size 4, backend gloo").world == 4);
    CHECK(parse("  local_world_size=8 role=default").world == -1);  // one node's processes, not the job
  }
  SECTION("file names") {
    CHECK(rank_from_path("rank-3.log", false) == 3);
    CHECK(rank_from_path("logs/rank_12.txt", false) == 12);
    CHECK(rank_from_path("rank3/stdout", false) == 3);
    CHECK(rank_from_path("ranks/5/stderr.log", false) == 5);
    CHECK(rank_from_path("train-worker-3.log", false) == 3);
    CHECK(rank_from_path("worker-3", false) == 3);
    CHECK(rank_from_path("pytorchjob-worker-1.log", true) == 2);  // Kubeflow: master-0 is rank 0
    CHECK(rank_from_path("pytorchjob-master-0.log", true) == 0);
    CHECK(rank_from_path("slurm-88231.out", false) == -1);  // a job id, not a rank
    CHECK(rank_from_path("dmesg-node-0.txt", false) == -1);
    CHECK(rank_from_path("coworker-2.log", false) == -1);
  }
}

TEST_CASE("clocks", "[triage_logs]") {
  SECTION("kubectl --timestamps (RFC 3339, nanoseconds) and offsets") {
    const auto l = parse("2026-11-29T08:26:59.123456789Z [rank0]:step 1 loss 1.0");
    REQUIRE(l.has_t);
    CHECK(l.t == Approx(utc(2026, 11, 29, 8, 26, 59.123456789)));
    CHECK(l.t_res < 1e-6);
    const auto off = parse("2026-11-29T10:26:59+02:00 step 1");
    REQUIRE(off.has_t);
    CHECK(off.t == Approx(utc(2026, 11, 29, 8, 26, 59)));
    CHECK(off.t_res == 1.0);
  }
  SECTION("glog without a year takes the corpus year") {
    const auto l = parse("I1129 08:26:59.123456 12345 train.cpp:212] step 400 loss 0.3", 2026);
    REQUIRE(l.has_t);
    CHECK(l.no_year);
    CHECK(l.t == Approx(utc(2026, 11, 29, 8, 26, 59.123456)));
    CHECK(l.kind == LogKind::kStep);
    CHECK(l.step == 400);
    const auto bracket = parse("[rank1]:[W1129 08:27:00.000000001 socket.cpp:464] [c10d] something", 2026);
    CHECK(bracket.has_t);
  }
  SECTION("Python logging") {
    const auto l = parse("2026-11-29 08:26:59,123 - trainer - INFO - step 120 loss 0.4412");
    REQUIRE(l.has_t);
    CHECK(l.t == Approx(utc(2026, 11, 29, 8, 26, 59.123)));
    CHECK(l.t_res == Approx(0.001));
    CHECK(l.kind == LogKind::kStep);
    CHECK(l.step == 120);
    CHECK(parse("2026-11-29 08:26:59,123 INFO step 7 loss 1").step == 7);
    CHECK(parse("[2025-12-18 20:27:22,783] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 748089").has_t);
  }
  SECTION("epoch, dmesg -T, syslog; dmesg uptime is no clock") {
    const auto e = parse("1795940800.250 step 3 loss 1");
    REQUIRE(e.has_t);
    CHECK(e.t == Approx(1795940800.25));
    const auto d = parse("[Sun Nov 29 08:26:40 2026] Out of memory: Killed process 4242 (python) total-vm:1kB");
    REQUIRE(d.has_t);
    CHECK(d.t == Approx(utc(2026, 11, 29, 8, 26, 40)));
    CHECK(d.kind == LogKind::kOomKill);
    CHECK(d.pid == 4242);
    const auto sys = parse("Nov 29 08:26:40 node-3 kernel: Memory cgroup out of memory: Killed process 77 (python)");
    REQUIRE(sys.has_t);
    CHECK(sys.host == "node-3");
    CHECK(sys.kind == LogKind::kOomKill);
    const auto up = parse("[ 1234.567890] Out of memory: Killed process 12 (python)");
    CHECK_FALSE(up.has_t);
    CHECK(up.kind == LogKind::kOomKill);
  }
}

TEST_CASE("PyTorch ProcessGroupNCCL lines", "[triage_logs]") {
  SECTION("watchdog with NumelIn/NumelOut") {
    const auto l = parse("[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
                         "WorkNCCL(SeqNum=1423, OpType=ALLREDUCE, NumelIn=25557032, NumelOut=25557032, "
                         "Timeout(ms)=600000) ran for 600023 milliseconds before timing out.");
    CHECK(l.kind == LogKind::kWatchdogTimeout);
    CHECK(l.seq == 1423);
    CHECK(l.op == "ALLREDUCE");
    CHECK(l.numel_in == 25557032);
    CHECK(l.numel_out == 25557032);
    CHECK(l.timeout_ms == 600000);
    CHECK(l.ran_ms == 600023);
  }
  SECTION("older watchdog without Numel") {
    const auto l = parse("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
                         "OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800350 milliseconds before timing out.");
    CHECK(l.kind == LogKind::kWatchdogTimeout);
    CHECK(l.rank == 1);
    CHECK(l.seq == 7);
    CHECK(l.op == "BROADCAST");
    CHECK(l.numel_in == -1);
  }
  SECTION("a truncated watchdog line keeps only complete fields") {
    const auto l = parse("[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1423, OpType=ALLRED");
    CHECK(l.kind == LogKind::kWatchdogTimeout);
    CHECK(l.seq == 1423);
    CHECK(l.op.empty());
  }
  SECTION("the watchdog's repeats are not new timeouts") {
    CHECK(parse("[rank0]:[E1218 20:27:21.486305774 ProcessGroupNCCL.cpp:1895] [PG ID 1 PG GUID 1 Rank 0] Process group "
                "watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 "
                "milliseconds before timing out.")
              .kind == LogKind::kWatchdogRepeat);
  }
  SECTION("last enqueued / completed, dump signal, desync report") {
    const auto w = parse("[rank1]:[E1218 20:27:21.484903450 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 1]  "
                         "failure detected by watchdog at work sequence id: 1 PG status: last enqueued work: 547, last "
                         "completed work: 12");
    CHECK(w.kind == LogKind::kWorkStatus);
    CHECK(w.seq == 1);
    CHECK(w.last_enqueued == 547);
    CHECK(w.last_completed == 12);
    const auto old = parse("[Rank 0] Timeout at NCCL work: 5, last enqueued NCCL work: 1424, last completed NCCL work: "
                           "1423.");
    CHECK(old.kind == LogKind::kWorkStatus);
    CHECK(old.last_enqueued == 1424);
    CHECK(old.last_completed == 1423);
    const auto d = parse("[rank5]:[E703 17:54:18.884528282 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) "
                         "Rank 5] Received a dump signal due to a collective timeout from  rank 7 and we will try our "
                         "best to dump the debug info. Last enqueued NCCL work: 56116, last completed NCCL work: 56116.");
    CHECK(d.kind == LogKind::kDumpSignal);
    CHECK(d.other_rank == 7);
    CHECK(d.last_enqueued == 56116);
    CHECK(parse("[Rank 0] Received a dump signal from this local rank and will start to dump the debug info.").kind ==
          LogKind::kDumpSignal);
    const auto miss = parse("\t - To our best knowledge, ranks [5, 9] are the lagging ranks that caused this "
                            "timeout. They never joined any collectives");
    CHECK(miss.kind == LogKind::kDesyncMissing);
    CHECK(miss.ranks == std::vector<int>{5, 9});
    const auto lag = parse("\t   - [47] joined but didn't finish collective #41207 (count from 1)");
    CHECK(lag.kind == LogKind::kDesyncLagging);
    CHECK(lag.ranks == std::vector<int>{47});
    CHECK(lag.seq == 41207);
  }
  SECTION("aborts and backend errors") {
    CHECK(parse("[Rank 3] NCCL communicator was aborted on rank 3.").kind == LogKind::kCommAborted);
    CHECK(parse("[Rank 3] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
                "kernels, subsequent GPU operations might run on corrupted/incomplete data.")
              .kind == LogKind::kNcclAsyncFailed);
    CHECK(parse("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
                "remote process exited or there was a network error, NCCL version 2.20.5")
              .kind == LogKind::kNcclRemoteError);
    CHECK(parse("torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId "
                "from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout")
              .kind == LogKind::kStoreTimeout);
    CHECK(parse("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.14.3")
              .kind == LogKind::kCommException);
    CHECK(parse("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. "
                "unhandled system error")
              .kind == LogKind::kNcclSystemError);
  }
  SECTION("DETAIL mode: the collective a rank enters (fingerprint INFO line), not a mismatch") {
    const std::string tail =
        ", TensorDtypes=Long, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided "
        "(default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))";
    auto l = parse("[I ProcessGroupWrapper.cpp:562] [Rank 1] Running collective: CollectiveFingerPrint(SequenceNumber=3, "
                   "OpType=BROADCAST, TensorShape=[1]" + tail);
    CHECK(l.kind == LogKind::kCollStart);
    CHECK(l.rank == 1);
    CHECK(l.seq == 3);
    CHECK(l.op == "BROADCAST");
    CHECK(l.numel_in == 1);
    l = parse("[Rank 0] Running collective: CollectiveFingerPrint(SequenceNumber=7, OpType=ALLREDUCE, TensorShape=[20, 10]" +
              tail);
    CHECK(l.seq == 7);
    CHECK(l.numel_in == 200);
    // Several tensors, or a shape cut by the end of the line: the count is unknown, the rest stays.
    l = parse("[Rank 0] Running collective: CollectiveFingerPrint(SequenceNumber=8, OpType=ALLGATHER, TensorShape=[[4], "
              "[4]]" + tail);
    CHECK(l.kind == LogKind::kCollStart);
    CHECK(l.numel_in == -1);
    CHECK(parse("[Rank 0] Running collective: CollectiveFingerPrint(SequenceNumber=9, OpType=ALLREDUCE, TensorShape=[20, 1")
              .numel_in == -1);
    // The backend's mismatch report quotes fingerprints too: still the mismatch.
    CHECK(parse("RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
                "CollectiveFingerPrint(SequenceNumber=21, OpType=BROADCAST, TensorShape=[1]" + tail)
              .kind == LogKind::kCollMismatch);
  }
}

TEST_CASE("Gloo, TCPStore, NCCL WARN lines", "[triage_logs]") {
  const auto t = parse("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
                       "1800000ms for recv operation to complete");
  CHECK(t.kind == LogKind::kGlooTimeout);
  CHECK(t.timeout_ms == 1800000);
  CHECK(parse("[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:9125").kind ==
        LogKind::kCommClosed);
  CHECK(parse("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:45711: "
              "Connection reset by peer")
            .kind == LogKind::kCommClosed);
  CHECK(parse("[E socket.cpp:957] [c10d] The client socket has timed out after 1800s while trying to connect to "
              "(10.0.0.1, 29500).")
            .kind == LogKind::kStoreTimeout);
  const auto joined = parse("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 3/4 "
                            "clients joined.");
  CHECK(joined.kind == LogKind::kStoreTimeout);
  CHECK(joined.joined == 3);
  CHECK(joined.world == 4);
  CHECK(parse("RuntimeError: The server socket has failed to listen on any local network address. The server socket "
              "has failed to bind to [::]:29500 (errno: 98 - Address already in use).")
            .kind == LogKind::kAddressInUse);
  const auto boot = parse("node-1:1234:1234 [0] NCCL WARN Bootstrap : no socket interface found");
  CHECK(boot.kind == LogKind::kWrongIfname);
  CHECK(boot.host == "node-1");
  CHECK(boot.pid == 1234);
  CHECK(boot.nccl_dev == 0);  // "host:pid:tid [dev]": the CUDA device, kept apart from any rank
  CHECK(boot.rank == -1);
  const auto dev6 = parse("batch-block7-00788:791989:835177 [6] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'");
  CHECK(dev6.nccl_dev == 6);
  CHECK(dev6.rank == -1);
  CHECK(parse("[E ProcessGroupNCCL.cpp:563] [Rank 1] NCCL watchdog thread terminated").nccl_dev == -1);
  CHECK(parse("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
              "Unable to find address for: eth9")
            .kind == LogKind::kWrongIfname);
  const auto shm = parse("gpu-3:2381:2460 [2] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-8DkzRf "
                         "(size 9637888)");
  CHECK(shm.kind == LogKind::kShmError);
  CHECK(parse("node-2:99:120 [1] NCCL WARN unable to allocate shared memory").kind == LogKind::kShmError);
  CHECK(parse("node-b:7004:7104 [0] NCCL WARN NET/IB : Got completion from peer 10.10.1.11<38102> with error 12, opcode "
              "0, len 0, vendor err 129 (Recv)")
            .kind == LogKind::kIbError);
  CHECK(parse("node-b:7004:7104 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error").kind ==
        LogKind::kIbError);
  const auto init = parse("3: node-a:52103:52103 [3] NCCL INFO comm 0x55d1c3a0 rank 3 nranks 8 cudaDev 3 busId 1b000 "
                          "commId 0x6a3b - Init COMPLETE");
  CHECK(init.kind == LogKind::kInitDone);
  CHECK(init.world == 8);
  CHECK(init.rank == 3);
}

TEST_CASE("launchers, tracebacks, kernel and exit statuses", "[triage_logs]") {
  SECTION("torchrun / torchelastic") {
    const auto s = parse("W1129 08:27:00.813000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                         "process 4240 closing signal SIGTERM");
    CHECK(s.kind == LogKind::kLauncherSignal);
    CHECK(s.pid == 4240);
    CHECK(s.signal == 15);
    CHECK(parse("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 12 closing signal SIGTERM")
              .kind == LogKind::kLauncherSignal);
    const auto f = parse("E1129 08:27:01.214000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                         "(exitcode: -9) local_rank: 2 (pid: 4242) of binary: /usr/bin/python3");
    CHECK(f.kind == LogKind::kLauncherExit);
    CHECK(f.signal == 9);
    CHECK(f.pid == 4242);
    CHECK(f.local_rank == 2);
    CHECK(parse("  exitcode  : -9 (pid: 208585)").kind == LogKind::kSummaryField);
    CHECK(parse("Root Cause (first observed failure):").kind == LogKind::kSummaryHeader);
    const auto sig = parse("Signal 9 (SIGKILL) received by PID 208585");
    CHECK(sig.kind == LogKind::kSignalReceived);
    CHECK(sig.pid == 208585);
  }
  SECTION("Open MPI and Slurm") {
    const auto m = parse("mpirun noticed that process rank 2 with PID 1234 on node x exited on signal 9 (Killed).");
    CHECK(m.kind == LogKind::kMpiExit);
    CHECK(m.other_rank == 2);
    CHECK(m.pid == 1234);
    CHECK(m.signal == 9);
    CHECK(m.host == "x");
    const auto s = parse("srun: error: node-3: task 5: Killed");
    CHECK(s.kind == LogKind::kSrunTask);
    CHECK(s.other_rank == 5);
    CHECK(s.signal == 9);
    CHECK(parse("srun: error: node-3: task 5: Exited with exit code 1").code == 1);
    // srun names several tasks on one line when they ended alike (found running
    // scenarios/srun_kill_rank.toml: --kill-on-bad-exit's SIGTERM to the survivors).
    const auto many = parse("srun: error: vm: tasks 0,2-3: Terminated");
    CHECK(many.kind == LogKind::kSrunTask);
    CHECK(many.other_rank == 0);
    CHECK(many.ranks == std::vector<int>{0, 2, 3});
    CHECK(many.signal == 15);
    CHECK(many.host == "vm");
    CHECK(parse("srun: error: vm: tasks 0-1: Exited with exit code 11").ranks == std::vector<int>{0, 1});
    CHECK(parse("slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. Some of the step tasks have been OOM "
                "Killed.")
              .kind == LogKind::kOomKill);
  }
  SECTION("Python tracebacks") {
    CHECK(parse("Traceback (most recent call last):").kind == LogKind::kTraceback);
    const auto oom = parse("[rank6]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.");
    CHECK(oom.kind == LogKind::kCudaOom);
    CHECK(oom.rank == 6);
    CHECK(parse("RuntimeError: CUDA error: an illegal memory access was encountered").kind == LogKind::kCudaError);
    const auto re = parse("RuntimeError: shape '[4, 128]' is invalid for input of size 1000");
    CHECK(re.kind == LogKind::kException);
    CHECK(re.word == "RuntimeError");
    CHECK(parse("torch.distributed.elastic.multiprocessing.api.SignalException: Process 41232 got signal: 15").signal ==
          15);
  }
  SECTION("DataLoader, kernel OOM, crashes, storage") {
    const auto dl = parse("RuntimeError: DataLoader worker (pid 123) is killed by signal: Bus error. It is possible that "
                          "dataloader's workers are out of shared memory.");
    CHECK(dl.kind == LogKind::kDataLoaderKilled);
    CHECK(dl.signal == 7);
    // Paddle's parent (data_loader.cc, _throw_error_if_process_failed), wrapped by its SystemError, and
    // a bare one: the same death as torch's.
    const auto pd = parse("SystemError: (Fatal) DataLoader process (pid 1104) exited is killed by signal: Killed. (at "
                          "/paddle/paddle/fluid/imperative/data_loader.cc:181)");
    CHECK(pd.kind == LogKind::kDataLoaderKilled);
    CHECK(pd.signal == 9);
    CHECK(pd.pid == 1104);
    CHECK(parse("DataLoader process (pid 77) exited is killed by signal: Segmentation fault.").signal == 11);
    CHECK(parse("DataLoader process (pid 77) exited is killed by signal: Bus error.").kind == LogKind::kDataLoaderKilled);
    CHECK(parse("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
                "(shm).")
              .kind == LogKind::kShmBusError);
    const auto k = parse("Out of memory: Killed process 1234 (python) total-vm:100kB, anon-rss:90kB");
    CHECK(k.kind == LogKind::kOomKill);
    CHECK(k.pid == 1234);
    CHECK(k.word == "python");
    CHECK(parse("Memory cgroup out of memory: Killed process 1234 (python)").kind == LogKind::kOomKill);
    CHECK(parse("      Reason:       OOMKilled").kind == LogKind::kOomKill);
    CHECK(parse("Segmentation fault (core dumped)").signal == 11);
    CHECK(parse("*** SIGSEGV (@0x0) received by PID 41211 (TID 0x7f) from PID 0; stack trace: ***").kind ==
          LogKind::kCrash);
    // glog dumps on SIGTERM too (a failure signal of its handler), but SIGTERM is someone's request to stop.
    const auto term = parse("*** SIGTERM (@0x0) received by PID 6561 (TID 0x7fa503a2d640) from PID 0; stack trace: ***");
    CHECK(term.kind == LogKind::kSignalReceived);
    CHECK(term.signal == 15);
    CHECK(term.pid == 6561);
    CHECK(parse("OSError: [Errno 28] No space left on device").kind == LogKind::kDiskFull);
    // ENOSPC on a shared-memory segment is a full /dev/shm (a Python rank's DataLoader, scenarios/tooling/tiny_shm).
    CHECK(parse("[rank1]: RuntimeError: unable to allocate shared memory(shm) for file </torch_29417_3077712898_0>: No "
                "space left on device (28)")
              .kind == LogKind::kShmBusError);
    CHECK(parse("unable to allocate shared memory(shm) for file </torch_1_2_0>: No space left on device (28)").kind ==
          LogKind::kShmBusError);
    CHECK(parse("nfs: server fs01 not responding, still trying").kind == LogKind::kStorageError);
  }
  SECTION("exit codes 137/139") {
    const auto a = parse("command terminated with exit code 137");
    CHECK(a.kind == LogKind::kExitStatus);
    CHECK(a.code == 137);
    CHECK(parse("      Exit Code:    139").code == 139);
    CHECK(parse("exitcode  : -11 (pid: 6175)").kind == LogKind::kSummaryField);
  }
  SECTION("hanglab workloads") {
    const auto e = parse("[rank 0] ERROR (comm) in backward at step 6: [./gloo/transport/tcp/pair.cc:598] Connection "
                         "closed by peer [127.0.0.1]:9125 (in allreduce seq 12, numel 4225)");
    CHECK(e.kind == LogKind::kCommClosed);
    CHECK(e.step == 6);
    CHECK(e.seq == 12);
    CHECK(e.op == "allreduce");
    CHECK(e.numel_in == 4225);
    CHECK(e.code == 10);
    CHECK(parse("[rank 1] done: 12/12 steps in 2.3 s, last loss 1.2666, parameter checksum 406.675628").kind ==
          LogKind::kDone);
    CHECK(parse("[rank 1] hanglab hook skip_collective at step 5: skipping allreduce").kind == LogKind::kNone);
    const auto s = parse("[rank 0] step 3/12 loss 0.4816 dur_ms 119");
    CHECK(s.kind == LogKind::kStep);
    CHECK(s.step == 3);
    CHECK(s.total_steps == 12);
    CHECK(s.dur_ms == 119);
  }
}

TEST_CASE("step counters of trainers: 'iter: i/N | loss', '[i/N] Forward ...' -- a build's '[i/N]' is no step",
          "[triage_logs]") {
  // ArcticTraining's per-iteration report (arctic_training/trainer/trainer.py: "iter: {i}/{n} ... | loss: ...").
  const auto a = parse("iter:  130/3000   4% | loss: 16.5469 | iter time: 1.038s | iter tflops: 909.8 | lr: 8.667E-04");
  CHECK(a.kind == LogKind::kStep);
  CHECK(a.step == 130);
  CHECK(a.total_steps == 3000);
  CHECK(parse("iter: 7 loss 2.5").kind == LogKind::kStep);
  // ColossalAI's GPT demo (examples/language/gpt/gemini/train_gpt_demo.py: logger.info(f"[{n + 1}/{NUM_STEPS}]
  // Forward ...") through its rich logging handler): a step counter before the pass it is in.
  const auto c = parse("                    INFO     colossalai - colossalai - INFO: [3/1000] Forward GPU memory usage: "
                       "8367.72 MB, CPU memory usage: 44096.98 MB");
  CHECK(c.kind == LogKind::kStep);
  CHECK(c.step == 3);
  CHECK(c.total_steps == 1000);
  CHECK(parse("[12/200] Backward GPU memory usage: 1605.80 MB").kind == LogKind::kStep);
  CHECK(parse("[4/50] loss=0.25").kind == LogKind::kStep);
  // A bracketed counter is also ninja's build progress (DeepSpeed's and apex's JIT op builds, in init) and
  // many tools' stage counters: without a training word after it, it is no step.
  CHECK(parse("[1/3] c++ -MMD -MF cpu_adam.o.d -DTORCH_EXTENSION_NAME=cpu_adam -c cpu_adam.cpp").kind != LogKind::kStep);
  CHECK(parse("[2/5] Building CXX object CMakeFiles/foo.dir/foo.cpp.o").kind != LogKind::kStep);
  CHECK(parse("iterator exhausted after 3 batches").kind != LogKind::kStep);
}

TEST_CASE("mmengine's iteration headers: train is training, val and test an evaluation", "[triage_logs]") {
  // mmengine/runner/log_processor.py get_log_after_iter / get_log_after_epoch.
  const auto e = parse("2023/10/26 11:20:02 - mmengine - INFO - Epoch(train)  [2][3400/7330]  lr: 1.0000e-04  eta: 1 "
                       "day, 2:03:04  time: 0.5120  data_time: 0.0040  memory: 20000  loss: 0.3125");
  CHECK(e.kind == LogKind::kProgress);  // iter counts the batches of epoch 2: no run-wide step
  const auto i = parse("05/01 10:00:00 - mmengine - INFO - Iter(train) [  500/80000]  lr: 1.0000e-02  eta: 3:00:00");
  CHECK(i.kind == LogKind::kStep);
  CHECK(i.step == 500);
  CHECK(i.total_steps == 80000);
  CHECK(parse("05/01 10:00:00 - mmengine - INFO - Epoch(val)  [1][ 50/500]    eta: 0:01:00  time: 0.1").kind ==
        LogKind::kEvalBegin);
  CHECK(parse("05/01 10:00:00 - mmengine - INFO - Epoch(test) [100/500]    eta: 0:01:00").kind == LogKind::kEvalBegin);
  CHECK(parse("05/01 10:00:00 - mmengine - INFO - Iter(val) [2000/2000]    mIoU: 40.1  data_time: 0.01").kind ==
        LogKind::kEvalBegin);
  CHECK(parse("Epoch(unknown) is not a header").kind != LogKind::kEvalBegin);
}

TEST_CASE("Lightning's evaluation bars are an evaluation under way, its epoch bar training", "[triage_logs]") {
  CHECK(parse("Validation DataLoader 0:  45%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x8c     | 45/100 "
              "[00:10<00:12,  4.50it/s]").kind == LogKind::kEvalBegin);
  CHECK(parse("\rSanity Checking DataLoader 0:   0%|          | 0/2 [00:00<?, ?it/s]").kind == LogKind::kEvalBegin);
  CHECK(parse("Testing DataLoader 1: 100%|##########| 8/8 [00:01<00:00,  7.1it/s]").kind == LogKind::kEvalBegin);
  CHECK(parse("Validation DataLoader is slow").kind != LogKind::kEvalBegin);
}

TEST_CASE("a save line: the verb, then 'checkpoint' within a few words", "[triage_logs]") {
  CHECK(parse("2026-02-18 10:28:25,496 - root - INFO - Saving latest checkpoint model trained for 3 epochs").kind ==
        LogKind::kCheckpointBegin);
  CHECK(parse("INFO: Saving best model checkpoint to /ckpt").kind == LogKind::kCheckpointBegin);
  // The two words far apart in prose are not a save.
  CHECK(parse("INFO: saving time by skipping the validation pass; the last good checkpoint stays").kind !=
        LogKind::kCheckpointBegin);
}

TEST_CASE("facts the reasoning asks of a line: a closed connection, torchrun's rendezvous", "[triage_logs]") {
  // A comm error whose text says the connection closed: the peer is gone.
  const LogLine closed = parse("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                               "remote connection closed unexpectedly");
  CHECK(closed.kind == LogKind::kCommException);
  CHECK(closed.peer_closed);
  const LogLine other = parse("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, "
                              "NCCL version 2.14.3");
  CHECK(other.kind == LogKind::kCommException);
  CHECK_FALSE(other.peer_closed);
  // The flags are per line: the next line starts without them.
  CHECK_FALSE(parse("step 3 loss 0.5").peer_closed);
  // torchrun's rendezvous names itself; a store error under it does not.
  const LogLine rdzv = parse("torch.distributed.elastic.rendezvous.api.RendezvousClosedError");
  CHECK(rdzv.kind == LogKind::kRendezvousError);
  CHECK(rdzv.torch_rendezvous);
  CHECK_FALSE(other.torch_rendezvous);
}

TEST_CASE("errors named by the C library and the CUDA runtime, whatever program passes them on", "[triage_logs]") {
  // strerror(EMFILE) / strerror(ENFILE), in Python's OSError form and bare.
  CHECK(parse("OSError: [Errno 24] Too many open files").kind == LogKind::kFdExhausted);
  CHECK(parse("RuntimeError: unable to open shared memory object </torch_1_2> in read-write mode: Too many open "
              "files (24)")
            .kind == LogKind::kFdExhausted);
  CHECK(parse("accept: Too many open files in system").kind == LogKind::kFdExhausted);
  // cudaGetErrorString(cudaErrorInvalidDevice), through torch's CUDA check and bare.
  CHECK(parse("RuntimeError: CUDA error: invalid device ordinal").kind == LogKind::kInvalidDevice);
  CHECK(parse(": CUDA error: invalid device ordinal").kind == LogKind::kInvalidDevice);
  // Any other CUDA runtime error stays a CUDA error.
  CHECK(parse("RuntimeError: CUDA error: an illegal memory access was encountered").kind == LogKind::kCudaError);
  // EADDRINUSE: glibc's text, libuv's name and its lower-case message in c10d's socket error.
  CHECK(parse("RuntimeError: The server socket has failed to listen on any local network address. port: 29500, "
              "useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use")
            .kind == LogKind::kAddressInUse);
  CHECK(parse("OSError: [Errno 98] Address already in use").kind == LogKind::kAddressInUse);
}

TEST_CASE("a line the catalogue knows as benign is no failure, whatever words it shares with one", "[triage_logs]") {
  // torchelastic's agent on the node without the rendezvous store, shutting down after its workers
  // finished: the store's host left first (dynamic_rendezvous.py, logger.warning in the close path).
  const auto l = parse(
      "W1204 20:16:28.549000 10719 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1314] The node "
      "'10.231.198.102_10719_0' has failed to shutdown the rendezvous 'job-1' due to an error of type "
      "RendezvousConnectionError.");
  CHECK(l.kind == LogKind::kNone);
  CHECK(l.category.empty());
  // The same error type in a failure's own words is still one.
  CHECK(parse("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store "
              "has failed. See inner exception for details.")
            .kind != LogKind::kNone);
}

TEST_CASE("an exception the catalogue knows from the code that raises it gets that meaning, not 'an exception'",
          "[triage_logs]") {
  // torch/distributed/fsdp/_exec_order_utils.py: FSDP's cross-rank forward-order check.
  const auto fsdp = parse("RuntimeError: Forward order differs across ranks: rank 0 is all-gathering 1 parameters "
                          "while rank 1 is all-gathering 0 parameters");
  CHECK(fsdp.category == "collective_mismatch");
  CHECK(fsdp.cause == "mismatched_collective");
  // An exception the catalogue knows only as a rank's own error stays the generic reading.
  const auto plain = parse("ValueError: too many values to unpack (expected 2)");
  CHECK(plain.kind == LogKind::kException);
  CHECK(plain.category.empty());
}

TEST_CASE("a failed connect to a peer's loopback address is the wrong interface", "[triage_logs]") {
  // Gloo's pair.cc of 2018-2021: "connect " + peer address + ": " + strerror.
  const auto old_gloo = parse("  what():  [/src/third_party/gloo/gloo/transport/tcp/pair.cc:724] connect "
                              "[127.0.1.1]:41433: Connection refused");
  CHECK(old_gloo.kind == LogKind::kWrongIfname);
  CHECK(old_gloo.cause == "wrong_ifname");
  // Gloo's helpers.h TimeoutError around error.cc's SystemError ("syscall: strerror, remote=addr").
  CHECK(parse("RuntimeError: [/src/gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: Connection "
              "refused, remote=[127.0.0.1]:35001")
            .kind == LogKind::kWrongIfname);
  // Gloo's connect debug logger.
  CHECK(parse("[pair.cc:180] failed to connect, willRetry=0, retry=3, retryLimit=3, rank=1, size=4, "
              "local=[127.0.0.1]:5100, remote=[127.0.1.1]:5200, error=SO_ERROR: Connection refused")
            .kind == LogKind::kWrongIfname);
  // NCCL's socket.cc: "Connect to ip<port> failed : strerror".
  CHECK(parse("gpu-2:811:811 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 127.0.0.1<51729> failed "
              ": Connection refused")
            .kind == LogKind::kWrongIfname);
  CHECK(parse("gpu-2:811:811 [0] NCCL WARN Connect to [::1]<51729> failed : Connection refused").kind ==
        LogKind::kWrongIfname);
  // A peer on a routable address: a refused connect says nothing about the interface.
  CHECK(parse("  what():  [/src/gloo/transport/tcp/pair.cc:724] connect [10.0.0.2]:41433: Connection refused").kind !=
        LogKind::kWrongIfname);
  CHECK(parse("gpu-2:811:811 [0] NCCL WARN socketStartConnect: Connect to 10.1.1.7<51729> failed : Connection refused")
            .kind != LogKind::kWrongIfname);
  // A link-local address (an interface with no routable one, which NCCL's findInterfaces may pick).
  CHECK(parse("node-0:11172:11249 [3] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
              "fe80::20d:3aff:fef7:74b3%eth1<51577> failed : Software caused connection abort")
            .kind == LogKind::kWrongIfname);
  CHECK(parse("[pair.cc:152] timed out connecting: SO_ERROR: Connection refused, remote=[169.254.3.7]:35001").kind ==
        LogKind::kWrongIfname);
  CHECK(parse("node-0:1:2 [0] NCCL WARN socketStartConnect: Connect to fec0::1<51577> failed : Connection refused").kind !=
        LogKind::kWrongIfname);  // fec0:: is site-local, not link-local
  CHECK(parse("node-0:1:2 [0] NCCL WARN socketStartConnect: Connect to 169.2540.1.1<51577> failed : Connection "
              "refused")
            .kind != LogKind::kWrongIfname);
  // 127.x only as a prefix of a longer number is no loopback address.
  CHECK(parse("[pair.cc:152] timed out connecting: SO_ERROR: Connection refused, remote=[1270.0.0.1]:35001").kind !=
        LogKind::kWrongIfname);
  // The TCPStore is no peer: MASTER_ADDR=localhost is right for a one-host job; its refusals are the store's.
  CHECK(parse("RuntimeError: The client socket has failed to connect to [localhost]:29500 (errno: 111 - Connection "
              "refused).")
            .kind != LogKind::kWrongIfname);
  CHECK(parse("torch.distributed.DistNetworkError: The client socket has failed to connect to [127.0.0.1]:29500 "
              "(errno: 111 - Connection refused).")
            .kind != LogKind::kWrongIfname);
}

TEST_CASE("a catalogue line printed only after init places its writer in that phase", "[triage_logs]") {
  // torch/nn/parallel/distributed.py, _pre_forward: logger.info once the reducer rebuilt its buckets,
  // which it does in the first forward with grad enabled after a backward.
  for (const char* line :
       {"INFO:torch.nn.parallel.distributed:Reducer buckets have been rebuilt in this iteration.",
        "2025-01-03 11:02:17,551 - torch.nn.parallel.distributed - INFO - Reducer buckets have been rebuilt in this "
        "iteration."}) {
    INFO(line);
    const auto l = parse(line);
    CHECK(l.kind == LogKind::kTrainBegin);
    CHECK(l.category.empty());
  }
  // Other context meanings (a world size, an init step) still wait for the migration pass: a line the
  // catalogue knows only as a fact of start-up is no phase marker here.
  CHECK(parse("INFO:torch.nn.parallel.distributed:Delay the AllReduce of all parameters.").kind == LogKind::kNone);
}

TEST_CASE("JAX's and TensorFlow's start-up lines, Orbax's and MaxText's save lines are phase markers -- MaxText's step "
          "line a step",
          "[triage_logs]") {
  // Printed only while start-up waits: xla_bridge.py:129-146@jax-v0.5.3 (warnings.warn from a timer around
  // the TPU client's creation), collective_all_reduce_strategy.py:857@v2.6.0 (the cluster barrier's wait).
  for (const char* line :
       {"UserWarning: TPU backend initialization is taking more than 60.0 seconds. Did you run your code on all TPU "
        "hosts? See https://jax.readthedocs.io/en/latest/multi_process.html for more information.",
        "INFO:tensorflow:Waiting for the cluster, timeout = inf",
        "2021-11-17 12:30:54,311 [INFO] Waiting for the cluster, timeout = inf"}) {
    INFO(line);
    const auto l = parse(line);
    CHECK(l.kind == LogKind::kInitBegin);
    CHECK(l.category.empty());
  }
  // Start-up facts after which a process goes on silently (a connect that succeeded, a backend set up) or
  // that are printed again later (torchelastic's agent on a restart) are no marker (meaning without `marker`).
  for (const char* line :
       {"INFO:jax._src.distributed:Connecting to JAX distributed service on 10.0.0.1:1234",
        "INFO:tensorflow:Enabled multi-worker collective ops with available devices: "
        "['/job:worker/replica:0/task:1/device:CPU:0']",
        "[2023-07-10 04:09:42,841] [INFO] [comm.py:652:init_distributed] Initializing TorchBackend in DeepSpeed with "
        "backend nccl",
        "INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group"}) {
    INFO(line);
    CHECK(parse(line).kind != LogKind::kInitBegin);
  }
  // MaxText's save_checkpoint (train.py:142@7d23752) and Orbax's wait for a running finalize thread
  // (checkpoint_manager.py:1809@v0.11.5).
  CHECK(parse("Waiting for step 50 to finish before checkpoint...").kind == LogKind::kCheckpointBegin);
  const auto wait = parse("I0320 20:56:05.504896 140582565907968 checkpoint_manager.py:1682] [process=15][thread=Main"
                          "Thread][step=0][wait_until_finished] Waiting for Save Finalize thread (save_finalize) to "
                          "complete.");
  CHECK(wait.kind == LogKind::kCheckpointBegin);
  // wait_until_finished's entry and no-op return print on every call (close() after the last step too).
  CHECK(parse("I0320 20:56:05.504717 140582565907968 checkpoint_manager.py:1664] [process=15][thread=MainThread]"
              "[wait_until_finished] No Save Finalize thread to wait for. Returning.")
            .kind == LogKind::kNone);
  // MetricLogger.log_metrics (metric_logger.py:82@7d23752): step N finished.
  const auto step = parse("completed step: 46, seconds: 64.453, TFLOP/s/device: 424.123, Tokens/s/device: 889.699, "
                          "total_weights: 7304679, loss: 6.548");
  CHECK(step.kind == LogKind::kStep);
  CHECK(step.step == 46);
}

TEST_CASE("NCCL's proxy progress-thread error trace is a collective in flight, not an init step", "[triage_logs]") {
  // ncclProxyProgress's loop over the ops a launched collective posted (proxy.cc:858/871@v2.18.3-1,
  // :878/892@v2.21.5-1, :983/1002@v2.30.7-1; 2.3's per-connector proxy thread, transport.cu:153@v2.3.7-1):
  // the catalogue's CollInFlight, a context fact, never a failure (the WARN before it is the root).
  for (const char* line :
       {"[15]worker-23:83:2520 [0] NCCL INFO proxy.cc:614 -> 2 [Proxy Thread]",
        "pt-gbcg65vy-worker-0:4288:4521 [1] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
        "node-1:4288:4521 [1] NCCL INFO proxy.cc:983 (ncclProxyProgress) -> 6 [Progress Thread]",
        "node-1:15:91 [3] transport.cu:153 NCCL WARN transport.cu:153 -> 2 [Proxy thread error]"}) {
    INFO(line);
    const auto l = parse(line);
    CHECK(l.kind == LogKind::kCollInFlight);
    CHECK(l.role == "context");
    CHECK(l.category.empty());
    CHECK(l.phase.empty());
  }
  // The proxy service thread's lines are connection set-up and teardown, not this fact.
  CHECK(parse("node-1:4287:4512 [0] NCCL INFO [Service thread] Connection closed by localRank 0").kind !=
        LogKind::kCollInFlight);
}

// cudaErrorMemoryAllocation as c10's CUDA check prints it ("CUDA error: " + cudaGetErrorString,
// c10/cuda/CUDAException.cpp:29-31@0e4c6cd) is a CUDA OOM, not a generic CUDA error (gh-nnunet-593).
TEST_CASE("the CUDA runtime's out-of-memory error is a CUDA OOM", "[triage_logs]") {
  CHECK(parse("RuntimeError: CUDA error: out of memory").kind == LogKind::kCudaOom);
  CHECK(parse("[rank1]: RuntimeError: CUDA error: out of memory").kind == LogKind::kCudaOom);
  CHECK(parse("CUDA error: out of memory (cudaErrorMemoryAllocation) at src/alloc.cu:42").kind == LogKind::kCudaOom);
  // Other CUDA errors stay generic.
  CHECK(parse("RuntimeError: CUDA error: an illegal memory access was encountered").kind == LogKind::kCudaError);
}

// torchrun's summary writes its rank field as "rank: N (local_rank: M)" in every version: a
// program's own "rank: 2, memory allocated: 0" print is not a summary field (gh-nnunet-593).
TEST_CASE("a program's own 'rank: N' print is not torchrun's summary field", "[triage_logs]") {
  CHECK(parse("rank: 2, memory allocated: 0").kind != LogKind::kSummaryField);
  CHECK(parse("rank: 3").kind != LogKind::kSummaryField);
  CHECK(parse("  rank      : 1 (local_rank: 1)").kind == LogKind::kSummaryField);
  CHECK(parse("  rank: 0 (local_rank: 0)").kind == LogKind::kSummaryField);  // torch 1.9's unpadded field
  CHECK(parse("  exitcode  : -9 (pid: 208585)").kind == LogKind::kSummaryField);
}

TEST_CASE("every progress shape the supervisor reads is training progress to the plain-log reader too", "[triage_logs]") {
  // One knowledge of what a training loop prints: a run directory's progress table (logs/progress.cpp) and a
  // plain log's reading must not disagree on a line (mmengine's headers were in the first only).
  for (const auto& p : progress_patterns()) {
    if (p.example.empty()) continue;
    INFO(p.name << ": " << p.example);
    const auto l = parse(std::string(p.example));
    CHECK((l.kind == LogKind::kStep || l.kind == LogKind::kProgress || l.kind == LogKind::kTrainBegin));
  }
  // A report of an evaluation is no training progress, whatever counter it carries.
  CHECK(parse("  [eval] global_step = 0").kind != LogKind::kProgress);
  CHECK(parse("{'eval_loss': 0.52, 'eval_runtime': 3.1, 'epoch': 1.0}").kind != LogKind::kProgress);
  CHECK(parse("Validation: step 20/40").kind != LogKind::kProgress);
  // ...but a metric's name that only contains the word is a training batch's (PaddlePaddle v2's evaluators).
  CHECK(parse("[INFO 2019-01-16 12:49:48,651 train.py:110] Pass 11, Batch 140, Cost 1.168355, "
              "{'classification_error_evaluator': 0.267578125}")
            .kind == LogKind::kProgress);
  // HF Trainer's end-of-training metrics (speed_metrics("train", ...), logged once after its loop):
  // the loop's end, not a step of it; as a JSON line (a logging callback) too.
  CHECK(parse("{'train_runtime': 125460.4448, 'train_samples_per_second': 0.623, 'train_loss': 0.358, "
              "'epoch': 1.0}").kind == LogKind::kDone);
  CHECK(parse("{\"train_runtime\": 12.5, \"train_loss\": 0.4, \"epoch\": 3.0}").kind == LogKind::kDone);
}

TEST_CASE("NCCL's bind failing with EADDRINUSE is its transport's address in use, not the store's", "[triage_logs]") {
  const auto l = parse("42692884fcba:140:140 [0] include/socket.h:333 NCCL WARN Call to bind failed : Address already in use");
  CHECK(l.kind == LogKind::kAddressInUse);
  CHECK(l.category == "network");
  CHECK(l.cause == "address_in_use");
  // Another errno of the same SYSCHECK is no address in use.
  CHECK(parse("node:140:140 [0] include/socket.h:333 NCCL WARN Call to bind failed : Cannot assign requested address")
            .cause != "address_in_use");
}
