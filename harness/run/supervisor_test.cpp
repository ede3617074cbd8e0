// Supervisor tests with real processes: small shell programs as ranks (the
// bring-your-own path), so they run without LibTorch and in well under a second each.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "injector.hpp"
#include "run/run_record.hpp"
#include "run/supervisor.hpp"
#include "util.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(HANGLAB_BINARY_DIR) / "test-tmp" / "supervisor" / name;
  fs::remove_all(d);
  fs::create_directories(d / "ranks");
  return d;
}

Scenario shell_scenario(int ws, const std::string& script) {
  Scenario sc;
  sc.name = "sh";
  sc.workload.command = {"sh", "-c", script};
  sc.workload.world_size = ws;
  sc.timeouts.progress_s = 30;
  sc.timeouts.heartbeat_s = 1;
  sc.deadline_s = 30;
  return sc;
}

std::vector<LaunchSpec> specs_for(const Scenario& sc) {
  std::vector<LaunchSpec> v;
  for (int r = 0; r < sc.workload.world_size; ++r) {
    LaunchSpec s;
    s.rank = r;
    s.argv = sc.workload.command;
    s.env = {{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(sc.workload.world_size)}};
    v.push_back(s);
  }
  return v;
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

const Detection* find_detection(const RunFacts& f, const std::string& d, int rank) {
  for (const auto& x : f.detections)
    if (x.detector == d && x.rank == rank) return &x;
  return nullptr;
}

SupervisorOptions quick() {
  SupervisorOptions o;
  o.capture_stacks = false;
  o.term_grace_s = 0.5;
  return o;
}

}  // namespace

TEST_CASE("healthy ranks complete and their output is captured with time stamps") {
  auto dir = fresh_dir("healthy");
  auto sc = shell_scenario(3, "echo hello from $RANK; echo oops >&2; exit 0");
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  CHECK(f.outcome == "completed");
  CHECK(f.teardown_reason == "all_exited");
  REQUIRE(f.exits.size() == 3);
  for (const auto& e : f.exits) CHECK(e.code == 0);
  CHECK(f.detections.empty());
  std::string out = read_file(dir / "ranks/1/stdout.log");
  CHECK(out.find("hello from 1") != std::string::npos);
  CHECK(out.size() > 28);
  CHECK(out[4] == '-');          // 2026-...
  CHECK(out.find("Z hello from 1") != std::string::npos);
  CHECK(read_file(dir / "ranks/2/stderr.log").find("Z oops") != std::string::npos);
  std::string h = read_file(dir / "harness.jsonl");
  CHECK(h.find("\"ev\":\"run_start\"") != std::string::npos);
  CHECK(h.find("\"ev\":\"run_end\"") != std::string::npos);
}

TEST_CASE("a non-zero exit fires exit_monitor for that rank only") {
  auto dir = fresh_dir("crash");
  auto sc = shell_scenario(2, "if [ $RANK = 1 ]; then exit 3; fi; exit 0");
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  CHECK(f.outcome == "crash");
  CHECK(find_detection(f, "exit_monitor", 1) != nullptr);
  CHECK(find_detection(f, "exit_monitor", 0) == nullptr);
}

TEST_CASE("the harness watchdog declares a hang no earlier than progress_s and nothing survives") {
  auto dir = fresh_dir("watchdog");
  auto sc = shell_scenario(2, "echo started; exec sleep 60");
  sc.timeouts.progress_s = 1.0;
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  CHECK(f.outcome == "hang");
  CHECK(f.teardown_reason == "hang");
  const Detection* w = find_detection(f, "harness_watchdog", -1);
  REQUIRE(w != nullptr);
  CHECK(w->t - f.start_t >= 1.0);
  CHECK(w->t - f.start_t < 10.0);
  for (const auto& e : f.exits) {
    REQUIRE(e.signal.has_value());
    CHECK(*e.signal == SIGTERM);
  }
  for (int r = 0; r < 2; ++r) CHECK_FALSE(process_exists(sup.pid_of(r)));
  // Exits caused by our own teardown are not exit_monitor detections.
  CHECK(find_detection(f, "exit_monitor", 0) == nullptr);
}

