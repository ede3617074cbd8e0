#include "run/port_lease.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

#include "util.hpp"

namespace hanglab {

PortLease::PortLease() {
  for (int attempt = 0; attempt < 64 && port_ == 0; ++attempt) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      if (s >= 0) ::close(s);
      throw_system_error("bind", "choosing a rendezvous port");
    }
    int port = ntohs(a.sin_port);
    ::close(s);
    int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    std::string name = "hanglab-port-" + std::to_string(port);
    std::memcpy(u.sun_path + 1, name.data(), name.size());
    socklen_t ulen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (::bind(l, reinterpret_cast<sockaddr*>(&u), ulen) == 0) {
      port_ = port;
      lock_fd_ = l;
    } else {
      ::close(l);
    }
  }
  if (port_ == 0) throw std::runtime_error("no free rendezvous port found after 64 attempts");
}

PortLease::~PortLease() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

}  // namespace hanglab
