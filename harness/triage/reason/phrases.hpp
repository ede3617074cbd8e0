// Phrases the reasoners write into answers and summaries, shared so that the run-record and
// the plain-log reasoning word the same fact the same way.
#pragma once

#include <string>
#include <vector>

#include "signal_name.hpp"

namespace hanglab::reason {

// signal names: hanglab::signal_name (signal_name.hpp), the one naming of the harness.
using hanglab::signal_name;

// What usually sends a signal that stops a job from outside ("SIGHUP: ..."), for answers that
// name a launcher passing one on.
std::string signal_senders(int sig);

// "rank 1" / "ranks 0,2,3" / "ranks 0-36,38-63"
std::string ranks_phrase(const std::vector<int>& ranks);
// The same, with the count after more than 8 ranks: "ranks 0-1022,1024-16383 (16383 ranks)"
std::string ranks_phrase_counted(const std::vector<int>& ranks);

// The median (0 for none). Defined in run_facts.cpp, which has used it first.
double median(std::vector<double> v);

}  // namespace hanglab::reason
