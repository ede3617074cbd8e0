// The registry list. One line per detector; each detector's declaration lives in its own file
// (exit_monitor.cpp, heartbeat_loss.cpp, ...), except the analyzer's, which is harness/triage.
#include "detect/registry.hpp"

#include <algorithm>

#include "detect/backend_error.hpp"
#include "detect/backend_timeout.hpp"
#include "detect/exit_monitor.hpp"
#include "detect/flight_recorder.hpp"
#include "detect/harness_watchdog.hpp"
#include "detect/heartbeat_loss.hpp"

namespace hanglab {

namespace {

// hanglab's own analyzer, run on the run directory after the run (harness/triage): it
// "detects" when its answer names a fault (a category other than none/unknown).
constexpr DetectorInfo kTriage{
    "triage",
    DetectorSource::kAnalyzer,
    "",
    0,
    "none (post-mortem)",
    "the end of the run",
    ClockStart::kNone,
    "",
    "",
    "",
    "#4a6fa5",
    "the analyzer found a fault in the run directory (a category other than none)",
    /*timed=*/false,
    /*expectable=*/true};

}  // namespace

const std::vector<const DetectorInfo*>& detector_registry() {
  static const std::vector<const DetectorInfo*> kAll = {
      &kExitMonitor,
      &kBackendTimeout,
      &kBackendError,
      &kHeartbeatLoss,
      &kHarnessWatchdog,
      &kFlightRecorder,
      &kTriage,
  };
  return kAll;
}

const DetectorInfo* find_detector(std::string_view name) {
  for (const DetectorInfo* d : detector_registry())
    if (d->name == name) return d;
  return nullptr;
}

std::vector<std::string> expectable_detector_names() {
  std::vector<std::string> out;
  for (const DetectorInfo* d : detector_registry())
    if (d->expectable) out.emplace_back(d->name);
  return out;
}

std::string detector_colour(std::string_view name) {
  const DetectorInfo* d = find_detector(name);
  return d ? std::string(d->colour) : "#555";
}

double detector_bound_s(const DetectorInfo& d, double setting_value) { return d.factor * setting_value; }

const char* source_name(DetectorSource s) {
  switch (s) {
    case DetectorSource::kHarness: return "harness";
    case DetectorSource::kBackend: return "backend";
    case DetectorSource::kRecorder: return "recorder";
    case DetectorSource::kAnalyzer: return "analyzer";
  }
  return "harness";
}

}  // namespace hanglab
