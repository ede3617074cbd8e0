// The contract every registered injector must keep (design: "Injector interface"):
// documents itself, accepts a minimal table, rejects unknown keys with file:line:col and
// the key, targets only its ranks, and reverts idempotently even if it never fired.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "injector.hpp"
#include "workload_args.hpp"

using namespace hanglab;

namespace {

struct FakeJob : Job {
  int world_size() const override { return 4; }
  pid_t pid_of(int) const override { return 0; }
  bool alive(int) const override { return false; }
  std::string run_dir() const override { return "/nonexistent"; }
};

FaultSpec spec_from(const std::string& kind, const std::string& extra) {
  FaultSpec s;
  s.kind = kind;
  s.ranks = {1};
  s.at_step = 3;
  s.table = toml::parse("kind = \"" + kind + "\"\nranks = [1]\nat_step = 3\n" + extra);
  return s;
}

}  // namespace

TEST_CASE("the registry lists unique, documented injectors") {
  const auto& reg = injector_registry();
  REQUIRE(reg.size() >= 3);
  std::set<std::string> kinds;
  for (const auto& i : reg) {
    INFO(i.kind);
    CHECK(kinds.insert(i.kind).second);
    CHECK_FALSE(i.summary.empty());
    CHECK_FALSE(i.mechanism.empty());
    CHECK(find_injector(i.kind) == &i);
    for (const auto& k : i.keys) {
      CHECK_FALSE(k.doc.empty());
      CHECK((k.type == "int" || k.type == "float" || k.type == "bool" || k.type == "string" || k.type == "[int]"));
    }
  }
  CHECK(find_injector("no_such_fault") == nullptr);
}

TEST_CASE("every injector accepts a minimal table and its documented defaults") {
  for (const auto& i : injector_registry()) {
    INFO(i.kind);
    std::string extra;
    for (const auto& k : i.keys) {
      if (k.default_value.empty() || k.default_value.front() == '(') continue;
      extra += k.key + " = " + (k.type == "string" ? "\"" + k.default_value + "\"" : k.default_value) + "\n";
    }
    auto inj = i.make();
    CHECK_NOTHROW(inj->configure(spec_from(i.kind, ""), "x.toml"));
    auto inj2 = i.make();
    CHECK_NOTHROW(inj2->configure(spec_from(i.kind, extra), "x.toml"));
  }
}

TEST_CASE("every injector rejects an unknown key naming file, line, column and key") {
  for (const auto& i : injector_registry()) {
    INFO(i.kind);
    auto inj = i.make();
    try {
      inj->configure(spec_from(i.kind, "bogus_key = 1\n"), "x.toml");
      FAIL("accepted an unknown key");
    } catch (const ConfigError& e) {
      CHECK(e.file() == "x.toml");
      CHECK(e.line() == 4);
      CHECK(e.col() >= 1);
      CHECK(e.key() == "fault[0].bogus_key");
    }
  }
}

TEST_CASE("in-process injectors hook only their ranks -- every revert is idempotent without fire") {
  FakeJob job;
  for (const auto& i : injector_registry()) {
    INFO(i.kind);
    auto inj = i.make();
    inj->configure(spec_from(i.kind, ""), "x.toml");
    for (int r = 0; r < 4; ++r) {
      LaunchSpec s;
      s.rank = r;
      s.argv = {"true"};
      inj->prepare_rank(r, s);
      if (inj->in_process()) {
        CHECK(s.hooks.size() == (r == 1 ? 1u : 0u));
        if (r == 1) {
          CHECK(s.hooks[0].value("kind", "") == inj->hook_kind());
          CHECK(s.hooks[0].value("at_step", 0) == 3);
        }
      }
    }
    CHECK_NOTHROW(inj->revert(job));
    CHECK_NOTHROW(inj->revert(job));
  }
}

TEST_CASE("kill_rank validates its signal name") {
  auto inj = find_injector("kill_rank")->make();
  CHECK_NOTHROW(inj->configure(spec_from("kill_rank", "signal = \"SIGSEGV\"\n"), "x.toml"));
  auto bad = find_injector("kill_rank")->make();
  CHECK_THROWS_AS(bad->configure(spec_from("kill_rank", "signal = \"SIGFOO\"\n"), "x.toml"), ConfigError);
  auto typed = find_injector("kill_rank")->make();
  CHECK_THROWS_AS(typed->configure(spec_from("kill_rank", "signal = 9\n"), "x.toml"), ConfigError);
}

