// late_joiner: the chosen ranks start `delay_s` seconds after their peers — a node that
// booted late, a container image still pulling, a scheduler that staggers the launch.
// When the delay exceeds the rendezvous timeout ([timeouts] init_s) the peers give up
// waiting before the late rank ever arrives. The rank is exec'd through
// `sh -c 'sleep N; exec "$0" "$@"'`: same pid, so signals and stacks reach it.
//
// Needs nothing of the workload. Manifested when a targeted rank's first trace event came
// at least delay_s after launch, or the run ended while it was still in its delay.
#include "hook_injector.hpp"
#include "network_common.hpp"

#include <cmath>

namespace hanglab {

namespace {

std::vector<KeyDoc> late_keys() {
  return {{"delay_s", "float", "10",
           "seconds the chosen ranks start after their peers; more than [timeouts] init_s misses rendezvous"}};
}

class LateJoiner : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, late_keys());
    ranks_ = spec.ranks;
    delay_s_ = read_fault_key(spec, file, late_keys()[0]).get<double>();
    if (!(delay_s_ > 0) || !std::isfinite(delay_s_))
      throw config_error_at(file, *spec.table.get("delay_s"), spec.key_prefix() + ".delay_s", "must be > 0");
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (is_targeted(ranks_, rank)) prepend_wrapper(spec, delayed_start_wrapper(delay_s_));
  }

  Manifest manifested(const RunFactsView& run) const override {
    const double ran_s = run.facts.end_t > run.facts.start_t ? run.facts.end_t - run.facts.start_t : 0;
    for (int r : ranks_) {
      if (auto first = run.first_event_after_launch_s(r)) {
        if (*first >= delay_s_ * 0.95) {
          char b[160];
          std::snprintf(b, sizeof b, "rank %d's first trace event came %.1f s after launch (delay %g s)", r, *first,
                        delay_s_);
          return {true, b};
        }
      } else if (ran_s > 0 && ran_s < delay_s_ + 1) {
        char b[160];
        std::snprintf(b, sizeof b, "rank %d had not started when the run ended %.1f s after launch (delay %g s)", r,
                      ran_s, delay_s_);
        return {true, b};
      }
    }
    return {false, "no targeted rank was seen starting late"};
  }

  std::string fire(Job&) override {
    std::string rs;
    for (int r : ranks_) rs += (rs.empty() ? "" : ",") + std::to_string(r);
    char d[32];
    std::snprintf(d, sizeof d, "%g", delay_s_);
    return "rank(s) " + rs + " sleep " + d + " s before exec";
  }

 private:
  std::vector<int> ranks_;
  double delay_s_ = 10;
};

}  // namespace

InjectorInfo late_joiner_info() {
  return {"late_joiner", "the chosen ranks start delay_s seconds after their peers (beyond init_s: rendezvous fails)",
          "argv wrapper `sh -c 'sleep N; exec \"$0\" \"$@\"'` (acts from launch: leave at_step/at_s out)",
          late_keys(), [] { return std::make_unique<LateJoiner>(); }};
}

}  // namespace hanglab
