// A rank's connection to a peer's advertised address that failed, naming a loopback or link-local
// address: the peer advertised an address only its own host (or link) can reach (see parse_parts.hpp).
//
// What the emitters print when a peer-to-peer connect fails (read from their sources):
//   Gloo tcp/pair.cc (2018-2021): GLOO_ERROR_MSG("connect ", peer_.str(), ": ", strerror(errno))
//     -> "connect [127.0.1.1]:3210: Connection refused"
//   Gloo tcp/helpers.h + error.cc: TimeoutError("timed out connecting: " + SystemError.what()),
//     SystemError = "<syscall>: <strerror>, remote=<addr>"
//     -> "timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:4321"
//   Gloo tcp/debug_logger.cc: "failed to connect, willRetry=0, retry=3, ..., remote=[..]:p, error=..."
//   NCCL misc/socket.cc: "socketStartConnect: Connect to 127.0.0.1<34567> failed : Connection refused"
//     (older: "Connect to %s failed : %s"), its address printed as ip<port>.
// Each pair address is the one the peer itself advertised through the rendezvous store (Gloo: the
// address of its device, by default what the host name resolves to, 127.0.1.1 on Debian-like
// hosts; NCCL: the address of the interface it chose, NCCL_SOCKET_IFNAME / its own pick). A
// loopback address there reaches only the connecting rank's own host: across hosts the connect goes
// to the wrong machine (refused, or timed out). TCPStore clients are not peers: MASTER_ADDR=localhost
// of a one-host job is right, and its failures are the store's.
#include <string>

#include "triage/logs/parse_parts.hpp"

namespace hanglab::logparse {

namespace {

// 127.0.0.0/8, ::1, ::ffff:127.x at `p` (after an optional '['); a host name is not an address.
bool loopback_at(sv m, size_t p) {
  if (p < m.size() && m[p] == '[') ++p;
  const sv a = m.substr(p);
  if (starts(a, "::ffff:127.")) return true;
  if (starts(a, "::1") && (a.size() == 3 || a[3] == ']' || a[3] == '<' || a[3] == ' ')) return true;
  if (!starts(a, "127.")) return false;
  // A dotted quad: digits and dots up to the port's separator.
  size_t e = 4;
  while (e < a.size() && ((a[e] >= '0' && a[e] <= '9') || a[e] == '.')) ++e;
  return e < a.size() ? (a[e] == ']' || a[e] == '<' || a[e] == ':' || a[e] == ' ' || a[e] == ',') : true;
}

// A link-local address at `p`: IPv6 fe80::/10 ("fe80::20d:3aff:fef7:74b3%enP7906s1"), IPv4 169.254.0.0/16.
// NCCL's findInterfaces (misc/socket.cc@v2.21.5-1) skips only IPv6 loopback: an interface whose only
// address is link-local can be its pick, and it advertises that address; a link-local address reaches
// only the hosts on the advertiser's own link (and needs the connector's own interface as its scope), not a
// peer across the routed network the job spans.
bool link_local_at(sv m, size_t p) {
  if (p < m.size() && m[p] == '[') ++p;
  const sv a = m.substr(p);
  if (a.size() >= 6 && (a[0] == 'f' || a[0] == 'F') && (a[1] == 'e' || a[1] == 'E') && a[3] != ':' &&
      a.find("::") != npos) {
    const char c = static_cast<char>(a[2] | 0x20);  // fe8x..febx
    if (c == '8' || c == '9' || c == 'a' || c == 'b') return a.find(':') == 4;
  }
  if (!starts(a, "169.254.")) return false;
  size_t e = 8;
  while (e < a.size() && ((a[e] >= '0' && a[e] <= '9') || a[e] == '.')) ++e;
  return e < a.size() ? (a[e] == ']' || a[e] == '<' || a[e] == ':' || a[e] == ' ' || a[e] == ',') : true;
}

}  // namespace

bool loopback_peer_connect(sv m, LogLine& o) {
  size_t addr = npos;
  if (const size_t k = m.find("Connect to "); k != npos && has(m.substr(k), " failed")) {
    addr = k + 11;  // NCCL
  } else if (has(m, "timed out connecting: ") || has(m, "failed to connect, willRetry=")) {
    if (const size_t r = m.find("remote="); r != npos) addr = r + 7;  // Gloo's SystemError / debug logger
  } else if (const size_t c = m.find("connect ["); c != npos && (c == 0 || m[c - 1] == ' ' || m[c - 1] == ']')) {
    addr = c + 8;  // Gloo's pair.cc: "connect [addr]:port: strerror"
  }
  if (addr == npos || !(loopback_at(m, addr) || link_local_at(m, addr))) return false;
  o.kind = LogKind::kWrongIfname;
  o.category = "network";
  o.cause = "wrong_ifname";
  o.phase = "init";
  return true;
}

}  // namespace hanglab::logparse
