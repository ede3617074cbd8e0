// Unit tests of the storage and shared-memory injectors with real mounts and processes:
//   slow_storage: hanglab_slowfs really delays the chosen rank's reads (measured) and
//     nobody else's, passes data through unchanged in both directions, stalls once and
//     lets a killed caller go, fails with EIO/ENOSPC when told, and revert leaves no
//     mount and no daemon; after Ctrl-C and after SIGKILL of hanglab nothing stays
//     mounted either (end to end, when the workload is built);
//   tiny_shm: the wrapper gives the child, and only the child, a tiny /dev/shm;
//   disk_full: the ballast fills the rank's private tmpfs and its next write is ENOSPC,
//     the host directory untouched.
// Mount tests need root, /dev/fuse and mount namespaces; where missing they WARN and pass.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "injector.hpp"
#include "storage_common.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

struct TestJob : Job {
  std::map<int, pid_t> pids;
  std::string dir = "/nonexistent";
  int world_size() const override { return 4; }
  pid_t pid_of(int r) const override { return pids.count(r) ? pids.at(r) : 0; }
  bool alive(int r) const override { return pids.count(r) && ::kill(pids.at(r), 0) == 0; }
  std::string run_dir() const override { return dir; }
};

std::unique_ptr<Injector> make(const std::string& kind, const std::string& ranks, const std::string& extra) {
  const InjectorInfo* info = find_injector(kind);
  REQUIRE(info != nullptr);
  FaultSpec s;
  s.kind = kind;
  s.table = toml::parse("kind = \"" + kind + "\"\nranks = [" + ranks + "]\n" + extra);
  for (auto&& n : *s.table["ranks"].as_array()) s.ranks.push_back(static_cast<int>(n.as_integer()->get()));
  auto inj = info->make();
  inj->configure(s, "x.toml");
  return inj;
}

bool slowfs_mounted_under(const std::string& prefix);

// A fresh directory under /tmp, removed at exit of the test process unless something is
// still mounted in it (then it stays for a human to look at).
std::string temp_dir() {
  static struct Cleanup {
    std::vector<std::string> dirs;
    ~Cleanup() {
      for (const auto& d : dirs) {
        std::error_code ec;
        if (!slowfs_mounted_under(d)) fs::remove_all(d, ec);
      }
    }
  } cleanup;
  char tmpl[] = "/tmp/hanglab_storage_test.XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  cleanup.dirs.push_back(d);
  return d;
}

LaunchSpec launch_spec(int rank, const std::string& run_dir) {
  LaunchSpec s;
  s.rank = rank;
  s.argv = {"/bin/true"};
  s.env = {{"RANK", std::to_string(rank)},
           {"HANGLAB_RUN_DIR", run_dir},
           {"HANGLAB_DATA_DIR", run_dir + "/data"},
           {"HANGLAB_CKPT_DIR", run_dir + "/ckpt"}};
  return s;
}

struct Ran {
  int status = -1;
  std::string out;
  double seconds = 0;
  int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }
};

pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, int out_fd) {
  std::vector<std::string> env_strs = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  for (const auto& [k, v] : env) env_strs.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : env_strs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (out_fd >= 0) {
      ::dup2(out_fd, 1);
      ::dup2(out_fd, 2);
    }
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  return pid;
}

// Runs argv with exactly `env` (plus PATH) — RANK must be in the environment at exec,
// which is what slowfs reads — and measures it.
Ran run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = spawn(argv, env, p[1]);
  ::close(p[1]);
  Ran r;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  ::waitpid(pid, &r.status, 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

Ran run_as_rank(int rank, const std::string& script) {
  return run({"/bin/sh", "-c", script}, {{"RANK", std::to_string(rank)}});
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool slowfs_mounted_under(const std::string& prefix) {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.find("fuse.hanglab-slowfs") != std::string::npos && line.find(prefix) != std::string::npos) return true;
  }
  return false;
}

// Processes whose command line mentions `needle` (a test's unique directory).
std::vector<pid_t> processes_mentioning(const std::string& needle) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string cmd = slurp(e.path().string() + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(needle) != std::string::npos && std::stoi(name) != ::getpid()) out.push_back(std::stoi(name));
  }
  return out;
}

