// The expectation checker: turns a scenario's [expect] table, what the supervisor saw
// (RunFacts) and the analyzer's answer (TriageResult) into a Verdict with one Check per
// expectation, and a set of verdicts into the exit code of `hanglab` (design: "Exit
// codes"). Pure functions: called by the runner after triage, and by `hanglab report`
// on a finished run directory; they never throw on odd inputs, they report "unknown".
//
// A check is `unknown` when the run cannot confirm or refute it (the harness errored so
// no outcome was recorded, triage gave no answer, a rank is missing from the answer).
// Positive evidence still counts on an incomplete run: a detector that must not fire
// but did is a failure either way.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario/run_facts.hpp"
#include "scenario/scenario.hpp"
#include "triage/triage.hpp"

namespace hanglab {

struct Check {
  std::string name;      // outcome | detected_by.<d> | not_detected_by.<d> | detected_within_s |
                         // not_before_s | triage.<field> | triage.liveness.<rank> | expect
  std::string status;    // pass | fail | unknown | observed
  std::string expected;  // human-readable, e.g. "hang", "fired", "<= 15 s after the fault"
  std::string actual;    // what the run showed, e.g. "completed", "fired at +5.21 s (rank 0)"
  std::string reason;    // why it failed or is unknown; empty on pass
};

struct Verdict {
  std::string status;  // pass | fail | unknown | skipped | observed
  std::vector<Check> checks;
  // detector -> seconds of its first firing after the first fault firing (or after launch
  // when no fault fired); negative when it fired before the fault. Every detector that
  // fired is listed, expected or not; "triage" has no firing time and is never listed.
  std::map<std::string, double> first_detection_s;
  std::string skip_reason;  // only for skipped
};

// One Check per expectation present in scenario.expect. A scenario with no expectations
// gets status `observed` (a single Check "expect" with status observed) once the run has
// an outcome, else unknown. Overall status: fail if any check fails, else unknown if any is
// unknown, else pass.
Verdict check_expectations(const Scenario& scenario, const RunFacts& facts, const TriageResult& triage);

// The verdict of a scenario that was not run here (an injector's unsupported_reason).
Verdict skipped_verdict(const std::string& reason);

// Exit code for a batch of scenario verdicts: 1 if any failed; else 3 if any is unknown;
// else 4 if all were skipped; else 0 (pass or observed, possibly mixed with skipped). An empty batch
// verified nothing and gives 3.
int exit_code_for(const std::vector<Verdict>& verdicts);

// {"status", "checks": [{name, status, expected, actual, reason}], "first_detection_s":
// {detector: s}, "skip_reason" (skipped only)}. verdict_from_json reads it back (for
// reports regenerated from run.json); missing fields stay empty.
nlohmann::json to_json(const Verdict& v);
Verdict verdict_from_json(const nlohmann::json& j);

}  // namespace hanglab
