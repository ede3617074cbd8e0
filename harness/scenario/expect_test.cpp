// Tests for the expectation checker: every rule passes and fails on hand-built facts,
// and verdicts combine into the documented exit codes.
#include <catch2/catch.hpp>

#include "scenario/expect.hpp"

using namespace hanglab;

namespace {

constexpr double kStart = 1000.0;  // launch time
constexpr double kFault = 1010.0;  // first fault firing

Scenario scenario_with_fault() {
  Scenario sc;
  sc.name = "t";
  sc.workload.world_size = 4;
  FaultSpec f;
  f.kind = "skip_collective";
  f.ranks = {1};
  sc.faults.push_back(f);
  return sc;
}

// A hang: the fault fired at +10 s after launch, the backend timed out 5 s later, the
// watchdog 8 s later.
RunFacts hang_facts() {
  RunFacts f;
  f.start_t = kStart;
  f.end_t = kStart + 30;
  f.outcome = "hang";
  f.teardown_reason = "hang";
  f.faults.push_back({"skip_collective", {1}, kFault, "skipped allreduce seq 17"});
  f.manifests.push_back({0, "skip_collective", true, true, "rank 1 traced `fault` skip_collective", {}});
  f.detections.push_back({"backend_timeout", 0, kFault + 5.0, "Timed out"});
  f.detections.push_back({"backend_timeout", 2, kFault + 5.5, "Timed out"});
  f.detections.push_back({"harness_watchdog", -1, kFault + 8.0, "no progress for 10 s"});
  return f;
}

TriageResult mismatch_triage() {
  TriageResult t;
  t.world_size = 4;
  t.category = "collective_mismatch";
  t.cause = "skipped_collective";
  t.phase = "training";
  t.scope = "subset";
  t.missing_ranks = {1};
  t.last_good_step = 4;
  for (int r = 0; r < 4; ++r) {
    RankTimeline tl;
    tl.rank = r;
    tl.liveness = "hung";
    t.per_rank.push_back(tl);
  }
  return t;
}

const Check& find_check(const Verdict& v, const std::string& name) {
  for (const Check& c : v.checks)
    if (c.name == name) return c;
  FAIL("no check named " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("outcome", "[expect]") {
  Scenario sc = scenario_with_fault();
  TriageResult tr = mismatch_triage();

  sc.expect.outcome = "hang";
  Verdict v = check_expectations(sc, hang_facts(), tr);
  REQUIRE(v.checks.size() == 2);  // + fault_manifested, which every fault gets
  CHECK(v.checks[1].name == "fault_manifested");
  CHECK(v.checks[0].name == "outcome");
  CHECK(v.checks[0].status == "pass");
  CHECK(v.checks[0].expected == "hang");
  CHECK(v.checks[0].actual == "hang");
  CHECK(v.status == "pass");

  sc.expect.outcome = "completed";
  v = check_expectations(sc, hang_facts(), tr);
  CHECK(v.checks[0].status == "fail");
  CHECK(v.checks[0].actual == "hang");
  CHECK(v.checks[0].reason == "expected outcome completed, the run ended hang (teardown: hang)");
  CHECK(v.status == "fail");

  SECTION("slow = completed with a straggler") {
    RunFacts facts = hang_facts();
    facts.outcome = "completed";
    sc.expect.outcome = "slow";
    tr.category = "straggler";
    v = check_expectations(sc, facts, tr);
    CHECK(v.checks[0].status == "pass");
    CHECK(v.checks[0].actual == "completed (triage: straggler)");

    tr.category = "none";
    v = check_expectations(sc, facts, tr);
    CHECK(v.checks[0].status == "fail");
    CHECK(v.checks[0].actual == "completed (triage: none)");

    v = check_expectations(sc, facts, TriageResult{});
    CHECK(v.checks[0].status == "unknown");

    facts.outcome = "hang";
    tr.category = "straggler";
    v = check_expectations(sc, facts, tr);
    CHECK(v.checks[0].status == "fail");
  }
  SECTION("no outcome recorded is unknown") {
    RunFacts facts = hang_facts();
    facts.outcome.clear();
    facts.teardown_reason = "error";
    sc.expect.outcome = "hang";
    v = check_expectations(sc, facts, tr);
    CHECK(v.checks[0].status == "unknown");
    CHECK(v.checks[0].reason == "run facts incomplete: no outcome recorded (teardown: error)");
    CHECK(v.status == "unknown");
  }
}

TEST_CASE("detected_by and not_detected_by", "[expect]") {
  Scenario sc = scenario_with_fault();
  sc.expect.detected_by = {"backend_timeout", "exit_monitor"};
  sc.expect.not_detected_by = {"heartbeat_loss", "harness_watchdog"};
  Verdict v = check_expectations(sc, hang_facts(), mismatch_triage());
  REQUIRE(v.checks.size() == 5);  // + fault_manifested

  const Check& bt = find_check(v, "detected_by.backend_timeout");
  CHECK(bt.status == "pass");
  CHECK(bt.expected == "fired");
  CHECK(bt.actual == "fired at +5.00 s (rank 0: Timed out)");
  const Check& em = find_check(v, "detected_by.exit_monitor");
  CHECK(em.status == "fail");
  CHECK(em.actual == "not fired");
  CHECK(em.reason == "exit_monitor did not fire");
  CHECK(find_check(v, "not_detected_by.heartbeat_loss").status == "pass");
  const Check& wd = find_check(v, "not_detected_by.harness_watchdog");
  CHECK(wd.status == "fail");
  CHECK(wd.actual == "fired at +8.00 s (job-wide: no progress for 10 s)");
  CHECK(wd.reason == "harness_watchdog fired but must not");
  CHECK(v.status == "fail");

  SECTION("an incomplete run cannot prove silence, but a firing still counts") {
    RunFacts facts = hang_facts();
    facts.outcome.clear();
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "detected_by.backend_timeout").status == "pass");
    CHECK(find_check(v, "detected_by.exit_monitor").status == "unknown");
    CHECK(find_check(v, "not_detected_by.heartbeat_loss").status == "unknown");
    CHECK(find_check(v, "not_detected_by.harness_watchdog").status == "fail");
    CHECK(v.status == "fail");
  }
}

TEST_CASE("the triage detector fires when triage names a category", "[expect]") {
  Scenario sc = scenario_with_fault();
  sc.expect.detected_by = {"triage"};
  TriageResult tr = mismatch_triage();
  Verdict v = check_expectations(sc, hang_facts(), tr);
  CHECK(v.checks[0].status == "pass");
  CHECK(v.checks[0].actual == "category collective_mismatch");

  for (const char* cat : {"none", "unknown"}) {
    tr.category = cat;
    v = check_expectations(sc, hang_facts(), tr);
    CHECK(v.checks[0].status == "fail");
  }
  v = check_expectations(sc, hang_facts(), TriageResult{});
  CHECK(v.checks[0].status == "unknown");

  sc.expect.detected_by.clear();
  sc.expect.not_detected_by = {"triage"};
  tr.category = "none";
  v = check_expectations(sc, hang_facts(), tr);
  CHECK(v.checks[0].name == "not_detected_by.triage");
  CHECK(v.checks[0].status == "pass");
  tr.category = "straggler";
  v = check_expectations(sc, hang_facts(), tr);
  CHECK(v.checks[0].status == "fail");
}

TEST_CASE("detected_within_s and not_before_s", "[expect]") {
  Scenario sc = scenario_with_fault();
  // triage has no firing time; harness_watchdog (+8 s) is not the first, backend_timeout (+5 s) is.
  sc.expect.detected_by = {"triage", "harness_watchdog", "backend_timeout"};
  sc.expect.detected_within_s = 6;
  sc.expect.not_before_s = 4.5;
  RunFacts facts = hang_facts();
  Verdict v = check_expectations(sc, facts, mismatch_triage());
  const Check& within = find_check(v, "detected_within_s");
  CHECK(within.status == "pass");
  CHECK(within.expected == "<= 6.00 s after the fault");
  CHECK(within.actual == "+5.00 s (backend_timeout)");
  const Check& before = find_check(v, "not_before_s");
  CHECK(before.status == "pass");
  CHECK(before.expected == ">= 4.50 s after the fault");
  CHECK(v.status == "pass");

  SECTION("too late") {
    sc.expect.detected_within_s = 4;
    sc.expect.not_before_s.reset();
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "detected_within_s").status == "fail");
    CHECK(find_check(v, "detected_within_s").reason == "first detection after 5.00 s, later than 4.00 s");
  }
  SECTION("too early: a premature alarm") {
    sc.expect.not_before_s = 5.5;
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "not_before_s").status == "fail");
    CHECK_THAT(find_check(v, "not_before_s").reason, Catch::Contains("premature"));
  }
  SECTION("a detection before the fault is not within the bound") {
    facts.detections.insert(facts.detections.begin(), Detection{"harness_watchdog", -1, kFault - 1, ""});
    sc.expect.not_before_s.reset();
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "detected_within_s").status == "fail");
    CHECK(find_check(v, "detected_within_s").reason == "harness_watchdog fired 1.00 s before the fault");
    CHECK(v.first_detection_s.at("harness_watchdog") == Approx(-1.0));
  }
  SECTION("the fault never fired") {
    facts.faults.clear();
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "detected_within_s").status == "fail");
    CHECK(find_check(v, "detected_within_s").reason == "fault never fired");
    CHECK(find_check(v, "not_before_s").status == "fail");
    // Without a fault firing, detections are timed from launch.
    CHECK(v.first_detection_s.at("backend_timeout") == Approx(15.0));
  }
  SECTION("nothing detected") {
    facts.detections.clear();
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "detected_within_s").status == "fail");
    CHECK(find_check(v, "detected_within_s").reason == "none of harness_watchdog, backend_timeout fired");
    CHECK(v.first_detection_s.empty());
    facts.outcome.clear();
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "detected_within_s").status == "unknown");
  }
  SECTION("a scenario without faults is timed from launch") {
    sc.faults.clear();
    facts.faults.clear();
    sc.expect.detected_within_s = 16;
    sc.expect.not_before_s = 14;
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "detected_within_s").status == "pass");
    CHECK(find_check(v, "detected_within_s").expected == "<= 16.00 s after launch");
    CHECK(find_check(v, "not_before_s").status == "pass");
  }
}

