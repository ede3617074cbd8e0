// The plain-log reasoner (internal to hanglab_triage): the rules that turn the per-rank
// timeline read from plain logs (logs/timeline.hpp) into an answer. One class, its member
// functions defined by theme in reason/log_*.cpp:
//   log_classify.cpp  run(), classify() (the order of the rules), roots and phases
//   log_init.cpp      duplicate RANK, init / rendezvous failures
//   log_mismatch.cpp  collective mismatches (fields, backend checks, a rank ahead)
//   log_death.cpp     the earliest real failure (root vs echo), a rank that vanished
//   log_absent.cpp    ranks missing by absence from the collective their peers wait in
//   log_waiting.cpp   everybody waits, late arrival, stalls, no failure, slowdown, unknown
//   log_answers.cpp   liveness (slow vs dead), scope, echoes, notes and the four answers
//
// analyze_log_corpus(): the rank timeline and the verdict from plain logs alone. The
// rules argue in the playbook's order, and each one needs positive evidence with a
// file:line; where the logs cannot decide, the answer is "unknown" plus what is provable.
//   one rank's start-up line in two files while another rank never logs -> duplicate RANK;
//   init never finished (no step, no collective) and rendezvous/interface errors -> rendezvous/network;
//   ranks report the same SeqNum with a different OpType or Numel -> collective_mismatch
//     (definite: one rank is in another collective, e.g. validation while others train);
//     so do the backend's own checks (DETAIL-mode fingerprints, Gloo's size check);
//   a rank completed the step its peers are stuck in, or left the loop early -> mismatch;
//   the earliest real failure (OOM, CUDA error, crash, kill, exception) precedes every
//     peer's timeout/comm error -> rank_exit (or data_loading/resource_limit/network by
//     kind); the later errors, the launcher's SIGTERMs and torchrun's summary are echoes;
//   a rank's log stops before its peers report its connections closed -> it died;
//   ranks absent from the collective every other rank reports -> missing by absence;
//     alive (still logging, answering the dump signal, TCP peers timing out rather than
//     seeing a closed socket) -> straggler; in a checkpoint/data phase -> that phase;
//     evaluating alone (its last line an evaluation's start, no waiting peer evaluating) -> slow rank in eval;
//   ranks whose last DETAIL-mode "Running collective" is behind their peers' (no timeout, no death)
//     -> mismatched/skipped collective;
//     otherwise dead-or-hung is unknown, and the report says so;
//   every rank reports the same collective -> a rank that got there only after its peers
//     had timed out was late (straggler); else network (with link errors) or unknown;
//   no error anywhere -> none when every rank finished; a job that slowed down as a whole
//     is a straggler whose rank the logs cannot name; else unknown.
// Timestamps are compared with their resolution (whole-second stamps from dmesg -T or
// torchrun's summary are intervals), and across hosts with a skew allowance.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "triage/logs/timeline.hpp"
#include "triage/reason/next_steps.hpp"
#include "triage/reason/phrases.hpp"

namespace hanglab::plainlog {

using reason::median;

// Clocks of different hosts disagree by this much without anyone noticing (NTP).
constexpr double kSkewS = 1.0;
// Roots this close to the first one died together (a node going down, an OOM sweep).
constexpr double kTogetherS = 1.0;
// A step interval this many times the rank's usual one is a jump.
constexpr double kJumpRatio = 3.0;
constexpr size_t kMaxEchoes = 64;
constexpr const char* kSnapshotNote =
    "no rank logged an error: this assumes the logs are complete (collected after the job stopped); a snapshot of "
    "a running job can show one rank a step ahead of the others";

// The last phase marker before a hang: a waiting rank's own, or the paste's unattributed
// one, when no step line followed it (the save, then the collective that never completed).
struct Marker {
  LogKind kind = LogKind::kNone;
  int rank = -1;
  std::string ref;
  std::string text;
};

// The work a rank is busy with alone while its peers wait (set_busy_alone_straggler): the answer's
// phase, the work ("an evaluation"), how it shows (" (its library's own progress line)" or ""),
// what the rank is doing ("evaluating"), the word for the rank ("the evaluating rank"), and the note's
// last sentence.
struct BusyWork {
  const char* phase;
  const char* work;
  const char* how_seen;
  const char* doing;
  const char* who;
  const char* advice;
};

class LogAnalyzer : public LogTimeline {
 public:
  using LogTimeline::LogTimeline;

