#include "preflight/rendezvous.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "preflight/net_util.hpp"
#include "util.hpp"

namespace hanglab::preflight {

using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int bind_listener(int family, int port, int& err) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno;
    return -1;
  }
  int one = 1, zero = 0;
  // As TCPStore does: a port in TIME_WAIT from an earlier job is not "in use".
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // Accepted connections inherit it: the rendezvous survives a path-MTU blackhole (net_util.hpp).
  const int mss = kRendezvousMss;
  ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // dual stack: IPv4 too
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = in6addr_any;
    s6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *s6;
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    s4->sin_family = AF_INET;
    s4->sin_addr.s_addr = htonl(INADDR_ANY);
    s4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *s4;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 1024) != 0) {
    err = errno;
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::string port_holder(int port) {
  // LISTEN sockets on the port in this namespace's tables, then the process holding one.
  std::set<std::string> inodes;
  for (const char* t : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream in(slurp(t));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, txrx, tr, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> st >> txrx >> tr >> retr >> uid >> timeout >> inode;
      const auto colon = local.rfind(':');
      if (colon == std::string::npos || st != "0A") continue;
      if (std::strtol(local.c_str() + colon + 1, nullptr, 16) == port) inodes.insert("socket:[" + inode + "]");
    }
  }
  if (inodes.empty()) return "";
  DIR* proc = ::opendir("/proc");
  if (!proc) return "";
  std::string found;
  while (dirent* e = ::readdir(proc)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0])) || !found.empty()) continue;
    const std::string fd_dir = std::string("/proc/") + e->d_name + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (!fds) continue;
    while (dirent* f = ::readdir(fds)) {
      char target[128];
      const ssize_t n = ::readlink((fd_dir + "/" + f->d_name).c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = 0;
      if (inodes.count(target)) {
        std::string cmd = slurp(std::string("/proc/") + e->d_name + "/cmdline");
        std::replace(cmd.begin(), cmd.end(), '\0', ' ');
        while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
        std::string comm = slurp(std::string("/proc/") + e->d_name + "/comm");
        while (!comm.empty() && comm.back() == '\n') comm.pop_back();
        // comm first: a forked helper keeps its parent's command line but names itself.
        found = fmt::format("pid {} {} ({})", e->d_name, comm, cmd.substr(0, 100));
        break;
      }
    }
    ::closedir(fds);
  }
  ::closedir(proc);
  return found.empty() ? "a process this user cannot see (another user's: root could name it)" : found;
}

PortBind bind_rendezvous_port(int port, double probe_s) {
  PortBind b;
  b.fd = bind_listener(AF_INET6, port, b.err);
  if (b.fd < 0 && (b.err == EAFNOSUPPORT || b.err == EADDRNOTAVAIL)) b.fd = bind_listener(AF_INET, port, b.err);
  if (b.fd >= 0) {
    b.err = 0;
    return b;
  }
  if (b.err != EADDRINUSE) return b;
  b.holder = port_holder(port);
  // What the holder does with a connection: a stale store or server accepts and stays silent; a
  // live one answers something.
  ConnectResult c = tcp_connect("127.0.0.1", port, probe_s);
  if (c.cls == ConnectClass::kRefused) {
    b.behaviour = "refuses connections on 127.0.0.1 (bound to another address only)";
  } else if (c.cls != ConnectClass::kOk) {
    b.behaviour = "does not accept within " + fmt::format("{:.1f} s", probe_s);
  } else {
    LineConn conn(c.fd);
    conn.send(json{{"type", "ping"}}, mono_now() + probe_s);
    std::string err;
    auto reply = conn.recv(mono_now() + probe_s, &err);
    b.behaviour = reply ? (reply->value("type", "") == "pong" ? "answers as another hanglab preflight"
                                                              : "answers, but not as preflight: a live server")
                  : err == "no answer in time" ? fmt::format("accepts connections and never answers (waited {:.1f} s): a stale listener", probe_s)
                                               : "accepts, then closes without a word: a live server that is not preflight";
  }
  return b;
}

