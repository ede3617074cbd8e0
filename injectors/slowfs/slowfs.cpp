// hanglab_slowfs: the FUSE passthrough file system behind the slow_storage fault. It is
// mounted ON TOP of a directory (a run's data/ or ckpt/) and passes every operation
// through to that same directory underneath, reached through a descriptor opened before
// the mount covered it. The workload keeps its paths and needs no help: its I/O simply
// becomes slow, stalls or fails, as on an overloaded NFS/Lustre/object-store mount.
//
// Only the I/O of the chosen ranks is affected: the caller of each FUSE request is
// identified by the RANK variable in the environment of its process
// (/proc/<tid>/environ; data-loader workers inherit it), so one shared directory can
// be slow for rank 1 and normal for the others. Processes without RANK (the harness)
// pass straight through.
//
// Behaviour (all of it only once ACTIVE: from --active, or from SIGUSR2, which the
// injector sends when the fault's trigger is due):
//   --delay-ms/--jitter-ms  every affected operation waits delay + uniform(0..jitter) ms;
//   --stall-s               one stall: the first affected operation after activation
//                           opens a window of that many seconds, and every affected
//                           operation arriving in it waits until it closes;
//   --error EIO|ENOSPC      affected operations fail with that errno (after any wait);
//   --ops read|write|all    which operations are affected: read = read/readdir; write =
//                           write, create, mkdir, unlink, rename, truncate, fsync...;
//                           all = those plus metadata (getattr, open, flush, statfs...).
// A wait ends early, with EINTR, when the waiting process has a fatal signal pending
// (SIGKILL, or SIGTERM/SIGINT/SIGHUP/SIGQUIT it does not catch): a process blocked in a
// FUSE request cannot die until the request is answered, and teardown must not wait for
// a 60 s stall. Stop signals (a debugger attaching for a stack) do not end a wait.
//
// Lifetime: SIGTERM/SIGINT/SIGHUP (also the parent-death signal the injector sets) make
// it detach its mount (umount2 MNT_DETACH) and exit, so the mount never outlives the
// harness. --ready-fd gets "ready\n" once the mount is live, or "error: ...\n".
// --log receives start, activation, stall and error events and a stats line every 5 s
// while counters change: the evidence of what the storage did.
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace hanglab {
namespace {

enum class OpClass { kRead, kWrite, kMeta };

struct Settings {
  std::string source;
  std::string mountpoint;
  std::string log_path;
  int ready_fd = -1;
  int delay_ms = 0;
  int jitter_ms = 0;
  double stall_s = 0;
  int error = 0;  // errno to return, 0 = none
  std::string error_name = "none";
  std::string ops = "all";
  std::set<int> ranks;  // empty = every process that has RANK
  bool all_ranks = false;
  bool active = false;
};

struct Stats {
  std::atomic<long> seen[3] = {0, 0, 0};
  std::atomic<long> delayed[3] = {0, 0, 0};
  std::atomic<long> failed{0};
  std::atomic<long> delay_ms_total{0};
};

Settings g_set;
Stats g_stats;
int g_base = -1;  // the directory underneath the mount
std::atomic<bool> g_active{false};
std::atomic<bool> g_stall_armed{false};
std::atomic<bool> g_stopping{false};
std::mutex g_stall_mutex;
double g_stall_until = 0;  // monotonic seconds; guarded by g_stall_mutex
bool g_stall_logged_end = true;
std::mutex g_log_mutex;
FILE* g_log = nullptr;
std::mutex g_rank_mutex;
std::map<pid_t, std::pair<unsigned long long, int>> g_rank_of_tid;  // tid -> (start time, rank or -1)
std::atomic<long> g_errors_logged{0};

double mono_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

__attribute__((format(printf, 1, 2))) void log_line(const char* fmt, ...) {
  char body[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(body, sizeof body, fmt, args);
  va_end(args);
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  tm utc{};
  ::gmtime_r(&tv.tv_sec, &utc);
  char stamp[40];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::lock_guard<std::mutex> lock(g_log_mutex);
  FILE* out = g_log != nullptr ? g_log : stderr;
  std::fprintf(out, "%s.%06ldZ slowfs %s: %s\n", stamp, static_cast<long>(tv.tv_usec), g_set.mountpoint.c_str(), body);
  std::fflush(out);
}

const char* class_name(OpClass c) {
  switch (c) {
    case OpClass::kRead: return "read";
    case OpClass::kWrite: return "write";
    case OpClass::kMeta: return "metadata";
  }
  return "?";
}

// Field 22 of /proc/<tid>/stat: when the task started (clock ticks since boot); 0 when
// gone. Pairs with the tid so a recycled tid is never taken for the old process.
unsigned long long start_time(pid_t tid) {
  const std::string path = "/proc/" + std::to_string(tid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may contain spaces
  if (p == nullptr) return 0;
  unsigned long long v = 0;
  // After ") ": state is field 3, start time field 22.
  int field = 2;
  for (const char* q = p + 1; *q != '\0'; ++q) {
    if (*q == ' ') {
      ++field;
      if (field == 22) {
        v = std::strtoull(q + 1, nullptr, 10);
        break;
      }
    }
  }
  return v;
}

// RANK=<n> from the environment of the calling thread's process; -1 when absent.
// /proc/<tid>/environ is the environment the process was exec'd with, which is where
// the launcher puts RANK (a later setenv() in the process does not show there).
int rank_of(pid_t tid) {
  if (tid <= 0) return -1;
  const unsigned long long started = start_time(tid);
  {
    std::lock_guard<std::mutex> lock(g_rank_mutex);
    auto it = g_rank_of_tid.find(tid);
    if (it != g_rank_of_tid.end() && it->second.first == started) return it->second.second;
  }
  int rank = -1;
  const std::string path = "/proc/" + std::to_string(tid) + "/environ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::string env;
    char buf[8192];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) env.append(buf, static_cast<size_t>(n));
    ::close(fd);
    size_t pos = 0;
    while (pos < env.size()) {
      const size_t end = env.find('\0', pos);
      const std::string kv = env.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      if (kv.rfind("RANK=", 0) == 0) {
        char* stop = nullptr;
        const long v = std::strtol(kv.c_str() + 5, &stop, 10);
        if (stop != kv.c_str() + 5 && *stop == '\0' && v >= 0) rank = static_cast<int>(v);
        break;
      }
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }
  std::lock_guard<std::mutex> lock(g_rank_mutex);
  if (g_rank_of_tid.size() > 100000) g_rank_of_tid.clear();  // bound the cache on long runs
  g_rank_of_tid[tid] = {started, rank};
  return rank;
}

uint64_t hex_mask(const std::string& status, const char* key) {
  const size_t p = status.find(key);
  if (p == std::string::npos) return 0;
  return std::strtoull(status.c_str() + p + std::strlen(key), nullptr, 16);
}

// True when the thread has a signal pending that will kill its process: a FUSE request
// it waits in must then be answered at once, or the kernel cannot let it die.
bool caller_dying(pid_t tid) {
  const std::string path = "/proc/" + std::to_string(tid) + "/status";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // gone
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return true;
  const std::string status(buf, static_cast<size_t>(n));
  const uint64_t pending = hex_mask(status, "SigPnd:\t") | hex_mask(status, "ShdPnd:\t");
  const uint64_t handled = hex_mask(status, "SigCgt:\t") | hex_mask(status, "SigIgn:\t");
  auto bit = [](int sig) { return uint64_t{1} << (sig - 1); };
  if (pending & bit(SIGKILL)) return true;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2}) {
    if ((pending & bit(sig)) && !(handled & bit(sig))) return true;
  }
  return false;
}

// Sleeps until `until` (monotonic), in short slices so a dying caller is let go.
// Returns false when the wait was cut short.
bool wait_until(double until, pid_t tid) {
  while (!g_stopping.load()) {
    const double left = until - mono_s();
    if (left <= 0) return true;
    if (tid > 0 && caller_dying(tid)) return false;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, 0.02)));
  }
  return false;
}

