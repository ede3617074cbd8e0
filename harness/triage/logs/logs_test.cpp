// Unit tests of triage from plain logs: the line parser on every recognised format
// (rank attribution, clocks, PyTorch/NCCL/Gloo/TCPStore/launcher/kernel lines), and the
// corpus of incident fixtures in harness/testdata/logs/<case>/, each checked against the
// expected.json beside it (written by make_log_fixtures.py there).
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "triage/triage.hpp"
#include "triage/logs/parse.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/logs/reader.hpp"
#include "triage/reason/log.hpp"

namespace fs = std::filesystem;
using namespace hanglab;
using nlohmann::json;

namespace {

fs::path logs_dir() { return fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/logs"; }

// The views of a LogLine point into the line: keep every parsed line alive.
LogLine parse(const std::string& s, int year = 2026) {
  static std::deque<std::string> keep;
  keep.push_back(s);
  LogLineContext ctx;
  ctx.year = year;
  LogLine l;
  parse_log_line(keep.back(), ctx, l);
  return l;
}

double utc(int y, int mo, int d, int h, int mi, double s) {
  std::string iso = std::to_string(y) + "-" + (mo < 10 ? "0" : "") + std::to_string(mo) + "-" + (d < 10 ? "0" : "") +
                    std::to_string(d) + "T00:00:00Z";
  double t = 0, res = 0;
  REQUIRE(parse_iso_time(iso, &t, &res));
  return t + h * 3600 + mi * 60 + s;
}

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

struct TempDir {
  fs::path dir;
  explicit TempDir(const std::string& name) {
    dir = fs::temp_directory_path() /
          ("hanglab_triage_log_test_" + name + "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::vector<std::string> cases() {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(logs_dir())) {
    if (e.is_directory() && fs::exists(e.path() / "expected.json")) v.push_back(e.path().filename().string());
  }
  std::sort(v.begin(), v.end());
  return v;
}

TriageOptions options_from(const json& args) {
  TriageOptions o;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--world-size") o.world_size = std::stoi(args[i + 1].get<std::string>());
  }
  return o;
}

// Every evidence reference names a file of the case and a line that exists.
void check_refs(const fs::path& dir, const TriageResult& r) {
  for (const auto& e : r.evidence) {
    INFO(e.ref << "  " << e.text);
    if (e.ref.rfind("(no log of rank", 0) == 0 || e.ref == "--world-size") continue;
    const auto colon = e.ref.rfind(':');
    REQUIRE(colon != std::string::npos);
    const fs::path file = dir / e.ref.substr(0, colon);
    REQUIRE(fs::exists(file));
    const int line = std::stoi(e.ref.substr(colon + 1));
    std::ifstream in(file);
    std::string l;
    int n = 0;
    while (n < line && std::getline(in, l)) ++n;
    CHECK(n == line);
  }
}

}  // namespace

// ---- the corpus -----------------------------------------------------------------------------

TEST_CASE("log corpus: every case reaches its expected answer", "[triage_logs]") {
  const auto names = cases();
  REQUIRE(names.size() >= 18);
  for (const auto& name : names) {
    INFO("case " << name);
    const fs::path dir = logs_dir() / name;
    json exp;
    std::ifstream(dir / "expected.json") >> exp;
    const TriageOptions opts = options_from(exp.value("args", json::array()));
    const TriageResult r = triage_logs({dir}, opts);
    const json j = to_json(r);
    INFO(render_text(r));
    CHECK(r.source == "logs");
    CHECK(j["category"] == exp["category"]);
    CHECK(j["cause"] == exp["cause"]);
    CHECK(j["missing_ranks"] == exp["missing_ranks"]);
    CHECK(j["phase"] == exp["phase"]);
    for (const char* k : {"scope", "world_size", "last_good_step", "divergence_seq"}) {
      if (exp.contains(k)) CHECK(j[k] == exp[k]);
    }
    if (exp.contains("first_failure_rank")) {
      REQUIRE(r.first_failure);
      CHECK(r.first_failure->rank == exp["first_failure_rank"].get<int>());
    }
    if (exp.contains("stuck_op")) {
      REQUIRE(r.stuck_collective);
      CHECK(r.stuck_collective->op == exp["stuck_op"].get<std::string>());
      CHECK(r.stuck_collective->seq == exp["stuck_seq"].get<long long>());
    }
    if (exp.contains("note_contains")) {
      bool found = false;
      for (const auto& n : r.notes) found |= mentions(n, exp["note_contains"].get<std::string>());
      CHECK(found);
    }
    CHECK(r.answers.size() == 4);
    CHECK_FALSE(r.next_steps.empty());
    CHECK(r.per_rank.size() == static_cast<size_t>(r.world_size));
    CHECK_FALSE(r.evidence.empty());
    check_refs(dir, r);
    // A verdict other than unknown is backed by a first failure with a file:line.
    if (r.category != "unknown" && r.category != "none") {
      REQUIRE(r.first_failure);
      CHECK_FALSE(r.first_failure->evidence.empty());
    }
    if (exp.contains("without_args")) {
      const TriageResult bare = triage_logs({dir}, {});
      const json& w = exp["without_args"];
      CHECK(to_json(bare)["missing_ranks"] == w["missing_ranks"]);
      CHECK(bare.world_size == w["world_size"].get<int>());
      bool found = false;
      for (const auto& n : bare.notes) found |= mentions(n, w["note_contains"].get<std::string>());
      CHECK(found);
    }
  }
}

TEST_CASE("log corpus: deterministic, and independent of the number of threads", "[triage_logs]") {
  for (const auto& name : cases()) {
    INFO(name);
    const auto inputs = list_log_inputs({logs_dir() / name}, false);
    const auto a = analyze_log_corpus(load_log_corpus(inputs, 1), {});
    const auto b = analyze_log_corpus(load_log_corpus(inputs, 4), {});
    CHECK(to_json(a).dump() == to_json(b).dump());
    CHECK(render_text(a) == render_text(b));
  }
}

TEST_CASE("misleading tool output: torchrun's whole-second Root Cause is overruled and said so", "[triage_logs]") {
  const auto r = triage_logs({logs_dir() / "torchrun_misleading_root"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 2);
  CHECK(mentions(r.first_failure->evidence, "dmesg-train-node.txt:"));
  bool cited = false;
  for (const auto& e : r.evidence) cited |= mentions(e.text, "torchrun's summary names rank 1");
  CHECK(cited);
  // Rank 1's own DistBackendError is listed as an echo of rank 2's death.
  bool echo1 = false;
  for (const auto& e : r.echoes) echo1 |= e.rank == 1 && mentions(e.what, "DistBackendError");
  CHECK(echo1);
}

TEST_CASE("OOM cascade: same-host socket errors, watchdogs and srun aborts are echoes", "[triage_logs]") {
  const auto r = triage_logs({logs_dir() / "oom_cascade"});
  CHECK(r.cause == "cuda_oom");
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 6);
  std::set<int> echo_ranks;
  for (const auto& e : r.echoes) echo_ranks.insert(e.rank);
  CHECK(echo_ranks == std::set<int>{0, 1, 2, 3, 4, 5, 7});
  CHECK(r.per_rank[6].liveness == "dead");
  CHECK(r.per_rank[4].liveness == "hung");
  const auto text = render_text(r);
  CHECK(mentions(text, "Echoes"));
  CHECK(mentions(text, "node-b"));
}

TEST_CASE("missing rank by absence: the report says what is provable and what is not", "[triage_logs]") {
  const auto r = triage_logs({logs_dir() / "nccl_absent_rank"});
  CHECK(r.missing_ranks == std::vector<int>{5});
  CHECK(r.per_rank[5].liveness == "unknown");
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{0, 1, 2, 3, 4, 6, 7});
  CHECK(r.stuck_collective->absent_ranks == std::vector<int>{5});
  bool provable = false, truncated = false;
  for (const auto& n : r.notes) {
    provable |= mentions(n, "provable:") && mentions(n, "Not provable");
    truncated |= mentions(n, "train-worker-2.log") && mentions(n, "mid-line");
  }
  CHECK(provable);
  CHECK(truncated);
  CHECK(r.confidence == "low");
}

