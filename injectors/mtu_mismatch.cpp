// mtu_mismatch: every node is configured for jumbo frames (eth0 mtu, default 9000), but
// the path to the chosen nodes carries only path_mtu bytes (default 1500) — a switch port
// left at the default MTU, with no ICMP "fragmentation needed" coming back. The TCP
// handshake and the small messages of rendezvous pass; the first transfer that fills a
// jumbo segment is dropped silently, again on every retransmission, and that collective
// stalls until a timeout. Emulated with an nftables drop of packets longer than path_mtu
// on the chosen nodes' eth0 (both directions), which also catches segments the kernel
// would otherwise send as one offloaded super-packet.
//
// Always in force from launch (leave at_step/at_s out). [topology] nodes > 1. Manifested
// when oversized packets were dropped.
#include <fmt/format.h>

#include "hook_injector.hpp"
#include "node_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> mtu_keys() {
  return {nodes_key(),
          {"mtu", "int", "9000", "eth0 MTU every node is configured with (jumbo frames), 1280..65535"},
          {"path_mtu", "int", "1500", "the largest packet the chosen nodes' path carries, 576..mtu-1"}};
}

class MtuMismatch : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, mtu_keys());
    nodes_ = read_nodes(spec, file);
    mtu_ = static_cast<int>(read_fault_key(spec, file, mtu_keys()[1]).get<long long>());
    path_mtu_ = static_cast<int>(read_fault_key(spec, file, mtu_keys()[2]).get<long long>());
    if (mtu_ < 1280 || mtu_ > 65535)
      throw config_error_at(file, *spec.table.get("mtu"), spec.key_prefix() + ".mtu", "must be 1280..65535");
    if (path_mtu_ < 576 || path_mtu_ >= mtu_) {
      const toml::node* n = spec.table.get("path_mtu");
      throw config_error_at(file, n ? *n : *spec.table.get("mtu"), spec.key_prefix() + (n ? ".path_mtu" : ".mtu"),
                            fmt::format("path_mtu must be 576..mtu-1 (mtu {}, path_mtu {})", mtu_, path_mtu_));
    }
  }
  std::vector<std::string> adapt(AdaptContext& ctx) override {
    if (ctx.spec.at_step || ctx.spec.at_s || ctx.spec.at_output)
      throw ctx.refuse(ctx.spec.at_step ? "at_step" : ctx.spec.at_s ? "at_s" : "at_output",
                       "an MTU is configured before the job starts: leave the trigger out");
    return {adapt_nodes(ctx, nodes_)};
  }

  void prepare_nodes(const NodeNetView& net) override {
    for (int k = 0; k < net.nodes(); ++k) {
      net.run(k, {"ip", "link", "set", "eth0", "mtu", std::to_string(mtu_)});
      net.run(-1, {"ip", "link", "set", net.host_link(k), "mtu", std::to_string(mtu_)});
    }
    for (int k : nodes_) {
      NodeFilter f("hanglab_mtu", k);
      f.apply(net, fmt::format("  chain in {{ type filter hook input priority -10; iifname \"eth0\" meta length > {0} counter "
                               "drop; }}\n"
                               "  chain out {{ type filter hook output priority -10; oifname \"eth0\" meta length > {0} "
                               "counter drop; }}",
                               path_mtu_));
      filters_.push_back(std::move(f));
    }
  }

  std::string fire(Job&) override {
    return fmt::format("every node's eth0 at mtu {}; the path of {} carries {} bytes (larger packets dropped silently)", mtu_,
                       node_list(nodes_), path_mtu_);
  }

  void revert(Job&) override {
    const NodeNetView* net = nodes();
    if (!net) return;
    for (auto& f : filters_) f.remove(*net);
  }

  Manifest manifested(const RunFactsView&) const override {
    long long n = 0;
    for (const auto& f : filters_) n += f.dropped_packets();
    if (filters_.empty()) return {false, "the MTU mismatch was never put in place"};
    if (n == 0) return {false, fmt::format("no packet over {} bytes crossed the path: nothing large was sent", path_mtu_)};
    return {true, fmt::format("{} packet(s) over {} bytes dropped ({})", n, path_mtu_, dropped_phrase(filters_))};
  }

 private:
  std::vector<int> nodes_;
  int mtu_ = 9000, path_mtu_ = 1500;
  std::vector<NodeFilter> filters_;
};

}  // namespace

InjectorInfo mtu_mismatch_info() {
  return {"mtu_mismatch", "jumbo-frame NICs on a path that carries less: rendezvous passes, the first large transfer stalls",
          "eth0 mtu on every node; nftables drop of packets over path_mtu on the chosen nodes' eth0, from launch",
          mtu_keys(), [] { return std::make_unique<MtuMismatch>(); }};
}

}  // namespace hanglab