// ---- what a fault needs of the workload (adapt) and whether it showed (manifested) ----

namespace {

// A scenario as load_scenario leaves it: torch_ddp with no [workload.args], 12 steps.
Scenario torch_ddp_scenario() {
  Scenario sc;
  sc.workload.name = "torch_ddp";
  sc.workload.world_size = 4;
  sc.workload.steps = 12;
  sc.deadline_s = 120;
  return sc;
}

std::map<std::string, std::string> torch_ddp_defaults() {
  std::map<std::string, std::string> m;
  for (const auto& a : torch_ddp_args()) m[a.name] = a.default_value;
  return m;
}

// configure + the runner's adapt step on `sc`, as prepare_scenario does.
std::vector<std::string> adapt_on(Scenario& sc, Injector& inj, const FaultSpec& spec, bool builtin = true) {
  inj.configure(spec, "x.toml");
  AdaptContext ctx{sc, spec, "x.toml"};
  ctx.builtin = builtin;
  ctx.training_loop = builtin;
  if (builtin) ctx.arg_defaults = torch_ddp_defaults();
  check_trigger_reachable(ctx);
  return inj.adapt(ctx);
}

std::string arg_of(const Scenario& sc, const std::string& k) {
  for (const auto& [key, v] : sc.workload.args)
    if (key == k) return v;
  return {};
}

FaultSpec spec_no_trigger(const std::string& kind, const std::string& extra = "", std::vector<int> ranks = {1}) {
  FaultSpec s;
  s.kind = kind;
  s.ranks = ranks;
  std::string r;
  for (int x : ranks) r += (r.empty() ? "" : ", ") + std::to_string(x);
  s.table = toml::parse("kind = \"" + kind + "\"\nranks = [" + r + "]\n" + extra);
  return s;
}

}  // namespace

TEST_CASE("every key has a default, a described derived default, or is required with a reason") {
  for (const auto& i : injector_registry()) {
    for (const auto& k : i.keys) {
      INFO(i.kind << "." << k.key);
      const bool has_default = !k.default_value.empty();
      CHECK(has_default != !k.required_reason.empty());
      if (!has_default || k.default_value.front() == '(') continue;
      // A literal default parses as its type (read_fault_key would use it).
      if (k.type == "int") CHECK_NOTHROW(std::stoll(k.default_value));
      if (k.type == "float") CHECK_NOTHROW(std::stod(k.default_value));
      if (k.type == "bool") CHECK((k.default_value == "true" || k.default_value == "false"));
    }
    CHECK_FALSE(i.default_trigger.empty());
  }
}

TEST_CASE("every injector's judge says `not exercised` on a run where nothing happened, and says why") {
  RunFacts facts;
  facts.start_t = 1000;
  facts.end_t = 1030;
  facts.outcome = "completed";
  for (int r = 0; r < 4; ++r) facts.exits.push_back({r, 0, std::nullopt, 1029});
  FakeJob job;
  for (const auto& i : injector_registry()) {
    INFO(i.kind);
    auto inj = i.make();
    inj->configure(spec_from(i.kind, ""), "x.toml");
    // A healthy trace on every rank: start, init, 12 steps, exit 0 — no fault event.
    std::vector<std::vector<nlohmann::json>> traces(4);
    for (int r = 0; r < 4; ++r) {
      traces[r].push_back({{"t", 1000.5}, {"ev", "start"}, {"rank", r}});
      traces[r].push_back({{"t", 1001.0}, {"ev", "phase"}, {"name", "init"}, {"edge", "end"}, {"step", 0}});
      for (int s = 1; s <= 12; ++s) traces[r].push_back({{"t", 1001.0 + s}, {"ev", "step"}, {"step", s}});
      traces[r].push_back({{"t", 1029.0}, {"ev", "exit"}, {"code", 0}});
    }
    inj->revert(job);
    const Manifest m = inj->manifested(RunFactsView{facts, {}, 4, traces});
    CHECK_FALSE(m.exercised);
    CHECK_FALSE(m.evidence.empty());
    // ...and on a run with no facts at all (the harness failed before launch).
    RunFacts none;
    const Manifest empty = inj->manifested(RunFactsView{none, {}, 4, {}});
    CHECK_FALSE(empty.exercised);
  }
}

