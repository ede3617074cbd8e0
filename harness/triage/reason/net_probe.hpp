// Reasoning over the reachability probe of a multi-node run (harness.jsonl `net_probe`:
// ping between every pair of nodes, small packets and packets that fill the MTU with
// "don't fragment"): which link or node is cut, lossy, or drops large packets. A pure
// function of the probe and the nodes, unit-tested on canned probes (net_probe_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "triage/model/observations.hpp"

namespace hanglab::reason {

struct ProbeVerdict {
  // "" (the probe shows nothing wrong, or there is no probe), "partition" (no reply at
  // all), "mtu_mismatch" (small packets pass, full-MTU ones never), "packet_loss" (some
  // replies lost).
  std::string kind;
  // The nodes every failing pair involves while the pairs among the other nodes are fine:
  // the culprit side. Empty when the probe cannot tell the sides apart (two nodes: a cut
  // between them looks the same from both).
  std::vector<int> nodes;
  std::string text;  // what the probe showed, one sentence
};

ProbeVerdict judge_probe(const HarnessProbe& probe, const std::vector<HarnessNode>& nodes);

}  // namespace hanglab::reason