  TriageResult run();

 private:
  std::set<int> slow_;
  std::set<int> alive_;
  std::string first_key_;
  bool every_rank_reported_ = false;  // the same failure line from every rank of a world of 2+
  bool partial_join_ = false;         // a store/barrier count of fewer ranks than the world
  bool partial_wait_ = false;         // only some ranks of the world report the stuck collective  // a line proves the job was in init (store, interface, communicator setup)

  // -- log_classify.cpp
  void classify();

  // Ranks whose only trace is the launcher's "exitcode -6" (SIGABRT), several at the same
  // second: ProcessGroupNCCL's watchdog aborts every rank after a collective timeout. They
  // died together of one cause that is not among them.
  std::vector<int> together_;

  // -- log_classify.cpp
  bool aborted_together(const Fail& root);
  void set_aborted_together(const Fail& root);
  bool watchdog_aborted(const Fail& root) const;
  void set_watchdog_aborted(const Fail& root);
  std::vector<const Fail*> all_fails() const;
  // The earliest root candidate: real failures first (OOM, CUDA, crash, kill, exception);
  // a plain non-zero exit only when no rank logged anything stronger.
  const Fail* first_root() const;
  // No other rank had failed on its own well before the root. A launcher's notice of a
  // death ("exited on signal 9", torchrun's summary) is written after the fact: the death
  // is bounded by the rank's last own line instead.
  bool root_precedes_echoes(const Fail& root) const;
  // The phase when no rank's state says more: training once a step or collective is seen,
  // init only when a line proves it, else unknown.
  std::string default_phase() const;
  std::string phase_of_rank(const RankState& s) const;
  // A step or progress line anywhere (any rank, or none): the job had begun to train.
  bool steps_seen() const;
  static bool step_after(const RankLog& g);
  std::optional<Marker> stuck_marker() const;
  // A checkpoint's end with nothing after it still names the save: its closing barrier, or
  // the first collective after it, is what hung.
  static std::string marker_phase(LogKind k);
  void set_first(const Fail& f);
  int last_good_step() const;

  // -- log_init.cpp
  // The same rank's start-up line in two files while some rank of the world never logged:
  // two processes were started with one RANK (a copy-pasted launch line or node_rank).
  bool try_duplicate();
  bool try_init();
  // Ranks that only wait in init_process_group's store barrier, short of the world or past it.
  bool try_store_wait();
  // A RendezvousClosedError at an agent's first join, nothing of the job failed: an earlier run's rendezvous.
  bool closed_before_join(const Fail& pick);  // notes why when true
  bool same_arguments_rejected();  // a usage error every worker shares (one command line from a launcher)

  // -- log_mismatch.cpp
  bool try_mismatch();
  // The odd side of a mismatch is proven only when the majority would stay one if every
  // rank that did not report had joined the minority.
  bool majority_proven(const std::string& pg, size_t maj, size_t min, size_t reporting) const;
  // A mismatch the logs prove without proving which side is odd: no rank is named.
  void unnamed_mismatch(const CollReport& a, const CollReport& b, long long seq, const std::vector<int>& side_a,
                        const std::vector<int>& side_b);
  // The backend said so itself: PyTorch's DETAIL-mode fingerprint check names the ranks;
  // Gloo's size check fires on the rank whose buffer did not match its peer's message.
  bool try_reported_mismatch();
  // The step a stuck rank was in: the failing line names it, else one past its last step.
  int failing_step(const RankState& s) const;
  static int cadence(const RankState& s);
  const StepRec* step_rec(const RankState& s, int step) const;
  Fail step_fail(const RankState& a, int step, const StepRec*& sr) const;
  // A rank that completed the step its peers are stuck in (it skipped their collective),
  // or left the loop with fewer steps while they went on (uneven batches).
  bool try_ahead();
  // DETAIL mode logs every collective a rank enters. Where the logs end with the ranks' last
  // entered collectives at different SequenceNumbers, no rank failed on its own and no rank
  // reported a timeout, the ranks behind (a proven minority) never entered the collective
  // their peers are in: the sequences diverged there (a different op or size: mismatched;
  // the same: skipped). Which side is odd needs the counts to prove it, as for timeouts.
  bool try_started_lag();

