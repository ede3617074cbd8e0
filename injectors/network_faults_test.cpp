// Unit tests of the network, rendezvous and collective-logic injectors: the port holder
// really holds the port and revert frees it; environment changes land only on the chosen
// ranks; the wrappers' argv is right and, run for real, exec the rank's own command line
// (late, or in a private network namespace); key validation names the key.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "injector.hpp"
#include "network_common.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

struct FakeJob : Job {
  int world_size() const override { return 4; }
  pid_t pid_of(int) const override { return 0; }
  bool alive(int) const override { return false; }
  std::string run_dir() const override { return "/nonexistent"; }
};

FaultSpec spec_from(const std::string& kind, std::vector<int> ranks, const std::string& extra = "") {
  FaultSpec s;
  s.kind = kind;
  s.ranks = ranks;
  std::string rs;
  for (int r : ranks) rs += (rs.empty() ? "" : ", ") + std::to_string(r);
  s.table = toml::parse("kind = \"" + kind + "\"\nranks = [" + rs + "]\n" + extra);
  return s;
}

std::unique_ptr<Injector> make(const std::string& kind, std::vector<int> ranks, const std::string& extra = "") {
  const InjectorInfo* info = find_injector(kind);
  REQUIRE(info != nullptr);
  auto inj = info->make();
  inj->configure(spec_from(kind, std::move(ranks), extra), "x.toml");
  return inj;
}

LaunchSpec launch_spec(int rank, int port = 29500) {
  LaunchSpec s;
  s.rank = rank;
  s.argv = {"/bin/true"};
  s.env = {{"RANK", std::to_string(rank)}, {"LOCAL_RANK", std::to_string(rank)}, {"WORLD_SIZE", "4"},
           {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}};
  return s;
}

std::vector<LaunchSpec> prepare_all(Injector& inj, int port = 29500) {
  std::vector<LaunchSpec> specs;
  for (int r = 0; r < 4; ++r) {
    specs.push_back(launch_spec(r, port));
    inj.prepare_rank(r, specs.back());
  }
  return specs;
}

// A port nobody listens on right now (the kernel's choice; closed again at once).
int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(s);
  return ntohs(a.sin_port);
}

// errno of binding+listening on the IPv4 wildcard at `port` (0 = it worked; released).
int try_listen(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as TCPStore does
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  int err = 0;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 1) != 0) err = errno;
  ::close(s);
  return err;
}

bool can_connect(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

// Runs wrapper + argv as the supervisor would (execvp), returns stdout and the status.
std::pair<std::string, int> run_argv(const std::vector<std::string>& wrapper, const std::vector<std::string>& argv) {
  std::vector<std::string> all = wrapper;
  all.insert(all.end(), argv.begin(), argv.end());
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(p[1], 1);
    std::vector<char*> cargv;
    for (auto& a : all) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execvp(cargv[0], cargv.data());
    _exit(127);
  }
  ::close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return {out, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)};
}

bool holder_alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

}  // namespace

TEST_CASE("PortHolder holds the port until stop, and stop is idempotent") {
  const int port = free_port();
  PortHolder h;
  h.start(port);
  REQUIRE(h.running());
  const pid_t pid = h.pid();
  CHECK(holder_alive(pid));
  CHECK(try_listen(port) == EADDRINUSE);
  CHECK(can_connect(port));  // it listens: clients get through and then hear nothing
  PortHolder second;
  CHECK_THROWS_WITH(second.start(port), Catch::Contains("Address already in use"));
  CHECK_FALSE(second.running());
  h.stop();
  CHECK_FALSE(h.running());
  CHECK(try_listen(port) == 0);
  CHECK_FALSE(can_connect(port));
  CHECK(::waitpid(pid, nullptr, WNOHANG) == -1);  // reaped: no zombie left behind
  CHECK_NOTHROW(h.stop());
}

