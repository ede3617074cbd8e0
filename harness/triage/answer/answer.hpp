// Triage answer: a TriageResult written out, as triage.json (to_json, json.cpp) and as the
// human report (render_text, text.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "triage/model/result.hpp"

namespace hanglab {

nlohmann::json to_json(const TriageResult& r);
// The human report: the four answers, the per-rank timeline table, first failure,
// echoes, evidence and next steps.
std::string render_text(const TriageResult& r);

}  // namespace hanglab
