// exit_monitor: a rank ended on its own with a non-zero code or by a signal. The supervisor
// sees every rank's end (waitpid for its own children; a pidfd, /proc and the launcher's
// report for a launcher's ranks) and asks this detector whether the end is a failure; ends
// caused by a teardown (hanglab's, or a launcher aborting the job after an earlier failure)
// are not.
#pragma once

#include <optional>
#include <string>

#include "detect/detector.hpp"

namespace hanglab {

extern const DetectorInfo kExitMonitor;

// The detection's detail for a rank's end, or nullopt when the end is no failure (exit 0, or
// a teardown's). Neither code nor signal known: the rank vanished; `how` says how it was seen.
std::optional<std::string> exit_monitor_detail(int rank, std::optional<int> code, std::optional<int> signal,
                                               bool by_teardown, const std::string& how);

}  // namespace hanglab