  // -- log_death.cpp
  bool has_oom_evidence(const RankState& s) const;
  // An OOM kill line that names no process (Slurm's step summary, a pod's OOMKilled), or null.
  const LogEvent* unowned_oom_report() const;
  void set_root(const Fail& root, bool ordered);
  // A process's own failure (CUDA out of memory / a CUDA error) on a line no rank is named for,
  // taken by the rank whose Python traceback follows it: the paste shows one process (one pid
  // in NCCL's "host:pid:tid [dev]" prefix, one host at most) and one rank, that rank logged no
  // failure of its own before the traceback (whose exception line may be cut), and NCCL's device
  // index is that rank's (one node: torchrun gives local rank N device N, and local ranks are
  // global). The traceback is the rank's exit; anything less proves no rank: null.
  std::optional<Fail> anon_root_owner(const Fail& root) const;
  // torchrun names a "Root Cause" by whole-second timestamps: when it disagrees with the
  // order of the ranks' own lines, say so with both references.
  void check_launcher_claim(const Fail& root);
  // The first dead-peer echo (a closed or reset connection, NCCL's "remote process
  // exited") that only a death explains. A closed connection proves that *some* peer went
  // away; when another rank had already failed on its own before it (a Gloo rank that
  // times out closes all its connections, then exits), that rank closed it, and it says
  // nothing of a silent rank, which may be frozen, not dead. Which peers time out and
  // which see the closed connection is a race of a few ms between their deadlines, so the
  // answer must not depend on it: null then.
  const Fail* dead_peer_echo() const;
  bool try_vanished();

  // -- log_absent.cpp
  // Evidence that a rank was alive after `t`: a line after it.
  bool lines_after(const RankState& s, double t, std::string* where) const;
  bool steps_after(const RankState& s, double t, const StepRec** rec) const;
  // The last interval between step lines against the rank's usual one.
  bool step_jump(const RankState& s, double* usual, double* last, const StepRec** at) const;
  bool try_absent();
  bool watchdog_stuck(const RankState& s) const;
  bool own_work_failed(const RankState& s) const;
  uint64_t ray_hidden_lines() const;
  std::vector<int> provable_absent();
  const CollReport* first_report() const;
  const CollReport* last_report() const;
  const LogEvent* desync_report(std::set<int>& desync) const;
  void cite_absent(const RankState& a, const std::vector<int>& absent, const CollReport& first_rep,
                   const LogEvent* desync_ev);
  const LogEvent* storage_error_near(const RankState& a) const;
  std::string absent_slow(const RankState& a, const StepRec* later, double t_first, const StepRec* jump_at,
                          double usual, double last);
  void absent_unproven(const RankState& a, const std::vector<int>& absent, bool in_desync, Fail& f);
  // ProcessGroupNCCL's desync report (logs/desync.hpp) names, in the default group, the ranks that never
  // joined any collective or that stayed at the lowest count while their peers went on: missing from the
  // collective their peers wait in; why (dead, slow, another path) the report's own words leave open.
  bool try_desync_report();

