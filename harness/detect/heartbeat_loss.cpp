#include "detect/heartbeat_loss.hpp"

#include <fmt/format.h>

#include "util.hpp"

namespace hanglab {

constexpr DetectorInfo kHeartbeatLoss{
    "heartbeat_loss",
    DetectorSource::kHarness,
    "heartbeat_s",
    3,
    "3 x heartbeat_s",
    "the rank's last trace event (a heartbeat or any other)",
    ClockStart::kRankLastEvent,
    "straggler",
    "frozen",
    "",
    "#0e8a7e",
    "a rank is alive but its heartbeat thread was silent for 3 periods (frozen)",
};

void check_heartbeat_loss(const std::vector<RankWatch*>& ranks, double now_mono, double heartbeat_s,
                          const DetectFn& detect) {
  const double limit = kHeartbeatLoss.factor * heartbeat_s;
  for (RankWatch* r : ranks) {
    if (!r->alive || !r->has_trace || r->hb_lost || r->gone_t > 0) continue;
    if (now_mono - r->last_hb_mono <= limit) continue;
    r->hb_lost = true;
    detect(kHeartbeatLoss.name, r->rank,
           fmt::format("rank {} alive (pid {}) but no heartbeat for {:.1f} s (limit 3 x {} s)", r->rank, r->pid,
                       now_mono - r->last_hb_mono, heartbeat_s),
           unix_now());
  }
}

}  // namespace hanglab
