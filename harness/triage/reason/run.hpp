// Run-record reasoning: the observations of one run directory (records/run_dir.hpp) -> the
// answer. Root vs echo, missing by absence, slow vs dead; see run_analyzer.hpp for the rules.
#pragma once

#include "triage/model/observations.hpp"
#include "triage/model/result.hpp"

namespace hanglab {

TriageResult analyze_run(const RunObservations& in);

}  // namespace hanglab
