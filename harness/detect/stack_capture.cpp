#include "detect/stack_capture.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <fmt/format.h>

#include "detect/stack_sampler.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;

void capture_stacks(const std::vector<StackCaptureTarget>& targets, const StackCaptureOptions& o) {
  struct Capture {
    int rank;
    pid_t pid;
    std::string tool;
  };
  std::vector<Capture> caps;
  // gdb and py-spy stop each rank while they read it: triage must not count the ranks'
  // silence from here on as theirs.
  o.log({{"t", unix_now()}, {"ev", "stack_capture"}, {"timeout_s", o.timeout_s}});
  const bool have_py_spy = ::system("command -v py-spy >/dev/null 2>&1") == 0;
  for (const auto& r : targets) {
    // The process state before the tool stops it: R running, S sleeping (wchan: where in
    // the kernel), D uninterruptible (I/O), T stopped (a SIGSTOP, i.e. frozen).
    std::string state, wchan;
    main_thread_state(r.pid, state, wchan);
    std::error_code ec;
    std::string exe = fs::read_symlink("/proc/" + std::to_string(r.pid) + "/exe", ec).filename().string();
    bool python = exe.rfind("python", 0) == 0;
    std::vector<std::string> argv;
    std::string tool;
    if (python && have_py_spy) {
      tool = "py-spy";
      // py-spy cannot suspend a process that is already stopped (SIGSTOP); then read
      // its memory without suspending it.
      const std::string pid = std::to_string(r.pid);
      // Nor one in an uninterruptible wait (state D, e.g. a write to stalled storage): ptrace
      // cannot stop it until the call returns.
      // A FUSE / NFS wait (wchan request_wait_answer, nfs_*) lets no SIGSTOP in either, and a
      // blocking dump that cannot stop the rank hangs: it gets half the capture time.
      const bool unstoppable = state == "D" || state == "T" || wchan.find("fuse") != std::string::npos ||
                               wchan == "request_wait_answer" || wchan.rfind("nfs", 0) == 0;
      const std::string half = fmt::format("{:.0f}", std::max(1.0, o.timeout_s / 2));
      argv = unstoppable ? std::vector<std::string>{"py-spy", "dump", "--nonblocking", "--pid", pid}
                         : std::vector<std::string>{"sh", "-c",
                                                    "timeout " + half + " py-spy dump --pid " + pid +
                                                        " || py-spy dump --nonblocking --pid " + pid};
    } else {
      tool = "gdb";
      argv = {"gdb", "-p", std::to_string(r.pid), "-batch", "-nx", "-ex", "set pagination off",
              "-ex", "thread apply all bt"};
    }
    fs::path out = o.run_dir / "ranks" / std::to_string(r.rank) / "stack.txt";
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) continue;
    std::string head = fmt::format("# {} of rank {} (pid {}) at {}\n# state: {} wchan: {}\n", tool, r.rank, r.pid,
                                   iso_time(unix_now()), state.empty() ? "?" : state, wchan.empty() ? "-" : wchan);
    o.log({{"t", unix_now()}, {"ev", "proc_state"}, {"rank", r.rank}, {"pid", r.pid}, {"state", state},
           {"wchan", wchan}});
    (void)!::write(fd, head.data(), head.size());
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execvp(cargv[0], cargv.data());
      _exit(127);
    }
    ::close(fd);
    if (pid > 0) {
      ::setpgid(pid, pid);
      if (o.on_spawn) o.on_spawn(pid, fmt::format("{} on rank {}", tool, r.rank));
      caps.push_back({r.rank, pid, tool});
    }
  }
  // All captures run in parallel; the whole batch is bounded by timeout_s.
  double deadline = mono_now() + o.timeout_s;
  std::vector<bool> done(caps.size(), false);
  size_t left = caps.size();
  while (left > 0) {
    for (size_t i = 0; i < caps.size(); ++i) {
      if (done[i]) continue;
      int st = 0;
      if (::waitpid(caps[i].pid, &st, WNOHANG) == caps[i].pid) {
        done[i] = true;
        --left;
        bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        o.log({{"t", unix_now()}, {"ev", "stack"}, {"rank", caps[i].rank},
               {"file", fmt::format("ranks/{}/stack.txt", caps[i].rank)}, {"tool", caps[i].tool}, {"ok", ok}});
      }
    }
    if (left == 0) break;
    if (mono_now() > deadline) {
      for (size_t i = 0; i < caps.size(); ++i) {
        if (done[i]) continue;
        ::kill(-caps[i].pid, SIGKILL);
        ::waitpid(caps[i].pid, nullptr, 0);
        o.log({{"t", unix_now()}, {"ev", "stack"}, {"rank", caps[i].rank},
               {"file", fmt::format("ranks/{}/stack.txt", caps[i].rank)}, {"tool", caps[i].tool}, {"ok", false},
               {"detail", "timed out"}});
      }
      break;
    }
    if (o.pump) o.pump(0.05);
  }
}

}  // namespace hanglab
