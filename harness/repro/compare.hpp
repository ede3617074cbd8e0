// Repro comparison: a reproduction's triage against the incident's, on category, cause, phase,
// scope and culprit role (the verdict), and on the stuck call and the detector that fired (shown,
// not deciding: the built-in workload's collectives and a run's detectors have no counterpart in
// most incident logs). A reproduction is read twice, from its run record and from its logs alone
// as the incident was; either reader's agreement is a reproduction, and the line says which.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "repro/plan.hpp"
#include "triage/model/result.hpp"

namespace hanglab::repro {

// What one reading of the reproduction says.
struct Observed {
  std::string reader;       // "run record" | "logs"
  TriageResult answer;      // category, cause, phase, scope, ranks, stuck collective
  std::vector<std::string> detectors;  // run.json detections, first firing first
};

struct Comparison {
  bool reproduced = false;
  bool consistent_only = false;        // the incident states no cause: only its stated facts compared
  std::string reader;                  // the reader that agreed (or the run record's, when none did)
  std::vector<std::string> matched;    // "category rank_exit", ...
  std::vector<std::string> differs;    // "cause (incident segfault, reproduction killed)"
  std::vector<std::string> differ_fields;  // "cause", "phase", ...
  std::vector<std::string> notes;      // stuck call, detector, refinements used
  std::string line() const;            // "reproduced (...)" | "not reproduced: differs in ..."
};

// run.json's detections, in firing order.
std::vector<std::string> detectors_from_run_json(const nlohmann::json& j);

// The detector an incident's own logs show firing, from its answer's first failure (inferred:
// a timeout line is backend_timeout, a closed socket backend_error, an exit exit_monitor).
std::string incident_detector(const TriageResult& incident);

Comparison compare_one(const Plan& plan, const Candidate& c, const Observed& obs);
// Both readers: the run record's first, then the logs'.
Comparison compare(const Plan& plan, const Candidate& c, const std::vector<Observed>& readings);

}  // namespace hanglab::repro
