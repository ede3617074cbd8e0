// Tests of the process/CPU/memory injectors (freeze_rank, throttle_cpu, oom_rank,
// exception_on_rank) with real processes: forked sleepers and busy loops driven through
// a small Job, and a Supervisor run with a `sh -c` rank for the OOM kill. Whatever a
// test creates is checked to be gone afterwards: no stopped process, no hanglab cgroup
// of this test process left behind. Cgroup tests skip (with a warning) where the host
// has no writable cgroup hierarchy for the controller.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "injector.hpp"
#include "process_control.hpp"
#include "run/supervisor.hpp"
#include "util.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

// A job whose ranks are plain children of the test; rank r's pid is pids[r] (0 = none).
struct ChildJob : Job {
  std::vector<pid_t> pids;
  std::string dir = "/nonexistent";
  int world_size() const override { return static_cast<int>(pids.size()); }
  pid_t pid_of(int r) const override { return pids.at(r); }
  bool alive(int r) const override {
    char s = pids.at(r) > 0 ? process_state(pids.at(r)) : 0;
    return s != 0 && s != 'Z';
  }
  std::string run_dir() const override { return dir; }
};

// A child in its own process group (as the supervisor starts ranks): a busy loop or a
// sleeper. It dies with the test (PDEATHSIG) and by the guard.
pid_t spawn(bool busy) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (busy) {
      volatile unsigned long x = 0;
      for (;;) x = x + 1;
    }
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

struct ChildGuard {
  pid_t pid;
  ~ChildGuard() {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGCONT);
    ::waitpid(pid, nullptr, 0);
  }
};

FaultSpec spec_from(const std::string& kind, const std::string& extra, int rank = 1) {
  FaultSpec s;
  s.kind = kind;
  s.ranks = {rank};
  s.table = toml::parse("kind = \"" + kind + "\"\nranks = [" + std::to_string(rank) + "]\n" + extra);
  return s;
}

std::unique_ptr<Injector> make(const std::string& kind, const FaultSpec& spec) {
  const InjectorInfo* info = find_injector(kind);
  REQUIRE(info != nullptr);
  auto inj = info->make();
  inj->configure(spec, "t.toml");
  return inj;
}

bool wait_for(const std::function<bool()>& pred, double timeout_s = 2.0) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

// The hanglab groups this test process made under `dir` (other runs on the host may
// own hanglab groups of their own at the same time).
std::vector<std::string> my_groups(const fs::path& dir) {
  std::vector<std::string> out;
  const std::string prefix = "hanglab-" + std::to_string(::getpid()) + "-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  return out;
}

// The cpu hierarchy and this process's group in it, when a child group can be made there.
std::optional<std::pair<CgroupMount, std::string>> usable_cgroup(const std::string& controller) {
  std::string why;
  auto m = find_cgroup_mount(controller, why);
  if (!m) {
    WARN("skipping: " << why);
    return std::nullopt;
  }
  std::string origin = cgroup_path_of(0, *m);
  if (std::string p = cgroup_parent_problem(*m, origin); !p.empty()) {
    WARN("skipping: " << p);
    return std::nullopt;
  }
  return std::make_pair(*m, origin);
}

double cpu_over(pid_t pid, double seconds, const std::function<void()>& each_20ms = {}) {
  double c0 = process_cpu_seconds(pid);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (each_20ms) each_20ms();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return process_cpu_seconds(pid) - c0;
}

struct ScopedEnv {
  std::string name;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) { ::setenv(n.c_str(), v.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

// A Python "rank" as the supervisor starts one (own process group, signals unblocked, the rank's
// environment), running `prog`, its stderr into `err`: the pid, in its own group.
pid_t spawn_python_rank(const LaunchSpec& ls, const fs::path& err, const char* prog) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // as the supervisor starts ranks
    for (const auto& [k, v] : ls.env) ::setenv(k.c_str(), v.c_str(), 1);
    int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::execl("/usr/bin/python3", "python3", "-c", prog, static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid > 0) ::setpgid(pid, pid);
  return pid;
}

}  // namespace

