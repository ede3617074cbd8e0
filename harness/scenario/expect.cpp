// Expectation checking. Times are compared relative to the first fault firing because
// that is what a timeout setting bounds; runs without a fired fault fall back to launch.
#include "scenario/expect.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "detect/registry.hpp"
#include "util.hpp"

namespace hanglab {

namespace {

constexpr const char* kPass = "pass";
constexpr const char* kFail = "fail";
constexpr const char* kUnknown = "unknown";
constexpr const char* kObserved = "observed";

std::string seconds(double s) { return fmt::format("{:.2f} s", s); }

// "[1]", "[0-36,38-63]": the compressed form people read (util.hpp: rank_ranges).
std::string rank_list(const std::vector<int>& ranks) { return "[" + rank_ranges(ranks) + "]"; }

// Everything the individual rules need, computed once.
class Checker {
 public:
  Checker(const Scenario& sc, const RunFacts& facts, const TriageResult& triage)
      : sc_(sc), facts_(facts), triage_(triage) {
    for (const Detection& d : facts.detections) {
      auto it = first_.find(d.detector);
      if (it == first_.end() || d.t < it->second->t) first_[d.detector] = &d;
    }
    for (const FaultFiring& f : facts.faults)
      if (!fault_t_ || f.t < *fault_t_) fault_t_ = f.t;
    if (fault_t_)
      base_t_ = fault_t_;
    else if (facts.start_t > 0)
      base_t_ = facts.start_t;
  }

  Verdict run() {
    Verdict v;
    if (base_t_) {
      for (const auto& [name, d] : first_) v.first_detection_s[name] = d->t - *base_t_;
    }
    const ExpectSpec& ex = sc_.expect;
    if (ex.outcome) v.checks.push_back(check_outcome(*ex.outcome));
    for (const std::string& d : ex.detected_by) v.checks.push_back(check_detected(d, true));
    for (const std::string& d : ex.not_detected_by) v.checks.push_back(check_detected(d, false));
    if (ex.detected_within_s) v.checks.push_back(check_timing("detected_within_s", *ex.detected_within_s, true));
    if (ex.not_before_s) v.checks.push_back(check_timing("not_before_s", *ex.not_before_s, false));

    const TriageExpect& tr = ex.triage;
    if (tr.category) v.checks.push_back(check_triage_field("category", *tr.category, triage_.category));
    if (tr.cause) v.checks.push_back(check_triage_field("cause", *tr.cause, triage_.cause));
    if (tr.phase) v.checks.push_back(check_triage_field("phase", *tr.phase, triage_.phase));
    if (tr.scope) v.checks.push_back(check_triage_field("scope", *tr.scope, triage_.scope));
    if (tr.missing_ranks) {
      std::set<int> want(tr.missing_ranks->begin(), tr.missing_ranks->end());
      std::set<int> got(triage_.missing_ranks.begin(), triage_.missing_ranks.end());
      v.checks.push_back(compare_triage("triage.missing_ranks", rank_list(*tr.missing_ranks),
                                        rank_list(triage_.missing_ranks), want == got));
    }
    if (tr.last_good_step)
      v.checks.push_back(compare_triage("triage.last_good_step", std::to_string(*tr.last_good_step),
                                        std::to_string(triage_.last_good_step),
                                        *tr.last_good_step == triage_.last_good_step));
    for (const auto& [rank, state] : tr.liveness) v.checks.push_back(check_liveness(rank, state));
    add_torchrun_checks(ex.torchrun, v.checks);

    // No [expect] at all: "run it and show me what happens". The verdict is `observed`
    // (exit 0) once the run finished with an outcome, unless a default check below fails;
    // the report says what happened.
    const bool user_checks = !v.checks.empty();
    if (!user_checks) {
      if (!complete())
        v.checks.push_back({"expect", kUnknown, "a finished run", "", incomplete_reason()});
      else
        v.checks.push_back({"expect", kObserved, "(no [expect])", facts_.outcome, "no expectations: observed only"});
    }
    // Every fault must do what its name says, with or without [expect]: a run whose fault
    // had no effect verified nothing about it (opt out: [expect] fault_manifests = false).
    for (size_t i = 0; i < sc_.faults.size(); ++i) v.checks.push_back(check_manifested(i));
    v.status = kPass;
    for (const Check& c : v.checks) {
      if (c.status == kFail) v.status = kFail;
      if (c.status == kUnknown && v.status == kPass) v.status = kUnknown;
    }
    if (!user_checks && v.status == kPass) v.status = kObserved;
    return v;
  }

