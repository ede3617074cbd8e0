#include "detect/exit_monitor.hpp"

#include <cstring>

#include <fmt/format.h>

#include "signal_name.hpp"

namespace hanglab {

constexpr DetectorInfo kExitMonitor{
    "exit_monitor",
    DetectorSource::kHarness,
    "",
    0,
    "supervisor tick",
    "the rank's death (its pidfd turns readable, or waitpid reaps it)",
    ClockStart::kFault,
    "rank_exit",
    "",
    "crash",
    "#7e3fbf",
    "a rank exited non-zero or by a signal (not by hanglab's own teardown or a launcher's abort)",
};

std::optional<std::string> exit_monitor_detail(int rank, std::optional<int> code, std::optional<int> signal,
                                               bool by_teardown, const std::string& how) {
  if (by_teardown) return std::nullopt;
  if (signal) return fmt::format("rank {} killed by {}", rank, signal_name(*signal));
  if (code && *code != 0) return fmt::format("rank {} exited with code {}", rank, *code);
  if (!code) return fmt::format("rank {} vanished ({})", rank, how);
  return std::nullopt;
}

}  // namespace hanglab
