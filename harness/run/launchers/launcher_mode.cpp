// Supervisor, launcher mode: the ranks of a launcher that starts them all from one process
// (mpirun, torchrun, srun). Their output (tagged lines on the launcher's pipes, or a fifo per
// rank), their pids (trace `start` events, hanglab_rank_exec's exec records, a new pid per
// restart), their deaths (pidfds, /proc while a zombie) and how each ended: the kernel's
// status, else the launcher's own report in its own words (mpirun's "process rank N ... exited
// on signal S", srun's "task N: Killed", torchrun's "failed (exitcode: -9) ... (pid: P)"),
// and which deaths were the launcher aborting the job after an earlier failure. See
// run/supervisor.hpp and launchers.hpp.
#include <sys/stat.h>
#include <sys/wait.h>

#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "detect/exit_monitor.hpp"
#include "run/launchers/launchers.hpp"
#include "run/proc_exit.hpp"
#include "run/state.hpp"
#include "run/supervisor_rank.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;
using supervisor_detail::write_all;

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

}  // namespace hanglab
