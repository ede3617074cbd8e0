// Supervisor: launch, the loop, reaping, the detectors' ticks, the stack capture and the
// pre-teardown snapshot, teardown. What the ranks print and trace is read in rank_output.cpp,
// the ranks a launcher started are followed in launchers/launcher_mode.cpp.
#include "run/supervisor.hpp"
#include "run/supervisor_rank.hpp"

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
#include "detect/backend_timeout.hpp"
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

extern char** environ;

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;
using supervisor_detail::set_nonblock;
using supervisor_detail::write_all;


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

void Supervisor::detect(std::string_view detector, int rank, const std::string& detail, double t) {
  // What a rank reports after the teardown began is the teardown's doing (a peer's socket
  // closed by our SIGTERM/SIGKILL, torchrun stopping its workers), not the fault's: it is kept
  // in the log, not counted as a detection, so that the verdict cannot depend on how fast the
  // ranks die. Output written before the teardown was drained before its first signal.
  if (in_teardown_ && t >= teardown_t_) {
    harness_log_.write({{"t", t},
                        {"ev", "detect_after_teardown"},
                        {"detector", detector},
                        {"rank", rank},
                        {"detail", detail}});
    return;
  }
  for (const auto& d : facts_.detections)
    if (d.detector == detector && d.rank == rank) return;
  // A closed or reset connection (backend_error) after a rank's own backend timeout is that
  // timeout's echo: the rank whose timer fired raised and exited, closing its sockets, while a
  // peer still waited with its own timer running. Its pipe or trace is read on its own, so the
  // echo may be read before its cause: the times the ranks stamped decide, and a timeout read
  // later retracts an error stamped after it. Logged, not counted, so the verdict does not
  // depend on which waiting rank's timer fires first.
  if (detector == kBackendError.name) {
    for (const auto& d : facts_.detections)
      if (d.detector == kBackendTimeout.name && d.t <= t) {
        harness_log_.write({{"t", t},
                            {"ev", "detect_echo"},
                            {"detector", detector},
                            {"rank", rank},
                            {"echo_of", {{"detector", d.detector}, {"rank", d.rank}}},
                            {"detail", detail}});
        return;
      }
  }
  if (detector == kBackendTimeout.name) {
    for (auto it = facts_.detections.begin(); it != facts_.detections.end();) {
      if (it->detector != kBackendError.name || it->t < t) {
        ++it;
        continue;
      }
      harness_log_.write({{"t", it->t},
                          {"ev", "detect_retracted"},
                          {"detector", it->detector},
                          {"rank", it->rank},
                          {"echo_of", {{"detector", detector}, {"rank", rank}}},
                          {"detail", it->detail}});
      it = facts_.detections.erase(it);
    }
  }
  facts_.detections.push_back({std::string(detector), rank, t, detail});
  harness_log_.write({{"t", t}, {"ev", "detect"}, {"detector", detector}, {"rank", rank}, {"detail", detail}});
  if (sc_.detect.flight_recorder && !fr_signalled_ && !in_teardown_) signal_fr_dump(t);
  if (!in_teardown_)
    take_snapshot(rank >= 0 ? fmt::format("first detection: {} (rank {})", detector, rank)
                            : fmt::format("first detection: {}", detector),
                  t);
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
    // killed by the launcher aborting the job (mpirun does): an echo, not a fault. A peer's
    // SIGTERM death is no such failure: it is what a launcher sends (torchrun stops the survivors
    // with it), and two deaths reaped in one pass come in pid order, not in the order they died.
    if (r->external && ex.signal && (*ex.signal == SIGTERM || *ex.signal == SIGKILL))
      for (const auto& e : facts_.exits)
        r->exit_by_teardown = r->exit_by_teardown || (e.signal && *e.signal != SIGTERM) || e.code.value_or(0) != 0;
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
      // A rank without a trace that reports no step of its own (most libraries print from rank
      // 0 only) is in the step its peers report: DDP's collectives keep the ranks in step.
      int job_step = 0;
      bool job_init = false;
      for (const auto& r : ranks_) job_step = std::max(job_step, r->last_step), job_init = job_init || r->init_done;
      bool all = true, any = false;
      for (int x : f.spec->ranks) {
        const Rank& r = *ranks_[x];
        const bool silent = !r.has_trace && r.last_step == 0 && !r.init_done;
        const int step = silent ? job_step : r.last_step;
        const bool in = *f.spec->at_step <= 1 ? (silent ? job_init : r.init_done) : step >= *f.spec->at_step - 1;
        any |= in;
        if (!in && r.alive) all = false;
      }
      due = any && all;
    } else {
      due = true;
    }
    // Under a launcher a rank's pid arrives with the rank (torchrun takes seconds to start
    // it): a triggered fault on a rank that has no pid yet waits for it rather than miss it.
    // That holds for at_step too: a rank with no trace yet counts as in its peers' step (above),
    // so a peer's end of init can make the fault due before the launcher has even started the
    // target (seen under load: "rank 1 already gone" for a rank that ran seconds later).
    if (due && launcher_ && (f.spec->at_s || f.spec->at_step || f.spec->at_output))
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

namespace {
// torchrun's close timeout (30 s) and a monitor interval's slack.
constexpr double kTorchrunStopGraceS = 35;
}  // namespace

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
    // torchrun stops the worker group when a worker fails: SIGTERM to the others, SIGKILL after
    // its close timeout (torch/distributed/elastic/multiprocessing/api.py: close(death_sig,
    // timeout=30)), checked every monitor interval. A worker that handles SIGTERM (Lightning's
    // signal connector) while blocked in a collective with the dead one lives on until the SIGKILL.
    if (sc_.workload.launcher == "torchrun")
      for (const auto& e : facts_.exits)
        if (e.signal || e.code.value_or(0) != 0)
          launcher.stopping_until_mono =
              std::max(launcher.stopping_until_mono, now - (unix_now() - e.t) + kTorchrunStopGraceS);
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
  // Lines the ranks wrote before this moment are read now, so that they still count.
  if (!in_teardown_) pump_output(0);
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
