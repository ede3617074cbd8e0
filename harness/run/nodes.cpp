// Nodes as network namespaces on one bridge (see nodes.hpp).
#include "run/nodes.hpp"

#include <cstring>
#include <map>
#include <sstream>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include "run/state.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Leases subnet S (1..250) on this host with an abstract unix socket "hanglab-subnet-S":
// the kernel releases it with the process, so a dead run never holds a subnet. A subnet
// whose bridge address is still configured (a run killed before its sweep) is skipped.
int lease_subnet(int& fd) {
  const int start = 1 + static_cast<int>(::getpid() % 250);
  for (int i = 0; i < 250; ++i) {
    const int s = 1 + (start - 1 + i) % 250;
    int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0) throw_system_error("socket", "leasing a node subnet");
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    const std::string name = "hanglab-subnet-" + std::to_string(s);
    std::memcpy(u.sun_path + 1, name.data(), name.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (::bind(l, reinterpret_cast<sockaddr*>(&u), len) == 0) {
      ToolResult used = run_tool({"ip", "-o", "addr", "show", "to", fmt::format("10.231.{}.0/24", s)});
      if (used.ok() && used.output.empty()) {
        fd = l;
        return s;
      }
    }
    ::close(l);
  }
  throw std::runtime_error("no free node subnet 10.231.S.0/24 (S = 1..250) on this host");
}

std::string base36(unsigned long v) {
  static const char* d = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  do {
    s.insert(s.begin(), d[v % 36]);
    v /= 36;
  } while (v);
  return s;
}

}  // namespace

std::string nodes_unsupported_reason() {
  if (::geteuid() != 0) return "[topology] nodes > 1 needs root (network namespaces, a bridge, veth pairs)";
  if (run_tool({"ip", "-V"}).status == 127) return "[topology] nodes > 1 needs the `ip` tool (iproute2)";
  return {};
}

NodeNet::NodeNet(const TopologySpec& topo, int world_size, int master_port, RunState* state)
    : topo_(topo), world_size_(world_size), master_port_(master_port), state_(state) {
  static int seq = 0;
  tag_ = base36(static_cast<unsigned long>(::getpid())) + base36(static_cast<unsigned long>(seq++ % 36));
  subnet_ = lease_subnet(lease_fd_);
  try {
    create();
  } catch (...) {
    destroy();
    throw;
  }
}

NodeNet::~NodeNet() {
  destroy();
  if (lease_fd_ >= 0) ::close(lease_fd_);
}

std::vector<int> NodeNet::ranks_of(int node) const {
  std::vector<int> out;
  for (int r = 0; r < world_size_; ++r)
    if (node_of(r) == node) out.push_back(r);
  return out;
}

std::string NodeNet::ns(int node) const { return fmt::format("hanglab-{}-n{}", tag_, node); }
// Host part 101.. (three digits for every node of the 64 the loader allows): torchrun's c10d
// rendezvous numbers its agents by their --local-addr as a *string*, which then sorts as the
// nodes are numbered (".10" would sort before ".2").
std::string NodeNet::addr(int node) const { return fmt::format("10.231.{}.{}", subnet_, node + 101); }
// An address of its own on a subnet every node has on its eth1, each eth1 a link to
// nothing: a peer routes this address out of its own dead eth1, and a reply to it from a
// peer goes the same way, so no connection to or from it ever completes. Below eth0's
// 10.231 on purpose: Gloo (torch 2.15) makes the side of a pair whose address sorts higher
// connect out, from the address routing picks (eth0), and the lower one listen on its
// device; an unreachable NIC whose address sorted above its peers' would go unnoticed.
std::string NodeNet::second_addr(int node) const { return fmt::format("10.230.{}.{}", subnet_, node + 101); }
std::string NodeNet::subnet() const { return fmt::format("10.231.{}.0/24", subnet_); }
std::string NodeNet::host_link(int node) const { return fmt::format("hl{}v{}", tag_, node); }

std::string NodeNet::run(int node, const std::vector<std::string>& argv) const {
  std::vector<std::string> full;
  if (node >= 0) full = {"ip", "netns", "exec", ns(node)};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_tool_checked(full);
}

std::vector<std::string> NodeNet::wrapper(int node) const {
  return {"nsenter", "--net=" + (fs::path("/run/netns") / ns(node)).string(), "--"};
}

void NodeNet::apply_env(int rank, std::map<std::string, std::string>& env) const {
  const int node = node_of(rank);
  const int local = rank - node * topo_.ranks_per_node;
  env["MASTER_ADDR"] = addr(0);
  env["LOCAL_RANK"] = std::to_string(local);
  env["LOCAL_WORLD_SIZE"] = std::to_string(topo_.ranks_per_node);
  env["GROUP_RANK"] = std::to_string(node);
  env["GROUP_WORLD_SIZE"] = std::to_string(topo_.nodes);
  env["GLOO_SOCKET_IFNAME"] = "eth0";
  env["NCCL_SOCKET_IFNAME"] = "eth0";
  env["HANGLAB_NODE"] = std::to_string(node);
  env["HANGLAB_HOST"] = node_name(node);
}

