// The torchrun launcher's pieces that need no torchrun: its command line and the per-rank
// launch files, its failure summary, the error files, and what it did read from a run dir.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "run/launchers/launchers.hpp"
#include "run/rank_env.hpp"

using namespace hanglab;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kTemp = fs::temp_directory_path() / ("hanglab_launchers_test." + std::to_string(::getpid()));
struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(kTemp, ec);
  }
} cleanup;

fs::path fresh(const std::string& name) {
  fs::path d = kTemp / name;
  fs::remove_all(d);
  fs::create_directories(d / "ranks");
  return d;
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// What torch 2.15's torchrun printed on this machine when rank 1 of 3 was SIGKILLed
// (max_restarts 0), as the supervisor logs it: its stamp in front of every line.
const std::string kSummary = R"(2026-12-02T02:24:34.972100Z W1202 02:24:34.972000 26779 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 27081 closing signal SIGTERM
2026-12-02T02:24:34.973100Z W1202 02:24:34.973000 26779 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 27093 closing signal SIGTERM
2026-12-02T02:24:34.985100Z E1202 02:24:34.985000 26779 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 1 (pid: 27087) of binary: ./w.sh
2026-12-02T02:24:35.100000Z Traceback (most recent call last):
2026-12-02T02:24:35.100000Z torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
2026-12-02T02:24:35.100000Z =======================================================
2026-12-02T02:24:35.100000Z ./w.sh FAILED
2026-12-02T02:24:35.100000Z -------------------------------------------------------
2026-12-02T02:24:35.100000Z Failures:
2026-12-02T02:24:35.100000Z [1]:
2026-12-02T02:24:35.100000Z   time      : 2026-12-02_02:24:34
2026-12-02T02:24:35.100000Z   host      : localhost
2026-12-02T02:24:35.100000Z   rank      : 0 (local_rank: 0)
2026-12-02T02:24:35.100000Z   exitcode  : -15 (pid: 27081)  (SIGTERM)
2026-12-02T02:24:35.100000Z   error_file: <N/A>
2026-12-02T02:24:35.100000Z   traceback : Signal 15 (SIGTERM) received by PID 27081
2026-12-02T02:24:35.100000Z [2]:
2026-12-02T02:24:35.100000Z   time      : 2026-12-02_02:24:34
2026-12-02T02:24:35.100000Z   host      : localhost
2026-12-02T02:24:35.100000Z   rank      : 2 (local_rank: 2)
2026-12-02T02:24:35.100000Z   exitcode  : -15 (pid: 27093)  (SIGTERM)
2026-12-02T02:24:35.100000Z   error_file: <N/A>
2026-12-02T02:24:35.100000Z   traceback : Signal 15 (SIGTERM) received by PID 27093
2026-12-02T02:24:35.100000Z -------------------------------------------------------
2026-12-02T02:24:35.100000Z Root Cause (first observed failure):
2026-12-02T02:24:35.100000Z [0]:
2026-12-02T02:24:35.100000Z   time      : 2026-12-02_02:24:34
2026-12-02T02:24:35.100000Z   host      : localhost
2026-12-02T02:24:35.100000Z   rank      : 1 (local_rank: 1)
2026-12-02T02:24:35.100000Z   exitcode  : -9 (pid: 27087)  (SIGKILL)
2026-12-02T02:24:35.100000Z   error_file: <N/A>
2026-12-02T02:24:35.100000Z   traceback : Signal 9 (SIGKILL) received by PID 27087
2026-12-02T02:24:35.100000Z =======================================================
)";

}  // namespace

