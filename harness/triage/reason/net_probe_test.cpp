// judge_probe on canned probes: a cut node among three, a cut between two, an MTU black
// hole, loss, late replies under load, and no probe at all.
#include <catch2/catch.hpp>

#include "triage/reason/net_probe.hpp"

using namespace hanglab;
using namespace hanglab::reason;

namespace {

std::vector<HarnessNode> nodes(int n) {
  std::vector<HarnessNode> v;
  for (int k = 0; k < n; ++k) v.push_back({k, "node" + std::to_string(k), "", "", {k}});
  return v;
}

// Every ordered pair fine (60/60 small and large) but those `bad` lists.
HarnessProbe probe(int n, const std::vector<HarnessProbePair>& bad) {
  HarnessProbe p;
  p.pings = 60;
  p.mtu = 9000;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      HarnessProbePair x{i, j, 60, 60};
      for (const auto& b : bad)
        if (b.from == i && b.to == j) x = b;
      p.pairs.push_back(x);
    }
  return p;
}

}  // namespace

TEST_CASE("net probe: a node that reaches nobody, among three, is named", "[triage][net]") {
  const ProbeVerdict v = judge_probe(probe(3, {{0, 1, 0, 0}, {1, 0, 0, 0}, {1, 2, 0, 0}, {2, 1, 0, 0}}), nodes(3));
  CHECK(v.kind == "partition");
  CHECK(v.nodes == std::vector<int>{1});
  CHECK_THAT(v.text, Catch::Contains("node1 is the node every failing path touches"));
}

TEST_CASE("net probe: a cut between two nodes names no side", "[triage][net]") {
  const ProbeVerdict v = judge_probe(probe(2, {{0, 1, 0, 0}, {1, 0, 0, 0}}), nodes(2));
  CHECK(v.kind == "partition");
  CHECK(v.nodes.empty());
  CHECK_THAT(v.text, Catch::Contains("which side's link failed is not in these records"));
}

TEST_CASE("net probe: small packets pass and full-MTU ones never: an MTU mismatch on node 2's path", "[triage][net]") {
  const ProbeVerdict v = judge_probe(probe(3, {{0, 2, 60, 0}, {2, 0, 60, 0}, {1, 2, 60, 0}, {2, 1, 60, 0}}), nodes(3));
  CHECK(v.kind == "mtu_mismatch");
  CHECK(v.nodes == std::vector<int>{2});
  CHECK_THAT(v.text, Catch::Contains("0 at 9000 bytes"));
}

TEST_CASE("net probe: lost replies are loss, a few late ones under load are not", "[triage][net]") {
  CHECK(judge_probe(probe(2, {{0, 1, 9, 10}, {1, 0, 5, 8}}), nodes(2)).kind == "packet_loss");
  CHECK(judge_probe(probe(2, {{0, 1, 56, 60}, {1, 0, 58, 57}}), nodes(2)).kind.empty());
  // A cut beats loss: the worst link names the fault.
  CHECK(judge_probe(probe(3, {{0, 1, 0, 0}, {1, 0, 0, 0}, {1, 2, 0, 0}, {2, 1, 0, 0}, {0, 2, 20, 20}}), nodes(3)).kind ==
        "partition");
}

TEST_CASE("net probe: nothing wrong, or no probe, is no verdict", "[triage][net]") {
  CHECK(judge_probe(probe(3, {}), nodes(3)).kind.empty());
  CHECK(judge_probe(HarnessProbe{}, nodes(3)).kind.empty());
}