TEST_CASE("freeze_rank stops the rank until revert") {
  pid_t pid = spawn(false);
  ChildGuard guard{pid};
  ChildJob job;
  job.pids = {0, pid};
  auto spec = spec_from("freeze_rank", "");
  auto inj = make("freeze_rank", spec);
  std::string detail = inj->fire(job);
  CHECK(detail.find("SIGSTOP rank 1") != std::string::npos);
  CHECK(wait_for([&] { return process_state(pid) == 'T'; }));
  CHECK(inj->tick(job, 5.0).empty());  // no duration: stays frozen
  CHECK(process_state(pid) == 'T');
  inj->revert(job);
  CHECK(wait_for([&] { return process_state(pid) != 'T'; }));
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("freeze_rank with duration_s resumes the rank from tick") {
  pid_t pid = spawn(false);
  ChildGuard guard{pid};
  ChildJob job;
  job.pids = {0, pid};
  auto spec = spec_from("freeze_rank", "duration_s = 0.3\n");
  auto inj = make("freeze_rank", spec);
  inj->fire(job);
  CHECK(wait_for([&] { return process_state(pid) == 'T'; }));
  CHECK(inj->tick(job, 0.1).empty());
  CHECK(process_state(pid) == 'T');
  std::string d = inj->tick(job, 0.31);
  CHECK(d.find("SIGCONT rank 1") != std::string::npos);
  CHECK(wait_for([&] { return process_state(pid) != 'T'; }));
  CHECK(inj->tick(job, 0.5).empty());  // once only
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("freeze_rank reports a rank that is already gone and never signals a recycled pid") {
  ChildJob job;
  job.pids = {0, 0};
  auto spec = spec_from("freeze_rank", "");
  auto inj = make("freeze_rank", spec);
  CHECK(inj->fire(job).find("rank 1 already gone") != std::string::npos);
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("throttle_cpu validates its keys") {
  auto ok = spec_from("throttle_cpu", "cpu_percent = 25\nperiod_ms = 50\nduration_s = 2\n");
  CHECK_NOTHROW(make("throttle_cpu", ok));
  for (const char* bad : {"cpu_percent = 0\n", "period_ms = 0\n", "period_ms = 2000\n", "duration_s = -1\n",
                          "cpu_percent = 1\nperiod_ms = 50\n", "cpu_percent = \"10\"\n"}) {
    INFO(bad);
    auto spec = spec_from("throttle_cpu", bad);
    auto inj = find_injector("throttle_cpu")->make();
    CHECK_THROWS_AS(inj->configure(spec, "t.toml"), ConfigError);
  }
}

TEST_CASE("throttle_cpu puts a busy rank in a cpu cgroup with the quota and removes it on revert") {
  auto cg = usable_cgroup("cpu");
  if (!cg) return;
  const auto& [mount, origin] = *cg;
  const fs::path parent = mount.root / fs::path(origin).relative_path();
  pid_t pid = spawn(true);
  ChildGuard guard{pid};
  ChildJob job;
  job.pids = {0, pid};
  auto spec = spec_from("throttle_cpu", "cpu_percent = 10\n");
  auto inj = make("throttle_cpu", spec);
  double before = cpu_over(pid, 0.3) / 0.3;
  std::string detail = inj->fire(job);
  INFO(detail);
  CHECK(detail.find(mount.v2 ? "cgroup v2" : "cgroup v1") != std::string::npos);
  auto groups = my_groups(parent);
  REQUIRE(groups.size() == 1);
  CHECK(fs::path(groups[0]).filename().string().find("-rank1") != std::string::npos);
  std::string where = cgroup_path_of(pid, mount);
  CHECK(where.find(fs::path(groups[0]).filename().string()) != std::string::npos);
  double during = cpu_over(pid, 1.0);
  INFO("cpu share before " << before << ", throttled " << during);
  CHECK(during <= 0.2);   // quota 10% of one cpu (+ one 10 ms clock tick of slack each side)
  CHECK(during >= 0.03);  // throttled, not stopped
  inj->revert(job);
  CHECK(my_groups(parent).empty());
  CHECK(cgroup_path_of(pid, mount) == origin);
  CHECK(process_state(pid) != 'T');
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("throttle_cpu lifts the limit after duration_s") {
  auto cg = usable_cgroup("cpu");
  if (!cg) return;
  const auto& [mount, origin] = *cg;
  const fs::path parent = mount.root / fs::path(origin).relative_path();
  pid_t pid = spawn(true);
  ChildGuard guard{pid};
  ChildJob job;
  job.pids = {0, pid};
  auto spec = spec_from("throttle_cpu", "cpu_percent = 10\nduration_s = 0.2\n");
  auto inj = make("throttle_cpu", spec);
  inj->fire(job);
  CHECK(my_groups(parent).size() == 1);
  CHECK(inj->tick(job, 0.1).empty());
  CHECK(inj->tick(job, 0.25).find("lifted") != std::string::npos);
  CHECK(my_groups(parent).empty());
  CHECK(cgroup_path_of(pid, mount) == origin);
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("throttle_cpu falls back to a SIGSTOP/SIGCONT duty cycle without a cpu cgroup") {
  ScopedEnv env("HANGLAB_CGROUP_ROOT", "/nonexistent-hanglab-cgroup-root");
  pid_t pid = spawn(true);
  ChildGuard guard{pid};
  ChildJob job;
  job.pids = {0, pid};
  auto spec = spec_from("throttle_cpu", "cpu_percent = 20\n");
  auto inj = make("throttle_cpu", spec);
  std::string detail = inj->fire(job);
  INFO(detail);
  CHECK(detail.find("duty cycle") != std::string::npos);
  auto t0 = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  cpu_over(pid, 0.3, [&] { inj->tick(job, since()); });  // settle
  double s0 = since();
  double used = cpu_over(pid, 1.2, [&] { inj->tick(job, since()); });
  double share = used / (since() - s0);
  INFO("cpu share under a 20% duty cycle: " << share);
  CHECK(share <= 0.32);
  // The duty cycle bounds the share from above only: while resumed the child gets what the
  // host gives it, which on a loaded host is less than a CPU (0.074 seen with two scenario
  // matrices running: a ">= 0.08" here failed for the load, not for the throttle). That it
  // is resumed at all is what the fallback must guarantee.
  CHECK(used > 0);
  inj->revert(job);
  CHECK(wait_for([&] { return process_state(pid) != 'T'; }));
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("oom_rank: the rank joins its memory cgroup before exec and is SIGKILLed by the OOM killer") {
  if (std::string why = find_injector("oom_rank")->make()->unsupported_reason(detect_host()); !why.empty()) {
    WARN("skipping: " << why);
    return;
  }
  auto cg = usable_cgroup("memory");
  REQUIRE(cg);
  const auto& [mount, origin] = *cg;
  const fs::path parent = mount.root / fs::path(origin).relative_path();

  fs::path dir = fs::path(HANGLAB_BINARY_DIR) / "test-tmp" / "process_faults" / "oom";
  fs::remove_all(dir);
  fs::create_directories(dir / "ranks");
  Scenario sc;
  sc.name = "oom";
  // The rank prints its own memory cgroup, then grows a shell variable past the limit.
  sc.workload.command = {"sh", "-c",
                         "cat /proc/self/cgroup; x=$(head -c 400000000 /dev/zero | tr '\\000' a); echo survived"};
  sc.workload.world_size = 1;
  sc.timeouts.progress_s = 30;
  sc.deadline_s = 30;
  LaunchSpec ls;
  ls.rank = 0;
  ls.argv = sc.workload.command;
  ls.env = {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"HANGLAB_RUN_DIR", dir.string()}};

  auto spec = spec_from("oom_rank", "limit_mb = 64\nmb_per_step = 16\n", 0);
  auto inj = make("oom_rank", spec);
  CHECK_FALSE(inj->in_process());
  inj->prepare_rank(0, ls);
  REQUIRE(ls.wrapper.size() == 4);
  CHECK(ls.wrapper[0] == "/bin/sh");
  REQUIRE(ls.hooks.size() == 1);
  CHECK(ls.hooks[0].value("kind", "") == "alloc_growth");
  CHECK(ls.hooks[0].value("mb_per_step", 0) == 16);
  CHECK_FALSE(ls.hooks[0].contains("limit_mb"));
  auto groups = my_groups(parent);
  REQUIRE(groups.size() == 1);
  std::string group_name = fs::path(groups[0]).filename().string();

  SupervisorOptions opts;
  opts.capture_stacks = false;
  opts.term_grace_s = 0.5;
  RunFacts facts;
  {
    Supervisor sup(sc, dir, {ls}, {ArmedFault{&spec, inj.get(), false, 0}}, opts);
    facts = sup.run();
    REQUIRE(facts.exits.size() == 1);
    CHECK(facts.exits[0].signal == SIGKILL);
    CHECK(facts.exits[0].status() == 137);
    inj->revert(sup);
  }
  std::string out = read_file(dir / "ranks/0/stdout.log");
  CHECK(out.find(group_name) != std::string::npos);  // it ran inside the group
  CHECK(out.find("survived") == std::string::npos);
  std::string oom = read_file(dir / "ranks/0/oom.txt");
  INFO(oom);
  CHECK(oom.find("oom_kill 1") != std::string::npos);
  if (oom.find("not readable") == std::string::npos) CHECK(oom.find("Killed process") != std::string::npos);
  CHECK(my_groups(parent).empty());
  ChildJob none;
  none.pids = {0};
  CHECK_NOTHROW(inj->revert(none));
}

TEST_CASE("oom_rank without a usable memory cgroup is unsupported, and prepare fails before launch") {
  ScopedEnv env("HANGLAB_CGROUP_ROOT", "/nonexistent-hanglab-cgroup-root");
  HostInfo host;  // nothing
  auto spec = spec_from("oom_rank", "");
  auto inj = make("oom_rank", spec);
  CHECK(inj->unsupported_reason(host).find("needs a writable memory cgroup") == 0);
  HostInfo v1;
  v1.cgroup_v1_memory = true;
  CHECK(inj->unsupported_reason(v1).find("needs a writable memory cgroup") == 0);
  LaunchSpec ls;
  ls.rank = 1;
  ls.argv = {"true"};
  CHECK_THROWS(inj->prepare_rank(1, ls));
  ChildJob job;
  job.pids = {0, 0};
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("exception_on_rank in a bring-your-own Python rank: the sitecustomize hook raises in the main thread") {
  if (::access("/usr/bin/python3", X_OK) != 0) {
    WARN("skipping: no /usr/bin/python3");
    return;
  }
  const fs::path run = fs::temp_directory_path() / ("hanglab-pyexc-" + std::to_string(::getpid()));
  fs::remove_all(run);
  fs::create_directories(run / "ranks" / "1");
  auto spec = spec_from("exception_on_rank", "message = \"injected: a bad sample\"\n");
  spec.at_s = 0.5;
  const InjectorInfo* info = find_injector("exception_on_rank");
  auto inj = info->make();
  inj->configure(spec, "t.toml");
  Scenario sc;
  sc.workload.command = {"python3", "train.py"};
  AdaptContext ctx{sc, spec, "t.toml"};
  auto lines = inj->adapt(ctx);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("sitecustomize"));
  CHECK(!inj->in_process());  // the supervisor fires it at the trigger
  LaunchSpec ls;
  ls.rank = 1;
  ls.env["HANGLAB_RUN_DIR"] = run.string();
  inj->prepare_rank(1, ls);
  REQUIRE(ls.env.count("PYTHONPATH"));
  CHECK(ls.env["PYTHONPATH"].rfind((run / "pyhook").string(), 0) == 0);
  CHECK(fs::exists(run / "pyhook" / "sitecustomize.py"));
  LaunchSpec other;
  other.rank = 0;
  other.env["HANGLAB_RUN_DIR"] = run.string();
  inj->prepare_rank(0, other);
  CHECK(!other.env.count("HANGLAB_PY_EXCEPTION"));

  // A "training loop" in Python: busy steps forever, its stderr kept for the traceback.
  const fs::path err = run / "ranks" / "1" / "stderr.log";
  const pid_t pid = spawn_python_rank(
      ls, err, "import os\ndef train_step(i):\n    return sum(range(1000))\ni = 0\nwhile True:\n    train_step(i); i += 1\n");
  REQUIRE(pid > 0);
  ChildGuard guard{pid};
  ChildJob job;
  job.pids = {0, pid};
  job.dir = run.string();
  REQUIRE(wait_for([&] { return fs::exists(run / "ranks" / "1" / "py_exception.armed"); }, 20.0));
  const std::string detail = inj->fire(job);
  CHECK_THAT(detail, Catch::Contains("SIGUSR2 rank 1"));
  int status = 0;
  REQUIRE(wait_for([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 20.0));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("RuntimeError: injected: a bad sample"));
  CHECK(fs::exists(run / "ranks" / "1" / "py_exception.raised"));

  RunFacts facts;
  RankExit ex;
  ex.rank = 1;
  ex.code = 1;
  facts.exits.push_back(ex);
  RunFactsView view{facts, run, 2};
  const Manifest m = inj->manifested(view);
  CHECK(m.exercised);
  CHECK_THAT(m.evidence, Catch::Contains("raised RuntimeError in"));
  fs::remove_all(run);
}

TEST_CASE("exception_on_rank's Python hook waits out the DataLoader's own code: it is the program's bug, not data") {
  if (::access("/usr/bin/python3", X_OK) != 0) {
    WARN("skipping: no /usr/bin/python3");
    return;
  }
  const fs::path run = fs::temp_directory_path() / ("hanglab-pyexc-data-" + std::to_string(::getpid()));
  fs::remove_all(run);
  fs::create_directories(run / "ranks" / "1");
  auto spec = spec_from("exception_on_rank", "message = \"injected: a bad sample\"\n");
  spec.at_s = 0.5;
  auto inj = find_injector("exception_on_rank")->make();
  inj->configure(spec, "t.toml");
  Scenario sc;
  sc.workload.command = {"python3", "train.py"};
  AdaptContext ctx{sc, spec, "t.toml"};
  inj->adapt(ctx);
  LaunchSpec ls;
  ls.rank = 1;
  ls.env["HANGLAB_RUN_DIR"] = run.string();
  inj->prepare_rank(1, ls);
  // Most of each step inside a function of torch/utils/data (a batch fetch), a little in the step itself.
  const char* prog =
      "fetch_src = 'def fetch():\\n    return sum(range(300000))\\n'\n"
      "ns = {}\n"
      "exec(compile(fetch_src, '/venv/lib/python3/site-packages/torch/utils/data/dataloader.py', 'exec'), ns)\n"
      "def train_step(b):\n    return b + sum(range(3000))\n"
      "while True:\n    train_step(ns['fetch']())\n";
  const pid_t pid = spawn_python_rank(ls, run / "ranks" / "1" / "stderr.log", prog);
  REQUIRE(pid > 0);
  ChildGuard guard{pid};
  ChildJob job;
  job.pids = {0, pid};
  job.dir = run.string();
  REQUIRE(wait_for([&] { return fs::exists(run / "ranks" / "1" / "py_exception.armed"); }, 20.0));
  for (int i = 0; i < 5; ++i) {  // several deliveries: each must land outside the data loading code
    inj->fire(job);
    if (fs::exists(run / "ranks" / "1" / "py_exception.raised")) break;
  }
  int status = 0;
  REQUIRE(wait_for([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 20.0));
  CHECK(WEXITSTATUS(status) == 1);
  std::ifstream in(run / "ranks" / "1" / "py_exception.raised");
  const std::string raised((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(raised);
  CHECK_THAT(raised, Catch::Contains("train_step") || Catch::Contains("<module>"));
  CHECK_THAT(raised, !Catch::Contains("torch/utils/data"));
  fs::remove_all(run);
}

TEST_CASE("exception_on_rank hands the workload an exception hook with the default CUDA message") {
  auto spec = spec_from("exception_on_rank", "at_step = 4\n");
  spec.at_step = 4;
  auto inj = make("exception_on_rank", spec);
  CHECK(inj->in_process());
  CHECK(inj->hook_kind() == "exception");
  LaunchSpec ls;
  ls.rank = 1;
  inj->prepare_rank(1, ls);
  REQUIRE(ls.hooks.size() == 1);
  CHECK(ls.hooks[0]["kind"] == "exception");
  CHECK(ls.hooks[0]["at_step"] == 4);
  CHECK(ls.hooks[0]["message"].get<std::string>().find("CUDA error: an illegal memory access") != std::string::npos);
  LaunchSpec other;
  other.rank = 0;
  inj->prepare_rank(0, other);
  CHECK(other.hooks.empty());
  auto empty = spec_from("exception_on_rank", "message = \"\"\n");
  CHECK_THROWS_AS(make("exception_on_rank", empty), ConfigError);
}
