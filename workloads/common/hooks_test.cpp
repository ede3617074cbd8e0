// Unit tests of HANGLAB_HOOKS parsing and the trigger semantics the training loop relies on.
#include "hooks.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "exit_codes.hpp"

using hanglab::Hook;
using hanglab::HookKind;
using hanglab::Hooks;
using hanglab::UsageError;

namespace {

// The UsageError message for `text`, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    Hooks::parse(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("absent, empty and [] mean no hooks", "[hooks]") {
  CHECK(Hooks::parse("").empty());
  CHECK(Hooks::parse("  \n").empty());
  CHECK(Hooks::parse("[]").empty());
  ::unsetenv("HANGLAB_HOOKS");
  CHECK(Hooks::from_env().empty());
  ::setenv("HANGLAB_HOOKS", "", 1);
  CHECK(Hooks::from_env().empty());
  ::unsetenv("HANGLAB_HOOKS");
}

TEST_CASE("defaults are filled per kind", "[hooks]") {
  const Hooks hooks = Hooks::parse(R"([
    {"kind":"skip_collective"},
    {"kind":"uneven_batches","at_step":6},
    {"kind":"exception","at_step":3},
    {"kind":"extra_collective","at_step":2},
    {"kind":"nan_skip","at_step":4},
    {"kind":"mismatched_collective","at_step":5},
    {"kind":"alloc_growth","at_step":7}
  ])");
  REQUIRE(hooks.hooks().size() == 7);
  const auto& h = hooks.hooks();
  CHECK(h[0].kind == HookKind::kSkipCollective);
  CHECK(h[0].at_step == 1);
  CHECK(h[0].count == 1);
  CHECK(h[0].op == "allreduce");
  CHECK(h[1].mode == "fewer");
  CHECK(h[1].at_step == 6);
  CHECK(h[2].message == "injected exception");
  CHECK(h[3].numel == 1);
  CHECK(h[5].op == "allreduce");
  CHECK_FALSE(h[5].numel.has_value());  // the workload uses first bucket numel + 1
  CHECK(h[6].mb_per_step == 64);
  CHECK(std::string(hanglab::hook_kind_name(HookKind::kMismatchedCollective)) == "mismatched_collective");
}

