// Unit tests of the one training loop (trainer.hpp): environment and
// trace-path handling, and whole single-rank runs over a loopback Collectives in a forked
// child (workload_main leaves with _exit), checked through the exit code and the trace.
#include "trainer.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using hanglab::BackendSpec;
using hanglab::CollectiveError;
using hanglab::Collectives;
using hanglab::ErrorClass;
using hanglab::RankEnv;

namespace {

// A world of one: every collective completes at once and leaves the data as it is,
// except that it fails when told to (to exercise the error classification).
class Loopback : public Collectives {
 public:
  explicit Loopback(int fail_at_seq = 0, ErrorClass cls = ErrorClass::kComm) : fail_at_(fail_at_seq), cls_(cls) {}
  void allreduce_sum(float*, int64_t) override { maybe_fail(); }
  void allreduce_sum(double*, int64_t) override { maybe_fail(); }
  void broadcast(float*, int64_t, int) override { maybe_fail(); }
  void barrier() override { maybe_fail(); }
  std::string describe() const override { return "loopback, world_size 1"; }

 private:
  void maybe_fail() {
    if (fail_at_ != 0 && current_seq == fail_at_) throw CollectiveError(cls_, "injected by the test");
  }
  int fail_at_;
  ErrorClass cls_;
};

std::string temp_dir() {
  char tmpl[] = "/tmp/hanglab_trainer_test.XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  REQUIRE(dir != nullptr);
  return dir;
}

BackendSpec loopback_spec(std::function<std::unique_ptr<Collectives>(const RankEnv&)> connect) {
  BackendSpec spec;
  spec.workload = "test_ddp";
  spec.backend = "loop";
  spec.summary = "test";
  spec.connect = std::move(connect);
  return spec;
}

struct RunResult {
  int exit_code = -1;
  std::vector<nlohmann::json> events;
  int count(const std::string& ev) const {
    int n = 0;
    for (const auto& e : events) n += e["ev"] == ev ? 1 : 0;
    return n;
  }
  const nlohmann::json* first(const std::string& ev) const {
    for (const auto& e : events)
      if (e["ev"] == ev) return &e;
    return nullptr;
  }
};

// Runs workload_main in a child with a clean rank environment plus `env`.
RunResult run_child(const BackendSpec& spec, std::vector<std::string> args,
                    const std::vector<std::pair<std::string, std::string>>& env) {
  const std::string dir = temp_dir();
  const std::string trace = dir + "/events.jsonl";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                          "HANGLAB_HOOKS", "HANGLAB_TRACE"}) {
      ::unsetenv(v);
    }
    ::setenv("RANK", "0", 1);
    ::setenv("WORLD_SIZE", "1", 1);
    ::setenv("HANGLAB_RUN_DIR", dir.c_str(), 1);
    ::setenv("HANGLAB_TRACE", (dir + "/events.%r.jsonl").c_str(), 1);
    ::setenv("HANGLAB_HEARTBEAT_MS", "50", 1);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    // Keep the test output readable: the child's log lines go to a file.
    std::freopen((dir + "/out.log").c_str(), "w", stdout);
    std::freopen((dir + "/err.log").c_str(), "w", stderr);
    args.insert(args.begin(), "test_ddp");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::_exit(hanglab::workload_main(static_cast<int>(args.size()), argv.data(), spec));
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  RunResult r;
  REQUIRE(WIFEXITED(status));
  r.exit_code = WEXITSTATUS(status);
  std::ifstream in(dir + "/events.0.jsonl");  // %r -> 0
  for (std::string line; std::getline(in, line);) r.events.push_back(nlohmann::json::parse(line));
  return r;
}

const std::vector<std::string> kFast = {"--steps=6", "--step_ms=0", "--backend=loop", "--dataset_size=256"};

}  // namespace

TEST_CASE("HANGLAB_TRACE %r is the rank", "[trainer]") {
  CHECK(hanglab::trace_path_for_rank("/r/ranks/%r/events.jsonl", 3) == "/r/ranks/3/events.jsonl");
  CHECK(hanglab::trace_path_for_rank("/a/%r-%r", 12) == "/a/12-12");
  CHECK(hanglab::trace_path_for_rank("/plain", 1) == "/plain");
}

TEST_CASE("a healthy single-rank run completes with exit 0 and a full trace", "[trainer]") {
  const auto r = run_child(loopback_spec([](const RankEnv&) { return std::make_unique<Loopback>(); }), kFast, {});
  CHECK(r.exit_code == 0);
  CHECK(r.count("step") == 6);
  REQUIRE(r.first("start") != nullptr);
  CHECK((*r.first("start"))["workload"] == "test_ddp");
  CHECK(r.events.back()["ev"] == "exit");
  CHECK(r.events.back()["code"] == 0);
  // 1 broadcast + 6 steps x buckets allreduces: default MLP 16->64x2->1 with 16 KiB
  // buckets is 5313 floats = 2 buckets.
  int begins = 0;
  for (const auto& e : r.events) begins += e["ev"] == "coll" && e["edge"] == "begin" ? 1 : 0;
  CHECK(begins == 1 + 6 * 2);
}

