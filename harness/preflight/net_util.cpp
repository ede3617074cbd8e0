#include "preflight/net_util.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "util.hpp"

namespace hanglab::preflight {

using nlohmann::json;

double left_s(double deadline_mono) { return std::max(0.0, deadline_mono - mono_now()); }

namespace {

int poll_ms(double seconds) { return static_cast<int>(std::ceil(std::max(0.0, seconds) * 1000)); }

std::string numeric_of(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

}  // namespace

Resolved resolve_host(const std::string& host, double timeout_s) {
  Resolved out;
  // getaddrinfo_a: the lookup runs on glibc's own thread; on a timeout it is cancelled if it can
  // be, else left to finish on its own. Its request must then outlive this call, so it lives on
  // the heap and is freed only when the lookup has ended.
  struct Req {
    std::string name;
    addrinfo hints{};
    gaicb cb{};
  };
  auto* req = new Req;
  req->name = host;
  req->hints.ai_family = AF_UNSPEC;
  req->hints.ai_socktype = SOCK_STREAM;
  req->cb.ar_name = req->name.c_str();
  req->cb.ar_request = &req->hints;
  gaicb* list[1] = {&req->cb};
  if (int rc = ::getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr); rc != 0) {
    out.error = ::gai_strerror(rc);
    delete req;
    return out;
  }
  const double deadline = mono_now() + timeout_s;
  int rc = EAI_INPROGRESS;
  while ((rc = ::gai_error(&req->cb)) == EAI_INPROGRESS) {
    const double left = left_s(deadline);
    if (left <= 0) break;
    timespec ts{static_cast<time_t>(left), static_cast<long>((left - std::floor(left)) * 1e9)};
    ::gai_suspend(list, 1, &ts);
  }
  if (rc == EAI_INPROGRESS) {
    out.timed_out = true;
    out.error = fmt::format("no answer within {:.1f} s", timeout_s);
    if (::gai_cancel(&req->cb) == EAI_CANCELED) delete req;  // else glibc still owns it: leaked on purpose
    return out;
  }
  if (rc != 0) {
    out.error = ::gai_strerror(rc);
    delete req;
    return out;
  }
  std::vector<std::string> v4, v6;
  for (addrinfo* ai = req->cb.ar_result; ai; ai = ai->ai_next) {
    const std::string a = numeric_of(ai->ai_addr);
    auto& dst = ai->ai_family == AF_INET ? v4 : v6;
    if (!a.empty() && std::find(dst.begin(), dst.end(), a) == dst.end()) dst.push_back(a);
  }
  ::freeaddrinfo(req->cb.ar_result);
  delete req;
  out.addrs = v4;
  out.addrs.insert(out.addrs.end(), v6.begin(), v6.end());
  if (out.addrs.empty()) out.error = "no address";
  return out;
}

std::vector<Interface> list_interfaces() {
  std::vector<Interface> out;
  ifaddrs* ifa = nullptr;
  if (::getifaddrs(&ifa) != 0) return out;
  auto find = [&](const std::string& n) -> Interface& {
    for (auto& i : out)
      if (i.name == n) return i;
    out.push_back(Interface{n});
    return out.back();
  };
  for (ifaddrs* p = ifa; p; p = p->ifa_next) {
    if (!p->ifa_name) continue;
    Interface& i = find(p->ifa_name);
    i.up = p->ifa_flags & IFF_UP;
    i.running = p->ifa_flags & IFF_RUNNING;
    i.loopback = p->ifa_flags & IFF_LOOPBACK;
    if (!p->ifa_addr) continue;
    if (p->ifa_addr->sa_family == AF_INET) {
      i.ipv4.push_back(numeric_of(p->ifa_addr));
    } else if (p->ifa_addr->sa_family == AF_INET6) {
      const auto* s6 = reinterpret_cast<const sockaddr_in6*>(p->ifa_addr);
      if (!IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) i.ipv6.push_back(numeric_of(p->ifa_addr));
    }
  }
  ::freeifaddrs(ifa);
  // The MTU through an ioctl on a socket of this namespace (see the header on /sys).
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  for (auto& i : out) {
    ifreq r{};
    std::strncpy(r.ifr_name, i.name.c_str(), IFNAMSIZ - 1);
    if (fd >= 0 && ::ioctl(fd, SIOCGIFMTU, &r) == 0) i.mtu = r.ifr_mtu;
  }
  if (fd >= 0) ::close(fd);
  return out;
}

std::vector<std::string> local_addresses() {
  std::vector<std::string> out;
  for (const auto& i : list_interfaces()) {
    out.insert(out.end(), i.ipv4.begin(), i.ipv4.end());
    out.insert(out.end(), i.ipv6.begin(), i.ipv6.end());
  }
  return out;
}

bool is_loopback_addr(const std::string& a) { return a.rfind("127.", 0) == 0 || a == "::1"; }

bool make_sockaddr(const std::string& numeric, int port, sockaddr_storage& ss, socklen_t& len) {
  std::memset(&ss, 0, sizeof ss);
  auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
  if (::inet_pton(AF_INET, numeric.c_str(), &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
    return true;
  }
  auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET6, numeric.c_str(), &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

const char* connect_class_name(ConnectClass c) {
  switch (c) {
    case ConnectClass::kOk: return "ok";
    case ConnectClass::kRefused: return "refused";
    case ConnectClass::kTimeout: return "timeout";
    case ConnectClass::kUnreachable: return "unreachable";
    case ConnectClass::kOther: return "error";
  }
  return "error";
}

ConnectResult tcp_connect(const std::string& numeric, int port, double timeout_s, int mss) {
  ConnectResult r;
  const double t0 = mono_now();
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!make_sockaddr(numeric, port, ss, len)) {
    r.error = "not a numeric address: " + numeric;
    return r;
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    r.error = std::string("socket: ") + std::strerror(errno);
    return r;
  }
  if (mss > 0) ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
  auto classify = [&](int err) {
    r.error = std::strerror(err);
    r.cls = err == ECONNREFUSED                                       ? ConnectClass::kRefused
            : err == EHOSTUNREACH || err == ENETUNREACH               ? ConnectClass::kUnreachable
            : err == ETIMEDOUT                                        ? ConnectClass::kTimeout
                                                                      : ConnectClass::kOther;
  };
  int err = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS) {
      classify(errno);
      ::close(fd);
      r.seconds = mono_now() - t0;
      return r;
    }
    pollfd p{fd, POLLOUT, 0};
    const int n = ::poll(&p, 1, poll_ms(timeout_s));
    if (n == 0) {
      r.cls = ConnectClass::kTimeout;
      r.error = fmt::format("no answer within {:.1f} s (packets dropped)", timeout_s);
      ::close(fd);
      r.seconds = mono_now() - t0;
      return r;
    }
    socklen_t el = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
    if (n < 0) err = errno;
  }
  r.seconds = mono_now() - t0;
  if (err != 0) {
    classify(err);
    ::close(fd);
    return r;
  }
  r.fd = fd;
  r.cls = ConnectClass::kOk;
  return r;
}

