// slow_storage: the storage under the run's data and/or checkpoint directories turns
// slow, stalls, or fails for the chosen ranks — an overloaded NFS or Lustre server, a
// throttled cloud disk, an object-store FUSE mount. Slow shard reads make a rank a
// straggler (its peers wait in every allreduce); a save that stalls longer than the
// collective timeout makes the peers time out in the barrier after the checkpoint while
// the saving rank is alive and blocked in I/O; EIO/ENOSPC turn into data errors.
//
// Mechanism (transparent, no help from the workload): before the ranks start, a FUSE
// passthrough file system (hanglab_slowfs, injectors/slowfs/slowfs.cpp) is mounted ON
// each chosen directory, passing every operation through to the same directory
// underneath (opened before the mount covered it). It affects only the I/O of processes
// whose RANK is in `ranks` (data-loader workers included); other ranks go through it
// unchanged. It acts from the trigger: fire() sends it SIGUSR2 — from then on every
// affected operation waits delay_ms + 0..jitter_ms, the first one opens a stall of
// stall_s, and with `error` they fail. tick() copies the stall begin/end lines of its log
// into harness.jsonl. revert() unmounts (lazily when busy) and stops the daemon; the
// daemon also detaches its mount by itself when the harness dies (parent-death signal),
// so nothing stays mounted after Ctrl-C or a crash. Its log is <run_dir>/slowfs-<dir>.log.
//
// hanglab_slowfs is looked up in $HANGLAB_SLOWFS, next to the hanglab binary, then at the
// path compiled in (HANGLAB_SLOWFS_BIN, the build tree).
//
// Needs I/O of the targeted ranks in the chosen directories after the trigger: with dirs
// = "ckpt" alone, a built-in workload is made to save (checkpoint_every = at_step,
// checkpoint_ranks = "all" where left out; settings that save nothing are refused); the
// data directory is read every step. Manifested when a daemon's log shows an affected
// operation after the trigger: its final counters (slowed read/write/metadata > 0, or
// failed > 0) or a stall that began.
#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "run/state.hpp"
#include "storage_common.hpp"

#ifndef HANGLAB_SLOWFS_BIN
#define HANGLAB_SLOWFS_BIN ""
#endif