 private:
  bool complete() const { return !facts_.outcome.empty(); }

  std::string incomplete_reason() const {
    return "run facts incomplete: no outcome recorded" +
           (facts_.teardown_reason.empty() ? std::string() : " (teardown: " + facts_.teardown_reason + ")");
  }

  bool triage_present() const { return !triage_.category.empty(); }
  bool triage_fired() const {
    return triage_present() && triage_.category != "none" && triage_.category != "unknown";
  }

  std::string describe(const Detection& d) const {
    std::string when = base_t_ ? fmt::format("{:+.2f} s", d.t - *base_t_) : fmt::format("t={:.3f}", d.t);
    std::string who = d.rank < 0 ? "job-wide" : fmt::format("rank {}", d.rank);
    return fmt::format("fired at {} ({}{})", when, who, d.detail.empty() ? "" : ": " + d.detail);
  }

  // [expect.torchrun]: what torchrun said and did, from its log, summary and the ranks'
  // exec records (RunFacts::torchrun). Unknown when the run has no torchrun account.
  void add_torchrun_checks(const TorchrunExpect& want, std::vector<Check>& out) const {
    if (!want.any()) return;
    const std::optional<TorchrunFacts>& t = facts_.torchrun;
    auto add = [&](const std::string& key, const std::string& expected, std::optional<std::string> actual,
                   const std::string& why_not) {
      Check c{"torchrun." + key, kPass, expected, actual.value_or(""), ""};
      if (!t) {
        c.status = kUnknown;
        c.reason = complete() ? "the run has no torchrun account (launcher.stderr.log, exec records)" : incomplete_reason();
      } else if (!actual) {
        c.status = kFail;
        c.reason = why_not;
      } else if (*actual != expected) {
        c.status = kFail;
        c.reason = why_not.empty() ? fmt::format("torchrun: {} (expected {})", *actual, expected) : why_not;
      }
      out.push_back(c);
    };
    auto yes_no = [](bool b) { return std::string(b ? "true" : "false"); };
    if (want.restarted)
      add("restarted", std::to_string(*want.restarted), t ? std::optional(std::to_string(t->restarts)) : std::nullopt, "");
    if (want.tore_down)
      add("tore_down", yes_no(*want.tore_down), t ? std::optional(yes_no(t->tore_down)) : std::nullopt,
          t && t->tore_down != *want.tore_down
              ? fmt::format("torchrun sent {} closing signal(s) before hanglab's own teardown", t->closing_signals)
              : "");
    if (want.hung_in_teardown)
      add("hung_in_teardown", yes_no(*want.hung_in_teardown), t ? std::optional(yes_no(t->hung_in_teardown)) : std::nullopt,
          t && t->hung_in_teardown != *want.hung_in_teardown
              ? fmt::format("SIGKILL escalation {}, still running at hanglab's teardown {}", yes_no(t->sigkill_escalation),
                            yes_no(t->alive_at_harness_teardown))
              : "");
    if (want.root_cause_rank) {
      std::optional<std::string> got;
      if (t && t->root_cause) got = std::to_string(t->root_cause->rank);
      add("root_cause_rank", std::to_string(*want.root_cause_rank), got,
          t && !t->root_cause ? "torchrun printed no failure summary (no \"Root Cause (first observed failure)\")" : "");
    }
  }

  Check check_outcome(const std::string& want) const {
    Check c{"outcome", kPass, want, facts_.outcome, ""};
    if (!complete()) {
      c.status = kUnknown;
      c.actual = "(none)";
      c.reason = incomplete_reason();
      return c;
    }
    if (want == facts_.outcome) return c;
    // "slow" = finished, and the analyzer saw a straggler rather than a healthy run.
    if (want == "slow" && facts_.outcome == "completed") {
      if (!triage_present()) {
        c.status = kUnknown;
        c.reason = "the run completed but triage gave no answer to tell slow from healthy";
      } else if (triage_.category == "straggler") {
        c.actual = "completed (triage: straggler)";
      } else {
        c.status = kFail;
        c.actual = "completed (triage: " + triage_.category + ")";
        c.reason = "the run completed but triage found no straggler";
      }
      return c;
    }
    c.status = kFail;
    c.reason = fmt::format("expected outcome {}, the run ended {}{}", want, facts_.outcome,
                           facts_.teardown_reason.empty() ? "" : " (teardown: " + facts_.teardown_reason + ")");
    return c;
  }

