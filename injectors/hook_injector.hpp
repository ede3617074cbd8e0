// HookInjector: the shared base of faults that are program logic (skipped or extra
// collectives, uneven batches, NaN-skip...). They act inside the rank through the hooks
// of workloads/common: prepare_rank() adds one hook object to HANGLAB_HOOKS of each
// targeted rank, carrying the trigger (at_step, or at_unix from at_s) and the
// injector's own keys. The rank writes a trace `fault` event when the hook acts.
#pragma once

#include "injector.hpp"

namespace hanglab {

// Reads `key` of the fault table with the type its KeyDoc declares; returns the default
// (parsed per type) when absent and the default is non-empty, null when absent and
// required-but-optional-by-trigger. Throws ConfigError on a wrong type.
nlohmann::json read_fault_key(const FaultSpec& spec, const std::string& file, const KeyDoc& doc);

class HookInjector : public Injector {
 public:
  HookInjector(std::string hook_kind, std::vector<KeyDoc> keys)
      : hook_kind_(std::move(hook_kind)), keys_(std::move(keys)) {}

  void configure(const FaultSpec& spec, const std::string& file) override;
  // Refuses a workload whose training loop does not read HANGLAB_HOOKS (a bring-your-own
  // command, nccl_probe). Subclasses that override it call it first.
  std::vector<std::string> adapt(AdaptContext& ctx) override;
  void prepare_rank(int rank, LaunchSpec& spec) override;
  bool in_process() const override { return true; }
  std::string hook_kind() const override { return hook_kind_; }

 protected:
  // Extra validation of the assembled hook object (e.g. a key required by a mode).
  virtual void validate(const nlohmann::json& /*hook*/, const FaultSpec& /*spec*/,
                        const std::string& /*file*/) {}
  // The judgment most hooks share: a targeted rank traced a `fault` event of this hook
  // (the workload writes it when the hook acted: the skipped seq, the extra allreduce...).
  // `effect` is appended to the evidence.
  Manifest hook_acted(const RunFactsView& run, const std::string& effect = {}) const;

  std::string hook_kind_;
  std::vector<KeyDoc> keys_;
  std::vector<int> ranks_;
  nlohmann::json hook_;
  std::optional<double> at_s_;
};

}  // namespace hanglab