TEST_CASE("bad input is rejected with a message naming the entry and key", "[hooks]") {
  CHECK_THAT(parse_error("[{"), Catch::Contains("not valid JSON"));
  CHECK_THAT(parse_error(R"({"kind":"nan_skip"})"), Catch::Contains("must be a JSON array"));
  CHECK_THAT(parse_error("[3]"), Catch::Contains("HANGLAB_HOOKS[0]") && Catch::Contains("expected an object"));
  CHECK_THAT(parse_error(R"([{"at_step":2}])"), Catch::Contains("missing \"kind\""));
  CHECK_THAT(parse_error(R"([{"kind":1}])"), Catch::Contains("\"kind\" must be a string"));
  CHECK_THAT(parse_error(R"([{"kind":"nan_skip"},{"kind":"skip_allreduce"}])"),
             Catch::Contains("HANGLAB_HOOKS[1]") && Catch::Contains("unknown kind \"skip_allreduce\""));
  CHECK_THAT(parse_error(R"([{"kind":"skip_collective","cout":2}])"),
             Catch::Contains("HANGLAB_HOOKS[0] (skip_collective)") && Catch::Contains("unknown key \"cout\"") &&
                 Catch::Contains("allowed: kind, at_step, at_unix, count, op"));
  // A key valid for another kind is still unknown here.
  CHECK_THAT(parse_error(R"([{"kind":"nan_skip","numel":3}])"), Catch::Contains("unknown key \"numel\""));
  CHECK_THAT(parse_error(R"([{"kind":"nan_skip","at_step":"5"}])"), Catch::Contains("must be an integer"));
  CHECK_THAT(parse_error(R"([{"kind":"nan_skip","at_step":5.5}])"), Catch::Contains("must be an integer"));
  CHECK_THAT(parse_error(R"([{"kind":"nan_skip","at_step":0}])"), Catch::Contains("must be >= 1"));
  CHECK_THAT(parse_error(R"([{"kind":"nan_skip","at_step":99999999999}])"), Catch::Contains("at_step"));
  CHECK_THAT(parse_error(R"([{"kind":"skip_collective","count":0}])"), Catch::Contains("\"count\" must be >= 1"));
  CHECK_THAT(parse_error(R"([{"kind":"skip_collective","op":"broadcast"}])"),
             Catch::Contains("must be one of allreduce | barrier"));
  CHECK_THAT(parse_error(R"([{"kind":"mismatched_collective","op":"barrier"}])"),
             Catch::Contains("must be one of allreduce | broadcast"));
  CHECK_THAT(parse_error(R"([{"kind":"mismatched_collective","op":"broadcast","numel":3}])"),
             Catch::Contains("numel"));
  CHECK_THAT(parse_error(R"([{"kind":"uneven_batches","mode":"more"}])"), Catch::Contains("fewer | drop_last_mismatch"));
  CHECK_THAT(parse_error(R"([{"kind":"uneven_batches","mode":"drop_last_mismatch","at_step":3}])"),
             Catch::Contains("drop_last_mismatch"));
  CHECK_THAT(parse_error(R"([{"kind":"nan_skip","at_step":3,"at_unix":1700000000.5}])"),
             Catch::Contains("at most one of"));
  CHECK_THAT(parse_error(R"([{"kind":"nan_skip","at_unix":"soon"}])"), Catch::Contains("must be a number"));
  CHECK_THAT(parse_error(R"([{"kind":"exception","message":7}])"), Catch::Contains("must be a string"));
  CHECK_THAT(parse_error(R"([{"kind":"alloc_growth","mb_per_step":-1}])"), Catch::Contains("mb_per_step"));
  ::setenv("HANGLAB_HOOKS", "[{\"kind\":\"bogus\"}]", 1);
  CHECK_THROWS_AS(Hooks::from_env(), UsageError);
  ::unsetenv("HANGLAB_HOOKS");
}

TEST_CASE("skip_collective allreduce acts at steps N..N+count-1 only", "[hooks]") {
  Hooks hooks = Hooks::parse(R"([{"kind":"skip_collective","at_step":5,"count":2}])");
  for (int step = 1; step <= 10; ++step) {
    hooks.begin_step(step, 0);
    INFO("step " << step);
    CHECK(hooks.should_skip_grad_allreduce(step) == (step == 5 || step == 6));
    CHECK_FALSE(hooks.take_skip_checkpoint_barrier(step));
  }
}

TEST_CASE("skip_collective barrier consumes the first count barriers at/after N", "[hooks]") {
  Hooks hooks = Hooks::parse(R"([{"kind":"skip_collective","op":"barrier","at_step":5,"count":2}])");
  CHECK_FALSE(hooks.should_skip_grad_allreduce(5));
  CHECK_FALSE(hooks.take_skip_checkpoint_barrier(4));  // checkpoint before N: not skipped
  CHECK(hooks.take_skip_checkpoint_barrier(8));        // first checkpoint at/after N
  CHECK(hooks.take_skip_checkpoint_barrier(12));
  CHECK_FALSE(hooks.take_skip_checkpoint_barrier(16));  // count used up
}

TEST_CASE("uneven_batches: fewer exhausts the sampler from step N, drop_last_mismatch flips", "[hooks]") {
  const Hooks fewer = Hooks::parse(R"([{"kind":"uneven_batches","mode":"fewer","at_step":6}])");
  CHECK_FALSE(fewer.sampler_exhausted(5));
  CHECK(fewer.sampler_exhausted(6));
  CHECK(fewer.sampler_exhausted(7));
  CHECK_FALSE(fewer.flip_drop_last());
  const Hooks flip = Hooks::parse(R"([{"kind":"uneven_batches","mode":"drop_last_mismatch"}])");
  CHECK(flip.flip_drop_last());
  CHECK_FALSE(flip.sampler_exhausted(1000));
  CHECK_FALSE(Hooks().flip_drop_last());
}

