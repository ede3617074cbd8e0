// dns_failure: the chosen nodes' ranks are given the master by its host name (MASTER_ADDR =
// a name, as most job templates do) and cannot resolve it: a resolver outage on those
// nodes, a name missing from their hosts file, a search domain that differs. The name is
// in no hosts file and the nodes have no route to any name server (nothing is routed
// beyond the run's bridge), so the lookup fails at once (EAI_AGAIN / EAI_NONAME) and no
// query leaves the host. The other nodes keep the master's address: only the chosen
// nodes' ranks fail to reach the store, in init.
//
// [topology] nodes > 1 (on one host a lookup could reach this host's name server). Acts
// from launch: leave at_step/at_s out. Manifested when a targeted rank ran and never
// completed init.
#include <fmt/format.h>

#include "hook_injector.hpp"
#include "network_common.hpp"
#include "node_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> dns_keys() {
  return {nodes_key(),
          {"hostname", "string", "master-0.hanglab-job.svc.cluster.local",
           "the name the chosen nodes' ranks get as MASTER_ADDR (it resolves nowhere)"}};
}

class DnsFailure : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, dns_keys());
    nodes_ = read_nodes(spec, file);
    hostname_ = read_fault_key(spec, file, dns_keys()[1]).get<std::string>();
    if (hostname_.empty() || hostname_.find_first_of(" \t/") != std::string::npos)
      throw config_error_at(file, *spec.table.get("hostname"), spec.key_prefix() + ".hostname",
                            "expected a host name (no spaces or slashes)");
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    if (ctx.spec.at_step || ctx.spec.at_s || ctx.spec.at_output)
      throw ctx.refuse(ctx.spec.at_step ? "at_step" : ctx.spec.at_s ? "at_s" : "at_output",
                       "MASTER_ADDR is read at start-up: leave the trigger out");
    std::string note = adapt_nodes(ctx, nodes_);
    ranks_ = ctx.scenario.faults.at(static_cast<size_t>(ctx.spec.index)).ranks;
    return {note};
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (is_targeted(ranks_, rank)) spec.env["MASTER_ADDR"] = hostname_;
  }

  std::string fire(Job&) override {
    return fmt::format("{} started with MASTER_ADDR={}, a name their resolver cannot resolve", node_list(nodes_),
                       hostname_);
  }

  Manifest manifested(const RunFactsView& run) const override {
    for (int r : ranks_) {
      std::string e = rank_kept_out_of_init(run, r, hostname_);
      if (e.empty()) e = rank_kept_out_of_init(run, r, "resolv");
      if (!e.empty()) return {true, e};
    }
    return {false, "every targeted rank completed init (or never ran): " + hostname_ + " resolved after all"};
  }

 private:
  std::vector<int> nodes_;
  std::vector<int> ranks_;
  std::string hostname_;
};

}  // namespace

InjectorInfo dns_failure_info() {
  return {"dns_failure", "the chosen nodes get MASTER_ADDR as a host name they cannot resolve",
          "MASTER_ADDR set to a name in no hosts file, in nodes with no route to a name server (acts from launch)",
          dns_keys(), [] { return std::make_unique<DnsFailure>(); }};
}

}  // namespace hanglab
