// Pieces shared by the node and network faults of [topology] nodes > 1 (kill_node,
// freeze_node, partition, packet_loss, bandwidth, link_flap, mtu_mismatch,
// store_unreachable): the `nodes = [..]` key, and packet filters and qdiscs inside a
// node's network namespace. A filter lives in the node's namespace, so it goes with the
// namespace at the end of the run (and with the sweep after a kill -9); revert removes
// it earlier all the same, and reads its counters first: the dropped packets are the
// evidence that the fault acted.
#pragma once

#include <string>
#include <vector>

#include "injector.hpp"

namespace hanglab {

// The `nodes` key every node/network fault has: which nodes it acts on.
KeyDoc nodes_key(const std::string& default_doc = "(the last node)");

// configure(): reads `nodes` (a list of distinct node numbers >= 0; range-checked in adapt).
// Empty when absent. Throws ConfigError.
std::vector<int> read_nodes(const FaultSpec& spec, const std::string& file);

// adapt(): refuses a scenario with one node, nodes beyond [topology] nodes, a `ranks` key
// (node faults choose nodes), and fills the default (the last node) when `nodes` is
// absent. Returns the record line of a default it chose ("" = none).
std::string adapt_nodes(AdaptContext& ctx, std::vector<int>& nodes, bool allow_node0 = true);

// "node 1", "nodes 1,2"
std::string node_list(const std::vector<int>& nodes);

// An nftables table `inet <name>` in a node's namespace, made of `chains` (nft syntax of
// the table's body), applied with one `nft -f -`-like call. Every rule that drops should
// carry `counter` so dropped_packets() can tell.
class NodeFilter {
 public:
  NodeFilter(std::string name, int node) : name_(std::move(name)), node_(node) {}
  void apply(const NodeNetView& net, const std::string& chains);
  // Reads the table's counters (sum of the packets its rules counted), then deletes it;
  // idempotent, quiet when the table or the namespace is gone already.
  void remove(const NodeNetView& net);
  long long dropped_packets() const { return dropped_; }
  bool applied() const { return applied_; }
  int node() const { return node_; }

 private:
  long long read_counters(const NodeNetView& net) const;
  std::string name_;
  int node_;
  bool applied_ = false;
  long long dropped_ = 0;
};

// The drop counters of a node's filters as one phrase: "412 packets dropped on node 1".
std::string dropped_phrase(const std::vector<NodeFilter>& filters);

}  // namespace hanglab
