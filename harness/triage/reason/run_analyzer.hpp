// The run-record reasoner (internal to hanglab_triage): the per-rank facts it derives from a
// run directory's observations (records/run_dir.hpp) and the rules that turn them into an
// answer. One class, its member functions defined by theme in reason/run_*.cpp:
//   run_facts.cpp     observations -> per-rank facts (exits, heartbeats, steps), each failure
//                     seen as a root or an echo, the rank timelines, the stuck collective;
//                     classify() (the order of the rules below) and the evidence helpers
//   run_init.cpp      duplicate RANK, init / rendezvous failures
//   run_mismatch.cpp  collective sequences that diverge, uneven batches (early clean exit)
//   run_death.cpp     a rank that died first (root vs echo), a rank that froze
//   run_stuck.cpp     late arrival, absent but alive, slow rank, everybody stuck, healthy
//   run_answers.cpp   liveness (slow vs dead), scope, echoes and the four answers
//
// The analyzer: builds the rank timeline from a run directory's observations and
// classifies the failure, in the order the playbook argues from:
//   init not finished -> rendezvous / network (or a rank that died during init);
//   collective sequences diverge -> collective_mismatch (wins over the later exits:
//     on Gloo a skipped collective pairs silently and only breaks at the end);
//   a rank left the loop cleanly with fewer steps -> collective_mismatch/uneven_batches;
//   a rank died first -> rank_exit (its peers' errors are echoes);
//   a live rank's heartbeats stopped -> straggler/frozen;
//   a live rank is absent from the collective its peers wait in -> data/straggler;
//   a rank computes much slower -> straggler/slow_rank;
//   everybody waits in the same collective -> network/unknown (scope all);
//   everybody exited 0 with the same steps -> none.
// A slot whose trace starts as another rank comes first (a duplicate RANK breaks init in
// race-dependent ways; the duplicate is the cause). A run in which no rank wrote a trace
// (a bring-your-own program) is judged from its logs by the plain-log triage.
// The harness' `fault` lines and the scenario are never read (see records/run_dir.cpp).
#pragma once

#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "signal_name.hpp"
#include "triage/logs/parse.hpp"
#include "triage/model/observations.hpp"
#include "triage/model/result.hpp"
#include "triage/reason/next_steps.hpp"
#include "triage/reason/phrases.hpp"

