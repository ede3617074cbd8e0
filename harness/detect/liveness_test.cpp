// The kernel liveness sampler on real processes: busy, polling, blocked, stopped, a tree.
#include "detect/liveness.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "detect/child_process_test_support.hpp"
#include "util.hpp"

using namespace hanglab;
using namespace hanglab::testsupport;

namespace {

// Samples `pid` over `windows` windows of 0.3 s; returns the last liveness.
RankLiveness watch(pid_t pid, int windows, LivenessOptions o = {}) {
  o.interval_s = 0.3;
  LivenessSampler s(o);
  const RankLiveness* l = nullptr;
  for (int i = 0; i <= windows; ++i) {
    s.sample({{0, pid, true}}, mono_now());
    l = s.get(0);
    if (i < windows) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return *l;
}

}  // namespace

TEST_CASE("a computing process is busy, whatever the host's load") {
  Child c(spin_forever);
  const RankLiveness l = watch(c.pid, 2);
  CHECK(l.activity == Activity::kBusy);
  REQUIRE(!l.busy.empty());
  CHECK(l.busy.front().demand >= 0.3);
  CHECK(l.main_ran);
  CHECK(l.last_active_mono > 0);
  CHECK(l.blocked_since_mono == 0);
}

TEST_CASE("a thread that wakes often for microseconds is not busy") {
  Child c(poll_forever);
  const RankLiveness l = watch(c.pid, 3);
  CHECK(l.activity == Activity::kBlocked);
  CHECK(l.busy.empty());
}

TEST_CASE("a process waiting on a pipe is blocked, and says where") {
  Child c(block_forever);
  const RankLiveness l = watch(c.pid, 2);
  CHECK(l.activity == Activity::kBlocked);
  CHECK(l.state == 'S');
  CHECK(l.where == "pipe");
  CHECK(!l.main_ran);
  CHECK(l.blocked_since_mono > 0);
}

TEST_CASE("a stopped process is stopped") {
  Child c(block_forever);
  ::kill(c.pid, SIGSTOP);
  const RankLiveness l = watch(c.pid, 2);
  CHECK(l.activity == Activity::kStopped);
  CHECK(l.where == "stopped");
}

TEST_CASE("a rank whose child works is busy -- a launcher's children do not count for it") {
  // The grandchild ends with its parent (PDEATHSIG) and, orphaned, is reaped here.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  {
    Child parent([] {
      pid_t kid = ::fork();
      if (kid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        spin_forever();
      }
      ::waitpid(kid, nullptr, 0);
    });
    const RankLiveness tree = watch(parent.pid, 2);
    CHECK(tree.processes == 2);
    CHECK(tree.activity == Activity::kBusy);
    CHECK(tree.where == "child");
    LivenessOptions o;
    o.interval_s = 0.3;
    LivenessSampler own(o);
    for (int i = 0; i < 3; ++i) {
      own.sample({{-1, parent.pid, false}}, mono_now());
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    own.sample({{-1, parent.pid, false}}, mono_now());
    CHECK(own.get(-1)->processes == 1);
    CHECK(own.get(-1)->activity == Activity::kBlocked);
  }
  while (::waitpid(-1, nullptr, 0) > 0) {
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST_CASE("a process that works in short-lived children (a shell running commands) is busy") {
  Child c([] {
    for (;;) {
      pid_t kid = ::fork();
      if (kid == 0) {
        const double end = mono_now() + 0.03;
        volatile unsigned long x = 0;
        while (mono_now() < end) ++x;
        _exit(0);
      }
      ::waitpid(kid, nullptr, 0);
    }
  });
  const RankLiveness l = watch(c.pid, 3);
  CHECK(l.activity == Activity::kBusy);
}

TEST_CASE("a process that is gone is gone -- the first sample only opens the window") {
  LivenessSampler s;
  pid_t pid = ::fork();
  if (pid == 0) _exit(0);
  ::waitpid(pid, nullptr, 0);
  s.sample({{3, pid, true}}, 10.0);
  CHECK(s.get(3)->activity == Activity::kGone);
  Child c(block_forever);
  LivenessSampler t;
  t.sample({{0, c.pid, true}}, mono_now());
  CHECK(t.get(0)->activity == Activity::kUnknown);
}

TEST_CASE("/proc parsing") {
  auto st = parse_stat_line("1234 (pt_gloo (x)) S 1 2 3");
  REQUIRE(st);
  CHECK(st->state == 'S');
  CHECK(st->comm == "pt_gloo (x)");
  CHECK(!parse_stat_line("garbage"));
  CHECK(parse_reaped_children_ticks("77 (ba sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16") == 13 + 14);
  CHECK(!parse_reaped_children_ticks("77 (bash) S 1 2"));
  auto ss = parse_schedstat("224975809 2091872391 5251\n");
  REQUIRE(ss);
  CHECK((*ss)[0] == 224975809ULL);
  CHECK((*ss)[2] == 5251ULL);
  CHECK(!parse_schedstat("x"));
  const char* io =
      "rchar: 26129970\nwchar: 90756\nsyscr: 2712\nsyscw: 154\nread_bytes: 995328\nwrite_bytes: 8192\n"
      "cancelled_write_bytes: 4096\n";
  CHECK(parse_io_bytes(io) == 995328 + 8192);
  CHECK(!parse_io_bytes("rchar: 1\n"));
  CHECK(where_of_wchan('S', "futex_do_wait") == "futex");
  CHECK(where_of_wchan('S', "do_epoll_wait") == "poll");
  CHECK(where_of_wchan('S', "request_wait_answer") == "fs");
  CHECK(where_of_wchan('D', "io_schedule") == "disk");
  CHECK(where_of_wchan('S', "hrtimer_nanosleep") == "sleep");
  CHECK(where_of_wchan('S', "sk_wait_data") == "socket");
  CHECK(where_of_wchan('T', "do_signal_stop") == "stopped");
  CHECK(where_of_wchan('R', "") == "running");
  CHECK(where_of_wchan('S', "do_wait") == "child");
}
