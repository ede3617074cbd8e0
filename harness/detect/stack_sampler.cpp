#include "detect/stack_sampler.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>

#include <fmt/format.h>

#include "triage/records/run_dir.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;

namespace {

bool on_path(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return ::access(exe.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string p = path;
  for (size_t start = 0; start <= p.size();) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    const std::string dir = p.substr(start, end - start);
    if (!dir.empty() && ::access((dir + "/" + exe).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

void main_thread_state(pid_t pid, std::string& state, std::string& wchan) {
  state.clear();
  wchan.clear();
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (std::getline(in, stat)) {
    auto rp = stat.rfind(')');
    if (rp != std::string::npos && rp + 2 < stat.size()) state = stat.substr(rp + 2, 1);
  }
  std::ifstream wc("/proc/" + std::to_string(pid) + "/wchan");
  std::string w;
  if (std::getline(wc, w) && w != "0") wchan = w;
}

StackSampler::StackSampler(StackSamplerOptions o) : o_(std::move(o)) { available_ = on_path(o_.py_spy); }

StackSampler::~StackSampler() { stop(); }

void StackSampler::stop() {
  for (auto& r : running_) {
    ::kill(r.child, SIGKILL);
    finish(r, true);
  }
  running_.clear();
}

bool StackSampler::is_python(pid_t pid, double now_mono) {
  // A "no" is asked again a little later: `sh -c "exec python ..."` is a shell at first.
  auto it = python_.find(pid);
  if (it != python_.end() && (it->second.first || now_mono - it->second.second < 5)) return it->second.first;
  std::error_code ec;
  const std::string exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).filename().string();
  const bool py = !ec && exe.rfind("python", 0) == 0;
  python_[pid] = {py, now_mono};
  return py;
}

const StackSample* StackSampler::latest(int rank) const {
  auto it = latest_.find(rank);
  return it == latest_.end() ? nullptr : &it->second;
}

void StackSampler::start(const RankWatch& r, double now_mono) {
  const fs::path dir = o_.run_dir / "ranks" / std::to_string(r.rank);
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path tmp = dir / ".stack.sample.tmp";
  last_start_mono_[r.rank] = now_mono;  // also when it fails to start: tried again a period later
  requested_.erase(r.rank);
  std::string state, wchan;
  main_thread_state(r.pid, state, wchan);
  const double t = unix_now();
  const std::string head = fmt::format(
      "# py-spy of rank {} (pid {}) at {}\n# state: {} wchan: {}\n"
      "# sampled without stopping the rank (py-spy dump --nonblocking) by hanglab's liveness watch\n",
      r.rank, r.pid, iso_time(t), state.empty() ? "?" : state, wchan.empty() ? "-" : wchan);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, head.data(), head.size());
  const std::string pid = std::to_string(r.pid);
  const pid_t parent = ::getpid();
  pid_t child = ::fork();
  if (child == 0) {
    child_after_fork(parent);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execlp(o_.py_spy.c_str(), o_.py_spy.c_str(), "dump", "--nonblocking", "--pid", pid.c_str(),
             static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(fd);
  if (child < 0) return;
  ::setpgid(child, child);
  if (o_.on_spawn) o_.on_spawn(child, fmt::format("py-spy sample of rank {}", r.rank));
  Running run;
  run.rank = r.rank;
  run.pid = r.pid;
  run.child = child;
  run.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  run.t = t;
  run.mono = now_mono;
  run.tmp = tmp;
  running_.push_back(run);
}

void StackSampler::finish(Running& run, bool timed_out) {
  // The supervisor's own reaping (waitpid(-1)) may have collected it already: by its pidfd
  // only, never by a pid that may have been reused.
  if (run.pidfd >= 0) {
    siginfo_t si{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(run.pidfd), &si, WEXITED | WNOHANG);
    ::close(run.pidfd);
    run.pidfd = -1;
  } else {
    ::waitpid(run.child, nullptr, WNOHANG);
  }
  std::string text = slurp(run.tmp);
  std::error_code ec;
  fs::remove(run.tmp, ec);
  if (timed_out || text.find("\nThread ") == std::string::npos) return;  // no stack read
  StackSample s;
  s.rank = run.rank;
  s.pid = run.pid;
  s.t = run.t;
  s.mono = run.mono;
  s.info = parse_stack_text(text);
  s.text = std::move(text);
  write_file(o_.run_dir / "ranks" / std::to_string(run.rank) / "stack.sample.txt", s.text);
  latest_[run.rank] = std::move(s);
}

void StackSampler::tick(const std::vector<const RankWatch*>& ranks, double now_mono) {
  for (auto it = running_.begin(); it != running_.end();) {
    bool done = false;
    if (it->pidfd >= 0) {
      pollfd p{it->pidfd, POLLIN, 0};
      done = ::poll(&p, 1, 0) > 0;
    } else {
      done = ::waitpid(it->child, nullptr, WNOHANG) != 0;
    }
    const bool late = !done && now_mono - it->mono > o_.timeout_s;
    if (late) ::kill(-it->child, SIGKILL), ::kill(it->child, SIGKILL);
    if (done || late) {
      if (late) {
        // reaped now, so that finish() reads a complete file
        if (it->pidfd >= 0) {
          pollfd p{it->pidfd, POLLIN, 0};
          ::poll(&p, 1, 1000);
        }
      }
      finish(*it, late);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  if (!available_) return;
  // Forget samples of a process the rank no longer is (restart).
  for (const RankWatch* r : ranks)
    if (auto it = latest_.find(r->rank); it != latest_.end() && it->second.pid != r->pid) latest_.erase(it);
  while (running_.size() < 2) {
    const RankWatch* best = nullptr;
    double best_due = 0;
    for (const RankWatch* r : ranks) {
      if (!r->alive || r->pid <= 0 || r->gone_t > 0) continue;
      if (std::any_of(running_.begin(), running_.end(), [&](const Running& x) { return x.rank == r->rank; })) continue;
      if (!is_python(r->pid, now_mono)) continue;
      const auto last = last_start_mono_.find(r->rank);
      const double since = last == last_start_mono_.end() ? 1e9 : now_mono - last->second;
      double due = -1;
      if (requested_.count(r->rank)) due = 1e12 + since;  // asked for: first
      else if (o_.period_s > 0 && since >= o_.period_s) due = since;
      if (due > best_due) best = r, best_due = due;
    }
    if (!best) break;
    start(*best, now_mono);
  }
}

}  // namespace hanglab
