// Unit tests of nccl_ddp's unique-id rendezvous (id_exchange.hpp): peers get rank 0's
// blob whatever the start order, and both sides fail by the deadline with the missing
// ranks or the unreachable address named.
#include "id_exchange.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "trainer.hpp"

using hanglab::CollectiveError;
using hanglab::IdExchangeClock;
using Ms = std::chrono::milliseconds;

namespace {

// A port nobody listens on right now (bound, read back, released).
int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(s);
  return ntohs(a.sin_port);
}

std::string blob128() {
  std::string b(128, '\0');
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i * 7 + 3);
  return b;
}

}  // namespace

TEST_CASE("every peer gets rank 0's id, even when they start first", "[id_exchange]") {
  const int port = free_port();
  const auto deadline = IdExchangeClock::now() + Ms(10000);
  std::vector<std::future<std::string>> peers;
  for (int r = 1; r < 4; ++r) {
    peers.push_back(std::async(std::launch::async, [=] {
      return hanglab::fetch_id("127.0.0.1", port, r, 128, deadline, Ms(10000));
    }));
  }
  std::this_thread::sleep_for(Ms(300));  // the peers are retrying their connects by now
  hanglab::serve_id(port, 4, blob128(), deadline, Ms(10000));
  for (auto& p : peers) CHECK(p.get() == blob128());
}

TEST_CASE("world size 1 serves nobody", "[id_exchange]") {
  hanglab::serve_id(free_port(), 1, blob128(), IdExchangeClock::now() + Ms(100), Ms(100));
}

TEST_CASE("the server names the ranks that never came", "[id_exchange]") {
  const int port = free_port();
  const auto deadline = IdExchangeClock::now() + Ms(1500);
  auto peer = std::async(std::launch::async, [=] {
    return hanglab::fetch_id("localhost", port, 2, 128, deadline, Ms(1500));
  });
  try {
    hanglab::serve_id(port, 4, blob128(), deadline, Ms(1500));
    FAIL("serve_id returned");
  } catch (const CollectiveError& e) {
    CHECK(e.error_class() == hanglab::ErrorClass::kRendezvous);
    CHECK(std::string(e.what()) == "rendezvous timed out after 1500 ms: 2/4 ranks joined (missing ranks: 1,3)");
  }
  CHECK(peer.get() == blob128());
}

TEST_CASE("a peer with no server fails by the deadline, naming the address", "[id_exchange]") {
  const int port = free_port();
  const auto t0 = IdExchangeClock::now();
  try {
    hanglab::fetch_id("127.0.0.1", port, 1, 128, t0 + Ms(600), Ms(600));
    FAIL("fetch_id returned");
  } catch (const CollectiveError& e) {
    const std::string what = e.what();
    CHECK(what.find("rendezvous timed out after 600 ms") != std::string::npos);
    CHECK(what.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
    CHECK(what.find("Connection refused") != std::string::npos);
  }
  CHECK(IdExchangeClock::now() - t0 < Ms(3000));
}
