// env.lint: the job's environment read the way NCCL, Gloo and torch read it, for the settings that
// silently do something else than the user meant:
//   - GLOO_SOCKET_IFNAME written in NCCL's syntax ("^lo,docker", "=eth0"): Gloo takes exact names
//     and looks for an interface literally called "^lo";
//   - a misspelled NCCL_* / TORCH_NCCL_* / GLOO_* / TORCHELASTIC_* name (did-you-mean against the
//     names the pinned libraries read, known_env.inc): the job runs as if it were unset;
//   - a deprecated spelling torch still reads (NCCL_ASYNC_ERROR_HANDLING), and both spellings set
//     to different values (torch takes the TORCH_ one);
//   - torchrun's contract broken by hand (RANK != GROUP_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK),
//     WORLD_SIZE against the node count times ranks per node;
//   - debugging leftovers that change behaviour (CUDA_LAUNCH_BLOCKING=1).
#pragma once

#include <string>
#include <vector>

#include "preflight/node_local.hpp"

namespace hanglab::preflight {

struct LintProblem {
  bool fail = false;  // else a warning
  std::string text;
};

// The problems of `env` (pure; the unit tests call it directly).
std::vector<LintProblem> lint_problems(const JobEnv& job);

// Levenshtein distance, for did-you-mean.
size_t edit_distance(const std::string& a, const std::string& b);

CheckResult lint_env(const NodeCtx& ctx, const std::vector<Interface>& ifaces);

}  // namespace hanglab::preflight
