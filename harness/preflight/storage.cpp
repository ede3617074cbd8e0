#include "preflight/storage.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "util.hpp"

namespace hanglab::preflight {

namespace {

// The child: one line per step on fd `out`, then _exit. Only plain syscalls and snprintf.
[[noreturn]] void child_probe(int out, const std::string& dir, const std::string& file, long long bytes) {
  char line[160];
  auto say = [&](const char* fmtstr, auto... args) {
    const int n = std::snprintf(line, sizeof line, fmtstr, args...);
    if (n > 0) (void)!::write(out, line, static_cast<size_t>(n));
  };
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    say("err stat %d\n", errno);
    ::_exit(0);
  }
  if (!S_ISDIR(st.st_mode)) {
    say("err stat %d\n", ENOTDIR);
    ::_exit(0);
  }
  struct statvfs sv {};
  if (::statvfs(dir.c_str(), &sv) == 0)
    say("space %.0f %.0f\n", static_cast<double>(sv.f_bavail) * sv.f_frsize, static_cast<double>(sv.f_blocks) * sv.f_frsize);
  say("step open\n");
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    say("err open %d\n", errno);
    ::_exit(0);
  }
  static char chunk[1 << 20];
  std::memset(chunk, 0x5a, sizeof chunk);
  long long done = 0;
  while (done < bytes) {
    say("step write\n");
    const double t = mono_now();
    const size_t want = static_cast<size_t>(std::min<long long>(sizeof chunk, bytes - done));
    const ssize_t n = ::write(fd, chunk, want);
    if (n <= 0) {
      say("err write %d\n", n < 0 ? errno : ENOSPC);
      ::close(fd);
      ::unlink(file.c_str());
      ::_exit(0);
    }
    done += n;
    say("w %lld %.6f\n", done, mono_now() - t);
  }
  say("step fsync\n");
  const double t = mono_now();
  if (::fsync(fd) != 0) {
    say("err fsync %d\n", errno);
    ::close(fd);
    ::unlink(file.c_str());
    ::_exit(0);
  }
  say("f %.6f\n", mono_now() - t);
  ::close(fd);
  say("step unlink\n");
  if (::unlink(file.c_str()) != 0) say("err unlink %d\n", errno);
  say("done\n");
  ::_exit(0);
}

}  // namespace

StorageProbe probe_storage(const std::string& dir, const Options& opt, double timeout_s) {
  StorageProbe p;
  p.file = dir + "/.hanglab-preflight-" + std::to_string(::getpid()) + ".tmp";
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_system_error("pipe2", "storage probe");
  const pid_t pid = ::fork();
  if (pid < 0) throw_system_error("fork", "storage probe");
  if (pid == 0) {
    ::close(fds[0]);
    child_probe(fds[1], dir, p.file, std::max<long long>(opt.ckpt_probe_bytes, 1));
  }
  ::close(fds[1]);
  const double t0 = mono_now(), hard = t0 + timeout_s;
  const double budget = opt.ckpt_budget_s;
  const double ckpt = static_cast<double>(opt.ckpt_bytes > 0 ? opt.ckpt_bytes : opt.ckpt_probe_bytes);
  std::string buf, step = "stat";
  double last = t0;
  bool eof = false, stop = false;
  while (!eof && !stop) {
    const double now = mono_now();
    const double wait = std::min(hard - now, last + opt.ckpt_stall_s - now);
    if (wait <= 0) {
      p.stalled_in = step;
      p.stalled_for_s = now - last;
      p.hard_timeout = now >= hard;
      break;
    }
    pollfd pf{fds[0], POLLIN, 0};
    if (::poll(&pf, 1, static_cast<int>(std::ceil(wait * 1000))) <= 0) continue;
    char tmp[4096];
    const ssize_t n = ::read(fds[0], tmp, sizeof tmp);
    if (n <= 0) {
      eof = true;
      break;
    }
    buf.append(tmp, static_cast<size_t>(n));
    for (size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
      std::istringstream in(buf.substr(0, nl));
      buf.erase(0, nl + 1);
      std::string what;
      in >> what;
      last = mono_now();
      if (what == "err") {
        in >> p.failed_step >> p.failed_errno;
        if (p.failed_step == "stat") p.stat_errno = p.failed_errno;
      } else if (what == "space") {
        in >> p.free_bytes >> p.total_bytes;
        p.have_space = true;
      } else if (what == "step") {
        in >> step;
      } else if (what == "w") {
        double s = 0;
        in >> p.written >> s;
        p.write_s += s;
        p.slowest_step_s = std::max(p.slowest_step_s, s);
        // Already hopeless: the save of one checkpoint at this rate would outlast the budget.
        if (p.written > 0 && (mono_now() - t0) > 0.5 && ckpt * p.write_s / p.written > budget) {
          p.cut_short = true;
          stop = true;
        }
      } else if (what == "f") {
        in >> p.fsync_s;
        p.slowest_step_s = std::max(p.slowest_step_s, p.fsync_s);
      } else if (what == "done") {
        p.done = true;
      }
    }
  }
  ::close(fds[0]);
  p.elapsed_s = mono_now() - t0;
  if (!eof || stop) ::kill(pid, SIGKILL);
  // Reap it if it goes; a child in uninterruptible sleep on a dead mount may not, and is not
  // waited for (it dies with the mount, or is reaped by init once this process exits).
  for (int i = 0; i < 20; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) != 0) break;
    ::usleep(5000);
  }
  if (p.stat_errno == ENOENT || p.stat_errno == ENOTDIR || p.stat_errno == EACCES)
    throw UsageError(fmt::format("--ckpt-dir {}: {}", dir, std::strerror(p.stat_errno)));
  return p;
}