LineConn::~LineConn() { close(); }
LineConn::LineConn(LineConn&& o) noexcept : fd_(o.fd_), buf_(std::move(o.buf_)) { o.fd_ = -1; }
LineConn& LineConn::operator=(LineConn&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    buf_ = std::move(o.buf_);
    o.fd_ = -1;
  }
  return *this;
}
void LineConn::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool LineConn::send(const json& j, double deadline_mono) {
  if (fd_ < 0) return false;
  const std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    pollfd p{fd_, POLLOUT, 0};
    if (left_s(deadline_mono) <= 0 || ::poll(&p, 1, poll_ms(left_s(deadline_mono))) <= 0) return false;
  }
  return true;
}

bool LineConn::pump(std::vector<json>& lines, std::string* error) {
  if (fd_ < 0) return false;
  char chunk[65536];
  bool alive = true;
  while (alive) {
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      buf_.append(chunk, static_cast<size_t>(n));
      if (buf_.size() > (4u << 20)) {
        if (error) *error = "a line over 4 MiB";
        return false;
      }
    } else if (n == 0) {
      if (error) *error = "connection closed";
      alive = false;  // the lines before the close still count
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;
    } else if (errno != EINTR) {
      if (error) *error = std::strerror(errno);
      alive = false;
    }
  }
  for (size_t nl; (nl = buf_.find('\n')) != std::string::npos;) {
    json j = json::parse(buf_.substr(0, nl), nullptr, false);
    buf_.erase(0, nl + 1);
    if (j.is_discarded() || !j.is_object()) {
      if (error) *error = "a line that is not a JSON object";
      return false;
    }
    lines.push_back(std::move(j));
  }
  return alive;
}

std::optional<json> LineConn::recv(double deadline_mono, std::string* error) {
  std::vector<json> lines;
  for (;;) {
    // A complete line may already be buffered from an earlier pump.
    if (!pump(lines, error)) {
      if (!lines.empty()) break;
      return std::nullopt;
    }
    if (!lines.empty()) break;
    const double left = left_s(deadline_mono);
    if (left <= 0) {
      if (error) *error = "no answer in time";
      return std::nullopt;
    }
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, poll_ms(std::min(left, 0.2)));
  }
  // Lines after the first stay for the next call: put them back in front of the buffer.
  std::string rest;
  for (size_t i = 1; i < lines.size(); ++i) rest += lines[i].dump() + "\n";
  buf_ = rest + buf_;
  return std::move(lines.front());
}

}  // namespace hanglab::preflight