TEST_CASE("PG-local ranks are not global ranks", "[triage_logs]") {
  const auto r = triage_logs({logs_dir() / "subgroup_pg_ranks"});
  CHECK(r.missing_ranks == std::vector<int>{6});
  // Global rank 2 reported its own timeout in the default PG: not confused with PG 1's rank 2.
  CHECK(r.per_rank[2].liveness == "hung");
  CHECK(r.per_rank[2].last_coll_op == "ALLREDUCE");
}

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
    // NCCL's abort notice states the communicator's size, nothing more.
    const auto abort = parse("pt-worker-0:4288:4421 [1] NCCL INFO comm 0x5649149de2c0 rank 5 nranks 8 cudaDev 1 busId "
                             "a7000 - Abort COMPLETE");
    CHECK(abort.kind == LogKind::kWorldSize);
    CHECK(abort.world == 8);
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
    CHECK(parse("OSError: [Errno 28] No space left on device").kind == LogKind::kDiskFull);
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

// ---- reading and reporting -------------------------------------------------------------------

TEST_CASE("inputs: single files, several files, directories; unreadable paths throw", "[triage_logs]") {
  const fs::path d = logs_dir() / "gloo_peer_closed";
  const auto one = triage_logs({d / "rank_0.log", d / "rank_1.log", d / "rank_2.log", d / "rank_3.log"});
  CHECK(one.missing_ranks == std::vector<int>{2});
  CHECK(mentions(one.first_failure->evidence, "rank_2.log:"));
  CHECK_THROWS_AS(triage_logs({d / "nope.log"}), std::runtime_error);
  TempDir empty("empty");
  CHECK_THROWS_AS(triage_logs({empty.dir}), std::runtime_error);
  // A run directory given to triage_paths is analysed from its trace; --logs-only reads its logs.
  const fs::path run = fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/triage/killed";
  CHECK(triage_paths({run}).source == "run_dir");
  TriageOptions lo;
  lo.logs_only = true;
  const auto r = triage_paths({run}, lo);
  CHECK(r.source == "logs");
  CHECK(r.category == "rank_exit");
  CHECK(r.missing_ranks == std::vector<int>{2});
}

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