TEST_CASE("single-step hooks act at exactly their step", "[hooks]") {
  const Hooks hooks = Hooks::parse(R"([
    {"kind":"exception","at_step":3,"message":"boom"},
    {"kind":"extra_collective","at_step":4,"numel":8},
    {"kind":"nan_skip","at_step":5},
    {"kind":"mismatched_collective","at_step":6,"numel":9}
  ])");
  for (int step = 1; step <= 8; ++step) {
    INFO("step " << step);
    CHECK((hooks.exception_at(step) != nullptr) == (step == 3));
    CHECK((hooks.extra_collective_at(step) != nullptr) == (step == 4));
    CHECK((hooks.nan_loss_at(step) != nullptr) == (step == 5));
    CHECK((hooks.mismatched_collective_at(step) != nullptr) == (step == 6));
    CHECK_FALSE(hooks.should_skip_grad_allreduce(step));
  }
  CHECK(hooks.exception_at(3)->message == "boom");
  CHECK(*hooks.extra_collective_at(4)->numel == 8);
  CHECK(*hooks.mismatched_collective_at(6)->numel == 9);
}

TEST_CASE("alloc_growth adds up from step N on", "[hooks]") {
  const Hooks hooks = Hooks::parse(R"([
    {"kind":"alloc_growth","at_step":3,"mb_per_step":10},
    {"kind":"alloc_growth","at_step":5,"mb_per_step":1}
  ])");
  CHECK(hooks.alloc_growth_mb(2) == 0);
  CHECK(hooks.alloc_growth_mb(3) == 10);
  CHECK(hooks.alloc_growth_mb(4) == 10);
  CHECK(hooks.alloc_growth_mb(5) == 11);
  CHECK(hooks.alloc_growth_mb(50) == 11);
}

TEST_CASE("at_unix acts at the first step that starts at or after that time", "[hooks]") {
  const double when = 1700000100.0;
  Hooks hooks = Hooks::parse(R"([
    {"kind":"skip_collective","at_unix":1700000100.0,"count":2},
    {"kind":"uneven_batches","at_unix":1700000100.0},
    {"kind":"nan_skip","at_unix":1700000100.0}
  ])");
  hooks.begin_step(1, when - 10);
  hooks.begin_step(2, when - 0.001);
  CHECK_FALSE(hooks.should_skip_grad_allreduce(1));
  CHECK_FALSE(hooks.should_skip_grad_allreduce(2));
  CHECK_FALSE(hooks.sampler_exhausted(2));
  CHECK_FALSE(hooks.nan_loss_at(2));
  hooks.begin_step(3, when);  // exactly at the time counts
  CHECK(hooks.should_skip_grad_allreduce(3));
  CHECK(hooks.sampler_exhausted(3));
  CHECK(hooks.nan_loss_at(3) != nullptr);
  hooks.begin_step(4, when + 1);
  CHECK(hooks.should_skip_grad_allreduce(4));  // count 2: steps 3 and 4
  CHECK(hooks.nan_loss_at(4) == nullptr);      // resolved once, not re-triggered
  hooks.begin_step(5, when + 2);
  CHECK_FALSE(hooks.should_skip_grad_allreduce(5));
  CHECK_FALSE(hooks.should_skip_grad_allreduce(2));  // not retroactive
}

TEST_CASE("hook_specs document every kind, and every documented default parses", "[hooks]") {
  const auto& specs = hanglab::hook_specs();
  REQUIRE(specs.size() == 7);
  for (const auto& spec : specs) {
    INFO(spec.kind);
    std::string obj = std::string("{\"kind\":\"") + spec.kind + "\"";
    bool has_at_step = false;
    for (const auto& key : spec.keys) {
      const std::string name = key.name;
      const std::string type = key.type;
      has_at_step = has_at_step || name == "at_step";
      if (std::string(key.default_value).empty()) continue;  // absent by default
      obj += ",\"" + name + "\":";
      obj += type == "string" ? "\"" + std::string(key.default_value) + "\"" : std::string(key.default_value);
    }
    obj += "}";
    CHECK(has_at_step);
    CHECK(parse_error("[" + obj + "]").empty());
  }
}
