// extra_collective: the chosen rank issues one more allreduce than its peers at a step
// (a metric or a debug sum computed only on some ranks, `if rank == 0: all_reduce(x)`),
// the canonical collective-mismatch fault of PyTorch's own tests. Program logic, so it
// is an in-process hook of workloads/common: after the step's gradient allreduces the
// rank issues an allreduce of `numel` elements that no peer matches.
#include "hook_injector.hpp"

namespace hanglab {

namespace {
std::vector<KeyDoc> extra_keys() {
  return {{"numel", "int", "1", "elements of the extra allreduce (float32)"}};
}

class ExtraCollective : public HookInjector {
 public:
  ExtraCollective() : HookInjector("extra_collective", extra_keys()) {}

  // Needs the built-in training loop (HookInjector::adapt). Manifested when the rank
  // traces the hook's `fault` event naming the extra allreduce's seq.
  Manifest manifested(const RunFactsView& run) const override { return hook_acted(run); }

 protected:
  void validate(const nlohmann::json& hook, const FaultSpec& spec, const std::string& file) override {
    if (hook.value("numel", 1) < 1)
      throw config_error_at(file, *spec.table.get("numel"), spec.key_prefix() + ".numel", "must be >= 1");
  }
};
}  // namespace

InjectorInfo extra_collective_info() {
  InjectorInfo i{"extra_collective", "the chosen ranks issue one extra allreduce at a step that their peers do not",
                 "in-process hook (HANGLAB_HOOKS) after the step's gradient allreduces; the rank traces a `fault` "
                 "event naming the extra seq",
                 extra_keys(), [] { return std::make_unique<ExtraCollective>(); }};
  i.default_trigger = "at_step = 1";
  return i;
}

}  // namespace hanglab
