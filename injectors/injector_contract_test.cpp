// The contract every registered injector must keep (design: "Injector interface"):
// documents itself, accepts a minimal table, rejects unknown keys with file:line:col and
// the key, targets only its ranks, and reverts idempotently even if it never fired.
#include <catch2/catch.hpp>

#include <set>

#include "injector.hpp"

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
      CHECK((k.type == "int" || k.type == "float" || k.type == "bool" || k.type == "string"));
    }
  }
  CHECK(find_injector("no_such_fault") == nullptr);
}

TEST_CASE("every injector accepts a minimal table and its documented defaults") {
  for (const auto& i : injector_registry()) {
    INFO(i.kind);
    std::string extra;
    for (const auto& k : i.keys) {
      if (k.default_value.empty()) continue;
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

TEST_CASE("in-process injectors hook only their ranks; every revert is idempotent without fire") {
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
