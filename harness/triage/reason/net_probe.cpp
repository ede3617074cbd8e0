// Reachability probe -> verdict (see net_probe.hpp).
#include "triage/reason/net_probe.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace hanglab::reason {

namespace {

// A pair's state, worst first: no reply at all, large packets never, replies lost, fine.
enum class Link { kDown, kNoLarge, kLossy, kFine };

Link link_of(const HarnessProbePair& p, int pings) {
  if (p.small == 0) return Link::kDown;
  // 10 % of the replies may be late under load; more lost than that is loss.
  if (p.small * 10 < pings * 9) return Link::kLossy;
  if (p.large == 0) return Link::kNoLarge;
  return Link::kFine;
}

std::string name_of(const std::vector<HarnessNode>& nodes, int k) {
  for (const auto& n : nodes)
    if (n.node == k && !n.name.empty()) return n.name;
  return fmt::format("node{}", k);
}

}  // namespace

ProbeVerdict judge_probe(const HarnessProbe& probe, const std::vector<HarnessNode>& nodes) {
  ProbeVerdict v;
  if (probe.pairs.empty() || probe.pings <= 0) return v;
  std::map<std::pair<int, int>, Link> links;
  std::set<int> all;
  Link worst = Link::kFine;
  for (const auto& p : probe.pairs) {
    const Link l = link_of(p, probe.pings);
    links[{p.from, p.to}] = l;
    all.insert(p.from);
    all.insert(p.to);
    worst = std::min(worst, l);
  }
  if (worst == Link::kFine) return v;
  v.kind = worst == Link::kDown ? "partition" : worst == Link::kNoLarge ? "mtu_mismatch" : "packet_loss";
  // The culprit side: nodes whose every pair is bad, when the pairs among the rest are fine.
  std::vector<int> bad, rest;
  for (int k : all) {
    bool every = true;
    for (const auto& [ij, l] : links)
      if ((ij.first == k || ij.second == k) && l == Link::kFine) every = false;
    (every ? bad : rest).push_back(k);
  }
  bool rest_fine = !rest.empty();
  for (const auto& [ij, l] : links)
    if (std::count(rest.begin(), rest.end(), ij.first) && std::count(rest.begin(), rest.end(), ij.second) &&
        l != Link::kFine)
      rest_fine = false;
  if (rest_fine && !bad.empty() && bad.size() < rest.size() + bad.size()) v.nodes = bad;

  const auto pair_text = [&](const HarnessProbePair& p) {
    return fmt::format("{} -> {}: {}/{} replies{}", name_of(nodes, p.from), name_of(nodes, p.to), p.small, probe.pings,
                       p.small > 0 && p.large == 0 ? fmt::format(", 0 at {} bytes (don't fragment)", probe.mtu) : "");
  };
  std::string bad_pairs;
  int shown = 0;
  for (const auto& p : probe.pairs)
    if (link_of(p, probe.pings) != Link::kFine && shown++ < 4) bad_pairs += (bad_pairs.empty() ? "" : "; ") + pair_text(p);
  std::string who;
  if (!v.nodes.empty()) {
    for (int k : v.nodes) who += (who.empty() ? "" : ", ") + name_of(nodes, k);
    who += v.nodes.size() == 1 ? " is the node every failing path touches, the others reach each other"
                               : " are the nodes every failing path touches, the others reach each other";
  } else {
    who = "every node sees the same, so which side's link failed is not in these records";
  }
  const char* what = v.kind == "partition"      ? "no reply at all"
                     : v.kind == "mtu_mismatch" ? "small packets pass, packets that fill the MTU never do"
                                                : "replies lost";
  v.text = fmt::format("ping between the nodes after the hang: {} ({}); {}", what, bad_pairs, who);
  return v;
}

}  // namespace hanglab::reason
