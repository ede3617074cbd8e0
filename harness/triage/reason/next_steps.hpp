// The playbook's next steps for a verdict (category, cause, missing ranks, phase): what to
// check and fix next, in the order the playbook gives them. Both reasoners end with it.
#pragma once

#include <string>
#include <vector>

#include "triage/model/result.hpp"

namespace hanglab {

std::vector<std::string> playbook_next_steps(const TriageResult& r);

}  // namespace hanglab
