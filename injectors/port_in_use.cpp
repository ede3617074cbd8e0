// port_in_use: the run's MASTER_PORT is already taken when the ranks start — a process
// left over from an earlier job, or another job on the node that picked the same port.
// Before the first rank is exec'd the injector starts a holder process that listens on
// that port (0.0.0.0 and [::]) and never answers; revert kills it. Rank 0 cannot start
// the rendezvous store ("Address already in use"); the other ranks connect to the holder
// instead and wait for answers that never come, until the store timeout (init_s).
//
// `ranks` does not choose anything here: every rank shares the one port. List the rank
// that hosts the store ([0]), whose failure is the first one.
//
// Needs nothing of the workload. Manifested when the holder was listening and a rank
// reported the taken port ("Address already in use") or no rank completed init.
#include "hook_injector.hpp"
#include "network_common.hpp"

namespace hanglab {

namespace {

class PortInUse : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, {});
  }

  void prepare_rank(int /*rank*/, LaunchSpec& spec) override {
    // Every rank gets the same MASTER_PORT; the first prepared rank starts the holder,
    // before any rank is exec'd (the runner prepares all ranks, then launches).
    if (holder_.running() || tried_) return;
    tried_ = true;
    // Without a MASTER_PORT (a launch spec not made by the runner) there is no port to
    // take; fire() says so in harness.jsonl rather than failing the run.
    if (!spec.env.count("MASTER_PORT")) return;
    // On [topology] nodes the store is node 0's: the holder takes the port in node 0's namespace.
    holder_.start(env_int_of(spec, "MASTER_PORT"), state(), nodes() ? nodes()->ns(0) : "");
  }

  Manifest manifested(const RunFactsView& run) const override {
    if (!held_) return {false, "no holder was listening on MASTER_PORT"};
    for (int r = 0; r < run.world_size; ++r)
      if (std::string line = run.log_line(r, "Address already in use"); !line.empty())
        return {true, "rank " + std::to_string(r) + " found the port taken: " + line};
    std::string kept;
    for (int r = 0; r < run.world_size; ++r) {
      std::string e = rank_kept_out_of_init(run, r, "");
      if (e.empty()) return {false, "rank " + std::to_string(r) + " completed init despite the holder"};
      kept = e;
    }
    if (kept.empty()) return {false, "no rank ran"};
    return {true, "no rank completed init while the holder listened on the port; e.g. " + kept};
  }

  std::string fire(Job&) override {
    held_ = held_ || holder_.running();
    if (!holder_.running()) return "no holder running (no MASTER_PORT in the launch environment)";
    return "holder pid " + std::to_string(holder_.pid()) + " listens on 0.0.0.0:" + std::to_string(holder_.port()) +
           " and [::]:" + std::to_string(holder_.port()) + " (the run's MASTER_PORT) and never answers";
  }

  void revert(Job&) override {
    holder_.stop();
    tried_ = false;
  }

 private:
  PortHolder holder_;
  bool tried_ = false;
  bool held_ = false;  // the holder was listening when the fault fired
};

}  // namespace

InjectorInfo port_in_use_info() {
  return {"port_in_use",
          "MASTER_PORT is already held by another process when the ranks start (rank 0 cannot host the store)",
          "a holder process forked before launch listens on the run's MASTER_PORT and never answers; revert kills it "
          "(acts from launch: leave at_step/at_s out; ranks: list [0], the store host — the port is shared)",
          {}, [] { return std::make_unique<PortInUse>(); }};
}

}  // namespace hanglab
