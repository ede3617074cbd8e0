// store_unreachable: the chosen nodes cannot reach the rendezvous store, while everything
// else between the nodes works — a firewall rule or security group that forgot
// MASTER_PORT, a store bound to the wrong interface. Inside each chosen node an
// nftables rule drops TCP to node 0's address at the store's port. Without a trigger it
// holds from launch: those nodes' ranks time out connecting to the store (rendezvous);
// with one, the store's established connections go silent mid-run.
//
// [topology] nodes > 1; not node 0 (the store's own node). Manifested when packets to the
// store were dropped.
#include <fmt/format.h>

#include "hook_injector.hpp"
#include "node_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> store_keys() { return {nodes_key()}; }

class StoreUnreachable : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, store_keys());
    nodes_ = read_nodes(spec, file);
    triggered_ = spec.at_step || spec.at_s || spec.at_output;
  }
  std::vector<std::string> adapt(AdaptContext& ctx) override { return {adapt_nodes(ctx, nodes_, false)}; }
  void prepare_nodes(const NodeNetView& net) override {
    if (!triggered_) detail_ = act(&net);
  }
  std::string fire(Job&) override { return triggered_ ? act(nodes()) : detail_; }
  void revert(Job&) override {
    const NodeNetView* net = nodes();
    if (!net) return;
    for (auto& f : filters_) f.remove(*net);
  }
  Manifest manifested(const RunFactsView&) const override {
    long long n = 0;
    for (const auto& f : filters_) n += f.dropped_packets();
    if (filters_.empty()) return {false, "the store block was never put in place"};
    if (n == 0) return {false, "no packet to the store was dropped: the chosen nodes never tried to reach it"};
    return {true, fmt::format("{} packet(s) to the store dropped ({})", n, dropped_phrase(filters_))};
  }

 private:
  std::string act(const NodeNetView* net) {
    if (!net) return "no nodes";
    for (int k : nodes_) {
      NodeFilter f("hanglab_store", k);
      f.apply(*net, fmt::format("  chain out {{ type filter hook output priority -10; ip daddr {} tcp dport {} counter drop; }}",
                                net->addr(0), net->master_port()));
      filters_.push_back(std::move(f));
    }
    return fmt::format("{} cannot reach the store at {}:{} (nftables drop of TCP to that port)", node_list(nodes_),
                       net->addr(0), net->master_port());
  }
  std::vector<int> nodes_;
  bool triggered_ = false;
  std::string detail_;
  std::vector<NodeFilter> filters_;
};

}  // namespace

InjectorInfo store_unreachable_info() {
  return {"store_unreachable", "the chosen nodes cannot reach the rendezvous store's port (firewall, wrong bind address)",
          "nftables drop of TCP to node 0's address at MASTER_PORT inside each chosen node's namespace", store_keys(),
          [] { return std::make_unique<StoreUnreachable>(); }};
}

}  // namespace hanglab