TEST_CASE("torchrun's failure summary: the root cause and the other failures", "[launchers]") {
  std::optional<TorchrunFailure> root;
  std::vector<TorchrunFailure> failures;
  parse_torchrun_summary(kSummary, root, failures);
  REQUIRE(root);
  CHECK(root->rank == 1);
  CHECK(root->local_rank == 1);
  CHECK(root->exitcode == -9);
  CHECK(root->pid == 27087);
  CHECK(root->time == "2026-12-02_02:24:34");
  CHECK(root->error_file == "<N/A>");
  CHECK(root->traceback == "Signal 9 (SIGKILL) received by PID 27087");
  REQUIRE(failures.size() == 2);
  CHECK(failures[0].rank == 0);
  CHECK(failures[0].exitcode == -15);
  CHECK(failures[1].pid == 27093);

  SECTION("the same text without the supervisor's stamps") {
    std::string plain;
    std::istringstream in(kSummary);
    for (std::string line; std::getline(in, line);) plain += line.substr(28) + "\n";
    std::optional<TorchrunFailure> r2;
    std::vector<TorchrunFailure> f2;
    parse_torchrun_summary(plain, r2, f2);
    REQUIRE(r2);
    CHECK(r2->rank == 1);
    CHECK(f2.size() == 2);
  }
  SECTION("a rank with an error file: its traceback's last line, the exception") {
    const std::string tb = R"TB(Root Cause (first observed failure):
[0]:
  time      : 2026-12-02_02:59:59
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 11191)
  error_file: /r/torchrun/x/attempt_0/1/error.json
  traceback : Traceback (most recent call last):
    File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 362, in wrapper
      result = f(*args, **kwargs)
               ^^^^^^^^^^^^^^^^^^
    File "train.py", line 170, in main
      raise RuntimeError(f"injected failure at step {step} (HANGLAB_PY_RAISE_STEP)")
  RuntimeError: injected failure at step 8 (HANGLAB_PY_RAISE_STEP)
  
============================================================
)TB";
    std::optional<TorchrunFailure> r4;
    std::vector<TorchrunFailure> f4;
    parse_torchrun_summary("Failures:\n  <NO_OTHER_FAILURES>\n------\n" + tb, r4, f4);
    REQUIRE(r4);
    // ...and an entry after a traceback is read as an entry again.
    std::optional<TorchrunFailure> r5;
    std::vector<TorchrunFailure> f5;
    std::string two = tb.substr(0, tb.find("======"));
    two.replace(0, std::string("Root Cause (first observed failure):").size(), "Failures:");
    parse_torchrun_summary(two + "[1]:\n  rank      : 2 (local_rank: 2)\n  exitcode  : -15 (pid: 7)\n-----\n" + tb, r5, f5);
    REQUIRE(f5.size() == 2);
    CHECK(f5[0].traceback == "RuntimeError: injected failure at step 8 (HANGLAB_PY_RAISE_STEP)");
    CHECK(f5[1].rank == 2);
    CHECK(f5[1].pid == 7);
    CHECK(r4->rank == 1);
    CHECK(r4->exitcode == 1);
    CHECK(r4->error_file == "/r/torchrun/x/attempt_0/1/error.json");
    CHECK(r4->traceback == "RuntimeError: injected failure at step 8 (HANGLAB_PY_RAISE_STEP)");
    CHECK(f4.empty());
  }
  SECTION("no summary: nothing") {
    std::optional<TorchrunFailure> r3;
    std::vector<TorchrunFailure> f3;
    parse_torchrun_summary("W1202 torch/distributed/run.py:982] Setting OMP_NUM_THREADS\n", r3, f3);
    CHECK_FALSE(r3);
    CHECK(f3.empty());
  }
}

