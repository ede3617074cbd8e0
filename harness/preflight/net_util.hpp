// Bounded network primitives for preflight: name resolution with a deadline (getaddrinfo_a, so a
// dead resolver cannot hang the check), this host's interfaces as its network namespace sees them
// (getifaddrs and SIOCGIFMTU: never /sys/class/net, which shows the namespace that mounted /sys),
// TCP connects with a timeout and an error class, and a newline-delimited JSON connection with
// deadlines on every read. Nothing here blocks without a bound.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

namespace hanglab::preflight {

struct Resolved {
  std::vector<std::string> addrs;  // numeric, IPv4 first, duplicates dropped
  std::string error;               // gai_strerror text, or the timeout; empty on success
  bool timed_out = false;
};
// Resolves `host` (a name or a numeric address) within timeout_s.
Resolved resolve_host(const std::string& host, double timeout_s);

struct Interface {
  std::string name;
  bool up = false;       // IFF_UP
  bool running = false;  // IFF_RUNNING: carrier
  bool loopback = false;
  int mtu = 0;
  std::vector<std::string> ipv4, ipv6;  // numeric addresses (link-local IPv6 left out)
};
// The interfaces of this network namespace, in getifaddrs order (interfaces without an address
// included).
std::vector<Interface> list_interfaces();
// Every address of this host's interfaces (numeric).
std::vector<std::string> local_addresses();
bool is_loopback_addr(const std::string& numeric);

// A parsed numeric address with a port.
bool make_sockaddr(const std::string& numeric, int port, sockaddr_storage& ss, socklen_t& len);

enum class ConnectClass { kOk, kRefused, kTimeout, kUnreachable, kOther };
struct ConnectResult {
  int fd = -1;  // connected socket (blocking mode off) when kOk; the caller closes it
  ConnectClass cls = ConnectClass::kOther;
  std::string error;  // strerror of the failure, or "timed out after N s"
  double seconds = 0;
};
// One TCP connect attempt to numeric:port within timeout_s. mss > 0 clamps the segment size both
// ways (TCP_MAXSEG before connect), so the connection works across a path-MTU blackhole.
ConnectResult tcp_connect(const std::string& numeric, int port, double timeout_s, int mss = 0);

// The segment size preflight's own rendezvous uses: small enough for any path (IPv6's minimum MTU
// is 1280), so a jumbo-frame blackhole cannot take the channel down that reports it (net.mtu).
constexpr int kRendezvousMss = 1200;
const char* connect_class_name(ConnectClass c);

// Newline-delimited JSON over a connected socket. Every receive has a deadline (monotonic
// seconds); lines over 4 MiB end the connection.
class LineConn {
 public:
  LineConn() = default;
  explicit LineConn(int fd) : fd_(fd) {}
  ~LineConn();
  LineConn(LineConn&& o) noexcept;
  LineConn& operator=(LineConn&& o) noexcept;
  LineConn(const LineConn&) = delete;
  LineConn& operator=(const LineConn&) = delete;

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  // Sends one line; false when the peer is gone (or the send did not finish by deadline).
  bool send(const nlohmann::json& j, double deadline_mono);
  // The next line as JSON, or nullopt at the deadline, at EOF or on a line that is not JSON
  // (then `error` says which).
  std::optional<nlohmann::json> recv(double deadline_mono, std::string* error = nullptr);
  // Reads what is available without blocking; appends complete lines to `lines`. Returns
  // false at EOF or error (the connection is then done).
  bool pump(std::vector<nlohmann::json>& lines, std::string* error = nullptr);
  void close();

 private:
  int fd_ = -1;
  std::string buf_;
};

// Seconds left until deadline_mono (never negative).
double left_s(double deadline_mono);

}  // namespace hanglab::preflight
