// Repro plan: an incident's triage answer mapped to the fault catalog. From the answer it takes
// the cause (-> the cause table's recipes), the culprit rank(s) and their role in the job (first,
// middle, last, all: kept when the world is scaled down), the phase and stuck collective, the
// timeouts the incident's logs state, and the lines it cites; where the answer leaves a choice
// open (a rank missing by absence: killed, frozen or skipped?) it ranks the candidates and says
// why. Each candidate renders as a scenario file the scenario loader accepts.
//
// Called by repro_cmd.cpp; pure (no files written, nothing spawned) apart from reading the
// incident's files for the timeouts they state.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "repro/cause_table.hpp"
#include "triage/model/result.hpp"

namespace hanglab::repro {

// A timeout an incident's log states ("Timeout(ms)=1800000"), with the line that states it.
struct StatedTimeout {
  std::string what;  // collective | store | heartbeat
  double seconds = 0;
  std::string ref;   // file:line
};

// The incident's node split, where its triage says which host each rank ran on (plain logs: NCCL
// "host:pid:tid" and hostname prefixes; run directories: [topology] nodes). Node 0 is rank 0's
// host (the store's); the others are ordered by their lowest rank, as a launcher numbers them.
struct NodeSplit {
  int nodes = 0;                   // distinct hosts (< 2: no split, a single host as before)
  int ranks_per_node = 0;          // ranks on the busiest host
  std::vector<std::string> hosts;  // node k's host name
  std::vector<int> culprit_nodes;  // the nodes holding the culprit(s)
  bool whole_node = false;         // the culprits are every rank of their node(s)
  bool whole_known = false;        // every rank's host is known, so whole_node is a fact either way
  std::string node_role;           // the culprit node's role: first | middle | last | all ("" = not known)
  bool known() const { return nodes >= 2 && !node_role.empty(); }
  std::string describe() const;    // "4 nodes x 8 ranks; culprit: the whole node 3 (last)"
};

struct Candidate {
  std::string name;            // scenario name: repro_<incident>_<recipe id>
  Recipe recipe;
  int world = 4;
  std::vector<int> fault_ranks;  // the [[fault]] ranks (empty: nodes = [..] instead)
  std::vector<int> culprits;     // the ranks the reproduction's triage should name
  std::string role;              // the culprit's role in the reproduction
  std::string rank_why;          // why this candidate is ranked where it is
  std::string keys;              // the recipe's fault keys, as adapted to the incident
  std::string phase;             // the phase the fault acts in (the recipe's, or the incident's by a PhaseTrigger)
  std::string at_output;         // trigger: the culprit's own line (a PhaseTrigger), else the recipe's
  std::string args;              // the recipe's workload args, plus a PhaseTrigger's
  std::string outcome;           // the run's expected outcome (the recipe's, or a PhaseTrigger's)
  std::string phase_note;        // the incident's phase differs from the recipe's: how it is reached, or why not
  // [topology] (nodes 1: none): the incident's node split scaled down, or the recipe's own nodes.
  int nodes = 1;
  int ranks_per_node = 0;        // 0: world / nodes
  std::vector<int> fault_nodes;  // nodes = [..] of a node fault
  std::string node_role;         // the culprit node's role here ("" = not compared)
  std::string node_note;         // how the incident's node split was kept, or why not
};

struct Plan {
  std::string incident;          // a name for it: the directory or first file's stem
  std::vector<std::string> inputs;
  TriageResult answer;           // the incident's triage
  std::vector<int> culprits;     // the incident's culprit rank(s)
  std::string role;              // first | middle | last | only | all | unnamed | unknown
  NodeSplit split;               // the incident's node split (nodes < 2: none shown)
  std::vector<std::string> cites;  // "file:line: text", the lines the plan is based on
  std::vector<StatedTimeout> timeouts;
  std::vector<Candidate> candidates;  // most plausible first
  bool absence = false;          // candidates are the missing-by-absence set
  std::string not_here;          // set when nothing here reproduces it: the plain reason
};

struct PlanOptions {
  std::optional<int> world_size;  // the reproduction's world size (default: the incident's, at most 4)
  std::string backend = "gloo";   // gloo | nccl
};

// The culprit's role in a job of `world` ranks (world 0: unknown).
std::string role_of(int rank, int world);
// The incident's culprits and their role, by the rules in plan.cpp.
std::vector<int> culprits_of(const TriageResult& r);
std::string role_of_culprits(const TriageResult& r, const std::vector<int>& culprits);

// The node split of an answer's per-rank hosts, with the culprits' nodes.
NodeSplit node_split(const TriageResult& r, const std::vector<int>& culprits);

// The timeouts stated in the incident's files (files and directories, searched recursively).
std::vector<StatedTimeout> stated_timeouts(const std::vector<std::filesystem::path>& inputs);

Plan make_plan(const TriageResult& answer, const std::vector<std::filesystem::path>& inputs, const PlanOptions& opts);

// The scenario file of one candidate: commented TOML for the scenario loader.
std::string render_scenario(const Plan& plan, const Candidate& c, const PlanOptions& opts);

}  // namespace hanglab::repro
