// Unit tests of the plain-log rules that tie a line no rank is named for to a rank
// (reason/log_death.cpp: anon_root_owner): only where one process and one rank are in the
// paste and NCCL's device index is that rank's; never a guess.
#include <catch2/catch.hpp>

#include "triage/log_test_support.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

namespace {

std::string oom(int dev) {
  return fmt::format("gpu-node-1:4242:4300 [{}] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'\n", dev);
}

std::string traceback(int rank) {
  return fmt::format(
      "[rank{0}]: Traceback (most recent call last):\n"
      "[rank{0}]:   File \"/work/train.py\", line 70, in <module>\n"
      "[rank{0}]:     main()\n"
      "[rank{0}]:   File \"/work/train.py\", line 60, in main\n"
      "[rank{0}]:     trainer.train()\n",
      rank);
}

}  // namespace

TEST_CASE("a process's CUDA OOM is the rank's whose traceback follows, when device and rank agree", "[triage_logs]") {
  TempDir t("owner_oom");
  write_file(t.dir / "train.log", oom(2) + traceback(2));
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "cuda_oom");
  CHECK(r.missing_ranks == std::vector<int>{2});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 2);
  CHECK(r.scope == "subset");
  check_refs(t.dir, r);
}

TEST_CASE("no rank for a process's CUDA OOM unless one process, one rank, its device and its traceback",
          "[triage_logs]") {
  SECTION("the device is another rank's") {
    TempDir t("owner_dev");
    write_file(t.dir / "train.log", oom(3) + traceback(2));
    auto r = triage_logs({t.dir});
    CHECK(r.missing_ranks.empty());
    CHECK((!r.first_failure || r.first_failure->rank != 2));
  }
  SECTION("no traceback after it") {
    TempDir t("owner_notb");
    write_file(t.dir / "train.log", traceback(2) + oom(2));
    auto r = triage_logs({t.dir});
    CHECK(r.missing_ranks.empty());
    CHECK(r.cause == "cuda_oom");
  }
  SECTION("two processes in the paste") {
    TempDir t("owner_twopid");
    write_file(t.dir / "train.log",
               oom(2) +
                   "gpu-node-1:4243:4301 [3] NCCL INFO comm 0x55 rank 3 nranks 8 cudaDev 3 busId 1c000 - Init COMPLETE\n" +
                   traceback(2));
    auto r = triage_logs({t.dir});
    CHECK(r.missing_ranks.empty());
  }
  SECTION("another rank logged too") {
    TempDir t("owner_tworank");
    write_file(t.dir / "train.log", oom(2) + traceback(2) + "[rank5]: step 3 loss 0.1\n");
    auto r = triage_logs({t.dir});
    CHECK(r.missing_ranks.empty());
  }
  SECTION("two hosts named (the same pid and device on another node)") {
    TempDir t("owner_hosts");
    write_file(t.dir / "train.log", oom(2) + traceback(2) +
                                        "gpu-node-2:4242:4300 [2] NCCL WARN Cuda failure 2 'out of memory'\n");
    auto r = triage_logs({t.dir});
    CHECK(r.missing_ranks.empty());
  }
}

TEST_CASE("a line under a pid is the rank's whose pid torchrun's summary names, on one node", "[triage_logs]") {
  // NCCL's WARN under the process's pid ("host:pid:tid [dev]"), then torchrun's summary of the
  // same pid ("local_rank: 1 (pid: 4243)"): on one node local rank 1 is rank 1, and its exit is
  // a CUDA error, not a bare non-zero exit.
  const std::string nccl = "gpu-node-1:4243:4243 [1] include/alloc.h:125 NCCL WARN Cuda failure 500 'named symbol not found'\n";
  const std::string summary =
      "[2024-05-30 23:12:45,728] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
      "local_rank: 1 (pid: 4243) of binary: /opt/conda/bin/python\n";
  SECTION("one node") {
    TempDir t("owner_pid_join");
    write_file(t.dir / "train.log", nccl + summary);
    auto r = triage_logs({t.dir});
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "cuda_error");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 1);
    check_refs(t.dir, r);
  }
  SECTION("two hosts: a pid names no process without its host") {
    TempDir t("owner_pid_hosts");
    write_file(t.dir / "train.log",
               nccl + "gpu-node-2:4243:4243 [1] NCCL INFO comm 0x55 rank 9 nranks 16 cudaDev 1 busId 1c000 - Init COMPLETE\n" +
                   summary);
    auto r = triage_logs({t.dir});
    CHECK(r.cause == "cuda_error");  // NCCL's CUDACHECK: some process's own CUDA error
    CHECK(r.missing_ranks.empty());  // ...whose rank the pid does not give without its host
    CHECK((!r.first_failure || r.first_failure->rank < 0));
  }
}

