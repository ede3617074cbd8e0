// `hanglab preflight` on the command line: the subcommand's options (registered on the CLI11 app by
// add_preflight_subcommand, so harness/cli/main.cpp only registers and dispatches) and its entry
// point. Byte counts take binary units (64MiB); a bad value is one line and exit 2.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "preflight/job.hpp"

namespace hanglab::preflight {

struct PreflightCommand {
  Options options;
  std::string ckpt_bytes, ckpt_probe_bytes, batch_bytes, mem_per_rank;  // parsed by preflight_command
};

CLI::App* add_preflight_subcommand(CLI::App& app, PreflightCommand& cmd);

// 0 pass, 1 a check failed, 2 bad input (nothing run), 4 a check was skipped (needs a GPU, root...).
int preflight_command(PreflightCommand cmd);

}  // namespace hanglab::preflight
