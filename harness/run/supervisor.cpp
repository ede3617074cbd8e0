#include "run/supervisor.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "detect/backend_error.hpp"
#include "detect/exit_monitor.hpp"
#include "detect/flight_recorder.hpp"
#include "detect/harness_watchdog.hpp"
#include "detect/heartbeat_loss.hpp"
#include "detect/snapshot.hpp"
#include "detect/stack_capture.hpp"
#include "detect/stack_sampler.hpp"
#include "process_control.hpp"
#include "run/state.hpp"
#include "run/proc_exit.hpp"
#include "run/launchers/launchers.hpp"
#include "run/rank_env.hpp"
#include "triage/logs/progress.hpp"
#include "triage/logs/parse.hpp"

extern char** environ;

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

// RankWatch (detect/detector.hpp): what the detectors see of the rank, kept current here.
struct Supervisor::Rank : RankWatch {
  bool launched = false;
  int out_fd = -1, err_fd = -1;
  std::string out_buf, err_buf;
  int out_log = -1, err_log = -1;
  fs::path trace_path;
  off_t trace_off = 0;
  std::string trace_partial;
  double last_redraw_t = 0;  // when the last in-place (\r) progress redraw was logged
  // When bytes last arrived on stdout / stderr: an unterminated tail (a progress bar's
  // newest redraw) flushed at EOF is dated when it was written, not when the rank died.
  double out_data_t = 0, err_data_t = 0;
  bool exit_by_teardown = false;
  // Launcher mode: the rank is the launcher's child, not ours.
  bool external = false;
  std::optional<int> traced_exit;       // from the trace's `exit` event
  std::optional<int> reported_code;     // from the launcher's report
  std::optional<int> reported_signal;
  std::optional<int> launcher_sent;     // the signal the launcher said it sent (torchrun's closing signal)
  std::optional<int> fault_signal;      // the signal a fault sent it (Job::fault_signalled)
  // rank_fifos: the write ends held here, so a rank's exit (or restart) is no EOF.
  int fifo_keep_out = -1, fifo_keep_err = -1;
  off_t exec_off = 0;                   // how far ranks/<r>/exec.jsonl was read
  std::string exec_partial;
  int incarnation = 0;                  // 0 = first start; restart_count of the latest exec
  // gone_t (RankWatch): when the process died, as first seen (its pidfd turned readable, or
  // /proc said so): the time its exit is dated at, however much later its status is known.
  int pidfd = -1;                       // readable once the process has exited
  std::optional<int> proc_status;       // its wait status, read from /proc while a zombie
};

