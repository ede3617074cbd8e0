// Flight Recorder dumps -> TriageResult (reason/fr_analyze.cpp): the reasoning torchfrtrace does
// (match each process group's collectives across ranks by sequence number), plus what it does
// not: a rank whose dump is missing, a rank behind its peers, the skipped or extra call read from
// where the op/size pattern realigns, the phase from the recorded Python frames. Works on Gloo
// dumps too (torchfrtrace 2.15 crashes on them: their pg_config is keyed by an empty name).
#pragma once

#include <vector>

#include "triage/fr/dump.hpp"
#include "triage/model/result.hpp"

namespace hanglab {

TriageResult analyze_fr_dumps(const std::vector<fr::FrDump>& dumps, const TriageOptions& opts);

}  // namespace hanglab
