// heartbeat_loss: a rank that writes a hanglab trace is alive (its process exists) but its
// heartbeat thread has been silent for 3 heartbeat periods: the whole process is stopped
// (SIGSTOP, a frozen node, a debugger) or starved. Any trace event counts as a heartbeat.
#pragma once

#include <vector>

#include "detect/detect_sink.hpp"
#include "detect/detector.hpp"

namespace hanglab {

extern const DetectorInfo kHeartbeatLoss;

// Fires once per rank; marks it (hb_lost). Ranks without a trace, dead ones and ones whose
// death is seen but whose status is pending are skipped: silence is only news from the living.
void check_heartbeat_loss(const std::vector<RankWatch*>& ranks, double now_mono, double heartbeat_s,
                          const DetectFn& detect);

}  // namespace hanglab