namespace hanglab::reason {

// ---- stdout/stderr lines, by the plain-log classifier's reading of each (LogHit::says) ----------
inline bool hit_oom(const LogHit& h) { return h.says.cause == "oom" || h.says.cause == "cuda_oom"; }
inline bool hit_shm(const LogHit& h) { return h.says.cause == "shm_exhausted"; }
inline bool hit_disk_full(const LogHit& h) { return h.says.read.cause == "disk_full"; }
// Memory (host, CUDA, /dev/shm) or disk space ran out.
inline bool hit_resource(const LogHit& h) { return !h.says.cause.empty() || hit_disk_full(h); }
// A failure of the rank's own (a crash, an OOM, an exception, a full disk) or a traceback's header.
inline bool hit_root(const LogHit& h) {
  return h.says.read.role == Role::kRoot || h.says.read.kind == LogKind::kTraceback;
}
inline bool hit_dns(const LogHit& h) { return h.says.read.cause == "dns_failure"; }
// The peer closed or reset the connection: it is gone.
inline bool hit_peer_closed(const LogHit& h) { return h.says.read.kind == LogKind::kCommClosed; }
// NCCL's own error, its communicator aborted, or a socket interface that does not exist.
inline bool hit_link_error(const LogHit& h) {
  const LogKind k = h.says.read.kind;
  return k == LogKind::kNcclError || k == LogKind::kNcclSystemError || k == LogKind::kCommAborted ||
         h.says.no_interface;
}
inline bool hit_data_exhausted(const LogHit& h) { return h.says.read.kind == LogKind::kDataExhausted; }
// What an init failure's line proves: the cause the classifier reads in it (wrong_ifname for a socket
// interface that does not exist, connection_refused, dns_failure, address_in_use, rendezvous_timeout...).
inline std::string init_cause_of(const LogHit& h) { return h.says.no_interface ? "wrong_ifname" : h.says.read.cause; }

// A comm error ("Connection closed by peer") can reach a peer's trace before the
// supervisor's waitpid loop records the dead rank's exit; this much earlier still
// counts as caused by that death.
constexpr double kExitReportSlackS = 1.0;
// SIGTERM, SIGINT, SIGHUP: what a launcher or a terminal sends to stop a job; a rank dying of one
// next to a peer's kill or crash was being stopped, it did not fail first.
constexpr bool stop_signal(int sig) { return sig == 15 || sig == 2 || sig == 1; }
// Ranks of one node that died within this of each other died with the node (kill_node: same instant).
constexpr double kNodeLossWindowS = 0.05;
// Heartbeat silence, in periods, that makes a live rank frozen (design: 3 periods).
constexpr double kFrozenPeriods = 3.0;
// A rank whose per-step compute is this many times the others' median is slow.
constexpr double kSlowRatio = 2.0;

using hanglab::is_crash_signal;  // signal_name.hpp
std::string exit_code_meaning(int code);
std::string join_ranks(const std::vector<int>& ranks);
// "phase backward of step 6" / "end of phase backward of step 3"
std::string phase_phrase(const RankObservations& o);
std::string ev_ref(int rank, int line);  // ranks/<r>/events.jsonl:<line>
std::string h_ref(int line);             // harness.jsonl:<line>
double median(std::vector<double> v);
// Phase of a trace mapped onto the answer's phase vocabulary.
std::string answer_phase(const std::string& trace_phase);


// A run record's failure observation (model/observations.hpp): its role is root (a death by signal,
// an exception, a data error), echo (a rank that waited and then failed: timeout, comm error,
// rendezvous timeout) or teardown (the harness killed it while tearing the job down); cls the
// workload's error class. Its clock is always the record's own.
using ObsKind = Role;
struct Obs : Observation {
  TextFacts says;  // what its error's message says (records/message_facts.cpp); empty for an exit
  Obs() {
    has_t = true;
    role = Role::kEcho;
  }
};

struct RankFacts {
  int rank = -1;
  const RankObservations* o = nullptr;
  bool exited = false;
  std::optional<int> code;
  std::optional<int> signal;
  double exit_t = 0;
  std::string exit_ref;
  bool teardown_exit = false;  // exit caused by the harness tearing the job down
  bool vanished = false;       // no exit record, but peers lost it: the process died
  double obs_end = 0;          // until when the process is known to have existed
  bool has_hb = false;
  double last_hb = 0;  // last heartbeat, else first trace event
  int last_hb_line = 0;
  int last_step = 0;
  double mean_step_ms = 0;
  double busy_ms = 0;
  std::vector<Obs> obs;  // this rank's failures in time order

  bool clean_exit() const { return exited && !teardown_exit && !signal && code && *code == 0; }
  bool alive_at_end() const { return (!exited && !vanished) || teardown_exit; }
  const Obs* failure() const {
    for (const auto& x : obs) {
      if (x.role != ObsKind::kTeardown) return &x;
    }
    return nullptr;
  }
};

struct Divergence {
  long long seq = 0;
  int step = 0;
  std::vector<int> minority;
  std::vector<int> majority;
  std::string cause;   // skipped_collective | extra_collective | mismatched_collective
  std::string detail;  // one sentence
  double t = 0;
  std::vector<Evidence> evidence;
  bool tie = false;
};

class Analyzer {
 public:
  explicit Analyzer(const RunObservations& in) : in_(in) {}

  TriageResult run() {
    setup();
    build_facts();
    build_timelines();
    find_stuck_collective();
    classify();
    assign_liveness();
    finish();
    return std::move(r_);
  }

 private:
  const RunObservations& in_;
  TriageResult r_;
  int world_ = 0;
  double period_ = 1.0;
  double end_t_ = 0;
  std::map<int, RankObservations> empty_;  // placeholders for ranks without a folder
  std::vector<RankFacts> f_;               // index = rank
  std::set<int> frozen_;
  std::set<int> slow_;
  std::string slow_detail_;
  std::optional<long long> stuck_seq_;
  bool any_trace_ = true;
  std::string first_key_;  // "rank/ref" of the observation used as first failure

  // ---- setup (run_facts.cpp) --------------------------------------------------------------------
  void setup();
  const RankObservations& obs(int rank);
  double rel(double t) const { return t - r_.t0; }

  // ---- per-rank facts (run_facts.cpp) -----------------------------------------------------------
  void build_facts();
  void demote_sigpipe_echoes();
  std::optional<double> vanished_at(const RankFacts& f) const;
  void build_obs(RankFacts& f);
  void build_timelines();
  void find_stuck_collective();
  const CollRecord* stuck_record(int rank) const;

