// `hanglab repro INCIDENT...`: an incident's logs (or a run directory, or Flight Recorder dumps) in,
// reproduction scenario(s) out, and with --run their runs compared with the incident.
//
//   1. triage the incident (triage_paths: the same reader as `hanglab triage`);
//   2. plan: the answer -> the cause table's recipes, culprit role, scaled world (plan.hpp);
//   3. write each candidate's scenario, checked by the scenario loader before it is renamed into
//      place (a half-written or unloadable file is never left);
//   4. --run: `hanglab run` each one (a child process: its own interrupt handling, state file and
//      run record under --results), triage the run and compare (compare.hpp).
//
// Exit: 0 scenarios written (without --run) or one candidate reproduced; 1 none reproduced, or
// the incident's cause is not reproducible here (the line says why and names the missing fault);
// 2 bad input (missing path, no recognizable incident, bad option, --out exists without --force):
// nothing spawned, nothing written; 3 a generated scenario did not load (a bug: none is left
// behind); 4 every candidate was skipped here (unsupported); 130 interrupted.
#pragma once

#include <csignal>
#include <optional>
#include <string>
#include <vector>

namespace hanglab::repro {

struct ReproCommand {
  std::vector<std::string> inputs;
  std::optional<int> world_size;   // the reproduction's world size
  std::string backend = "gloo";
  bool run = false;
  std::string out;                 // scenario file (several candidates: <stem>.<id><ext>)
  bool force = false;              // --out may replace existing files
  std::string results = "results"; // run records, and the scenarios when --out is not given
  std::string hanglab;             // the hanglab binary for `hanglab run` (default: this process's)
  // Set by the CLI's SIGINT/SIGTERM handler: a `hanglab run` child tears its run down itself
  // (it gets the terminal's signal too); repro then runs no further candidate (exit 130).
  volatile sig_atomic_t* interrupted = nullptr;
};

int repro_command(const ReproCommand& cmd);

}  // namespace hanglab::repro
