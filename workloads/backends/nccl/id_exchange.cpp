// TCP exchange of the NCCL unique id between rank 0 and its peers; see id_exchange.hpp.
#include "id_exchange.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>

#include "runtime.hpp"
#include "trainer.hpp"

namespace hanglab {
namespace {

using Clock = IdExchangeClock;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

int64_t ms_left(Clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
}

// Reads or writes exactly `n` bytes before the deadline; false on timeout, EOF or error
// (errno says which: ETIMEDOUT for the deadline, ECONNRESET for EOF).
bool io_exact(int fd, char* buf, size_t n, bool write_it, Clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    pollfd p{fd, static_cast<short>(write_it ? POLLOUT : POLLIN), 0};
    const int64_t left = ms_left(deadline);
    if (left <= 0) {
      errno = ETIMEDOUT;
      return false;
    }
    const int pr = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return false;
    if (pr == 0) continue;
    const ssize_t k = write_it ? ::send(fd, buf + done, n - done, MSG_NOSIGNAL) : ::recv(fd, buf + done, n - done, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) {
      if (k == 0) errno = ECONNRESET;
      return false;
    }
    done += static_cast<size_t>(k);
  }
  return true;
}

std::string missing_ranks(const std::set<int>& joined, int world_size) {
  std::string out;
  for (int r = 1; r < world_size; ++r) {
    if (joined.count(r) == 0) out += (out.empty() ? "" : ",") + std::to_string(r);
  }
  return out;
}

// A listening socket on `port`: IPv6 dual-stack where the host has IPv6, else IPv4.
int listen_on(int port) {
  const int one = 1;
  int s = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s >= 0) {
    const int zero = 0;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(s, 128) == 0) return s;
    const int err = errno;
    ::close(s);
    if (err == EADDRINUSE) {
      errno = err;
      return -1;
    }
  }
  s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(s, 128) == 0) return s;
  const int err = errno;
  ::close(s);
  errno = err;
  return -1;
}

}  // namespace

void serve_id(int port, int world_size, const std::string& blob, Clock::time_point deadline,
              std::chrono::milliseconds init_timeout) {
  if (world_size <= 1) return;
  Fd listener(listen_on(port));
  if (listener.get() < 0) {
    throw CollectiveError(ErrorClass::kRendezvous, "rendezvous server on port " + std::to_string(port) +
                                                       ": bind/listen: " + std::strerror(errno));
  }
  std::set<int> joined;
  while (static_cast<int>(joined.size()) < world_size - 1) {
    const int64_t left = ms_left(deadline);
    if (left <= 0) {
      throw CollectiveError(ErrorClass::kRendezvous,
                            "rendezvous timed out after " + std::to_string(init_timeout.count()) + " ms: " +
                                std::to_string(joined.size() + 1) + "/" + std::to_string(world_size) +
                                " ranks joined (missing ranks: " + missing_ranks(joined, world_size) + ")");
    }
    pollfd p{listener.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 500))) <= 0) continue;
    Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (c.get() < 0) continue;
    // One slow or silent peer must not hold the others back for the whole init timeout.
    const auto conn_deadline = std::min(deadline, Clock::now() + std::chrono::milliseconds(5000));
    uint32_t peer_n = 0;
    if (!io_exact(c.get(), reinterpret_cast<char*>(&peer_n), sizeof peer_n, false, conn_deadline)) continue;
    const int peer = static_cast<int>(ntohl(peer_n));
    if (peer <= 0 || peer >= world_size) {
      log_error("rendezvous: ignoring a peer that says it is rank %d (world_size %d)", peer, world_size);
      continue;
    }
    std::string copy = blob;
    if (io_exact(c.get(), copy.data(), copy.size(), true, conn_deadline)) joined.insert(peer);
  }
}

std::string fetch_id(const std::string& addr, int port, int rank, size_t size, Clock::time_point deadline,
                     std::chrono::milliseconds init_timeout) {
  const std::string where = addr + ":" + std::to_string(port);
  std::string last_error = "no attempt";
  while (ms_left(deadline) > 0) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int gai = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (gai != 0) {
      last_error = std::string("getaddrinfo: ") + ::gai_strerror(gai);
    } else {
      for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        Fd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
        if (s.get() < 0) continue;
        if (::connect(s.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
          last_error = std::string("connect: ") + std::strerror(errno);
          continue;
        }
        uint32_t me = htonl(static_cast<uint32_t>(rank));
        std::string blob(size, '\0');
        if (io_exact(s.get(), reinterpret_cast<char*>(&me), sizeof me, true, deadline) &&
            io_exact(s.get(), blob.data(), size, false, deadline)) {
          ::freeaddrinfo(res);
          return blob;
        }
        last_error = std::string("exchange: ") + std::strerror(errno);
      }
      ::freeaddrinfo(res);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw CollectiveError(ErrorClass::kRendezvous, "rendezvous timed out after " + std::to_string(init_timeout.count()) +
                                                     " ms: could not fetch the NCCL unique id from rank 0 at " + where +
                                                     " (last error: " + last_error + ")");
}

}  // namespace hanglab