  Check check_detected(const std::string& detector, bool must_fire) const {
    Check c{(must_fire ? "detected_by." : "not_detected_by.") + detector, kPass, must_fire ? "fired" : "not fired",
            "", ""};
    bool fired = false;
    const DetectorInfo* info = find_detector(detector);
    if (info && info->source == DetectorSource::kAnalyzer) {
      if (!triage_present()) {
        c.status = kUnknown;
        c.actual = "(no triage answer)";
        c.reason = "triage gave no answer";
        return c;
      }
      fired = triage_fired();
      c.actual = "category " + triage_.category;
    } else {
      auto it = first_.find(detector);
      fired = it != first_.end();
      c.actual = fired ? describe(*it->second) : "not fired";
      // Silence proves nothing when the run did not finish.
      if (!fired && !complete()) {
        c.status = kUnknown;
        c.reason = incomplete_reason();
        return c;
      }
    }
    if (fired != must_fire) {
      c.status = kFail;
      c.reason = must_fire ? detector + " did not fire" : detector + " fired but must not";
    }
    return c;
  }

  // The first firing of any detected_by detector except triage (which has no time).
  const Detection* first_timed_detection() const {
    const Detection* first = nullptr;
    for (const std::string& d : sc_.expect.detected_by) {
      auto it = first_.find(d);
      if (it != first_.end() && (!first || it->second->t < first->t)) first = it->second;
    }
    return first;
  }

  Check check_timing(const std::string& name, double bound, bool is_upper) const {
    const bool relative_to_fault = !sc_.faults.empty();
    const std::string anchor = relative_to_fault ? "the fault" : "launch";
    Check c{name, kPass,
            fmt::format("{} {} after {}", is_upper ? "<=" : ">=", seconds(bound), anchor), "", ""};
    auto unknown_or_fail = [&](const std::string& reason) {
      c.status = complete() ? kFail : kUnknown;
      c.reason = complete() ? reason : reason + "; " + incomplete_reason();
      return c;
    };
    if (relative_to_fault && !fault_t_) {
      c.actual = "(no fault)";
      return unknown_or_fail("fault never fired");
    }
    if (!base_t_) {
      c.status = kUnknown;
      c.actual = "(no launch time)";
      c.reason = "no launch time recorded";
      return c;
    }
    const Detection* d = first_timed_detection();
    if (!d) {
      c.actual = "no detection";
      std::vector<std::string> timed;
      for (const std::string& n : sc_.expect.detected_by)
        if (const DetectorInfo* info = find_detector(n); info && info->timed) timed.push_back(n);
      return unknown_or_fail(fmt::format("none of {} fired", fmt::join(timed, ", ")));
    }
    const double delta = d->t - *base_t_;
    c.actual = fmt::format("{:+.2f} s ({})", delta, d->detector);
    if (is_upper && delta < 0) {
      c.status = kFail;
      c.reason = fmt::format("{} fired {} before {}", d->detector, seconds(-delta), anchor);
    } else if (is_upper && delta > bound) {
      c.status = kFail;
      c.reason = fmt::format("first detection after {}, later than {}", seconds(delta), seconds(bound));
    } else if (!is_upper && delta < bound) {
      c.status = kFail;
      c.reason = fmt::format("first detection after only {}, earlier than {} (a premature alarm)", seconds(delta),
                             seconds(bound));
    }
    return c;
  }

  Check check_manifested(size_t i) const {
    const bool want = sc_.expect.fault_manifests.value_or(true);
    const std::string name = sc_.faults.size() == 1 ? "fault_manifested" : fmt::format("fault_manifested.{}", i);
    Check c{name, kPass, want ? "exercised" : "not exercised (fault_manifests = false)", "", ""};
    const FaultManifest* m = nullptr;
    for (const auto& x : facts_.manifests)
      if (x.index == static_cast<int>(i)) m = &x;
    if (!m) {
      c.status = kUnknown;
      c.actual = "(not judged)";
      c.reason = "no manifestation judgment recorded for fault " + sc_.faults[i].kind +
                 (complete() ? "" : "; " + incomplete_reason());
      return c;
    }
    c.actual = (m->exercised ? "exercised: " : m->fired ? "fired, no effect: " : "never fired: ") + m->evidence;
    if (m->exercised != want) {
      c.status = kFail;
      c.reason = want ? fmt::format("fault {} ({}) did not manifest", i, m->kind)
                      : fmt::format("fault {} ({}) manifested, but the scenario expects it not to", i, m->kind);
    }
    return c;
  }