  // ---- classification (run_facts.cpp) -----------------------------------------------------------
  void classify();
  std::vector<const Obs*> all_obs(bool with_teardown) const;
  const Obs* first_root_death() const;
  bool root_precedes_echoes(const Obs& d) const;
  void add_evidence(std::string ref, std::string text);
  void set_first(const Obs& x);
  std::vector<int> ranks_where(const std::function<bool(const RankFacts&)>& pred) const;
  void cite_stuck(const std::string& why);
  // A test of a log line by the classifier's reading of it (LogHit::says), never by its text.
  using HitTest = bool (*)(const LogHit&);
  void cite_log_hits(int rank, HitTest which, size_t max_hits = 2);
  bool rank_has_hit(int rank, HitTest which) const;

  // ---- duplicate RANK (run_init.cpp) ------------------------------------------------------------
  bool try_duplicate();

  // ---- init (run_init.cpp) ----------------------------------------------------------------------
  std::vector<int> ifname_ranks() const;
  // [topology] nodes > 1: peers that could not connect in init to an address of a node's
  // second interface (no route): that node's ranks advertised an interface that exists and
  // reaches no peer. Fills the node's ranks and the address; false when no error says so.
  bool unreachable_ifname(std::vector<int>& ranks, std::string& addr, std::string& node) const;
  std::vector<int> verdict_missing() const;
  std::vector<int> init_culprits(const std::string& cause) const;
  bool joined_late(int rank) const;
  bool other_master_addr(int rank) const;
  bool try_init();
  void cite_init(const std::vector<int>& never_started, const std::vector<int>& not_init,
                 const std::string& evidence_cause, std::map<std::string, std::pair<int, const LogHit*>>& cause_hits);
  void init_summary(const std::vector<int>& never_started, const std::vector<int>& culprits,
                    const std::vector<int>& not_init, const std::string& cause, bool rdzv_errors);

  // ---- collective alignment (run_mismatch.cpp) --------------------------------------------------
  struct Key {
    int step;
    std::string op;
    long long numel;
    bool operator<(const Key& o) const { return std::tie(step, op, numel) < std::tie(o.step, o.op, o.numel); }
    bool operator==(const Key& o) const { return step == o.step && op == o.op && numel == o.numel; }
  };
  int count_at_step(int rank, int step) const;
  long long first_seq_at_step(int rank, int step) const;
  bool moved_on(int rank, int step) const;
  const StepRecord* step_record(int rank, int step) const;
  static std::pair<std::vector<int>, std::vector<int>> split_majority(const std::map<Key, std::vector<int>>& groups,
                                                                      bool* tie);
  std::optional<Divergence> count_divergence() const;
  std::optional<Divergence> find_divergence();
  void set_divergence(const Divergence& d0);
  const Obs* first_echo() const;

  // ---- early clean exit (run_mismatch.cpp) ------------------------------------------------------
  bool left_loop(const RankFacts& f) const;
  bool try_early_exit();

  // ---- rank death (run_death.cpp) ---------------------------------------------------------------
  bool has_oom_evidence(int rank) const;
  bool has_shm_evidence(int rank) const;
  void set_rank_exit(const Obs& d, bool ordered = true);

  // ---- frozen (run_death.cpp) -------------------------------------------------------------------
  bool silent_before_end(const RankFacts& f) const;
  bool froze_before_death(int rank) const;
  bool try_frozen();

  // ---- late arrival (run_stuck.cpp) -------------------------------------------------------------
  double step_start_t(int rank, int step) const;
  bool try_late_arrival();

  // ---- absent but alive (run_stuck.cpp) ---------------------------------------------------------
  bool try_absent_alive();

  // ---- slow (run_stuck.cpp) ---------------------------------------------------------------------
  void detect_slow();
  bool try_slow();

  // ---- everybody stuck (run_stuck.cpp) ----------------------------------------------------------
  bool try_all_stuck();
  bool try_healthy();
  void set_unknown();

  // ---- liveness, scope, echoes, answers (run_answers.cpp) ---------------------------------------
  void assign_liveness();
  void finish();
  std::string rank_state_phrase(const RankTimeline& t) const;
  void build_answers();
  void build_next_steps() { r_.next_steps = playbook_next_steps(r_); }
};

}  // namespace hanglab::reason