CheckResult judge_storage(const NodeCtx& ctx, const StorageProbe& p, double timeout_s) {
  CheckResult r = ctx.result("storage.ckpt");
  const Options& o = ctx.opt;
  const double ckpt = static_cast<double>(o.ckpt_bytes > 0 ? o.ckpt_bytes : o.ckpt_probe_bytes);
  const std::string ckpt_what = o.ckpt_bytes > 0 ? "--ckpt-bytes" : "the probe size (no --ckpt-bytes)";
  r.rule = fmt::format("free >= {} ({}); its save within {:.0f} s (--ckpt-budget-s); no write or fsync over {:.0f} s",
                       human_bytes(ckpt), ckpt_what, o.ckpt_budget_s, o.ckpt_stall_s);
  const std::string space = p.have_space ? fmt::format("{} free of {}", human_bytes(p.free_bytes), human_bytes(p.total_bytes))
                                         : std::string("free space unknown");
  const double t = p.write_s + p.fsync_s;
  const double rate = t > 0 ? p.written / t : 0;
  if (!p.stalled_in.empty()) {
    r.status = Status::kFail;
    const std::string left = p.written > 0 ? fmt::format("; {} left behind", p.file) : std::string();
    if (!p.hard_timeout) {
      r.measured = fmt::format("{}; no progress for {:.1f} s in {} ({} written)", space, p.stalled_for_s, p.stalled_in,
                               human_bytes(p.written));
      r.detail = fmt::format("the {} did not return within {:.0f} s (--ckpt-stall-s): a hung or stalled mount. A save "
                             "there blocks the saving rank while its peers wait in the next collective until their "
                             "timeout{}",
                             p.stalled_in, o.ckpt_stall_s, left);
    } else {
      r.measured = fmt::format("{}; the probe did not finish in its {:.1f} s (stopped in {} after {} written)", space,
                               timeout_s, p.stalled_in, human_bytes(p.written));
      r.detail = fmt::format("this storage answers too slowly to write {} in {:.1f} s (a second or more per step, or a "
                             "stall): a {} save there outlasts the collective timeouts of the saving rank's peers{}",
                             human_bytes(static_cast<double>(o.ckpt_probe_bytes)), timeout_s, human_bytes(ckpt), left);
    }
    return r;
  }
  if (!p.failed_step.empty()) {
    r.status = Status::kFail;
    r.measured = fmt::format("{}; {} failed: {} after {}", space, p.failed_step, std::strerror(p.failed_errno),
                             human_bytes(p.written));
    r.detail = p.failed_errno == ENOSPC ? "the checkpoint file system is full: the save fails with ENOSPC, the rank exits "
                                          "and its peers are left waiting"
               : p.failed_errno == EACCES || p.failed_errno == EROFS || p.failed_errno == EPERM
                   ? "the job cannot write its checkpoints here"
                   : "a save would fail the same way";
    return r;
  }
  if (p.have_space && p.free_bytes < ckpt) {
    r.status = Status::kFail;
    r.measured = space;
    r.detail = fmt::format("one checkpoint of {} does not fit: the save fails with ENOSPC", human_bytes(ckpt));
    return r;
  }
  const double projected = rate > 0 ? ckpt / rate : INFINITY;
  r.measured = fmt::format("{}; {} written + fsynced at {}/s (slowest step {:.2f} s){}", space, human_bytes(p.written),
                           human_bytes(rate), p.slowest_step_s,
                           o.ckpt_bytes > 0 ? fmt::format("; a {} save takes ~{:.1f} s", human_bytes(ckpt), projected)
                                            : std::string());
  if (p.cut_short || projected > o.ckpt_budget_s) {
    r.status = Status::kFail;
    r.detail = fmt::format("a {} save at {}/s takes ~{:.0f} s, over the {:.0f} s budget: the peers of the saving rank "
                           "time out in the collective after the save",
                           human_bytes(ckpt), human_bytes(rate), projected, o.ckpt_budget_s);
  } else if (p.slowest_step_s > o.ckpt_stall_s) {
    r.status = Status::kFail;
    r.detail = fmt::format("one step took {:.1f} s: the storage stalls", p.slowest_step_s);
  }
  return r;
}

}  // namespace hanglab::preflight
