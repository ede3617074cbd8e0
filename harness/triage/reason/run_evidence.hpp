// One evidence model per run: applies what the supervisor and the stack capture observed
// (exits, detections, stacks with process state) and the ranks' printed progress lines to an
// answer; see run_evidence.cpp for the rules. traced: the ranks wrote hanglab traces (the
// run-record reasoner already decided from the exits; only the rank table and the detector
// context are filled), else the answer came from plain logs and observed facts outrank it.
#pragma once

#include "triage/model/observations.hpp"
#include "triage/model/result.hpp"

namespace hanglab {

void apply_run_evidence(const RunObservations& in, TriageResult& r, bool traced);

}  // namespace hanglab
