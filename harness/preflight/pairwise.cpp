#include "preflight/pairwise.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "preflight/net_util.hpp"
#include "util.hpp"

namespace hanglab::preflight {

using nlohmann::json;

namespace {

constexpr uint32_t kMagic = 0x484c5046;  // "HLPF"
constexpr int kLargeProbes = 16;         // enough that 50 % random loss cannot pass for a blackhole
constexpr int kSmallProbes = 3;
constexpr double kConnectTimeoutS = 3;

struct Header {
  uint32_t magic, kind, seq, nonce;  // kind: 0 small, 1 large, 2 loss
};

void set_df(int fd, int family) {
  if (family == AF_INET) {
    int v = IP_PMTUDISC_DO;
    ::setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof v);
  } else {
    int v = IPV6_PMTUDISC_DO;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v, sizeof v);
  }
}

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                       : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

// Reads one line from fd within deadline, polling in short slices so `stop` is honoured.
bool read_line(int fd, std::string& line, double deadline, const std::atomic<bool>* stop = nullptr) {
  line.clear();
  char c;
  while (line.size() < 256) {
    if (stop && *stop) return false;
    pollfd p{fd, POLLIN, 0};
    const double left = left_s(deadline);
    if (left <= 0) return false;
    if (::poll(&p, 1, static_cast<int>(std::min(left, 0.1) * 1000) + 1) <= 0) continue;
    const ssize_t n = ::recv(fd, &c, 1, 0);
    if (n <= 0) return false;
    if (c == '\n') return true;
    line += c;
  }
  return false;
}

bool send_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

json to_json(const PeerEndpoint& p) {
  return {{"node", p.node}, {"host", p.host},   {"ifname", p.ifname}, {"addr", p.addr},
          {"tcp", p.tcp_port}, {"udp", p.udp_port}, {"mtu", p.mtu}};
}

PeerEndpoint endpoint_from_json(const json& j) {
  PeerEndpoint p;
  p.node = j.at("node").get<int>();
  p.host = j.value("host", "");
  p.ifname = j.value("ifname", "");
  p.addr = j.value("addr", "");
  p.tcp_port = j.value("tcp", 0);
  p.udp_port = j.value("udp", 0);
  p.mtu = j.value("mtu", 0);
  return p;
}

json to_json(const PairResult& p) {
  return {{"from", p.from},         {"to", p.to},
          {"reach", p.reach},       {"reach_error", p.reach_error},
          {"rtt_ms", p.rtt_ms},     {"probe_size", p.probe_size},
          {"small_sent", p.small_sent}, {"small_recv", p.small_recv},
          {"large_sent", p.large_sent}, {"large_recv", p.large_recv},
          {"emsgsize_mtu", p.emsgsize_mtu}, {"loss_sent", p.loss_sent},
          {"loss_recv", p.loss_recv}, {"mbps", p.mbps},
          {"bw_error", p.bw_error}};
}

PairResult pair_from_json(const json& j) {
  PairResult p;
  p.from = j.at("from").get<int>();
  p.to = j.at("to").get<int>();
  p.reach = j.value("reach", "");
  p.reach_error = j.value("reach_error", "");
  p.rtt_ms = j.value("rtt_ms", 0.0);
  p.probe_size = j.value("probe_size", 0);
  p.small_sent = j.value("small_sent", 0);
  p.small_recv = j.value("small_recv", 0);
  p.large_sent = j.value("large_sent", 0);
  p.large_recv = j.value("large_recv", 0);
  p.emsgsize_mtu = j.value("emsgsize_mtu", 0);
  p.loss_sent = j.value("loss_sent", 0);
  p.loss_recv = j.value("loss_recv", 0);
  p.mbps = j.value("mbps", -1.0);
  p.bw_error = j.value("bw_error", "");
  return p;
}

ProbeServer::~ProbeServer() { stop(); }