TEST_CASE("first_detection_s lists every detector's first firing after the fault", "[expect]") {
  Scenario sc = scenario_with_fault();
  sc.expect.outcome = "hang";
  Verdict v = check_expectations(sc, hang_facts(), mismatch_triage());
  CHECK(v.first_detection_s.size() == 2);
  CHECK(v.first_detection_s.at("backend_timeout") == Approx(5.0));
  CHECK(v.first_detection_s.at("harness_watchdog") == Approx(8.0));
}

TEST_CASE("triage fields are compared exactly, missing_ranks as sets", "[expect]") {
  Scenario sc = scenario_with_fault();
  TriageExpect& te = sc.expect.triage;
  te.category = "collective_mismatch";
  te.cause = "skipped_collective";
  te.phase = "training";
  te.scope = "subset";
  te.missing_ranks = std::vector<int>{1};
  te.last_good_step = 4;
  te.liveness = {{0, "hung"}, {3, "hung"}};
  TriageResult tr = mismatch_triage();
  Verdict v = check_expectations(sc, hang_facts(), tr);
  CHECK(v.checks.size() == 9);  // + fault_manifested
  CHECK(v.status == "pass");
  CHECK(find_check(v, "triage.missing_ranks").expected == "[1]");
  CHECK(find_check(v, "triage.liveness.3").actual == "hung");

  SECTION("mismatches fail") {
    tr.category = "rank_exit";
    tr.cause = "killed";
    tr.phase = "init";
    tr.scope = "all";
    tr.missing_ranks = {1, 2};
    tr.last_good_step = 3;
    tr.per_rank[3].liveness = "dead";
    v = check_expectations(sc, hang_facts(), tr);
    for (const char* name : {"triage.category", "triage.cause", "triage.phase", "triage.scope",
                             "triage.missing_ranks", "triage.last_good_step", "triage.liveness.3"}) {
      INFO(name);
      CHECK(find_check(v, name).status == "fail");
    }
    CHECK(find_check(v, "triage.liveness.0").status == "pass");
    CHECK(find_check(v, "triage.category").reason == "triage answered rank_exit, expected collective_mismatch");
    CHECK(find_check(v, "triage.missing_ranks").actual == "[1,2]");
  }
  SECTION("missing_ranks order does not matter") {
    te.missing_ranks = std::vector<int>{2, 1};
    tr.missing_ranks = {1, 2};
    v = check_expectations(sc, hang_facts(), tr);
    CHECK(find_check(v, "triage.missing_ranks").status == "pass");
  }
  SECTION("a rank absent from the answer is unknown") {
    tr.per_rank.pop_back();
    v = check_expectations(sc, hang_facts(), tr);
    CHECK(find_check(v, "triage.liveness.3").status == "unknown");
    CHECK(v.status == "unknown");
  }
  SECTION("no triage answer makes every triage check unknown") {
    v = check_expectations(sc, hang_facts(), TriageResult{});
    for (const Check& c : v.checks)
      if (c.name != "fault_manifested") CHECK(c.status == "unknown");
    CHECK(v.status == "unknown");
  }
}

