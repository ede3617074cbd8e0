// Shared pieces of the network and rendezvous injectors: targeting, wrappers, the port
// holder (see network_common.hpp).
#include "network_common.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "run/state.hpp"

namespace hanglab {

std::string rank_kept_out_of_init(const RunFactsView& run, int rank, const std::string& clue) {
  if (run.has_phase(rank, "init", "end")) return {};
  const std::string line = clue.empty() ? std::string() : run.log_line(rank, clue);
  const bool ran = !run.events(rank, "start").empty() || !line.empty();
  if (!ran) return {};
  std::string how = "still in it when the run ended";
  if (const RankExit* e = run.exit_of(rank)) how = "exited with status " + std::to_string(e->status());
  const auto errors = run.events(rank, "error");
  std::string said = !line.empty() ? line : errors.empty() ? std::string() : errors.front()->value("msg", "");
  if (said.size() > 200) said = said.substr(0, 200) + "...";
  return "rank " + std::to_string(rank) + " never completed init (" + how + ")" + (said.empty() ? "" : ": " + said);
}

bool is_targeted(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

std::string find_in_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + tool;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

std::string netns_unsupported_reason(const HostInfo& host) {
  if (!host.is_root) return "needs root to give a rank its own network namespace (unshare --net)";
  for (const char* tool : {"unshare", "ip"})
    if (find_in_path(tool).empty())
      return std::string("needs the `") + tool + "` tool (util-linux / iproute2) for a private network namespace";
  return {};
}

std::vector<std::string> private_netns_wrapper() {
  // A new namespace starts with loopback down; up, it behaves like a host with no
  // network at all: every address but its own is unreachable, and 127.x reaches only
  // listeners inside the namespace.
  return {"unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""};
}

std::vector<std::string> delayed_start_wrapper(double delay_s) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f", delay_s);
  return {"sh", "-c", std::string("sleep ") + secs + "; exec \"$0\" \"$@\""};
}

void prepend_wrapper(LaunchSpec& spec, const std::vector<std::string>& wrapper) {
  spec.wrapper.insert(spec.wrapper.begin(), wrapper.begin(), wrapper.end());
}

int env_int_of(const LaunchSpec& spec, const std::string& key) {
  auto it = spec.env.find(key);
  if (it == spec.env.end())
    throw std::runtime_error("rank " + std::to_string(spec.rank) + ": " + key + " is not in the launch environment");
  try {
    size_t used = 0;
    int v = std::stoi(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  throw std::runtime_error("rank " + std::to_string(spec.rank) + ": " + key + "=" + it->second + " is not a number");
}

namespace {

// Runs in the forked child: only async-signal-safe calls. Returns errno on failure,
// with `what` naming the call.
int hold_port(int port, const char** what) {
  int v4 = ::socket(AF_INET, SOCK_STREAM, 0);
  if (v4 < 0) return *what = "socket(AF_INET)", errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(v4, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return *what = "bind(0.0.0.0)", errno;
  if (::listen(v4, 128) != 0) return *what = "listen(0.0.0.0)", errno;
  // The IPv6 wildcard too, so a server that tries [::] first (TCPStore does) fails on
  // it as well. No IPv6 on the host is not an error: the IPv4 socket already holds.
  int v6 = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (v6 >= 0) {
    int one = 1;
    ::setsockopt(v6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    sockaddr_in6 b{};
    b.sin6_family = AF_INET6;
    b.sin6_port = htons(static_cast<uint16_t>(port));
    b.sin6_addr = in6addr_any;
    if (::bind(v6, reinterpret_cast<sockaddr*>(&b), sizeof b) != 0 || ::listen(v6, 128) != 0) ::close(v6);
  }
  return 0;
}

}  // namespace

void PortHolder::start(int port, RunState* state, const std::string& netns) {
  stop();
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("port holder: pipe2 failed: ") + std::strerror(errno));
  const std::string ns_path = "/run/netns/" + netns;  // built before fork: the child only makes syscalls
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(ready[0]);
    ::close(ready[1]);
    throw std::runtime_error(std::string("port holder: fork failed: ") + std::strerror(err));
  }
  if (pid > 0) {
    register_helper_process(pid);
    ::setpgid(pid, pid);  // as the child does: the record below names its group
    // Recorded before anything can fail or wait: the holder is ours from here on.
    if (state) state_ = state, state_id_ = state->process(pid, "port holder for port " + std::to_string(port));
  }
  if (pid == 0) {
    // Its own process group: Ctrl-C on the terminal reaches only hanglab, which then
    // reverts in order. Dies with hanglab even if revert never runs.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(1);
    ::prctl(PR_SET_NAME, "hanglab-porthold");
    // Keep nothing of the harness open (run logs, its port lock, pipes): the holder
    // stands for an unrelated process. The ready pipe moves to fd 3 first.
    ::close(ready[0]);
    if (ready[1] != 3) {
      ::dup2(ready[1], 3);
      ready[1] = 3;
    }
    ::syscall(SYS_close_range, 4u, ~0u, 0u);  // ENOSYS before Linux 5.9: then keep them
    const char* what = "";
    int err = 0;
    if (!netns.empty()) {
      const int nsfd = ::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
      if (nsfd < 0 || ::setns(nsfd, CLONE_NEWNET) != 0) {
        err = errno;
        what = "setns";
      }
    }
    if (err == 0) err = hold_port(port, &what);
    int msg[2] = {err, 0};
    char buf[64 + sizeof msg] = {};
    std::memcpy(buf, msg, sizeof msg);
    std::strncpy(buf + sizeof msg, what, 63);
    (void)!::write(ready[1], buf, sizeof buf);
    ::close(ready[1]);
    if (err != 0) _exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char buf[64 + 2 * sizeof(int)] = {};
  ssize_t n;
  do {
    n = ::read(ready[0], buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  ::close(ready[0]);
  int err = 0;
  std::memcpy(&err, buf, sizeof err);
  if (n != static_cast<ssize_t>(sizeof buf) || err != 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    if (state_) state_->released(state_id_), state_ = nullptr;
    std::string what(buf + 2 * sizeof(int));
    throw std::runtime_error("port holder: " + (n == static_cast<ssize_t>(sizeof buf) ? what : std::string("child")) +
                             " on port " + std::to_string(port) + " failed: " +
                             (err ? std::strerror(err) : "no answer from the child"));
  }
  pid_ = pid;
  port_ = port;
}

void PortHolder::stop() {
  if (pid_ <= 0) return;
  // 0 = still running and still ours: nobody else can reap it between here and the
  // kill, because the supervisor's waitpid(-1) runs on this same thread.
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == 0) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (state_) state_->released(state_id_), state_ = nullptr;
  pid_ = 0;
}

}  // namespace hanglab
