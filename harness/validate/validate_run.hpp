// `hanglab validate SETTINGS.toml`: runs the healthy baseline and a fault catalog with
// the proposed timeouts substituted for each scenario's [timeouts], classifies every run
// (false positives, misses, late detections), measures the healthy phase durations,
// recommends settings with a stated margin, re-validates the recommendation in a second
// pass, and writes it as a TOML file the user can adopt.
//
// Passes, each a set of real runs (run directories under <results>/<pass>/):
//   proposed      baseline x repeat + fault catalog, with the proposed settings;
//   measure       only when a baseline run under the proposal was cut short by an alarm
//                 (its phases would be truncated): the baseline again with permissive
//                 timeouts (each = the scenario's deadline), to measure true durations;
//   recommended   baseline x repeat + fault catalog again with the recommended settings
//                 (skipped with --no-recheck).
// Exit code: 0 the proposal passes, 1 it fails (any false positive, miss or late
// detection), 2 bad input (nothing ran), 130 interrupted.
#pragma once

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

namespace hanglab {

struct ValidateOptions {
  std::filesystem::path settings_file;
  std::vector<std::string> scenarios;  // the fault catalog; empty = the default subset (below)
  std::vector<std::string> baseline;   // healthy runs; empty = scenarios/validate
  std::filesystem::path results = "results/validate";
  int repeat = 1;                      // baseline runs per pass
  std::filesystem::path out;           // empty = <results>/recommended.toml
  bool recheck = true;
  int interrupt_fd = -1;
  const volatile std::sig_atomic_t* interrupted = nullptr;
};

// Scenarios of the default fault subset, chosen to cover the three detection paths in
// about a minute on 2 cores: kill_rank (exit_monitor / backend_error: immediate),
// skip_collective_linger (backend_timeout, then harness_watchdog: collective_s,
// progress_s), freeze_rank (heartbeat_loss: heartbeat_s). Those present in scenarios/
// are used; if none is, every scenario there with a [[fault]].
const std::vector<std::string>& default_validate_faults();

int run_validate(const ValidateOptions& opts);

}  // namespace hanglab
