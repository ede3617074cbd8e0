// Plain-log reasoning: a LogCorpus (logs/reader.hpp) -> the answer. Root vs echo, missing by
// absence, slow vs dead; see log_analyzer.hpp for the rules.
#pragma once

#include "triage/logs/reader.hpp"
#include "triage/model/result.hpp"

namespace hanglab {

TriageResult analyze_log_corpus(const LogCorpus& corpus, const TriageOptions& opts);

}  // namespace hanglab
