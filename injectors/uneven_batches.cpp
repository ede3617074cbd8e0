// uneven_batches: the chosen rank's sampler yields fewer batches than its peers', so it
// leaves the training loop early while they wait in the next collective (or, with
// mode = "drop_last_mismatch", it disagrees with its peers on DistributedSampler's
// drop_last and its batch count differs naturally).
#include "hook_injector.hpp"

namespace hanglab {

namespace {
std::vector<KeyDoc> uneven_keys() {
  return {{"mode", "string", "fewer",
           "fewer: the rank's data runs out before the trigger step (needs at_step) | drop_last_mismatch: the rank uses the opposite drop_last"}};
}

class UnevenBatches : public HookInjector {
 public:
  UnevenBatches() : HookInjector("uneven_batches", uneven_keys()) {}

 protected:
  void validate(const nlohmann::json& hook, const FaultSpec& spec, const std::string& file) override {
    std::string mode = hook.value("mode", "fewer");
    if (mode != "fewer" && mode != "drop_last_mismatch")
      throw config_error_at(file, *spec.table.get("mode"), spec.key_prefix() + ".mode", "expected \"fewer\" or \"drop_last_mismatch\"");
    if (mode == "fewer" && !spec.at_step)
      throw config_error_at(file, spec.table, spec.key_prefix() + ".at_step", "mode \"fewer\" needs at_step: the step the rank's data runs out at");
  }
};
}  // namespace

InjectorInfo uneven_batches_info() {
  return {"uneven_batches", "the chosen rank's sampler yields fewer batches, so it leaves the loop while peers wait",
          "in-process hook (HANGLAB_HOOKS) in the workload's sampler", uneven_keys(),
          [] { return std::make_unique<UnevenBatches>(); }};
}

}  // namespace hanglab
