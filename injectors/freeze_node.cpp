// freeze_node: a whole node stops answering but nothing exits — a hypervisor pause, a
// node wedged in the kernel, a machine swapping itself to death. SIGSTOP to every rank
// of the chosen nodes at once; with duration_s > 0, SIGCONT after that long (a node that
// comes back: a straggler rather than a hang).
//
// [topology] nodes > 1. Manifested when the ranks of the node were seen stopped (state T).
#include <chrono>
#include <csignal>
#include <thread>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "node_common.hpp"
#include "process_control.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> freeze_node_keys() {
  return {nodes_key(),
          {"duration_s", "float", "0", "seconds until SIGCONT resumes the node (0 = frozen until the run ends)"}};
}

class FreezeNode : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, freeze_node_keys());
    nodes_ = read_nodes(spec, file);
    duration_s_ = read_fault_key(spec, file, freeze_node_keys()[1]).get<double>();
    if (duration_s_ < 0)
      throw config_error_at(file, *spec.table.get("duration_s"), spec.key_prefix() + ".duration_s", "must be >= 0");
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    ranks_per_node_ = ctx.scenario.topology.ranks_per_node;
    return {adapt_nodes(ctx, nodes_)};
  }

  std::string fire(Job& job) override {
    // Stop them all first, then look: the node freezes as one, not rank by rank.
    for (int k : nodes_)
      for (int r = k * ranks_per_node_; r < (k + 1) * ranks_per_node_; ++r) {
        const pid_t pid = job.pid_of(r);
        if (!job.alive(r) || pid <= 0) continue;
        ProcessRef ref = ProcessRef::of(r, pid);
        if (signal_rank(pid, SIGSTOP) == 0) stopped_.push_back(ref);
      }
    for (const auto& ref : stopped_) {
      char st = 0;
      for (int i = 0; i < 50 && (st = process_state(ref.pid)) != 'T' && st != 't'; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (st == 'T' || st == 't') ++seen_stopped_;
    }
    return fmt::format("SIGSTOP {} ({} rank(s), {} seen stopped){}", node_list(nodes_), stopped_.size(), seen_stopped_,
                       duration_s_ > 0 ? fmt::format(", SIGCONT after {} s", duration_s_) : ", frozen until the run ends");
  }

  std::string tick(Job&, double since_fire_s) override {
    if (duration_s_ <= 0 || stopped_.empty() || since_fire_s < duration_s_) return {};
    resume_all();
    return fmt::format("SIGCONT {} after {:.1f} s", node_list(nodes_), since_fire_s);
  }

  Manifest manifested(const RunFactsView&) const override {
    if (seen_stopped_ == 0) return {false, "no rank of " + node_list(nodes_) + " was seen stopped"};
    return {true, fmt::format("{} rank(s) of {} in state T (stopped) after SIGSTOP{}", seen_stopped_, node_list(nodes_),
                              duration_s_ > 0 ? fmt::format(", resumed after {} s", duration_s_) : std::string())};
  }

  void revert(Job&) override { resume_all(); }

 private:
  void resume_all() {
    for (const auto& ref : stopped_)
      if (ref.same_process()) signal_rank(ref.pid, SIGCONT);
    stopped_.clear();
  }
  std::vector<int> nodes_;
  int ranks_per_node_ = 0;
  double duration_s_ = 0;
  std::vector<ProcessRef> stopped_;
  int seen_stopped_ = 0;
};

}  // namespace

InjectorInfo freeze_node_info() {
  return {"freeze_node", "every rank of the chosen nodes stops at once, alive and silent (paused or wedged host)",
          "kill(2) SIGSTOP to each rank's process group of the nodes when the trigger is due; SIGCONT after duration_s "
          "and on revert",
          freeze_node_keys(), [] { return std::make_unique<FreezeNode>(); }};
}

}  // namespace hanglab