namespace hanglab {

namespace fs = std::filesystem;

namespace {

const char* const kFsType = "fuse.hanglab-slowfs";

std::vector<KeyDoc> slow_storage_keys() {
  return {
      {"dirs", "string", "data,ckpt",
       "which run directories get the slow file system: data (HANGLAB_DATA_DIR, the shards) | ckpt "
       "(HANGLAB_CKPT_DIR, the checkpoints) | data,ckpt"},
      {"ops", "string", "all",
       "operations affected: read (read, readdir) | write (write, create, mkdir, unlink, rename, truncate, fsync...) "
       "| all (both plus metadata: getattr, open, flush, statfs...)"},
      {"delay_ms", "int", "50", "added to every affected operation of the chosen ranks from the trigger on, in ms"},
      {"jitter_ms", "int", "0", "uniform random extra delay per operation, 0..N ms"},
      {"stall_s", "float", "0",
       "one stall: the first affected operation after the trigger opens a window of this many seconds in which "
       "every affected operation waits (0 = none)"},
      {"error", "string", "none", "after the trigger affected operations fail with: none | EIO | ENOSPC"},
  };
}

// Where hanglab_slowfs is: $HANGLAB_SLOWFS, next to this executable, the build tree.
std::string slowfs_binary() {
  if (const char* e = std::getenv("HANGLAB_SLOWFS"); e && *e) return e;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path next = exe.parent_path() / "hanglab_slowfs";
    if (::access(next.c_str(), X_OK) == 0) return next.string();
  }
  if (::access(HANGLAB_SLOWFS_BIN, X_OK) == 0) return HANGLAB_SLOWFS_BIN;
  return {};
}

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class SlowStorage : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    const auto keys = slow_storage_keys();
    reject_unknown_keys(spec, file, keys);
    ranks_ = spec.ranks;
    at_step_ = spec.at_step.value_or(1);
    auto bad = [&](const std::string& key, const std::string& msg) {
      const toml::node* n = spec.table.get(key);
      return config_error_at(file, n ? n->source() : spec.table.source(), spec.key_prefix() + "." + key, msg);
    };
    const std::string dirs = read_fault_key(spec, file, keys[0]).get<std::string>();
    size_t pos = 0;
    while (pos <= dirs.size()) {
      const size_t comma = dirs.find(',', pos);
      std::string d = dirs.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      d.erase(0, d.find_first_not_of(' '));
      d.erase(d.find_last_not_of(' ') + 1);
      if (d != "data" && d != "ckpt") throw bad("dirs", "expected data, ckpt or data,ckpt (got \"" + dirs + "\")");
      if (std::find(dirs_.begin(), dirs_.end(), d) == dirs_.end()) dirs_.push_back(d);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    ops_ = read_fault_key(spec, file, keys[1]).get<std::string>();
    if (ops_ != "read" && ops_ != "write" && ops_ != "all") throw bad("ops", "expected read, write or all");
    delay_ms_ = read_fault_key(spec, file, keys[2]).get<long long>();
    jitter_ms_ = read_fault_key(spec, file, keys[3]).get<long long>();
    stall_s_ = read_fault_key(spec, file, keys[4]).get<double>();
    error_ = read_fault_key(spec, file, keys[5]).get<std::string>();
    if (delay_ms_ < 0 || delay_ms_ > 600000) throw bad("delay_ms", "must be within 0..600000");
    if (jitter_ms_ < 0 || jitter_ms_ > 600000) throw bad("jitter_ms", "must be within 0..600000");
    if (!(stall_s_ >= 0) || stall_s_ > 86400) throw bad("stall_s", "must be within 0..86400");
    if (error_ != "none" && error_ != "EIO" && error_ != "ENOSPC") throw bad("error", "expected none, EIO or ENOSPC");
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    if (std::find(dirs_.begin(), dirs_.end(), "data") != dirs_.end()) return {};
    return require_checkpoint(ctx, ranks_, at_step_, "dirs", "slow_storage slows the checkpoint directory");
  }

  Manifest manifested(const RunFactsView& /*run*/) const override {
    std::string evidence;
    for (const auto& [name, log] : logs_) {
      std::ifstream in(log);
      std::string line, counters, stall, injected;
      while (std::getline(in, line)) {
        if (line.find("slowed read ") != std::string::npos) counters = line;
        if (stall.empty() && line.find("stall begins") != std::string::npos) stall = line;
        if (injected.empty() && line.find("(injected)") != std::string::npos) injected = line;
      }
      long long slowed = 0, failed = 0;
      if (auto p = counters.find("slowed read "); p != std::string::npos) {
        long long r = 0, w = 0, m = 0;
        std::sscanf(counters.c_str() + p, "slowed read %lld, write %lld, metadata %lld", &r, &w, &m);
        slowed = r + w + m;
      }
      if (auto p = counters.find(" failed with"); p != std::string::npos) {
        auto q = counters.rfind("; ", p);
        if (q != std::string::npos) failed = std::atoll(counters.c_str() + q + 2);
      }
      if (slowed > 0 || failed > 0 || !stall.empty()) {
        const auto c = counters.find(": ops seen");
        evidence += (evidence.empty() ? "" : "; ") + name + ": " +
                    (c != std::string::npos ? counters.substr(c + 2) : std::string("a stall began")) +
                    (stall.empty() ? "" : " (a stall began)");
      }
    }
    if (!evidence.empty()) return {true, evidence};
    return {false, logs_.empty() ? std::string("no slow file system was mounted")
                                 : "no operation of the targeted ranks was slowed, stalled or failed after the trigger"};
  }

