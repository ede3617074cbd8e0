// RunFacts: what the supervisor observed during one run, in memory (it is also
// written line by line as harness.jsonl, see below). The expectation checker turns
// RunFacts + TriageResult + the scenario's [expect] into a verdict.
//
// harness.jsonl: one JSON object per line, every line has "t" (Unix seconds,
// microsecond precision) and "ev":
//   run_start  scenario, world_size, deadline_s, port,
//              timeouts{init_s,collective_s,progress_s,heartbeat_s,checkpoint_s,eval_s (null = unset)}
//   launch     rank, pid, argv
//   fault      kind, ranks[], detail          an injector fired (t = firing time)
//   exercised  index, kind, fired, exercised, evidence, adapted[]
//                                             after the run: did the fault show its effect
//   revert     kind, detail                   an injector undid its action
//   detect     detector, rank (-1 = job-wide), detail   first firing of a detector per rank
//   exit       rank, code (int|null), signal (int|null), status (code, or 128+signal)
//   stack      rank, file, tool, ok           stack captured into ranks/<r>/stack.txt
//   teardown   reason (all_exited | hang | deadline | interrupted | error)
//   launcher_exit  pid, code, signal          the launcher process (mpirun, torchrun) ended
//   error_file rank, attempt, path, message    a rank's TORCHELASTIC_ERROR_FILE, after the run
//   torchrun   restarts, tore_down, hung_in_teardown, root_cause{...}, failures[]   after the run
//   run_end    outcome (completed | hang | crash | slow), duration_s
// Detector names: backend_timeout, backend_error, exit_monitor, harness_watchdog,
// heartbeat_loss (triage is added by the checker from the triage answer).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hanglab {

struct Detection {
  std::string detector;
  int rank = -1;     // -1: job-wide
  double t = 0;      // Unix seconds
  std::string detail;
};

struct FaultFiring {
  std::string kind;
  std::vector<int> ranks;
  double t = 0;      // Unix seconds
  std::string detail;
};

struct RankExit {
  int rank = -1;
  std::optional<int> code;    // exit code when exited normally
  std::optional<int> signal;  // signal number when killed
  double t = 0;
  int status() const { return signal ? 128 + *signal : code.value_or(-1); }
};

// The injector's judgment after the run (Injector::manifested), one per [[fault]].
struct FaultManifest {
  int index = 0;                     // position among the [[fault]] tables
  std::string kind;
  bool fired = false;
  bool exercised = false;            // fired AND its effect was observed
  std::string evidence;
  std::vector<std::string> adapted;  // what adapt() arranged in the workload for it
};

// A TORCHELASTIC_ERROR_FILE a rank wrote (torch.distributed.elastic's @record on an uncaught
// exception): under every launcher hanglab points it into the run directory.
struct ErrorFileRecord {
  int rank = -1;
  int attempt = 0;        // torchrun's attempt_N (restart count); 0 under other launchers
  std::string path;       // relative to the run directory
  std::string message;    // message.message, e.g. "RuntimeError: ..."
  std::string timestamp;  // message.extraInfo.timestamp (Unix seconds, as written)
};

// One entry of torchrun's failure summary ("Root Cause (first observed failure)" / "Failures").
struct TorchrunFailure {
  int rank = -1;
  int local_rank = -1;
  int exitcode = 0;       // negative: killed by that signal
  int pid = 0;
  std::string time;       // as printed, whole seconds
  std::string error_file; // "<N/A>" when the rank wrote none
  std::string traceback;  // its one line, or the last line of a traceback (the exception)
};

// What torchrun itself did (launcher = "torchrun"), read from the run directory: the ranks'
// exec records (ranks/<r>/exec.jsonl), torchrun's log (launcher.stderr.log) and harness.jsonl.
struct TorchrunFacts {
  int restarts = 0;                       // highest TORCHELASTIC_RESTART_COUNT a rank started with
  int closing_signals = 0;                // "Sending process P closing signal S" before hanglab's teardown
  bool tore_down = false;                 // it stopped surviving workers itself (closing_signals > 0)
  bool sigkill_escalation = false;        // "Unable to shutdown process ... forcefully exiting via SIGKILL"
  bool alive_at_harness_teardown = false; // still running when hanglab's own teardown began
  bool hung_in_teardown = false;          // sigkill_escalation, or tore down and never finished by itself
  std::optional<int> exit_code;           // torchrun's own exit (null: killed, or not seen)
  std::optional<int> exit_signal;
  std::optional<TorchrunFailure> root_cause;
  std::vector<TorchrunFailure> failures;  // the other entries of the summary
};

struct RunFacts {
  double start_t = 0;                 // launch time, Unix seconds
  double end_t = 0;
  std::string outcome;                // completed | hang | crash | slow
  std::string teardown_reason;        // all_exited | hang | deadline | interrupted | error
  std::vector<FaultFiring> faults;
  std::vector<Detection> detections;  // in time order
  std::vector<RankExit> exits;
  std::vector<FaultManifest> manifests;  // empty when not judged (harness error, old run dir)
  std::vector<ErrorFileRecord> error_files;  // every TORCHELASTIC_ERROR_FILE the ranks wrote
  std::optional<TorchrunFacts> torchrun;     // launcher torchrun only
};

}  // namespace hanglab