TEST_CASE("skip_collective skips the step's allreduces and reports the fault", "[trainer]") {
  const auto r = run_child(loopback_spec([](const RankEnv&) { return std::make_unique<Loopback>(); }), kFast,
                           {{"HANGLAB_HOOKS", R"([{"kind":"skip_collective","at_step":3}])"}});
  CHECK(r.exit_code == 0);
  CHECK(r.count("fault") == 2);  // one per bucket
  int begins = 0;
  for (const auto& e : r.events) begins += e["ev"] == "coll" && e["edge"] == "begin" ? 1 : 0;
  CHECK(begins == 1 + 5 * 2);
}

TEST_CASE("checkpoint and eval add a barrier and an allreduce", "[trainer]") {
  auto args = kFast;
  args.push_back("--checkpoint_every=3");
  args.push_back("--eval_every=2");
  const auto r = run_child(loopback_spec([](const RankEnv&) { return std::make_unique<Loopback>(); }), args, {});
  CHECK(r.exit_code == 0);
  int barriers = 0, evals = 0;
  for (const auto& e : r.events) {
    barriers += e["ev"] == "coll" && e["edge"] == "begin" && e["op"] == "barrier" ? 1 : 0;
    evals += e["ev"] == "phase" && e["name"] == "eval" && e["edge"] == "begin" ? 1 : 0;
  }
  CHECK(barriers == 2);
  CHECK(evals == 3);
}

TEST_CASE("errors map to the documented exit codes", "[trainer]") {
  SECTION("a collective timeout is 11, with the collective in the error event") {
    const auto r = run_child(
        loopback_spec([](const RankEnv&) { return std::make_unique<Loopback>(4, ErrorClass::kTimeout); }), kFast, {});
    CHECK(r.exit_code == 11);
    const auto* err = r.first("error");
    REQUIRE(err != nullptr);
    CHECK((*err)["class"] == "timeout");
    CHECK((*err)["seq"] == 4);
    CHECK((*err)["op"] == "allreduce");
  }
  SECTION("a communication error is 10") {
    const auto r = run_child(loopback_spec([](const RankEnv&) { return std::make_unique<Loopback>(2); }), kFast, {});
    CHECK(r.exit_code == 10);
  }
  SECTION("a failing connect is a rendezvous failure, 12") {
    const auto r = run_child(loopback_spec([](const RankEnv&) -> std::unique_ptr<Collectives> {
                               throw std::runtime_error("no peers");
                             }),
                             kFast, {});
    CHECK(r.exit_code == 12);
    CHECK((*r.first("error"))["where"] == "init");
  }
  SECTION("the exception hook is an unhandled exception, 1") {
    const auto r = run_child(loopback_spec([](const RankEnv&) { return std::make_unique<Loopback>(); }), kFast,
                             {{"HANGLAB_HOOKS", R"([{"kind":"exception","at_step":2}])"}});
    CHECK(r.exit_code == 1);
    CHECK((*r.first("error"))["where"] == "forward");
  }
  SECTION("a bad hook spec is a usage error, 2") {
    const auto r = run_child(loopback_spec([](const RankEnv&) { return std::make_unique<Loopback>(); }), kFast,
                             {{"HANGLAB_HOOKS", R"([{"kind":"nope"}])"}});
    CHECK(r.exit_code == 2);
  }
  SECTION("a wrong --backend is a usage error, 2") {
    auto args = kFast;
    args.push_back("--backend=gloo");
    const auto r = run_child(loopback_spec([](const RankEnv&) { return std::make_unique<Loopback>(); }), args, {});
    CHECK(r.exit_code == 2);
  }
}

TEST_CASE("the launcher identity is used only when RANK and WORLD_SIZE are unset", "[trainer]") {
  BackendSpec spec = loopback_spec(nullptr);
  spec.launcher_identity = [](RankEnv& e) {
    e.rank = 2;
    e.world_size = 4;
    e.local_rank = 0;
  };
  ::unsetenv("LOCAL_RANK");
  ::unsetenv("LOCAL_WORLD_SIZE");
  ::unsetenv("MASTER_PORT");
  ::setenv("RANK", "1", 1);
  ::setenv("WORLD_SIZE", "3", 1);
  RankEnv e = hanglab::read_rank_env(spec);
  CHECK(e.rank == 1);
  CHECK(e.world_size == 3);
  CHECK(e.local_rank == 1);
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  e = hanglab::read_rank_env(spec);
  CHECK(e.rank == 2);
  CHECK(e.world_size == 4);
  CHECK(e.local_rank == 0);
  CHECK(e.local_world_size == 4);
  ::setenv("RANK", "1", 1);
  CHECK_THROWS_AS(hanglab::read_rank_env(spec), hanglab::UsageError);  // RANK without WORLD_SIZE
  ::unsetenv("RANK");
}
