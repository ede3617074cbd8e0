// The runner's hook for [preflight] scenarios (scenario.hpp: PreflightSpec): instead of the job's
// ranks, `hanglab preflight` runs once per [topology] node, launched as that node's first rank would
// be, so every fault that acts from launch is in force when it looks:
//
//   1. the ranks' launch specs are built as for a run (rank_env, the nodes' environment, every
//      injector's prepare_nodes/prepare_rank, the node wrapper); node k takes rank k x R's spec,
//      with argv `hanglab preflight ...` and the job-script form of the environment (NNODES and
//      NODE_RANK under the local launcher; Slurm's or Open MPI's own variables under srun or
//      mpirun, whose torchrun-contract variables are left out);
//   2. innermost, a gate (sh) writes its pid to preflight/ready.<k> and waits for preflight/go:
//      the wrappers before it (mount namespaces, tmpfs over /dev/shm or the checkpoint directory)
//      are in place by then; the from-launch faults fire (a cgroup quota, a ballast file, a stall)
//      with the node's pid; then go is created and every node's preflight starts at once;
//   3. the processes (or srun/mpirun) are waited for with a bound; every fault is reverted;
//   4. the verdict: each node's JSON report (preflight/node<k>.json) against [preflight]'s fail,
//      nodes and echoes, the exit codes, and every node done within --deadline-s.
#pragma once

#include "run/runner.hpp"

namespace hanglab {

// Why this [preflight] scenario cannot run here ("" = it can).
std::string preflight_unsupported_reason(const PreparedScenario& ps, const HostInfo& host);

RunResult run_preflight_scenario(PreparedScenario& ps, const HostInfo& host, const RunOptions& opts,
                                 const std::filesystem::path& run_dir, double t0);

}  // namespace hanglab
