// Scenario: the in-memory form of one scenario TOML file (design: "Scenario file").
// load_scenario() parses and validates everything that can be checked without running
// anything; every problem is a ConfigError naming file:line:col and the key. Fault
// tables keep their raw toml::table so each injector's configure() can read and
// reject its own keys (also before anything is spawned).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "scenario/config_error.hpp"
#include "scenario/torch_knobs.hpp"

namespace hanglab {

struct SourcePos {
  std::string file;
  int line = 0;
  int col = 0;
};

struct FaultSpec {
  std::string kind;              // injector registry key
  std::vector<int> ranks;        // validated: 0 <= r < world_size, no duplicates
  std::optional<int> at_step;    // trigger: when the ranks (every one still alive) have entered this step (1-based)
  std::optional<double> at_s;    // trigger: seconds after launch
  // trigger: when any rank prints a line containing this text (its stdout/stderr, as the
  // supervisor reads it): "the program reached X" for programs whose steps hanglab cannot
  // count, e.g. at_output = "Saving model checkpoint"
  std::optional<std::string> at_output;
  // The whole [[fault]] table, for the injector's configure(), with source positions.
  // toml++ drops positions when a table is *copied*: move Scenarios, or configure the
  // injectors from the Scenario load_scenario() returned.
  toml::table table;
  SourcePos pos;                 // where the [[fault]] table starts
  int index = 0;                 // 0-based position among the [[fault]] tables
  // Key path prefix for errors about this table, e.g. "fault[1]" (so "fault[1].signal").
  std::string key_prefix() const { return "fault[" + std::to_string(index) + "]"; }
};

struct WorkloadSpec {
  std::string name;                   // built-in workload name; empty when command is set
  std::vector<std::string> command;   // bring-your-own rank program
  std::string backend = "gloo";       // gloo | nccl | mpi
  int world_size = 2;
  int steps = 10;
  std::string launcher = "local";     // local | mpirun | torchrun | srun
  int max_restarts = 0;               // torchrun --max-restarts (launcher torchrun only)
  int time_limit_min = 0;             // srun --time, Slurm's job time limit in minutes, its unit (launcher srun only; 0 = none)
  // [workload.args] in file order, values rendered as strings (bools as true/false).
  std::vector<std::pair<std::string, std::string>> args;
  std::map<std::string, std::string> env;  // [workload.env]
  // Python modules a bring-your-own command needs from the project venv (a third-party
  // program installed by ci/install-deps.sh): without one the scenario is unsupported here.
  std::vector<std::string> python_modules;
  // Where the keys were written, for the checks made after loading (an executable that is
  // not there, a topology the workload cannot run): command_pos[i] is command's element i.
  std::vector<SourcePos> command_pos;
  SourcePos table_pos, world_size_pos, launcher_pos;
};

struct Timeouts {
  double init_s = 30;
  double collective_s = 5;
  double progress_s = 10;
  double heartbeat_s = 1;
  // Per-phase limits of the harness watchdog: while any live rank is inside a checkpoint
  // (or eval) phase, a slow save is not a hang, so the watchdog waits this long instead of
  // progress_s. Unset: progress_s applies in that phase too.
  std::optional<double> checkpoint_s;
  std::optional<double> eval_s;
};

// The value of one [timeouts] key by name ("progress_s"); nullopt for checkpoint_s / eval_s
// when the scenario leaves them unset, and for any other name.
std::optional<double> timeout_value(const Timeouts& t, std::string_view key);

// [detect]: detection the ranks take part in. flight_recorder = true turns torch's Flight
// Recorder on in every rank (TORCH_FR_BUFFER_SIZE = fr_buffer_size) and tells the rank where to
// dump it (HANGLAB_FR_DUMP = <run dir>/ranks/<r>/flight_recorder.pkl).
struct DetectSpec {
  bool flight_recorder = false;
  int fr_buffer_size = 2000;
};

struct TriageExpect {
  std::optional<std::string> category;
  std::optional<std::string> cause;
  std::optional<std::string> phase;
  std::optional<std::string> scope;
  std::optional<std::vector<int>> missing_ranks;
  std::optional<int> last_good_step;
  // liveness.<rank> = "frozen" etc.
  std::map<int, std::string> liveness;
};

// [expect.torchrun]: what torchrun itself did (launcher = "torchrun" only).
struct TorchrunExpect {
  std::optional<int> restarted;          // times it restarted the worker group
  std::optional<bool> tore_down;         // it stopped the surviving workers itself after a failure
  std::optional<bool> hung_in_teardown;  // a worker outlived its closing signal (SIGKILL escalation,
                                         // or torchrun still waiting when hanglab ended the run)
  std::optional<int> root_cause_rank;    // the rank its failure summary names as "Root Cause"
  bool any() const { return restarted || tore_down || hung_in_teardown || root_cause_rank; }
};

struct ExpectSpec {
  std::optional<std::string> outcome;       // completed | hang | crash | slow
  std::vector<std::string> detected_by;     // detector names that must fire
  std::vector<std::string> not_detected_by; // detector names that must not fire
  std::optional<double> detected_within_s;  // first detection <= this after the fault fired
  std::optional<double> not_before_s;       // ...and not earlier than this
  // Every fault must manifest (fire and show its effect) unless this says otherwise:
  // absent or true = each fault must be exercised; false = the scenario deliberately runs
  // a fault that has no effect, and the check expects it NOT to be exercised.
  std::optional<bool> fault_manifests;
  TriageExpect triage;
  TorchrunExpect torchrun;
};

// [topology]: the job's nodes. nodes = 1 (the default): every rank on this host's loopback.
// nodes > 1: each node is a network namespace on a bridge hanglab creates (run/nodes.hpp),
// ranks spread evenly (rank r on node r / ranks_per_node), the store on node 0's address.
struct TopologySpec {
  int nodes = 1;
  int ranks_per_node = 0;   // world_size / nodes (validated: nodes * ranks_per_node == world_size)
  bool second_nic = false;  // every node also has eth1: an interface that exists and reaches no peer
  SourcePos pos;            // the [topology] table
  bool multi_node() const { return nodes > 1; }
  int node_of(int rank) const { return nodes > 1 && ranks_per_node > 0 ? rank / ranks_per_node : 0; }
};

// [preflight]: instead of the job, `hanglab preflight` runs once per [topology] node, started as the
// node's first rank would be (its environment, wrappers, namespaces and cgroups, so every fault
// that acts from launch is in force), and the verdict is preflight's: the checks in `fail` must
// fail on `nodes` (and only there), nothing else may fail but `echoes`; with `fail` empty (a healthy
// baseline) nothing may fail, warn or skip. run/preflight_run.cpp runs it.
struct PreflightSpec {
  double deadline_s = 10;             // preflight --deadline-s
  std::vector<std::string> fail;      // checks that must fail
  std::vector<int> nodes;             // on these nodes
  std::vector<std::string> echoes;    // checks allowed to fail too, as consequences, on any node
  std::vector<std::string> args;      // further preflight options, verbatim
  bool ckpt = true;                   // --ckpt-dir = the run's checkpoint directory (HANGLAB_CKPT_DIR)
  SourcePos pos;
};

struct Scenario {
  std::filesystem::path file;
  std::string source_text;       // exact bytes of the file (copied into the run dir)
  std::string name;              // default: file stem
  std::string description;
  std::string reproduces;        // text of the `# Reproduces:` header comment, if any
  std::string expected_note;     // text of the `# Expected:` header comment, if any
  std::vector<std::string> tags;
  double deadline_s = 120;
  WorkloadSpec workload;
  Timeouts timeouts;
  DetectSpec detect;
  TorchKnobs torch;  // [torch]: torch's environment knobs, set in every rank
  TopologySpec topology;
  std::optional<PreflightSpec> preflight;
  std::vector<FaultSpec> faults;
  ExpectSpec expect;
};

struct LoadOptions {
  std::vector<std::string> known_workloads;  // built-in workload names
  std::vector<std::string> known_faults;     // injector registry keys
  // Known [workload.args] keys per built-in workload with their type:
  // "int" | "float" | "bool" | "string". Unknown args are a ConfigError.
  std::map<std::string, std::map<std::string, std::string>> workload_args;
  // Built-in workloads whose ranks dump torch's Flight Recorder, with the backends they do it
  // on ([detect] flight_recorder = true is refused for the others).
  std::map<std::string, std::vector<std::string>> flight_recorder_backends;
};

// Parses and validates one scenario file. Throws ConfigError (file:line:col, key).
// A missing or unreadable file is a ConfigError at line 0, col 0.
Scenario load_scenario(const std::filesystem::path& file, const LoadOptions& opts);

// ConfigError pointing at a toml node (its source region) inside `file`.
ConfigError config_error_at(const std::string& file, const toml::node& node, const std::string& key,
                            const std::string& msg);
ConfigError config_error_at(const std::string& file, const toml::source_region& where,
                            const std::string& key, const std::string& msg);

}  // namespace hanglab
