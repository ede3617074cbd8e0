// Pairwise network checks, on the interface the job's backend will use (node_local.hpp's
// ChosenIface), in both directions: every node runs a ProbeServer (a TCP answerer and a UDP echo,
// bound to its chosen address, as Gloo's listening side binds) and probes every other node's:
//
//   net.reach      a TCP connect to the peer's chosen address from wherever routing sends it, and a
//                  preflight answer (not just any listener): what a Gloo pair does when the peer
//                  listens. Refused, dropped (timeout) and unreachable are told apart.
//   net.mtu        UDP datagrams with don't-fragment set (IP_PMTUDISC_DO: no privileges needed) at
//                  64 bytes and at the largest size both interfaces' MTU allows, echoed back with
//                  DF: small through and large lost is a path-MTU blackhole (jumbo NICs, a switch
//                  at 1500). EMSGSIZE means an ICMP already lowered the path MTU (then TCP adapts).
//   net.loss       --loss-probes small datagrams, echoed; the share that never came back.
//   net.bandwidth  (--bandwidth-s) a TCP stream to the next node in a ring, against --min-mbps.
//
// judge_pairs() turns the ordered pair results into one verdict per check per node, naming the
// node at fault: the one every failing pair touches while pairs without it pass (3+ nodes); for
// reachability, the node that could not be reached inbound; with two nodes and a symmetric fault,
// both (and the detail says one cannot tell which side).
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/job.hpp"
#include "preflight/result.hpp"

namespace hanglab::preflight {

struct PeerEndpoint {
  int node = 0;
  std::string host;
  std::string ifname;
  std::string addr;  // chosen address ("" when the node has none)
  int tcp_port = 0, udp_port = 0;
  int mtu = 0;
};
nlohmann::json to_json(const PeerEndpoint& p);
PeerEndpoint endpoint_from_json(const nlohmann::json& j);

class ProbeServer {
 public:
  ProbeServer() = default;
  ~ProbeServer();
  ProbeServer(const ProbeServer&) = delete;
  ProbeServer& operator=(const ProbeServer&) = delete;
  // Binds TCP and UDP on addr (ephemeral ports) and starts answering. False with `error` set when
  // it cannot bind.
  bool start(const std::string& addr, int node, std::string& error);
  void stop();
  int tcp_port() const { return tcp_port_; }
  int udp_port() const { return udp_port_; }

 private:
  void tcp_loop();
  void udp_loop();
  void serve(int fd);
  int node_ = 0;
  int tcp_fd_ = -1, udp_fd_ = -1;
  int tcp_port_ = 0, udp_port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::vector<std::thread> conns_;
};

struct PairResult {
  int from = 0, to = 0;
  std::string reach;        // ok | refused | timeout | unreachable | no_answer | wrong_answer | error | no_address
  std::string reach_error;
  double rtt_ms = 0;
  int probe_size = 0;       // the large datagram's payload
  int small_sent = 0, small_recv = 0, large_sent = 0, large_recv = 0;
  int emsgsize_mtu = 0;     // the kernel's path MTU when it refused a large datagram (EMSGSIZE)
  int loss_sent = 0, loss_recv = 0;
  double mbps = -1;         // --bandwidth-s only
  std::string bw_error;
};
nlohmann::json to_json(const PairResult& p);
PairResult pair_from_json(const nlohmann::json& j);

// All probes from `self` to one peer, each bounded, all done by deadline_mono.
PairResult probe_peer(const PeerEndpoint& self, const PeerEndpoint& peer, const Options& o, bool bandwidth,
                      double deadline_mono);

// One verdict per check per node over the arrived nodes (pure). at_s: when the verdicts were made.
std::vector<CheckResult> judge_pairs(const std::vector<PairResult>& pairs, const std::vector<PeerEndpoint>& nodes,
                                     const Options& o, double at_s);

}  // namespace hanglab::preflight
