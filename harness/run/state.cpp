// The run state file and the sweep of what dead runs left (see state.hpp).
#include "run/state.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "process_control.hpp"
#include "storage_common.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr long kCgroup2Magic = 0x63677270;  // CGROUP2_SUPER_MAGIC
constexpr long kCgroupMagic = 0x27e0eb;     // CGROUP_SUPER_MAGIC (v1)
constexpr unsigned long kPfExiting = 0x4;   // PF_EXITING in /proc/PID/stat `flags`

[[noreturn]] void fail_errno(const std::string& call, const std::string& context) { throw_system_error(call, context); }

// mkdir -p with mode 0700 for the last component; refuses a directory another user owns
// or a symlink there (/tmp is shared: someone else could have made it first).
void ensure_private_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) fail_errno("mkdir(" + dir.string() + ")", "run state");
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) fail_errno("lstat(" + dir.string() + ")", "run state");
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    throw std::runtime_error("run state: " + dir.string() + " is not a directory owned by uid " +
                             std::to_string(::geteuid()) + " (set HANGLAB_STATE_DIR to use another)");
}

bool write_all_fd(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// One snapshot of a process: state, process group, start time (0 = gone).
struct Proc {
  pid_t pid = 0;
  char state = 0;
  pid_t pgid = 0;
  unsigned long long start = 0;
  bool exiting = false;  // already dying (e.g. of its parent-death signal)
};

Proc read_proc(pid_t pid) {
  Proc p;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return p;
  auto rp = line.rfind(')');
  if (rp == std::string::npos) return p;
  std::istringstream ss(line.substr(rp + 1));
  std::vector<std::string> f;
  for (std::string t; ss >> t;) f.push_back(t);
  if (f.size() < 20) return p;
  p.pid = pid;
  p.state = f[0].empty() ? 0 : f[0][0];
  p.pgid = static_cast<pid_t>(std::atol(f[2].c_str()));
  p.exiting = (std::strtoul(f[6].c_str(), nullptr, 10) & kPfExiting) != 0;
  p.start = std::strtoull(f[19].c_str(), nullptr, 10);
  if (!p.exiting) {
    // A SIGKILL already pending (a parent-death signal the task has not run to act on
    // yet: it may be stopped, or throttled by its cgroup) is as good as exiting.
    std::ifstream st("/proc/" + std::to_string(pid) + "/status");
    for (std::string l; std::getline(st, l);)
      if (l.rfind("SigPnd:", 0) == 0 || l.rfind("ShdPnd:", 0) == 0)
        p.exiting = p.exiting || (std::strtoull(l.c_str() + 7, nullptr, 16) & (1ULL << (SIGKILL - 1))) != 0;
  }
  return p;
}

bool running(const Proc& p) { return p.pid > 0 && p.state != 'Z' && p.state != 'X'; }

std::vector<Proc> all_procs() {
  std::vector<Proc> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !isdigit(static_cast<unsigned char>(name[0]))) continue;
    Proc p = read_proc(static_cast<pid_t>(std::atol(name.c_str())));
    if (running(p)) out.push_back(p);
  }
  return out;
}

bool environ_has(pid_t pid, const std::string& kv) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  for (std::string e; std::getline(in, e, '\0');)
    if (e == kv) return true;
  return false;
}

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

std::string plural(int n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

}  // namespace

fs::path state_dir() {
  if (const char* d = std::getenv("HANGLAB_STATE_DIR"); d && *d) return d;
  if (::geteuid() == 0) return "/run/hanglab";
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return fs::path(x) / "hanglab";
  return "/tmp/hanglab-" + std::to_string(::geteuid());
}

// ---- the owner's side ----