TEST_CASE("a scenario without expectations is observed once the run has an outcome", "[expect]") {
  Verdict v = check_expectations(scenario_with_fault(), hang_facts(), mismatch_triage());
  CHECK(v.status == "observed");
  REQUIRE(v.checks.size() == 2);
  CHECK(v.checks[1].name == "fault_manifested");
  CHECK(v.checks[1].status == "pass");
  CHECK(v.checks[0].name == "expect");
  CHECK(v.checks[0].status == "observed");
  CHECK(v.checks[0].actual == "hang");
  CHECK_THAT(v.checks[0].reason, Catch::Contains("no expectations"));
  CHECK(exit_code_for({v}) == 0);

  RunFacts torn = hang_facts();
  torn.outcome.clear();
  torn.teardown_reason = "error";
  Verdict u = check_expectations(scenario_with_fault(), torn, mismatch_triage());
  CHECK(u.status == "unknown");
  CHECK(exit_code_for({u}) == 3);

  // A fault that had no effect fails an observed run too: it verified nothing.
  RunFacts idle = hang_facts();
  idle.manifests[0].exercised = false;
  Verdict f = check_expectations(scenario_with_fault(), idle, mismatch_triage());
  CHECK(f.status == "fail");
  CHECK(exit_code_for({f}) == 1);
}

