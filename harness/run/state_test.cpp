// The run state file and the sweep: a live owner is never touched, a dead owner's
// processes, mounts and cgroups are reverted, a reused pid is never killed.
#include "run/state.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "process_control.hpp"
#include "storage_common.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

// A private state directory for one test case ($HANGLAB_STATE_DIR), removed afterwards.
struct StateDir {
  fs::path dir;
  StateDir() {
    char tmpl[] = "/tmp/hanglab-state-test-XXXXXX";
    dir = ::mkdtemp(tmpl);
    ::setenv("HANGLAB_STATE_DIR", (dir / "state").c_str(), 1);
  }
  ~StateDir() {
    ::unsetenv("HANGLAB_STATE_DIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / "state", ec)) out.push_back(e.path());
    return out;
  }
};

bool running(pid_t pid) {
  char s = process_state(pid);
  return s != 0 && s != 'Z';
}

// `sleep 60` in a process group of its own (as ranks and helpers are), optionally with an
// extra environment variable; not reaped by anyone until the test does.
// Returns once the sleeper has exec'd: until then /proc/<pid>/environ still shows the parent's
// environment (putenv changes only the child's copy), and a sweep looking for the marker would
// miss it under load. The pipe's write end is close-on-exec: EOF on it means exec happened.
pid_t start_sleeper(bool own_group, const char* env = nullptr) {
  int execd[2];
  if (::pipe2(execd, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(execd[0]);
    if (own_group) ::setpgid(0, 0);
    if (env) ::putenv(const_cast<char*>(env));
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(execd[1]);
  char c;
  while (::read(execd[0], &c, 1) < 0 && errno == EINTR) {
  }
  ::close(execd[0]);
  if (own_group) ::setpgid(pid, pid);
  return pid;
}

void reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// Waits (bounded) until `pid` is a zombie or gone; the sweep SIGKILLs, we reap.
bool dies(pid_t pid) {
  for (int i = 0; i < 300 && running(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  bool dead = !running(pid);
  ::waitpid(pid, nullptr, WNOHANG);
  return dead;
}

// The (pid, start time) of a process that existed and is gone now: a dead owner.
std::pair<pid_t, unsigned long long> dead_owner() {
  pid_t pid = start_sleeper(false);
  unsigned long long start = process_start_time(pid);
  reap(pid);
  return {pid, start};
}

fs::path write_state(const StateDir& d, std::pair<pid_t, unsigned long long> owner, const std::vector<std::string>& lines) {
  fs::create_directories(d.dir / "state");
  fs::path f = d.dir / "state" / (std::to_string(owner.first) + "-" + std::to_string(owner.second) + "-0.jsonl");
  std::ofstream out(f);
  out << R"({"op":"begin","scenario":"unit","pid":)" << owner.first << "}\n";
  for (const auto& l : lines) out << l << "\n";
  return f;
}

std::string proc_entry(int id, pid_t pid, unsigned long long start, pid_t pgid) {
  std::ostringstream s;
  s << R"({"op":"process","id":)" << id << R"(,"pid":)" << pid << R"(,"start":)" << start << R"(,"pgid":)" << pgid
    << R"(,"what":"test"})";
  return s.str();
}

}  // namespace

TEST_CASE("a run state file is locked while its owner lives and removed when all is released") {
  StateDir d;
  auto st = RunState::create("unit", d.dir / "run");
  REQUIRE(fs::exists(st->path()));
  const std::string name = st->path().filename().string();
  CHECK(name.rfind(std::to_string(::getpid()) + "-" + std::to_string(process_start_time(::getpid())) + "-", 0) == 0);

  // Another process cannot take the lock: the owner lives.
  pid_t child = ::fork();
  if (child == 0) {
    int fd = ::open(st->path().c_str(), O_RDWR);
    struct flock lk {};
    lk.l_type = F_WRLCK;
    _exit(fd >= 0 && ::fcntl(fd, F_SETLK, &lk) != 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  int cg = st->cgroup("/sys/fs/cgroup/cpu/hanglab-unit");
  int mt = st->mount("/nonexistent/mnt", "tmpfs");
  st->process(::getpid(), "self");
  st->released(cg);
  SECTION("kept while a mount is not released") {
    st->close();
    CHECK(fs::exists(st->path()));
  }
  SECTION("removed once everything but processes is released") {
    st->released(mt);
    st->close();
    CHECK_FALSE(fs::exists(st->path()));
  }
}

TEST_CASE("the sweep leaves a live run alone and reverts it once its owner is dead") {
  StateDir d;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t owner = ::fork();
  if (owner == 0) {
    // The owner: records a helper (its own group) and a rank marker, then waits.
    ::close(ready[0]);
    auto st = RunState::create("owner", d.dir / "run");
    pid_t helper = start_sleeper(true);
    st->process(helper, "helper");
    st->env_marker("HANGLAB_RUN_ID", "unit-marker-42");
    std::string msg = std::to_string(helper) + "\n";
    (void)!::write(ready[1], msg.data(), msg.size());
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char buf[32] = {};
  REQUIRE(::read(ready[0], buf, sizeof buf - 1) > 0);
  ::close(ready[0]);
  const pid_t helper = static_cast<pid_t>(std::atol(buf));
  // A "data-loader worker" that left the group but carries the marker.
  const pid_t worker = start_sleeper(true, "HANGLAB_RUN_ID=unit-marker-42");
  // Same pid space, no marker: must survive.
  const pid_t bystander = start_sleeper(true, "HANGLAB_RUN_ID=someone-else");

  std::ostringstream out;
  CHECK(sweep_dead_runs(&out).empty());
  CHECK(out.str().empty());
  CHECK(running(helper));
  REQUIRE(d.files().size() == 1);

  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  auto swept = sweep_dead_runs(&out);
  REQUIRE(swept.size() == 1);
  CHECK(swept[0].owner == owner);
  CHECK(swept[0].scenario == "owner");
  CHECK(swept[0].processes == 2);
  CHECK(swept[0].problems.empty());
  CHECK(out.str().find("hanglab: swept what dead run " + std::to_string(owner) + " (owner, last write ") == 0);
  CHECK(out.str().find(") left: 2 processes\n") != std::string::npos);
  CHECK(dies(worker));
  CHECK(running(bystander));
  CHECK(d.files().empty());
  // The helper was the owner's child: reparented to init (or a subreaper), reaped there.
  for (int i = 0; i < 300 && running(helper); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK_FALSE(running(helper));
  reap(bystander);
  // Nothing left to sweep: no second line.
  CHECK(sweep_dead_runs(nullptr).empty());
}

TEST_CASE("the sweep never kills a process whose pid was reused") {
  StateDir d;
  const pid_t other = start_sleeper(true);
  // The record names `other`'s pid with another start time: a different, older process.
  write_state(d, dead_owner(), {proc_entry(1, other, process_start_time(other) - 1, other)});
  auto swept = sweep_dead_runs(nullptr);
  REQUIRE(swept.size() == 1);
  CHECK(swept[0].processes == 0);
  CHECK(swept[0].line().find("left: nothing") != std::string::npos);
  CHECK(running(other));
  reap(other);
}

TEST_CASE("the sweep kills the rest of a dead leader's process group, and skips released entries") {
  StateDir d;
  // A group whose leader is gone: the leader pid and start are recorded, a member lives on.
  pid_t leader = ::fork();
  if (leader == 0) {
    ::setpgid(0, 0);
    for (;;) ::pause();
  }
  ::setpgid(leader, leader);
  unsigned long long leader_start = process_start_time(leader);
  pid_t member = ::fork();
  if (member == 0) {
    ::setpgid(0, leader);
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(member, leader);
  reap(leader);
  const pid_t released = start_sleeper(true);
  write_state(d, dead_owner(),
              {proc_entry(1, leader, leader_start, leader), proc_entry(2, released, process_start_time(released), released),
               R"({"op":"released","id":2})"});
  auto swept = sweep_dead_runs(nullptr);
  REQUIRE(swept.size() == 1);
  CHECK(swept[0].processes == 1);
  CHECK(dies(member));
  CHECK(running(released));
  reap(released);
}

TEST_CASE("the sweep unmounts a recorded mount of the recorded type only") {
  if (::geteuid() != 0) {
    WARN("skipping: needs root to mount a tmpfs");
    return;
  }
  StateDir d;
  const fs::path mp = d.dir / "mnt", other = d.dir / "other";
  fs::create_directories(mp);
  fs::create_directories(other);
  REQUIRE(::mount("hanglab-unit", mp.c_str(), "tmpfs", 0, "size=64k") == 0);
  REQUIRE(::mount("hanglab-unit", other.c_str(), "tmpfs", 0, "size=64k") == 0);
  write_state(d, dead_owner(),
              {R"({"op":"mount","id":1,"path":")" + mp.string() + R"(","fstype":"tmpfs"})",
               // Recorded as FUSE, but a tmpfs is there now: not ours, left alone.
               R"({"op":"mount","id":2,"path":")" + other.string() + R"(","fstype":"fuse.hanglab-slowfs"})"});
  auto swept = sweep_dead_runs(nullptr);
  REQUIRE(swept.size() == 1);
  CHECK(swept[0].mounts == 1);
  CHECK_FALSE(mount_at(0, mp.string()).has_value());
  CHECK(mount_at(0, other.string()).has_value());
  ::umount2(other.c_str(), MNT_DETACH);
}

TEST_CASE("the sweep kills what is left in a recorded hanglab cgroup and removes it") {
  std::string why;
  auto m = find_cgroup_mount("cpu", why);
  if (!m) {
    WARN("skipping: no cpu cgroup: " << why);
    return;
  }
  const std::string parent = cgroup_path_of(0, *m);
  if (parent.empty() || !cgroup_parent_problem(*m, parent).empty()) {
    WARN("skipping: the cpu cgroup is not writable here");
    return;
  }
  StateDir d;
  OwnedCgroup g(*m, parent, new_cgroup_name(0));
  g.create("state_test");
  const pid_t inside = start_sleeper(true);
  g.add_process(inside, "state_test");
  // Not named hanglab-*: never touched, even when recorded.
  const fs::path foreign = g.parent_dir() / "not-hanglab-state-test";
  write_state(d, dead_owner(),
              {R"({"op":"cgroup","id":1,"path":")" + g.dir().string() + R"("})",
               R"({"op":"cgroup","id":2,"path":")" + foreign.string() + R"("})"});
  auto swept = sweep_dead_runs(nullptr);
  REQUIRE(swept.size() == 1);
  CHECK(swept[0].cgroups == 1);
  CHECK(swept[0].processes == 1);
  CHECK(swept[0].problems.empty());
  CHECK(dies(inside));
  CHECK_FALSE(g.exists());
}

TEST_CASE("an OwnedCgroup made with a run state is recorded before mkdir and released by remove") {
  std::string why;
  auto m = find_cgroup_mount("cpu", why);
  if (!m) {
    WARN("skipping: no cpu cgroup: " << why);
    return;
  }
  const std::string parent = cgroup_path_of(0, *m);
  if (parent.empty() || !cgroup_parent_problem(*m, parent).empty()) {
    WARN("skipping: the cpu cgroup is not writable here");
    return;
  }
  StateDir d;
  auto st = RunState::create("unit", d.dir / "run");
  OwnedCgroup g(*m, parent, new_cgroup_name(0));
  g.create("state_test", st.get());
  std::ifstream in(st->path());
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find(R"("op":"cgroup")") != std::string::npos);
  CHECK(text.str().find(g.dir().string()) != std::string::npos);
  CHECK(g.remove().empty());
  st->close();
  CHECK_FALSE(fs::exists(st->path()));  // nothing left unreleased: the file goes
}