TEST_CASE("a job of one process: whatever failed, failed for all of it", "[triage_logs]") {
  TempDir t("one_process_scope");
  write_file(t.dir / "train.log",
             "node:48:48 [0] NCCL INFO comm 0x55cd529909c0 rank 0 nranks 1 cudaDev 0 busId 21000 - Init COMPLETE\n"
             "node:48:48 [0] include/alloc.h:125 NCCL WARN Cuda failure 500 'named symbol not found'\n"
             "failed (exitcode: 1) local_rank: 0 (pid: 48) of binary: /opt/conda/bin/python\n");
  auto r = triage_logs({t.dir});
  CHECK(r.world_size == 1);
  CHECK(r.scope == "all");
}

// A launcher's plain exit (status 1, no signal) just after an error no rank is named for: a process
// that raises exits with status 1, and torchrun's agent / srun then report that status
// (logs/anon.cpp explain_plain_exits). The error is why the rank exited; the rank is the exit's.
namespace {

std::string py_traceback(const std::string& last) {
  return "Traceback (most recent call last):\n"
         "  File \"main.py\", line 34, in <module>\n"
         "    main()\n"
         "  File \"main.py\", line 29, in main\n"
         "    run()\n" +
         last + "\n";
}

const std::string kDns = "ValueError: host not found: Temporary failure in name resolution";
const std::string kAgentExit =
    "[ERROR] 2021-09-14 14:02:56,862 api: failed (exitcode: 1) local_rank: 0 (pid: 28436) of binary: /usr/bin/python3\n";

}  // namespace

TEST_CASE("a plain exit with status 1 takes the cause of the error just above it", "[triage_logs]") {
  SECTION("torchrun's agent after the worker's DNS failure") {
    TempDir t("plain_exit_dns");
    write_file(t.dir / "agent.log", py_traceback(kDns) + kAgentExit +
                                        "[INFO] 2021-09-14 14:02:56,862 api: [default] Worker group FAILED. 1/3 "
                                        "attempts left; will restart worker group\n");
    auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rendezvous");
    CHECK(r.cause == "dns_failure");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 0);  // the exit's rank, kept
    check_refs(t.dir, r);
  }
  SECTION("srun's task (srun started the ranks) after a CUDA out-of-memory error") {
    TempDir t("plain_exit_srun_oom");
    write_file(t.dir / "job.err",
               py_traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 2; 79.15 "
                            "GiB total capacity; 75.31 GiB already allocated)") +
                   "srun: error: node-7: task 2: Exited with exit code 1\n");
    auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "cuda_oom");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 2);
  }
  SECTION("the same process by its host and pid, in another file, on one of two nodes") {
    // Rank 9's own NCCL line names its process (gpu-node-2, pid 5000); the agent's notice of pid 5000's
    // exit is rank 9's; the WARN under that host and pid in a file of no rank is that process's.
    TempDir t("plain_exit_pid");
    write_file(t.dir / "a_nccl.log",
               "[2024-05-30 23:12:40,100] gpu-node-2:5000:5000 [1] enqueue.cc:1556 NCCL WARN Cuda failure 700 'an "
               "illegal memory access was encountered'\n");
    write_file(t.dir / "b_job.log",
               "[rank9]:gpu-node-2:5000:5000 [1] NCCL INFO comm 0x55 rank 9 nranks 16 cudaDev 1 busId 1c000 - Init "
               "COMPLETE\n"
               "[rank0]:gpu-node-1:4000:4000 [0] NCCL INFO comm 0x56 rank 0 nranks 16 cudaDev 0 busId 1b000 - Init "
               "COMPLETE\n"
               "[2024-05-30 23:12:45,728] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
               "local_rank: 1 (pid: 5000) of binary: /opt/conda/bin/python\n");
    auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "cuda_error");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 9);
  }
}