TEST_CASE("PortHolder::stop is safe when someone else reaped the holder") {
  PortHolder h;
  h.start(free_port());
  const pid_t pid = h.pid();
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);  // as the supervisor's waitpid(-1) would
  CHECK_NOTHROW(h.stop());
  CHECK_FALSE(h.running());
}

TEST_CASE("port_in_use holds the run's MASTER_PORT from prepare_rank until revert") {
  const int port = free_port();
  auto inj = make("port_in_use", {0});
  FakeJob job;
  auto specs = prepare_all(*inj, port);
  CHECK(try_listen(port) == EADDRINUSE);
  const std::string detail = inj->fire(job);
  CHECK_THAT(detail, Catch::Contains(std::to_string(port)));
  for (const auto& s : specs) {  // nothing about the ranks themselves changes
    CHECK(s.wrapper.empty());
    CHECK(s.env.at("MASTER_PORT") == std::to_string(port));
  }
  inj->revert(job);
  CHECK(try_listen(port) == 0);
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("port_in_use fails before launch when the port is taken already") {
  const int port = free_port();
  PortHolder other;
  other.start(port);
  auto inj = make("port_in_use", {0});
  LaunchSpec s = launch_spec(0, port);
  CHECK_THROWS_WITH(inj->prepare_rank(0, s), Catch::Contains("Address already in use"));
  FakeJob job;
  CHECK_NOTHROW(inj->revert(job));
  CHECK(try_listen(port) == EADDRINUSE);  // the other holder is not ours to stop
}

TEST_CASE("wrong_socket_ifname sets both variables on the chosen ranks only") {
  auto inj = make("wrong_socket_ifname", {1, 3});
  auto specs = prepare_all(*inj);
  for (const auto& s : specs) {
    const bool chosen = s.rank == 1 || s.rank == 3;
    CHECK(s.env.count("GLOO_SOCKET_IFNAME") == (chosen ? 1u : 0u));
    CHECK(s.env.count("NCCL_SOCKET_IFNAME") == (chosen ? 1u : 0u));
    if (chosen) CHECK(s.env.at("GLOO_SOCKET_IFNAME") == "hanglab_none0");
    CHECK(s.wrapper.empty());
  }
  auto lo = make("wrong_socket_ifname", {0}, "ifname = \"lo\"\n");
  LaunchSpec s = launch_spec(0);
  lo->prepare_rank(0, s);
  CHECK(s.env.at("NCCL_SOCKET_IFNAME") == "lo");
  CHECK_THROWS_AS(make("wrong_socket_ifname", {0}, "ifname = \"\"\n"), ConfigError);
}

TEST_CASE("wrong_master_addr changes MASTER_ADDR of the chosen ranks and isolates them") {
  auto inj = make("wrong_master_addr", {2});
  auto specs = prepare_all(*inj);
  for (const auto& s : specs) {
    if (s.rank == 2) {
      CHECK(s.env.at("MASTER_ADDR") == "127.0.0.2");
      CHECK(s.wrapper == private_netns_wrapper());
    } else {
      CHECK(s.env.at("MASTER_ADDR") == "127.0.0.1");
      CHECK(s.wrapper.empty());
    }
  }
  FakeJob job;
  CHECK_THAT(inj->fire(job), Catch::Contains("MASTER_ADDR=127.0.0.2") && Catch::Contains("peers: 127.0.0.1"));

  auto plain = make("wrong_master_addr", {1}, "addr = \"no-such-host.invalid\"\nisolate = false\n");
  LaunchSpec s = launch_spec(1);
  plain->prepare_rank(1, s);
  CHECK(s.env.at("MASTER_ADDR") == "no-such-host.invalid");
  CHECK(s.wrapper.empty());
  CHECK(plain->unsupported_reason(HostInfo{}).empty());

  HostInfo not_root;
  not_root.is_root = false;
  CHECK_THAT(inj->unsupported_reason(not_root), Catch::Contains("root"));
}

TEST_CASE("duplicate_rank gives the chosen rank another rank's RANK") {
  SECTION("default: the rank below") {
    auto inj = make("duplicate_rank", {3});
    auto specs = prepare_all(*inj);
    CHECK(specs[3].env.at("RANK") == "2");
    CHECK(specs[3].env.at("LOCAL_RANK") == "2");
    for (int r = 0; r < 3; ++r) CHECK(specs[r].env.at("RANK") == std::to_string(r));
    FakeJob job;
    CHECK_THAT(inj->fire(job), Catch::Contains("rank 3 started as RANK=2"));
  }
  SECTION("default for rank 0 is 1") {
    auto inj = make("duplicate_rank", {0});
    LaunchSpec s = launch_spec(0);
    inj->prepare_rank(0, s);
    CHECK(s.env.at("RANK") == "1");
  }
  SECTION("explicit as_rank") {
    auto inj = make("duplicate_rank", {3}, "as_rank = 0\n");
    auto specs = prepare_all(*inj);
    CHECK(specs[3].env.at("RANK") == "0");
  }
  SECTION("as_rank must differ from the fault's ranks and be in range") {
    try {
      make("duplicate_rank", {1, 2}, "as_rank = 2\n");
      FAIL("accepted as_rank equal to a fault rank");
    } catch (const ConfigError& e) {
      CHECK(e.key() == "fault[0].as_rank");
      CHECK(e.line() == 3);
    }
    CHECK_THROWS_AS(make("duplicate_rank", {1}, "as_rank = -1\n"), ConfigError);
    auto inj = make("duplicate_rank", {1}, "as_rank = 7\n");
    LaunchSpec s = launch_spec(1);
    CHECK_THROWS_WITH(inj->prepare_rank(1, s), Catch::Contains("out of range"));
  }
}

TEST_CASE("late_joiner wraps only the chosen ranks, and the wrapper execs the rank's argv late") {
  auto inj = make("late_joiner", {1}, "delay_s = 0.3\n");
  auto specs = prepare_all(*inj);
  for (const auto& s : specs) CHECK(s.wrapper.empty() == (s.rank != 1));
  REQUIRE(specs[1].wrapper.size() == 3);
  CHECK(specs[1].wrapper[1] == "-c");
  CHECK(specs[1].wrapper[2].find("sleep 0.300; exec \"$0\" \"$@\"") != std::string::npos);

  const auto t0 = std::chrono::steady_clock::now();
  auto [out, rc] = run_argv(specs[1].wrapper, {"printf", "%s|", "a b", "", "c'd"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(rc == 0);
  CHECK(out == "a b||c'd|");  // arguments survive word splitting and quoting untouched
  CHECK(took >= 0.29);

  CHECK_THROWS_AS(make("late_joiner", {1}, "delay_s = 0\n"), ConfigError);
  CHECK_THROWS_AS(make("late_joiner", {1}, "delay_s = \"5\"\n"), ConfigError);
}

TEST_CASE("late_joiner counts its delay from the first peer's first sign of life, not from launch") {
  auto inj = make("late_joiner", {1}, "delay_s = 0.2\n");
  auto specs = prepare_all(*inj);
  const fs::path ranks = fs::temp_directory_path() / ("hanglab_late_joiner_" + std::to_string(::getpid())) / "ranks";
  fs::remove_all(ranks.parent_path());
  fs::create_directories(ranks / "0");
  std::ofstream(ranks / "0" / "stdout.log").close();  // exists, empty: rank 0 has not spoken yet
  std::vector<std::string> w = {"env", "HANGLAB_TRACE=" + (ranks / "1" / "events.jsonl").string()};
  w.insert(w.end(), specs[1].wrapper.begin(), specs[1].wrapper.end());
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    std::ofstream(ranks / "0" / "stdout.log") << "rank 0 up\n";
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto [out, rc] = run_argv(w, {"printf", "joined"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  peer.join();
  CHECK(rc == 0);
  CHECK(out == "joined");
  CHECK(took >= 0.59);  // 0.4 s until rank 0 spoke, then the 0.2 s delay
  fs::remove_all(ranks.parent_path());
}

TEST_CASE("wrappers compose: the last prepended runs first and each execs the rest") {
  LaunchSpec s = launch_spec(0);
  prepend_wrapper(s, delayed_start_wrapper(0.01));
  prepend_wrapper(s, {"env", "HANGLAB_TEST_X=1"});
  auto [out, rc] = run_argv(s.wrapper, {"sh", "-c", "printf %s \"$HANGLAB_TEST_X\""});
  CHECK(rc == 0);
  CHECK(out == "1");
}

TEST_CASE("the private network namespace wrapper runs the rank with loopback only") {
  HostInfo host = detect_host();
  if (!netns_unsupported_reason(host).empty()) {
    WARN("skipped: " << netns_unsupported_reason(host));
    return;
  }
  std::error_code ec;
  const std::string mine = std::filesystem::read_symlink("/proc/self/ns/net", ec).string();
  auto [ns, rc] = run_argv(private_netns_wrapper(), {"readlink", "/proc/self/ns/net"});
  CHECK(rc == 0);
  CHECK_FALSE(ns.empty());
  CHECK(ns.substr(0, ns.find('\n')) != mine);
  // sysfs still shows the host's interfaces (it is not remounted): ask the kernel.
  auto [links, rc2] = run_argv(private_netns_wrapper(), {"ip", "-o", "link", "show"});
  CHECK(rc2 == 0);
  CHECK(std::count(links.begin(), links.end(), '\n') == 1);  // loopback alone...
  CHECK_THAT(links, Catch::Contains("lo: <LOOPBACK,UP"));      // ...and up

  // A holder on this host's loopback is unreachable from inside: nothing leaks out.
  const int port = free_port();
  PortHolder h;
  h.start(port);
  if (!find_in_path("bash").empty()) {
    auto [o, rc3] = run_argv(private_netns_wrapper(),
                             {"bash", "-c", "exec 2>/dev/null; exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) + " && echo reached"});
    CHECK(rc3 != 0);
    CHECK(o.empty());
  }
}

TEST_CASE("collective-logic injectors hand the workload the hook keys it knows") {
  auto extra = make("extra_collective", {2}, "at_step = 4\nnumel = 8\n");
  LaunchSpec s = launch_spec(2);
  extra->prepare_rank(2, s);
  REQUIRE(s.hooks.size() == 1);
  // at_step comes from FaultSpec (unset here), so the hook falls back to step 1.
  CHECK(s.hooks[0] == nlohmann::json{{"kind", "extra_collective"}, {"numel", 8}, {"at_step", 1}});
  CHECK_THROWS_AS(make("extra_collective", {2}, "numel = 0\n"), ConfigError);

  auto nan = make("nan_skip", {1});
  LaunchSpec n = launch_spec(1);
  nan->prepare_rank(1, n);
  REQUIRE(n.hooks.size() == 1);
  CHECK(n.hooks[0].value("kind", "") == "nan_skip");

  auto mm = make("mismatched_collective", {1}, "op = \"broadcast\"\n");
  LaunchSpec m = launch_spec(1);
  mm->prepare_rank(1, m);
  CHECK(m.hooks[0].value("op", "") == "broadcast");
  CHECK_FALSE(m.hooks[0].contains("numel"));
  try {
    make("mismatched_collective", {1}, "op = \"broadcast\"\nnumel = 5\n");
    FAIL("accepted numel with op broadcast");
  } catch (const ConfigError& e) {
    CHECK(e.key() == "fault[0].numel");
    CHECK(e.line() == 4);
  }
  CHECK_THROWS_AS(make("mismatched_collective", {1}, "op = \"allgather\"\n"), ConfigError);
  CHECK_THROWS_AS(make("mismatched_collective", {1}, "numel = 0\n"), ConfigError);
}
