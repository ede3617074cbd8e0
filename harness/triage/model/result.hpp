// Triage model: the answer every reader and reasoner of triage fills in (harness/triage/):
// the per-rank timeline (RankTimeline), the collective ranks are stuck in, the first failure
// and its echoes, the evidence (file:line) and the four answers. A run directory
// (records/ -> reason/) and plain logs (logs/) both end in a TriageResult; answer/ turns it
// into triage.json and the text report. The public entry points are in triage/triage.hpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hanglab {

struct RankTimeline {
  int rank = -1;
  std::string liveness;            // completed | dead | hung | frozen | slow
  int last_step = 0;               // last completed step (0 = none)
  std::string last_phase;          // last phase begun and not ended, else last phase
  long long last_coll_seq = 0;     // last collective entered
  std::string last_coll_op;
  std::string last_coll_edge;      // begin (stuck inside) | end
  std::optional<int> exit_code;
  std::optional<int> signal;
  double mean_step_ms = 0;         // over completed steps
  double last_event_t = 0;         // last trace event of any kind (incl. hb)
  double last_progress_t = 0;      // last non-heartbeat event
  std::string stuck_in;            // innermost interesting frame from stack.txt, if any
  // Median per-step time outside collectives (dur_ms minus time inside the step's
  // collectives): in synchronous DDP every rank's dur_ms is paced by the slowest one,
  // so this is what tells the straggler from the ranks waiting for it.
  double busy_step_ms = 0;
  double last_hb_t = 0;            // last heartbeat (0 = none)
  std::string failure;             // this rank's first failure, short ("" = none)
  // Plain-log triage only (empty/unset for run directories):
  std::string host;
  long long last_coll_numel = -1;  // NumelIn of the collective it reported
  double last_step_t = 0;          // clock of its last step line (0 = none)
  std::string last_line;           // file:line of its last line
  std::string failure_ref;         // file:line of `failure`
  // What the supervisor and the stack capture observed (reason/run_evidence.cpp):
  double exit_t = 0;               // when the supervisor saw it exit (0 = alive at the end)
  bool exit_by_harness = false;    // the harness killed it while tearing the job down
  std::string proc_state;          // R | S | D | T ... just before the stack capture
  std::string stack_class;         // collective | io | data | init | compute | stopped | unknown
  std::vector<std::string> top_frames;  // main thread, innermost first (at most 3)
  std::string progress;            // last progress line, e.g. "epoch 12 (22 steps)"
  double progress_t = 0;           // its clock
  int progress_lines = 0;
  double progress_every_s = 0;     // median interval between progress lines
};

struct StuckCollective {
  std::string op;
  long long seq = 0;
  std::vector<int> waiting_ranks;  // inside the collective
  std::vector<int> absent_ranks;   // never entered it
};

struct Failure {
  int rank = -1;
  double t = 0;
  std::string what;      // e.g. "killed by SIGKILL", "Timed out waiting 5000ms for recv"
  std::string evidence;  // file:line
  bool t_exact = true;   // false: plain logs, the line had no clock and `t` is its writer's previous one (a lower bound)
  std::string cause;     // what the failure itself proves (its observation's cause: cuda_oom, oom, ...), "" = nothing
  int signal = 0;        // the signal it names or died of, 0 = none
};

struct Evidence {
  std::string ref;   // relative path:line, e.g. ranks/1/events.jsonl:42
  std::string text;  // what it shows
};

struct TriageResult {
  std::string phase;                 // init | training | checkpoint | eval | data | shutdown | unknown (no trace)
  std::string scope;                 // all | subset | none
  int world_size = 0;
  int last_good_step = 0;            // last step completed by every rank
  std::vector<RankTimeline> per_rank;
  std::vector<int> missing_ranks;    // ranks not where the others are (absent/exited/diverged)
  std::optional<StuckCollective> stuck_collective;
  std::optional<Failure> first_failure;
  std::vector<Failure> echoes;       // later failures caused by the first
  std::optional<long long> divergence_seq;  // first seq where per-rank (step, op, numel) differ
  std::optional<int> divergence_step;
  std::string category;  // rendezvous | collective_mismatch | rank_exit | straggler | data_loading | network | resource_limit | none | unknown
  std::string cause;     // skipped_collective, uneven_batches, killed, crashed, oom, frozen, ...
  std::string confidence;            // high | medium | low
  std::string summary;               // one-line headline: category, cause, ranks, what happened
  double t0 = 0;                     // run start (Unix s); the text report shows times relative to it
  std::vector<std::string> answers;  // the four questions, one line each
  std::vector<Evidence> evidence;
  std::vector<std::string> next_steps;
  std::string source = "run_dir";    // run_dir (trace + supervisor record) | logs (plain logs only)
  // What the input cannot decide and what is provable instead, plus how the input was
  // read (world size source, unread or truncated files). Empty for most run directories.
  std::vector<std::string> notes;
  // The detector in context: which detector fired and what the ranks were doing then
  // ("harness_watchdog after 8.0 s while rank 0 was in torch.save ...: slow, not dead").
  std::string detector_context;
};

// The largest world triage takes (the biggest jobs on record have ~10^5 ranks). A rank or world
// size at or above it in a log is garbled digits (a cut or corrupted line), never a job: taken as
// no rank, so that one such number cannot size the answer (or its memory) by itself.
constexpr int kMaxWorld = 1 << 17;

struct TriageOptions {
  std::optional<int> world_size;  // --world-size: the job's world size when the logs do not state it
  bool logs_only = false;         // --logs-only: judge a run directory from ranks/*/stdout.log, stderr.log alone
};

}  // namespace hanglab
