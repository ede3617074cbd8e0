// flight_recorder: torch's Flight Recorder, kept by the ranks themselves ([detect]
// flight_recorder = true arms it in every rank; run/rank_env.hpp says where each dumps). It
// reports after the run: hanglab triage (triage/fr) and torch's own torchfrtrace
// (run/torchfrtrace.hpp) read the dumps and name the ranks missing from the stuck collective.
// At run time its part is the dump signal: on the first detection of any other detector,
// every live rank that armed its recorder gets SIGUSR1 and dumps while the state that made
// the detector fire is still in its ring buffer; teardown's SIGTERM dumps again at the end.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <vector>

#include "detect/detector.hpp"

namespace hanglab {

extern const DetectorInfo kFlightRecorder;

struct FrDumpTarget {
  int rank = 0;
  pid_t pid = 0;
  // <dump>.armed: the rank writes its pid there once SIGUSR1 dumps instead of killing it.
  std::filesystem::path armed_file;
};

// Sends SIGUSR1 to every target whose armed file holds its current pid; returns their ranks.
std::vector<int> signal_fr_dump(const std::vector<FrDumpTarget>& targets);

}  // namespace hanglab
