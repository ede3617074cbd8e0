// skip_collective: a data-dependent branch makes the chosen rank skip a step's
// gradient allreduces (or the barrier after a checkpoint). Program logic, so it is an
// in-process hook of workloads/common.
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
  return {"skip_collective", "the chosen ranks skip a step's gradient allreduces (a data-dependent branch)",
          "in-process hook (HANGLAB_HOOKS) in workloads/common; the rank traces a `fault` event when it skips",
          skip_keys(), [] { return std::make_unique<SkipCollective>(); }};
}

}  // namespace hanglab
