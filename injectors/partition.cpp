// partition: the chosen nodes are cut off from the rest of the cluster — a switch or
// top-of-rack failure, a misapplied security group, a routing flap. Inside each chosen
// node's namespace an nftables table drops every packet to and from the other nodes'
// addresses (its own ranks still reach each other over loopback). With duration_s > 0 the
// partition heals after that long (the table is deleted): a partition that mends while
// the collectives still wait.
//
// [topology] nodes > 1. Manifested when the filter dropped packets (its counters).
#include <algorithm>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "node_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> partition_keys() {
  return {nodes_key(), {"duration_s", "float", "0", "seconds until the partition heals (0 = it lasts until the run ends)"}};
}

class Partition : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, partition_keys());
    nodes_ = read_nodes(spec, file);
    triggered_ = spec.at_step || spec.at_s || spec.at_output;
    duration_s_ = read_fault_key(spec, file, partition_keys()[1]).get<double>();
    if (duration_s_ < 0)
      throw config_error_at(file, *spec.table.get("duration_s"), spec.key_prefix() + ".duration_s", "must be >= 0");
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    std::string note = adapt_nodes(ctx, nodes_);
    if (static_cast<int>(nodes_.size()) >= ctx.scenario.topology.nodes)
      throw ctx.refuse("nodes", "a partition needs nodes on both sides: leave at least one node out of nodes = [..]");
    return {note};
  }

  // No trigger: in force before the first packet. A trigger: from the firing.
  void prepare_nodes(const NodeNetView& net) override {
    if (!triggered_) detail_ = act(&net);
  }
  std::string fire(Job&) override { return triggered_ ? act(nodes()) : detail_; }

 private:
  std::string act(const NodeNetView* net) {
    if (!net) return "no nodes to partition";
    std::string others;
    for (int k = 0; k < net->nodes(); ++k)
      if (std::find(nodes_.begin(), nodes_.end(), k) == nodes_.end()) others += (others.empty() ? "" : ", ") + net->addr(k);
    for (int k : nodes_) {
      NodeFilter f("hanglab_partition", k);
      f.apply(*net, fmt::format("  chain in {{ type filter hook input priority -10; ip saddr {{ {0} }} counter drop; }}\n"
                                "  chain out {{ type filter hook output priority -10; ip daddr {{ {0} }} counter drop; }}",
                                others));
      filters_.push_back(std::move(f));
    }
    return fmt::format("{} cut off from {} (nftables drop in the node's namespace){}", node_list(nodes_), others,
                       duration_s_ > 0 ? fmt::format(", heals after {} s", duration_s_) : "");
  }

 public:
  std::string tick(Job&, double since_fire_s) override {
    if (duration_s_ <= 0 || healed_ || filters_.empty() || since_fire_s < duration_s_) return {};
    heal();
    return fmt::format("partition of {} healed after {:.1f} s ({})", node_list(nodes_), since_fire_s,
                       dropped_phrase(filters_));
  }

  void revert(Job&) override { heal(); }

  Manifest manifested(const RunFactsView&) const override {
    long long n = 0;
    for (const auto& f : filters_) n += f.dropped_packets();
    if (filters_.empty()) return {false, "the partition was never put in place"};
    if (n == 0) return {false, "the partition dropped no packet: no traffic crossed it"};
    return {true, "partition in force: " + dropped_phrase(filters_)};
  }

 private:
  void heal() {
    const NodeNetView* net = nodes();
    if (!net) return;
    for (auto& f : filters_) f.remove(*net);
    healed_ = true;
  }
  std::vector<int> nodes_;
  bool triggered_ = false;
  std::string detail_;
  double duration_s_ = 0;
  std::vector<NodeFilter> filters_;
  bool healed_ = false;
};

}  // namespace

InjectorInfo partition_info() {
  return {"partition", "cut the chosen nodes off from the other nodes (switch failure, bad firewall), optionally healing",
          "nftables drop of traffic to/from the other nodes' addresses inside each chosen node's namespace, from the "
          "trigger; deleted after duration_s and on revert",
          partition_keys(), [] { return std::make_unique<Partition>(); }};
}

}  // namespace hanglab