TEST_CASE("SIGTERM-ignoring ranks are killed after the grace period") {
  auto dir = fresh_dir("stubborn");
  auto sc = shell_scenario(1, "trap '' TERM; echo x; while true; do sleep 0.1; done");
  sc.timeouts.progress_s = 0.5;
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  REQUIRE(f.exits.size() == 1);
  CHECK(f.exits[0].signal == SIGKILL);
}

TEST_CASE("grandchildren that escape the rank's process group do not outlive the run") {
  auto dir = fresh_dir("escape");
  fs::path pidfile = dir / "grandchild.pid";
  auto sc = shell_scenario(1, "setsid sleep 60 & echo $! > " + pidfile.string() + "; sleep 0.2; exit 0");
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  CHECK(f.outcome == "completed");
  pid_t gc = std::stoi(read_file(pidfile));
  // The grandchild was reparented to us (subreaper) and must be gone.
  for (int i = 0; i < 50 && process_exists(gc); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(process_exists(gc));
}

TEST_CASE("deadline_s bounds the whole run") {
  auto dir = fresh_dir("deadline");
  auto sc = shell_scenario(2, "while true; do echo tick; sleep 0.1; done");
  sc.deadline_s = 1.0;
  double t0 = mono_now();
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  double took = mono_now() - t0;
  CHECK(f.teardown_reason == "deadline");
  CHECK(f.outcome == "hang");
  CHECK(took >= 1.0);
  CHECK(took < 8.0);
}

TEST_CASE("backend errors printed by a bring-your-own rank are detected from its logs") {
  auto dir = fresh_dir("byo-error");
  auto sc = shell_scenario(2,
                           "if [ $RANK = 0 ]; then echo 'RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
                           "Connection closed by peer [127.0.0.1]:1234' >&2; exit 1; fi; exit 0");
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  CHECK(find_detection(f, "backend_error", 0) != nullptr);
  CHECK(find_detection(f, "backend_error", 1) == nullptr);
}

TEST_CASE("an interrupt tears the ranks down and leaves no outcome") {
  auto dir = fresh_dir("interrupt");
  auto sc = shell_scenario(2, "echo up; exec sleep 60");
  int p[2];
  REQUIRE(::pipe(p) == 0);
  auto opts = quick();
  opts.interrupt_fd = p[0];
  Supervisor sup(sc, dir, specs_for(sc), {}, opts);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    char c = 1;
    (void)!::write(p[1], &c, 1);
  });
  RunFacts f = sup.run();
  t.join();
  CHECK(f.teardown_reason == "interrupted");
  CHECK(f.outcome.empty());
  for (int r = 0; r < 2; ++r) CHECK_FALSE(process_exists(sup.pid_of(r)));
  ::close(p[0]);
  ::close(p[1]);
}

TEST_CASE("a runtime injector fires on its at_s trigger and the kill is seen by exit_monitor") {
  auto dir = fresh_dir("kill");
  auto sc = shell_scenario(2, "echo up; exec sleep 30");
  toml::table t = toml::parse("kind = \"kill_rank\"\nranks = [1]\nat_s = 0.3\n");
  FaultSpec fs_;
  fs_.kind = "kill_rank";
  fs_.ranks = {1};
  fs_.at_s = 0.3;
  fs_.table = t;
  sc.faults.push_back(fs_);
  auto inj = find_injector("kill_rank")->make();
  inj->configure(sc.faults[0], "inline.toml");
  sc.timeouts.progress_s = 2;
  Supervisor sup(sc, dir, specs_for(sc), {{&sc.faults[0], inj.get(), false}}, quick());
  RunFacts f = sup.run();
  REQUIRE(f.faults.size() == 1);
  CHECK(f.faults[0].t - f.start_t >= 0.3);
  const Detection* d = find_detection(f, "exit_monitor", 1);
  REQUIRE(d != nullptr);
  CHECK(d->t >= f.faults[0].t);
  bool saw_kill = false;
  for (const auto& e : f.exits)
    if (e.rank == 1) saw_kill = e.signal == SIGKILL;
  CHECK(saw_kill);
}