TEST_CASE("in-process hooks are exercised when the targeted rank traces the hook's fault event") {
  RunFacts facts;
  facts.start_t = 1000;
  for (const char* kind : {"skip_collective", "extra_collective", "nan_skip", "mismatched_collective", "uneven_batches"}) {
    INFO(kind);
    auto inj = find_injector(kind)->make();
    inj->configure(spec_from(kind, ""), "x.toml");
    std::vector<std::vector<nlohmann::json>> traces(4);
    traces[0].push_back({{"t", 1003.0}, {"ev", "fault"}, {"kind", inj->hook_kind()}, {"detail", "on rank 0"}});
    CHECK_FALSE(inj->manifested(RunFactsView{facts, {}, 4, traces}).exercised);  // rank 0 is not targeted
    traces[1].push_back({{"t", 1003.0}, {"ev", "fault"}, {"kind", inj->hook_kind()}, {"detail", "skipped seq 9"}, {"step", 3}});
    const Manifest m = inj->manifested(RunFactsView{facts, {}, 4, traces});
    CHECK(m.exercised);
    CHECK_THAT(m.evidence, Catch::Contains("skipped seq 9"));
  }
}

TEST_CASE("kill_rank is exercised only when a rank it signalled died of the signal") {
  RunFacts facts;
  facts.exits.push_back({1, std::nullopt, 9, 1005});
  auto inj = find_injector("kill_rank")->make();
  inj->configure(spec_from("kill_rank", ""), "x.toml");
  // A SIGKILL death it did not cause (it never fired) is not its effect.
  CHECK_FALSE(inj->manifested(RunFactsView{facts, {}, 4, {}}).exercised);
}

TEST_CASE("adapt: tiny_shm on the default torch_ddp turns on loader workers and batches that do not fit") {
  Scenario sc = torch_ddp_scenario();
  auto inj = find_injector("tiny_shm")->make();
  const FaultSpec spec = spec_no_trigger("tiny_shm");
  const auto notes = adapt_on(sc, *inj, spec);
  CHECK(arg_of(sc, "num_workers") == "2");
  // 64 KiB of /dev/shm; batches of 8 samples x (4095 + 1) floats = 128 KiB.
  CHECK(arg_of(sc, "input_dim") == "4095");
  REQUIRE(notes.size() == 2);
  CHECK_THAT(notes[0], Catch::Contains("num_workers = 2"));

  SECTION("an explicit num_workers = 0 is refused: the rank would never touch /dev/shm") {
    Scenario s2 = torch_ddp_scenario();
    s2.workload.args = {{"num_workers", "0"}};
    auto i2 = find_injector("tiny_shm")->make();
    try {
      adapt_on(s2, *i2, spec);
      FAIL("accepted num_workers = 0");
    } catch (const ConfigError& e) {
      CHECK(e.key() == "fault[0].kind");
      CHECK_THAT(e.what(), Catch::Contains("num_workers = 0"));
    }
  }
  SECTION("batches that fit the tmpfs are refused, unless the scenario expects no effect") {
    Scenario s3 = torch_ddp_scenario();
    s3.workload.args = {{"num_workers", "2"}};
    const FaultSpec big = spec_no_trigger("tiny_shm", "size_mb = 64\n");
    auto i3 = find_injector("tiny_shm")->make();
    CHECK_THROWS_AS(adapt_on(s3, *i3, big), ConfigError);
    s3.expect.fault_manifests = false;
    auto i4 = find_injector("tiny_shm")->make();
    CHECK_NOTHROW(adapt_on(s3, *i4, big));
  }
  SECTION("a bring-your-own command is run as given") {
    Scenario s5 = torch_ddp_scenario();
    s5.workload.name.clear();
    s5.workload.command = {"python3", "train.py"};
    auto i5 = find_injector("tiny_shm")->make();
    CHECK(adapt_on(s5, *i5, spec, false).empty());
    CHECK(s5.workload.args.empty());
  }
}

