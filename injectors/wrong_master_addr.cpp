// wrong_master_addr: the chosen ranks get a MASTER_ADDR where no rendezvous store
// listens (a stale or mistyped master address in the launch script), so they never join
// and their peers wait in rendezvous until init_s.
//
// On one host a different loopback address is not enough: TCPStore's server listens on
// the wildcard address, so 127.0.0.2 reaches it as well as 127.0.0.1 does. With
// `isolate = true` (the default) the chosen ranks therefore also run in a private network
// namespace holding only loopback, where `addr` is a live host with nothing listening on
// the port: the connection is refused, as from a real host without the store, and no
// packet leaves this machine. `isolate = false` only sets the variable, for addresses that
// are wrong by themselves (a name that does not resolve, a multi-host setup).
//
// Needs nothing of the workload. Manifested when a targeted rank ran and never completed
// init (rendezvous).
#include "hook_injector.hpp"
#include "network_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> addr_keys() {
  return {{"addr", "string", "127.0.0.2", "MASTER_ADDR given to the chosen ranks"},
          {"isolate", "bool", "true",
           "also run the chosen ranks in a private network namespace (loopback only), so that addr cannot reach the "
           "store on this host (needs root, unshare and ip)"}};
}

class WrongMasterAddr : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    const auto keys = addr_keys();
    reject_unknown_keys(spec, file, keys);
    ranks_ = spec.ranks;
    addr_ = read_fault_key(spec, file, keys[0]).get<std::string>();
    isolate_ = read_fault_key(spec, file, keys[1]).get<bool>();
    if (addr_.empty())
      throw config_error_at(file, *spec.table.get("addr"), spec.key_prefix() + ".addr", "must not be empty");
  }

  std::string unsupported_reason(const HostInfo& host) const override {
    return isolate_ ? netns_unsupported_reason(host) : std::string();
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (!is_targeted(ranks_, rank)) return;
    right_addr_ = spec.env.count("MASTER_ADDR") ? spec.env.at("MASTER_ADDR") : "";
    spec.env["MASTER_ADDR"] = addr_;
    if (isolate_) prepend_wrapper(spec, private_netns_wrapper());
  }

  Manifest manifested(const RunFactsView& run) const override {
    for (int r : ranks_)
      if (std::string e = rank_kept_out_of_init(run, r, addr_); !e.empty()) return {true, e};
    return {false, "every targeted rank completed init (or never ran): MASTER_ADDR=" + addr_ + " stopped nobody"};
  }

  std::string fire(Job&) override {
    std::string rs;
    for (int r : ranks_) rs += (rs.empty() ? "" : ",") + std::to_string(r);
    return "rank(s) " + rs + " started with MASTER_ADDR=" + addr_ +
           (right_addr_.empty() ? "" : " (peers: " + right_addr_ + ")") +
           (isolate_ ? " in a private network namespace (loopback only)" : "");
  }

 private:
  std::vector<int> ranks_;
  std::string addr_;
  bool isolate_ = true;
  std::string right_addr_;
};

}  // namespace

InjectorInfo wrong_master_addr_info() {
  return {"wrong_master_addr", "the chosen ranks get a MASTER_ADDR where no rendezvous store listens",
          "environment set before exec, plus (isolate = true) an `unshare --net` wrapper: a private network namespace "
          "with only loopback, gone with the rank (acts from launch: leave at_step/at_s out)",
          addr_keys(), [] { return std::make_unique<WrongMasterAddr>(); }};
}

}  // namespace hanglab