TEST_CASE("inside a checkpoint phase the watchdog waits checkpoint_s instead of progress_s") {
  // One rank traces a checkpoint begin, stays silent for 1.5 s (a slow save), then ends it.
  const std::string emit = "printf '{\"t\":%s,\"rank\":0,\"ev\":\"phase\",\"name\":\"checkpoint\",\"edge\":\"%s\",\"step\":1}\\n' "
                           "$(date +%s.%N) ";
  auto sc = shell_scenario(1, emit + "begin >> $HANGLAB_TRACE; sleep 1.5; " + emit + "end >> $HANGLAB_TRACE; exit 0");
  sc.timeouts.progress_s = 0.5;
  SECTION("checkpoint_s covers the save: no alarm") {
    auto dir = fresh_dir("ckpt-ok");
    sc.timeouts.checkpoint_s = 4;
    Supervisor sup(sc, dir, specs_for(sc), {}, quick());
    RunFacts f = sup.run();
    CHECK(f.outcome == "completed");
    CHECK(find_detection(f, "harness_watchdog", -1) == nullptr);
  }
  SECTION("no checkpoint_s: progress_s applies and the slow save is declared a hang") {
    auto dir = fresh_dir("ckpt-none");
    Supervisor sup(sc, dir, specs_for(sc), {}, quick());
    RunFacts f = sup.run();
    const Detection* w = find_detection(f, "harness_watchdog", -1);
    REQUIRE(w != nullptr);
    CHECK(w->detail.find("(progress_s = 0.5)") != std::string::npos);
  }
  SECTION("a checkpoint_s shorter than the save fires, naming the phase") {
    auto dir = fresh_dir("ckpt-short");
    sc.timeouts.checkpoint_s = 0.8;
    Supervisor sup(sc, dir, specs_for(sc), {}, quick());
    RunFacts f = sup.run();
    const Detection* w = find_detection(f, "harness_watchdog", -1);
    REQUIRE(w != nullptr);
    CHECK(w->detail.find("checkpoint_s = 0.8; rank 0 in checkpoint") != std::string::npos);
    CHECK(w->t - f.start_t >= 0.8);
  }
}

TEST_CASE("a rank still starting (silent, but using CPU) is progress for the watchdog") {
  // Rank 1 says nothing for 1.5 s at start: busy (an interpreter importing its libraries),
  // or blocked without running at all.
  const std::string busy = "t=$(( $(date +%s%N) + 1500000000 )); while [ $(date +%s%N) -lt $t ]; do :; done; ";
  SECTION("busy: no alarm") {
    auto dir = fresh_dir("start-busy");
    auto sc = shell_scenario(2, "if [ $RANK = 1 ]; then " + busy + "fi; echo up; sleep 0.2; exit 0");
    sc.timeouts.progress_s = 0.5;
    Supervisor sup(sc, dir, specs_for(sc), {}, quick());
    RunFacts f = sup.run();
    CHECK(f.outcome == "completed");
    CHECK(find_detection(f, "harness_watchdog", -1) == nullptr);
  }
  SECTION("blocked: the watchdog fires after progress_s") {
    auto dir = fresh_dir("start-blocked");
    auto sc = shell_scenario(2, "if [ $RANK = 1 ]; then sleep 1.5; fi; echo up; sleep 0.2; exit 0");
    sc.timeouts.progress_s = 0.5;
    Supervisor sup(sc, dir, specs_for(sc), {}, quick());
    RunFacts f = sup.run();
    const Detection* w = find_detection(f, "harness_watchdog", -1);
    REQUIRE(w != nullptr);
    CHECK(w->t - f.start_t >= 0.5);
  }
}

