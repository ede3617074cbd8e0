// Process identity, rank signalling and self-made cgroups (see process_control.hpp).
#include "process_control.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "run/state.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;

namespace {

// The fields of /proc/PID/stat after the command name; tokens[0] is field 3 (state).
// The name is skipped by the *last* ')' because it may itself contain ") ".
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  auto rp = line.rfind(')');
  if (rp == std::string::npos) return {};
  std::istringstream ss(line.substr(rp + 1));
  std::vector<std::string> out;
  for (std::string tok; ss >> tok;) out.push_back(tok);
  return out;
}

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::optional<std::string> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One write(2) of the whole value: cgroupfs parses each write separately and reports
// a refused value as the write's errno, which the caller wants to see.
int write_value(const fs::path& p, const std::string& value) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = n < 0 ? errno : (static_cast<size_t>(n) == value.size() ? 0 : EIO);
  ::close(fd);
  return err;
}

[[noreturn]] void throw_errno(int err, const std::string& call, const std::string& context) {
  errno = err;
  throw_system_error(call, context);
}

}  // namespace

unsigned long long process_start_time(pid_t pid) {
  auto f = stat_fields(pid);
  return f.size() > 19 ? std::strtoull(f[19].c_str(), nullptr, 10) : 0;
}

char process_state(pid_t pid) {
  auto f = stat_fields(pid);
  return f.empty() || f[0].empty() ? 0 : f[0][0];
}

double process_cpu_seconds(pid_t pid) {
  auto f = stat_fields(pid);
  if (f.size() < 13) return 0;
  static const double kHz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return (std::strtod(f[11].c_str(), nullptr) + std::strtod(f[12].c_str(), nullptr)) / kHz;
}

std::vector<pid_t> rank_processes(pid_t pid) {
  std::vector<pid_t> out{pid};
  if (pid <= 0 || ::getpgid(pid) != pid) return out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !isdigit(static_cast<unsigned char>(name[0]))) continue;
    pid_t p = static_cast<pid_t>(std::stol(name));
    if (p == pid) continue;
    auto f = stat_fields(p);
    if (f.size() > 2 && std::atol(f[2].c_str()) == pid) out.push_back(p);
  }
  return out;
}

int signal_rank(pid_t pid, int sig) {
  if (pid <= 0) return ESRCH;
  // Only a group the rank leads: signalling the group of a non-leader could reach the
  // harness itself.
  pid_t target = ::getpgid(pid) == pid ? -pid : pid;
  return ::kill(target, sig) == 0 ? 0 : errno;
}

std::optional<CgroupMount> find_cgroup_mount(const std::string& controller, std::string& why) {
  const char* env = std::getenv("HANGLAB_CGROUP_ROOT");
  fs::path root = env && *env ? env : "/sys/fs/cgroup";
  std::error_code ec;
  if (fs::exists(root / "cgroup.controllers", ec)) {
    auto ctl = slurp(root / "cgroup.controllers").value_or("");
    std::istringstream ss(ctl);
    for (std::string c; ss >> c;)
      if (c == controller) return CgroupMount{true, root, controller};
    why = "cgroup v2 at " + root.string() + " has no " + controller + " controller";
    return std::nullopt;
  }
  fs::path v1 = root / controller;
  const char* probe = controller == "cpu" ? "cpu.cfs_quota_us" : "memory.limit_in_bytes";
  if (fs::exists(v1 / probe, ec)) return CgroupMount{false, v1, controller};
  why = "no cgroup v2 at " + root.string() + " and no cgroup v1 " + controller + " hierarchy at " + v1.string();
  return std::nullopt;
}

std::string cgroup_path_of(pid_t pid, const CgroupMount& m) {
  std::string file = pid > 0 ? "/proc/" + std::to_string(pid) + "/cgroup" : "/proc/self/cgroup";
  for (const auto& line : read_lines(file)) {
    // "hierarchy-id:controller,list:/path"; v2 is "0::/path".
    auto c1 = line.find(':');
    auto c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    std::string ctls = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    if (m.v2) {
      if (line.compare(0, c1, "0") == 0 && ctls.empty()) return path;
      continue;
    }
    std::istringstream ss(ctls);
    for (std::string c; std::getline(ss, c, ',');)
      if (c == m.controller) return path;
  }
  return {};
}

std::string new_cgroup_name(int rank) {
  static std::atomic<int> seq{0};
  return "hanglab-" + std::to_string(::getpid()) + "-" + std::to_string(seq++) + "-rank" + std::to_string(rank);
}

