// uneven_batches: the chosen rank's sampler yields fewer batches than its peers', so it
// leaves the training loop early while they wait in the next collective (or, with
// mode = "drop_last_mismatch", it disagrees with its peers on DistributedSampler's
// drop_last and its batch count differs naturally).
//
// Needs the built-in training loop (the hook lives in its sampler). Without at_step/at_s,
// mode "fewer" defaults to at_step = steps: the rank's last batch is missing, one batch
// fewer than its peers. drop_last_mismatch is refused where the opposite drop_last gives
// the rank no fewer batches within `steps` (it would change nothing). Manifested when the
// rank traces the hook's `fault` event (fewer: it left the loop early) and, for
// drop_last_mismatch, its last step is below its peers'.
#include <algorithm>

#include <fmt/format.h>

#include "hook_injector.hpp"

namespace hanglab {

namespace {
std::vector<KeyDoc> uneven_keys() {
  return {{"mode", "string", "fewer",
           "fewer: the rank's data runs out before the trigger step (default at_step = steps: its last batch is "
           "missing) | drop_last_mismatch: the rank uses the opposite drop_last"}};
}

long long to_ll(const std::string& s, long long fallback) {
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

class UnevenBatches : public HookInjector {
 public:
  UnevenBatches() : HookInjector("uneven_batches", uneven_keys()) {}

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    std::vector<std::string> notes = HookInjector::adapt(ctx);
    const int steps = ctx.scenario.workload.steps;
    if (hook_.value("mode", "fewer") == "fewer") {
      if (!hook_.contains("at_step") && !at_s_) {
        hook_["at_step"] = steps;
        notes.push_back(fmt::format("at_step = {} (default: the rank's last batch is missing, {} batch(es) instead "
                                    "of {})",
                                    steps, steps - 1, steps));
      }
      return notes;
    }
    // drop_last_mismatch: does the flipped sampler give the rank fewer batches in `steps`?
    const long long ds = to_ll(ctx.arg("dataset_size"), 1024), bs = to_ll(ctx.arg("batch_size"), 8);
    const long long ws = ctx.scenario.workload.world_size;
    const bool drop_last = ctx.arg("drop_last") == "true";
    auto per_epoch = [&](bool drop) {
      // As DistributedSampler: drop_last trims only a remainder of dataset_size / world_size.
      const long long n = drop && ds % ws != 0 ? (ds - ws + ws - 1) / ws : (ds + ws - 1) / ws;
      return drop ? n / bs : (n + bs - 1) / bs;
    };
    const long long mine = per_epoch(!drop_last), peers = per_epoch(drop_last);
    const long long epochs = peers > 0 ? (steps + peers - 1) / peers : 0;
    if (peers > 0 && epochs * mine >= steps && !ctx.expects_no_effect()) {
      throw ctx.refuse("mode", fmt::format(
          "drop_last_mismatch changes nothing here: with drop_last = {} the rank still gets {} batch(es) per epoch "
          "(peers {}), enough for steps = {}; flipping drop_last removes batches only from drop_last = false with "
          "dataset_size ({}) not a multiple of world_size x batch_size",
          !drop_last, mine, peers, steps, ds));
    }
    return notes;
  }

  Manifest manifested(const RunFactsView& run) const override {
    Manifest m = hook_acted(run);
    if (!m.exercised || hook_.value("mode", "fewer") == "fewer") return m;
    // drop_last_mismatch: the hook reports the flip at start; the effect is fewer steps.
    auto last_step = [&](int r) {
      int s = 0;
      for (const auto* e : run.events(r, "step")) s = std::max(s, e->value("step", 0));
      return s;
    };
    int peers = 0;
    for (int r = 0; r < run.world_size; ++r)
      if (std::find(ranks_.begin(), ranks_.end(), r) == ranks_.end()) peers = std::max(peers, last_step(r));
    for (int r : ranks_) {
      if (last_step(r) < peers)
        return {true, fmt::format("{}; rank {} ran {} step(s), its peers {}", m.evidence, r, last_step(r), peers)};
    }
    return {false, fmt::format("{}; but rank {} ran as many steps as its peers ({})", m.evidence,
                               ranks_.empty() ? -1 : ranks_.front(), peers)};
  }

 protected:
  void validate(const nlohmann::json& hook, const FaultSpec& spec, const std::string& file) override {
    std::string mode = hook.value("mode", "fewer");
    if (mode != "fewer" && mode != "drop_last_mismatch")
      throw config_error_at(file, *spec.table.get("mode"), spec.key_prefix() + ".mode", "expected \"fewer\" or \"drop_last_mismatch\"");
  }
};
}  // namespace

InjectorInfo uneven_batches_info() {
  InjectorInfo i{"uneven_batches", "the chosen rank's sampler yields fewer batches, so it leaves the loop while peers wait",
                 "in-process hook (HANGLAB_HOOKS) in the workload's sampler (built-in training loops only)",
                 uneven_keys(), [] { return std::make_unique<UnevenBatches>(); }};
  i.default_trigger = "mode fewer: at_step = steps (the rank's last batch is missing); drop_last_mismatch: from launch";
  return i;
}

}  // namespace hanglab