std::string skip_slowfs() {
  HostInfo h = detect_host();
  auto inj = make("slow_storage", "1", "");
  return inj->unsupported_reason(h);
}

}  // namespace

TEST_CASE("slow_storage delays only the chosen rank's reads, passes data through, and revert unmounts",
          "[slow_storage]") {
  if (auto why = skip_slowfs(); !why.empty()) {
    WARN("skipped: " + why);
    return;
  }
  const std::string run_dir = temp_dir();
  fs::create_directories(run_dir + "/data");
  std::string payload;
  for (int i = 0; i < 5000; ++i) payload += std::to_string(i * 7919) + ",";
  { std::ofstream(run_dir + "/data/shard.bin") << payload; }

  auto inj = make("slow_storage", "1", "dirs = \"data\"\nops = \"read\"\ndelay_ms = 300\n");
  TestJob job;
  job.dir = run_dir;
  for (int r = 0; r < 4; ++r) {
    LaunchSpec s = launch_spec(r, run_dir);
    inj->prepare_rank(r, s);
    CHECK(s.wrapper.empty());  // a shared mount, not a per-rank wrapper
  }
  CHECK(slowfs_mounted_under(run_dir + "/data"));
  CHECK_FALSE(slowfs_mounted_under(run_dir + "/ckpt"));

  const std::string cat = "cat " + run_dir + "/data/shard.bin";
  // Before the trigger nothing is slow.
  Ran before = run_as_rank(1, cat);
  CHECK(before.exit_code() == 0);
  CHECK(before.out == payload);
  CHECK(before.seconds < 0.25);

  const std::string detail = inj->fire(job);
  CHECK_THAT(detail, Catch::Contains("slowed"));
  CHECK_THAT(detail, Catch::Contains("rank(s) 1: read ops wait 300 ms"));

  Ran slow = run_as_rank(1, cat);
  CHECK(slow.exit_code() == 0);
  CHECK(slow.out == payload);  // unchanged through the passthrough
  CHECK(slow.seconds >= 0.29);
  Ran other = run_as_rank(0, cat);
  CHECK(other.out == payload);
  CHECK(other.seconds < 0.25);
  Ran no_rank = run({"/bin/sh", "-c", cat}, {});
  CHECK(no_rank.seconds < 0.25);

  // Writes pass through to the real directory (ops = read: not delayed).
  Ran write = run_as_rank(1, "echo written-through > " + run_dir + "/data/new.txt");
  CHECK(write.exit_code() == 0);
  CHECK(write.seconds < 0.25);

  inj->revert(job);
  CHECK_FALSE(slowfs_mounted_under(run_dir));
  CHECK(processes_mentioning(run_dir + "/data").empty());
  // The real files were there all along, and what went through the mount is in them.
  CHECK(slurp(run_dir + "/data/shard.bin") == payload);
  CHECK(slurp(run_dir + "/data/new.txt") == "written-through\n");
  CHECK_THAT(slurp(run_dir + "/slowfs-data.log"), Catch::Contains("active (SIGUSR2"));
  CHECK_NOTHROW(inj->revert(job));  // idempotent
}

TEST_CASE("slow_storage fails operations with EIO or ENOSPC after the trigger", "[slow_storage]") {
  if (auto why = skip_slowfs(); !why.empty()) {
    WARN("skipped: " + why);
    return;
  }
  const std::string run_dir = temp_dir();
  fs::create_directories(run_dir + "/data");
  { std::ofstream(run_dir + "/data/f") << "data"; }
  TestJob job;
  {
    auto inj = make("slow_storage", "2", "dirs = \"data\"\nops = \"read\"\ndelay_ms = 0\nerror = \"EIO\"\n");
    LaunchSpec s = launch_spec(0, run_dir);
    inj->prepare_rank(0, s);
    CHECK(run_as_rank(2, "cat " + run_dir + "/data/f").out == "data");
    inj->fire(job);
    Ran r = run_as_rank(2, "cat " + run_dir + "/data/f");
    CHECK(r.exit_code() != 0);
    CHECK_THAT(r.out, Catch::Contains("Input/output error"));
    CHECK(run_as_rank(3, "cat " + run_dir + "/data/f").out == "data");
    inj->revert(job);
  }
  {
    auto inj = make("slow_storage", "2", "dirs = \"ckpt\"\nops = \"write\"\ndelay_ms = 0\nerror = \"ENOSPC\"\n");
    LaunchSpec s = launch_spec(0, run_dir);
    inj->prepare_rank(0, s);
    CHECK(slowfs_mounted_under(run_dir + "/ckpt"));
    inj->fire(job);
    Ran r = run_as_rank(2, "echo x > " + run_dir + "/ckpt/step.pt");
    CHECK(r.exit_code() != 0);
    CHECK_THAT(r.out, Catch::Contains("No space left on device"));
    CHECK(run_as_rank(1, "echo y > " + run_dir + "/ckpt/other.pt").exit_code() == 0);
    inj->revert(job);
    CHECK(slurp(run_dir + "/ckpt/other.pt") == "y\n");
  }
  CHECK_FALSE(slowfs_mounted_under(run_dir));
}