bool ProbeServer::start(const std::string& addr, int node, std::string& error) {
  node_ = node;
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!make_sockaddr(addr, 0, ss, len)) {
    error = "not a numeric address: " + addr;
    return false;
  }
  tcp_fd_ = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  udp_fd_ = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (tcp_fd_ < 0 || udp_fd_ < 0 || ::bind(tcp_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      ::listen(tcp_fd_, 128) != 0 || ::bind(udp_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    error = fmt::format("cannot listen on {}: {}", addr, std::strerror(errno));
    stop();
    return false;
  }
  set_df(udp_fd_, ss.ss_family);  // the echo crosses the path with DF too
  tcp_port_ = bound_port(tcp_fd_);
  udp_port_ = bound_port(udp_fd_);
  threads_.emplace_back([this] { tcp_loop(); });
  threads_.emplace_back([this] { udp_loop(); });
  return true;
}

void ProbeServer::stop() {
  stop_ = true;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  for (auto& t : conns_)
    if (t.joinable()) t.join();
  conns_.clear();
  if (tcp_fd_ >= 0) ::close(tcp_fd_);
  if (udp_fd_ >= 0) ::close(udp_fd_);
  tcp_fd_ = udp_fd_ = -1;
}

void ProbeServer::tcp_loop() {
  while (!stop_) {
    pollfd p{tcp_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(tcp_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) conns_.emplace_back([this, fd] { serve(fd); });
  }
}

void ProbeServer::serve(int fd) {
  std::string line;
  if (read_line(fd, line, mono_now() + 10, &stop_)) {
    if (line.rfind("probe ", 0) == 0) {
      send_all(fd, fmt::format("ok {} {}\n", node_, line.substr(6)));
    } else if (line == "sink") {
      long long got = 0;
      char buf[65536];
      const double end = mono_now() + 120;
      while (!stop_ && mono_now() < end) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got += n;
      }
      send_all(fd, fmt::format("got {}\n", got));
    }
  }
  ::close(fd);
}

void ProbeServer::udp_loop() {
  std::vector<char> buf(65536);
  while (!stop_) {
    pollfd p{udp_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    for (;;) {
      sockaddr_storage from{};
      socklen_t fl = sizeof from;
      const ssize_t n = ::recvfrom(udp_fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
      if (n <= 0) break;
      if (static_cast<size_t>(n) < sizeof(Header)) continue;
      Header h;
      std::memcpy(&h, buf.data(), sizeof h);
      if (h.magic != kMagic) continue;
      ::sendto(udp_fd_, buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), fl);
    }
  }
}

PairResult probe_peer(const PeerEndpoint& self, const PeerEndpoint& peer, const Options& o, bool bandwidth,
                      double deadline) {
  PairResult r;
  r.from = self.node;
  r.to = peer.node;
  if (self.addr.empty() || peer.addr.empty()) {
    r.reach = "no_address";
    return r;
  }
  static thread_local std::mt19937 rng(std::random_device{}());
  const uint32_t nonce = rng();

  // Reachability: connect to the peer's chosen address as a Gloo pair would, and get an answer
  // from preflight itself (a stale listener on the port would accept and stay silent).
  const double t0 = mono_now();
  ConnectResult c = tcp_connect(peer.addr, peer.tcp_port, std::min(kConnectTimeoutS, left_s(deadline)));
  if (c.cls != ConnectClass::kOk) {
    r.reach = connect_class_name(c.cls);
    r.reach_error = c.error;
  } else {
    const int fl = ::fcntl(c.fd, F_GETFL);
    ::fcntl(c.fd, F_SETFL, fl & ~O_NONBLOCK);
    std::string line;
    if (!send_all(c.fd, fmt::format("probe {}\n", nonce)) ||
        !read_line(c.fd, line, std::min(deadline, mono_now() + 2))) {
      r.reach = "no_answer";
      r.reach_error = "connected, but nothing answered";
    } else if (line != fmt::format("ok {} {}", peer.node, nonce)) {
      r.reach = "wrong_answer";
      r.reach_error = "answered by something else: \"" + line.substr(0, 60) + "\"";
    } else {
      r.reach = "ok";
      r.rtt_ms = (mono_now() - t0) * 1000;
    }
    ::close(c.fd);
  }

  // Path MTU and loss: DF datagrams, echoed.
  sockaddr_storage ss;
  socklen_t len = 0;
  make_sockaddr(peer.addr, peer.udp_port, ss, len);
  const int fd = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  // A path that does not connect is net.reach's finding; its datagrams would only wait out their
  // slots (and judge_pairs ignores them).
  if (r.reach == "ok" && fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0) {
    set_df(fd, ss.ss_family);
    const int overhead = ss.ss_family == AF_INET ? 28 : 48;
    const int mtu = std::min(self.mtu > 0 ? self.mtu : 1500, peer.mtu > 0 ? peer.mtu : 1500);
    // A UDP payload is at most 65535 minus the headers (loopback's MTU is 65536).
    r.probe_size = std::clamp<int>(mtu - overhead, sizeof(Header), 65535 - overhead);
    std::vector<char> large(static_cast<size_t>(r.probe_size), 0), small(64, 0);
    // At most kWindow datagrams of this pair in flight: the peer's echo socket serves every prober of
    // the job, and a burst from all of them would overflow its receive buffer on a loaded host (a
    // drop on our own socket, not on the path). A datagram not echoed within kSlotS frees its slot but
    // still counts if its echo comes later: only what never comes back, by a second after the last
    // send, is lost.
    constexpr int kWindow = 4;
    constexpr double kSlotS = 0.2;
    struct Sent {
      uint32_t kind;
      double t;
      bool back = false;
    };
    std::vector<Sent> sent;
    auto drain = [&] {
      char buf[65536];
      for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < static_cast<ssize_t>(sizeof(Header))) break;
        Header h;
        std::memcpy(&h, buf, sizeof h);
        if (h.magic != kMagic || h.nonce != nonce || h.seq >= sent.size() || sent[h.seq].back) continue;
        sent[h.seq].back = true;
        (h.kind == 0 ? r.small_recv : h.kind == 1 ? r.large_recv : r.loss_recv)++;
      }
    };
    auto in_flight = [&] {
      const double now = mono_now();
      int k = 0;
      for (const auto& x : sent) k += !x.back && now - x.t < kSlotS;
      return k;
    };
    auto send_one = [&](std::vector<char>& b, uint32_t kind) {
      while (in_flight() >= kWindow && left_s(deadline) > 0.3) {
        pollfd p{fd, POLLIN, 0};
        ::poll(&p, 1, 10);
        drain();
      }
      Header h{kMagic, kind, static_cast<uint32_t>(sent.size()), nonce};
      std::memcpy(b.data(), &h, sizeof h);
      sent.push_back({kind, mono_now()});
      if (::send(fd, b.data(), b.size(), 0) < 0 && errno == EMSGSIZE) {
        int pm = 0;
        socklen_t pl = sizeof pm;
        ::getsockopt(fd, ss.ss_family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6,
                     ss.ss_family == AF_INET ? IP_MTU : IPV6_MTU, &pm, &pl);
        r.emsgsize_mtu = pm;
      }
      drain();
    };
    for (int i = 0; i < kSmallProbes && left_s(deadline) > 0.3; ++i, ++r.small_sent) send_one(small, 0);
    for (int i = 0; i < kLargeProbes && left_s(deadline) > 0.3; ++i, ++r.large_sent) send_one(large, 1);
    for (int i = 0; i < o.loss_probes && left_s(deadline) > 0.3; ++i, ++r.loss_sent) send_one(small, 2);
    const double until = std::min(deadline, mono_now() + 1.0);
    while (mono_now() < until &&
           (r.small_recv < r.small_sent || r.large_recv < r.large_sent || r.loss_recv < r.loss_sent)) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, 20);
      drain();
    }
  }
  if (fd >= 0) ::close(fd);

  if (bandwidth && o.bandwidth_s > 0 && r.reach == "ok") {
    ConnectResult b = tcp_connect(peer.addr, peer.tcp_port, std::min(kConnectTimeoutS, left_s(deadline)));
    if (b.cls != ConnectClass::kOk) {
      r.bw_error = b.error;
    } else {
      const int fl = ::fcntl(b.fd, F_GETFL);
      ::fcntl(b.fd, F_SETFL, fl & ~O_NONBLOCK);
      timeval tv{0, 200000};
      ::setsockopt(b.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      std::vector<char> chunk(1 << 16, 0);
      send_all(b.fd, "sink\n");
      const double s0 = mono_now(), end = std::min(deadline - 1, s0 + o.bandwidth_s);
      while (mono_now() < end) {
        if (::send(b.fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;
      }
      ::shutdown(b.fd, SHUT_WR);
      std::string line;
      if (read_line(b.fd, line, std::min(deadline, mono_now() + 2)) && line.rfind("got ", 0) == 0) {
        const double secs = std::max(1e-3, mono_now() - s0);
        r.mbps = std::atof(line.c_str() + 4) * 8 / 1e6 / secs;
      } else {
        r.bw_error = "the peer did not confirm what it received";
      }
      ::close(b.fd);
    }
  }
  return r;
}

namespace {

// The nodes each bad pair is charged to (see the header).
std::map<int, std::vector<const PairResult*>> attribute(const std::vector<const PairResult*>& bad,
                                                        const std::vector<const PairResult*>& measured,
                                                        bool directional, bool* ambiguous) {
  std::map<int, std::vector<const PairResult*>> out;
  *ambiguous = false;
  if (bad.empty()) return out;
  std::set<int> common = {bad.front()->from, bad.front()->to};
  for (const auto* p : bad) {
    std::set<int> both = {p->from, p->to}, keep;
    for (int n : common)
      if (both.count(n)) keep.insert(n);
    common = keep;
  }
  // One bad path, two candidates: a candidate with a clean path to some other node has a healthy
  // link (a lossy or blackholed link of its own would spoil every path through it), so the other
  // one is charged. This is what a lossy node's missing report leaves (its own paths never reported,
  // one peer's path to it measured, the peers' paths between them clean).
  if (common.size() == 2) {
    std::vector<int> suspects;
    for (int n : common) {
      const bool clean = std::any_of(measured.begin(), measured.end(), [&](const PairResult* p) {
        return (p->from == n || p->to == n) && std::find(bad.begin(), bad.end(), p) == bad.end();
      });
      if (!clean) suspects.push_back(n);
    }
    if (suspects.size() == 1) {
      out[suspects.front()] = bad;
      return out;
    }
  }
  if (common.size() == 1) {
    const int c = *common.begin();
    const bool clean_elsewhere = std::any_of(measured.begin(), measured.end(), [&](const PairResult* p) {
      return p->from != c && p->to != c && std::find(bad.begin(), bad.end(), p) == bad.end();
    });
    if (clean_elsewhere) {
      out[c] = bad;
      return out;
    }
  }
  for (const auto* p : bad) {
    out[p->to].push_back(p);
    if (!directional) {
      out[p->from].push_back(p);
      *ambiguous = true;
    }
  }
  return out;
}

std::string pair_list(const std::vector<const PairResult*>& ps, const std::function<std::string(const PairResult&)>& f) {
  std::vector<std::string> parts;
  for (const auto* p : ps) parts.push_back(fmt::format("node{}->node{} {}", p->from, p->to, f(*p)));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::vector<CheckResult> judge_pairs(const std::vector<PairResult>& pairs, const std::vector<PeerEndpoint>& nodes,
                                     const Options& o, double at_s) {
  std::vector<CheckResult> out;
  std::map<int, const PeerEndpoint*> ep;
  for (const auto& n : nodes) ep[n.node] = &n;
  std::vector<const PairResult*> measured;
  for (const auto& p : pairs)
    if (p.reach != "no_address") measured.push_back(&p);
  auto base = [&](const std::string& name, int node) {
    CheckResult r;
    r.name = name;
    r.node = node;
    r.host = ep.count(node) ? ep[node]->host : "";
    r.at_s = at_s;
    return r;
  };

  struct Kind {
    std::string name, rule;
    bool directional;
    std::function<int(const PairResult&)> bad;  // 0 good, 1 warn, 2 fail
    std::function<std::string(const PairResult&)> what;
  };
  std::vector<Kind> kinds;
  kinds.push_back({"net.reach", "every peer connects to this node's chosen address and gets preflight's answer", true,
                   [](const PairResult& p) { return p.reach == "ok" ? 0 : 2; },
                   [](const PairResult& p) { return p.reach + (p.reach_error.empty() ? "" : " (" + p.reach_error + ")"); }});
  kinds.push_back(
      {"net.mtu", "don't-fragment datagrams at the smaller interface MTU cross the path both ways", false,
       [](const PairResult& p) {
         if (p.small_recv + p.loss_recv == 0) return 0;  // nothing came back at all: net.loss says so
         if (p.large_sent > 0 && p.large_recv == 0 && p.emsgsize_mtu == 0) return 2;
         return p.emsgsize_mtu > 0 ? 1 : 0;
       },
       [](const PairResult& p) {
         return p.emsgsize_mtu > 0 ? fmt::format("path MTU {} (an ICMP lowered it; TCP adapts)", p.emsgsize_mtu)
                                   : fmt::format("{}-byte DF datagrams {}/{} back while small ones {}/{}", p.probe_size,
                                                 p.large_recv, p.large_sent, p.small_recv + p.loss_recv,
                                                 p.small_sent + p.loss_sent);
       }});
  if (o.loss_probes > 0)
    kinds.push_back({"net.loss", "no echo lost (warn), under 5 % lost (fail at 5 %)", false,
                     [](const PairResult& p) {
                       if (p.loss_sent == 0) return 0;
                       const double lost = 1.0 - static_cast<double>(p.loss_recv) / p.loss_sent;
                       return lost >= 0.05 ? 2 : lost > 0 ? 1 : 0;
                     },
                     [](const PairResult& p) {
                       return fmt::format("{}/{} echoes lost ({:.0f} %)", p.loss_sent - p.loss_recv, p.loss_sent,
                                          100.0 * (p.loss_sent - p.loss_recv) / std::max(1, p.loss_sent));
                     }});
  if (o.bandwidth_s > 0)
    kinds.push_back({"net.bandwidth", fmt::format(">= {} Mbit/s to the next node", o.min_mbps), true,
                     [&o](const PairResult& p) {
                       if (p.reach != "ok") return 0;
                       return p.mbps < 0 || p.mbps < o.min_mbps ? 2 : 0;
                     },
                     [](const PairResult& p) {
                       return p.mbps < 0 ? "not measured: " + p.bw_error : fmt::format("{:.0f} Mbit/s", p.mbps);
                     }});

  for (const auto& k : kinds) {
    std::vector<const PairResult*> bad, bad_warn, in_scope;
    for (const auto* p : measured) {
      if (k.name == "net.bandwidth" && p->mbps < 0 && p->bw_error.empty()) continue;  // not a ring pair
      // A path that does not connect says nothing about its MTU or loss: net.reach names it.
      if (k.name != "net.reach" && p->reach != "ok") continue;
      in_scope.push_back(p);
      const int b = k.bad(*p);
      if (b == 2) bad.push_back(p);
      if (b == 1) bad_warn.push_back(p);
    }
    bool amb = false, amb_w = false;
    const auto fails = attribute(bad, in_scope, k.directional, &amb);
    auto warns = attribute(bad_warn, in_scope, k.directional, &amb_w);
    for (const auto& n : nodes) {
      if (n.addr.empty()) continue;  // listed as not run by the caller
      CheckResult r = base(k.name, n.node);
      r.rule = k.rule;
      int involved = 0;
      for (const auto* p : in_scope) involved += p->from == n.node || p->to == n.node;
      if (involved == 0) continue;
      if (fails.count(n.node)) {
        r.status = Status::kFail;
        r.measured = pair_list(fails.at(n.node), k.what);
        r.detail = amb ? "two nodes, one path: the fault is on one side or the other, or between them"
                       : fmt::format("every failing path touches node{}{}", n.node,
                                     nodes.size() > 2 ? " while the other nodes reach each other" : "");
      } else if (warns.count(n.node)) {
        r.status = Status::kWarn;
        r.measured = pair_list(warns.at(n.node), k.what);
      } else {
        double worst_rtt = 0;
        int inbound = 0;
        for (const auto* p : in_scope)
          if (p->to == n.node) {
            worst_rtt = std::max(worst_rtt, p->rtt_ms);
            ++inbound;
          }
        r.measured = k.name == "net.reach"   ? fmt::format("reached from {} peer{}, connect+answer <= {:.1f} ms", inbound,
                                                         inbound == 1 ? "" : "s", worst_rtt)
                     : k.name == "net.mtu"   ? fmt::format("MTU {}: {}-byte DF datagrams cross both ways", n.mtu,
                                                         std::max(0, n.mtu - 28))
                     : k.name == "net.loss"  ? "no echo lost"
                                             : "at or above the floor";
      }
      out.push_back(std::move(r));
    }
  }
  // Interface MTUs that differ from the majority (warn on the odd node).
  std::map<int, int> votes;
  for (const auto& n : nodes)
    if (!n.addr.empty()) votes[n.mtu]++;
  if (votes.size() > 1) {
    int major = 0, best = -1;
    for (const auto& [m, v] : votes)
      if (v > best || (v == best && m == (ep.count(0) ? ep[0]->mtu : m))) {
        best = v;
        major = m;
      }
    for (auto& r : out)
      if (r.name == "net.mtu" && ep.count(r.node) && ep[r.node]->mtu != major && r.status == Status::kPass) {
        r.status = Status::kWarn;
        r.measured = fmt::format("{} MTU {} while most nodes have {}", ep[r.node]->ifname, ep[r.node]->mtu, major);
        r.detail = "mismatched MTUs work only while every path carries the larger one";
      }
  }
  return out;
}

}  // namespace hanglab::preflight