TEST_CASE("a plain exit keeps its own reading where the lines above it are not proven its process's",
          "[triage_logs]") {
  SECTION("another host's error (two hosts named, the error's host not the exit's)") {
    TempDir t("plain_exit_hosts");
    write_file(t.dir / "job.err",
               "node-3:777:777 [0] enqueue.cc:1556 NCCL WARN Cuda failure 700 'an illegal memory access was "
               "encountered'\n"
               "srun: error: node-7: task 2: Exited with exit code 1\n");
    auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause == "nonzero_exit");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 2);
  }
  SECTION("another process's error (its pid is not the exit's)") {
    TempDir t("plain_exit_otherpid");
    write_file(t.dir / "train.log",
               "gpu-node-1:4242:4242 [0] enqueue.cc:1556 NCCL WARN Cuda failure 700 'an illegal memory access was "
               "encountered'\n"
               "[2024-05-30 23:12:45,728] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
               "local_rank: 1 (pid: 4243) of binary: /opt/conda/bin/python\n");
    auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK((!r.first_failure || r.first_failure->rank != 1 || r.cause != "cuda_error"));
  }
  SECTION("a status other than an uncaught exception's 1 (a signal, a code of the program's own)") {
    for (const char* code : {"-9", "2"}) {
      TempDir t(std::string("plain_exit_status") + code);
      write_file(t.dir / "agent.log", py_traceback(kDns) +
                                          fmt::format("[ERROR] 2021-09-14 14:02:56,862 api: failed (exitcode: {}) "
                                                      "local_rank: 0 (pid: 28436) of binary: /usr/bin/python3\n",
                                                      code));
      auto r = triage_logs({t.dir});
      INFO(code << "\n" << render_text(r));
      CHECK(r.category == "rank_exit");
    }
  }
  SECTION("two different errors above it: which one the exit's process printed is open") {
    TempDir t("plain_exit_mixed");
    write_file(t.dir / "agent.log",
               py_traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") +
                   py_traceback(kDns) + kAgentExit);
    auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK((!r.first_failure || r.first_failure->rank != 0 || r.cause == "nonzero_exit"));
  }
}

namespace {
std::string wd(int rank, const char* tail = "") {
  return fmt::format("[rank{0}]:[E1224 13:23:05.483840160 ProcessGroupNCCL.cpp:632] [Rank {0}] Watchdog caught "
                     "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                     "Timeout(ms)=600000) ran for 600058 milliseconds before timing out.{1}\n",
                     rank, tail);
}
}  // namespace

// A rank silent about the collective its peers time out in is absent from it only when nothing in the paste
// says it was in a collective too, or that its lines were left out.
TEST_CASE("a silent rank is named absent only when no line says it was waiting or hides its report",
          "[triage_logs]") {
  TriageOptions o;
  o.world_size = 4;
  const auto run = [&](const char* name, const std::string& rank3, const char* tail) {
    TempDir t(name);
    write_file(t.dir / "rank3.log", "[rank3]: step 4 loss 0.5\n" + rank3);
    write_file(t.dir / "train.log", wd(0) + wd(1, tail) + wd(2) + "[rank0]: exiting\n");
    return triage_logs({t.dir}, o);
  };
  const auto plain = run("absent_plain", "", "");
  INFO(render_text(plain));
  CHECK(plain.missing_ranks == std::vector<int>{3});
  // ProcessGroupNCCL's WorkNCCL::handleException prints this for a work of the rank's own that failed.
  const auto own = run("absent_own_fail",
                       "[rank3]:[E1224 13:23:05.266897325 ProcessGroupNCCL.cpp:621] [Rank 3] Some NCCL operations have "
                       "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
                       "might run on corrupted/incomplete data.\n",
                       "");
  INFO(render_text(own));
  CHECK(own.missing_ranks.empty());
  // Ray's driver printed one report for two processes: the other one's rank is not in the paste.
  const auto ray = run("absent_ray_dedup", "", " [repeated 1x across cluster]");
  INFO(render_text(ray));
  CHECK(ray.missing_ranks.empty());
  CHECK(ray.category != "collective_mismatch");
}

TEST_CASE("Ray's dedup suffix is cut before a line is read, its count kept", "[triage_logs]") {
  const auto l = parse(wd(2, " [repeated 3x across cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to "
                             "disable log deduplication.)").substr(0, 10000));
  CHECK(l.kind == LogKind::kWatchdogTimeout);
  CHECK(l.seq == 5);
  CHECK(l.ray_repeats == 3);
  CHECK(parse(wd(2)).ray_repeats == 0);
  CHECK(parse("done [repeated 3 times]").ray_repeats == 0);
}