  // -- log_waiting.cpp
  // Every rank reported the stuck collective, but some only found their peers' sockets
  // closed, after those peers had already timed out waiting for them: they arrived late.
  bool try_late_arrival();
  bool try_all_waiting();
  // Horovod's stall check ("allreduce.avg_loss [missing ranks: 1]") names the ranks that
  // never submitted a tensor their peers wait on: they are missing, proven by the backend;
  // why (dead, slow, another code path) only other lines could say, and none did.
  bool try_stall_check();
  // The JAX/TSL coordination service's verdict that named them (try_stall_check's missing ranks): a
  // heartbeat timeout's stale tasks or a barrier's absent ones.
  bool coordination_missing(const LogEvent& last);
  // A save that began and never reported its end, while the ranks that report wait in a
  // collective and the rest of the world does not: the saving rank is still writing (one
  // rank serialises the state dict or writes to slow storage) and its peers' next
  // collective times out. Which rank saves is named only when its own line says so (a rank
  // whose own save line is its last and that misses the collective is found earlier, by
  // absence: stuck_in_checkpoint / slow_storage); checkpoint_stall is the save whose rank
  // the logs do not name.
  void set_marker_straggler(const Marker& mark, const Fail* first, const char* cause, const char* phase);
  bool set_checkpoint_stall(const Marker& mark, const Fail* first);
  // An evaluation under way (the last phase marker, no step after it) that no waiting rank is
  // part of, while only some ranks report the stuck collective: a rank evaluating alone.
  bool evaluating_alone(const Marker& mark) const;
  // A step or progress line, or a training-loop frame: the job is shown training.
  bool training_shown() const;
  bool store_lost_after_all_ended() const;
  bool set_busy_alone_straggler(const Marker& mark, const Fail* first, const BusyWork& w);
  // A data preparation under way (a library's own progress line, kDataPrep: faiss's k-means) that
  // no waiting rank shows as its own, while only some ranks report the stuck collective.
  bool preparing_alone(const Marker& mark) const;
  // Every op Horovod's stall check names is a TensorFlow variable's broadcast (start-up state sync).
  bool startup_broadcasts_stalled() const;
  bool try_no_failure();
  // Per-step times of a rank, oldest first: its own dur_ms when it logs them, else the
  // intervals between its step lines' own clocks.
  static std::vector<double> step_times(const RankState& s);
  // No failure, but the steps became several times slower and stayed so. Synchronous
  // training runs at the pace of its slowest rank: when every rank slowed alike, which
  // one is the straggler is not in the logs (it needs per-rank compute or wait time).
  bool try_slowdown();
  // The first failure of an answer that blames no rank: its line, without its rank as a
  // culprit (the first rank to report a timeout is a witness, not the cause).
  void set_first_unblamed(const Fail& f);
  void set_unknown();

  // -- log_shapes.cpp (issue 24: rules that read shapes, not wordings)
  // The processes' own join lines against the world: ranks that never joined, stuck in init.
  bool try_membership();
  // A progress bar still counting while its peers time out in a collective: a live straggler, in
  // the phase the bar describes. "" when the bar proves nothing of the sort, else why it does.
  std::string bar_busy_while(const BarSeen& b, const LogEvent& timeout) const;
  bool try_busy_bar();
  // A launcher or agent that received a signal and passed it on before anything failed: the job was
  // stopped from outside (rank_exit/external_signal; a Ctrl-C is a person's reaction: unknown).
  const LogEvent* stop_notice() const;
  bool try_external_stop();
  bool try_job_limit();
  std::string forced_scope_;  // a rule's own scope ("all": a stop of the whole job), else finish() decides

  // -- log_answers.cpp
  void assign_liveness();
  void finish();
  // The scope of a failure in lines no rank can be named for (a paste from some of the
  // processes), after the playbook's question "all ranks stuck (links, rendezvous, a shared
  // dependency) or a subset missing (a rank exited, took another path, stalls)":
  //   a death, a mismatch, a straggler is one process of the job: subset;
  //   a wrong interface or the job's time limit fails every rank alike: all;
  //   otherwise it depends on what the paste shows of the other processes (writers told
  //   apart by NCCL's "host:pid" prefix). When it shows the process(es) where the root
  //   fired AND other processes that only echo it (a closed connection, an abort), the
  //   failure spread: a process's own resource (its GPU memory, its /dev/shm segment) is a
  //   subset, a broken link took the job down with it: all. When only one process is shown,
  //   or every process shown hit the root itself, the paste cannot tell: unknown.
  std::string anon_scope() const;
  void input_notes();
  void build_answers();
  int max_step() const;

  std::optional<Fail> adopted_;  // anon_root_owner()'s answer, when the classification used it
};

}  // namespace hanglab::plainlog