TEST_CASE("error files: ranks/<r>/error.json and torchrun's attempt_<n>/<local rank>/error.json", "[launchers]") {
  fs::path dir = fresh("errfiles");
  const std::string torch_format = R"J({"message": {"message": "RuntimeError: injected failure at step 5 (HANGLAB_PY_RAISE_STEP)", "extraInfo": {"py_callstack": "Traceback (most recent call last): ...", "timestamp": "1796178274"}}})J";
  put(dir / "ranks/1/error.json", torch_format);
  put(dir / "torchrun/kill_rank-x_ab12cd/attempt_1/2/error.json", torch_format);
  put(dir / "torchrun/kill_rank-x_ab12cd/attempt_0/0/error.json", "not json");
  put(dir / "torchrun/kill_rank-x_ab12cd/attempt_0/0/stdout.log", "");
  put(dir / "ranks/notarank/error.json", torch_format);
  auto files = read_error_files(dir);
  REQUIRE(files.size() == 3);
  // By attempt, then rank.
  CHECK(files[0].rank == 0);
  CHECK(files[0].attempt == 0);
  CHECK(files[0].message == "(not JSON)");
  CHECK(files[1].rank == 1);
  CHECK(files[1].attempt == 0);
  CHECK(files[1].path == "ranks/1/error.json");
  CHECK(files[1].message == "RuntimeError: injected failure at step 5 (HANGLAB_PY_RAISE_STEP)");
  CHECK(files[1].timestamp == "1796178274");
  CHECK(files[2].rank == 2);
  CHECK(files[2].attempt == 1);
  CHECK(files[2].path == "torchrun/kill_rank-x_ab12cd/attempt_1/2/error.json");
  CHECK(read_error_files(fresh("none")).empty());
}

TEST_CASE("the torchrun plan: one torchrun, a launch file per rank, torchrun's contract left to it",
          "[launchers]") {
  fs::path dir = fresh("plan");
  WorkloadSpec w;
  w.command = {"/venv/bin/python", "train.py"};
  w.world_size = 2;
  w.max_restarts = 3;
  std::vector<LaunchSpec> specs;
  std::vector<std::map<std::string, std::string>> base;
  for (int r = 0; r < 2; ++r) {
    RankEnvInput in;
    in.rank = r;
    in.world_size = 2;
    in.master_port = 29600;
    in.run_id = "s-1";
    in.run_dir = dir;
    LaunchSpec s;
    s.rank = r;
    s.argv = w.command;
    s.env = torchrun_contract_env(in);
    s.env["HANGLAB_DATA_DIR"] = (dir / "data").string();
    base.push_back(s.env);
    specs.push_back(s);
  }
  specs[1].env["MASTER_ADDR"] = "10.255.255.1";  // a fault's change (wrong_master_addr)
  specs[1].wrapper = {"/usr/bin/env"};
  specs[1].hooks = json::array({{{"kind", "raise"}}});

  LauncherPlan p = torchrun_launch_plan(w, specs, base, dir);
  CHECK(p.rank_fifos);
  const auto& a = p.spec.argv;
  auto after = [&](const std::string& flag) {
    auto it = std::find(a.begin(), a.end(), flag);
    return it == a.end() || it + 1 == a.end() ? std::string("<absent>") : *(it + 1);
  };
  CHECK(fs::path(a.at(0)).filename() == "torchrun");
  CHECK(after("--nproc-per-node") == "2");
  CHECK(after("--rdzv-backend") == "c10d");
  CHECK(after("--rdzv-endpoint") == "127.0.0.1:0");
  CHECK(after("--rdzv-id") == "s-1");
  CHECK(after("--max-restarts") == "3");
  CHECK(after("--log-dir") == (fs::absolute(dir) / "torchrun").string());
  REQUIRE(a.size() >= 2);
  CHECK(fs::path(a[a.size() - 2]).filename() == "hanglab_rank_exec");
  CHECK(a.back() == fs::absolute(dir).string());

  json l0 = read_json(dir / "ranks/0/launch.json");
  json l1 = read_json(dir / "ranks/1/launch.json");
  CHECK(l0["argv"] == json({"/venv/bin/python", "train.py"}));
  CHECK(l1["argv"] == json({"/usr/bin/env", "/venv/bin/python", "train.py"}));
  // torchrun's own values win for what it sets: its agent store, its error files.
  for (const char* k : {"RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_RUN_ID"})
    CHECK_FALSE(l0["env"].contains(k));
  CHECK(l1["env"]["MASTER_ADDR"] == "10.255.255.1");  // ...but not over a fault's change
  CHECK(l0["env"]["HANGLAB_DATA_DIR"] == (dir / "data").string());
  CHECK(l0["env"]["HANGLAB_TRACE"] == (fs::absolute(dir) / "ranks/0/events.jsonl").string());
  CHECK_FALSE(l0["env"].contains("HANGLAB_HOOKS"));
  CHECK(json::parse(l1["env"]["HANGLAB_HOOKS"].get<std::string>()) == specs[1].hooks);

  SECTION("a built-in workload keeps hanglab's store and does not use torchrun's") {
    WorkloadSpec b;
    b.name = "torch_ddp";
    b.world_size = 2;
    torchrun_launch_plan(b, specs, base, dir);
    json e = read_json(dir / "ranks/0/launch.json")["env"];
    CHECK(e["MASTER_PORT"] == "29600");
    CHECK(e["MASTER_ADDR"] == "127.0.0.1");
    CHECK(e["TORCHELASTIC_USE_AGENT_STORE"] == "False");
    CHECK_FALSE(e.contains("RANK"));
  }
}