TEST_CASE("at_step fires in a bring-your-own rank at the step its log lines report") {
  auto dir = fresh_dir("byo-at-step");
  // Steps 1 and 2 quickly, then a long step 3: the kill (at_step = 3) lands inside it.
  auto sc = shell_scenario(2, "echo \"[rank $RANK] process group ready\"; for s in 1 2; do "
                              "echo \"[rank $RANK] step $s/5 loss 0.5 dur_ms 10\"; sleep 0.05; done; sleep 5; "
                              "echo \"[rank $RANK] step 3/5 loss 0.5 dur_ms 10\"; exit 0");
  sc.workload.steps = 5;
  toml::table t = toml::parse("kind = \"kill_rank\"\nranks = [1]\nat_step = 3\n");
  FaultSpec fs_;
  fs_.kind = "kill_rank";
  fs_.ranks = {1};
  fs_.at_step = 3;
  fs_.table = t;
  sc.faults.push_back(fs_);
  auto inj = find_injector("kill_rank")->make();
  inj->configure(sc.faults[0], "inline.toml");
  Supervisor sup(sc, dir, specs_for(sc), {{&sc.faults[0], inj.get(), false}}, quick());
  RunFacts f = sup.run();
  REQUIRE(f.faults.size() == 1);
  CHECK(f.faults[0].t - f.start_t < 4.0);
  CHECK(find_detection(f, "exit_monitor", 1) != nullptr);
  std::string out = read_file(dir / "ranks/1/stdout.log");
  CHECK(out.find("step 2/5") != std::string::npos);
  CHECK(out.find("step 3/5") == std::string::npos);
}

TEST_CASE("a progress bar's newest redraw reaches the log, though drawn within a second of the last one logged") {
  // Redraws are logged at most once a second. A short epoch drawn from 0/32 to the next
  // epoch's first redraw inside that second is where the job stands when a rank dies right
  // after: it must not be dropped (lightning_kill_rank read phase init without it).
  auto dir = fresh_dir("redraw-newest");
  auto sc = shell_scenario(1, "printf '\\rEpoch 0:   0%%|          | 0/32 [00:00<?, ?it/s]'; sleep 0.3; "
                              "printf '\\rEpoch 0: 100%%|##########| 32/32 [00:00<00:00, 99.0it/s]'; "
                              "printf '\\rEpoch 1:   0%%|          | 0/32 [00:00<?, ?it/s]'; sleep 1.5; "
                              "echo after; "
                              "printf '\\rEpoch 1:  50%%|#####     | 16/32 [00:00<00:00, 99.0it/s]'; exit 0");
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  CHECK(f.outcome == "completed");
  std::string out = read_file(dir / "ranks/0/stdout.log");
  INFO(out);
  const auto first = out.find("Epoch 0:   0%");
  const auto next = out.find("Epoch 1:   0%");   // held back, then logged before the next line
  const auto after = out.find("Z after");
  const auto last = out.find("Epoch 1:  50%");   // the last redraw, at EOF
  CHECK(first != std::string::npos);
  CHECK(next != std::string::npos);
  CHECK(after != std::string::npos);
  CHECK(last != std::string::npos);
  CHECK(first < next);
  CHECK(next < after);
  CHECK(after < last);
}

