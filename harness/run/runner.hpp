// Runner: one scenario from validated Scenario to verdict. It creates the run directory,
// picks a free rendezvous port, builds each rank's launch spec (workload argv, the
// torchrun-compatible and HANGLAB_* environment, injector preparations), supervises
// the run, always reverts the injectors, triages the run directory, checks the
// expectations and writes run.json, triage.json, report.txt and junit.xml.
#pragma once

#include <filesystem>
#include <optional>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario/expect.hpp"
#include "injector.hpp"
#include "scenario/run_facts.hpp"
#include "scenario/scenario.hpp"
#include "triage/triage.hpp"

namespace hanglab {

struct PreparedScenario {
  Scenario scenario;
  std::vector<std::unique_ptr<Injector>> injectors;  // one per [[fault]], configured and adapted
  std::vector<std::vector<std::string>> adapted;     // per [[fault]]: what its adapt() arranged
};

// Loads and fully validates (including each injector's configure() and adapt(), which
// may add [workload.args] defaults a fault needs, or refuse one that could not act).
// Throws ConfigError.
PreparedScenario prepare_scenario(const std::filesystem::path& file);

// Each fault's manifestation (Injector::manifested) on a finished run: called by
// run_scenario after revert, so injectors can read evidence their revert collected.
std::vector<FaultManifest> judge_faults(const PreparedScenario& ps, const RunFacts& facts,
                                        const std::filesystem::path& run_dir);

// Expands files and directories (their *.toml, sorted) into scenario files. Throws
// ConfigError for a path that does not exist.
std::vector<std::filesystem::path> expand_scenario_paths(const std::vector<std::string>& paths);

struct RunOptions {
  std::filesystem::path results_dir = "results";
  bool capture_stacks = true;
  int interrupt_fd = -1;
  // Progress displays: short states ("step 7/12", "triage") from the supervisor and runner.
  std::function<void(const std::string&)> on_state;
  // Every run is recorded here (see history.hpp); empty = <results_dir>/history.sqlite.
  std::filesystem::path history_db;
  bool record_history = true;
};

struct RunResult {
  std::string scenario;
  std::filesystem::path run_dir;   // empty when nothing ran
  RunFacts facts;
  TriageResult triage;
  Verdict verdict;
  double duration_s = 0;
  nlohmann::json record;           // run.json as written
  // [detect] flight_recorder: the dumps the ranks left and torchfrtrace's verdict on them
  // (run/torchfrtrace.hpp), run.json "flight_recorder".
  std::optional<nlohmann::json> flight_recorder;
  // [topology] nodes > 1: the nodes the run had (NodeNet::describe), run.json "topology".
  std::optional<nlohmann::json> topology;
  // launcher = "srun": the run's Slurm cluster (SlurmCluster::describe), run.json "slurm".
  std::optional<nlohmann::json> slurm;
};

// Empty if the scenario can run on this host, else the reason it is skipped.
std::string unsupported_reason(const PreparedScenario& ps, const HostInfo& host);

// Runs one scenario and writes its facts (run.json, triage.json, harness.jsonl, ranks/).
// The human and CI reports are the report layer's (report/run_report.hpp: run_and_report).
RunResult run_scenario(PreparedScenario& ps, const HostInfo& host, const RunOptions& opts);

// Points <results>/latest at run_dir (atomically, by rename).
void update_latest(const std::filesystem::path& results, const std::filesystem::path& run_dir);

}  // namespace hanglab
