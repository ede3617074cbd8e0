// Repro cause table: what hanglab's catalog can run for each answer triage gives. One row per
// (category, cause): the fault recipes that reproduce it on this machine, most plausible first,
// each with the fault's keys, what it needs of the workload (args, nodes, steps), the timeouts
// its scenario was tuned with, the detector that fires and why it is the same mechanism; or,
// where no fault here produces that answer through the real mechanism, what it needs and which
// fault is missing. Adding a cause is one row (cause_table.cpp); nothing else branches on causes.
//
// Used by repro/plan.cpp (incident -> candidate scenarios) and repro/compare.cpp (refinements:
// a reproduction's trace-level cause that is the incident's log-level cause, proven by a fact).
#pragma once

#include <string>
#include <vector>

namespace hanglab::repro {

// A scenario fragment that reproduces one cause. The plan fills in ranks, world size and steps.
struct Recipe {
  std::string id;             // candidate name, part of the scenario name: "kill", "freeze"
  std::string fault;          // fault kind (registry key)
  // Which ranks the fault takes: "culprit" (the incident's culprit rank(s), scaled), "all" (every
  // rank), "node" (nodes = [last node]; the culprits are that node's ranks).
  std::string targets = "culprit";
  // The culprit's role when the incident names no rank: first | middle | last | all.
  std::string default_role = "middle";
  // The fault may take every rank when the incident's culprits are all of them (every rank died
  // of the same signal); false where the fault is only defined against peers (a mismatch).
  bool every_rank = false;
  // The recipe's `signal = ...` key is replaced by the signal the incident's culprit died of,
  // where the answer records it (a run directory, or a log with "exited on signal 7").
  bool incident_signal = false;
  bool at_step = true;        // trigger at_step (else: from launch, as the fault's default)
  std::string keys;           // extra [[fault]] lines, TOML ("signal = \"SIGKILL\"")
  std::string args;           // [workload.args] lines, TOML
  std::vector<std::string> tags;  // scenario tags beyond cpu/gloo (cgroup, namespace, fuse, net)
  // The launcher ("" = hanglab's own) and its job time limit in minutes (srun --time; 0 = none).
  // A recipe under srun is skipped, with hanglab run's reason, where Slurm is not installed.
  std::string launcher;
  int time_limit_min = 0;
  int nodes = 1;              // [topology] nodes (> 1: network namespaces, needs root)
  bool store_node = true;     // a node fault may take node 0, the store's host (false: it cuts nodes off the store)
  int min_world = 1;          // ranks the mechanism needs (a mismatch needs peers, a lost store a host)
  int steps = 12;
  int fault_step = 6;         // at_step when at_step
  double init_s = 30, collective_s = 5, progress_s = 10;
  int deadline_s = 90;
  std::string outcome;        // expected run outcome: crash | hang | slow ("" = not pinned)
  std::string detector;       // the detector that fires first on this fault
  std::string category, cause;  // what the reproduction's triage says (the row's unless noted)
  std::string phase;          // the phase the reproduction's triage names
  std::string why;            // why this fault is the incident's mechanism
  std::string ranked;         // why it stands where it does among the row's recipes ("" = first, the usual one)
};

struct CauseRow {
  std::string category, cause;
  std::vector<Recipe> recipes;  // most plausible first; empty = not reproducible here
  std::string needs;            // not reproducible here: what it needs ("a CUDA GPU ...")
  std::string missing_fault;    // ... and the fault the catalog lacks for it
};

// Why an answer has no row at all: the unknown and none categories name no mechanism ("" for any
// other category: such an answer needs a row). The cause-table test holds every answer triage can
// give (triage/model/causes.hpp) to a row or this reason.
std::string no_recipe_reason(const std::string& category, const std::string& cause);

// The row for triage's (category, cause), or nullptr: a cause the table does not know.
const CauseRow* find_cause(const std::string& category, const std::string& cause);
const std::vector<CauseRow>& cause_table();

// Missing by absence: a rank that never reported what its peers report is dead, frozen or
// diverged; the logs leave the choice open. These are the candidates, in the order used when
// the incident says nothing about the absent rank's liveness; plan.cpp re-ranks them by it.
const std::vector<Recipe>& absence_recipes();

// Acting in another phase: a recipe acts in its `phase` (a training step, as a rule). Where the
// incident's triage names another phase, a row here says how a fault reaches it with what the
// built-in workload already has: workload args that hold every rank in that phase, and the line
// the culprit itself prints once inside it (the trigger is at_output = "[rank N] <line>", the
// culprit's own line, so the fault never fires before the culprit is there). A (phase, fault)
// with no row cannot act in that phase here; the plan says so and keeps the recipe's phase.
struct PhaseTrigger {
  std::string phase;                // the incident's phase
  std::vector<std::string> faults;  // fault kinds that can act there this way (signals from outside)
  std::string args;                 // [workload.args] lines that hold the ranks in the phase
  std::string line;                 // what the culprit prints once in it (after "[rank N] ")
  std::string outcome;              // the run's outcome there ("" = the recipe's)
  std::string why;
};
const std::vector<PhaseTrigger>& phase_triggers();
const PhaseTrigger* find_phase_trigger(const std::string& phase, const std::string& fault);

// A reproduction's cause that is the incident's, more general in name: the run record's trace
// reader says "crashed" with the signal where a log reader, seeing "Segmentation fault", says
// "segfault". Accepted only with the fact that makes them the same (the culprit's signal).
struct Refinement {
  std::string incident_cause;   // what the log reader says
  std::string repro_cause;      // what the trace reader says
  int signal;                   // the culprit's death signal that proves it (0 = none needed)
  std::string phase;            // the phase the reproduction must name ("" = any)
  std::string reason;           // why the two names are one cause
};
const std::vector<Refinement>& refinements();

}  // namespace hanglab::repro
