// Unit tests of proc_exit: a process that is not our child (a grandchild, as a rank is
// under mpirun) is seen to exit through its pidfd, and how it ended is read from /proc
// while its own parent has not reaped it yet.
#include "run/proc_exit.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <chrono>
#include <thread>

using namespace hanglab;

namespace {

// A child that forks a grandchild and leaves it unreaped until told (by closing `hold`).
// The grandchild sleeps until `end` says how it should end: 'k' SIGKILL, 'e' exit(3).
struct Grandchild {
  pid_t child = -1, grandchild = -1;
  int hold_w = -1, end_w = -1;
  Grandchild() {
    int hold[2], end[2], report[2];
    REQUIRE(::pipe(hold) == 0);
    REQUIRE(::pipe(end) == 0);
    REQUIRE(::pipe(report) == 0);
    child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      pid_t g = ::fork();
      if (g == 0) {
        char how = 0;
        (void)!::read(end[0], &how, 1);
        if (how == 'k') ::kill(::getpid(), SIGKILL);
        ::_exit(3);
      }
      (void)!::write(report[1], &g, sizeof g);
      char c;
      ::close(hold[1]);
      (void)!::read(hold[0], &c, 1);  // EOF when the test is done
      ::waitpid(g, nullptr, 0);
      ::_exit(0);
    }
    ::close(hold[0]);
    ::close(end[0]);
    ::close(report[1]);
    REQUIRE(::read(report[0], &grandchild, sizeof grandchild) == sizeof grandchild);
    ::close(report[0]);
    hold_w = hold[1];
    end_w = end[1];
  }
  void end(char how) { REQUIRE(::write(end_w, &how, 1) == 1); }
  ~Grandchild() {
    ::close(end_w);
    ::close(hold_w);
    ::waitpid(child, nullptr, 0);
  }
};

bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

}  // namespace

TEST_CASE("a running process is not gone -- its pidfd is not readable", "[proc_exit]") {
  Grandchild g;
  int fd = open_pidfd(g.grandchild);
  REQUIRE(fd >= 0);
  CHECK_FALSE(readable(fd, 50));
  CHECK_FALSE(probe_proc_exit(g.grandchild).gone);
  g.end('e');
  ::close(fd);
}

TEST_CASE("a grandchild killed by SIGKILL: pidfd readable at once, status from /proc", "[proc_exit]") {
  Grandchild g;
  int fd = open_pidfd(g.grandchild);
  REQUIRE(fd >= 0);
  g.end('k');
  REQUIRE(readable(fd, 5000));
  ::close(fd);
  const ProcExit e = probe_proc_exit(g.grandchild);
  CHECK(e.gone);
  REQUIRE(e.wait_status);
  CHECK(WIFSIGNALED(*e.wait_status));
  CHECK(WTERMSIG(*e.wait_status) == SIGKILL);
}

TEST_CASE("a grandchild that exits 3: its code from /proc", "[proc_exit]") {
  Grandchild g;
  int fd = open_pidfd(g.grandchild);
  REQUIRE(fd >= 0);
  g.end('e');
  REQUIRE(readable(fd, 5000));
  ::close(fd);
  const ProcExit e = probe_proc_exit(g.grandchild);
  CHECK(e.gone);
  REQUIRE(e.wait_status);
  CHECK(WIFEXITED(*e.wait_status));
  CHECK(WEXITSTATUS(*e.wait_status) == 3);
}

TEST_CASE("process_cpu_ticks grows while a process computes", "[proc_exit]") {
  const long long before = process_cpu_ticks(::getpid());
  REQUIRE(before >= 0);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(150);
  volatile unsigned long x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
  CHECK(process_cpu_ticks(::getpid()) > before);
  CHECK(process_cpu_ticks(999999999) == -1);
}

TEST_CASE("a reaped process is gone without a status", "[proc_exit]") {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(0);
  REQUIRE(::waitpid(pid, nullptr, 0) == pid);
  const ProcExit e = probe_proc_exit(pid);
  CHECK(e.gone);
  CHECK_FALSE(e.wait_status);
}
