// The pre-teardown snapshot: what decides a run's phase and liveness, recorded at the first
// detection of any detector (and at the start of hanglab's teardown when nothing was detected,
// a deadline or an interrupt), before a teardown — hanglab's, or a launcher's reacting to a
// dead rank — can change it. Without it the same run got two answers depending on how fast
// torchrun stopped the survivors: a peer killed before it printed its traceback left no
// evidence of where the job stood.
//   liveness.json                 why and when; per rank: alive, pid, last step, last counted
//                                 progress, heartbeat, what its trace says it is inside,
//                                 whether it waits and why, the kernel's view (liveness.hpp)
//                                 and the newest sampled stack (its time and class)
//   ranks/<r>/stack.txt           for a rank without a trace that has no captured stack: its
//                                 newest sampled stack from before the snapshot (at most two
//                                 sampling periods old), else the kernel's state alone (header
//                                 only). The hang's stack capture, which comes later, replaces
//                                 it with a fresh, complete one. Triage reads stack.txt as it
//                                 always has (records/run_dir.cpp).
// Written once per run.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "detect/detector.hpp"

namespace hanglab {

class HarnessWatchdog;
class StackSampler;

struct SnapshotInput {
  std::filesystem::path run_dir;
  std::string why;           // "first detection: exit_monitor (rank 1)", "teardown: deadline"
  double t = 0;              // Unix time of the cause
  double mono_to_unix = 0;   // add to a monotonic time for Unix time
  double sample_period_s = 2;
};

void write_snapshot(const SnapshotInput& in, const std::vector<RankWatch*>& ranks, const HarnessWatchdog& watchdog,
                    const StackSampler* stacks);

}  // namespace hanglab