  Check compare_triage(const std::string& name, const std::string& want, const std::string& got, bool equal) const {
    Check c{name, kPass, want, got, ""};
    if (!triage_present()) {
      c.status = kUnknown;
      c.actual = "(no triage answer)";
      c.reason = "triage gave no answer";
    } else if (!equal) {
      c.status = kFail;
      c.reason = fmt::format("triage answered {}, expected {}", got.empty() ? "(empty)" : got, want);
    }
    return c;
  }

  Check check_triage_field(const std::string& field, const std::string& want, const std::string& got) const {
    return compare_triage("triage." + field, want, got, want == got);
  }

  Check check_liveness(int rank, const std::string& want) const {
    const std::string name = fmt::format("triage.liveness.{}", rank);
    auto it = std::find_if(triage_.per_rank.begin(), triage_.per_rank.end(),
                           [&](const RankTimeline& r) { return r.rank == rank; });
    if (triage_present() && it == triage_.per_rank.end())
      return {name, kUnknown, want, "(absent)", fmt::format("rank {} is not in the triage answer", rank)};
    return compare_triage(name, want, it == triage_.per_rank.end() ? "" : it->liveness,
                          it != triage_.per_rank.end() && it->liveness == want);
  }

  const Scenario& sc_;
  const RunFacts& facts_;
  const TriageResult& triage_;
  std::map<std::string, const Detection*> first_;  // detector -> its earliest detection
  std::optional<double> fault_t_;                  // first fault firing
  std::optional<double> base_t_;                   // fault_t_, else launch
};

}  // namespace

Verdict check_expectations(const Scenario& scenario, const RunFacts& facts, const TriageResult& triage) {
  return Checker(scenario, facts, triage).run();
}

Verdict skipped_verdict(const std::string& reason) {
  Verdict v;
  v.status = "skipped";
  v.skip_reason = reason;
  return v;
}

int exit_code_for(const std::vector<Verdict>& verdicts) {
  if (verdicts.empty()) return 3;
  bool any_unknown = false;
  bool all_skipped = true;
  for (const Verdict& v : verdicts) {
    if (v.status == kFail) return 1;
    // Anything not recognised (including an empty status) is treated as unknown.
    if (v.status != kPass && v.status != kObserved && v.status != "skipped") any_unknown = true;
    if (v.status != "skipped") all_skipped = false;
  }
  if (any_unknown) return 3;
  return all_skipped ? 4 : 0;
}

nlohmann::json to_json(const Verdict& v) {
  nlohmann::json checks = nlohmann::json::array();
  for (const Check& c : v.checks)
    checks.push_back({{"name", c.name},
                      {"status", c.status},
                      {"expected", c.expected},
                      {"actual", c.actual},
                      {"reason", c.reason}});
  nlohmann::json j = {{"status", v.status}, {"checks", checks}, {"first_detection_s", v.first_detection_s}};
  if (v.status == "skipped") j["skip_reason"] = v.skip_reason;
  return j;
}

Verdict verdict_from_json(const nlohmann::json& j) {
  auto str = [](const nlohmann::json& o, const char* k) {
    auto it = o.find(k);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  Verdict v;
  if (!j.is_object()) return v;
  v.status = str(j, "status");
  v.skip_reason = str(j, "skip_reason");
  if (auto it = j.find("checks"); it != j.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (!c.is_object()) continue;
      v.checks.push_back({str(c, "name"), str(c, "status"), str(c, "expected"), str(c, "actual"), str(c, "reason")});
    }
  }
  if (auto it = j.find("first_detection_s"); it != j.end() && it->is_object()) {
    for (const auto& [k, s] : it->items())
      if (s.is_number()) v.first_detection_s[k] = s.get<double>();
  }
  return v;
}

}  // namespace hanglab
