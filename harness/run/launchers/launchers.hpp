// Launchers: how the ranks of a run are started. `local` (the default) has no file of
// its own: the supervisor forks each rank itself from its LaunchSpec. A launcher that
// starts every rank from one process (mpirun, torchrun, srun) turns the per-rank
// specs into the one LaunchSpec the supervisor execs (SupervisorOptions::launcher); the
// supervisor then learns rank pids from the ranks (their trace's `start` event, or the
// exec record of hanglab_rank_exec), watches each through a pidfd, and reads how each
// ended from /proc while it is a zombie, else from the launcher's report.
// One file per launcher, one line in launcher_spec() (launchers.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "injector.hpp"
#include "scenario/run_facts.hpp"
#include "scenario/scenario.hpp"

namespace hanglab {

struct LauncherPlan {
  LaunchSpec spec;          // the one process the supervisor execs
  // The ranks write to ranks/<r>/stdout.fifo and stderr.fifo (hanglab_rank_exec redirects
  // them there before it execs the rank), so each rank's output reaches the supervisor on
  // its own pipe, timed as under the local launcher; else it arrives tagged on the
  // launcher's own pipes (mpirun --tag-output).
  bool rank_fifos = false;
  // Lines on the launcher's pipes that start "N: " are rank N's (srun -l).
  bool labelled_output = false;
};

// mpirun: one MPMD app context per rank, --tag-output (launchers/mpirun.cpp).
LaunchSpec mpirun_launch_spec(const std::vector<LaunchSpec>& specs, const std::filesystem::path& run_dir);

// torchrun (the project venv's): --nproc-per-node, c10d rendezvous, --max-restarts, its log
// directory in the run directory; each worker is hanglab_rank_exec, which applies the
// rank's own environment, hooks and wrapper and execs it (launchers/torchrun.cpp).
// base_env[r]: rank r's environment before the faults prepared it; a torchrun contract
// variable (RANK, MASTER_ADDR, ...) that a fault or [workload.env] changed is kept over
// torchrun's value, every other one is left to torchrun.
// nodes ([topology] nodes > 1): one torchrun agent per node, each started in its node's
// network namespace (`ip netns exec`) with --nnodes/--node-rank, c10d rendezvous on node 0's
// address, and --local-addr its node's address (which orders c10d's rank assignment as the
// nodes are numbered); the launcher process is a bash that starts the agents, passes
// SIGTERM/SIGINT/SIGHUP on to them and exits with the first agent's failure.
LauncherPlan torchrun_launch_plan(const WorkloadSpec& w, const std::vector<LaunchSpec>& specs,
                                  const std::vector<std::map<std::string, std::string>>& base_env,
                                  const std::filesystem::path& run_dir, const NodeNetView* nodes = nullptr);

// srun on the run's private Slurm cluster (launchers/srun.cpp; the runner starts the
// cluster, launchers/slurm_cluster.hpp): -l, --kill-on-bad-exit=1, one task per rank, each
// hanglab_rank_exec (rank from SLURM_PROCID), [workload] time_limit_min as --time.
LauncherPlan srun_launch_plan(const WorkloadSpec& w, const std::vector<LaunchSpec>& specs,
                              const std::vector<std::map<std::string, std::string>>& base_env,
                              const std::filesystem::path& run_dir);

// How srun reported tasks that ended badly ("srun: error: HOST: task 1: Killed",
// "srun: error: HOST: tasks 0,2: Exited with exit code 11"): the tasks (= ranks) and their
// exit code or signal; nullopt for any other line.
struct SrunTaskExit {
  std::vector<int> tasks;
  std::optional<int> code, signal;
};
std::optional<SrunTaskExit> parse_srun_task_exit(const std::string& line);

// For launchers whose workers are hanglab_rank_exec (torchrun, srun): ranks/<r>/launch.json,
// what the shim execs for rank s.rank — its wrapper and argv, and `env` (the part of its
// environment the launcher passes on) with its trace file and hooks added.
void write_rank_launch(const std::filesystem::path& run_dir, const LaunchSpec& s, nlohmann::json env);
// hanglab_rank_exec, beside this hanglab binary.
std::filesystem::path rank_exec_shim();

// The launcher process for `[workload] launcher = NAME`; nullopt for "local". `nodes`: the
// run's nodes when [topology] nodes > 1, else null.
std::optional<LauncherPlan> launcher_spec(const WorkloadSpec& w, const std::vector<LaunchSpec>& specs,
                                          const std::vector<std::map<std::string, std::string>>& base_env,
                                          const std::filesystem::path& run_dir, const NodeNetView* nodes = nullptr);

// Empty when launcher `name` can run here, else why not (reported as skipped).
std::string launcher_unsupported_reason(const std::string& name);

// The project venv (torch 2.x, torchrun, py-spy): $HANGLAB_VENV, else .venv in the working
// directory, else .venv in the source tree hanglab was built from. Empty when none has
// bin/python.
std::filesystem::path project_venv();

// The TORCHELASTIC_ERROR_FILEs the ranks wrote: ranks/<r>/error.json (local, mpirun) and
// torchrun/<run>/attempt_<n>/<local rank>/error.json (torchrun's log directory), sorted by
// attempt, then rank. Paths relative to the run directory.
std::vector<ErrorFileRecord> read_error_files(const std::filesystem::path& run_dir);

// What torchrun did, from the run directory alone (so `hanglab report` reads the same):
// ranks/<r>/exec.jsonl, launcher.stderr.log (timestamped by the supervisor) and harness.jsonl.
TorchrunFacts read_torchrun_facts(const std::filesystem::path& run_dir);

// Parses torchrun's ChildFailedError summary out of its log text (with or without the
// supervisor's timestamps in front of each line): the root cause and the other failures.
void parse_torchrun_summary(const std::string& log, std::optional<TorchrunFailure>& root_cause,
                            std::vector<TorchrunFailure>& failures);

nlohmann::json to_json(const TorchrunFacts& t);
nlohmann::json to_json(const ErrorFileRecord& e);

}  // namespace hanglab