Server::Server(int listen_fd, ServerConfig cfg, std::function<json(const Gathered&)> judge)
    : fd_(listen_fd), cfg_(cfg), judge_(std::move(judge)) {
  thread_ = std::thread([this] { run(); });
}

Server::~Server() {
  join();
  if (fd_ >= 0) ::close(fd_);
}

void Server::join() {
  if (thread_.joinable()) thread_.join();
}

void Server::run() {
  struct Client {
    LineConn conn;
    int node = -1;
    bool hello = false, roster = false, reported = false;
  };
  std::vector<std::unique_ptr<Client>> clients;
  Gathered g;
  const double start = mono_now();
  bool roster_sent = false;
  json roster;
  auto send_roster = [&](Client& c) {
    if (c.hello && !c.roster) c.roster = c.conn.send(roster, mono_now() + 1);
  };
  for (;;) {
    const double now = mono_now();
    if (!roster_sent && (static_cast<int>(g.hellos.size()) >= cfg_.nnodes || now >= cfg_.arrive_deadline)) {
      roster_sent = true;
      g.arrive_wait_s = now - start;
      json nodes = json::array();
      for (const auto& [n, h] : g.hellos) nodes.push_back(h.value("endpoint", json::object()));
      // Probing ends a little before the report deadline, so the reports can cross in time.
      roster = {{"type", "roster"},
                {"nodes", nodes},
                {"probe_s", std::max(0.2, cfg_.report_deadline - now - 0.3)},
                {"bandwidth", cfg_.bandwidth},
                {"smoke_port", cfg_.smoke_port}};
      for (auto& c : clients) send_roster(*c);
    }
    if (roster_sent) {
      bool all = true;
      for (const auto& [n, h] : g.hellos) all = all && g.reports.count(n);
      if (all || now >= cfg_.report_deadline) break;
    }
    std::vector<pollfd> pfds{{fd_, POLLIN, 0}};
    for (auto& c : clients) pfds.push_back({c->conn.fd(), POLLIN, 0});
    const double next = roster_sent ? cfg_.report_deadline : cfg_.arrive_deadline;
    ::poll(pfds.data(), pfds.size(), static_cast<int>(std::clamp(next - now, 0.0, 0.1) * 1000) + 1);
    if (pfds[0].revents & POLLIN) {
      for (int fd; (fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        auto c = std::make_unique<Client>();
        c->conn = LineConn(fd);
        clients.push_back(std::move(c));
      }
    }
    for (auto& c : clients) {
      if (!c->conn.open()) continue;
      std::vector<json> lines;
      std::string err;
      const bool alive = c->conn.pump(lines, &err);
      for (auto& m : lines) {
        const std::string type = m.value("type", "");
        if (type == "hello" && !c->hello) {
          const double t2 = unix_now();
          const int node = m.value("node", -1);
          if (node < 0 || node >= cfg_.nnodes) {
            g.strangers.push_back(fmt::format("a hello from node rank {} of a {}-node job (this job has {})", node,
                                              m.value("nnodes", 0), cfg_.nnodes));
            c->conn.close();
            break;
          }
          c->node = node;
          c->hello = true;
          // The same process saying hello again on a new connection (its first one stalled on a lossy
          // link: see Participant::run) is that node reconnecting, not a second claim: its new
          // connection replaces the old one, and it keeps its first arrival time.
          const auto same_process = [&](const json& a) {
            for (const char* k : {"pid", "boot_id", "netns"})
              if (!a.contains(k) || !m.contains(k) || a[k] != m[k]) return false;
            return true;
          };
          if (g.hellos.count(node) && same_process(g.hellos.at(node))) {
            for (auto& o : clients)
              if (o.get() != c.get() && o->node == node && o->conn.open()) o->conn.close();
          } else if (g.hellos.count(node)) {
            g.duplicate_claims.emplace_back(node, m);
          } else {
            g.hellos[node] = m;
            g.arrived_after_s[node] = mono_now() - start;
            if (roster_sent) g.hellos[node]["late"] = true;
          }
          c->conn.send({{"type", "welcome"}, {"t2", t2}, {"t3", unix_now()}}, mono_now() + 1);
          if (roster_sent) send_roster(*c);
        } else if (type == "report" && c->hello && !c->reported) {
          c->reported = true;
          if (!g.reports.count(c->node)) g.reports[c->node] = m;
        } else if (type == "ping") {
          c->conn.send({{"type", "pong"}}, mono_now() + 1);
        } else if (!c->hello) {
          g.strangers.push_back("a connection that did not say hello (" + type + ")");
          c->conn.close();
          break;
        }
      }
      if (!alive) c->conn.close();
    }
  }
  json verdict = judge_(g);
  verdict["type"] = "verdict";
  for (auto& c : clients)
    if (c->conn.open() && c->hello) c->conn.send(verdict, mono_now() + 1);
  // Let the nodes close first: the TIME_WAIT then lands on their side, not on MASTER_PORT.
  const double until = mono_now() + 1;
  for (auto& c : clients) {
    std::vector<json> rest;
    while (c->conn.open() && mono_now() < until) {
      pollfd p{c->conn.fd(), POLLIN, 0};
      ::poll(&p, 1, 50);
      if (!c->conn.pump(rest)) break;
    }
    c->conn.close();
  }
  ::close(fd_);
  fd_ = -1;
}

std::map<std::string, std::string> agreed_env(const JobEnv& job) {
  std::map<std::string, std::string> out;
  for (const char* k : {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE"})
    out[k] = job.env.count(k) ? job.env.at(k) : "(unset)";
  out["(node count)"] = std::to_string(job.nnodes);
  out["(ranks per node)"] = std::to_string(job.ranks_per_node);
  out["(backend)"] = job.backend;
  auto per_node = [](const std::string& k) {
    for (const char* s : {"_IFNAME", "_HCA", "_FILE", "_DIR", "_PATH", "_PREFIX"}) {
      const std::string suf = s;
      if (k.size() > suf.size() && k.compare(k.size() - suf.size(), suf.size(), suf) == 0) return true;
    }
    return false;
  };
  for (const auto& [k, v] : job.env)
    if ((k.rfind("NCCL_", 0) == 0 || k.rfind("GLOO_", 0) == 0 || k.rfind("TORCH_", 0) == 0) && !per_node(k)) out[k] = v;
  return out;
}

namespace {

// The value most nodes hold; a tie goes to node 0's value (the store's node is the reference).
std::string majority(const std::map<int, std::string>& by_node) {
  std::map<std::string, int> votes;
  for (const auto& [n, v] : by_node) votes[v]++;
  std::string best;
  int bc = -1;
  for (const auto& [v, c] : votes) {
    const bool node0 = by_node.count(0) && by_node.at(0) == v;
    if (c > bc || (c == bc && node0)) {
      best = v;
      bc = c;
    }
  }
  return best;
}

CheckResult base(const std::string& name, int node, const Gathered& g, double at_s) {
  CheckResult r;
  r.name = name;
  r.node = node;
  if (g.hellos.count(node)) r.host = g.hellos.at(node).value("host", "");
  r.at_s = at_s;
  return r;
}

}  // namespace

std::vector<CheckResult> judge_agreement(const Gathered& g, int nnodes, const std::string& master_desc, double waited_s,
                                         double at_s) {
  std::vector<CheckResult> out;
  for (int n = 0; n < nnodes; ++n) {
    CheckResult r = base("rendezvous.arrive", n, g, at_s);
    r.rule = fmt::format("says hello at {} before node 0 stops waiting (0.55 x --deadline-s)", master_desc);
    if (!g.hellos.count(n)) {
      r.status = Status::kFail;
      r.measured = fmt::format("never arrived (waited {:.1f} s)", waited_s);
      r.detail = fmt::format("node{} did not reach {}: it did not start, cannot resolve or reach MASTER_ADDR, or was "
                             "stopped (its own preflight output says which). The job's rendezvous would wait for it "
                             "until its timeout",
                             n, master_desc);
    } else if (g.hellos.at(n).value("late", false)) {
      r.status = Status::kFail;
      r.measured = fmt::format("arrived after {:.1f} s, past the deadline", g.arrived_after_s.at(n));
      r.detail = "a node this late keeps every other node waiting in the job's rendezvous";
    } else {
      r.measured = fmt::format("arrived after {:.2f} s", g.arrived_after_s.at(n));
    }
    out.push_back(r);
  }
  for (const auto& [n, h] : g.duplicate_claims) {
    CheckResult r = base("node.distinct", n, g, at_s);
    r.status = Status::kFail;
    const json& first = g.hellos.at(n);
    r.measured = fmt::format("node rank {} claimed by {} pid {} and by {} pid {}", n, first.value("host", "?"),
                             first.value("pid", 0), h.value("host", "?"), h.value("pid", 0));
    r.rule = "one process per node rank";
    r.detail = "two nodes were given the same node rank (a copied NODE_RANK): the job would start one node's ranks "
               "twice and miss another's";
    out.push_back(r);
  }
  // Two node ranks on one host (same kernel boot and network namespace): more than one preflight
  // per node, i.e. the job's launch would put two nodes' ranks on one machine.
  std::map<std::string, int> seen;
  for (const auto& [n, h] : g.hellos) {
    const std::string id = h.value("boot_id", "") + "/" + h.value("netns", "");
    CheckResult r = base("node.distinct", n, g, at_s);
    r.rule = "every node rank on a host (kernel boot id + network namespace) of its own";
    r.measured = fmt::format("boot {} netns {}", h.value("boot_id", "?").substr(0, 8), h.value("netns", "?"));
    if (auto it = seen.find(id); it != seen.end()) {
      r.status = Status::kFail;
      r.detail = fmt::format("node{} and node{} run on the same host: start one preflight per node (srun "
                             "--ntasks-per-node=1, mpirun -npernode 1)",
                             it->second, n);
    } else {
      seen[id] = n;
    }
    out.push_back(r);
  }
  // MASTER_ADDR must lead every node to node 0.
  std::vector<std::string> node0_addrs;
  if (g.hellos.count(0))
    for (const auto& a : g.hellos.at(0).value("local_addrs", json::array())) node0_addrs.push_back(a.get<std::string>());
  for (const auto& [n, h] : g.hellos) {
    CheckResult r = base("master.resolve", n, g, at_s);
    std::vector<std::string> res;
    for (const auto& a : h.value("resolved", json::array())) res.push_back(a.get<std::string>());
    r.rule = "MASTER_ADDR resolves to an address of node 0 on every node";
    r.measured = fmt::format("{} -> {}", h.value("master_addr", "?"), res.empty() ? "nothing" : fmt::format("{}", fmt::join(res, ", ")));
    const bool hit = std::any_of(res.begin(), res.end(), [&](const std::string& a) {
      return std::find(node0_addrs.begin(), node0_addrs.end(), a) != node0_addrs.end();
    });
    if (!node0_addrs.empty() && !hit) {
      r.status = Status::kFail;
      r.detail = fmt::format("node0's addresses are {}: from node{} the job's ranks would look for the store elsewhere",
                             fmt::join(node0_addrs, ", "), n);
    }
    out.push_back(r);
  }
  // Environment and versions: majority per key, ties to node 0.
  auto agree = [&](const std::string& name, const std::string& field, const std::set<std::string>& warn_only,
                   const std::string& rule, const std::string& why) {
    std::map<std::string, std::map<int, std::string>> by_key;
    // A node that could not tell (its probe failed: "unavailable") is left out of the comparison.
    std::map<int, std::string> unknown;
    for (const auto& [n, h] : g.hellos) {
      const json fields = h.value(field, json::object());
      if (fields.contains("unavailable")) {
        unknown[n] = fields["unavailable"].is_string() ? fields["unavailable"].get<std::string>() : "unknown";
        continue;
      }
      for (const auto& [k, v] : fields.items()) by_key[k][n] = v.is_string() ? v.get<std::string>() : v.dump();
    }
    // A key some nodes lack: "(unset)" there.
    for (auto& [k, m] : by_key)
      for (const auto& [n, h] : g.hellos)
        if (!m.count(n) && !unknown.count(n)) m[n] = "(unset)";
    for (const auto& [n, h] : g.hellos) {
      CheckResult r = base(name, n, g, at_s);
      r.rule = rule;
      if (unknown.count(n)) {
        r.status = Status::kWarn;
        r.measured = "not read here: " + unknown[n];
        r.detail = "this node's settings could not be read, so they were not compared";
        out.push_back(r);
        continue;
      }
      std::vector<std::string> diff;
      bool hard = false;
      for (const auto& [k, m] : by_key) {
        const std::string maj = majority(m);
        if (m.at(n) == maj) continue;
        int same = 0;
        for (const auto& [o, v] : m) same += v == maj;
        diff.push_back(fmt::format("{}={} here, {} on {} of {} nodes", k, m.at(n), maj, same, m.size()));
        hard = hard || !warn_only.count(k);
      }
      if (diff.empty()) {
        r.measured = fmt::format("{} setting{} as on the other nodes", by_key.size(), by_key.size() == 1 ? "" : "s");
      } else {
        r.status = hard ? Status::kFail : Status::kWarn;
        r.measured = fmt::format("{}", fmt::join(diff, "; "));
        r.detail = why;
      }
      out.push_back(r);
    }
  };
  agree("env.agree", "env", {}, "the rendezvous, world and NCCL/Gloo/torch settings equal on every node (majority)",
        "the nodes were launched with different settings: ranks disagree on the world, or NCCL picks different "
        "protocols and algorithms on different ranks and hangs in the first collective");
  agree("versions.agree", "versions", {"python", "hanglab"},
        "torch and NCCL equal on every node; Python and hanglab warned about",
        "ranks built from different torch or NCCL versions can disagree on the wire protocol and hang");
  // Clock: the NTP-style sample each node took with its welcome.
  for (const auto& [n, h] : g.hellos) {
    CheckResult r = base("clock.offset", n, g, at_s);
    r.rule = "|offset to node 0| - rtt/2 below 1 s (warn) and 5 s (fail)";
    const std::string kernel = h.value("clock_sync", "");
    if (n == 0) {
      r.measured = "the reference" + (kernel.empty() ? "" : "; kernel: " + kernel);
    } else if (!g.reports.count(n) || !g.reports.at(n).contains("clock")) {
      r.measured = "no sample (the node did not report)";
    } else {
      const double off = g.reports.at(n)["clock"].value("offset_s", 0.0), err = g.reports.at(n)["clock"].value("err_s", 0.0);
      r.measured = fmt::format("{:+.3f} s (+/- {:.3f} s){}", off, err, kernel.empty() ? "" : "; kernel: " + kernel);
      const double sure = std::fabs(off) - err;
      if (sure > 5) r.status = Status::kFail;
      else if (sure > 1) r.status = Status::kWarn;
      if (r.status != Status::kPass)
        r.detail = "logs of different nodes cannot be lined up (and TLS, Kerberos or a timer-based store may refuse): "
                   "run a time daemon (chrony) on every node";
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace hanglab::preflight
