// Launchers: how the ranks of a run are started. `local` (the default) has no file of
// its own: the supervisor forks each rank itself from its LaunchSpec. A launcher that
// starts every rank from one process (mpirun; later torchrun, srun) turns the per-rank
// specs into the one LaunchSpec the supervisor execs (SupervisorOptions::launcher); the
// supervisor then learns rank pids from the traces and exits from the launcher's report.
// One file per launcher, one line in launcher_spec() (launchers.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "injector.hpp"

namespace hanglab {

// mpirun: one MPMD app context per rank, --tag-output (launchers/mpirun.cpp).
LaunchSpec mpirun_launch_spec(const std::vector<LaunchSpec>& specs, const std::filesystem::path& run_dir);

// The launcher process for `[workload] launcher = NAME`; nullopt for "local".
std::optional<LaunchSpec> launcher_spec(const std::string& name, const std::vector<LaunchSpec>& specs,
                                        const std::filesystem::path& run_dir);

}  // namespace hanglab