TEST_CASE("what torchrun did, read from the run directory", "[launchers]") {
  fs::path dir = fresh("facts");
  put(dir / "ranks/0/exec.jsonl", R"({"ev":"exec","pid":10,"rank":0,"restart_count":0}
{"ev":"exec","pid":20,"rank":0,"restart_count":1}
)");
  put(dir / "ranks/1/exec.jsonl", R"({"ev":"exec","pid":11,"rank":1,"restart_count":0}
)");
  // 02:24:34.97 UTC = 1796178274.97
  put(dir / "launcher.stderr.log", kSummary);

  SECTION("it tore the group down and exited by itself") {
    put(dir / "harness.jsonl", R"({"t":1796178275.3,"ev":"launcher_exit","pid":9,"code":1,"signal":null}
)");
    TorchrunFacts t = read_torchrun_facts(dir);
    CHECK(t.restarts == 1);
    CHECK(t.closing_signals == 2);
    CHECK(t.tore_down);
    CHECK_FALSE(t.sigkill_escalation);
    CHECK_FALSE(t.alive_at_harness_teardown);
    CHECK_FALSE(t.hung_in_teardown);
    REQUIRE(t.exit_code);
    CHECK(*t.exit_code == 1);
    REQUIRE(t.root_cause);
    CHECK(t.root_cause->rank == 1);
    CHECK(t.failures.size() == 2);
  }
  SECTION("it was still waiting for a worker when hanglab's watchdog ended the run") {
    put(dir / "harness.jsonl", R"({"t":1796178290.0,"ev":"detect","detector":"harness_watchdog","rank":-1}
{"t":1796178290.1,"ev":"teardown","reason":"hang"}
{"t":1796178290.4,"ev":"launcher_exit","pid":9,"code":null,"signal":15}
)");
    TorchrunFacts t = read_torchrun_facts(dir);
    CHECK(t.tore_down);
    CHECK(t.alive_at_harness_teardown);
    CHECK(t.hung_in_teardown);
    CHECK_FALSE(t.exit_code);
    CHECK(*t.exit_signal == 15);
  }
  SECTION("closing signals sent only because hanglab tore it down are not torchrun's doing") {
    put(dir / "harness.jsonl", R"({"t":1796178270.0,"ev":"teardown","reason":"deadline"}
{"t":1796178276.0,"ev":"launcher_exit","pid":9,"code":null,"signal":9}
)");
    TorchrunFacts t = read_torchrun_facts(dir);
    CHECK(t.closing_signals == 0);
    CHECK_FALSE(t.tore_down);
    CHECK_FALSE(t.hung_in_teardown);
  }
  SECTION("a SIGKILL escalation is a hang in teardown") {
    put(dir / "launcher.stderr.log",
        kSummary + "2026-12-02T02:25:05.000000Z W1202 02:25:05.000000 26779 torch/distributed/elastic/multiprocessing/"
                   "api.py:1043] Unable to shutdown process 27093 via Signals.SIGTERM, forcefully exiting via "
                   "Signals.SIGKILL\n");
    put(dir / "harness.jsonl", R"({"t":1764642306.0,"ev":"launcher_exit","pid":9,"code":1,"signal":null}
)");
    TorchrunFacts t = read_torchrun_facts(dir);
    CHECK(t.sigkill_escalation);
    CHECK(t.hung_in_teardown);
  }
}
