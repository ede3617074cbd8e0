// Shared pieces of the node and network faults (see node_common.hpp).
#include "node_common.hpp"

#include <cstdlib>
#include <fstream>
#include <set>
#include <unistd.h>

#include <fmt/format.h>

#include "hook_injector.hpp"

namespace hanglab {

KeyDoc nodes_key(const std::string& default_doc) {
  return {"nodes", "[int]", default_doc, "the nodes it acts on ([topology] nodes > 1; node k holds ranks k*R .. k*R+R-1)"};
}

std::vector<int> read_nodes(const FaultSpec& spec, const std::string& file) {
  std::vector<int> out;
  const toml::node* n = spec.table.get("nodes");
  if (!n) return out;
  const std::string key = spec.key_prefix() + ".nodes";
  const toml::array* a = n->as_array();
  if (!a || a->empty()) throw config_error_at(file, *n, key, "expected a non-empty list of node numbers, e.g. [1]");
  std::set<int> seen;
  for (const auto& e : *a) {
    if (!e.is_integer() || e.as_integer()->get() < 0 || e.as_integer()->get() > 1024)
      throw config_error_at(file, e, key, "expected node numbers >= 0");
    const int v = static_cast<int>(e.as_integer()->get());
    if (!seen.insert(v).second) throw config_error_at(file, e, key, fmt::format("node {} listed twice", v));
    out.push_back(v);
  }
  return out;
}

std::string adapt_nodes(AdaptContext& ctx, std::vector<int>& nodes, bool allow_node0) {
  const TopologySpec& tp = ctx.scenario.topology;
  if (!tp.multi_node())
    throw ctx.refuse("nodes", fmt::format("{} acts between nodes: the scenario needs [topology] nodes >= 2 (it has one "
                                          "node, every rank on this host's loopback)",
                                          ctx.spec.kind));
  if (ctx.spec.table.get("ranks"))
    throw ctx.refuse("ranks", fmt::format("{} acts on whole nodes: choose them with nodes = [..], not ranks", ctx.spec.kind));
  for (int k : nodes) {
    if (k >= tp.nodes)
      throw ctx.refuse("nodes", fmt::format("node {} does not exist: [topology] nodes = {} (nodes 0..{})", k, tp.nodes,
                                            tp.nodes - 1));
    if (!allow_node0 && k == 0)
      throw ctx.refuse("nodes", fmt::format("{} cannot act on node 0: that is where the store is", ctx.spec.kind));
  }
  std::string note;
  if (nodes.empty()) {
    nodes = {tp.nodes - 1};
    note = fmt::format("nodes = [{}] (default: the last node)", tp.nodes - 1);
  }
  // The fault's ranks are its nodes' ranks: an at_step trigger is due when one of them
  // enters the step, and the record names them.
  std::vector<int>& ranks = ctx.scenario.faults.at(static_cast<size_t>(ctx.spec.index)).ranks;
  ranks.clear();
  for (int k : nodes)
    for (int r = k * tp.ranks_per_node; r < (k + 1) * tp.ranks_per_node; ++r) ranks.push_back(r);
  return note;
}

std::string node_list(const std::vector<int>& nodes) {
  std::string s;
  for (int k : nodes) s += (s.empty() ? "" : ",") + std::to_string(k);
  return (nodes.size() == 1 ? "node " : "nodes ") + s;
}

void NodeFilter::apply(const NodeNetView& net, const std::string& chains) {
  char path[] = "/tmp/hanglab-nft-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) throw std::runtime_error("mkstemp for an nftables table failed");
  ::close(fd);
  {
    std::ofstream f(path);
    f << "table inet " << name_ << " {\n" << chains << "\n}\n";
  }
  try {
    net.run(node_, {"nft", "-f", path});
  } catch (...) {
    ::unlink(path);
    throw;
  }
  ::unlink(path);
  applied_ = true;
}

long long NodeFilter::read_counters(const NodeNetView& net) const {
  long long sum = 0;
  std::string out;
  try {
    out = net.run(node_, {"nft", "list", "table", "inet", name_});
  } catch (const std::exception&) {
    return -1;
  }
  for (size_t p = out.find("packets "); p != std::string::npos; p = out.find("packets ", p + 8))
    sum += std::atoll(out.c_str() + p + 8);
  return sum;
}

void NodeFilter::remove(const NodeNetView& net) {
  if (!applied_) return;
  applied_ = false;
  const long long n = read_counters(net);
  if (n > 0) dropped_ += n;
  try {
    net.run(node_, {"nft", "delete", "table", "inet", name_});
  } catch (const std::exception&) {
    // The namespace is gone (the run is over): the table went with it.
  }
}

std::string dropped_phrase(const std::vector<NodeFilter>& filters) {
  std::string s;
  for (const auto& f : filters)
    s += (s.empty() ? "" : ", ") + fmt::format("{} packet(s) dropped on node {}", f.dropped_packets(), f.node());
  return s;
}

}  // namespace hanglab
