// Supervisor: launches the ranks of one run, watches them, fires runtime faults,
// runs the detectors, captures stacks on a declared hang, and tears everything down.
//
// It is single-threaded: one poll(2) loop over the ranks' stdout/stderr pipes and an
// interrupt pipe, with a short tick in which it tails the rank traces, reaps children,
// checks triggers and detectors. Every wait is bounded: deadline_s bounds the run, the
// stack capture has its own bound, teardown is SIGTERM, a grace period, then SIGKILL.
// The harness process is a child subreaper, so grandchildren (launchers, wrappers) are
// reaped and killed too. Nothing it started outlives run().
#pragma once

#include <atomic>
#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detect/detector.hpp"
#include "injector.hpp"
#include "scenario/run_facts.hpp"
#include "scenario/scenario.hpp"
#include "util.hpp"

namespace hanglab {

class RunState;  // run/state.hpp
class HarnessWatchdog;
class StackSampler;

struct ArmedFault {
  const FaultSpec* spec = nullptr;
  Injector* injector = nullptr;
  bool fired = false;
  double fired_mono = 0;
  bool output_seen = false;  // at_output: a rank printed the awaited text
  // A fault in effect from launch is recorded once the job shows its first sign of life.
  bool record_pending = false;
  std::string pending_detail;
};

struct SupervisorOptions {
  double tick_s = 0.02;
  double term_grace_s = 2.0;     // SIGTERM -> SIGKILL
  double stack_timeout_s = 20;   // per capture, all ranks in parallel
  bool capture_stacks = true;
  // Python ranks' stacks are sampled (py-spy dump --nonblocking) this often each, so that the
  // pre-teardown snapshot knows where every rank stood (detect/snapshot.hpp); 0: only when
  // the watchdog asks (a busy rank in a silent job).
  double stack_sample_s = 2.0;
  int interrupt_fd = -1;         // readable = Ctrl-C / SIGTERM reached hanglab
  // Called on the supervisor's thread on every tick with a short state ("step 7/12"),
  // and when stacks are captured or teardown starts; for progress displays. Must not throw.
  std::function<void(const std::string&)> on_state;
  // Launcher mode (e.g. mpirun): this one process is exec'd and starts every rank itself;
  // the per-rank specs then only describe the ranks. Rank pids are learned from the
  // ranks' trace `start` events, their output arrives tagged `[1,N]<stdout>:` on the
  // launcher's pipes, and their deaths are seen through pidfds (or /proc) and dated then;
  // how each ended comes from /proc while it is a zombie, else the launcher's report.
  std::optional<LaunchSpec> launcher;
  // Launcher mode where every rank writes to ranks/<r>/stdout.fifo and stderr.fifo, made
  // and read here (torchrun: hanglab_rank_exec redirects each worker there), and records
  // each incarnation's pid in ranks/<r>/exec.jsonl. A restarted rank (torchrun
  // --max-restarts) is the same rank with a new pid: its new incarnation is watched anew.
  bool rank_fifos = false;
  // Launcher mode where a line on the launcher's pipes that starts "N: " is rank N's
  // (srun -l), and "srun: error: HOST: task N: ..." reports how rank N ended.
  bool labelled_output = false;
  // The run's state file (run/state.hpp): every process forked here is recorded in it, so
  // a sweep can end them if hanglab itself is killed. Null = not recorded (unit tests).
  RunState* state = nullptr;
};

class Supervisor : public Job {
 public:
  Supervisor(const Scenario& sc, std::filesystem::path run_dir, std::vector<LaunchSpec> specs,
             std::vector<ArmedFault> faults, SupervisorOptions opts);
  ~Supervisor() override;

  // Runs to the end (all exited, hang declared, deadline or interrupt). Returns the facts;
  // harness.jsonl is written as it goes. Throws only on harness errors, after tearing down.
  RunFacts run();

  // Job
  int world_size() const override;
  pid_t pid_of(int rank) const override;
  bool alive(int rank) const override;
  void fault_signalled(int rank, int signo) override;
  std::string run_dir() const override;

 private:
  struct Rank;
  void launch_all();
  void launch(Rank& r, const LaunchSpec& spec);
  void on_launcher_line(const std::string& line, bool is_err, double t);
  void poll_external_ranks(bool launcher_gone);
  void tail_exec_records(Rank& r);
  void new_incarnation(Rank& r, pid_t pid, int restart_count);
  void make_rank_fifos(Rank& r, const std::filesystem::path& rdir);
  void close_rank_fifos(bool remove);
  void finish_external(Rank& r, const std::string& how);
  void note_gone(Rank& r);
  void note_launcher_abort(double t);
  void pump_output(double timeout_s);
  void drain_fd(Rank& r, int& fd, std::string& buf, int log_fd, bool is_err, bool flush_all);
  void on_output_line(Rank& r, const std::string& line, bool is_err, double t);
  void log_pending_redraw(Rank& r, bool is_err);  // the newest redraw not logged yet, if any
  void note_output_trigger(const std::string& line);  // at_output faults
  void tail_trace(Rank& r);
  void on_trace_event(Rank& r, const nlohmann::json& ev);
  void reap();
  void check_triggers(double now);
  void check_detectors(double now);
  void detect(std::string_view detector, int rank, const std::string& detail, double t);
  void signal_fr_dump(double t);
  // The pre-teardown snapshot (detect/snapshot.hpp), once: at the first detection, else when
  // hanglab's teardown begins.
  void take_snapshot(const std::string& why, double t);
  std::vector<RankWatch*> watches();
  void record_fault(ArmedFault& f, const std::string& detail, double t);
  void capture_stacks_now();
  void teardown(const std::string& reason);
  // supervisor.log in the run directory: the signals the supervisor sends to stop the job,
  // one time-stamped line each, in the words launchers use (torchrun's "Sending process N
  // closing signal SIGTERM"), so the plain logs of a run carry its teardown as a real
  // job's logs carry their launcher's or scheduler's (`hanglab triage --logs-only` reads it).
  void console_signal(const Rank& r, int signo, const std::string& reason);
  void kill_stray_children();
  bool all_exited() const;
  std::string compute_outcome() const;

  const Scenario& sc_;
  std::filesystem::path dir_;
  std::vector<LaunchSpec> specs_;
  std::vector<ArmedFault> faults_;
  SupervisorOptions opts_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unique_ptr<Rank> launcher_;  // launcher mode only
  bool launcher_abort_logged_ = false;
  // When the launcher said it cancels the whole job step (srun: "Job step aborted", Slurm's
  // "*** STEP ... CANCELLED AT ..." at a time limit or scancel); 0 = never.
  double launcher_cancel_t_ = 0;
  int launcher_named_rank_ = -1;  // rank of the last "Process name:" line of the launcher
  std::optional<int> launcher_exit_code_;  // the launcher's own exit code, once reaped
  int restarts_ = 0;              // highest restart count a rank incarnation started with
  double teardown_t_ = 0;         // when our teardown sent SIGTERM (Unix s); 0: not begun
  double teardown_kill_t_ = 0;    // ...and SIGKILL
  JsonlWriter harness_log_;
  RunFacts facts_;
  double launch_mono_ = 0;
  double first_sign_t_ = 0;       // first trace event, output line or exit of any rank (Unix s)
  std::unique_ptr<HarnessWatchdog> watchdog_;
  std::unique_ptr<StackSampler> stacks_;
  bool snapshot_taken_ = false;
  bool in_teardown_ = false;
  bool fr_signalled_ = false;  // [detect] flight_recorder: SIGUSR1 sent on the first detection
  std::string run_id_;
};

}  // namespace hanglab
