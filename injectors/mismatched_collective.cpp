// mismatched_collective: at a step the chosen rank's first gradient-bucket collective
// differs from its peers' at the same sequence number — a different element count
// (shape drift between ranks, e.g. a parameter created conditionally) or a different op
// (a broadcast where the peers allreduce). Program logic, so it is an in-process hook of
// workloads/common.
#include "hook_injector.hpp"

namespace hanglab {

namespace {
std::vector<KeyDoc> mismatch_keys() {
  return {{"op", "string", "allreduce",
           "allreduce: same op with a different numel | broadcast: a broadcast from rank 0 instead of the allreduce"},
          {"numel", "int", "(first bucket + 1)",
           "op allreduce only: elements of the mismatched allreduce"}};
}

class MismatchedCollective : public HookInjector {
 public:
  MismatchedCollective() : HookInjector("mismatched_collective", mismatch_keys()) {}

  // Needs the built-in training loop (HookInjector::adapt). Manifested when the rank
  // traces the hook's `fault` event naming the mismatched seq.
  Manifest manifested(const RunFactsView& run) const override { return hook_acted(run); }

 protected:
  void validate(const nlohmann::json& hook, const FaultSpec& spec, const std::string& file) override {
    const std::string op = hook.value("op", "allreduce");
    if (op != "allreduce" && op != "broadcast")
      throw config_error_at(file, *spec.table.get("op"), spec.key_prefix() + ".op",
                            "expected \"allreduce\" or \"broadcast\"");
    if (hook.contains("numel")) {
      // The workload keeps a broadcast at the bucket's size: a numel there would be ignored.
      if (op == "broadcast")
        throw config_error_at(file, *spec.table.get("numel"), spec.key_prefix() + ".numel",
                              "applies to op \"allreduce\" only (a mismatched broadcast keeps the bucket's numel)");
      if (hook["numel"].get<long long>() < 1)
        throw config_error_at(file, *spec.table.get("numel"), spec.key_prefix() + ".numel", "must be >= 1");
    }
  }
};
}  // namespace

InjectorInfo mismatched_collective_info() {
  InjectorInfo i{"mismatched_collective",
                 "the chosen ranks' first gradient collective of a step differs from the peers' (numel or op) at the "
                 "same seq",
                 "in-process hook (HANGLAB_HOOKS) on the step's first gradient bucket; the rank traces a `fault` event "
                 "naming the seq, its numel/op and the expected one",
                 mismatch_keys(), [] { return std::make_unique<MismatchedCollective>(); }};
  i.default_trigger = "at_step = 1";
  return i;
}

}  // namespace hanglab
