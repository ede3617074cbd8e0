// Nodes on one host ([topology] nodes > 1): each node is a named network namespace whose
// eth0 is a veth on a bridge this run creates, with its own address in a private range
// (10.231.S.(101+k)/24 on node k, S leased per run so parallel runs never share a subnet); with
// second_nic, also an eth1 whose other end is attached to nothing, address 10.230.S.(101+k)/24
// on node k: an interface that exists and is up, on a network no peer is reached through
// (a storage or management NIC, a NIC cabled to another switch). The bridge holds
// 10.231.S.254: the management path from this namespace to every node. Nothing is routed
// beyond the bridge, so no packet leaves the host.
//
// Every namespace and interface is written to the run state before it is created and
// marked released when destroy() removes it; a hanglab killed with SIGKILL leaves them to
// the next start's sweep (run/state.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "injector.hpp"
#include "scenario/scenario.hpp"

namespace hanglab {

class RunState;

// Why nodes cannot be made here ("" = they can): root, the `ip` tool, /run/netns writable.
std::string nodes_unsupported_reason();

class NodeNet : public NodeNetView {
 public:
  // Creates everything; throws std::runtime_error (with what was made so far removed) on failure.
  NodeNet(const TopologySpec& topo, int world_size, int master_port, RunState* state);
  ~NodeNet() override;
  NodeNet(const NodeNet&) = delete;
  NodeNet& operator=(const NodeNet&) = delete;

  int nodes() const override { return topo_.nodes; }
  int node_of(int rank) const override { return topo_.node_of(rank); }
  std::vector<int> ranks_of(int node) const override;
  std::string ns(int node) const override;
  std::string addr(int node) const override;
  std::string subnet() const override;
  std::string host_link(int node) const override;
  int master_port() const override { return master_port_; }
  bool netem() const override { return netem_; }
  std::string run(int node, const std::vector<std::string>& argv) const override;

  std::string second_addr(int node) const;
  std::string node_name(int node) const { return "node" + std::to_string(node); }
  std::string name(int node) const override { return node_name(node); }
  // The argv wrapper that runs a rank in its node: `nsenter --net=/run/netns/NS --`, which
  // joins the network namespace only and execs, so the rank keeps the pid the supervisor
  // started. Not `ip netns exec`: that also enters a new mount namespace and remounts /sys
  // for the node, which hides the host's cgroup v1 hierarchies under /sys/fs/cgroup from
  // the rank's wrappers (oom_rank's `echo $$ > .../cgroup.procs` found no such directory).
  std::vector<std::string> wrapper(int node) const override;
  // The environment of a rank on `node`: MASTER_ADDR (node 0), the torchrun node variables,
  // GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME = eth0 (as a cluster's job template sets them).
  void apply_env(int rank, std::map<std::string, std::string>& env) const;
  // For run.json and harness.jsonl: nodes, addresses, ranks per node, mechanisms.
  nlohmann::json describe() const;
  // What an engineer runs on a hung multi-node job: ping from every node to every other
  // node's eth0, small packets (kProbePings of them, 10 ms apart) and packets that fill
  // eth0's MTU with "don't fragment" set, all pairs at once (about 1.5 s). Returns
  // {"pings": N, "mtu": M, "pairs": [{"from", "to", "small", "large"} (replies received)]}.
  // Needs `ping` (iputils-ping); {} when it is missing.
  nlohmann::json probe() const;
  // Removes the namespaces and the bridge; idempotent.
  void destroy();

 private:
  void create();
  TopologySpec topo_;
  int world_size_ = 0;
  int master_port_ = 0;
  RunState* state_ = nullptr;
  std::string tag_;     // short, unique per run on this host: interface names are <= 15 bytes
  int subnet_ = 0;      // S of 10.231.S.0/24
  int lease_fd_ = -1;   // the subnet lease (an abstract unix socket)
  bool netem_ = false;
  std::vector<std::pair<int, std::string>> made_;  // (state id, "netns:NAME" | "netdev:NAME"), creation order
};

}  // namespace hanglab