void NodeNet::create() {
  auto note = [&](const std::string& kind, const std::string& name) {
    const int id = state_ ? (kind == "netns" ? state_->netns(name) : state_->netdev(name)) : 0;
    made_.emplace_back(id, kind + ":" + name);
  };
  const std::string bridge = fmt::format("hl{}b", tag_);
  note("netdev", bridge);
  run_tool_checked({"ip", "link", "add", bridge, "type", "bridge"});
  run_tool_checked({"ip", "addr", "add", fmt::format("10.231.{}.254/24", subnet_), "dev", bridge});
  run_tool_checked({"ip", "link", "set", bridge, "up"});
  for (int k = 0; k < topo_.nodes; ++k) {
    const std::string n = ns(k);
    note("netns", n);
    run_tool_checked({"ip", "netns", "add", n});
    // The veth's host end is named before it exists; deleting the namespace deletes the pair.
    note("netdev", host_link(k));
    run_tool_checked({"ip", "link", "add", host_link(k), "type", "veth", "peer", "name", "eth0", "netns", n});
    run_tool_checked({"ip", "link", "set", host_link(k), "master", bridge, "up"});
    run(k, {"ip", "addr", "add", addr(k) + "/24", "dev", "eth0"});
    run(k, {"ip", "link", "set", "eth0", "up"});
    run(k, {"ip", "link", "set", "lo", "up"});
    if (topo_.second_nic) {
      const std::string w = fmt::format("hl{}w{}", tag_, k);
      note("netdev", w);
      run_tool_checked({"ip", "link", "add", w, "type", "veth", "peer", "name", "eth1", "netns", n});
      run_tool_checked({"ip", "link", "set", w, "up"});  // attached to nothing
      run(k, {"ip", "addr", "add", second_addr(k) + "/24", "dev", "eth1"});
      run(k, {"ip", "link", "set", "eth1", "up"});
    }
  }
  // netem is a module many kernels have and this one may not: ask the kernel, on a
  // namespace's loopback, once.
  netem_ = run_tool({"ip", "netns", "exec", ns(0), "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "0ms"}).ok();
  if (netem_) run_tool({"ip", "netns", "exec", ns(0), "tc", "qdisc", "del", "dev", "lo", "root"});
}

void NodeNet::destroy() {
  // Namespaces first (their veth pairs go with them), then what is left in this namespace.
  for (int pass = 0; pass < 2; ++pass) {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      const bool is_ns = it->second.rfind("netns:", 0) == 0;
      if (is_ns != (pass == 0)) continue;
      const std::string name = it->second.substr(it->second.find(':') + 1);
      std::error_code ec;
      if (is_ns) {
        if (fs::exists(fs::path("/run/netns") / name, ec)) run_tool({"ip", "netns", "delete", name});
      } else if (fs::exists(fs::path("/sys/class/net") / name, ec)) {
        run_tool({"ip", "link", "delete", name});
      }
      if (state_ && it->first) state_->released(it->first);
    }
  }
  made_.clear();
}

json NodeNet::probe() const {
  // 60 pings: at 60 % loss each way a round trip succeeds 16 % of the time, and all 60 are
  // lost with a probability of 3e-5, so a lossy link is not mistaken for a cut one.
  constexpr int kProbePings = 60;
  if (run_tool({"ping", "-V"}).status == 127) return json::object();
  int mtu = 1500;
  try {
    mtu = std::stoi(run(0, {"cat", "/sys/class/net/eth0/mtu"}));
  } catch (const std::exception&) {
  }
  std::string script;
  for (int i = 0; i < topo_.nodes; ++i)
    for (int j = 0; j < topo_.nodes; ++j) {
      if (i == j) continue;
      for (const bool large : {false, true})
        script += fmt::format(
            "(r=$(ip netns exec {} ping -n -q -c {} -i 0.01 -W 1 {}{} 2>&1 | sed -n 's/.* \\([0-9]*\\) received.*/\\1/p'); "
            "echo \"{} {} {} ${{r:-0}}\") &\n",
            ns(i), kProbePings, large ? fmt::format("-M do -s {} ", mtu - 28) : "", addr(j), i, j,
            large ? "large" : "small");
    }
  script += "wait\n";
  ToolResult t = run_tool({"bash", "-c", script});
  std::map<std::pair<int, int>, json> pairs;
  std::istringstream in(t.output);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    int i = -1, j = -1, n = 0;
    std::string kind;
    if (!(l >> i >> j >> kind >> n) || i < 0 || j < 0) continue;
    json& p = pairs[{i, j}];
    p["from"] = i;
    p["to"] = j;
    p[kind] = n;
  }
  json out{{"pings", kProbePings}, {"mtu", mtu}, {"pairs", json::array()}};
  for (auto& [k, p] : pairs) out["pairs"].push_back(p);
  return out;
}

json NodeNet::describe() const {
  json nodes = json::array();
  for (int k = 0; k < topo_.nodes; ++k) {
    json n{{"node", k}, {"name", node_name(k)}, {"netns", ns(k)}, {"addr", addr(k)}, {"ranks", ranks_of(k)}};
    if (topo_.second_nic) n["eth1"] = second_addr(k);
    nodes.push_back(std::move(n));
  }
  return {{"nodes", nodes},
          {"subnet", subnet()},
          {"ranks_per_node", topo_.ranks_per_node},
          {"master_addr", addr(0)},
          {"netem", netem_}};
}

}  // namespace hanglab