TEST_CASE("a launcher's rank is dated at its death and its signal read from /proc, however late the launcher reaps it") {
  // A stand-in for mpirun: starts two ranks (each traces `start` with its pid and the end
  // of its init), reports nothing, and reaps nothing until 2 s after rank 1 died (waitid with
  // WNOWAIT sees the death and leaves the zombie), then SIGTERMs the survivor and exits 137.
  // It waits for the death, not for a fixed time: under load the fault may fire seconds late
  // (a fixed 3 s once ended the run before it fired, in a CI run beside the sanitizer builds).
  auto dir = fresh_dir("launcher-late-reap");
  const std::string launcher = R"PY(
import os, signal, subprocess, sys, time
d = sys.argv[1]
ps = []
for r in range(2):
    os.makedirs(f"{d}/ranks/{r}", exist_ok=True)
    t = f"{d}/ranks/{r}/events.jsonl"
    ps.append(subprocess.Popen(["sh", "-c",
        "printf '{\"t\":%s,\"rank\":%s,\"ev\":\"start\",\"pid\":%s}\\n' $(date +%s.%N) " + str(r) + " $$ >> " + t +
        "; printf '{\"t\":%s,\"rank\":%s,\"ev\":\"phase\",\"name\":\"init\",\"edge\":\"end\"}\\n' $(date +%s.%N) "
        + str(r) + " >> " + t + "; exec sleep 30"]))
os.waitid(os.P_PID, ps[1].pid, os.WEXITED | os.WNOWAIT)
time.sleep(2)
ps[0].terminate()
for p in ps: p.wait()
sys.exit(137)
)PY";
  auto sc = shell_scenario(2, "unused");
  sc.timeouts.progress_s = 20;
  // at_step = 1: once rank 1 has traced the end of its init (and so its pid).
  toml::table t = toml::parse("kind = \"kill_rank\"\nranks = [1]\nat_step = 1\n");
  FaultSpec fs_;
  fs_.kind = "kill_rank";
  fs_.ranks = {1};
  fs_.at_step = 1;
  fs_.table = t;
  sc.faults.push_back(fs_);
  auto inj = find_injector("kill_rank")->make();
  inj->configure(sc.faults[0], "inline.toml");
  auto opts = quick();
  LaunchSpec l;
  l.rank = -1;
  l.argv = {"python3", "-c", launcher, dir.string()};
  opts.launcher = l;
  Supervisor sup(sc, dir, specs_for(sc), {{&sc.faults[0], inj.get(), false}}, opts);
  RunFacts f = sup.run();
  REQUIRE(f.faults.size() == 1);
  INFO("fault: " << f.faults[0].detail);
  REQUIRE(f.faults[0].detail.find("sent SIGKILL to rank 1") != std::string::npos);
  std::optional<RankExit> e0, e1;
  for (const auto& e : f.exits) (e.rank == 0 ? e0 : e1) = e;
  REQUIRE(e1);
  CHECK(e1->signal == SIGKILL);               // from /proc: the launcher never says
  CHECK(e1->t - f.faults[0].t < 1.0);         // at the death, not at the reap 2 s later
  const Detection* d = find_detection(f, "exit_monitor", 1);
  REQUIRE(d != nullptr);
  CHECK(d->t - f.faults[0].t < 1.0);
  // The survivor the launcher terminated afterwards is its abort's echo, not a failure.
  REQUIRE(e0);
  CHECK(e0->t > e1->t);
  CHECK(find_detection(f, "exit_monitor", 0) == nullptr);
}

TEST_CASE("the first detection writes the pre-teardown snapshot: each rank's kernel view and state") {
  // Rank 1 dies; rank 0 waits on a pipe, blocked. The snapshot is taken when exit_monitor
  // fires, before anything tears rank 0 down.
  auto dir = fresh_dir("snapshot");
  auto sc = shell_scenario(2, "if [ $RANK = 1 ]; then sleep 0.8; kill -9 $$; fi; echo up; sleep 30");
  sc.timeouts.progress_s = 20;
  sc.deadline_s = 3;
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  REQUIRE(find_detection(f, "exit_monitor", 1) != nullptr);
  const auto j = nlohmann::json::parse(read_file(dir / "liveness.json"));
  CHECK(j["why"] == "first detection: exit_monitor (rank 1)");
  REQUIRE(j["ranks"].size() == 2);
  CHECK(j["ranks"][0]["alive"] == true);
  CHECK(j["ranks"][0]["kernel"]["state"] == "S");
  CHECK(j["ranks"][1]["alive"] == false);
  // Rank 0 has no trace and no captured stack: the kernel's state stands in for one.
  const std::string stack = read_file(dir / "ranks/0/stack.txt");
  CHECK(stack.find("# state: S") != std::string::npos);
  CHECK(f.teardown_reason == "deadline");
}

