// packet_loss: a lossy link — a bad cable or optic, a congested or flapping switch port.
// A percentage of the packets of the chosen nodes' eth0 is dropped, in one direction or
// both. Where the kernel has sch_netem (most GPU runners) it is netem's `loss` on egress
// (and on the bridge side of the veth for ingress); elsewhere (this CI machine) an
// nftables rule with `numgen random`. The mechanism used is in the firing's detail.
//
// [topology] nodes > 1. Manifested when packets were dropped (nft counters, or netem's
// drop statistics).
#include <algorithm>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "node_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> loss_keys() {
  return {nodes_key(),
          {"percent", "float", "30", "share of packets dropped, 0 < percent <= 100"},
          {"direction", "string", "both", "which packets: both, in (to the node) or out (from the node)"}};
}

long long netem_drops(const std::string& out) {
  long long sum = 0;
  for (size_t p = out.find("dropped "); p != std::string::npos; p = out.find("dropped ", p + 8))
    sum += std::atoll(out.c_str() + p + 8);
  return sum;
}

class PacketLoss : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, loss_keys());
    nodes_ = read_nodes(spec, file);
    triggered_ = spec.at_step || spec.at_s || spec.at_output;
    percent_ = read_fault_key(spec, file, loss_keys()[1]).get<double>();
    if (!(percent_ > 0 && percent_ <= 100))
      throw config_error_at(file, *spec.table.get("percent"), spec.key_prefix() + ".percent", "must be > 0 and <= 100");
    direction_ = read_fault_key(spec, file, loss_keys()[2]).get<std::string>();
    if (direction_ != "both" && direction_ != "in" && direction_ != "out")
      throw config_error_at(file, *spec.table.get("direction"), spec.key_prefix() + ".direction",
                            "expected \"both\", \"in\" or \"out\"");
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override { return {adapt_nodes(ctx, nodes_)}; }

  // No trigger: in force before the first packet. A trigger: from the firing.
  void prepare_nodes(const NodeNetView& net) override {
    if (!triggered_) detail_ = act(&net);
  }
  std::string fire(Job&) override { return triggered_ ? act(nodes()) : detail_; }

 private:
  std::string act(const NodeNetView* net) {
    if (!net) return "no nodes";
    const bool in = direction_ != "out", out = direction_ != "in";
    use_netem_ = net->netem();
    for (int k : nodes_) {
      if (use_netem_) {
        if (out) net->run(k, {"tc", "qdisc", "add", "dev", "eth0", "root", "netem", "loss", fmt::format("{}%", percent_)});
        if (in)
          net->run(-1, {"tc", "qdisc", "add", "dev", net->host_link(k), "root", "netem", "loss", fmt::format("{}%", percent_)});
        netem_nodes_.push_back(k);
        continue;
      }
      // numgen random mod 10000 < percent*100: two decimals of the percentage.
      const int thr = static_cast<int>(percent_ * 100 + 0.5);
      std::string chains;
      if (in)
        chains += fmt::format("  chain in {{ type filter hook input priority -10; iifname \"eth0\" numgen random mod 10000 < {} "
                              "counter drop; }}\n",
                              thr);
      if (out)
        chains += fmt::format("  chain out {{ type filter hook output priority -10; oifname \"eth0\" numgen random mod 10000 "
                              "< {} counter drop; }}\n",
                              thr);
      NodeFilter f("hanglab_loss", k);
      f.apply(*net, chains);
      filters_.push_back(std::move(f));
    }
    return fmt::format("{}% of packets {} dropped on {} ({})", percent_,
                       direction_ == "both" ? "in and out" : direction_ == "in" ? "in" : "out", node_list(nodes_),
                       use_netem_ ? "netem loss" : "nftables numgen random: this kernel has no sch_netem");
  }

 public:
  void revert(Job&) override {
    const NodeNetView* net = nodes();
    if (!net) return;
    for (auto& f : filters_) f.remove(*net);
    for (int k : netem_nodes_) {
      try {
        netem_dropped_ += netem_drops(net->run(k, {"tc", "-s", "qdisc", "show", "dev", "eth0"}));
        netem_dropped_ += netem_drops(net->run(-1, {"tc", "-s", "qdisc", "show", "dev", net->host_link(k)}));
        net->run(k, {"tc", "qdisc", "del", "dev", "eth0", "root"});
      } catch (const std::exception&) {
      }
      try {
        net->run(-1, {"tc", "qdisc", "del", "dev", net->host_link(k), "root"});
      } catch (const std::exception&) {
      }
    }
    netem_nodes_.clear();
  }

  Manifest manifested(const RunFactsView&) const override {
    long long n = netem_dropped_;
    for (const auto& f : filters_) n += f.dropped_packets();
    if (filters_.empty() && !use_netem_) return {false, "the loss was never put in place"};
    if (n == 0) return {false, "no packet was dropped: no traffic passed while the loss was in force"};
    return {true, fmt::format("{} packet(s) dropped at {}% on {} ({})", n, percent_, node_list(nodes_),
                              use_netem_ ? "netem" : "nftables numgen")};
  }

 private:
  std::vector<int> nodes_;
  bool triggered_ = false;
  std::string detail_;
  double percent_ = 30;
  std::string direction_ = "both";
  bool use_netem_ = false;
  std::vector<NodeFilter> filters_;
  std::vector<int> netem_nodes_;
  long long netem_dropped_ = 0;
};

}  // namespace

InjectorInfo packet_loss_info() {
  return {"packet_loss", "drop a share of the chosen nodes' packets (bad cable or optic, congested switch port)",
          "netem loss on the node's veth where the kernel has sch_netem, else nftables `numgen random` drop in the node's "
          "namespace; from the trigger until revert",
          loss_keys(), [] { return std::make_unique<PacketLoss>(); }};
}

}  // namespace hanglab
