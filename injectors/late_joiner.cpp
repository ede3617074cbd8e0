// late_joiner: the chosen ranks start `delay_s` seconds after their peers — a node that
// booted late, a container image still pulling, a scheduler that staggers the launch.
// When the delay exceeds the rendezvous timeout ([timeouts] init_s) the peers give up
// waiting before the late rank ever arrives. "After their peers" is counted from the
// first peer's first sign of life (its trace or output file is no longer empty), not from
// the launch: starting LibTorch takes seconds on a loaded host, and a delay counted from
// launch was used up by the peers' own start, so the late rank joined in time. The rank
// is exec'd through a `sh -c '...; sleep N; exec "$0" "$@"'` wrapper: same pid, so
// signals and stacks reach it.
//
// Needs nothing of the workload. Manifested when a targeted rank's first trace event came
// at least delay_s after launch, or the run ended while it was still in its delay.
#include "hook_injector.hpp"
#include "network_common.hpp"

#include <cmath>
#include <cstdio>

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
    if (!is_targeted(ranks_, rank)) return;
    int peer = 0;
    while (is_targeted(ranks_, peer)) ++peer;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", delay_s_);
    // The peer's files sit beside this rank's trace (ranks/<r>/events.jsonl). Without a
    // trace path (run by hand) the delay counts from now.
    const std::string peer_dir = "\"${HANGLAB_TRACE%/*/*}/" + std::to_string(peer) + "\"";
    prepend_wrapper(spec, {"sh", "-c",
                           "if [ -n \"$HANGLAB_TRACE\" ]; then until [ -s " + peer_dir + "/events.jsonl ] || [ -s " +
                               peer_dir + "/stdout.log ] || [ -s " + peer_dir +
                               "/stderr.log ]; do sleep 0.05; done; fi; sleep " + secs + "; exec \"$0\" \"$@\""});
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
    return "rank(s) " + rs + " start " + d + " s after their first peer's first sign of life";
  }

 private:
  std::vector<int> ranks_;
  double delay_s_ = 10;
};

}  // namespace

InjectorInfo late_joiner_info() {
  return {"late_joiner", "the chosen ranks start delay_s seconds after their peers (beyond init_s: rendezvous fails)",
          "argv wrapper `sh -c 'wait for a peer's trace/output; sleep N; exec \"$0\" \"$@\"'` (acts from launch: "
          "leave at_step/at_s out)",
          late_keys(), [] { return std::make_unique<LateJoiner>(); }};
}

}  // namespace hanglab
