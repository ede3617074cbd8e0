// Unit tests of the c10d pieces (process_group.hpp) on a real LibTorch ProcessGroupGloo:
// two ranks as two threads of this process over a real TCPStore on loopback. What the
// training loop relies on: sums and broadcasts land in its own buffers, a peer that never
// enters a collective surfaces as CollectiveError of class timeout after the backend's
// timeout (not before), and rendezvous names the ranks that never came.
#include "process_group.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <vector>

using hanglab::C10dCollectives;
using hanglab::CollectiveError;
using hanglab::ErrorClass;
using hanglab::RankEnv;

namespace {

// A port nothing listens on right now (bound, read back, released).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

RankEnv env_for(int rank, int world, int port, std::chrono::milliseconds init, std::chrono::milliseconds coll) {
  RankEnv e;
  e.rank = rank;
  e.world_size = world;
  e.master_addr = "127.0.0.1";
  e.master_port = port;
  e.init_timeout = init;
  e.collective_timeout = coll;
  return e;
}

std::unique_ptr<C10dCollectives> gloo_rank(const RankEnv& env) {
  auto store = hanglab::c10d_rendezvous(env);
  auto opts = c10d::ProcessGroupGloo::Options::create(env.collective_timeout);
  opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(env.master_addr));
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, opts);
  return std::make_unique<C10dCollectives>(pg, c10::Device(c10::kCPU), "gloo test");
}

}  // namespace

TEST_CASE("c10d Gloo collectives work on the loop's own buffers") {
  const int port = free_port();
  auto run = [port](int rank) {
    auto c = gloo_rank(env_for(rank, 2, port, std::chrono::seconds(20), std::chrono::seconds(20)));
    std::vector<float> f{1.0f + rank, 10.0f * (rank + 1)};
    c->allreduce_sum(f.data(), static_cast<int64_t>(f.size()));
    std::vector<double> d{0.5 + rank};
    c->allreduce_sum(d.data(), 1);
    std::vector<float> b{static_cast<float>(100 + rank), static_cast<float>(200 + rank)};
    c->broadcast(b.data(), 2, 1);
    c->barrier();
    return std::vector<double>{f[0], f[1], d[0], b[0], b[1]};
  };
  auto r1 = std::async(std::launch::async, run, 1);
  const auto got0 = run(0);
  const auto got1 = r1.get();
  const std::vector<double> want{3.0, 30.0, 2.0, 101.0, 201.0};
  CHECK(got0 == want);
  CHECK(got1 == want);
}

TEST_CASE("a peer that skips an allreduce is a timeout after the backend's timeout") {
  const int port = free_port();
  const auto timeout = std::chrono::milliseconds(1500);
  auto peer = std::async(std::launch::async, [&] {
    auto c = gloo_rank(env_for(1, 2, port, std::chrono::seconds(20), timeout));
    c->barrier();
    // Skips the allreduce; stays alive (and connected) until rank 0 has given up.
    std::this_thread::sleep_for(timeout * 3);
  });
  auto c = gloo_rank(env_for(0, 2, port, std::chrono::seconds(20), timeout));
  c->barrier();
  std::vector<float> f{1.0f};
  const auto t0 = std::chrono::steady_clock::now();
  try {
    c->allreduce_sum(f.data(), 1);
    FAIL("the allreduce completed without its peer");
  } catch (const CollectiveError& e) {
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(e.error_class() == ErrorClass::kTimeout);
    CHECK(waited >= timeout);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);  // message only, no backtrace
  }
  peer.get();
}

TEST_CASE("rendezvous names the ranks that never joined") {
  const int port = free_port();
  try {
    hanglab::c10d_rendezvous(env_for(0, 3, port, std::chrono::milliseconds(600), std::chrono::seconds(5)));
    FAIL("rendezvous completed with 1 of 3 ranks");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    CHECK(what.find("1/3 ranks joined") != std::string::npos);
    CHECK(what.find("missing ranks: 1,2") != std::string::npos);
  }
}

TEST_CASE("the build info names LibTorch 2.x, C++20 and the ABI") {
  const std::string info = hanglab::libtorch_build_info();
  CHECK(info.rfind("LibTorch 2.", 0) == 0);
  CHECK(info.find("C++20") != std::string::npos);
  CHECK(info.find("ABI") != std::string::npos);
}
