// Phrases the reasoners write into answers and summaries, shared so that the run-record and
// the plain-log reasoning word the same fact the same way.
#pragma once

#include <string>
#include <vector>

namespace hanglab::reason {

// "SIGKILL", "SIGSEGV", ...; "signal N" for others.
std::string signal_name(int sig);

// "rank 1" / "ranks 0,2,3" / "ranks 0-36,38-63"
std::string ranks_phrase(const std::vector<int>& ranks);

}  // namespace hanglab::reason