bool in_scope(OpClass c) {
  if (g_set.ops == "all") return true;
  if (g_set.ops == "read") return c == OpClass::kRead;
  return c == OpClass::kWrite;
}

// The fault, applied at the start of every operation. Returns 0 to go on with the real
// operation, or a negative errno to answer with.
int inject(OpClass c, const char* op, const char* path) {
  g_stats.seen[static_cast<int>(c)]++;
  if (!g_active.load() || !in_scope(c)) return 0;
  const fuse_context* ctx = fuse_get_context();
  const pid_t tid = ctx != nullptr ? ctx->pid : 0;
  const int rank = rank_of(tid);
  if (rank < 0 || (!g_set.all_ranks && g_set.ranks.count(rank) == 0)) return 0;
  g_stats.delayed[static_cast<int>(c)]++;
  const double t0 = mono_s();

  if (g_set.stall_s > 0) {
    double until = 0;
    {
      std::lock_guard<std::mutex> lock(g_stall_mutex);
      if (g_stall_armed.exchange(false)) {
        g_stall_until = t0 + g_set.stall_s;
        g_stall_logged_end = false;
        log_line("stall begins: %s %s (%s op) by rank %d (tid %d): every %s operation of the chosen ranks waits "
                 "%.1f s",
                 op, path, class_name(c), rank, static_cast<int>(tid), g_set.ops.c_str(), g_set.stall_s);
      }
      until = g_stall_until;
    }
    if (t0 < until && !wait_until(until, tid)) {
      log_line("%s %s by rank %d (tid %d) released from the stall after %.1f s: the process is being killed", op, path,
               rank, static_cast<int>(tid), mono_s() - t0);
      return -EINTR;
    }
    std::lock_guard<std::mutex> lock(g_stall_mutex);
    if (!g_stall_logged_end && mono_s() >= g_stall_until) {
      g_stall_logged_end = true;
      log_line("stall ends after %.1f s (%s %s by rank %d was waiting)", g_set.stall_s, op, path, rank);
    }
  }
  if (g_set.delay_ms > 0 || g_set.jitter_ms > 0) {
    thread_local std::mt19937 rng(static_cast<unsigned>(tid) * 2654435761u + 17u);
    const int extra = g_set.jitter_ms > 0 ? std::uniform_int_distribution<int>(0, g_set.jitter_ms)(rng) : 0;
    if (!wait_until(mono_s() + (g_set.delay_ms + extra) / 1000.0, tid)) return -EINTR;
  }
  g_stats.delay_ms_total += static_cast<long>((mono_s() - t0) * 1000);
  if (g_set.error != 0) {
    g_stats.failed++;
    if (g_errors_logged++ < 20) {
      log_line("%s %s by rank %d (tid %d) fails with %s (injected)", op, path, rank, static_cast<int>(tid),
               g_set.error_name.c_str());
    }
    return -g_set.error;
  }
  return 0;
}

