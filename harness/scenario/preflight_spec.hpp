// The [preflight] table of a scenario (scenario.hpp: PreflightSpec): its keys, and what a preflight
// scenario may hold besides. Errors are appended (file:line:col and the key), like every table's.
#pragma once

#include <vector>

#include <toml++/toml.h>

#include "scenario/scenario.hpp"

namespace hanglab {

// Reads root's [preflight] into sc.preflight, after [workload], [topology] and [[fault]] were read:
// the nodes named must exist, the checks named must be preflight's, faults act from launch (no
// at_step/at_s/at_output) and a fault given by ranks targets the first rank of a node (preflight
// runs once per node, as that rank), and [expect] has no place (the verdict is preflight's).
void load_preflight_table(const toml::table& root, const std::string& file, Scenario& sc, std::vector<ConfigError>& errors);

}  // namespace hanglab