TEST_CASE("overall status: fail beats unknown beats pass", "[expect]") {
  Scenario sc = scenario_with_fault();
  sc.expect.outcome = "hang";
  sc.expect.triage.category = "collective_mismatch";
  TriageResult none;  // no triage answer -> unknown
  CHECK(check_expectations(sc, hang_facts(), none).status == "unknown");
  sc.expect.detected_by = {"exit_monitor"};  // did not fire -> fail
  CHECK(check_expectations(sc, hang_facts(), none).status == "fail");
}

TEST_CASE("exit codes for a batch of verdicts", "[expect]") {
  auto verdict = [](const char* status) {
    Verdict v;
    v.status = status;
    return v;
  };
  Verdict pass = verdict("pass"), fail = verdict("fail"), unknown = verdict("unknown");
  Verdict skipped = skipped_verdict("needs root");
  CHECK(skipped.status == "skipped");
  CHECK(skipped.skip_reason == "needs root");

  CHECK(exit_code_for({pass}) == 0);
  CHECK(exit_code_for({pass, pass}) == 0);
  CHECK(exit_code_for({pass, skipped}) == 0);
  CHECK(exit_code_for({pass, fail}) == 1);
  CHECK(exit_code_for({unknown, fail, skipped}) == 1);
  CHECK(exit_code_for({pass, unknown}) == 3);
  CHECK(exit_code_for({skipped, unknown}) == 3);
  CHECK(exit_code_for({verdict("")}) == 3);
  CHECK(exit_code_for({skipped}) == 4);
  CHECK(exit_code_for({verdict("observed")}) == 0);
  CHECK(exit_code_for({verdict("observed"), skipped}) == 0);
  CHECK(exit_code_for({verdict("observed"), fail}) == 1);
  CHECK(exit_code_for({skipped, skipped}) == 4);
  CHECK(exit_code_for({}) == 3);
}

TEST_CASE("verdict JSON round-trips", "[expect]") {
  Scenario sc = scenario_with_fault();
  sc.expect.outcome = "completed";
  sc.expect.detected_by = {"backend_timeout"};
  Verdict v = check_expectations(sc, hang_facts(), mismatch_triage());
  nlohmann::json j = to_json(v);
  CHECK(j["status"] == "fail");
  CHECK(j["checks"].size() == 3);  // outcome, detected_by, fault_manifested
  CHECK(j["checks"][0]["name"] == "outcome");
  CHECK(j["checks"][0]["expected"] == "completed");
  CHECK(j["first_detection_s"]["backend_timeout"].get<double>() == Approx(5.0));
  CHECK_FALSE(j.contains("skip_reason"));

  Verdict back = verdict_from_json(j);
  CHECK(back.status == v.status);
  REQUIRE(back.checks.size() == v.checks.size());
  CHECK(back.checks[0].reason == v.checks[0].reason);
  CHECK(back.first_detection_s == v.first_detection_s);

  nlohmann::json s = to_json(skipped_verdict("needs cgroup v2"));
  CHECK(s["skip_reason"] == "needs cgroup v2");
  CHECK(verdict_from_json(s).skip_reason == "needs cgroup v2");
  CHECK(verdict_from_json(nlohmann::json("garbage")).status.empty());
}