TEST_CASE("a closed connection after a peer's own backend timeout is that timeout's echo in either reading order") {
  // Rank 0's timer fires and it exits; rank 1, still waiting, reads its closed socket. Each
  // rank's trace is read on its own, so the times they stamp decide, not the reading order.
  // trace(rank, class, delay before writing, how much earlier than the writing it is stamped)
  auto trace = [](int rank, const char* cls, double sleep_s, double back_s) {
    return fmt::format("sleep {}; printf '{{\"t\":%s,\"rank\":{},\"ev\":\"error\",\"class\":\"{}\",\"msg\":\"{}\"}}\\n' "
                       "$(awk -v t=$(date +%s.%N) 'BEGIN{{printf \"%.6f\", t-{}}}') >> $HANGLAB_TRACE; ",
                       sleep_s, rank, cls, cls, back_s);
  };
  auto run = [&](const std::string& name, const std::string& r0, const std::string& r1) {
    auto dir = fresh_dir(name);
    auto sc = shell_scenario(2, "if [ $RANK = 0 ]; then " + r0 + "else " + r1 + "fi; exit 1");
    Supervisor sup(sc, dir, specs_for(sc), {}, quick());
    RunFacts f = sup.run();
    return std::pair{f, read_file(dir / "harness.jsonl")};
  };
  SECTION("the timeout is read first: the later error is logged as its echo") {
    auto [f, log] = run("echo-after", trace(0, "timeout", 0, 0), trace(1, "comm", 0.5, 0));
    CHECK(find_detection(f, "backend_timeout", 0) != nullptr);
    CHECK(find_detection(f, "backend_error", 1) == nullptr);
    CHECK(log.find("\"ev\":\"detect_echo\"") != std::string::npos);
  }
  SECTION("the echo is read first: the timeout stamped before it retracts it, and a re-read run agrees") {
    auto [f, log] = run("echo-before", trace(0, "timeout", 0.8, 0.7), trace(1, "comm", 0.3, 0));
    CHECK(find_detection(f, "backend_timeout", 0) != nullptr);
    CHECK(find_detection(f, "backend_error", 1) == nullptr);
    CHECK(log.find("\"ev\":\"detect_retracted\"") != std::string::npos);
    RunFacts again = read_run_facts(fs::path(HANGLAB_BINARY_DIR) / "test-tmp" / "supervisor" / "echo-before");
    CHECK(find_detection(again, "backend_error", 1) == nullptr);
    CHECK(find_detection(again, "backend_timeout", 0) != nullptr);
  }
  SECTION("an error stamped before any timeout is the fault's own sign: both count") {
    auto [f, log] = run("error-first", trace(0, "timeout", 0.6, 0), trace(1, "comm", 0, 0));
    CHECK(find_detection(f, "backend_timeout", 0) != nullptr);
    CHECK(find_detection(f, "backend_error", 1) != nullptr);
  }
}

TEST_CASE("what a rank reports after the teardown began is the teardown's doing, not a detection") {
  // Both ranks print a backend error line when our SIGTERM reaches them (as a Gloo peer does
  // when the teardown closes its socket); one of them printed a real one before.
  auto dir = fresh_dir("after_teardown");
  auto sc = shell_scenario(
      2, "trap 'echo \"Connection reset by peer (on SIGTERM)\"; exit 1' TERM; "
         "if [ $RANK = 1 ]; then echo \"Connection closed by peer (before)\"; fi; sleep 30 & wait");
  sc.deadline_s = 1.5;
  Supervisor sup(sc, dir, specs_for(sc), {}, quick());
  RunFacts f = sup.run();
  CHECK(f.teardown_reason == "deadline");
  const Detection* before = find_detection(f, "backend_error", 1);
  REQUIRE(before != nullptr);
  CHECK(before->detail.find("(before)") != std::string::npos);
  CHECK(find_detection(f, "backend_error", 0) == nullptr);
  CHECK(read_file(dir / "ranks/0/stdout.log").find("(on SIGTERM)") != std::string::npos);
  CHECK(read_file(dir / "harness.jsonl").find("detect_after_teardown") != std::string::npos);
}
