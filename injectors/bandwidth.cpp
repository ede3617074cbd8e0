// bandwidth: a slow link — a port negotiated down to a lower speed, an oversubscribed
// uplink, traffic shaping. A token bucket (tbf) limits the chosen nodes' eth0 to `rate`
// in both directions: on the node's side for what it sends, on the bridge side of its
// veth for what it receives. Healthy-but-slow work: whether the job merely slows down or
// its collectives time out depends on the rate against the timeouts.
//
// [topology] nodes > 1. Manifested when the bucket held packets back (tbf's overlimits or
// drops in `tc -s`).
#include <cstdlib>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "node_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> bandwidth_keys() {
  return {nodes_key(), {"rate_kbit", "int", "2000", "the link's rate in kbit/s, each direction (>= 8)"}};
}

long long tbf_held(const std::string& out) {
  long long sum = 0;
  for (const char* key : {"dropped ", "overlimits "}) {
    const std::string k = key;
    for (size_t p = out.find(k); p != std::string::npos; p = out.find(k, p + k.size()))
      sum += std::atoll(out.c_str() + p + k.size());
  }
  return sum;
}

class Bandwidth : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, bandwidth_keys());
    nodes_ = read_nodes(spec, file);
    triggered_ = spec.at_step || spec.at_s || spec.at_output;
    rate_ = read_fault_key(spec, file, bandwidth_keys()[1]).get<long long>();
    if (rate_ < 8)
      throw config_error_at(file, *spec.table.get("rate_kbit"), spec.key_prefix() + ".rate_kbit", "must be >= 8");
  }
  std::vector<std::string> adapt(AdaptContext& ctx) override { return {adapt_nodes(ctx, nodes_)}; }
  void prepare_nodes(const NodeNetView& net) override {
    if (!triggered_) detail_ = act(&net);
  }
  std::string fire(Job&) override { return triggered_ ? act(nodes()) : detail_; }

  void revert(Job&) override {
    const NodeNetView* net = nodes();
    if (!net) return;
    for (int k : shaped_) {
      try {
        held_ += tbf_held(net->run(k, {"tc", "-s", "qdisc", "show", "dev", "eth0"}));
        net->run(k, {"tc", "qdisc", "del", "dev", "eth0", "root"});
      } catch (const std::exception&) {
      }
      try {
        held_ += tbf_held(net->run(-1, {"tc", "-s", "qdisc", "show", "dev", net->host_link(k)}));
        net->run(-1, {"tc", "qdisc", "del", "dev", net->host_link(k), "root"});
      } catch (const std::exception&) {
      }
    }
    shaped_.clear();
  }

  Manifest manifested(const RunFactsView&) const override {
    if (!acted_) return {false, "the rate limit was never put in place"};
    if (held_ == 0) return {false, fmt::format("the {} kbit/s limit never held a packet back", rate_)};
    return {true, fmt::format("tbf at {} kbit/s on {} held packets back {} time(s) (overlimits + drops)", rate_,
                              node_list(nodes_), held_)};
  }

 private:
  std::string act(const NodeNetView* net) {
    if (!net) return "no nodes";
    const std::string rate = fmt::format("{}kbit", rate_);
    // burst: at least one jumbo frame and 10 ms of the rate; latency bounds the queue.
    const std::string burst = fmt::format("{}b", std::max<long long>(10000, rate_ * 1000 / 8 / 100));
    for (int k : nodes_) {
      shaped_.push_back(k);
      net->run(k, {"tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate, "burst", burst, "latency", "500ms"});
      net->run(-1, {"tc", "qdisc", "add", "dev", net->host_link(k), "root", "tbf", "rate", rate, "burst", burst, "latency",
                    "500ms"});
    }
    acted_ = true;
    return fmt::format("{} limited to {} kbit/s each way (tbf on both ends of eth0)", node_list(nodes_), rate_);
  }
  std::vector<int> nodes_;
  bool triggered_ = false, acted_ = false;
  std::string detail_;
  long long rate_ = 2000;
  std::vector<int> shaped_;
  long long held_ = 0;
};

}  // namespace

InjectorInfo bandwidth_info() {
  return {"bandwidth", "limit the chosen nodes' link to a rate (port at a lower speed, oversubscribed uplink)",
          "tbf qdisc on both ends of the node's eth0 veth, from the trigger until revert", bandwidth_keys(),
          [] { return std::make_unique<Bandwidth>(); }};
}

}  // namespace hanglab