TEST_CASE("slow_storage stalls once at the trigger, and a caller killed in the stall is let go", "[slow_storage]") {
  if (auto why = skip_slowfs(); !why.empty()) {
    WARN("skipped: " + why);
    return;
  }
  const std::string run_dir = temp_dir();
  fs::create_directories(run_dir + "/ckpt");
  TestJob job;
  {
    auto inj = make("slow_storage", "0", "dirs = \"ckpt\"\nops = \"write\"\ndelay_ms = 0\nstall_s = 1.5\n");
    LaunchSpec s = launch_spec(0, run_dir);
    inj->prepare_rank(0, s);
    inj->fire(job);
    // Two writers arrive in the window: both wait until it closes; later ones do not.
    const auto t0 = std::chrono::steady_clock::now();
    Ran first;
    std::thread t([&] { first = run_as_rank(0, "echo a > " + run_dir + "/ckpt/a"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Ran second = run_as_rank(0, "echo b > " + run_dir + "/ckpt/b");
    t.join();
    CHECK(first.seconds >= 1.4);
    const double second_end = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(second_end >= 1.4);
    CHECK(second_end < 3.0);
    CHECK(run_as_rank(0, "echo c > " + run_dir + "/ckpt/c").seconds < 0.3);
    CHECK(inj->tick(job, 2.0).find("stall begins") != std::string::npos);
    inj->revert(job);
    CHECK(slurp(run_dir + "/ckpt/a") == "a\n");
  }
  {
    auto inj = make("slow_storage", "0", "dirs = \"ckpt\"\nops = \"write\"\ndelay_ms = 0\nstall_s = 60\n");
    LaunchSpec s = launch_spec(0, run_dir);
    inj->prepare_rank(0, s);
    inj->fire(job);
    const pid_t victim = spawn({"/bin/sh", "-c", "echo d > " + run_dir + "/ckpt/d"}, {{"RANK", "0"}}, -1);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    int st = 0;
    CHECK(::waitpid(victim, &st, WNOHANG) == 0);  // still stalled
    const auto t0 = std::chrono::steady_clock::now();
    ::kill(victim, SIGKILL);
    ::waitpid(victim, &st, 0);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.0);
    CHECK(WIFSIGNALED(st));
    inj->revert(job);
  }
  CHECK_FALSE(slowfs_mounted_under(run_dir));
}

TEST_CASE("slow_storage rejects bad keys with the key's name", "[slow_storage]") {
  CHECK_THROWS_WITH(make("slow_storage", "1", "dirs = \"logs\"\n"), Catch::Contains("fault[0].dirs"));
  CHECK_THROWS_WITH(make("slow_storage", "1", "ops = \"readwrite\"\n"), Catch::Contains("fault[0].ops"));
  CHECK_THROWS_WITH(make("slow_storage", "1", "error = \"EPERM\"\n"), Catch::Contains("fault[0].error"));
  CHECK_THROWS_WITH(make("slow_storage", "1", "delay_ms = -1\n"), Catch::Contains("fault[0].delay_ms"));
  CHECK_NOTHROW(make("slow_storage", "1", "dirs = \"ckpt, data\"\n"));
  CHECK_THROWS_WITH(make("tiny_shm", "1", "size_mb = 0\n"), Catch::Contains("fault[0].size_mb"));
  CHECK_THROWS_WITH(make("disk_full", "1", "fill = 1\n"), Catch::Contains("fault[0].fill"));
}

TEST_CASE("tiny_shm gives the wrapped rank, and only it, a tiny /dev/shm", "[tiny_shm]") {
  HostInfo h = detect_host();
  auto inj = make("tiny_shm", "1", "size_mb = 0.5\n");
  if (auto why = inj->unsupported_reason(h); !why.empty()) {
    WARN("skipped: " + why);
    return;
  }
  const std::string run_dir = temp_dir();
  const auto host_shm = mount_at(0, "/dev/shm");
  LaunchSpec s0 = launch_spec(0, run_dir);
  inj->prepare_rank(0, s0);
  CHECK(s0.wrapper.empty());
  LaunchSpec s1 = launch_spec(1, run_dir);
  inj->prepare_rank(1, s1);
  REQUIRE_FALSE(s1.wrapper.empty());
  CHECK(s1.wrapper[0] == "unshare");

  std::vector<std::string> argv = s1.wrapper;
  for (const char* a : {"/bin/sh", "-c",
                        "df -k /dev/shm | tail -1; grep ' /dev/shm ' /proc/self/mounts | tail -1; "
                        "dd if=/dev/zero of=/dev/shm/fill bs=1k count=1024 2>&1 | head -1; echo args:$0:$1",
                        "zero", "one"}) {
    argv.push_back(a);
  }
  Ran r = run(argv, s1.env);
  INFO(r.out);
  CHECK(r.exit_code() == 0);
  CHECK_THAT(r.out, Catch::Contains("hanglab-tiny-shm"));
  CHECK_THAT(r.out, Catch::Contains(" 512 "));  // df -k: 512 KiB in total
  CHECK_THAT(r.out, Catch::Contains("No space left on device"));
  CHECK_THAT(r.out, Catch::Contains("args:zero:one"));  // the rank's argv arrives intact
  // The host's /dev/shm is what it was: no tmpfs of ours, no file from the child.
  const auto after = mount_at(0, "/dev/shm");
  REQUIRE(after.has_value());
  CHECK(after->source != "hanglab-tiny-shm");
  if (host_shm) CHECK(after->source == host_shm->source);
  CHECK_FALSE(fs::exists("/dev/shm/fill"));

  // fire() reports what the running rank sees.
  std::vector<std::string> sleeper = s1.wrapper;
  sleeper.insert(sleeper.end(), {"/bin/sleep", "3"});
  const pid_t pid = spawn(sleeper, s1.env, -1);
  TestJob job;
  job.pids[1] = pid;
  const std::string detail = inj->fire(job);
  CHECK_THAT(detail, Catch::Contains("rank 1 (pid " + std::to_string(pid) + "): /dev/shm is a hanglab-tiny-shm tmpfs "
                                     "of 0.50 MiB"));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  CHECK_NOTHROW(inj->revert(job));
}

TEST_CASE("disk_full fills the rank's private checkpoint tmpfs -- its next write is ENOSPC", "[disk_full]") {
  HostInfo h = detect_host();
  auto inj = make("disk_full", "0", "size_mb = 0.25\n");
  if (auto why = inj->unsupported_reason(h); !why.empty()) {
    WARN("skipped: " + why);
    return;
  }
  const std::string run_dir = temp_dir();
  LaunchSpec s = launch_spec(0, run_dir);
  inj->prepare_rank(0, s);
  REQUIRE_FALSE(s.wrapper.empty());
  LaunchSpec s1 = launch_spec(1, run_dir);
  inj->prepare_rank(1, s1);
  CHECK(s1.wrapper.empty());

  std::vector<std::string> argv = s.wrapper;
  argv.insert(argv.end(), {"/bin/sh", "-c",
                           "echo small > \"$HANGLAB_CKPT_DIR/early.pt\" && echo early-ok; sleep 1.5; "
                           "head -c 10000 /dev/zero > \"$HANGLAB_CKPT_DIR/late.pt\" || echo late-failed"});
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  const pid_t pid = spawn(argv, s.env, p[1]);
  ::close(p[1]);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  TestJob job;
  job.pids[0] = pid;
  const std::string detail = inj->fire(job);
  CHECK_THAT(detail, Catch::Contains("ballast until ENOSPC"));
  CHECK_THAT(detail, Catch::Contains("0.00 MiB free now"));
  std::string out;
  char buf[1024];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  ::waitpid(pid, nullptr, 0);
  INFO(out);
  CHECK_THAT(out, Catch::Contains("early-ok"));
  CHECK_THAT(out, Catch::Contains("No space left on device"));
  CHECK_THAT(out, Catch::Contains("late-failed"));
  // Everything happened in the rank's namespace: the host directory is empty.
  CHECK(fs::is_directory(run_dir + "/ckpt"));
  CHECK(fs::is_empty(run_dir + "/ckpt"));
  const auto m = mount_at(0, run_dir + "/ckpt");
  CHECK_FALSE(m.has_value());
  CHECK_NOTHROW(inj->revert(job));
}

// End to end through the CLI: a checkpoint stall in progress, then Ctrl-C (and, in a
// second run, SIGKILL) to hanglab. Nothing may stay mounted and no daemon may survive.
TEST_CASE("after Ctrl-C or SIGKILL of hanglab no slowfs mount or process is left", "[slow_storage][e2e]") {
  const std::string hanglab = std::string(HANGLAB_BINARY_DIR) + "/harness/hanglab";
  const std::string workload = std::string(HANGLAB_BINARY_DIR) + "/workloads/torch_ddp";
  if (auto why = skip_slowfs(); !why.empty()) {
    WARN("skipped: " + why);
    return;
  }
  if (::access(hanglab.c_str(), X_OK) != 0 || ::access(workload.c_str(), X_OK) != 0) {
    WARN("skipped: hanglab or torch_ddp not built");
    return;
  }
  const std::string work = temp_dir();
  const std::string scenario = work + "/stall.toml";
  // Saves go on for seconds after the trigger (step 2): the stall takes hold at the first one after
  // the fault is armed, however long arming takes on a loaded machine (with 6 steps of 20 ms the run
  // could finish first: seen once under CI load).
  std::ofstream(scenario) << "# Reproduces: a checkpoint stall, interrupted.\n# Expected: nothing left behind.\n"
                             "[scenario]\ndeadline_s = 60\n[workload]\nname = \"torch_ddp\"\nworld_size = 2\n"
                             "steps = 400\n[workload.args]\ncheckpoint_every = 2\nstep_ms = 20\n"
                             "[timeouts]\ncollective_s = 30\nprogress_s = 40\n"
                             "[[fault]]\nkind = \"slow_storage\"\nranks = [0]\nat_step = 2\ndirs = \"ckpt\"\n"
                             "ops = \"write\"\ndelay_ms = 0\nstall_s = 50\n";
  for (int sig : {SIGINT, SIGKILL}) {
    INFO("signal " << sig);
    const std::string results = work + "/results-" + std::to_string(sig);
    // Its own state directory: what the SIGKILLed run leaves there is swept below.
    const std::map<std::string, std::string> env = {{"HANGLAB_STATE_DIR", work + "/state"}};
    const pid_t pid = spawn({hanglab, "run", scenario, "--results", results, "--no-stacks"}, env, -1);
    // Wait until the stall holds rank 0 inside its save.
    bool stalled = false;
    for (int i = 0; i < 600 && !stalled; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      // Not recursive: a create stalled in ckpt/ holds that directory's lock, so listing
      // it would block this test until the stall ends.
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(results + "/stall", ec)) {
        if (slurp((e.path() / "slowfs-ckpt.log").string()).find("stall begins") != std::string::npos) stalled = true;
      }
    }
    CHECK(stalled);
    CHECK(slowfs_mounted_under(results));
    ::kill(pid, sig);
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (sig == SIGINT) CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 130));
    // After SIGKILL the daemon detaches on its parent-death signal, the ranks die on
    // theirs: give them a moment.
    bool clean = false;
    for (int i = 0; i < 50 && !clean; ++i) {
      clean = !slowfs_mounted_under(results) && processes_mentioning(results).empty();
      if (!clean) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK_FALSE(slowfs_mounted_under(results));
    CHECK(processes_mentioning(results).empty());
    // The killed run's state file is left for the next start; `hanglab clean` sweeps it.
    const pid_t sweeper = spawn({hanglab, "clean"}, env, -1);
    ::waitpid(sweeper, &st, 0);
    CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
    std::error_code ec;
    CHECK(fs::is_empty(work + "/state", ec));
  }
}