namespace {

void set_nonblock(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // a log write failure must not take the supervisor down
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

Supervisor::Supervisor(const Scenario& sc, fs::path run_dir, std::vector<LaunchSpec> specs,
                       std::vector<ArmedFault> faults, SupervisorOptions opts)
    : sc_(sc),
      dir_(std::move(run_dir)),
      specs_(std::move(specs)),
      faults_(std::move(faults)),
      opts_(opts),
      harness_log_(dir_ / "harness.jsonl") {
  run_id_ = fmt::format("{}-{}-{}", ::getpid(), static_cast<long long>(unix_now() * 1e6), sc.name);
  for (const auto& s : specs_) {
    auto r = std::make_unique<Rank>();
    r->rank = s.rank;
    ranks_.push_back(std::move(r));
  }
  // Twice a second, or five windows per limit for a short one.
  LivenessOptions lo;
  lo.interval_s = std::clamp(sc_.timeouts.progress_s / 5, 0.1, 0.5);
  watchdog_ = std::make_unique<HarnessWatchdog>(
      WatchdogLimits{sc_.timeouts.progress_s, sc_.timeouts.checkpoint_s, sc_.timeouts.eval_s}, lo);
  StackSamplerOptions so;
  so.run_dir = dir_;
  // Each Python rank every period, two dumps a second at most in all (a large job's ranks
  // take turns): a dump costs the host ~10-30 ms of CPU.
  so.period_s = opts_.stack_sample_s <= 0 ? 0 : std::max(opts_.stack_sample_s, 0.5 * static_cast<double>(specs_.size()));
  so.on_spawn = [this](pid_t pid, const std::string& what) {
    if (opts_.state) opts_.state->process(pid, what);
  };
  stacks_ = std::make_unique<StackSampler>(so);
}

std::vector<RankWatch*> Supervisor::watches() {
  std::vector<RankWatch*> v;
  for (auto& r : ranks_) v.push_back(r.get());
  return v;
}

Supervisor::~Supervisor() {
  // Normal paths tear down inside run(); this is the last line of defence on exceptions.
  if (!all_exited()) {
    try {
      teardown("error");
    } catch (...) {
    }
  }
  if (launcher_) ranks_.push_back(std::move(launcher_));  // closed with the ranks below
  for (auto& r : ranks_) {
    for (int* fd : {&r->out_fd, &r->err_fd, &r->out_log, &r->err_log, &r->pidfd, &r->fifo_keep_out, &r->fifo_keep_err})
      if (*fd >= 0) ::close(*fd), *fd = -1;
  }
  close_rank_fifos(true);
}

void Supervisor::make_rank_fifos(Rank& r, const fs::path& rdir) {
  for (const char* name : {"stdout", "stderr"}) {
    const fs::path fifo = rdir / (std::string(name) + ".fifo");
    std::error_code ec;
    fs::remove(fifo, ec);
    if (::mkfifo(fifo.c_str(), 0600) != 0) throw_system_error("mkfifo", fifo.string());
    // The read end first (a non-blocking open for reading never waits for a writer), then
    // a write end of our own: without it the pipe would report EOF whenever no
    // incarnation of the rank holds it open (before the start, between restarts).
    int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    int wr = rd >= 0 ? ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    if (rd < 0 || wr < 0) throw_system_error("open", fifo.string());
    if (std::string(name) == "stdout")
      r.out_fd = rd, r.fifo_keep_out = wr;
    else
      r.err_fd = rd, r.fifo_keep_err = wr;
  }
}

void Supervisor::close_rank_fifos(bool remove) {
  if (!opts_.rank_fifos) return;
  for (auto& r : ranks_) {
    for (int* fd : {&r->fifo_keep_out, &r->fifo_keep_err})
      if (*fd >= 0) ::close(*fd), *fd = -1;
    if (remove && r->rank >= 0) {
      std::error_code ec;
      for (const char* name : {"stdout.fifo", "stderr.fifo"})
        fs::remove(dir_ / "ranks" / std::to_string(r->rank) / name, ec);
    }
  }
}

int Supervisor::world_size() const { return static_cast<int>(ranks_.size()); }
pid_t Supervisor::pid_of(int rank) const {
  return rank >= 0 && rank < world_size() ? ranks_[rank]->pid : 0;
}
bool Supervisor::alive(int rank) const { return rank >= 0 && rank < world_size() && ranks_[rank]->alive; }
std::string Supervisor::run_dir() const { return dir_.string(); }

bool Supervisor::all_exited() const {
  for (const auto& r : ranks_)
    if (r->alive) return false;
  return !launcher_ || !launcher_->alive;
}

void Supervisor::fault_signalled(int rank, int signo) {
  if (rank >= 0 && rank < static_cast<int>(ranks_.size()) && ranks_[rank]) ranks_[rank]->fault_signal = signo;
}

void Supervisor::launch(Rank& r, const LaunchSpec& spec) {
  const bool is_launcher = r.rank < 0;
  fs::path rdir = is_launcher ? dir_ : dir_ / "ranks" / std::to_string(r.rank);
  fs::create_directories(rdir);
  if (!is_launcher) r.trace_path = rdir / "events.jsonl";
  r.out_log = ::open((rdir / (is_launcher ? "launcher.stdout.log" : "stdout.log")).c_str(),
                     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  r.err_log = ::open((rdir / (is_launcher ? "launcher.stderr.log" : "stderr.log")).c_str(),
                     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (r.out_log < 0 || r.err_log < 0) throw_system_error("open", "rank " + std::to_string(r.rank) + " logs");

  std::vector<std::string> argv = spec.wrapper;
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  if (!is_launcher) env["HANGLAB_TRACE"] = r.trace_path.string();
  env["HANGLAB_RUN_ID"] = run_id_;
  if (!spec.hooks.empty()) env["HANGLAB_HOOKS"] = spec.hooks.dump();
  std::vector<std::string> env_strs;
  for (const auto& [k, v] : env) env_strs.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env_strs) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  int outp[2], errp[2];
  if (::pipe2(outp, O_CLOEXEC) != 0 || ::pipe2(errp, O_CLOEXEC) != 0) throw_system_error("pipe2", "launch");
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_system_error("fork", "launch rank " + std::to_string(r.rank));
  if (pid == 0) {
    // Own process group: teardown signals the whole group, and Ctrl-C on the terminal
    // reaches only hanglab, which then tears down in order.
    child_after_fork(parent);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(outp[1], 1);
    ::dup2(errp[1], 2);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    std::string msg = fmt::format("hanglab: exec {} failed: {}\n", cargv[0], std::strerror(errno));
    (void)!::write(2, msg.data(), msg.size());
    _exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so the group exists before we may signal it
  if (opts_.state) opts_.state->process(pid, is_launcher ? std::string("launcher") : fmt::format("rank {}", r.rank));
  ::close(outp[1]);
  ::close(errp[1]);
  r.out_fd = outp[0];
  r.err_fd = errp[0];
  set_nonblock(r.out_fd);
  set_nonblock(r.err_fd);
  r.pid = pid;
  if (!is_launcher) r.pidfd = open_pidfd(pid);
  r.launched = r.alive = true;
  r.last_hb_mono = mono_now();
  json argv_json = argv;
  harness_log_.write({{"t", unix_now()}, {"ev", "launch"}, {"rank", r.rank}, {"pid", pid}, {"argv", argv_json}});
}

void Supervisor::launch_all() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Every rank and whatever it starts inherits HANGLAB_RUN_ID: the sweep finds them by it.
  if (opts_.state) opts_.state->env_marker("HANGLAB_RUN_ID", run_id_);
  facts_.start_t = unix_now();
  launch_mono_ = mono_now();
  watchdog_->start(launch_mono_);
  if (!opts_.launcher) {
    for (auto& r : ranks_) launch(*r, specs_[r->rank]);
    return;
  }
  for (auto& r : ranks_) {
    fs::path rdir = dir_ / "ranks" / std::to_string(r->rank);
    fs::create_directories(rdir);
    r->trace_path = rdir / "events.jsonl";
    r->out_log = ::open((rdir / "stdout.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    r->err_log = ::open((rdir / "stderr.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    r->external = r->launched = r->alive = true;  // alive = expected; its pid comes with its trace
    if (opts_.rank_fifos) make_rank_fifos(*r, rdir);
    r->last_hb_mono = launch_mono_;
  }
  launcher_ = std::make_unique<Rank>();
  launcher_->rank = -1;
  launch(*launcher_, *opts_.launcher);
}

void Supervisor::on_launcher_line(const std::string& line, bool is_err, double t) {
  // `[1,N]<stdout>:text` (Open MPI --tag-output) belongs to rank N.
  if (line.size() > 3 && line[0] == '[') {
    int job = 0, rank = -1, n = 0;
    char stream[8] = {0};
    if (sscanf(line.c_str(), "[%d,%d]<%7[a-z]>:%n", &job, &rank, stream, &n) == 3 && n > 0 && rank >= 0 &&
        rank < world_size()) {
      on_output_line(*ranks_[rank], line.substr(static_cast<size_t>(n)), std::string(stream) == "stderr", t);
      return;
    }
  }
  // Slurm cancels the whole step from outside (its time limit, scancel): srun says "Job
  // step aborted", slurmstepd "*** STEP 1.0 ON vm CANCELLED AT ... DUE TO TIME LIMIT ***"
  // (labelled as task 0's line), and then it signals every task: those deaths are the
  // launcher's teardown, not a rank's failure. (--kill-on-bad-exit's own cancel after a
  // task failed prints "CANCELLED AT <time> ***" without a reason and no "aborted": the
  // deaths it causes are echoes of that failure already.)
  if (opts_.labelled_output && launcher_cancel_t_ == 0 &&
      (line.find("srun: Job step aborted") != std::string::npos ||
       (line.find(" CANCELLED AT ") != std::string::npos && line.find(" DUE TO ") != std::string::npos))) {
    launcher_cancel_t_ = t;
    note_launcher_abort(t);
  }
  // `N: text` (srun -l) belongs to rank N; srun's own lines start "srun: ". slurmstepd's
  // notices reach srun on task 0's stream ("0: slurmstepd-vm: error: *** STEP ...
  // CANCELLED ..."): kept there, as srun -l shows them (plain-log triage reads Slurm's
  // time limit from rank 0's log as it would from a job's output file).
  if (opts_.labelled_output && !line.empty() && isdigit(static_cast<unsigned char>(line[0]))) {
    int rank = -1, n = 0;
    if (sscanf(line.c_str(), "%d: %n", &rank, &n) == 1 && n > 0 && rank >= 0 && rank < world_size()) {
      on_output_line(*ranks_[rank], line.substr(static_cast<size_t>(n)), is_err, t);
      return;
    }
  }
  write_all(is_err ? launcher_->err_log : launcher_->out_log, iso_time(t) + " " + line + "\n");
  // srun names each task that ended badly, by its exit code or signal.
  if (opts_.labelled_output)
    if (auto e = parse_srun_task_exit(line))
      for (int task : e->tasks)
        if (task >= 0 && task < world_size()) {
          if (e->signal) ranks_[task]->reported_signal = *e->signal;
          if (e->code) ranks_[task]->reported_code = *e->code;
        }
  // How mpirun names the rank that failed first; the others it kills are echoes.
  int rank = -1, sig = 0;
  const char* noticed = std::strstr(line.c_str(), "process rank ");
  if (noticed && sscanf(noticed, "process rank %d", &rank) == 1 && rank >= 0 && rank < world_size()) {
    const char* on_sig = std::strstr(line.c_str(), "exited on signal ");
    if (on_sig && sscanf(on_sig, "exited on signal %d", &sig) == 1) ranks_[rank]->reported_signal = sig;
  }
  // torchrun (torch.distributed.elastic) names ranks by pid: "failed (exitcode: -9)
  // local_rank: 1 (pid: 27087)", the summary's "exitcode  : -15 (pid: 27081)", and
  // "Sending process 27081 closing signal SIGTERM" when it stops the survivors.
  auto by_pid = [&](pid_t pid) -> Rank* {
    for (auto& x : ranks_)
      if (x->pid == pid && pid > 0) return x.get();
    return nullptr;
  };
  int tr_code = 0, tr_pid = 0;
  if (const char* f = std::strstr(line.c_str(), "failed (exitcode: ");
      f && sscanf(f, "failed (exitcode: %d) local_rank: %*d (pid: %d)", &tr_code, &tr_pid) == 2) {
    if (Rank* x = by_pid(tr_pid)) (tr_code < 0 ? x->reported_signal : x->reported_code) = tr_code < 0 ? -tr_code : tr_code;
  } else if (const char* e = std::strstr(line.c_str(), "exitcode  : ");
             e && sscanf(e, "exitcode  : %d (pid: %d)", &tr_code, &tr_pid) == 2) {
    if (Rank* x = by_pid(tr_pid)) (tr_code < 0 ? x->reported_signal : x->reported_code) = tr_code < 0 ? -tr_code : tr_code;
  } else if (const char* c = std::strstr(line.c_str(), "Sending process "); c && std::strstr(c, "closing signal SIG")) {
    char sig_name[16] = {0};
    if (sscanf(c, "Sending process %d closing signal SIG%15[A-Z]", &tr_pid, sig_name) == 2)
      if (Rank* x = by_pid(tr_pid)) {
        const std::string nm = sig_name;
        x->launcher_sent = nm == "KILL" ? SIGKILL : nm == "INT" ? SIGINT : nm == "HUP" ? SIGHUP : SIGTERM;
      }
  }
  // "Process name: [[J,1],R]" and "Exit code: C" come on consecutive lines.
  int j = 0, r2 = -1;
  const char* pname = std::strstr(line.c_str(), "Process name: [[");
  if (pname && sscanf(pname, "Process name: [[%d,%*d],%d]", &j, &r2) == 2) launcher_named_rank_ = r2;
  int code = 0;
  const char* ec = std::strstr(line.c_str(), "Exit code:");
  if (ec && launcher_named_rank_ >= 0 && launcher_named_rank_ < world_size() &&
      sscanf(ec, "Exit code: %d", &code) == 1) {
    ranks_[launcher_named_rank_]->reported_code = code;
    launcher_named_rank_ = -1;
  }
}

void Supervisor::note_launcher_abort(double t) {
  if (launcher_abort_logged_) return;
  launcher_abort_logged_ = true;
  // The launcher (mpirun) aborts the whole job after the first failure; record it like
  // our own teardown so the kills it makes are read as echoes.
  harness_log_.write({{"t", t - 1e-3}, {"ev", "teardown"}, {"reason", "launcher_abort"}});
}

void Supervisor::note_gone(Rank& r) {
  if (r.gone_t > 0) return;
  r.gone_t = unix_now();
  if (r.pidfd >= 0) ::close(r.pidfd), r.pidfd = -1;
  // Read how it ended while it is still a zombie: a launcher's rank is reaped by the
  // launcher, and after that only the launcher's report (if any) could tell.
  if (r.external) r.proc_status = probe_proc_exit(r.pid).wait_status;
}

void Supervisor::finish_external(Rank& r, const std::string& how) {
  r.alive = false;
  RankExit ex;
  ex.rank = r.rank;
  // Dated when it died, not when its status became known (the launcher may report it
  // seconds later): a later rank's death must never appear to precede it.
  ex.t = r.gone_t > 0 ? r.gone_t : unix_now();
  if (r.proc_status) {
    if (WIFSIGNALED(*r.proc_status))
      ex.signal = WTERMSIG(*r.proc_status);
    else
      ex.code = WEXITSTATUS(*r.proc_status);
  } else if (r.reported_signal) {
    ex.signal = r.reported_signal;
  } else if (r.traced_exit) {
    ex.code = r.traced_exit;
  } else if (r.reported_code) {
    ex.code = r.reported_code;
  } else if (r.launcher_sent) {
    // Reaped by the launcher before its zombie was read, after the launcher said it sent
    // this signal: it died of it.
    ex.signal = r.launcher_sent;
  } else if (launcher_ && !launcher_->alive && launcher_exit_code_ == 0) {
    // The launcher succeeded: torchrun and mpirun exit 0 only when every rank did.
    ex.code = 0;
  } else if (in_teardown_ && ex.t >= teardown_t_) {
    // Died after our teardown began and was reaped by the launcher rather than by us: it
    // died of the signal our teardown had sent by then.
    ex.signal = teardown_kill_t_ > 0 && ex.t >= teardown_kill_t_ ? SIGKILL : SIGTERM;
  }
  // mpirun aborts the whole job on the first failure: a rank that ends by SIGTERM or
  // SIGKILL, or without a known status, after another rank had already failed was killed
  // by that abort — an echo. Ranks are finished in the order they died, so every earlier
  // death is in facts_.exits by now.
  const bool killed = (!ex.code && !ex.signal) || (ex.signal && (*ex.signal == SIGTERM || *ex.signal == SIGKILL));
  // Dated from the cancel notice, less the time a line may wait in the pipe (a death
  // before it was no consequence of it).
  bool launcher_teardown = killed && launcher_cancel_t_ > 0 && ex.t >= launcher_cancel_t_ - 0.05;
  // Killed by the signal a fault sent it: the fault's death (kill_node's SIGKILL reaches a
  // node's ranks microseconds apart), not the launcher reacting to the first of them.
  if (killed && !(r.fault_signal && ex.signal && *ex.signal == *r.fault_signal))
    for (const auto& e : facts_.exits)
      launcher_teardown = launcher_teardown ||
                          (e.rank != r.rank && e.t <= ex.t && (e.signal || e.code.value_or(0) != 0 || !e.code));
  const bool ours = in_teardown_ && ex.t >= teardown_t_;
  r.exit_by_teardown = ours || launcher_teardown;
  if (launcher_teardown && !ours) note_launcher_abort(ex.t);
  facts_.exits.push_back(ex);
  if (first_sign_t_ == 0 || ex.t < first_sign_t_) first_sign_t_ = ex.t;
  tail_trace(r);
  harness_log_.write({{"t", ex.t},
                      {"ev", "exit"},
                      {"rank", r.rank},
                      {"code", ex.code ? json(*ex.code) : json(nullptr)},
                      {"signal", ex.signal ? json(*ex.signal) : json(nullptr)},
                      {"status", ex.status()},
                      {"by_teardown", r.exit_by_teardown},
                      {"seen", launcher_teardown && !ours ? "killed by the launcher after an earlier failure" : how}});
  if (auto what = exit_monitor_detail(r.rank, ex.code, ex.signal, r.exit_by_teardown, how))
    detect(kExitMonitor.name, r.rank, *what, ex.t);
}

void Supervisor::poll_external_ranks(bool launcher_gone) {
  for (auto& r : ranks_) {
    if (!r->external || !r->alive) continue;
    if (r->pid <= 0) {
      if (launcher_gone) finish_external(*r, "never started");
      continue;
    }
    // The pidfd wakes the poll loop at the death; /proc is the fallback without pidfds.
    if (r->gone_t == 0 && probe_proc_exit(r->pid).gone) note_gone(*r);
  }
  // Finish the dead in the order they died. One whose status is not known yet (its
  // zombie was reaped before we read it, and the launcher has not reported it) holds
  // back those that died after it, so that their echo-or-not is judged against it. The
  // launcher reports a rank's signal or code before it exits; its exit (or our teardown,
  // or the deadline that forces one) bounds the wait.
  for (;;) {
    Rank* next = nullptr;
    for (auto& r : ranks_)
      if (r->external && r->alive && r->gone_t > 0 && (!next || r->gone_t < next->gone_t)) next = r.get();
    if (!next) break;
    const bool known = next->proc_status || next->reported_signal || next->reported_code || next->traced_exit ||
                       next->launcher_sent;
    if (!known && !launcher_gone && !in_teardown_) break;
    finish_external(*next, known ? "exited" : "vanished");
  }
}

void Supervisor::tail_exec_records(Rank& r) {
  if (!r.external || !opts_.rank_fifos) return;
  const fs::path path = dir_ / "ranks" / std::to_string(r.rank) / "exec.jsonl";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char chunk[4096];
  for (ssize_t n; (n = ::pread(fd, chunk, sizeof chunk, r.exec_off)) > 0;) {
    r.exec_off += n;
    r.exec_partial.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  for (size_t pos; (pos = r.exec_partial.find('\n')) != std::string::npos;) {
    json ev = json::parse(r.exec_partial.substr(0, pos), nullptr, false);
    r.exec_partial.erase(0, pos + 1);
    if (!ev.is_object()) continue;
    const pid_t pid = ev.value("pid", 0);
    if (pid > 0 && pid != r.pid) new_incarnation(r, pid, ev.value("restart_count", 0));
  }
}

void Supervisor::new_incarnation(Rank& r, pid_t pid, int restart_count) {
  if (r.pid > 0) {
    // A restart (torchrun --max-restarts): the launcher stopped the whole group before it
    // started this one, so the previous incarnation is dead; finish it with what is known.
    tail_trace(r);
    if (r.alive) {
      if (r.gone_t == 0) note_gone(r);
      finish_external(r, "exited");
    }
    harness_log_.write({{"t", unix_now()}, {"ev", "restart"}, {"rank", r.rank}, {"pid", pid},
                        {"restart_count", restart_count}});
    r.alive = true;
    r.gone_t = 0;
    r.proc_status.reset();
    r.traced_exit.reset();
    r.reported_code.reset();
    r.reported_signal.reset();
    r.launcher_sent.reset();
    r.exit_by_teardown = r.hb_lost = r.spoke = r.init_done = false;
    r.in_checkpoint = r.in_eval = r.in_collective = r.in_shutdown = false;
    r.last_step = 0;
    r.last_hb_mono = mono_now();
  }
  r.pid = pid;
  r.incarnation = restart_count;
  restarts_ = std::max(restarts_, restart_count);
  if (opts_.state) opts_.state->process(pid, fmt::format("rank {} (via the launcher)", r.rank));
  if (r.pidfd >= 0) ::close(r.pidfd);
  r.pidfd = open_pidfd(pid);
  harness_log_.write({{"t", unix_now()}, {"ev", "rank_pid"}, {"rank", r.rank}, {"pid", pid},
                      {"restart_count", restart_count}});
}

void Supervisor::on_output_line(Rank& r, const std::string& line, bool is_err, double t) {
  if (r.rank < 0) {
    on_launcher_line(line, is_err, t);
    return;
  }
  write_all(is_err ? r.err_log : r.out_log, iso_time(t) + " " + line + "\n");
  r.spoke = true;
  note_output_trigger(line);
  if (first_sign_t_ == 0 || t < first_sign_t_) first_sign_t_ = t;
  if (!r.has_trace) {
    // Without a trace, a rank's output is its voice: progress (once its main thread is seen
    // to have run around it: detect/harness_watchdog.hpp) and errors.
    watchdog_->output_line(r, mono_now());
    if (const DetectorInfo* det = classify_backend_line(line)) detect(det->name, r.rank, utf8_prefix(line, 300), t);
    // ...and of its step: read with triage's own log parser, so that at_step triggers a
    // fault in a bring-your-own rank at a step (not at a wall-clock guess of when training
    // will have started), and the watchdog knows when its init is over.
    // The progress table (triage/logs/progress.hpp) first: its shapes are whole lines
    // ("[GPU1] Epoch 12 | Batchsize: 32 | Steps: 22" is epoch 12, not step 22). Its step
    // counter, or for an epoch-only program its epoch, is the step at_step counts.
    if (auto pm = match_progress(line)) {
      const long long n = pm->step ? *pm->step : pm->epoch ? static_cast<long long>(*pm->epoch) : 0;
      r.init_done = true;
      if (n > 0) r.last_step = std::max(r.last_step, static_cast<int>(n));
      return;
    }
    LogLine ll;
    if (parse_log_line(line, LogLineContext{}, ll) && (ll.rank < 0 || ll.rank == r.rank)) {
      if (ll.kind == LogKind::kInitDone) r.init_done = true;
      if (ll.kind == LogKind::kStep && ll.step > 0) r.init_done = true, r.last_step = std::max(r.last_step, ll.step);
    }
  }
}

void Supervisor::note_output_trigger(const std::string& line) {
  for (auto& f : faults_)
    if (!f.fired && !f.output_seen && f.spec->at_output && line.find(*f.spec->at_output) != std::string::npos)
      f.output_seen = true;
}

void Supervisor::drain_fd(Rank& r, int& fd, std::string& buf, int /*log_fd*/, bool is_err, bool flush_all) {
  if (fd < 0) return;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      (is_err ? r.err_data_t : r.out_data_t) = unix_now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {  // EOF: the rank (and everything holding the pipe) is gone
      ::close(fd);
      fd = -1;
      flush_all = true;
    }
    break;
  }
  double t = unix_now();
  size_t pos;
  while ((pos = buf.find('\n')) != std::string::npos) {
    std::string line = buf.substr(0, pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    buf.erase(0, pos + 1);
    on_output_line(r, line, is_err, t);
  }
  // A progress bar (tqdm: Lightning's, HF's, accelerate's) redraws in place with '\r' and
  // ends its line only when it closes, often at the end of training: without this its
  // rank would print nothing for the whole run. Each complete redraw is read now: one that
  // is progress (the progress table) is logged at most once a second, the newest one;
  // any other text between carriage returns is logged as a line of its own.
  // tqdm writes "\r" + the bar in one write() (the carriage return first), so the text after
  // the last '\r' is the bar as it stands now, not a partial line: once the pipe is drained
  // and that text is a whole bar (a progress-table match ending in tqdm's closing ']'), it
  // is read now. Waiting for the next '\r' would date it at the next redraw, seconds later
  // (tqdm redraws a stalled bar only from its monitor thread, every 10 s).
  if (!flush_all && !buf.empty()) {
    size_t last_cr = buf.rfind('\r');
    if (last_cr != std::string::npos && buf.size() > last_cr + 1 && buf.back() == ']' &&
        buf.find('\n', last_cr) == std::string::npos && match_progress(std::string_view(buf).substr(last_cr + 1)))
      buf.push_back('\r'), last_cr = buf.size() - 1;
    if (last_cr != std::string::npos) {
      std::string_view done(buf.data(), last_cr);
      std::string newest_progress;
      size_t start = 0;
      while (start <= done.size()) {
        size_t end = done.find('\r', start);
        if (end == std::string_view::npos) end = done.size();
        std::string seg(done.substr(start, end - start));
        if (!seg.empty()) {
          // A redraw that is not logged may still be the text a fault waits for.
          if (match_progress(seg)) note_output_trigger(seg), newest_progress = std::move(seg);
          else on_output_line(r, seg, is_err, t);
        }
        start = end + 1;
      }
      if (!newest_progress.empty() && t - r.last_redraw_t >= 1.0) {
        r.last_redraw_t = t;
        on_output_line(r, newest_progress, is_err, t);
      } else if (!newest_progress.empty() && !r.has_trace) {
        watchdog_->output_line(r, mono_now());  // progress all the same, only not logged again
        if (auto pm = match_progress(newest_progress)) {
          const long long n = pm->step ? *pm->step : pm->epoch ? static_cast<long long>(*pm->epoch) : 0;
          r.init_done = true;
          if (n > 0) r.last_step = std::max(r.last_step, static_cast<int>(n));
        }
      }
      buf.erase(0, last_cr + 1);
    }
  }
  if (flush_all && !buf.empty()) {
    const double data_t = is_err ? r.err_data_t : r.out_data_t;
    on_output_line(r, buf, is_err, data_t > 0 ? data_t : t);
    buf.clear();
  }
}

void Supervisor::pump_output(double timeout_s) {
  std::vector<pollfd> pfds;
  std::vector<std::pair<Rank*, bool>> owners;
  for (auto& r : ranks_) {
    if (r->out_fd >= 0) pfds.push_back({r->out_fd, POLLIN, 0}), owners.push_back({r.get(), false});
    if (r->err_fd >= 0) pfds.push_back({r->err_fd, POLLIN, 0}), owners.push_back({r.get(), true});
  }
  if (launcher_) {
    if (launcher_->out_fd >= 0) pfds.push_back({launcher_->out_fd, POLLIN, 0}), owners.push_back({launcher_.get(), false});
    if (launcher_->err_fd >= 0) pfds.push_back({launcher_->err_fd, POLLIN, 0}), owners.push_back({launcher_.get(), true});
  }
  if (opts_.interrupt_fd >= 0) pfds.push_back({opts_.interrupt_fd, POLLIN, 0}), owners.push_back({nullptr, false});
  // A rank's pidfd turns readable the moment it dies: the loop wakes then, and the death
  // is dated then, whatever the pipes, the tick or the launcher do.
  const size_t first_pidfd = pfds.size();
  std::vector<Rank*> pidfd_owners;
  for (auto& r : ranks_)
    if (r->alive && r->pidfd >= 0) pfds.push_back({r->pidfd, POLLIN, 0}), pidfd_owners.push_back(r.get());
  int ms = static_cast<int>(timeout_s * 1000);
  int n = ::poll(pfds.data(), pfds.size(), ms);
  if (n <= 0) return;
  for (size_t i = first_pidfd; i < pfds.size(); ++i)
    if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) note_gone(*pidfd_owners[i - first_pidfd]);
  for (size_t i = 0; i < first_pidfd; ++i) {
    if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    Rank* r = owners[i].first;
    if (!r) continue;  // the interrupt pipe is checked by the loop
    if (owners[i].second)
      drain_fd(*r, r->err_fd, r->err_buf, r->err_log, true, false);
    else
      drain_fd(*r, r->out_fd, r->out_buf, r->out_log, false, false);
  }
}

void Supervisor::tail_trace(Rank& r) {
  int fd = ::open(r.trace_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::pread(fd, chunk, sizeof chunk, r.trace_off);
    if (n <= 0) break;
    r.trace_off += n;
    r.trace_partial.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t pos;
  while ((pos = r.trace_partial.find('\n')) != std::string::npos) {
    std::string line = r.trace_partial.substr(0, pos);
    r.trace_partial.erase(0, pos + 1);
    json ev = json::parse(line, nullptr, false);
    if (ev.is_discarded() || !ev.is_object()) continue;  // a torn line from a killed rank
    on_trace_event(r, ev);
  }
}

void Supervisor::on_trace_event(Rank& r, const json& ev) {
  r.has_trace = r.spoke = true;
  if (const double te = ev.value("t", unix_now()); first_sign_t_ == 0 || te < first_sign_t_) first_sign_t_ = te;
  std::string kind = ev.value("ev", "");
  double now = mono_now();
  if (kind == "hb") {
    r.last_hb_mono = now;
    return;
  }
  // Every traced event proves the process runs (the heartbeat thread may lag behind it).
  r.last_hb_mono = now;
  watchdog_->traced_progress(now);
  if (kind == "start" && r.external && r.pid <= 0) {
    tail_exec_records(r);  // the exec record, where there is one, comes first and says the same
    if (r.pid <= 0) {
      r.pid = ev.value("pid", 0);
      if (opts_.state && r.pid > 0) opts_.state->process(r.pid, fmt::format("rank {} (via the launcher)", r.rank));
      r.pidfd = open_pidfd(r.pid);
    }
  } else if (kind == "exit" && r.external) {
    r.traced_exit = ev.value("code", 0);
  }
  if (kind == "step") {
    r.last_step = std::max(r.last_step, ev.value("step", 0));
  } else if (kind == "coll") {
    r.in_collective = ev.value("edge", "") == "begin";
  } else if (kind == "phase") {
    const std::string name = ev.value("name", ""), edge = ev.value("edge", "");
    if (name == "init" && edge == "end") r.init_done = true;
    if (name == "checkpoint") r.in_checkpoint = edge == "begin";
    if (name == "eval") r.in_eval = edge == "begin";
    if (name == "shutdown") r.in_shutdown = edge == "begin";
  } else if (kind == "error") {
    const std::string cls = ev.value("class", "");
    double t = ev.value("t", unix_now());
    std::string detail = ev.value("msg", "");
    detail = utf8_prefix(detail, 300);
    if (const DetectorInfo* det = backend_detector_for_trace_class(cls)) detect(det->name, r.rank, detail, t);
  } else if (kind == "fault") {
    for (auto& f : faults_) {
      if (f.fired || !f.injector->in_process() || f.injector->hook_kind() != ev.value("kind", "")) continue;
      bool targeted = false;
      for (int x : f.spec->ranks) targeted = targeted || x == r.rank;
      if (targeted) record_fault(f, fmt::format("rank {}: {}", r.rank, ev.value("detail", "")), ev.value("t", unix_now()));
    }
  }
}

void Supervisor::detect(std::string_view detector, int rank, const std::string& detail, double t) {
  for (const auto& d : facts_.detections)
    if (d.detector == detector && d.rank == rank) return;
  facts_.detections.push_back({std::string(detector), rank, t, detail});
  harness_log_.write({{"t", t}, {"ev", "detect"}, {"detector", detector}, {"rank", rank}, {"detail", detail}});
  if (!in_teardown_)
    take_snapshot(rank >= 0 ? fmt::format("first detection: {} (rank {})", detector, rank)
                            : fmt::format("first detection: {}", detector),
                  t);
  if (sc_.detect.flight_recorder && !fr_signalled_ && !in_teardown_) signal_fr_dump(t);
}

void Supervisor::take_snapshot(const std::string& why, double t) {
  if (snapshot_taken_) return;
  snapshot_taken_ = true;
  SnapshotInput in;
  in.run_dir = dir_;
  in.why = why;
  in.t = t;
  in.mono_to_unix = unix_now() - mono_now();
  in.sample_period_s = std::max(opts_.stack_sample_s, 0.5 * static_cast<double>(ranks_.size()));
  try {
    write_snapshot(in, watches(), *watchdog_, stacks_.get());
    harness_log_.write({{"t", unix_now()}, {"ev", "snapshot"}, {"file", "liveness.json"}, {"why", why}});
  } catch (const std::exception& e) {
    // The record of a run must not end it: the snapshot is evidence, not supervision.
    harness_log_.write({{"t", unix_now()}, {"ev", "snapshot"}, {"error", e.what()}});
  }
}

void Supervisor::signal_fr_dump(double t) {
  fr_signalled_ = true;
  std::vector<FrDumpTarget> targets;
  for (auto& r : ranks_)
    if (r->alive && r->pid > 0 && r->gone_t == 0)
      targets.push_back({r->rank, r->pid, rank_fr_dump(dir_, r->rank).string() + ".armed"});
  json signalled = hanglab::signal_fr_dump(targets);
  harness_log_.write({{"t", t}, {"ev", "fr_dump_signal"}, {"signal", "SIGUSR1"}, {"ranks", signalled}});
}

void Supervisor::record_fault(ArmedFault& f, const std::string& detail, double t) {
  f.fired = true;
  facts_.faults.push_back({f.spec->kind, f.spec->ranks, t, detail});
  json ranks = f.spec->ranks;
  harness_log_.write({{"t", t}, {"ev", "fault"}, {"kind", f.spec->kind}, {"ranks", ranks}, {"detail", detail}});
}

void Supervisor::reap() {
  for (;;) {
    int st = 0;
    pid_t pid = ::waitpid(-1, &st, WNOHANG);
    if (pid <= 0) break;
    if (launcher_ && pid == launcher_->pid && launcher_->alive) {
      launcher_->alive = false;
      if (WIFEXITED(st)) launcher_exit_code_ = WEXITSTATUS(st);
      // Its last lines (the report of how the first failed rank ended) are read before
      // the ranks still pending a status are finished without one.
      drain_fd(*launcher_, launcher_->out_fd, launcher_->out_buf, launcher_->out_log, false, false);
      drain_fd(*launcher_, launcher_->err_fd, launcher_->err_buf, launcher_->err_log, true, false);
      harness_log_.write({{"t", unix_now()}, {"ev", "launcher_exit"}, {"pid", pid},
                          {"code", WIFEXITED(st) ? json(WEXITSTATUS(st)) : json(nullptr)},
                          {"signal", WIFSIGNALED(st) ? json(WTERMSIG(st)) : json(nullptr)}});
      continue;
    }
    Rank* r = nullptr;
    for (auto& x : ranks_)
      if (x->pid == pid && x->alive) r = x.get();
    if (!r) continue;  // a reparented grandchild
    r->alive = false;
    if (r->pidfd >= 0) ::close(r->pidfd), r->pidfd = -1;
    RankExit ex;
    ex.rank = r->rank;
    ex.t = r->gone_t > 0 ? r->gone_t : unix_now();  // dated at the death its pidfd reported
    if (WIFSIGNALED(st))
      ex.signal = WTERMSIG(st);
    else
      ex.code = WEXITSTATUS(st);
    // Killed by our teardown only if it died after the teardown began (a rank that died
    // during the stack capture is reaped here too, but died on its own).
    r->exit_by_teardown = in_teardown_ && ex.t >= teardown_t_;
    // Under a launcher, a rank that dies by SIGTERM/SIGKILL after another rank failed was
    // killed by the launcher aborting the job (mpirun does): an echo, not a fault.
    if (r->external && ex.signal && (*ex.signal == SIGTERM || *ex.signal == SIGKILL))
      for (const auto& e : facts_.exits) r->exit_by_teardown = r->exit_by_teardown || e.signal || e.code.value_or(0) != 0;
    if (r->exit_by_teardown && !(in_teardown_ && ex.t >= teardown_t_)) note_launcher_abort(ex.t);
    facts_.exits.push_back(ex);
    if (first_sign_t_ == 0 || ex.t < first_sign_t_) first_sign_t_ = ex.t;
    // Read what the rank wrote last before judging its exit.
    tail_trace(*r);
    harness_log_.write({{"t", ex.t},
                        {"ev", "exit"},
                        {"rank", r->rank},
                        {"code", ex.code ? json(*ex.code) : json(nullptr)},
                        {"signal", ex.signal ? json(*ex.signal) : json(nullptr)},
                        {"status", ex.status()},
                        {"by_teardown", r->exit_by_teardown}});
    if (auto what = exit_monitor_detail(r->rank, ex.code, ex.signal, r->exit_by_teardown, "reaped"))
      detect(kExitMonitor.name, r->rank, *what, ex.t);
  }
  if (launcher_) poll_external_ranks(!launcher_->alive);
}

void Supervisor::check_triggers(double now) {
  for (auto& f : faults_) {
    if (f.fired && !f.injector->in_process()) {
      std::string detail = f.injector->tick(*this, now - f.fired_mono);
      if (!detail.empty())
        harness_log_.write({{"t", unix_now()}, {"ev", "fault_tick"}, {"kind", f.spec->kind}, {"detail", detail}});
    }
    if (f.fired || f.injector->in_process()) continue;
    bool due = false;
    if (f.spec->at_s) {
      due = now - launch_mono_ >= *f.spec->at_s;
    } else if (f.spec->at_output) {
      due = f.output_seen;
    } else if (f.spec->at_step) {
      // Several ranks (a node fault's, or ranks = [..]): due once every one of them that is
      // still alive has entered the step, so the fault finds them all in it. Firing at the
      // first would leave where the others were (still finishing the step before, or not)
      // to the scheduler: the same scenario would record a different last good step.
      bool all = true, any = false;
      for (int x : f.spec->ranks) {
        const Rank& r = *ranks_[x];
        const bool in = *f.spec->at_step <= 1 ? r.init_done : r.last_step >= *f.spec->at_step - 1;
        any |= in;
        if (!in && r.alive) all = false;
      }
      due = any && all;
    } else {
      due = true;
    }
    // Under a launcher a rank's pid arrives with the rank (torchrun takes seconds to start
    // it): a timed fault on a rank that has no pid yet waits for it rather than miss it.
    if (due && launcher_ && f.spec->at_s)
      for (int x : f.spec->ranks)
        if (ranks_[x]->alive && ranks_[x]->pid <= 0) due = false;
    if (!due) continue;
    f.fired_mono = now;
    std::string detail = f.injector->fire(*this);
    if (f.spec->at_s || f.spec->at_step || f.spec->at_output) {
      record_fault(f, detail, unix_now());
    } else {
      // A fault with no trigger is in effect from launch (an env or wrapper fault), but
      // nothing can notice it before a rank runs: it is dated at the job's first sign of
      // life (a rank's first trace event, output line or exit), so that its detection
      // latency does not include how long the host took to start the processes (seconds
      // of loading LibTorch under load), and a rank failing in its first milliseconds is
      // still not "before the fault".
      f.fired = true;
      f.record_pending = true;
      f.pending_detail = detail;
    }
  }
  for (auto& f : faults_)
    if (f.record_pending && first_sign_t_ > 0) f.record_pending = false, record_fault(f, f.pending_detail, first_sign_t_);
}

void Supervisor::check_detectors(double now) {
  // A launcher that is starting ranks (torchrun importing torch, rendezvous, a restart of
  // the worker group) runs while no rank can speak yet: its own CPU counts as progress then.
  HarnessWatchdog::Launcher launcher;
  if (launcher_ && launcher_->alive && launcher_->pid > 0) {
    launcher.pid = launcher_->pid;
    bool any_alive = false;
    for (const auto& r : ranks_) {
      launcher.starting = launcher.starting || (r->alive && (r->pid <= 0 || r->gone_t > 0));
      any_alive = any_alive || r->alive;
    }
    launcher.starting = launcher.starting || !any_alive;
  }
  const auto ranks = watches();
  std::vector<const RankWatch*> live(ranks.begin(), ranks.end());
  stacks_->tick(live, now);
  const DetectFn sink = [this](std::string_view d, int rank, const std::string& detail, double t) {
    detect(d, rank, detail, t);
  };
  check_heartbeat_loss(ranks, now, sc_.timeouts.heartbeat_s, sink);
  watchdog_->check(ranks, launcher, now, stacks_.get(), sink);
}

void Supervisor::capture_stacks_now() {
  if (opts_.on_state) opts_.on_state("hang declared: capturing stacks");
  stacks_->stop();  // a sample still running would hold the rank the capture needs
  std::vector<StackCaptureTarget> targets;
  for (auto& r : ranks_)
    if (r->alive && r->gone_t == 0 && r->pid > 0) targets.push_back({r->rank, r->pid});
  StackCaptureOptions o;
  o.run_dir = dir_;
  o.timeout_s = opts_.stack_timeout_s;
  o.on_spawn = [this](pid_t pid, const std::string& what) {
    if (opts_.state) opts_.state->process(pid, what);
  };
  o.log = [this](const json& j) { harness_log_.write(j); };
  o.pump = [this](double s) { pump_output(s); };
  capture_stacks(targets, o);
}

void Supervisor::kill_stray_children() {
  // As a subreaper we inherit orphans of the ranks (e.g. a launcher's children that
  // left the rank's process group); they must not outlive the run.
  pid_t self = ::getpid();
  for (int round = 0; round < 3; ++round) {
    bool found = false;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.empty() || !isdigit(static_cast<unsigned char>(name[0]))) continue;
      std::ifstream in(e.path() / "stat");
      std::string stat;
      std::getline(in, stat);
      auto rp = stat.rfind(')');
      if (rp == std::string::npos) continue;
      char state = 0;
      int ppid = 0;
      if (sscanf(stat.c_str() + rp + 1, " %c %d", &state, &ppid) != 2) continue;
      if (ppid != self) continue;
      pid_t pid = std::stoi(name);
      // Injectors' helper processes (a FUSE daemon, a port holder): their revert() ends them.
      if (is_helper_process(pid)) continue;
      bool is_rank = false;
      for (auto& r : ranks_) is_rank = is_rank || (r->pid == pid && r->alive);
      is_rank = is_rank || (launcher_ && launcher_->pid == pid && launcher_->alive);
      if (is_rank) continue;
      found = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (!found) break;
  }
}

void Supervisor::console_signal(const Rank& r, int signo, const std::string& reason) {
  const int fd = ::open((dir_ / "supervisor.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;  // a notice for the plain logs; the record of the teardown is harness.jsonl
  write_all(fd, fmt::format("{} hanglab supervisor: Sending process {} closing signal {} ({}, teardown: {})\n",
                            iso_time(unix_now()), r.pid, signo == SIGKILL ? "SIGKILL" : "SIGTERM",
                            r.rank < 0 ? std::string("the launcher") : fmt::format("rank {}", r.rank), reason));
  ::close(fd);
}

void Supervisor::teardown(const std::string& reason) {
  if (in_teardown_ && reason != "error") return;
  in_teardown_ = true;
  facts_.teardown_reason = reason;
  teardown_t_ = unix_now();
  harness_log_.write({{"t", teardown_t_}, {"ev", "teardown"}, {"reason", reason}});
  if (opts_.on_state) opts_.on_state("tearing down (" + reason + ")");
  stacks_->stop();
  for (auto& r : ranks_) {
    // A dead launcher's rank may already be reaped and its pid reused.
    if (!r->alive || r->pid <= 0 || (r->external && r->gone_t > 0)) continue;
    console_signal(*r, SIGTERM, reason);  // before the signal: no consequence of it can be older
    ::kill(-r->pid, SIGTERM);
    ::kill(-r->pid, SIGCONT);  // a stopped rank cannot act on SIGTERM
    if (r->external) ::kill(r->pid, SIGTERM), ::kill(r->pid, SIGCONT);
  }
  if (launcher_ && launcher_->alive) console_signal(*launcher_, SIGTERM, reason), ::kill(-launcher_->pid, SIGTERM);
  double grace_end = mono_now() + opts_.term_grace_s;
  while (!all_exited() && mono_now() < grace_end) {
    pump_output(0.02);
    reap();
  }
  teardown_kill_t_ = unix_now();
  for (auto& r : ranks_)
    if (r->alive && r->pid > 0 && !(r->external && r->gone_t > 0))
      console_signal(*r, SIGKILL, reason), ::kill(-r->pid, SIGKILL), ::kill(r->pid, SIGKILL);
  if (launcher_ && launcher_->alive) console_signal(*launcher_, SIGKILL, reason), ::kill(-launcher_->pid, SIGKILL);
  double kill_end = mono_now() + 10;
  while (!all_exited() && mono_now() < kill_end) {
    pump_output(0.02);
    reap();
  }
  // Process groups may hold more than the rank itself.
  for (auto& r : ranks_)
    if (r->launched && r->pid > 0 && !(r->external && r->gone_t > 0)) ::kill(-r->pid, SIGKILL);
  if (launcher_) ::kill(-launcher_->pid, SIGKILL);
  kill_stray_children();
}

std::string Supervisor::compute_outcome() const {
  if (facts_.teardown_reason == "interrupted" || facts_.teardown_reason == "error") return "";
  if (facts_.teardown_reason == "hang" || facts_.teardown_reason == "deadline") return "hang";
  bool timeout = false, bad_exit = false;
  for (const auto& d : facts_.detections)
    timeout = timeout || d.detector == "backend_timeout" || d.detector == "harness_watchdog";
  for (const auto& e : facts_.exits) bad_exit = bad_exit || e.signal || e.code.value_or(0) != 0;
  // torchrun restarted the worker group and then exited 0: the job, as its launcher runs
  // it, completed (exit_monitor and the rest still record what failed on the way).
  if (restarts_ > 0 && launcher_exit_code_ == 0 && facts_.teardown_reason == "all_exited") return "completed";
  if (timeout) return "hang";
  if (bad_exit) return "crash";
  return "completed";
}

RunFacts Supervisor::run() {
  harness_log_.write({{"t", unix_now()},
                      {"ev", "run_start"},
                      {"scenario", sc_.name},
                      {"world_size", world_size()},
                      {"deadline_s", sc_.deadline_s},
                      {"timeouts",
                       {{"init_s", sc_.timeouts.init_s},
                        {"collective_s", sc_.timeouts.collective_s},
                        {"progress_s", sc_.timeouts.progress_s},
                        {"heartbeat_s", sc_.timeouts.heartbeat_s},
                        {"checkpoint_s", sc_.timeouts.checkpoint_s ? json(*sc_.timeouts.checkpoint_s) : json(nullptr)},
                        {"eval_s", sc_.timeouts.eval_s ? json(*sc_.timeouts.eval_s) : json(nullptr)}}},
                      {"port", specs_.empty() ? "" : specs_[0].env.count("MASTER_PORT") ? specs_[0].env.at("MASTER_PORT") : ""}});
  launch_all();
  std::string reason;
  while (true) {
    pump_output(opts_.tick_s);
    if (opts_.interrupt_fd >= 0) {
      pollfd p{opts_.interrupt_fd, POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) {
        reason = "interrupted";
        break;
      }
    }
    for (auto& r : ranks_) tail_exec_records(*r), tail_trace(*r);
    reap();
    double now = mono_now();
    check_triggers(now);
    if (all_exited()) {
      reason = "all_exited";
      break;
    }
    check_detectors(now);
    if (opts_.on_state) {
      int step = 0;
      bool rendezvous = true;
      for (const auto& r : ranks_) step = std::max(step, r->last_step), rendezvous = rendezvous && !r->init_done;
      opts_.on_state((rendezvous ? std::string("rendezvous") : fmt::format("step {}/{}", step, sc_.workload.steps)) +
                     (facts_.detections.empty() ? "" : fmt::format(", {} detection(s)", facts_.detections.size())));
    }
    if (watchdog_->fired()) {
      reason = "hang";
      break;
    }
    if (now - launch_mono_ > sc_.deadline_s) {
      harness_log_.write({{"t", unix_now()}, {"ev", "deadline"}, {"deadline_s", sc_.deadline_s}});
      reason = "deadline";
      break;
    }
  }
  // What decides the phase and liveness is recorded before any teardown signal (the hang's
  // capture stops no rank for good: it reads them where they stand).
  if (reason != "all_exited") take_snapshot("teardown: " + reason, unix_now());
  if ((reason == "hang" || reason == "deadline") && opts_.capture_stacks) capture_stacks_now();
  if (reason != "all_exited")
    teardown(reason);
  else {
    facts_.teardown_reason = reason;
    stacks_->stop();
    kill_stray_children();
  }
  // Everything is gone: flush the last partial lines and trace events. A rank's fifo
  // reports EOF once our own write end is closed too.
  close_rank_fifos(false);
  if (launcher_) {
    drain_fd(*launcher_, launcher_->out_fd, launcher_->out_buf, launcher_->out_log, false, true);
    drain_fd(*launcher_, launcher_->err_fd, launcher_->err_buf, launcher_->err_log, true, true);
  }
  for (auto& r : ranks_) {
    drain_fd(*r, r->out_fd, r->out_buf, r->out_log, false, true);
    drain_fd(*r, r->err_fd, r->err_buf, r->err_log, true, true);
    tail_trace(*r);
  }
  close_rank_fifos(true);
  for (auto& f : faults_) {
    if (f.record_pending)  // no rank ever gave a sign of life: dated at launch
      f.record_pending = false, record_fault(f, f.pending_detail, first_sign_t_ > 0 ? first_sign_t_ : facts_.start_t);
    if (!f.fired) harness_log_.write({{"t", unix_now()}, {"ev", "fault_not_fired"}, {"kind", f.spec->kind}});
  }
  facts_.end_t = unix_now();
  facts_.outcome = compute_outcome();
  harness_log_.write({{"t", facts_.end_t},
                      {"ev", "run_end"},
                      {"outcome", facts_.outcome},
                      {"duration_s", facts_.end_t - facts_.start_t}});
  std::sort(facts_.detections.begin(), facts_.detections.end(),
            [](const Detection& a, const Detection& b) { return a.t < b.t; });
  return facts_;
}

}  // namespace hanglab