TEST_CASE("print the log reports", "[.dump_logs]") {
  for (const auto& name : cases()) {
    json exp;
    std::ifstream(logs_dir() / name / "expected.json") >> exp;
    std::cout << "==================== " << name << "\n"
              << render_text(triage_logs({logs_dir() / name}, options_from(exp.value("args", json::array())))) << "\n";
  }
}

TEST_CASE("pattern table: every entry's example line parses to that entry", "[triage_logs]") {
  for (const auto& p : line_patterns()) {
    INFO(p.example);
    const auto l = parse(std::string(p.example));
    CHECK(l.kind == p.kind);
    CHECK(l.cause == p.cause);
    CHECK(l.category == p.category);
  }
}

TEST_CASE("pattern table: the fields its lines carry", "[triage_logs]") {
  auto l = parse("RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for key: "
                 "store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)");
  CHECK(l.kind == LogKind::kStoreTimeout);
  CHECK(l.world == 8);
  CHECK(l.joined == 4);
  CHECK(l.rank == -1);  // "on rank: 7" is the writer's own rank, but not a prefix: not used to attribute
  l = parse("[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', "
            "'main.py', '--local_rank=3'] exits with return code = -9");
  CHECK(l.kind == LogKind::kLauncherExit);
  CHECK(l.signal == 9);
  CHECK(l.local_rank == 3);
  l = parse("[node-0:391803] Signal: Aborted (6)");
  CHECK(l.kind == LogKind::kCrash);
  CHECK(l.signal == 6);
  l = parse("[HOST:03599] Signal: Segmentation fault (11)");
  CHECK(l.signal == 11);
  l = parse("[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)");
  CHECK(l.kind == LogKind::kCrash);
  CHECK(l.signal == 7);
  // "retreiving" as PyTorch 1.12 spelled it.
  l = parse("RuntimeError: [2] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value "
            "store by key '0', but store->get('0') got error: Socket Timeout");
  CHECK(l.cause == "unique_id_exchange");
  // An NCCL WARN about an IB completion with an error status, but an INFO line is not one.
  CHECK(parse("mycl-g2:353236:353423 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer "
              "192.168.3.5<53908> with status=12 opcode=129 len=1048576 vendor err 129 (Recv)")
            .kind == LogKind::kIbError);
  CHECK(parse("node:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>").kind != LogKind::kIbError);
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

TEST_CASE("a save line: the verb, then 'checkpoint' within a few words", "[triage_logs]") {
  CHECK(parse("2026-02-18 10:28:25,496 - root - INFO - Saving latest checkpoint model trained for 3 epochs").kind ==
        LogKind::kCheckpointBegin);
  CHECK(parse("INFO: Saving best model checkpoint to /ckpt").kind == LogKind::kCheckpointBegin);
  // The two words far apart in prose are not a save.
  CHECK(parse("INFO: saving time by skipping the validation pass; the last good checkpoint stays").kind !=
        LogKind::kCheckpointBegin);
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
