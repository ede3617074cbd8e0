// The built-in workloads the harness knows by name, where their binaries are, and how
// a scenario's [workload] becomes one rank's argv. Bring-your-own commands bypass this.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"
#include "workload_args.hpp"

namespace hanglab {

struct WorkloadInfo {
  std::string name;
  std::string binary;                  // file name inside workload_dir()
  std::vector<std::string> backends;
  const std::vector<ArgSpec>* args;
  std::string summary;
  bool training_loop = true;  // runs the shared training loop that honours HANGLAB_HOOKS
  // Backends built as an executable of their own (backend, file name), e.g. torch_ddp's
  // nccl is torch_ddp_nccl: linking LibTorch's CUDA half costs every CPU rank ~400 MB.
  std::vector<std::pair<std::string, std::string>> backend_binaries = {};
  // The LibTorch the binary was compiled against ("2.15.0"), empty for the others.
  std::string libtorch = {};
  // Backends on which the ranks record torch's Flight Recorder and dump it to
  // HANGLAB_FR_DUMP ([detect] flight_recorder; workloads/loop/flight_recorder.hpp).
  std::vector<std::string> flight_recorder_backends = {};
};

// The executable's file name for one of the workload's backends.
const std::string& workload_binary(const WorkloadInfo& w, const std::string& backend);

const std::vector<WorkloadInfo>& workload_registry();
const WorkloadInfo* find_workload(const std::string& name);

// Where built-in workload binaries live: $HANGLAB_WORKLOAD_DIR, else the build tree's
// workloads/ folder next to the hanglab executable.
std::filesystem::path workload_dir();

// Empty when the scenario's workload can run here, else why not (reported as skipped).
std::string workload_unsupported_reason(const Scenario& sc);

// argv of one rank (same for every rank; rank identity travels in the environment).
std::vector<std::string> workload_argv(const Scenario& sc);
// {scenario_dir}, {workload_dir} and {venv} in a [workload] command word or env value, expanded.
std::string expand_placeholders(std::string s, const Scenario& sc);

// LoadOptions filled from the workload and injector registries.
LoadOptions make_load_options();

// scenarios/ of the working directory (the repository root), else of the source tree
// this hanglab was built from (validate's and bench's default scenarios).
std::filesystem::path default_scenarios_dir();

// Usage errors the file alone cannot show, checked after loading and before anything runs
// (ConfigError, exit 2, at the key's file:line:col): a command whose program is not there
// or not executable, a script the interpreter would not find or could not read, a topology
// the workload cannot run (e.g. mpi_ddp with several ranks under the local launcher), a
// world size this process cannot supervise (file descriptors).
void check_workload_runnable(const Scenario& sc);

}  // namespace hanglab