std::unique_ptr<RunState> RunState::create(const std::string& scenario, const fs::path& run_dir) {
  static std::atomic<int> seq{0};
  const fs::path dir = state_dir();
  ensure_private_dir(dir);
  const pid_t self = ::getpid();
  const unsigned long long start = process_start_time(self);
  std::unique_ptr<RunState> s(new RunState());
  s->path_ = dir / fmt::format("{}-{}-{}.jsonl", self, start, seq++);
  s->fd_ = ::open(s->path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  if (s->fd_ < 0) fail_errno("open(" + s->path_.string() + ")", "run state");
  struct flock lk {};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  if (::fcntl(s->fd_, F_SETLK, &lk) != 0) fail_errno("fcntl(F_SETLK, " + s->path_.string() + ")", "run state");
  s->append({{"op", "begin"},
             {"pid", self},
             {"start", start},
             {"scenario", scenario},
             {"run_dir", fs::absolute(run_dir).string()},
             {"t", unix_now()}});
  return s;
}

RunState::~RunState() { close(); }

int RunState::append(json entry) {
  const int id = next_id_++;
  if (entry.value("op", "") != "begin" && entry.value("op", "") != "released") entry["id"] = id;
  if (fd_ < 0) throw std::runtime_error("run state: " + path_.string() + " is already closed");
  if (!write_all_fd(fd_, entry.dump() + "\n")) fail_errno("write(" + path_.string() + ")", "run state");
  return id;
}

int RunState::cgroup(const fs::path& dir) {
  int id = append({{"op", "cgroup"}, {"path", dir.string()}});
  open_ids_.push_back(id);
  return id;
}

int RunState::mount(const std::string& mount_point, const std::string& fs_type) {
  int id = append({{"op", "mount"}, {"path", mount_point}, {"fstype", fs_type}});
  open_ids_.push_back(id);
  return id;
}

int RunState::process(pid_t pid, const std::string& what) {
  return append({{"op", "process"},
                 {"pid", pid},
                 {"start", process_start_time(pid)},
                 {"pgid", ::getpgid(pid)},
                 {"what", what}});
}

int RunState::netns(const std::string& name) {
  int id = append({{"op", "netns"}, {"name", name}});
  open_ids_.push_back(id);
  return id;
}

int RunState::netdev(const std::string& name) {
  int id = append({{"op", "netdev"}, {"name", name}});
  open_ids_.push_back(id);
  return id;
}

int RunState::env_marker(const std::string& key, const std::string& value) {
  return append({{"op", "env"}, {"key", key}, {"value", value}});
}

void RunState::released(int id) {
  if (fd_ < 0) return;
  // Best effort: a lost "released" only makes the sweep look again (and find nothing).
  write_all_fd(fd_, json{{"op", "released"}, {"id", id}}.dump() + "\n");
  open_ids_.erase(std::remove(open_ids_.begin(), open_ids_.end(), id), open_ids_.end());
}

void RunState::close() {
  if (fd_ < 0) return;
  // Unlink while still holding the lock, so no sweeper can open a half-dead file.
  if (open_ids_.empty()) ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

// ---- the sweep ----

std::string SweepResult::line() const {
  std::vector<std::string> parts;
  if (cgroups) parts.push_back(plural(cgroups, "cgroup", "cgroups"));
  if (mounts) parts.push_back(plural(mounts, "mount", "mounts"));
  if (netns) parts.push_back(plural(netns, "network namespace", "network namespaces"));
  if (netdevs) parts.push_back(plural(netdevs, "network interface", "network interfaces"));
  if (processes) parts.push_back(plural(processes, "process", "processes"));
  std::string what;
  for (const auto& p : parts) what += (what.empty() ? "" : ", ") + p;
  std::string s = fmt::format("hanglab: swept what dead run {} ({}, last write {}) left: {}", owner,
                              scenario.empty() ? "?" : scenario, iso_time(last_write), what.empty() ? "nothing" : what);
  if (!problems.empty()) {
    s += "; NOT reverted:";
    for (size_t i = 0; i < problems.size(); ++i) s += (i ? "; " : " ") + problems[i];
    s += " (kept " + file.string() + ")";
  }
  return s;
}

namespace {

// Kills what one dead run left; fills `r`. `entries` in the order they were written.
void revert_entries(const std::vector<json>& entries, const std::set<int>& released, SweepResult& r) {
  // `killed`: what still ran and was killed here (what the run "left"); `dying`: what was
  // exiting already (a parent-death signal at work), only waited for.
  std::set<pid_t> killed, dying;
  auto kill_one = [&](const Proc& p) {
    if (!running(p) || p.pid == ::getpid() || killed.count(p.pid) || dying.count(p.pid)) return;
    if (p.exiting) {
      dying.insert(p.pid);
      return;
    }
    if (::kill(p.pid, SIGKILL) == 0) killed.insert(p.pid);
  };
  std::vector<Proc> procs = all_procs();

  // 1. Processes, newest first: helpers and ranks by pid + start time, and the members of
  // the groups they led. A group id cannot be handed out again while any member lives,
  // so when the leader is gone its members are still ours; when a *different* process
  // holds the leader's pid, the old group is empty and the id was reused: hands off.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const json& e = *it;
    if (e.value("op", "") != "process" || released.count(e.value("id", 0))) continue;
    const pid_t pid = e.value("pid", 0);
    const unsigned long long start = e.value("start", 0ULL);
    if (pid <= 1 || start == 0) continue;
    Proc now = read_proc(pid);
    const bool same = now.pid > 0 && now.start == start;
    if (now.pid > 0 && !same) continue;  // the pid was reused: not ours
    if (same) kill_one(now);
    if (e.value("pgid", 0) == pid)
      for (const auto& p : procs)
        if (p.pgid == pid) kill_one(p);
  }
  // Anything that inherited a rank's environment marker (data-loader workers, processes
  // a launcher started) even if it left the rank's process group.
  for (const auto& e : entries) {
    if (e.value("op", "") != "env" || released.count(e.value("id", 0))) continue;
    const std::string kv = e.value("key", "") + "=" + e.value("value", "");
    if (kv.size() < 3) continue;
    for (const auto& p : procs)
      if (!killed.count(p.pid) && environ_has(p.pid, kv)) kill_one(p);
  }

  // 2. Mounts, newest first, lazily (a process we could not kill may still use one), and
  // only when the mount at that path is still of the recorded type.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const json& e = *it;
    if (e.value("op", "") != "mount" || released.count(e.value("id", 0))) continue;
    const std::string path = e.value("path", ""), type = e.value("fstype", "");
    bool found = false;
    for (int i = 0; i < 8; ++i) {
      auto m = mount_at(0, path);
      if (!m || m->fs_type != type) break;
      found = true;
      if (::umount2(path.c_str(), MNT_DETACH) != 0) {
        r.problems.push_back(fmt::format("umount2({}, MNT_DETACH) failed: {} (errno {})", path, std::strerror(errno), errno));
        break;
      }
    }
    if (found) ++r.mounts;
  }

  // 3. Cgroups, newest first: only directories named hanglab-* on a cgroup file system.
  // Whatever still runs inside is ours (a rank or its child): killed; then rmdir, retried
  // while the kernel still counts exiting tasks.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const json& e = *it;
    if (e.value("op", "") != "cgroup" || released.count(e.value("id", 0))) continue;
    const fs::path dir = e.value("path", "");
    std::error_code ec;
    if (dir.filename().string().rfind("hanglab-", 0) != 0 || !fs::is_directory(dir, ec)) continue;
    struct statfs sf {};
    if (::statfs(dir.c_str(), &sf) != 0 ||
        (static_cast<long>(sf.f_type) != kCgroup2Magic && static_cast<long>(sf.f_type) != kCgroupMagic)) {
      r.problems.push_back(dir.string() + " is not on a cgroup file system: left alone");
      continue;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      for (const auto& id : read_lines(dir / "cgroup.procs")) kill_one(read_proc(static_cast<pid_t>(std::atol(id.c_str()))));
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) {
        ++r.cgroups;
        break;
      }
      const int err = errno;
      if (err != EBUSY || std::chrono::steady_clock::now() > deadline) {
        r.problems.push_back(fmt::format("rmdir({}) failed: {} (errno {})", dir.string(), std::strerror(err), err));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // 4. Network namespaces, then interfaces (a bridge), newest first; only hanglab's names.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const json& e = *it;
    const std::string op = e.value("op", ""), name = e.value("name", "");
    if ((op != "netns" && op != "netdev") || released.count(e.value("id", 0))) continue;
    std::error_code ec;
    if (op == "netns") {
      if (name.rfind("hanglab-", 0) != 0 || name.find('/') != std::string::npos ||
          !fs::exists(fs::path("/run/netns") / name, ec))
        continue;
      ToolResult t = run_tool({"ip", "netns", "delete", name});
      if (t.ok()) ++r.netns;
      else r.problems.push_back("ip netns delete " + name + ": " + t.output);
    }
  }
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const json& e = *it;
    const std::string name = e.value("name", "");
    if (e.value("op", "") != "netdev" || released.count(e.value("id", 0))) continue;
    std::error_code ec;
    if (name.rfind("hl", 0) != 0 || name.find('/') != std::string::npos || !fs::exists(fs::path("/sys/class/net") / name, ec))
      continue;
    ToolResult t = run_tool({"ip", "link", "delete", name});
    if (t.ok() || !fs::exists(fs::path("/sys/class/net") / name, ec)) ++r.netdevs;
    else r.problems.push_back("ip link delete " + name + ": " + t.output);
  }

  // SIGKILL is final but not instant (a task in the kernel finishes its call first): wait,
  // bounded, so "0 processes left" holds when the sweep returns.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::set<pid_t> all = killed;
  all.insert(dying.begin(), dying.end());
  for (pid_t pid : all) {
    while (running(read_proc(pid)) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (running(read_proc(pid))) r.problems.push_back(fmt::format("pid {} survived SIGKILL for 5 s", pid));
  }
  r.processes = static_cast<int>(killed.size());
}

}  // namespace