  std::string unsupported_reason(const HostInfo& host) const override {
    if (!host.fuse) return "needs FUSE (/dev/fuse is missing)";
    if (!host.is_root) return "needs root to mount the FUSE file system over the run's directories for all ranks";
    if (slowfs_binary().empty())
      return "hanglab_slowfs is not built (libfuse3-dev was missing when configuring; set HANGLAB_SLOWFS to use one)";
    return {};
  }

  // The first prepared rank mounts every chosen directory (they are shared by all ranks),
  // before any rank is exec'd: the runner prepares all ranks, then launches.
  void prepare_rank(int /*rank*/, LaunchSpec& spec) override {
    if (prepared_) return;
    prepared_ = true;
    for (const auto& d : dirs_) {
      const char* var = d == "data" ? "HANGLAB_DATA_DIR" : "HANGLAB_CKPT_DIR";
      auto it = spec.env.find(var);
      if (it == spec.env.end() || it->second.empty()) continue;  // nothing hanglab-managed to slow down
      std::string run_dir;
      if (auto r = spec.env.find("HANGLAB_RUN_DIR"); r != spec.env.end()) run_dir = r->second;
      start(d, it->second, run_dir.empty() ? fs::path(it->second).parent_path().string() : run_dir);
    }
  }

  std::string fire(Job& /*job*/) override {
    if (mounts_.empty()) return "no directory mounted";
    std::string detail;
    for (auto& m : mounts_) {
      // Only lines written after the signal count: the log may hold an earlier daemon's.
      std::error_code ec;
      const auto before = fs::file_size(m.log, ec);
      const bool sent = m.alive() && ::kill(m.pid, SIGUSR2) == 0;
      // The signal is taken asynchronously; wait (bounded) for the daemon to log that it
      // is active, so the fault's recorded time is when operations really start to slow.
      bool confirmed = false;
      for (int i = 0; sent && i < 200 && !confirmed; ++i) {
        std::ifstream in(m.log);
        in.seekg(ec ? 0 : static_cast<std::streamoff>(before));
        std::stringstream text;
        text << in.rdbuf();
        confirmed = text.str().find("slowfs " + m.dir + ": active (") != std::string::npos;
        if (!confirmed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      detail += (detail.empty() ? "" : "; ") +
                fmt::format("{} ({}) {}", m.dir, m.name,
                            !sent ? "NOT slowed: its file system daemon is gone"
                                  : confirmed ? "slowed" : "signalled (activation not confirmed within 1 s)");
    }
    std::string who;
    for (int r : ranks_) who += (who.empty() ? "" : ",") + std::to_string(r);
    detail += fmt::format(" for rank(s) {}: {} ops wait {} ms", who, ops_, delay_ms_);
    if (jitter_ms_ > 0) detail += fmt::format(" + 0..{} ms", jitter_ms_);
    if (stall_s_ > 0) detail += fmt::format(", the first one opens a {:.1f} s stall", stall_s_);
    if (error_ != "none") detail += fmt::format(", then fail with {}", error_);
    return detail + " (hanglab_slowfs, FUSE passthrough)";
  }

  // Stall begin/end and injected errors from the daemons' logs, for harness.jsonl.
  std::string tick(Job& /*job*/, double /*since_fire_s*/) override {
    std::string detail;
    for (auto& m : mounts_) {
      std::ifstream in(m.log);
      if (!in) continue;
      in.seekg(m.log_offset);
      std::string line;
      while (std::getline(in, line)) {
        if (in.eof()) break;  // a line still being written; read it next time
        m.log_offset = in.tellg();
        if (line.find("stall begins") != std::string::npos || line.find("stall ends") != std::string::npos ||
            line.find("released from the stall") != std::string::npos ||
            (line.find("(injected)") != std::string::npos && m.errors_reported++ == 0)) {
          const auto colon = line.find(": ", line.find(" slowfs "));
          detail += (detail.empty() ? "" : "; ") + m.name + ": " +
                    (colon == std::string::npos ? line : line.substr(colon + 2));
        }
      }
    }
    return detail;
  }

  void revert(Job& /*job*/) override {
    std::string problems;
    for (auto& m : mounts_) {
      if (std::string p = stop(m); !p.empty()) problems += (problems.empty() ? "" : "; ") + p;
    }
    mounts_.clear();
    if (!problems.empty()) throw std::runtime_error("slow_storage revert: " + problems);
  }

 private:
  struct Mount {
    std::string name;  // data | ckpt
    std::string dir;
    std::string log;
    pid_t pid = 0;
    bool reaped = false;
    std::streamoff log_offset = 0;
    int errors_reported = 0;
    int mount_id = 0, proc_id = 0;  // entries in the run state (0 = none)
    // Still running and still our child: the supervisor's waitpid(-1) runs on this same
    // thread, so nobody reaps it between this check and a kill.
    bool alive() {
      if (reaped || pid <= 0) return false;
      int st = 0;
      const pid_t r = ::waitpid(pid, &st, WNOHANG);
      if (r == 0) return true;
      reaped = true;  // exited (reaped now) or already reaped by the supervisor (ECHILD)
      return false;
    }
  };

  void start(const std::string& name, const std::string& dir, const std::string& run_dir) {
    const std::string bin = slowfs_binary();
    if (bin.empty()) throw std::runtime_error("slow_storage: hanglab_slowfs not found");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error(fmt::format("slow_storage: cannot create {}: {}", dir, ec.message()));
    if (auto m = mount_at(0, dir); m && m->fs_type == kFsType) {
      throw std::runtime_error(fmt::format("slow_storage: {} already has a hanglab_slowfs mount", dir));
    }
    Mount m;
    m.name = name;
    m.dir = dir;
    m.log = (fs::path(run_dir) / fmt::format("slowfs-{}.log", name)).string();
    m.log_offset = static_cast<std::streamoff>(fs::file_size(m.log, ec));  // 0 when new; ec then set
    if (ec) m.log_offset = 0;
    std::string ranks;
    for (int r : ranks_) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    std::vector<std::string> argv = {bin,
                                     "--source", dir,
                                     "--mountpoint", dir,
                                     "--delay-ms", std::to_string(delay_ms_),
                                     "--jitter-ms", std::to_string(jitter_ms_),
                                     "--stall-s", fmt::format("{}", stall_s_),
                                     "--error", error_,
                                     "--ops", ops_,
                                     "--ranks", ranks.empty() ? "all" : ranks,
                                     "--log", m.log,
                                     "--ready-fd", "3"};
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("slow_storage: pipe2: ") + std::strerror(errno));
    }
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    char env_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    char* envp[] = {env_path, nullptr};
    // The mount is written down before the daemon can make it; the daemon right after fork.
    if (state()) m.mount_id = state()->mount(dir, kFsType);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      ::close(ready[0]);
      ::close(ready[1]);
      if (state()) state()->released(m.mount_id);
      throw std::runtime_error(std::string("slow_storage: fork: ") + std::strerror(err));
    }
    if (pid == 0) {
      // Own process group: Ctrl-C on the terminal reaches only hanglab, which then
      // reverts in order. SIGTERM on the harness's death: the daemon detaches its mount.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) _exit(1);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP, SIGUSR2}) ::signal(s, SIG_DFL);
      if (ready[1] != 3) {
        ::dup2(ready[1], 3);  // dup2 clears O_CLOEXEC on the copy
      } else {
        ::fcntl(3, F_SETFD, 0);
      }
      const int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(devnull, 0);
      const int log = ::open(m.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(log >= 0 ? log : devnull, 1);
      ::dup2(log >= 0 ? log : devnull, 2);
      ::close_range(4, ~0U, 0);
      ::execve(cargv[0], cargv.data(), envp);
      _exit(127);
    }
    ::setpgid(pid, pid);
    register_helper_process(pid);
    if (state()) m.proc_id = state()->process(pid, "hanglab_slowfs on " + dir);
    ::close(ready[1]);
    m.pid = pid;
    std::string answer;
    const double deadline = mono_s() + 10;
    while (answer.find('\n') == std::string::npos && mono_s() < deadline) {
      pollfd p{ready[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[512];
      const ssize_t n = ::read(ready[0], buf, sizeof buf);
      if (n <= 0) break;
      answer.append(buf, static_cast<size_t>(n));
    }
    ::close(ready[0]);
    mounts_.push_back(m);
    logs_.emplace_back(name, m.log);
    if (answer.rfind("ready", 0) != 0) {
      stop(mounts_.back());
      mounts_.pop_back();
      throw std::runtime_error(fmt::format("slow_storage: hanglab_slowfs did not mount {}: {}", dir,
                                           answer.empty() ? "no answer within 10 s (see " + m.log + ")" : answer));
    }
    auto seen = mount_at(0, dir);
    if (!seen || seen->fs_type != kFsType) {
      stop(mounts_.back());
      mounts_.pop_back();
      throw std::runtime_error(
          fmt::format("slow_storage: {} reported ready but no {} mount is at {}", bin, kFsType, dir));
    }
  }

  // Unmounts (lazily when busy) and stops the daemon. Returns what is left, or "".
  std::string stop(Mount& m) {
    std::string problem;
    for (int attempt = 0; attempt < 4; ++attempt) {
      auto seen = mount_at(0, m.dir);
      if (!seen || seen->fs_type != kFsType) break;
      if (::umount2(m.dir.c_str(), 0) == 0) continue;
      const int err = errno;
      if (err == EBUSY && ::umount2(m.dir.c_str(), MNT_DETACH) == 0) continue;
      problem = fmt::format("umount2({}) failed: {} (errno {})", m.dir, std::strerror(err), err);
    }
    if (auto seen = mount_at(0, m.dir); seen && seen->fs_type == kFsType && problem.empty()) {
      problem = fmt::format("{} is still mounted", m.dir);
    }
    if (m.alive()) {
      // The unmount ends its FUSE loop; SIGTERM is the fallback, SIGKILL the last resort.
      const double deadline = mono_s() + 3;
      bool termed = false;
      while (m.alive()) {
        if (mono_s() > deadline) {
          ::kill(m.pid, SIGKILL);
          while (::waitpid(m.pid, nullptr, 0) < 0 && errno == EINTR) {
          }
          m.reaped = true;
          break;
        }
        if (!termed && mono_s() > deadline - 2.5) {
          ::kill(m.pid, SIGTERM);
          termed = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    if (state()) {
      if (m.proc_id) state()->released(m.proc_id), m.proc_id = 0;
      if (m.mount_id && problem.empty()) state()->released(m.mount_id), m.mount_id = 0;
    }
    return problem;
  }

  std::vector<int> ranks_;
  std::vector<std::string> dirs_;
  std::string ops_ = "all";
  long long delay_ms_ = 50;
  long long jitter_ms_ = 0;
  double stall_s_ = 0;
  std::string error_ = "none";
  bool prepared_ = false;
  int at_step_ = 1;
  std::vector<Mount> mounts_;
  std::vector<std::pair<std::string, std::string>> logs_;  // dir name -> daemon log, kept after revert
};

}  // namespace

InjectorInfo slow_storage_info() {
  return {"slow_storage",
          "the run's data and/or checkpoint storage gets slow, stalls or fails for the chosen ranks (FUSE passthrough)",
          "hanglab_slowfs, a FUSE passthrough file system mounted over HANGLAB_DATA_DIR / HANGLAB_CKPT_DIR before "
          "launch, slows only the I/O of processes whose RANK is in `ranks`; the trigger (SIGUSR2) starts the "
          "delays, the one-time stall and the errors; revert unmounts (lazily if busy) and stops it; logs in "
          "<run_dir>/slowfs-<dir>.log",
          slow_storage_keys(), [] { return std::make_unique<SlowStorage>(); }};
}

}  // namespace hanglab
