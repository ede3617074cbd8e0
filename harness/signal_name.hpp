// The one naming of signals in the harness (defined in util.cpp): triage's answers, the reports
// and the record say "SIGKILL", "SIGSEGV", "SIGUSR1" alike; "signal N" for a number that names none.
#pragma once

#include <string>

namespace hanglab {

std::string signal_name(int sig);

}  // namespace hanglab
