#include "detect/flight_recorder.hpp"

#include <csignal>
#include <fstream>

namespace hanglab {

constexpr DetectorInfo kFlightRecorder{
    "flight_recorder",
    DetectorSource::kRecorder,
    "[detect] flight_recorder",
    0,
    "none (post-mortem; the dumps are taken at the first detection and at teardown)",
    "the first detection of another detector (SIGUSR1 dump), then teardown",
    ClockStart::kNone,
    "collective_mismatch",
    "",
    "",
    "#5b6b2f",
    "torch's Flight Recorder dumps, read after the run by hanglab triage and torchfrtrace",
    /*timed=*/false,
    /*expectable=*/false,
};

std::vector<int> signal_fr_dump(const std::vector<FrDumpTarget>& targets) {
  std::vector<int> signalled;
  for (const auto& t : targets) {
    if (t.pid <= 0) continue;
    std::ifstream armed(t.armed_file);
    long long pid = 0;
    if (!(armed >> pid) || pid != t.pid) continue;
    if (::kill(t.pid, SIGUSR1) == 0) signalled.push_back(t.rank);
  }
  return signalled;
}

}  // namespace hanglab
