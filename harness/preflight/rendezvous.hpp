// The rendezvous through the job's own MASTER_ADDR:MASTER_PORT. Node 0 binds MASTER_PORT the way
// torch's TCPStore will (every address, SO_REUSEADDR): success is the port check; EADDRINUSE names
// the holder (from /proc/net/tcp* and /proc/*/fd) and tells a stale listener (accepts, never
// answers) from a live server. Every node, node 0 included, then connects to MASTER_ADDR:MASTER_PORT
// as the job's ranks will, and the messages below cross that connection, one JSON object per line:
//
//   node k -> 0  hello    its node rank, host identity, chosen endpoint, MASTER_ADDR as it resolved
//                         there, the agreed environment, versions, its node-local results, t1
//   0 -> node k  welcome  t2 (hello received), t3 (sent): an NTP-style clock sample
//   0 -> all     roster   the nodes that arrived with their probe endpoints, and how long to probe
//   node k -> 0  report   its pairwise results and clock offset
//   0 -> all     verdict  the job's exit code and one summary line
//
// Server runs node 0's side on a thread of its own; it never waits past the deadlines it is given:
// a node that has not said hello by the arrival deadline is named (rendezvous.arrive), one that
// has not reported by the report deadline gets no pairwise verdicts (not_run).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/job.hpp"
#include "preflight/result.hpp"

namespace hanglab::preflight {

// Node 0's bind of the rendezvous port.
struct PortBind {
  int fd = -1;            // the listening socket on success
  int err = 0;            // errno of bind/listen
  std::string holder;     // "pid 123 (python3 train.py)" when EADDRINUSE and it could be found
  std::string behaviour;  // when taken: "accepts and never answers" | "answers (...)" | "refuses" ...
};
PortBind bind_rendezvous_port(int port, double probe_s);

// The process listening on TCP `port` in this network namespace: "pid N (cmdline)", or "".
std::string port_holder(int port);

struct ServerConfig {
  int nnodes = 1;
  double arrive_deadline = 0;  // monotonic
  double report_deadline = 0;  // monotonic
  bool bandwidth = false;
  int smoke_port = 0;          // --smoke: the port node 0's torch store will use (0 = no smoke)
};

// What node 0 learned, for the agreement judgments and the report.
struct Gathered {
  std::map<int, nlohmann::json> hellos;     // first claim per node rank
  std::map<int, double> arrived_after_s;    // seconds after the server started
  std::vector<std::pair<int, nlohmann::json>> duplicate_claims;  // a second process claiming a rank
  std::vector<std::string> strangers;       // connections that did not speak the protocol
  std::map<int, nlohmann::json> reports;    // node -> report
  double arrive_wait_s = 0;                 // how long the server waited for hellos
};

class Server {
 public:
  // Takes ownership of the listening fd. `judge` runs on the server thread once the reports are
  // in (or their deadline passed) and returns the verdict to send to every node.
  Server(int listen_fd, ServerConfig cfg, std::function<nlohmann::json(const Gathered&)> judge);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  void join();

 private:
  void run();
  int fd_;
  ServerConfig cfg_;
  std::function<nlohmann::json(const Gathered&)> judge_;
  std::thread thread_;
};

// The environment subset the nodes must agree on: the rendezvous, the world, and every NCCL_*,
// GLOO_*, TORCH_* variable except per-node ones (names ending _IFNAME, _HCA, _FILE, _DIR, _PATH,
// _PREFIX: interfaces and paths may differ between nodes).
std::map<std::string, std::string> agreed_env(const JobEnv& job);

// The cross-node verdicts over what node 0 gathered (pure): rendezvous.arrive, node.distinct,
// master.resolve (against node 0's addresses), env.agree and versions.agree (majority, ties to
// node 0), clock.offset. master_desc: "MASTER_ADDR:PORT" for the texts.
std::vector<CheckResult> judge_agreement(const Gathered& g, int nnodes, const std::string& master_desc,
                                         double waited_s, double at_s);

}  // namespace hanglab::preflight
