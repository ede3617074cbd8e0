// The one naming of signals in the harness (defined in util.cpp): triage's answers, the reports
// and the record say "SIGKILL", "SIGSEGV", "SIGUSR1" alike; "signal N" for a number that names none.
#pragma once

#include <string>

namespace hanglab {

std::string signal_name(int sig);

// A signal a process raises on itself when it fails (SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV):
// a crash, as against one sent from outside (SIGKILL, SIGTERM, ...).
inline bool is_crash_signal(int sig) { return sig == 4 || sig == 6 || sig == 7 || sig == 8 || sig == 11; }

}  // namespace hanglab