std::vector<SweepResult> sweep_dead_runs(std::ostream* out) {
  std::vector<SweepResult> results;
  const fs::path dir = state_dir();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return results;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    // <pid>-<start>-<seq>.jsonl
    const std::string stem = file.stem().string();
    pid_t pid = 0;
    unsigned long long start = 0;
    int seq = 0;
    if (std::sscanf(stem.c_str(), "%d-%llu-%d", &pid, &start, &seq) != 3 || pid <= 0) continue;
    if (pid == ::getpid()) continue;
    // Reads through the locked fd: closing any other fd of the file would drop the lock.
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    struct flock lk {};
    lk.l_type = F_WRLCK;
    lk.l_whence = SEEK_SET;
    const Proc owner = read_proc(pid);
    // Locked = its owner lives (or another sweeper is at it); the pid check guards the
    // moment between the owner's open and its lock.
    if (::fcntl(fd, F_SETLK, &lk) != 0 || (running(owner) && owner.start == start)) {
      ::close(fd);
      continue;
    }
    struct stat st {};
    // Unlinked meanwhile: another sweeper finished it between our open and our lock.
    if (::fstat(fd, &st) != 0 || st.st_nlink == 0) {
      ::close(fd);
      continue;
    }
    const double last_write = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
    std::string text;
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    std::vector<json> entries;
    std::set<int> released;
    SweepResult r;
    r.file = file;
    r.owner = pid;
    r.last_write = last_write;
    std::istringstream ss(text);
    for (std::string line; std::getline(ss, line);) {
      json j = json::parse(line, nullptr, false);  // a torn last line is skipped
      if (j.is_discarded() || !j.is_object()) continue;
      const std::string op = j.value("op", "");
      if (op == "begin") r.scenario = j.value("scenario", "");
      if (op == "released") released.insert(j.value("id", 0));
      else entries.push_back(std::move(j));
    }
    revert_entries(entries, released, r);
    if (r.problems.empty()) ::unlink(file.c_str());
    ::close(fd);
    if (out) *out << r.line() << std::endl;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace hanglab
