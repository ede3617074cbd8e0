// The "torch knobs" section of `hanglab validate`: how the [torch] knobs of a settings file
// (scenario/torch_knobs.hpp) interact with each other, with the proposed timeouts and with the
// launchers' SIGTERM -> SIGKILL grace periods, judged on what real ranks did under them.
//
// validate_run.cpp runs the knob probes (scenarios/validate/knobs/: a real PyTorch DDP script on
// Gloo, with the proposal's timeouts and knobs) and fills KnobProbe from their run directories
// (read_knob_probe); torch_interactions() is a pure function of the knobs, the timeouts and
// those measurements, unit-tested in torch_checks_test.cpp. Knobs only ProcessGroupNCCL reads
// cannot be exercised on a CPU host: their rules are static checks, marked so.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario/scenario.hpp"

namespace hanglab {

// torchrun's --shutdown-timeout default (torch/distributed/run.py, 2.15): SIGTERM, then SIGKILL
// this much later, for every worker it stops.
constexpr double kTorchrunShutdownTimeoutS = 30;

// What the knob probes measured.
struct KnobProbe {
  bool ran = false;
  // A debug level: the healthy script with every knob, and the control without any.
  std::vector<double> step_ms_on, step_ms_off;
  int alarms_on = 0, alarms_off = 0;  // detections on the healthy runs (any is a false alarm)
  bool debug_ran = false, control_ran = false;
  std::string debug_outcome, control_outcome;  // completed | crash | hang ...
  // The same on the LibTorch workload (steps that are only collectives: the check's price).
  std::vector<double> cpp_step_ms_on, cpp_step_ms_off;
  int cpp_alarms_on = 0, cpp_alarms_off = 0;
  std::string debug_deaths;  // how ranks died with the knobs, e.g. "2 ranks SIGSEGV: Fatal Python
                             // error: Segmentation fault in _ddp_init_helper (torch/nn/parallel/distributed.py:1487)"
  // Flight Recorder dumps the ranks wrote (train.py: at the end, on an exception, on SIGTERM).
  std::vector<double> dump_ms;  // "flight recorder: ... in N ms" lines
  std::vector<long> dump_entries;  // entries in each ranks/<r>/flight_recorder.pkl read
  // Timeout run: a rank frozen, its peers' Gloo collectives time out.
  int timeout_ranks = 0;  // ranks whose collective timed out (backend_timeout)
  int torch_dumps = 0;    // files torch wrote itself at TORCH_FR_DUMP_TEMP_FILE (ranks/<r>/torch_fr_<r>)
  int sigterm_ranks = 0;  // ranks hanglab ended with SIGTERM at teardown (each should dump)
  int sigterm_dumps = 0;  // ...and the dumps that such a rank completed
  std::vector<std::string> runs;  // run directories, for the report
  // Mismatch runs (distributed_debug = DETAIL), with the knobs and without (the control): "skip"
  // (one rank skips a step's allreduces) and "op" (one rank broadcasts where its peer allreduces).
  struct Mismatch {
    bool ran = false;
    bool named = false;             // a rank reported ProcessGroupWrapper's "Detected mismatch"
    std::optional<double> detect_s;  // first detection after the fault fired
    std::string detector, outcome;
  };
  std::map<std::string, Mismatch> mismatch;  // "skip", "skip_control", "op", "op_control"
};

// One interaction, as the report prints it.
struct KnobInteraction {
  std::string id;        // heartbeat_before_dump, dump_wait_vs_grace, ...
  std::string knobs;     // the combination, with values ("(default)" where torch's default applies)
  std::string risk;      // what could go wrong
  std::string measured;  // what the runs showed, or the static check's arithmetic
  std::string verdict;   // harmful | benign | needs_nccl (not measurable here)
  bool measured_here = false;  // from the probes' runs (false: static check)
  bool finding() const { return verdict == "harmful"; }
};

// The knobs to adopt: the proposal with each harmful interaction that has a clear fix fixed
// (a heartbeat timeout that clears collective_s + the dump wait by `factor`, torch's default
// buffer and error handling, no dump-on-timeout a Gloo job never honours, no debug level that
// breaks the job); `notes` says what changed and why, one line per change.
TorchKnobs recommend_torch_knobs(const TorchKnobs& proposed, const std::vector<KnobInteraction>& rows,
                                 const Timeouts& recommended, double factor, std::vector<std::string>& notes);

// hanglab's own SIGTERM -> SIGKILL grace at teardown (SupervisorOptions::term_grace_s).
double hanglab_term_grace_s();

std::vector<KnobInteraction> torch_interactions(const TorchKnobs& knobs, const Timeouts& timeouts,
                                                const KnobProbe& probe);

// Adds one probe run's facts to `probe`: kind is healthy | timeout (the Flight Recorder probes),
// debug | control | cost | cost_control (a debug level's price), skip | skip_control | op | op_control (DETAIL's checks).
// Reads run.json, ranks/<r>/stderr.log and ranks/<r>/{flight_recorder.pkl,torch_fr_<r>}.
void read_knob_probe(const std::filesystem::path& run_dir, const std::string& kind, KnobProbe& probe);

// The scenario file's text with its [torch] table replaced by `knobs` (removed when empty), so
// a run directory's scenario.toml says what ran.
std::string scenario_with_torch(const std::string& text, const TorchKnobs& knobs);

std::string render_torch_section(const TorchKnobs& knobs, const std::vector<KnobInteraction>& rows,
                                 const KnobProbe& probe);
nlohmann::json to_json(const std::vector<KnobInteraction>& rows, const KnobProbe& probe);

}  // namespace hanglab
