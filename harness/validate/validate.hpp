// Validation of proposed timeout and watchdog settings (`hanglab validate`), the pure
// parts: the settings file, the phase durations measured from rank traces, percentile
// and margin math, the recommendation, and the classification of runs into false
// positives, misses and late detections. The part that runs scenarios is
// validate_run.cpp; everything here is a function of its arguments, so it is unit-tested
// on canned traces and RunFacts (validate_test.cpp).
//
// The settings file (TOML, strict like scenarios: every unknown key is an error naming
// file:line:col and the key):
//   [timeouts]  init_s, collective_s, progress_s, heartbeat_s (required),
//               checkpoint_s, eval_s (optional per-phase limits of the harness watchdog)
//   [torch]     the torch knobs (scenario/torch_knobs.hpp), set in every rank of every pass;
//               `hanglab validate` checks their interactions (validate/torch_checks.hpp)
//   [validate]  slack_s (late-detection slack, default 2), margin_factor (3),
//               margin_add_s (2), cost_ranks ([8, 1024, 16384])
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario/run_facts.hpp"
#include "scenario/scenario.hpp"

namespace hanglab {

// A recommended timeout must clear the healthy durations by the larger of
// factor x p99 and max + add_s: the factor covers a heavier tail than the sample showed,
// the additive term covers short phases whose p99 is tiny but whose jitter is not.
struct MarginRule {
  double factor = 3;
  double add_s = 2;
};

struct ValidateSettings {
  std::string file;
  Timeouts timeouts;  // the proposal
  TorchKnobs torch;   // [torch] of the proposal (empty: torch's defaults)
  double slack_s = 2;
  MarginRule margin;
  std::vector<int> cost_ranks{8, 1024, 16384};
};

// Throws ConfigError (file:line:col: key: message); the first error in file order wins.
ValidateSettings parse_validate_settings(std::string_view text, const std::string& file);
ValidateSettings load_validate_settings(const std::filesystem::path& file);

// ---- statistics ---------------------------------------------------------------------

struct Distribution {
  size_t n = 0;
  double p50 = 0, p99 = 0, max = 0;
};

// Percentile p (0..100) with linear interpolation between the closest ranks (numpy's
// default), so p99 of a small sample is close to its max rather than equal to a
// neighbour. An empty sample gives 0.
double percentile(std::vector<double> values, double p);
Distribution summarize(const std::vector<double>& values);
// max(factor x p99, max + add_s); 0 for an empty distribution.
double margin_value(const Distribution& d, const MarginRule& m);
// Rounds up to a value people write in a config: 0.5 s steps below 10 s, whole seconds above.
double round_up_setting(double seconds);

// ---- what the rank traces say ------------------------------------------------------

// One phase of one rank, from a trace `phase` begin edge to its end edge (end empty when
// the rank never ended it: died or was torn down inside it).
struct PhaseSpan {
  int rank = -1;
  std::string name;  // init | checkpoint | eval
  double begin = 0;
  std::optional<double> end;
};

// Durations in seconds per measured phase, from the rank traces of healthy runs:
//   init              phase init begin -> end (rendezvous, process group)       -> init_s
//   step              dur_ms of steps 2.. (steady state)                        -> progress_s
//   first_collective  from the last traced event before the first training
//                     collective (step >= 1) to its end: warm-up included       -> progress_s, collective_s
//   checkpoint        phase checkpoint begin -> end (the save, then the barrier)-> checkpoint_s, collective_s
//   eval              phase eval begin -> end                                   -> eval_s
//   collective_wait   every collective, begin -> end (time a rank waited in it) -> collective_s
//   silence           job-wide gaps between traced events of any rank (heartbeats
//                     excluded) while no rank is in a checkpoint or eval: what
//                     the harness watchdog compares with progress_s            -> progress_s
//   heartbeat_gap     gaps between consecutive trace lines of one rank         -> heartbeat_s
struct TraceSummary {
  std::map<std::string, std::vector<double>> samples;
  std::vector<PhaseSpan> spans;
  void merge(const TraceSummary& other);  // samples only; spans belong to one run
};

// traces: rank -> its events.jsonl lines as JSON objects, in file order.
TraceSummary summarize_traces(const std::map<int, std::vector<nlohmann::json>>& traces);
// Reads ranks/<r>/events.jsonl of a run directory (torn lines skipped).
std::map<int, std::vector<nlohmann::json>> read_rank_traces(const std::filesystem::path& run_dir);

// ---- recommendation ------------------------------------------------------------------

struct SettingAdvice {
  std::string key;           // init_s, collective_s, ...
  std::optional<double> proposed;
  double recommended = 0;
  std::string basis;         // e.g. "checkpoint max 3.02 s, p99 3.02 s -> 3 x p99 = 9.07 s"
  double healthy_max = 0;    // the longest healthy duration this setting must exceed (0: none measured)
};

struct Recommendation {
  Timeouts timeouts;
  std::vector<SettingAdvice> advice;  // init_s, collective_s, progress_s, heartbeat_s, checkpoint_s, eval_s
};

Recommendation recommend(const std::map<std::string, Distribution>& stats, const Timeouts& proposed,
                         const MarginRule& margin);

// The TOML file the user can adopt: [timeouts] (all six keys, each with its basis as a
// comment) and [validate] (this run's slack, margin and cost ranks). `header` lines are
// written as comments on top.
std::string recommendation_toml(const Recommendation& rec, const ValidateSettings& settings,
                                const std::vector<std::string>& header);

// ---- classification ------------------------------------------------------------------

// One run under one set of settings, as the classifier needs it.
struct RunObservation {
  std::string scenario;
  std::string run_dir;
  bool healthy = false;             // the scenario has no [[fault]]
  bool skipped = false;
  std::string skip_reason;
  bool detection_required = true;   // fault runs: must a runtime detector catch it?
  RunFacts facts;
  std::vector<PhaseSpan> spans;     // for attributing watchdog / timeout firings to a setting
  std::string verdict_status;       // the scenario's own [expect] verdict (informational)
};

// A false positive is one detector firing on healthy work in one run (on however many
// ranks); a miss or a late detection is one fault run.
struct Finding {
  std::string kind;      // false_positive | miss | late
  std::string scenario;
  std::string run_dir;
  std::string detector;  // empty for a miss
  int rank = -1;         // the first firing's rank (-1: job-wide)
  std::vector<int> ranks;  // false positives: every rank the detector fired on in that run
  std::string setting;   // the setting responsible, e.g. collective_s; empty when none
  double at_s = 0;       // false positive: after launch; late: after the fault
  std::string detail;
};

struct DetectorLatency {
  std::string scenario;
  std::string detector;
  int rank = -1;
  double latency_s = 0;  // after the first fault firing
  std::string setting;   // what bounds it ("" for immediate detectors)
  double bound_s = 0;    // the setting's value (0 for immediate detectors)
  bool first = false;    // the fault's first detection
  bool late = false;     // first && latency_s > bound_s + slack_s
};

struct PassResult {
  std::string label;     // proposed | recommended
  Timeouts timeouts;
  std::vector<Finding> findings;
  std::vector<DetectorLatency> latencies;
  int healthy_runs = 0, fault_runs = 0, skipped_runs = 0;
  bool pass() const { return findings.empty() && healthy_runs + fault_runs > 0; }
  int count(const std::string& kind) const;
};

// The setting that bounds a detector's firing at time t (Unix s) on `rank`, given the
// phases open then; "" for detectors that fire at once (exit_monitor, backend_error).
std::string setting_for_detection(const std::string& detector, int rank, double t,
                                  const std::vector<PhaseSpan>& spans, const Timeouts& timeouts);
double setting_value(const std::string& setting, const Timeouts& timeouts);

PassResult classify_pass(const std::string& label, const std::vector<RunObservation>& runs,
                         const Timeouts& timeouts, double slack_s);

// The scenario file's text with its [timeouts] table replaced by `t` (and `note` as a
// comment above it), so a run directory's scenario.toml says what actually ran. Comments
// and layout elsewhere are kept; the result is checked by parsing it back.
std::string scenario_with_timeouts(const std::string& text, const Timeouts& t, const std::string& note);

// ---- rendering -------------------------------------------------------------------------

std::string render_phase_table(const std::map<std::string, Distribution>& stats);
std::string render_pass(const PassResult& pass, const Recommendation* rec, const std::vector<int>& cost_ranks);
// GPU-hours lost to a detection latency: latency x ranks, the whole job idles meanwhile.
double gpu_hours(double latency_s, int ranks);
nlohmann::json to_json(const PassResult& pass);
nlohmann::json to_json(const Timeouts& t);

}  // namespace hanglab
