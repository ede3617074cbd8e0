// Unit tests of the pure parts of `hanglab validate`: the settings file and its errors,
// percentile and margin math, the phase measurement from canned rank traces, the
// recommendation, the scenario [timeouts] substitution, and the classification of
// canned runs into false positives, misses and late detections.
#include <catch2/catch.hpp>

#include <toml++/toml.h>

#include "scenario/config_error.hpp"
#include "validate/validate.hpp"

using namespace hanglab;
using nlohmann::json;

namespace {

const char* kGood = R"(# proposed for the 1k-rank job
[timeouts]
init_s = 60
collective_s = 5
progress_s = 10.5
heartbeat_s = 1
checkpoint_s = 20

[validate]
slack_s = 1.5
margin_factor = 4
margin_add_s = 1
cost_ranks = [8, 512]
)";

ConfigError parse_error(const std::string& text) {
  try {
    parse_validate_settings(text, "s.toml");
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("no ConfigError for:\n" << text);
  throw std::logic_error("unreachable");
}

json ev(double t, int rank, const std::string& kind, json extra = json::object()) {
  json j = {{"t", t}, {"rank", rank}, {"ev", kind}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}
json phase(double t, int rank, const std::string& name, const std::string& edge, int step) {
  return ev(t, rank, "phase", {{"name", name}, {"edge", edge}, {"step", step}});
}
json coll(double t, int rank, const std::string& edge, int seq, const std::string& op, int step) {
  return ev(t, rank, "coll", {{"edge", edge}, {"seq", seq}, {"op", op}, {"numel", 10}, {"step", step}});
}
json step(double t, int rank, int s, double dur_ms) {
  return ev(t, rank, "step", {{"step", s}, {"dur_ms", dur_ms}, {"loss", 0.5}});
}

// Two ranks: init, a slow first allreduce (1.5 s warm-up on both), steps 1-3, then a
// checkpoint at step 3 where rank 0 saves for 3 s while rank 1 waits in the barrier.
std::map<int, std::vector<json>> canned_traces() {
  std::map<int, std::vector<json>> t;
  for (int r = 0; r < 2; ++r) {
    auto& e = t[r];
    e.push_back(ev(100.0, r, "start"));
    e.push_back(phase(100.0, r, "init", "begin", 0));
    e.push_back(ev(100.5, r, "hb"));
    e.push_back(coll(101.0, r, "begin", 1, "broadcast", 0));
    e.push_back(coll(101.01, r, "end", 1, "broadcast", 0));
    e.push_back(phase(101.01, r, "init", "end", 0));
    // step 1: backward begins, 1.5 s warm-up, then the first allreduce.
    e.push_back(phase(101.1, r, "backward", "begin", 1));
    e.push_back(ev(101.6, r, "hb"));
    e.push_back(coll(102.6, r, "begin", 2, "allreduce", 1));
    e.push_back(coll(102.62, r, "end", 2, "allreduce", 1));
    e.push_back(step(102.62, r, 1, 1620));
    e.push_back(coll(102.70, r, "begin", 3, "allreduce", 2));
    e.push_back(coll(102.72, r, "end", 3, "allreduce", 2));
    e.push_back(step(102.72, r, 2, 100));
    e.push_back(coll(102.85, r, "begin", 4, "allreduce", 3));
    e.push_back(coll(102.86, r, "end", 4, "allreduce", 3));
    e.push_back(step(102.86, r, 3, 140));
    e.push_back(phase(102.86, r, "checkpoint", "begin", 3));
  }
  // rank 0 saves for 3 s, then enters the barrier; rank 1 waits in it all along.
  t[0].push_back(ev(103.86, 0, "hb"));
  t[0].push_back(coll(105.86, 0, "begin", 5, "barrier", 3));
  t[0].push_back(coll(105.87, 0, "end", 5, "barrier", 3));
  t[0].push_back(phase(105.87, 0, "checkpoint", "end", 3));
  t[1].push_back(coll(102.87, 1, "begin", 5, "barrier", 3));
  t[1].push_back(ev(103.87, 1, "hb"));
  t[1].push_back(coll(105.87, 1, "end", 5, "barrier", 3));
  t[1].push_back(phase(105.87, 1, "checkpoint", "end", 3));
  for (int r = 0; r < 2; ++r) t[r].push_back(ev(105.9, r, "exit", {{"code", 0}}));
  return t;
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

RunFacts facts(double start) {
  RunFacts f;
  f.start_t = start;
  f.end_t = start + 10;
  f.outcome = "completed";
  f.teardown_reason = "all_exited";
  return f;
}

Timeouts proposal() {
  Timeouts t;
  t.init_s = 30;
  t.collective_s = 2;
  t.progress_s = 10;
  t.heartbeat_s = 1;
  return t;
}

}  // namespace

TEST_CASE("settings: a full file parses", "[validate]") {
  ValidateSettings s = parse_validate_settings(kGood, "s.toml");
  CHECK(s.timeouts.init_s == 60);
  CHECK(s.timeouts.collective_s == 5);
  CHECK(s.timeouts.progress_s == 10.5);
  CHECK(s.timeouts.heartbeat_s == 1);
  REQUIRE(s.timeouts.checkpoint_s);
  CHECK(*s.timeouts.checkpoint_s == 20);
  CHECK_FALSE(s.timeouts.eval_s);
  CHECK(s.slack_s == 1.5);
  CHECK(s.margin.factor == 4);
  CHECK(s.margin.add_s == 1);
  CHECK(s.cost_ranks == std::vector<int>{8, 512});
}

TEST_CASE("settings: defaults of [validate]", "[validate]") {
  ValidateSettings s =
      parse_validate_settings("[timeouts]\ninit_s = 1\ncollective_s = 2\nprogress_s = 3\nheartbeat_s = 0.5\n", "s.toml");
  CHECK(s.slack_s == 2);
  CHECK(s.margin.factor == 3);
  CHECK(s.margin.add_s == 2);
  CHECK(s.cost_ranks == std::vector<int>{8, 1024, 16384});
}

TEST_CASE("settings: every error names file:line:col and the key", "[validate]") {
  const std::string base = "[timeouts]\ninit_s = 1\ncollective_s = 2\nprogress_s = 3\nheartbeat_s = 1\n";
  SECTION("unknown key in [timeouts]") {
    auto e = parse_error(base + "colective_s = 4\n");
    CHECK(e.line() == 6);
    CHECK(e.col() == 1);
    CHECK(e.key() == "timeouts.colective_s");
    CHECK(std::string(e.what()).rfind("s.toml:6:1: timeouts.colective_s: unknown key", 0) == 0);
  }
  SECTION("unknown key in [validate]") {
    auto e = parse_error(base + "[validate]\nslack = 2\n");
    CHECK(e.line() == 7);
    CHECK(e.key() == "validate.slack");
  }
  SECTION("unknown table") {
    auto e = parse_error(base + "[expect]\noutcome = \"hang\"\n");
    CHECK(e.line() == 6);
    CHECK(e.key() == "expect");
  }
  SECTION("missing required key") {
    auto e = parse_error("[timeouts]\ninit_s = 1\ncollective_s = 2\nheartbeat_s = 1\n");
    CHECK(e.key() == "timeouts.progress_s");
    CHECK(e.line() == 1);
  }
  SECTION("missing [timeouts]") {
    auto e = parse_error("[validate]\nslack_s = 1\n");
    CHECK(e.key() == "timeouts");
  }
  SECTION("wrong type and range") {
    CHECK(parse_error(base + "eval_s = \"5\"\n").key() == "timeouts.eval_s");
    CHECK(parse_error("[timeouts]\ninit_s = 0\ncollective_s = 2\nprogress_s = 3\nheartbeat_s = 1\n").key() ==
          "timeouts.init_s");
    CHECK(parse_error(base + "[validate]\nmargin_factor = 0.5\n").key() == "validate.margin_factor");
    CHECK(parse_error(base + "[validate]\ncost_ranks = [8, -1]\n").key() == "validate.cost_ranks");
    CHECK(parse_error(base + "[validate]\nslack_s = -1\n").key() == "validate.slack_s");
  }
  SECTION("the first error in file order wins") {
    auto e = parse_error("[timeouts]\nzzz = 1\ninit_s = 1\ncollective_s = 2\nprogress_s = 3\nheartbeat_s = 1\naaa = 2\n");
    CHECK(e.key() == "timeouts.zzz");
    CHECK(e.line() == 2);
  }
  SECTION("TOML syntax error") {
    auto e = parse_error("[timeouts\n");
    CHECK(e.line() == 1);
  }
}

TEST_CASE("percentile interpolates between the closest ranks", "[validate]") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  CHECK(percentile(v, 50) == Approx(50.5));
  CHECK(percentile(v, 99) == Approx(99.01));
  CHECK(percentile(v, 100) == 100);
  CHECK(percentile(v, 0) == 1);
  CHECK(percentile({7}, 99) == 7);
  CHECK(percentile({}, 50) == 0);
  CHECK(percentile({1, 2}, 50) == Approx(1.5));
  Distribution d = summarize({3, 1, 2});
  CHECK(d.n == 3);
  CHECK(d.p50 == 2);
  CHECK(d.p99 == Approx(2.98));
  CHECK(d.max == 3);
}

TEST_CASE("margin: the larger of factor x p99 and max + add", "[validate]") {
  MarginRule m;  // 3x, +2 s
  Distribution long_phase{10, 3.0, 3.0, 3.0};
  CHECK(margin_value(long_phase, m) == Approx(9.0));  // 3 x 3.0 > 3.0 + 2
  Distribution short_phase{10, 0.1, 0.2, 0.25};
  CHECK(margin_value(short_phase, m) == Approx(2.25));  // 0.25 + 2 > 3 x 0.2
  CHECK(margin_value(Distribution{}, m) == 0);
  CHECK(round_up_setting(4.01) == 4.5);
  CHECK(round_up_setting(4.5) == 4.5);
  CHECK(round_up_setting(9.6) == 10);
  CHECK(round_up_setting(12.2) == 13);
  CHECK(round_up_setting(0.3) == 0.5);
}

TEST_CASE("phase durations are measured from rank traces", "[validate]") {
  TraceSummary s = summarize_traces(canned_traces());
  REQUIRE(s.samples["init"].size() == 2);
  CHECK(s.samples["init"][0] == Approx(1.01));
  // Steady-state steps only: step 1 carries the warm-up.
  CHECK(s.samples["step"].size() == 4);
  CHECK(max_of(s.samples["step"]) == Approx(0.14));
  // From the last event before the first training allreduce (backward begin) to its end.
  REQUIRE(s.samples["first_collective"].size() == 2);
  CHECK(s.samples["first_collective"][0] == Approx(1.52));
  REQUIRE(s.samples["checkpoint"].size() == 2);
  CHECK(max_of(s.samples["checkpoint"]) == Approx(3.01));
  // The longest healthy wait in a collective: rank 1 in the barrier while rank 0 saves.
  CHECK(max_of(s.samples["collective_wait"]) == Approx(3.0));
  // Job-wide silence excludes the checkpoint; the warm-up gap is the longest left.
  CHECK(max_of(s.samples["silence"]) == Approx(1.5));
  // Heartbeat gaps: any trace line counts as a sign of life.
  CHECK(max_of(s.samples["heartbeat_gap"]) == Approx(2.0));
  // Spans: init and checkpoint per rank, all closed.
  int ckpt = 0;
  for (const auto& sp : s.spans) {
    CHECK(sp.end);
    ckpt += sp.name == "checkpoint";
  }
  CHECK(ckpt == 2);
  CHECK(s.samples["eval"].empty());
}

TEST_CASE("recommendation: per-phase timeouts from the measured durations", "[validate]") {
  TraceSummary s = summarize_traces(canned_traces());
  std::map<std::string, Distribution> stats;
  for (const auto& [k, v] : s.samples) stats[k] = summarize(v);
  Timeouts prop = proposal();
  Recommendation rec = recommend(stats, prop, MarginRule{});
  // collective_s clears the checkpoint (3.01 s, p99 ~3.01) -> 3 x p99 = 9.03 -> 9.5.
  CHECK(rec.timeouts.collective_s == 9.5);
  CHECK(rec.timeouts.collective_s > 3.01);
  // progress_s: the warm-up silence (first_collective 1.52 s) -> 3 x 1.52 = 4.56 -> 5.
  CHECK(rec.timeouts.progress_s == 5);
  REQUIRE(rec.timeouts.checkpoint_s);
  CHECK(*rec.timeouts.checkpoint_s == 9.5);
  // No eval measured: eval_s falls back to progress_s.
  REQUIRE(rec.timeouts.eval_s);
  CHECK(*rec.timeouts.eval_s == rec.timeouts.progress_s);
  // init: 1.01 s -> max + 2 = 3.01 > 3 x p99 = 3.03? no: 3 x 1.01 = 3.03 -> 3.5.
  CHECK(rec.timeouts.init_s == 3.5);
  // heartbeat: the longest silence (2.0 s) fits in 2 periods of 1 s: kept.
  CHECK(rec.timeouts.heartbeat_s == 1);
  REQUIRE(rec.advice.size() == 6);
  CHECK(rec.advice[1].key == "collective_s");
  CHECK(rec.advice[1].healthy_max == Approx(3.01));
  CHECK(rec.advice[1].basis.find("checkpoint") != std::string::npos);

  // The TOML file round-trips through the settings parser.
  ValidateSettings vs;
  vs.file = "bad.toml";
  std::string toml = recommendation_toml(rec, vs, {"hanglab validate: test"});
  ValidateSettings back = parse_validate_settings(toml, "recommended.toml");
  CHECK(back.timeouts.collective_s == rec.timeouts.collective_s);
  CHECK(back.timeouts.progress_s == rec.timeouts.progress_s);
  CHECK(*back.timeouts.checkpoint_s == *rec.timeouts.checkpoint_s);
  CHECK(back.cost_ranks == vs.cost_ranks);
}

TEST_CASE("recommendation: a heartbeat period too short for the longest silence is raised", "[validate]") {
  std::map<std::string, Distribution> stats;
  stats["heartbeat_gap"] = Distribution{10, 1, 2.5, 2.6};
  Recommendation rec = recommend(stats, proposal(), MarginRule{});
  CHECK(rec.timeouts.heartbeat_s == 1.5);  // 2.6 / 2 = 1.3 -> 1.5
  // Nothing else measured: kept as proposed.
  CHECK(rec.timeouts.collective_s == 2);
  CHECK(rec.timeouts.progress_s == 10);
}

TEST_CASE("classification: an alarm on a healthy run is a false positive of the setting behind it", "[validate]") {
  auto traces = canned_traces();
  RunObservation run;
  run.scenario = "healthy_slow_phases";
  run.run_dir = "r1";
  run.healthy = true;
  run.spans = summarize_traces(traces).spans;
  run.facts = facts(100);
  run.facts.outcome = "hang";
  // Rank 1 times out in the checkpoint barrier (collective_s = 2 < the 3 s save) ...
  run.facts.detections.push_back({"backend_timeout", 1, 104.9, "Timed out waiting 2000ms for recv"});
  // ... and its exit is an echo; a second rank's timeout is the same false positive.
  run.facts.detections.push_back({"exit_monitor", 1, 104.95, "rank 1 exited with code 11"});
  run.facts.detections.push_back({"backend_timeout", 2, 104.91, "Timed out waiting 2000ms for recv"});
  PassResult p = classify_pass("proposed", {run}, proposal(), 2);
  CHECK_FALSE(p.pass());
  REQUIRE(p.count("false_positive") == 2);
  CHECK(p.findings[0].detector == "backend_timeout");
  CHECK(p.findings[0].setting == "collective_s");
  CHECK(p.findings[0].at_s == Approx(4.9));
  CHECK(p.findings[0].ranks == std::vector<int>{1, 2});
  CHECK(p.findings[0].detail.rfind("during checkpoint: Timed out", 0) == 0);
  CHECK(p.findings[1].setting == "collective_s");
  CHECK(p.findings[1].detail.find("echo") != std::string::npos);
  CHECK(p.healthy_runs == 1);
  std::string text = render_pass(p, nullptr, {8, 1024, 16384});
  CHECK(text.find("FAIL (2 false positives, 0 misses, 0 late detections)") != std::string::npos);
  CHECK(text.find("backend_timeout ranks 1,2 at +4.90 s after launch [collective_s = 2 s]") != std::string::npos);
}

TEST_CASE("classification: the watchdog inside a checkpoint is checkpoint_s's business", "[validate]") {
  auto spans = summarize_traces(canned_traces()).spans;
  Timeouts t = proposal();
  CHECK(setting_for_detection("harness_watchdog", -1, 104, spans, t) == "progress_s");
  t.checkpoint_s = 1;
  CHECK(setting_for_detection("harness_watchdog", -1, 104, spans, t) == "checkpoint_s");
  CHECK(setting_for_detection("harness_watchdog", -1, 106.5, spans, t) == "progress_s");
  CHECK(setting_for_detection("backend_timeout", 0, 100.5, spans, t) == "init_s");
  CHECK(setting_for_detection("backend_timeout", 0, 104, spans, t) == "collective_s");
  CHECK(setting_for_detection("heartbeat_loss", 0, 104, spans, t) == "heartbeat_s");
  CHECK(setting_for_detection("exit_monitor", 0, 104, spans, t).empty());
  CHECK(setting_value("heartbeat_s", t) == 3);
  CHECK(setting_value("checkpoint_s", t) == 1);
  CHECK(setting_value("eval_s", t) == t.progress_s);
}

TEST_CASE("classification: faults are caught, late, or missed", "[validate]") {
  Timeouts t = proposal();
  t.collective_s = 5;
  auto fault_run = [](const std::string& name, double fault_t) {
    RunObservation r;
    r.scenario = name;
    r.run_dir = name + "-dir";
    r.facts = facts(100);
    r.facts.faults.push_back({"kill_rank", {2}, fault_t, "SIGKILL"});
    return r;
  };
  SECTION("caught at once: pass, latencies recorded") {
    auto r = fault_run("kill_rank", 103);
    r.facts.detections = {{"exit_monitor", 2, 103.02, ""}, {"backend_error", 0, 103.05, ""}};
    PassResult p = classify_pass("proposed", {r}, t, 2);
    CHECK(p.pass());
    REQUIRE(p.latencies.size() == 2);
    CHECK(p.latencies[0].detector == "exit_monitor");
    CHECK(p.latencies[0].first);
    CHECK(p.latencies[0].latency_s == Approx(0.02));
    CHECK(p.latencies[1].detector == "backend_error");
    CHECK_FALSE(p.latencies[1].first);
  }
  SECTION("late: first detection beyond the setting + slack") {
    auto r = fault_run("skip_collective_linger", 103);
    r.facts.detections = {{"backend_timeout", 0, 110.5, ""}, {"harness_watchdog", -1, 118, ""}};
    PassResult p = classify_pass("proposed", {r}, t, 2);  // 7.5 s > 5 + 2
    REQUIRE(p.count("late") == 1);
    CHECK(p.findings[0].setting == "collective_s");
    CHECK(p.findings[0].detector == "backend_timeout");
    // Within slack it is fine.
    PassResult q = classify_pass("proposed", {r}, t, 3);
    CHECK(q.pass());
  }
  SECTION("missed: no detector fired after the fault") {
    auto r = fault_run("freeze_rank", 103);
    r.facts.outcome = "hang";
    PassResult p = classify_pass("proposed", {r}, t, 2);
    REQUIRE(p.count("miss") == 1);
    r.detection_required = false;  // e.g. a straggler scenario only triage should name
    CHECK(classify_pass("proposed", {r}, t, 2).pass());
  }
  SECTION("an alarm before the fault is a false positive") {
    auto r = fault_run("kill_rank", 103);
    r.facts.detections = {{"heartbeat_loss", 1, 102, ""}, {"exit_monitor", 2, 103.01, ""}};
    PassResult p = classify_pass("proposed", {r}, t, 2);
    REQUIRE(p.count("false_positive") == 1);
    CHECK(p.findings[0].setting == "heartbeat_s");
    CHECK(p.latencies.size() == 1);
  }
  SECTION("a fault that never fired validates nothing") {
    RunObservation r;
    r.scenario = "kill_rank";
    r.facts = facts(100);
    CHECK(classify_pass("proposed", {r}, t, 2).count("miss") == 1);
  }
  SECTION("skipped runs are counted, not judged; no runs at all is not a pass") {
    RunObservation r;
    r.skipped = true;
    PassResult p = classify_pass("proposed", {r}, t, 2);
    CHECK(p.skipped_runs == 1);
    CHECK_FALSE(p.pass());
  }
}

TEST_CASE("GPU cost of a detection latency", "[validate]") {
  CHECK(gpu_hours(3600, 8) == Approx(8));
  CHECK(gpu_hours(5, 16384) == Approx(5 * 16384 / 3600.0));
  CHECK(gpu_hours(-1, 8) == 0);
}

TEST_CASE("scenario [timeouts] substitution keeps the rest of the file", "[validate]") {
  const std::string text =
      "# Reproduces: x\n# Expected: y\n[scenario]\nname = \"a\"\n\n[timeouts]  # old\ninit_s = 30\ncollective_s = 5\n"
      "\n[[fault]]\nkind = \"kill_rank\"\nranks = [1]\n";
  Timeouts t = proposal();
  t.checkpoint_s = 7.5;
  std::string out = scenario_with_timeouts(text, t, "hanglab validate: replaced");
  CHECK(out.rfind("# Reproduces: x\n# Expected: y\n", 0) == 0);
  toml::table root = toml::parse(out);
  CHECK(root["timeouts"]["collective_s"].value<double>() == 2);
  CHECK(root["timeouts"]["checkpoint_s"].value<double>() == 7.5);
  CHECK(root["fault"][0]["kind"].value<std::string>() == "kill_rank");
  CHECK(out.find("hanglab validate: replaced") != std::string::npos);
  // No [timeouts] at all: appended.
  std::string added = scenario_with_timeouts("[scenario]\nname = \"b\"\n", t, "n");
  CHECK(toml::parse(added)["timeouts"]["progress_s"].value<double>() == 10);
}
