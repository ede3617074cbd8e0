// wrong_socket_ifname: the chosen ranks are told to use a network interface for their
// collectives that does not exist on this host (GLOO_SOCKET_IFNAME and
// NCCL_SOCKET_IFNAME), as when a job template names `ib0` or `eth1` and the node has
// other names. Environment only: the variables are set before exec. Gloo fails to create
// its device ("Unable to find address for: <name>"), NCCL's bootstrap finds no socket
// interface ("Bootstrap : no socket interface found"); either way the process group
// cannot form, in the init phase.
//
// Needs nothing of the workload. Manifested when a targeted rank ran and never completed
// init (quoting its log line naming the interface when there is one).
#include "hook_injector.hpp"
#include "network_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> ifname_keys() {
  return {{"ifname", "string", "hanglab_none0",
           "interface name given to GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME (default: one that does not exist)"}};
}

class WrongSocketIfname : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, ifname_keys());
    ranks_ = spec.ranks;
    ifname_ = read_fault_key(spec, file, ifname_keys()[0]).get<std::string>();
    if (ifname_.empty())
      throw config_error_at(file, *spec.table.get("ifname"), spec.key_prefix() + ".ifname",
                            "must not be empty (an empty variable means \"any interface\" to both backends)");
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (!is_targeted(ranks_, rank)) return;
    spec.env["GLOO_SOCKET_IFNAME"] = ifname_;
    spec.env["NCCL_SOCKET_IFNAME"] = ifname_;
  }

  Manifest manifested(const RunFactsView& run) const override {
    for (int r : ranks_) {
      std::string e = rank_kept_out_of_init(run, r, ifname_);
      if (e.empty()) e = rank_kept_out_of_init(run, r, "socket interface");
      if (!e.empty()) return {true, e};
    }
    return {false, "every targeted rank completed init (or never ran): " + ifname_ + " stopped nobody"};
  }

  std::string fire(Job&) override {
    std::string rs;
    for (int r : ranks_) rs += (rs.empty() ? "" : ",") + std::to_string(r);
    return "rank(s) " + rs + " started with GLOO_SOCKET_IFNAME=NCCL_SOCKET_IFNAME=" + ifname_;
  }

 private:
  std::vector<int> ranks_;
  std::string ifname_;
};

}  // namespace

InjectorInfo wrong_socket_ifname_info() {
  return {"wrong_socket_ifname",
          "the chosen ranks get GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME naming an interface that is not there",
          "environment set before exec (acts from launch: leave at_step/at_s out)", ifname_keys(),
          [] { return std::make_unique<WrongSocketIfname>(); }};
}

}  // namespace hanglab
