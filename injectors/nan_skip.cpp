// nan_skip: the chosen rank's loss is NaN at a step and the training script does what
// many do on a non-finite loss — skips backward, the gradient allreduces and the
// optimizer step — while its peers enter that step's allreduces. Program logic, so it is
// an in-process hook of workloads/common.
#include "hook_injector.hpp"

namespace hanglab {

namespace {
class NanSkip : public HookInjector {
 public:
  NanSkip() : HookInjector("nan_skip", {}) {}

  // Needs the built-in training loop (HookInjector::adapt). Manifested when the rank
  // traces the hook's `fault` event naming the seqs it skipped.
  Manifest manifested(const RunFactsView& run) const override { return hook_acted(run); }
};
}  // namespace

InjectorInfo nan_skip_info() {
  InjectorInfo i{"nan_skip",
                 "the chosen ranks see a NaN loss at a step and skip backward, its gradient allreduces and the "
                 "optimizer step",
                 "in-process hook (HANGLAB_HOOKS) in forward: the loss is forced to NaN and the step's update is "
                 "skipped; the rank traces a `fault` event naming the seqs it skips",
                 {}, [] { return std::make_unique<NanSkip>(); }};
  i.default_trigger = "at_step = 1";
  return i;
}

}  // namespace hanglab
