// `hanglab preflight`: one run on one node, from the job's environment to the report and the exit
// code. The phases, each with its share of --deadline-s (T), measured from this node's start:
//
//   0        node 0 binds the rendezvous port (the port check)
//   local    the storage probe (a child, before any thread), then the other node-local checks and
//            the probe server on the chosen interface; the Python probes run alongside      <= 0.35 T
//   arrive   every node resolves MASTER_ADDR and says hello at MASTER_ADDR:MASTER_PORT; node 0
//            waits for the node count, then sends the roster                                  <= 0.55 T
//   probe    every node probes every other on the chosen interface (and, --smoke, runs the
//            collective); node 0 tells the others how long they have                          <= 0.85 T
//   verdict  node 0 judges, prints the job's report and sends every node the exit code        <= 0.97 T
//
// Node 0 prints the whole job's report; the other nodes print one line with node 0's verdict, or
// their own results in full when node 0 never answered. Every node exits with the job's code.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "preflight/job.hpp"
#include "preflight/result.hpp"

namespace hanglab::preflight {

// Runs preflight for this node. Writes the report to `out` (and --out), one-line problems to `err`.
// Returns the exit code: 0, 1, 4 (see result.hpp), 2 on bad input (UsageError, nothing run).
int run_preflight(const Options& o, const std::map<std::string, std::string>& env, std::ostream& out,
                  std::ostream& err);

// The order checks are listed in (unknown names last).
int check_order(const std::string& name);
// Whether `name` is a check preflight can report (for [preflight] fail/echoes in scenarios).
bool is_check_name(const std::string& name);
// Every check name, in report order.
std::vector<std::string> check_names();

}  // namespace hanglab::preflight