std::string cgroup_parent_problem(const CgroupMount& m, const std::string& parent_rel) {
  fs::path dir = m.root / fs::path(parent_rel).relative_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return dir.string() + " is not a directory";
  if (::access(dir.c_str(), W_OK) != 0) {
    const int err = errno;
    std::string why = dir.string() + " is not writable: " + std::strerror(err) + " (errno " + std::to_string(err) + ")";
    // The usual case of an unprivileged user: say which privilege would do.
    if (err == EACCES && ::geteuid() != 0)
      why += "; needs root, or that cgroup delegated to uid " + std::to_string(::geteuid());
    return why;
  }
  if (m.v2) {
    auto sub = slurp(dir / "cgroup.subtree_control").value_or("");
    std::istringstream ss(sub);
    for (std::string c; ss >> c;)
      if (c == m.controller) return {};
    return "the " + m.controller + " controller is not enabled in " + (dir / "cgroup.subtree_control").string() +
           " (hanglab does not change groups it did not create)";
  }
  return {};
}

OwnedCgroup::OwnedCgroup(CgroupMount mount, std::string parent_rel, std::string name)
    : mount_(std::move(mount)), parent_rel_(std::move(parent_rel)), name_(std::move(name)) {
  parent_dir_ = mount_.root / fs::path(parent_rel_).relative_path();
  dir_ = parent_dir_ / name_;
}

void OwnedCgroup::create(const std::string& context, RunState* state) {
  if (state) {
    state_ = state;
    state_id_ = state->cgroup(dir_);
  }
  if (::mkdir(dir_.c_str(), 0755) != 0) throw_system_error("mkdir(" + dir_.string() + ")", context);
}

bool OwnedCgroup::exists() const {
  std::error_code ec;
  return fs::is_directory(dir_, ec);
}

std::string OwnedCgroup::rel_path() const {
  std::string p = parent_rel_;
  if (p.empty() || p.back() != '/') p += '/';
  return p + name_;
}

void OwnedCgroup::write(const std::string& file, const std::string& value, const std::string& context) const {
  if (int err = write_value(dir_ / file, value))
    throw_errno(err, "write(" + (dir_ / file).string() + ", \"" + value + "\")", context);
}

std::optional<std::string> OwnedCgroup::read(const std::string& file) const { return slurp(dir_ / file); }

void OwnedCgroup::add_process(pid_t pid, const std::string& context) const {
  // cgroup.procs moves the whole thread group atomically (no thread created meanwhile
  // is left behind); both v1 and v2 accept it on any kernel hanglab targets.
  int err = write_value(dir_ / "cgroup.procs", std::to_string(pid));
  if (err == 0) return;
  if (mount_.v2 || err == ESRCH) throw_errno(err, "write(" + (dir_ / "cgroup.procs").string() + ")", context);
  // Old v1 kernels: thread by thread through `tasks`.
  std::error_code ec;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    int e = write_value(dir_ / "tasks", t.path().filename().string());
    if (e != 0 && e != ESRCH) throw_errno(e, "write(" + (dir_ / "tasks").string() + ")", context);
  }
  if (ec) throw_errno(ec.value(), "opendir(/proc/" + std::to_string(pid) + "/task)", context);
}

std::string OwnedCgroup::remove(double timeout_s) {
  // v1 lists every thread in `tasks` and moves them one by one; v2 moves processes.
  const char* list_file = mount_.v2 ? "cgroup.procs" : "tasks";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (!exists()) {
      if (state_) state_->released(state_id_), state_ = nullptr;
      return {};
    }
    std::string move_problem;
    for (const auto& id : read_lines(dir_ / list_file)) {
      int e = write_value(parent_dir_ / list_file, id);
      if (e != 0 && e != ESRCH)
        move_problem = "moving task " + id + " back to " + parent_dir_.string() + ": " + std::strerror(e) + " (errno " +
                       std::to_string(e) + ")";
    }
    if (::rmdir(dir_.c_str()) == 0 || errno == ENOENT) {
      if (state_) state_->released(state_id_), state_ = nullptr;
      return {};
    }
    int e = errno;
    // EBUSY while a task that just exited is still being detached: retry briefly.
    if (e != EBUSY || std::chrono::steady_clock::now() > deadline)
      return "rmdir(" + dir_.string() + ") failed: " + std::strerror(e) + " (errno " + std::to_string(e) + ")" +
             (move_problem.empty() ? "" : "; " + move_problem);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace hanglab
