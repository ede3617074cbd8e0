// exception_on_rank: an unhandled exception kills one rank mid-step — a CUDA error
// (illegal memory access, device-side assert), a bad sample in the data pipeline, a
// bug in one rank's branch. The rank's forward throws at the trigger step, the error
// reaches the workload's top level (trace `error` event) and the rank exits with code
// 1; its peers are left waiting in the step's collectives. Program logic, so it is an
// in-process hook ("exception") of workloads/common, which traces a `fault` event just
// before it throws.
#include "hook_injector.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> exception_keys() {
  return {{"message", "string", "injected RuntimeError: CUDA error: an illegal memory access was encountered",
           "what() of the exception thrown in forward (what the rank's log and trace show)"}};
}

class ExceptionOnRank : public HookInjector {
 public:
  ExceptionOnRank() : HookInjector("exception", exception_keys()) {}

  // Needs the built-in training loop (HookInjector::adapt). Manifested when the rank
  // traces the hook's `fault` event and the exception ended it: a trace `error` or a
  // non-zero exit (a rank that caught it and went on was not killed by it).
  Manifest manifested(const RunFactsView& run) const override {
    Manifest m = hook_acted(run);
    if (!m.exercised) return m;
    for (int r : ranks_) {
      const RankExit* e = run.exit_of(r);
      const auto errors = run.events(r, "error");
      if (!errors.empty()) return {true, m.evidence + "; the rank's trace `error`: " + errors.front()->value("msg", "")};
      if (e && e->status() != 0) return {true, m.evidence + "; the rank exited with status " + std::to_string(e->status())};
    }
    return {false, m.evidence + "; but no targeted rank died of it (no trace `error`, no non-zero exit)"};
  }

 protected:
  void validate(const nlohmann::json& hook, const FaultSpec& spec, const std::string& file) override {
    if (hook.value("message", "").empty())
      throw config_error_at(file, *spec.table.get("message"), spec.key_prefix() + ".message", "must not be empty");
  }
};

}  // namespace

InjectorInfo exception_on_rank_info() {
  InjectorInfo i{"exception_on_rank",
                 "the chosen ranks throw an unhandled exception in forward (CUDA error, bad sample): exit 1",
                 "in-process hook \"exception\" (HANGLAB_HOOKS) in workloads/common; the rank traces a `fault` event, "
                 "throws std::runtime_error(message) in forward of the trigger step and exits with code 1",
                 exception_keys(), [] { return std::make_unique<ExceptionOnRank>(); }};
  i.default_trigger = "at_step = 1";
  return i;
}

}  // namespace hanglab
