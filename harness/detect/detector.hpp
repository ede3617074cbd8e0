// What every detector declares about itself (DetectorInfo, one per detector file, listed once
// in registry.cpp) and what the runtime detectors see of a rank (RankWatch, kept up to date by
// the supervisor). Scenario validation, `hanglab validate`, bench, the HTML report and the
// tooling matrix read the declarations through the registry (registry.hpp), never a list of
// their own.
#pragma once

#include <sys/types.h>

#include <array>
#include <string_view>

namespace hanglab {

// Who raises a detection.
enum class DetectorSource {
  kHarness,   // the supervisor, from the processes and their output (exit, heartbeat, liveness)
  kBackend,   // the rank's communication backend, as the rank reports it (trace error, log line)
  kRecorder,  // post-mortem, from a recorder the ranks kept (torch's Flight Recorder dumps)
  kAnalyzer,  // post-mortem, hanglab's own triage of the run directory
};

// Where a detector's clock starts, so that a measurement (bench) can find that instant in a
// run's record: the fault itself (an event it reacts to), the affected rank entering its
// collective, the affected rank's last trace event, the job's last progress, or nowhere.
enum class ClockStart { kFault, kCollectiveEntry, kRankLastEvent, kJobLastProgress, kNone };

struct DetectorInfo {
  std::string_view name;
  DetectorSource source = DetectorSource::kHarness;
  // The setting its bound comes from ([timeouts] key, or another table's key), and the bound:
  // factor x that setting. factor 0: no bound of its own (it reacts to an event).
  std::string_view setting;
  double factor = 0;
  std::string_view bound;        // as the bound reads in a report: "3 x heartbeat_s"
  std::string_view clock;        // what starts its clock
  ClockStart clock_start = ClockStart::kNone;
  // What a firing says, in triage's vocabulary (category, cause); empty where it says only
  // where the job stopped, not why (a timeout, a watchdog).
  std::string_view category;
  std::string_view cause;
  std::string_view outcome;      // the run outcome its firing implies: hang | crash | "" (none)
  std::string_view colour;       // CSS colour of its marks (HTML report, bench charts)
  std::string_view description;  // one line: when it fires
  // Fires during the run, dated in harness.jsonl ("detect" events) and run.json detections,
  // so that expectations can time it. False for the post-mortem ones.
  bool timed = true;
  // May be named in a scenario's [expect] detected_by / not_detected_by.
  bool expectable = true;
  // Phases with a bound of their own: while a rank (the detection's rank; any rank for a
  // job-wide detection) is inside the phase and the setting is given, the bound is that
  // setting instead (the larger one when several apply). {phase, setting}; empty: unused.
  std::array<std::array<std::string_view, 2>, 2> phase_settings{};
};

// One rank as the runtime detectors see it. The supervisor's own rank record extends it and
// keeps these fields current from the trace, the output and the process.
struct RankWatch {
  int rank = 0;
  pid_t pid = 0;           // 0 until known (a launcher's rank: from its trace or exec record)
  bool alive = false;      // expected to be running (launched, not yet seen to end)
  double gone_t = 0;       // when its death was seen (its status may still be pending); 0: not
  bool has_trace = false;  // writes a hanglab trace (events.jsonl)
  bool spoke = false;      // wrote a trace event or an output line
  double last_hb_mono = 0; // last heartbeat or other trace event
  bool hb_lost = false;    // heartbeat_loss fired for it
  int last_step = 0;
  bool init_done = false;
  // The trace says where it is: inside a checkpoint / eval phase (begin without end), inside
  // a collective (coll begin without end), or past its training loop (phase shutdown).
  bool in_checkpoint = false;
  bool in_eval = false;
  bool in_collective = false;
  bool in_shutdown = false;
};

}  // namespace hanglab
