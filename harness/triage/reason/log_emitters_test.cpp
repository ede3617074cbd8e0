// Unit tests of messages that programs around the training stack print and triage reads by their emitter's code
// (held-out sets 14 and 15): Horovod's Gloo launcher naming the first process to exit, Python argparse's usage
// error, torch_memory_saver's CUDA driver failures, and a name resolver's failure on the master's host name.
#include <catch2/catch.hpp>

#include "triage/log_test_support.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

namespace {

const char* const kHvdHead =
    "RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job to "
    "be terminated. The first process to do so was:\n";

}  // namespace

TEST_CASE("horovodrun's Gloo report: 'Process name: N' is rank N, the first to exit non-zero", "[triage_logs]") {
  // launch_gloo keys its results by the slot's index in host_alloc_plan (rank order) and raises for the first
  // one by exit time (horovod/runner/gloo_run.py:272-287@v0.28.1).
  auto l = parse("Process name: 2");
  CHECK(l.kind == LogKind::kMpiProcessName);
  CHECK(l.other_rank == 2);
  // The elastic driver names a slot "host[local_rank]": no global rank.
  CHECK(parse("Process name: node-a[1]").other_rank == -1);
  SECTION("in the order the exception prints it") {
    TempDir t("hvd_gloo_report");
    write_file(t.dir / "launcher.log", "Traceback (most recent call last):\n"
                                       "  File \"/usr/bin/horovodrun\", line 8, in <module>\n" +
                                           std::string(kHvdHead) + "Process name: 2\nExit code: 1\n");
    auto r = triage_logs({t.dir});
    CHECK(r.category == "rank_exit");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 2);
  }
  // The report's head, raised as the launcher's RuntimeError, is the named process's exit.
  auto head = parse(std::string("<>        [2021-12-07 10:40:07] 30a87832 || ") + kHvdHead);
  CHECK(head.kind == LogKind::kMpiExit);
  CHECK(head.cause == "nonzero_exit");
  auto named = parse("<>        [2021-12-07 10:40:07] 30a87832 || Process name: 0");
  CHECK(named.kind == LogKind::kMpiProcessName);
  CHECK(named.other_rank == 0);
  SECTION("its lines out of order, the exit code cut (a log viewer sorting lines of one second)") {
    TempDir t("hvd_gloo_report_swapped");
    write_file(t.dir / "trial.log", "<>        [2021-12-07 10:40:07] 30a87832 || Process name: 0\n"
                                    "<>        [2021-12-07 10:40:07] 30a87832 || " +
                                        std::string(kHvdHead));
    auto r = triage_logs({t.dir});
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "nonzero_exit");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 0);
  }
}

TEST_CASE("argparse's usage error is the program's, at start-up, exit status 2", "[triage_logs]") {
  // ArgumentParser.error: "%(prog)s: error: %(message)s", exit(2) (Lib/argparse.py:2619-2630@v3.11.7).
  auto l = parse("train.py: error: the following arguments are required: --data");
  CHECK(l.kind == LogKind::kUsageError);
  CHECK(l.code == 2);
  CHECK(parse("main.py: error: argument --lr: invalid float value: 'x'").kind == LogKind::kUsageError);
  // Another program's "error:" in prose is not argparse's.
  CHECK(parse("train.py: error: the loss is NaN").kind != LogKind::kUsageError);
  TempDir t("argparse_launcher");
  write_file(t.dir / "train.log",
             "usage: train.py [-h] [--data-dir DIR] [--local_rank LOCAL_RANK]\n"
             "train.py: error: unrecognized arguments: --local-rank=2\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "usage_error");
  CHECK(r.phase == "init");
  // The launcher gives every worker the same argument list (torch/distributed/run.py:1076@2.15.0).
  CHECK(r.scope == "all");
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("torch_memory_saver's CUresult 2 is CUDA out of memory", "[triage_logs]") {
  auto old_form = parse("[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
                        "func=cu_mem_create line=103");
  CHECK(old_form.kind == LogKind::kCudaOom);
  CHECK(old_form.category == "resource_limit");
  CHECK(old_form.cause == "cuda_oom");
  auto new_form = parse("[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h "
                        "func=cu_mem_create line=187");
  CHECK(new_form.cause == "cuda_oom");
  // Another CUresult keeps the driver failure's reading (1 CUDA_ERROR_INVALID_VALUE).
  auto other = parse("[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp "
                     "func=cu_mem_create line=103");
  CHECK(other.kind == LogKind::kCudaError);
  CHECK(other.cause == "driver_error");
  TempDir t("tms_oom");
  write_file(t.dir / "train.log",
             "(WorkerDict pid=60511) [torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
             "func=cu_mem_create line=103\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "cuda_oom");
}

TEST_CASE("a resolver's failure on a host name is a DNS failure, whichever C library printed it", "[triage_logs]") {
  // musl's EAI_NONAME text, busybox nslookup's own line, glibc's EAI_NODATA.
  CHECK(parse("nslookup: can't resolve 'job-master-0': Name does not resolve").kind == LogKind::kDnsFailure);
  CHECK(parse("nslookup: can't resolve 'job-master-0'").kind == LogKind::kDnsFailure);
  CHECK(parse("socket.gaierror: [Errno -5] No address associated with hostname").kind == LogKind::kDnsFailure);
  TempDir t("dns_master");
  write_file(t.dir / "launch.log",
             "nslookup: can't resolve 'job-master-0': Name does not resolve\n"
             "waiting for master\n"
             "Traceback (most recent call last):\n"
             "  File \"/opt/conda/bin/torchrun\", line 8, in <module>\n"
             "  File \"/opt/conda/lib/python3.12/site-packages/torch/distributed/launcher/api.py\", line 268, in "
             "launch_agent\n"
             "    result = agent.run()\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "dns_failure");
  CHECK(r.phase == "init");
}