// Paths arrive absolute from the mount's root; the real directory is g_base.
const char* rel(const char* path) { return path[1] == '\0' ? "." : path + 1; }

int neg_errno(int r) { return r < 0 ? -errno : r; }

#define INJECT(cls, op, path)                        \
  do {                                               \
    if (int inj = inject(cls, op, path); inj != 0) { \
      return inj;                                    \
    }                                                \
  } while (0)

void* fs_init(fuse_conn_info* /*conn*/, fuse_config* cfg) {
  cfg->use_ino = 1;
  // Unlinking a file that is still open removes it for real (no .fuse_hidden files
  // left in the run's directories).
  cfg->hard_remove = 1;
  cfg->negative_timeout = 0;
  return nullptr;
}

int fs_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
  INJECT(OpClass::kMeta, "getattr", path);
  if (fi != nullptr) return neg_errno(::fstat(static_cast<int>(fi->fh), st));
  return neg_errno(::fstatat(g_base, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

int fs_access(const char* path, int mask) {
  INJECT(OpClass::kMeta, "access", path);
  return neg_errno(::faccessat(g_base, rel(path), mask, 0));
}

int fs_readlink(const char* path, char* buf, size_t size) {
  INJECT(OpClass::kMeta, "readlink", path);
  const ssize_t n = ::readlinkat(g_base, rel(path), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

int fs_mknod(const char* path, mode_t mode, dev_t dev) {
  INJECT(OpClass::kWrite, "mknod", path);
  return neg_errno(::mknodat(g_base, rel(path), mode, dev));
}

int fs_mkdir(const char* path, mode_t mode) {
  INJECT(OpClass::kWrite, "mkdir", path);
  return neg_errno(::mkdirat(g_base, rel(path), mode));
}

int fs_unlink(const char* path) {
  INJECT(OpClass::kWrite, "unlink", path);
  return neg_errno(::unlinkat(g_base, rel(path), 0));
}

int fs_rmdir(const char* path) {
  INJECT(OpClass::kWrite, "rmdir", path);
  return neg_errno(::unlinkat(g_base, rel(path), AT_REMOVEDIR));
}

int fs_symlink(const char* target, const char* path) {
  INJECT(OpClass::kWrite, "symlink", path);
  return neg_errno(::symlinkat(target, g_base, rel(path)));
}

int fs_rename(const char* from, const char* to, unsigned int flags) {
  INJECT(OpClass::kWrite, "rename", to);
  return neg_errno(::renameat2(g_base, rel(from), g_base, rel(to), flags));
}

int fs_link(const char* from, const char* to) {
  INJECT(OpClass::kWrite, "link", to);
  return neg_errno(::linkat(g_base, rel(from), g_base, rel(to), 0));
}

int fs_chmod(const char* path, mode_t mode, fuse_file_info* fi) {
  INJECT(OpClass::kWrite, "chmod", path);
  if (fi != nullptr) return neg_errno(::fchmod(static_cast<int>(fi->fh), mode));
  return neg_errno(::fchmodat(g_base, rel(path), mode, 0));
}

int fs_chown(const char* path, uid_t uid, gid_t gid, fuse_file_info* fi) {
  INJECT(OpClass::kWrite, "chown", path);
  if (fi != nullptr) return neg_errno(::fchown(static_cast<int>(fi->fh), uid, gid));
  return neg_errno(::fchownat(g_base, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

int fs_truncate(const char* path, off_t size, fuse_file_info* fi) {
  INJECT(OpClass::kWrite, "truncate", path);
  if (fi != nullptr) return neg_errno(::ftruncate(static_cast<int>(fi->fh), size));
  const int fd = ::openat(g_base, rel(path), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  const int r = neg_errno(::ftruncate(fd, size));
  ::close(fd);
  return r;
}

int fs_utimens(const char* path, const timespec tv[2], fuse_file_info* fi) {
  INJECT(OpClass::kWrite, "utimens", path);
  if (fi != nullptr) return neg_errno(::futimens(static_cast<int>(fi->fh), tv));
  return neg_errno(::utimensat(g_base, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

int fs_create(const char* path, mode_t mode, fuse_file_info* fi) {
  INJECT(OpClass::kWrite, "create", path);
  const int fd = ::openat(g_base, rel(path), fi->flags | O_CREAT | O_CLOEXEC, mode);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int fs_open(const char* path, fuse_file_info* fi) {
  INJECT(OpClass::kMeta, "open", path);
  const int fd = ::openat(g_base, rel(path), fi->flags | O_CLOEXEC);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int fs_read(const char* path, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  INJECT(OpClass::kRead, "read", path);
  const ssize_t n = ::pread(static_cast<int>(fi->fh), buf, size, off);
  return n < 0 ? -errno : static_cast<int>(n);
}

int fs_write(const char* path, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  INJECT(OpClass::kWrite, "write", path);
  const ssize_t n = ::pwrite(static_cast<int>(fi->fh), buf, size, off);
  return n < 0 ? -errno : static_cast<int>(n);
}

int fs_statfs(const char* path, struct statvfs* st) {
  INJECT(OpClass::kMeta, "statfs", path);
  return neg_errno(::fstatvfs(g_base, st));
}

int fs_flush(const char* path, fuse_file_info* fi) {
  INJECT(OpClass::kMeta, "flush", path);
  // close() of a duplicate reports delayed write errors of the file system underneath
  // without closing the handle the kernel still uses.
  const int fd = ::dup(static_cast<int>(fi->fh));
  if (fd < 0) return -errno;
  return neg_errno(::close(fd));
}

int fs_release(const char* /*path*/, fuse_file_info* fi) {
  ::close(static_cast<int>(fi->fh));
  return 0;
}

int fs_fsync(const char* path, int datasync, fuse_file_info* fi) {
  INJECT(OpClass::kWrite, "fsync", path);
  const int fd = static_cast<int>(fi->fh);
  return neg_errno(datasync ? ::fdatasync(fd) : ::fsync(fd));
}

int fs_fallocate(const char* path, int mode, off_t off, off_t len, fuse_file_info* fi) {
  INJECT(OpClass::kWrite, "fallocate", path);
  return neg_errno(::fallocate(static_cast<int>(fi->fh), mode, off, len));
}

int fs_opendir(const char* path, fuse_file_info* fi) {
  INJECT(OpClass::kMeta, "opendir", path);
  const int fd = ::openat(g_base, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    ::close(fd);
    return -err;
  }
  fi->fh = reinterpret_cast<uint64_t>(d);
  return 0;
}

int fs_readdir(const char* path, void* buf, fuse_fill_dir_t filler, off_t /*off*/, fuse_file_info* fi,
               fuse_readdir_flags /*flags*/) {
  INJECT(OpClass::kRead, "readdir", path);
  DIR* d = reinterpret_cast<DIR*>(fi->fh);
  ::rewinddir(d);
  while (dirent* e = ::readdir(d)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(DTTOIF(e->d_type));
    if (filler(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  }
  return 0;
}

int fs_releasedir(const char* /*path*/, fuse_file_info* fi) {
  ::closedir(reinterpret_cast<DIR*>(fi->fh));
  return 0;
}

fuse_operations make_ops() {
  fuse_operations ops{};
  ops.init = fs_init;
  ops.getattr = fs_getattr;
  ops.access = fs_access;
  ops.readlink = fs_readlink;
  ops.mknod = fs_mknod;
  ops.mkdir = fs_mkdir;
  ops.unlink = fs_unlink;
  ops.rmdir = fs_rmdir;
  ops.symlink = fs_symlink;
  ops.rename = fs_rename;
  ops.link = fs_link;
  ops.chmod = fs_chmod;
  ops.chown = fs_chown;
  ops.truncate = fs_truncate;
  ops.utimens = fs_utimens;
  ops.create = fs_create;
  ops.open = fs_open;
  ops.read = fs_read;
  ops.write = fs_write;
  ops.statfs = fs_statfs;
  ops.flush = fs_flush;
  ops.release = fs_release;
  ops.fsync = fs_fsync;
  ops.fallocate = fs_fallocate;
  ops.opendir = fs_opendir;
  ops.readdir = fs_readdir;
  ops.releasedir = fs_releasedir;
  return ops;
}

void log_stats(const char* when) {
  log_line("%s: ops seen read %ld, write %ld, metadata %ld; slowed read %ld, write %ld, metadata %ld; %ld ms of "
           "injected wait; %ld failed with %s",
           when, g_stats.seen[0].load(), g_stats.seen[1].load(), g_stats.seen[2].load(), g_stats.delayed[0].load(),
           g_stats.delayed[1].load(), g_stats.delayed[2].load(), g_stats.delay_ms_total.load(), g_stats.failed.load(),
           g_set.error_name.c_str());
}

std::string ranks_text() {
  if (g_set.all_ranks) return "all";
  std::string s;
  for (int r : g_set.ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

void activate(const char* why) {
  if (g_active.exchange(true)) return;
  if (g_set.stall_s > 0) g_stall_armed = true;
  log_line("active (%s): %s ops of rank(s) %s: delay %d ms + 0..%d ms jitter, stall %.1f s at the first one, "
           "errors %s",
           why, g_set.ops.c_str(), ranks_text().c_str(), g_set.delay_ms, g_set.jitter_ms, g_set.stall_s,
           g_set.error_name.c_str());
}

// Signals are taken by this thread only (sigwait): SIGUSR2 activates, the others stop.
void control_thread(sigset_t set) {
  long last_total = -1;
  for (;;) {
    timespec tick{5, 0};
    const int sig = ::sigtimedwait(&set, nullptr, &tick);
    if (sig < 0) {
      const long total = g_stats.delayed[0] + g_stats.delayed[1] + g_stats.delayed[2] + g_stats.failed;
      if (g_active.load() && total != last_total) {
        last_total = total;
        log_stats("stats");
      }
      continue;
    }
    if (sig == SIGUSR2) {
      activate("SIGUSR2: the fault's trigger");
      continue;
    }
    log_line("signal %d: detaching the mount and exiting", sig);
    log_stats("final");
    g_stopping = true;
    // Lazy: the mount disappears from the namespace at once even while a process still
    // has a file open in it; the FUSE loop then ends when the kernel drops the connection.
    ::umount2(g_set.mountpoint.c_str(), MNT_DETACH);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    ::_exit(0);
  }
}

int parse_errno_name(const std::string& name) {
  if (name == "none") return 0;
  if (name == "EIO") return EIO;
  if (name == "ENOSPC") return ENOSPC;
  return -1;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "hanglab_slowfs: %s\n"
               "usage: hanglab_slowfs --source DIR --mountpoint DIR [--delay-ms N] [--jitter-ms N] [--stall-s S]\n"
               "         [--error none|EIO|ENOSPC] [--ops read|write|all] [--ranks all|R,R...] [--active]\n"
               "         [--log FILE] [--ready-fd FD]\n",
               why.c_str());
  std::exit(2);
}

void ready(const std::string& msg) {
  if (g_set.ready_fd < 0) return;
  const std::string line = msg + "\n";
  (void)!::write(g_set.ready_fd, line.data(), line.size());
  ::close(g_set.ready_fd);
  g_set.ready_fd = -1;
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--source") g_set.source = value();
      else if (a == "--mountpoint") g_set.mountpoint = value();
      else if (a == "--log") g_set.log_path = value();
      else if (a == "--ready-fd") g_set.ready_fd = std::stoi(value());
      else if (a == "--delay-ms") g_set.delay_ms = std::stoi(value());
      else if (a == "--jitter-ms") g_set.jitter_ms = std::stoi(value());
      else if (a == "--stall-s") g_set.stall_s = std::stod(value());
      else if (a == "--error") g_set.error_name = value();
      else if (a == "--ops") g_set.ops = value();
      else if (a == "--active") g_set.active = true;
      else if (a == "--ranks") {
        const std::string v = value();
        if (v == "all") {
          g_set.all_ranks = true;
        } else {
          size_t pos = 0;
          while (pos <= v.size()) {
            const size_t comma = v.find(',', pos);
            g_set.ranks.insert(std::stoi(v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
            if (comma == std::string::npos) break;
            pos = comma + 1;
          }
        }
      } else usage("unknown argument " + a);
    } catch (const std::exception&) {
      usage("bad value for " + a);
    }
  }
  if (g_set.source.empty() || g_set.mountpoint.empty()) usage("--source and --mountpoint are required");
  if (g_set.ranks.empty()) g_set.all_ranks = true;
  g_set.error = parse_errno_name(g_set.error_name);
  if (g_set.error < 0) usage("--error must be none, EIO or ENOSPC");
  if (g_set.ops != "read" && g_set.ops != "write" && g_set.ops != "all") usage("--ops must be read, write or all");
  if (g_set.delay_ms < 0 || g_set.jitter_ms < 0 || g_set.stall_s < 0) usage("durations must be >= 0");
  if (!g_set.log_path.empty()) {
    g_log = std::fopen(g_set.log_path.c_str(), "ae");
    if (g_log == nullptr) {
      ready("error: cannot open log " + g_set.log_path + ": " + std::strerror(errno));
      return 1;
    }
  }

  // Opened before the mount covers it: this descriptor keeps reaching the real directory.
  g_base = ::open(g_set.source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (g_base < 0) {
    const std::string msg = "cannot open source directory " + g_set.source + ": " + std::strerror(errno);
    log_line("%s", msg.c_str());
    ready("error: " + msg);
    return 1;
  }

  // Every thread libfuse starts inherits this mask; only control_thread takes signals.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR2}) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  const fuse_operations ops = make_ops();
  std::vector<std::string> args = {"hanglab_slowfs", "-o",
                                   "fsname=hanglab-slowfs,subtype=hanglab-slowfs,allow_other,default_permissions"};
  std::vector<char*> cargs;
  for (auto& s : args) cargs.push_back(s.data());
  fuse_args fargs = FUSE_ARGS_INIT(static_cast<int>(cargs.size()), cargs.data());
  fuse* f = fuse_new(&fargs, &ops, sizeof ops, nullptr);
  if (f == nullptr) {
    ready("error: fuse_new failed");
    return 1;
  }
  if (fuse_mount(f, g_set.mountpoint.c_str()) != 0) {
    const std::string msg = "cannot mount FUSE on " + g_set.mountpoint + " (is /dev/fuse usable, are we root?)";
    log_line("%s", msg.c_str());
    ready("error: " + msg);
    fuse_destroy(f);
    return 1;
  }
  log_line("mounted over %s (pid %d): ops %s, ranks %s, delay %d ms, jitter %d ms, stall %.1f s, error %s",
           g_set.source.c_str(),
           static_cast<int>(::getpid()), g_set.ops.c_str(), ranks_text().c_str(), g_set.delay_ms,
           g_set.jitter_ms, g_set.stall_s, g_set.error_name.c_str());
  if (g_set.active) activate("from mount");
  std::thread(control_thread, set).detach();
  ready("ready");
  const int rc = fuse_loop_mt(f, 0);
  g_stopping = true;
  log_stats("final");
  fuse_unmount(f);
  fuse_destroy(f);
  return rc == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hanglab

int main(int argc, char** argv) { return hanglab::run(argc, argv); }
