// skip_collective: a data-dependent branch makes the chosen rank skip a step's
// gradient allreduces (or the barrier after a checkpoint). Program logic, so it is an
// in-process hook of workloads/common.
//
// Needs the built-in training loop; op = "barrier" also needs a checkpoint at or after the
// trigger step (the barrier follows a save): without checkpoint_every it is set to the
// trigger step, a checkpoint_every that saves nothing in [at_step, steps] is refused.
// Manifested when the rank traces the hook's `fault` event naming what it skipped.
#include <fmt/format.h>

#include "hook_injector.hpp"

namespace hanglab {

namespace {
std::vector<KeyDoc> skip_keys() {
  return {{"count", "int", "1", "consecutive steps whose collectives are skipped, from the trigger step"},
          {"op", "string", "allreduce", "what is skipped: allreduce (all gradient buckets of the step) | barrier (the post-checkpoint barrier)"}};
}

class SkipCollective : public HookInjector {
 public:
  SkipCollective() : HookInjector("skip_collective", skip_keys()) {}

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    std::vector<std::string> notes = HookInjector::adapt(ctx);
    if (hook_.value("op", "allreduce") != "barrier") return notes;
    const int from = hook_.value("at_step", 1), steps = ctx.scenario.workload.steps;
    if (!ctx.arg_given("checkpoint_every")) {
      notes.push_back(ctx.set_default_arg("checkpoint_every", std::to_string(from),
                                          "op = barrier skips the barrier after a checkpoint: one is saved at the "
                                          "trigger step"));
      return notes;
    }
    long long every = 0;
    try {
      every = std::stoll(ctx.arg("checkpoint_every"));
    } catch (const std::exception&) {
    }
    const bool saves = every > 0 && (steps / every) * every >= from;
    if (!saves && !at_s_ && !ctx.expects_no_effect())
      throw ctx.refuse("op", fmt::format("op = \"barrier\" skips the barrier after a checkpoint, but checkpoint_every "
                                         "= {} saves none in steps {}..{}",
                                         every, from, steps));
    return notes;
  }

  Manifest manifested(const RunFactsView& run) const override { return hook_acted(run); }

 protected:
  void validate(const nlohmann::json& hook, const FaultSpec& spec, const std::string& file) override {
    std::string op = hook.value("op", "allreduce");
    if (op != "allreduce" && op != "barrier")
      throw config_error_at(file, *spec.table.get("op"), spec.key_prefix() + ".op", "expected \"allreduce\" or \"barrier\"");
    if (hook.value("count", 1) < 1)
      throw config_error_at(file, *spec.table.get("count"), spec.key_prefix() + ".count", "must be >= 1");
  }
};
}  // namespace

InjectorInfo skip_collective_info() {
  InjectorInfo i{"skip_collective", "the chosen ranks skip a step's gradient allreduces (a data-dependent branch)",
                 "in-process hook (HANGLAB_HOOKS) in workloads/common; the rank traces a `fault` event when it skips",
                 skip_keys(), [] { return std::make_unique<SkipCollective>(); }};
  i.default_trigger = "at_step = 1";
  return i;
}

}  // namespace hanglab
