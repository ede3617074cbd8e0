// The watchdog on real processes standing for ranks: it fires when every live rank is blocked
// for the limit, whatever they printed, and stays quiet while a rank works.
#include "detect/harness_watchdog.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "detect/child_process_test_support.hpp"
#include "detect/snapshot.hpp"
#include "util.hpp"

using namespace hanglab;
using namespace hanglab::testsupport;

namespace {

// Steps that are mostly sleep (a script whose "compute" is a sleep), a few ms of work each.
void sleepy_steps() {
  for (;;) {
    volatile unsigned long x = 0;
    for (int i = 0; i < 3000000; ++i) ++x;
    ::usleep(50000);
  }
}

RankWatch rank_of(int r, pid_t pid) {
  RankWatch w;
  w.rank = r;
  w.pid = pid;
  w.alive = true;
  w.spoke = true;
  return w;
}

struct Run {
  bool fired = false;
  double fired_after = 0;
  std::string detail;
};

// Ticks the watchdog every 50 ms for `seconds`; `each_tick` may print lines for ranks.
template <class F>
Run drive(HarnessWatchdog& wd, std::vector<RankWatch*> ranks, double seconds, F each_tick,
          HarnessWatchdog::Launcher launcher = {}) {
  Run run;
  const double t0 = mono_now();
  wd.start(t0);
  const DetectFn sink = [&](std::string_view d, int, const std::string& detail, double) {
    CHECK(d == kHarnessWatchdog.name);
    run.fired = true;
    run.fired_after = mono_now() - t0;
    run.detail = detail;
  };
  while (mono_now() - t0 < seconds && !run.fired) {
    each_tick(mono_now());
    wd.check(ranks, launcher, mono_now(), nullptr, sink);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return run;
}

LivenessOptions fast() {
  LivenessOptions o;
  o.interval_s = 0.25;
  return o;
}

}  // namespace

TEST_CASE("every live rank blocked or stopped for progress_s is a hang, though nobody printed") {
  Child waiting(block_forever), frozen(block_forever);
  ::kill(frozen.pid, SIGSTOP);
  RankWatch a = rank_of(0, waiting.pid), b = rank_of(1, frozen.pid);
  HarnessWatchdog wd({1.5, {}, {}}, fast());
  const Run run = drive(wd, {&a, &b}, 6, [](double) {});
  REQUIRE(run.fired);
  CHECK(run.fired_after >= 1.5);
  CHECK(run.fired_after < 1.5 + 1.0);
  CHECK(run.detail.find("progress_s = 1.5") != std::string::npos);
  CHECK(run.detail.find("rank 0 blocked (pipe)") != std::string::npos);
  CHECK(run.detail.find("rank 1 stopped") != std::string::npos);
}

TEST_CASE("a rank that works keeps the job alive while its peer waits silently") {
  Child busy(spin_forever), waiting(block_forever);
  RankWatch a = rank_of(0, busy.pid), b = rank_of(1, waiting.pid);
  HarnessWatchdog wd({1.0, {}, {}}, fast());
  const Run run = drive(wd, {&a, &b}, 3.5, [](double) {});
  CHECK(!run.fired);
}

TEST_CASE("a busy rank its trace places inside a collective is waiting, not working") {
  Child spinning(spin_forever), waiting(block_forever);
  RankWatch a = rank_of(0, spinning.pid), b = rank_of(1, waiting.pid);
  a.has_trace = b.has_trace = true;
  a.in_collective = true;  // MPI and NCCL spin while they wait
  HarnessWatchdog wd({1.0, {}, {}}, fast());
  const Run run = drive(wd, {&a, &b}, 5, [](double) {});
  REQUIRE(run.fired);
  CHECK(run.detail.find("waiting in a collective (trace)") != std::string::npos);
}

TEST_CASE("lines printed while the rank's main thread sleeps through are no progress") {
  Child waiting(block_forever);
  RankWatch a = rank_of(0, waiting.pid);
  HarnessWatchdog wd({1.5, {}, {}}, fast());
  double last_line = 0;
  // A progress bar's monitor thread redrawing a stalled bar every 0.3 s.
  const Run run = drive(wd, {&a}, 6, [&](double now) {
    if (now - last_line >= 0.3) wd.output_line(a, now), last_line = now;
  });
  CHECK(run.fired);
}

TEST_CASE("lines of a rank whose steps are mostly sleep are progress") {
  Child sleepy(sleepy_steps), waiting(block_forever);
  RankWatch a = rank_of(0, sleepy.pid), b = rank_of(1, waiting.pid);
  HarnessWatchdog wd({1.0, {}, {}}, fast());
  double last_line = 0;
  const Run run = drive(wd, {&a, &b}, 3.5, [&](double now) {
    if (now - last_line >= 0.3) wd.output_line(a, now), last_line = now;
  });
  CHECK(!run.fired);
  CHECK(wd.last_progress_mono() > mono_now() - 1.0);
}

TEST_CASE("a traced rank inside a checkpoint gets checkpoint_s") {
  Child waiting(block_forever);
  RankWatch a = rank_of(0, waiting.pid);
  a.has_trace = true;
  a.in_checkpoint = true;
  HarnessWatchdog wd({0.5, 2.0, {}}, fast());
  const Run run = drive(wd, {&a}, 6, [](double) {});
  REQUIRE(run.fired);
  CHECK(run.fired_after >= 2.0);
  CHECK(run.detail.find("checkpoint_s = 2; rank 0 in checkpoint") != std::string::npos);
}

TEST_CASE("survivors blocked while their launcher stops them after a rank failed wait for that stop") {
  Child waiting(block_forever);
  RankWatch a = rank_of(0, waiting.pid);
  HarnessWatchdog wd({1.0, {}, {}}, fast());
  HarnessWatchdog::Launcher stopping;
  stopping.stopping_until_mono = mono_now() + 2.5;  // torchrun's SIGTERM ... SIGKILL window
  const Run run = drive(wd, {&a}, 6, [](double) {}, stopping);
  REQUIRE(run.fired);  // a stop that never comes is a hang after all
  CHECK(run.fired_after >= 2.5);
  CHECK(run.detail.find("launcher's time to stop its workers") != std::string::npos);
}

TEST_CASE("a rank stopped by a signal for progress_s is a hang while its peer still works") {
  // Its peer finishing work alone after the stop (a step, a log, the next batch) keeps the job
  // "alive", but the stopped rank can join no collective until it is continued.
  Child busy(spin_forever), frozen(block_forever);
  ::kill(frozen.pid, SIGSTOP);
  RankWatch a = rank_of(0, busy.pid), b = rank_of(1, frozen.pid);
  HarnessWatchdog wd({1.5, {}, {}}, fast());
  int fired_rank = -2;
  Run run;
  const double t0 = mono_now();
  wd.start(t0);
  const DetectFn sink = [&](std::string_view, int rank, const std::string& detail, double) {
    run.fired = true;
    run.fired_after = mono_now() - t0;
    run.detail = detail;
    fired_rank = rank;
  };
  while (mono_now() - t0 < 6 && !run.fired) {
    wd.check({&a, &b}, {}, mono_now(), nullptr, sink);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(run.fired);
  CHECK(fired_rank == 1);
  CHECK(run.fired_after >= 1.5);
  CHECK(run.fired_after < 1.5 + 1.0);
  CHECK(run.detail.find("rank 1 stopped by a signal (state T)") != std::string::npos);
  CHECK(run.detail.find("rank 0 busy") != std::string::npos);
}

TEST_CASE("a tracing stop (a debugger or py-spy attached) is not a rank stopped by a signal") {
  Child busy(spin_forever), traced(block_forever);
  REQUIRE(::ptrace(PTRACE_SEIZE, traced.pid, nullptr, nullptr) == 0);
  REQUIRE(::ptrace(PTRACE_INTERRUPT, traced.pid, nullptr, nullptr) == 0);
  int st = 0;
  REQUIRE(::waitpid(traced.pid, &st, __WALL) == traced.pid);  // now in state t
  RankWatch a = rank_of(0, busy.pid), b = rank_of(1, traced.pid);
  HarnessWatchdog wd({1.0, {}, {}}, fast());
  const Run run = drive(wd, {&a, &b}, 3.5, [](double) {});
  CHECK(!run.fired);
  ::ptrace(PTRACE_DETACH, traced.pid, nullptr, nullptr);
}

// The snapshot at the first detection names every live rank's kernel view, also where the detection came
// before the liveness sampler's first period (a rank that died within a second of the start, seen under a
// slow build): read from /proc at the snapshot then.
TEST_CASE("the snapshot reads a live rank's kernel state even before its first liveness sample") {
  Child sleeper([] {
    for (;;) ::pause();
  });
  RankWatch w = rank_of(0, sleeper.pid);
  HarnessWatchdog wd({30, {}, {}}, fast());  // never checked: no sample taken
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("hanglab_snapshot_{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "ranks" / "0");
  SnapshotInput in;
  in.run_dir = dir;
  in.why = "first detection: exit_monitor (rank 1)";
  in.t = unix_now();
  in.mono_to_unix = unix_now() - mono_now();
  std::vector<RankWatch*> ranks{&w};
  write_snapshot(in, ranks, wd, nullptr);
  const auto j = nlohmann::json::parse(read_file(dir / "liveness.json"));
  REQUIRE(j["ranks"].size() == 1);
  REQUIRE(j["ranks"][0].contains("kernel"));
  CHECK(j["ranks"][0]["kernel"]["state"] == "S");
  std::filesystem::remove_all(dir);
}
