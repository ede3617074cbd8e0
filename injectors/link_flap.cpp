// link_flap: the chosen nodes' link goes down and comes back — a flapping switch port, a
// NIC reset, a cable reseated. The bridge side of the node's veth is set down (the node's
// eth0 loses carrier) for duration_s, then up again. TCP connections survive a flap
// shorter than their retransmission limit; collectives stall meanwhile, and a flap longer
// than the collective timeout becomes a watchdog timeout.
//
// [topology] nodes > 1. Manifested when the node's eth0 was seen without carrier.
#include <fstream>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "node_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> flap_keys() {
  return {nodes_key(), {"duration_s", "float", "3", "seconds the link stays down (> 0)"}};
}

class LinkFlap : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, flap_keys());
    nodes_ = read_nodes(spec, file);
    duration_s_ = read_fault_key(spec, file, flap_keys()[1]).get<double>();
    if (!(duration_s_ > 0))
      throw config_error_at(file, *spec.table.get("duration_s"), spec.key_prefix() + ".duration_s", "must be > 0");
  }
  std::vector<std::string> adapt(AdaptContext& ctx) override { return {adapt_nodes(ctx, nodes_)}; }

  std::string fire(Job&) override {
    const NodeNetView* net = nodes();
    if (!net) return "no nodes";
    for (int k : nodes_) {
      net->run(-1, {"ip", "link", "set", net->host_link(k), "down"});
      down_.push_back(k);
    }
    // The node's side reports the lost carrier at once (veth): look there, as the node would.
    for (int k : nodes_) {
      try {
        const std::string out = net->run(k, {"ip", "-o", "link", "show", "eth0"});
        if (out.find("NO-CARRIER") != std::string::npos || out.find("state DOWN") != std::string::npos) ++seen_down_;
      } catch (const std::exception&) {
      }
    }
    return fmt::format("link of {} down (bridge side of eth0), up again after {} s", node_list(nodes_), duration_s_);
  }

  std::string tick(Job&, double since_fire_s) override {
    if (down_.empty() || since_fire_s < duration_s_) return {};
    up_all();
    return fmt::format("link of {} up again after {:.1f} s", node_list(nodes_), since_fire_s);
  }

  void revert(Job&) override { up_all(); }

  Manifest manifested(const RunFactsView&) const override {
    if (seen_down_ == 0) return {false, "no chosen node's eth0 was seen without carrier"};
    return {true, fmt::format("eth0 of {} without carrier for {} s", node_list(nodes_), duration_s_)};
  }

 private:
  void up_all() {
    const NodeNetView* net = nodes();
    if (!net) return;
    for (int k : down_) {
      try {
        net->run(-1, {"ip", "link", "set", net->host_link(k), "up"});
      } catch (const std::exception&) {
      }
    }
    down_.clear();
  }
  std::vector<int> nodes_;
  double duration_s_ = 3;
  std::vector<int> down_;
  int seen_down_ = 0;
};

}  // namespace

InjectorInfo link_flap_info() {
  return {"link_flap", "the chosen nodes' link goes down for duration_s, then up (flapping port, NIC reset)",
          "ip link set down/up on the bridge side of the node's veth when the trigger is due", flap_keys(),
          [] { return std::make_unique<LinkFlap>(); }};
}

}  // namespace hanglab