TEST_CASE("fault_manifested: every fault must be exercised unless the scenario expects otherwise", "[expect]") {
  Scenario sc = scenario_with_fault();
  sc.expect.outcome = "hang";
  RunFacts facts = hang_facts();
  Verdict v = check_expectations(sc, facts, mismatch_triage());
  CHECK(v.status == "pass");
  CHECK(find_check(v, "fault_manifested").status == "pass");
  CHECK(find_check(v, "fault_manifested").expected == "exercised");

  SECTION("a fault that fired without effect fails the run, naming the evidence") {
    facts.manifests[0].exercised = false;
    facts.manifests[0].evidence = "no rank traced a `fault` event";
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(v.status == "fail");
    const Check& c = find_check(v, "fault_manifested");
    CHECK(c.status == "fail");
    CHECK(c.actual == "fired, no effect: no rank traced a `fault` event");
    CHECK(c.reason == "fault 0 (skip_collective) did not manifest");
    CHECK(exit_code_for({v}) == 1);
  }
  SECTION("fault_manifests = false expects no effect, and fails when there was one") {
    sc.expect.fault_manifests = false;
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "fault_manifested").status == "fail");
    CHECK_THAT(find_check(v, "fault_manifested").reason, Catch::Contains("expects it not to"));
    facts.manifests[0].exercised = false;
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "fault_manifested").status == "pass");
    CHECK(v.status == "pass");
  }
  SECTION("no judgment recorded (harness error, an old run) is unknown, not a pass") {
    facts.manifests.clear();
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "fault_manifested").status == "unknown");
    CHECK(v.status == "unknown");
  }
  SECTION("a scenario without [expect] still reports a fault that did not manifest") {
    sc.expect = ExpectSpec{};
    facts.manifests[0].exercised = false;
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "fault_manifested").status == "fail");
    CHECK(v.status == "fail");
  }
  SECTION("several faults are checked one by one") {
    sc.faults.push_back(sc.faults[0]);
    facts.manifests.push_back({1, "skip_collective", false, false, "never fired", {}});
    v = check_expectations(sc, facts, mismatch_triage());
    CHECK(find_check(v, "fault_manifested.0").status == "pass");
    CHECK(find_check(v, "fault_manifested.1").status == "fail");
    CHECK(find_check(v, "fault_manifested.1").actual == "never fired: never fired");
  }
}

TEST_CASE("[expect.torchrun] is checked against what torchrun did", "[expect]") {
  Scenario sc = scenario_with_fault();
  sc.workload.launcher = "torchrun";
  sc.expect.torchrun.restarted = 0;
  sc.expect.torchrun.tore_down = true;
  sc.expect.torchrun.hung_in_teardown = false;
  sc.expect.torchrun.root_cause_rank = 0;
  RunFacts f = hang_facts();
  const TriageResult t = mismatch_triage();

  SECTION("no torchrun account: unknown, never pass") {
    Verdict v = check_expectations(sc, f, t);
    CHECK(find_check(v, "torchrun.restarted").status == "unknown");
    CHECK(find_check(v, "torchrun.root_cause_rank").status == "unknown");
    CHECK(v.status != "pass");
  }
  TorchrunFacts tf;
  tf.closing_signals = 2;
  tf.tore_down = true;
  TorchrunFailure root;
  root.rank = 0;
  root.exitcode = 1;
  tf.root_cause = root;
  SECTION("what torchrun did matches") {
    f.torchrun = tf;
    Verdict v = check_expectations(sc, f, t);
    for (const char* n : {"torchrun.restarted", "torchrun.tore_down", "torchrun.hung_in_teardown",
                          "torchrun.root_cause_rank"})
      CHECK(find_check(v, n).status == "pass");
    CHECK(find_check(v, "torchrun.root_cause_rank").actual == "0");
  }
  SECTION("each differing fact fails on its own") {
    tf.restarts = 1;
    tf.hung_in_teardown = true;
    tf.sigkill_escalation = true;
    tf.root_cause->rank = 2;
    f.torchrun = tf;
    Verdict v = check_expectations(sc, f, t);
    CHECK(find_check(v, "torchrun.restarted").status == "fail");
    CHECK(find_check(v, "torchrun.restarted").actual == "1");
    CHECK(find_check(v, "torchrun.hung_in_teardown").status == "fail");
    CHECK(find_check(v, "torchrun.hung_in_teardown").reason.find("SIGKILL escalation true") != std::string::npos);
    CHECK(find_check(v, "torchrun.root_cause_rank").status == "fail");
    CHECK(find_check(v, "torchrun.tore_down").status == "pass");
    CHECK(v.status == "fail");
  }
  SECTION("no failure summary: root_cause_rank fails and says so") {
    tf.root_cause.reset();
    f.torchrun = tf;
    Check c = find_check(check_expectations(sc, f, t), "torchrun.root_cause_rank");
    CHECK(c.status == "fail");
    CHECK(c.reason.find("no failure summary") != std::string::npos);
  }
}