TEST_CASE("adapt: uneven_batches without at_step drops the rank's last batch") {
  Scenario sc = torch_ddp_scenario();
  auto inj = find_injector("uneven_batches")->make();
  const FaultSpec spec = spec_no_trigger("uneven_batches", "", {3});
  const auto notes = adapt_on(sc, *inj, spec);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("at_step = 12"));
  LaunchSpec ls;
  ls.rank = 3;
  inj->prepare_rank(3, ls);
  REQUIRE(ls.hooks.size() == 1);
  CHECK(ls.hooks[0].value("at_step", 0) == 12);
  CHECK(ls.hooks[0].value("mode", "") == "fewer");

  SECTION("drop_last_mismatch that changes no batch count is refused") {
    Scenario s2 = torch_ddp_scenario();  // 1024 samples / 4 ranks / 8: no remainder anywhere
    auto i2 = find_injector("uneven_batches")->make();
    CHECK_THROWS_AS(adapt_on(s2, *i2, spec_no_trigger("uneven_batches", "mode = \"drop_last_mismatch\"\n", {3})),
                    ConfigError);
    // Every epoch has exactly 32 batches either way: 1024 samples split evenly, no partial batch.
    s2.workload.steps = 32;
    auto i1 = find_injector("uneven_batches")->make();
    CHECK_THROWS_AS(adapt_on(s2, *i1, spec_no_trigger("uneven_batches", "mode = \"drop_last_mismatch\"\n", {3})),
                    ConfigError);
    s2.workload.args = {{"dataset_size", "1030"}, {"batch_size", "1"}};
    s2.workload.steps = 258;  // the peers' 258 batches; drop_last gives the rank 257
    auto i3 = find_injector("uneven_batches")->make();
    CHECK_NOTHROW(adapt_on(s2, *i3, spec_no_trigger("uneven_batches", "mode = \"drop_last_mismatch\"\n", {3})));
  }
}

TEST_CASE("adapt: a trigger that never comes is refused before anything runs") {
  Scenario sc = torch_ddp_scenario();
  FaultSpec spec = spec_from("kill_rank", "");
  spec.at_step = 13;
  spec.table.insert_or_assign("at_step", 13);
  auto inj = find_injector("kill_rank")->make();
  try {
    adapt_on(sc, *inj, spec);
    FAIL("accepted at_step beyond steps");
  } catch (const ConfigError& e) {
    CHECK(e.key() == "fault[0].at_step");
    CHECK_THAT(e.what(), Catch::Contains("steps = 12"));
  }
}

TEST_CASE("adapt: in-process hook faults need the built-in training loop") {
  for (const auto& i : injector_registry()) {
    auto probe = i.make();
    if (!probe->in_process() && i.kind != "oom_rank") continue;
    // exception_on_rank raises in a bring-your-own Python rank through its sitecustomize
    // hook instead (process_faults_test runs it on a real interpreter).
    if (i.kind == "exception_on_rank") continue;
    INFO(i.kind);
    Scenario sc = torch_ddp_scenario();
    sc.workload.name.clear();
    sc.workload.command = {"python3", "train.py"};
    auto inj = i.make();
    try {
      adapt_on(sc, *inj, spec_from(i.kind, ""), false);
      FAIL("a bring-your-own command accepted an in-process hook");
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("bring-your-own"));
    }
  }
}

TEST_CASE("adapt: checkpoint faults make the targeted rank save") {
  Scenario sc = torch_ddp_scenario();
  auto inj = find_injector("disk_full")->make();
  adapt_on(sc, *inj, spec_from("disk_full", ""));  // ranks [1], at_step 3
  CHECK(arg_of(sc, "checkpoint_every") == "3");
  CHECK(arg_of(sc, "checkpoint_ranks") == "all");

  Scenario s2 = torch_ddp_scenario();
  s2.workload.args = {{"checkpoint_ranks", "rank0"}};
  auto i2 = find_injector("disk_full")->make();
  CHECK_THROWS_AS(adapt_on(s2, *i2, spec_from("disk_full", "")), ConfigError);
}
