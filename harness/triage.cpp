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
// The harness' `fault` lines and the scenario are never read (see triage_input.cpp).
#include "triage.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "exit_codes.hpp"
#include "triage_input.hpp"
#include "util.hpp"

namespace hanglab {

namespace {

// A comm error ("Connection closed by peer") can reach a peer's trace before the
// supervisor's waitpid loop records the dead rank's exit; this much earlier still
// counts as caused by that death.
constexpr double kExitReportSlackS = 1.0;
// Heartbeat silence, in periods, that makes a live rank frozen (design: 3 periods).
constexpr double kFrozenPeriods = 3.0;
// A rank whose per-step compute is this many times the others' median is slow.
constexpr double kSlowRatio = 2.0;

std::string signal_name(int sig) {
  static const std::map<int, const char*> kNames = {
      {1, "SIGHUP"},  {2, "SIGINT"},   {3, "SIGQUIT"},  {4, "SIGILL"},   {6, "SIGABRT"},  {7, "SIGBUS"},  {8, "SIGFPE"},
      {9, "SIGKILL"}, {11, "SIGSEGV"}, {13, "SIGPIPE"}, {15, "SIGTERM"}, {24, "SIGXCPU"}, {25, "SIGXFSZ"}};
  auto it = kNames.find(sig);
  return it != kNames.end() ? it->second : fmt::format("signal {}", sig);
}

bool is_crash_signal(int sig) { return sig == 4 || sig == 6 || sig == 7 || sig == 8 || sig == 11; }

std::string exit_code_meaning(int code) {
  for (const auto& info : exit_code_table()) {
    if (info.code == code) return info.name;
  }
  return "unknown code";
}

std::string join_ranks(const std::vector<int>& ranks) { return rank_ranges(ranks); }

// "rank 1" / "ranks 0,2,3" / "ranks 0-36,38-63"
std::string ranks_phrase(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", join_ranks(ranks));
}

// "phase backward of step 6" / "end of phase backward of step 3"
std::string phase_phrase(const RankObservations& o) {
  if (o.last_phase.empty()) return "no phase";
  return fmt::format("{}phase {} of step {}", o.last_phase_ended ? "end of " : "", o.last_phase, o.last_phase_step);
}

std::string ev_ref(int rank, int line) { return fmt::format("ranks/{}/events.jsonl:{}", rank, line); }
std::string h_ref(int line) { return fmt::format("harness.jsonl:{}", line); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Phase of a trace mapped onto the answer's phase vocabulary.
std::string answer_phase(const std::string& trace_phase) {
  if (trace_phase == "init" || trace_phase == "checkpoint" || trace_phase == "eval" || trace_phase == "data" ||
      trace_phase == "shutdown")
    return trace_phase;
  return "training";
}

enum class ObsKind {
  kRoot,      // can be the root cause: a death by signal, an exception, a data error
  kEcho,      // a rank that waited and then failed: timeout, comm error, rendezvous timeout
  kTeardown,  // the harness killed it while tearing the job down
};

struct Obs {
  int rank = -1;
  double t = 0;
  std::string what;
  std::string ref;
  ObsKind kind = ObsKind::kEcho;
  std::string cls;  // signal | vanished | timeout | comm | rendezvous | data | usage | other | exit | teardown
  std::optional<int> signal;
  std::optional<int> code;
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
      if (x.kind != ObsKind::kTeardown) return &x;
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

  // ---- setup ---------------------------------------------------------------------

  void setup() {
    const auto& h = in_.harness;
    int world = h.world_size.value_or(0);
    for (const auto& [rank, o] : in_.ranks) world = std::max(world, rank + 1);
    world_ = world;
    r_.world_size = world;

    if (h.heartbeat_s && *h.heartbeat_s > 0) {
      period_ = *h.heartbeat_s;
    } else {
      // No run_start (plain logs): the period is what the heartbeats show.
      std::vector<double> gaps;
      for (const auto& [rank, o] : in_.ranks) {
        for (size_t i = 1; i < o.hb_t.size(); ++i) gaps.push_back(o.hb_t[i] - o.hb_t[i - 1]);
      }
      if (!gaps.empty()) period_ = median(gaps);
    }

    // Report times are relative to the launch; without harness.jsonl, to the first event.
    std::optional<double> t0 = h.start_t;
    double end = 0;
    for (const auto& [rank, o] : in_.ranks) {
      if (o.has_trace && !h.start_t && (!t0 || o.first_t < *t0)) t0 = o.first_t;
      end = std::max(end, o.last_t);
    }
    for (const auto& [rank, e] : h.exits) end = std::max(end, e.t);
    if (h.teardown_t) end = std::max(end, *h.teardown_t);
    if (h.end_t) end = std::max(end, *h.end_t);
    r_.t0 = t0.value_or(0);
    end_t_ = end;
  }

  const RankObservations& obs(int rank) {
    auto it = in_.ranks.find(rank);
    if (it != in_.ranks.end()) return it->second;
    auto& e = empty_[rank];
    e.rank = rank;
    return e;
  }

  double rel(double t) const { return t - r_.t0; }

  // ---- per-rank facts --------------------------------------------------------------

  void build_facts() {
    const auto& h = in_.harness;
    const bool killing_teardown = h.teardown_t && h.teardown_reason != "all_exited";
    for (int rank = 0; rank < world_; ++rank) {
      RankFacts f;
      f.rank = rank;
      f.o = &obs(rank);
      const auto& o = *f.o;
      if (auto it = h.exits.find(rank); it != h.exits.end()) {
        f.exited = true;
        f.code = it->second.code;
        f.signal = it->second.signal;
        f.exit_t = it->second.t;
        f.exit_ref = h_ref(it->second.line);
        // The supervisor says so itself; older records only by time (small tolerance:
        // the kill may be logged a hair before the teardown line).
        // An explicit by_teardown is trusted even without a teardown line (a launcher's abort,
        // e.g. mpirun killing the survivors, is recorded that way by some supervisor versions).
        f.teardown_exit = it->second.by_teardown
                              ? *it->second.by_teardown && (killing_teardown || !h.teardown_t)
                              : killing_teardown && it->second.t >= *h.teardown_t - 1e-3;
      } else if (o.trace_exit_code) {
        f.exited = true;
        f.code = o.trace_exit_code;
        f.exit_t = o.trace_exit_t;
        f.exit_ref = ev_ref(rank, o.trace_exit_line);
      }
      f.obs_end = f.exited ? f.exit_t : end_t_;
      if (f.teardown_exit) f.obs_end = std::min(f.exit_t, h.teardown_t.value_or(f.exit_t));
      // The harness's stack capture stops the ranks it attaches to (ptrace), for as long as
      // gdb takes (up to stack_timeout_s, seconds under load): their silence from then on
      // is ours. Counting it made a rank that was merely waiting look frozen.
      if (h.stacks_t) f.obs_end = std::min(f.obs_end, *h.stacks_t);
      f.has_hb = !o.hb_t.empty();
      // Without heartbeats, silence is counted from the first sign of life: the start
      // event, else the first event, else the launch.
      if (f.has_hb) {
        f.last_hb = o.hb_t.back();
      } else if (o.has_trace) {
        f.last_hb = o.start_t.value_or(o.first_t);
      } else if (auto it = h.launches.find(rank); it != h.launches.end()) {
        f.last_hb = it->second.t;
      } else {
        f.last_hb = r_.t0;
      }
      f.last_hb_line = f.has_hb ? o.last_hb_line : o.start_line;
      for (const auto& s : o.steps) f.last_step = std::max(f.last_step, s.step);
      std::vector<double> busy;
      double sum = 0;
      for (const auto& s : o.steps) {
        sum += s.dur_ms;
        busy.push_back(std::max(0.0, s.dur_ms - s.coll_ms));
      }
      if (!o.steps.empty()) f.mean_step_ms = sum / static_cast<double>(o.steps.size());
      f.busy_ms = median(busy);
      f_.push_back(std::move(f));
    }
    // Observations need every rank's facts (a vanished rank is seen in its peers' errors).
    for (auto& f : f_) build_obs(f);
    demote_sigpipe_echoes();
  }

  // SIGPIPE kills a process that writes to a socket or pipe whose reader is gone. A rank
  // that dies of it after a peer failed wrote to that peer's closed connection: the same
  // echo as a "Connection closed by peer" error (which is what a Python rank, ignoring
  // SIGPIPE, raises instead), not a second rank that failed on its own. The peer's
  // failure may be recorded a little after it (the supervisor's reaping order), hence
  // the slack. A SIGPIPE with no earlier failure anywhere stays a root.
  void demote_sigpipe_echoes() {
    constexpr int kSigpipe = 13;
    for (auto& f : f_) {
      for (auto& x : f.obs) {
        if (x.kind != ObsKind::kRoot || x.cls != "signal" || x.signal != kSigpipe) continue;
        bool peer_failed = false;
        for (const auto& g : f_) {
          if (g.rank == f.rank) continue;
          for (const auto& y : g.obs) {
            peer_failed = peer_failed || (y.kind == ObsKind::kRoot && y.signal != kSigpipe &&
                                          y.t <= x.t + kExitReportSlackS);
          }
        }
        if (!peer_failed) continue;
        x.kind = ObsKind::kEcho;
        x.cls = "comm";
        x.what += ": wrote to the connection of a peer that had already failed";
      }
    }
  }

  // Plain logs (no supervisor record): a rank whose trace simply stops, without an exit
  // event, before a peer reports the connection to it closed, is a process that died.
  std::optional<double> vanished_at(const RankFacts& f) const {
    if (f.exited || in_.harness.teardown_t || !f.o->has_trace) return std::nullopt;
    for (const auto& g : f_) {
      if (g.rank == f.rank) continue;
      for (const auto& e : g.o->errors) {
        if (e.cls == "comm" && e.t >= f.o->last_t) return e.t;
      }
    }
    return std::nullopt;
  }

  void build_obs(RankFacts& f) {
    const auto& h = in_.harness;
    const auto& o = *f.o;
    const ErrorRecord* err = o.errors.empty() ? nullptr : &o.errors.front();
    const auto exit_suffix = [&]() -> std::string {
      if (!f.exited || f.teardown_exit) return "";
      if (f.signal) return fmt::format(" (killed by {})", signal_name(*f.signal));
      return fmt::format(" (exit {})", f.code.value_or(-1));
    };
    if (const auto seen = vanished_at(f); seen && !err) {
      f.vanished = true;
      Obs x;
      x.rank = f.rank;
      x.t = f.o->last_t;
      x.ref = ev_ref(f.rank, f.o->last_line);
      x.cls = "vanished";
      x.kind = ObsKind::kRoot;
      x.what = fmt::format(
          "trace stops at {:+.3f} s without an exit event; a peer lost its connection at {:+.3f} s: "
          "the process died",
          rel(f.o->last_t), rel(*seen));
      f.obs.push_back(std::move(x));
      return;
    }
    if (err && (!f.teardown_exit || err->t < h.teardown_t.value_or(f.exit_t))) {
      Obs x;
      x.rank = f.rank;
      x.t = err->t;
      x.what = err->msg + exit_suffix();
      x.ref = ev_ref(f.rank, err->line);
      x.cls = err->cls;
      x.kind = (x.cls == "timeout" || x.cls == "comm" || x.cls == "rendezvous") ? ObsKind::kEcho : ObsKind::kRoot;
      x.code = f.code;
      x.signal = f.teardown_exit ? std::nullopt : f.signal;
      // A rank that raised a timeout and was then killed by a signal from outside is
      // still an echo; a signal death after an error is reported with the error.
      f.obs.push_back(std::move(x));
    } else if (f.exited && !f.teardown_exit && (f.signal || (f.code && *f.code != 0))) {
      Obs x;
      x.rank = f.rank;
      x.t = f.exit_t;
      x.ref = f.exit_ref;
      x.signal = f.signal;
      x.code = f.code;
      if (f.signal) {
        x.cls = "signal";
        x.kind = ObsKind::kRoot;
        x.what = fmt::format("killed by {} (status {})", signal_name(*f.signal), 128 + *f.signal);
      } else {
        const int c = *f.code;
        x.cls = c == kExitComm         ? "comm"
                : c == kExitTimeout    ? "timeout"
                : c == kExitRendezvous ? "rendezvous"
                : c == kExitData       ? "data"
                : c == kExitUsage      ? "usage"
                : c == kExitException  ? "other"
                                       : "exit";
        x.kind = (c == kExitComm || c == kExitTimeout || c == kExitRendezvous) ? ObsKind::kEcho : ObsKind::kRoot;
        x.what = fmt::format("exited with code {} ({})", c, exit_code_meaning(c));
      }
      f.obs.push_back(std::move(x));
    }
    if (f.teardown_exit) {
      const std::string teardown_why = h.teardown_reason.empty() ? "launcher abort" : h.teardown_reason;
      Obs x;
      x.rank = f.rank;
      x.t = f.exit_t;
      x.ref = f.exit_ref;
      x.kind = ObsKind::kTeardown;
      x.cls = "teardown";
      x.signal = f.signal;
      x.code = f.code;
      x.what =
          f.signal
              ? fmt::format("killed by {} at harness teardown ({})", signal_name(*f.signal), teardown_why)
              : fmt::format("exited with code {} at harness teardown ({})", f.code.value_or(-1), teardown_why);
      f.obs.push_back(std::move(x));
    }
  }

  void build_timelines() {
    for (const auto& f : f_) {
      const auto& o = *f.o;
      RankTimeline t;
      t.rank = f.rank;
      t.last_step = f.last_step;
      t.last_phase = o.last_phase;
      if (!o.colls.empty()) {
        const auto& c = o.colls.rbegin()->second;
        t.last_coll_seq = c.seq;
        t.last_coll_op = c.op;
        t.last_coll_edge = c.end_t ? "end" : "begin";
      }
      if (f.exited) {
        t.exit_code = f.code;
        t.signal = f.signal;
      }
      t.mean_step_ms = f.mean_step_ms;
      t.busy_step_ms = f.busy_ms;
      t.last_event_t = o.last_t;
      t.last_progress_t = o.last_progress_t;
      t.last_hb_t = f.has_hb ? o.hb_t.back() : 0;
      if (o.stack) t.stuck_in = o.stack->frame;
      if (const Obs* x = f.failure()) t.failure = x->what;
      r_.per_rank.push_back(std::move(t));
    }
    int lg = f_.empty() ? 0 : f_.front().last_step;
    for (const auto& f : f_) lg = std::min(lg, f.last_step);
    r_.last_good_step = lg;
  }

  // The collective most ranks are inside at the end (begin without end; a collective
  // that threw has no end either).
  void find_stuck_collective() {
    std::map<long long, std::vector<int>> open;
    for (const auto& f : f_) {
      for (const auto& [seq, c] : f.o->colls) {
        if (!c.end_t) open[seq].push_back(f.rank);
      }
    }
    if (open.empty()) return;
    auto best = open.begin();
    for (auto it = open.begin(); it != open.end(); ++it) {
      if (it->second.size() > best->second.size()) best = it;
    }
    StuckCollective sc;
    sc.seq = best->first;
    // Ranks inside a different collective under the same seq (a final barrier pairing
    // with the peers' allreduce) are not in "it": they count as absent.
    std::map<std::tuple<std::string, int, long long>, int> keys;
    for (int rank : best->second) {
      const auto& c = f_[rank].o->colls.at(sc.seq);
      ++keys[{c.op, c.step, c.numel}];
    }
    const auto key =
        std::max_element(keys.begin(), keys.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    sc.op = std::get<0>(key);
    for (const auto& f : f_) {
      auto it = f.o->colls.find(sc.seq);
      const bool same =
          it != f.o->colls.end() && std::make_tuple(it->second.op, it->second.step, it->second.numel) == key;
      if (same && !it->second.end_t) {
        sc.waiting_ranks.push_back(f.rank);
      } else if (!same) {
        sc.absent_ranks.push_back(f.rank);
      }
    }
    stuck_seq_ = sc.seq;
    r_.stuck_collective = sc;
  }

  const CollRecord* stuck_record(int rank) const {
    if (!stuck_seq_) return nullptr;
    auto it = f_[rank].o->colls.find(*stuck_seq_);
    return it == f_[rank].o->colls.end() ? nullptr : &it->second;
  }

  // ---- classification ---------------------------------------------------------------

  void classify() {
    any_trace_ = std::any_of(f_.begin(), f_.end(), [](const RankFacts& f) { return f.o->has_trace; });
    // Without any trace (a bring-your-own program) "never finished init" means nothing.
    if (any_trace_ && try_duplicate()) return;
    if (any_trace_ && try_init()) return;
    auto div = find_divergence();
    const Obs* death = first_root_death();
    if (div && (!death || div->t <= death->t)) return set_divergence(*div);
    if (try_early_exit()) return;
    if (death && root_precedes_echoes(*death) && !froze_before_death(death->rank)) return set_rank_exit(*death);
    if (try_frozen()) return;
    if (try_late_arrival()) return;
    if (try_absent_alive()) return;
    if (try_slow()) return;
    if (try_all_stuck()) return;
    if (try_healthy()) return;
    if (death) return set_rank_exit(*death, /*ordered=*/false);
    set_unknown();
  }

  std::vector<const Obs*> all_obs(bool with_teardown) const {
    std::vector<const Obs*> v;
    for (const auto& f : f_) {
      for (const auto& x : f.obs) {
        if (with_teardown || x.kind != ObsKind::kTeardown) v.push_back(&x);
      }
    }
    std::stable_sort(v.begin(), v.end(),
                     [](const Obs* a, const Obs* b) { return a->t != b->t ? a->t < b->t : a->rank < b->rank; });
    return v;
  }

  const Obs* first_root_death() const {
    for (const Obs* x : all_obs(false)) {
      if (x->kind == ObsKind::kRoot) return x;
    }
    return nullptr;
  }

  // A death is the root when no peer had already failed on its own before it: comm
  // errors may precede the recorded exit by the supervisor's reporting latency, but a
  // timeout before the death means that rank was already missing for a whole timeout.
  bool root_precedes_echoes(const Obs& d) const {
    for (const Obs* x : all_obs(false)) {
      if (x->kind != ObsKind::kEcho || x->rank == d.rank) continue;
      if (x->cls == "comm" && x->t < d.t - kExitReportSlackS) return false;
      if (x->cls != "comm" && x->t < d.t) return false;
    }
    return true;
  }

  void add_evidence(std::string ref, std::string text) {
    for (const auto& e : r_.evidence) {
      if (e.ref == ref && e.text == text) return;
    }
    r_.evidence.push_back({std::move(ref), std::move(text)});
  }

  void set_first(const Obs& x) {
    r_.first_failure = Failure{x.rank, x.t, x.what, x.ref};
    first_key_ = fmt::format("{}/{}", x.rank, x.ref);
  }

  std::vector<int> ranks_where(const std::function<bool(const RankFacts&)>& pred) const {
    std::vector<int> v;
    for (const auto& f : f_) {
      if (pred(f)) v.push_back(f.rank);
    }
    return v;
  }

  // Evidence for the peers stuck in the collective: the first waiting rank's begin line.
  void cite_stuck(const std::string& why) {
    if (!r_.stuck_collective) return;
    const auto& sc = *r_.stuck_collective;
    for (int rank : sc.waiting_ranks) {
      const CollRecord* c = stuck_record(rank);
      if (!c) continue;
      add_evidence(ev_ref(rank, c->begin_line),
                   fmt::format("{} entered {} seq {} (step {}, numel {}) at {:+.3f} s and never left it{}",
                               ranks_phrase(sc.waiting_ranks), c->op, c->seq, c->step, c->numel, rel(c->begin_t),
                               sc.absent_ranks.empty()
                                   ? ""
                                   : fmt::format("; {} never entered it{}", ranks_phrase(sc.absent_ranks), why)));
      return;
    }
  }

  void cite_log_hits(int rank, const std::set<std::string>& tags, size_t max_hits = 2) {
    size_t n = 0;
    for (const auto& hit : f_[rank].o->log_hits) {
      if (!tags.count(hit.tag) || n >= max_hits) continue;
      add_evidence(fmt::format("ranks/{}/{}:{}", rank, hit.file, hit.line), hit.text);
      ++n;
    }
  }

  bool rank_has_tag(int rank, const std::string& tag) const {
    const auto& hits = f_[rank].o->log_hits;
    return std::any_of(hits.begin(), hits.end(), [&](const LogHit& h) { return h.tag == tag; });
  }

  // ---- duplicate RANK ----------------------------------------------------------------

  // A launched slot whose trace starts as another rank (a copy-pasted launch line, two
  // nodes with the same node_rank): that RANK exists twice and some other not at all.
  // The store only counts arrivals, so rendezvous "completes" and breaks later, in a way
  // that depends on a race; the duplicate is what to report, not the symptom.
  bool try_duplicate() {
    std::map<int, std::vector<int>> claims;  // claimed rank -> slots
    std::vector<int> odd;
    for (const auto& f : f_) {
      if (!f.o->claimed_rank) continue;
      claims[*f.o->claimed_rank].push_back(f.rank);
      if (*f.o->claimed_rank != f.rank) odd.push_back(f.rank);
    }
    if (odd.empty()) return false;
    std::vector<int> unclaimed;
    for (int rank = 0; rank < world_; ++rank) {
      if (!claims.count(rank)) unclaimed.push_back(rank);
    }
    const auto& s = f_[odd.front()];
    const int as = *s.o->claimed_rank;
    const bool init = std::any_of(f_.begin(), f_.end(), [](const RankFacts& f) { return !f.o->init_ended; });
    r_.category = "rendezvous";
    r_.cause = "duplicate_rank";
    r_.phase = init ? "init" : answer_phase(s.o->last_phase);
    r_.missing_ranks = unclaimed;
    r_.confidence = "high";
    Obs x;
    x.rank = s.rank;
    x.t = s.o->start_t.value_or(r_.t0);
    x.ref = ev_ref(s.rank, s.o->start_line);
    x.what = fmt::format("launched as slot {} but started as RANK {}, which slot{} {} also claim{}", s.rank, as,
                         claims[as].size() > 2 ? "s" : "", join_ranks(claims[as]), claims[as].size() > 2 ? "" : "s");
    set_first(x);
    for (int slot : claims[as]) {
      add_evidence(ev_ref(slot, f_[slot].o->start_line),
                   fmt::format("slot {}'s trace starts as rank {} (pid {})", slot, as, f_[slot].o->pid.value_or(0)));
    }
    if (!unclaimed.empty()) {
      add_evidence(ev_ref(s.rank, s.o->start_line),
                   fmt::format("no process started as {}", ranks_phrase(unclaimed)));
    }
    if (const Obs* e = first_echo()) add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, e->what));
    r_.summary = fmt::format("rendezvous (duplicate_rank): RANK {} was started twice (slots {}); {} never started",
                             as, join_ranks(claims[as]), unclaimed.empty() ? "no rank" : ranks_phrase(unclaimed));
    return true;
  }

  // ---- init ------------------------------------------------------------------------

  static std::string lower_copy(std::string v) {
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    return v;
  }

  // Ranks whose own text says the interface does not exist (not the peers' echoes).
  std::vector<int> ifname_ranks() const {
    static const char* kNeedles[] = {"no socket interface", "unable to find address for", "failed to find interface",
                                     "no such device"};
    const auto says = [](const std::string& text) {
      const std::string l = lower_copy(text);
      for (const char* n : kNeedles) {
        if (l.find(n) != std::string::npos) return true;
      }
      return false;
    };
    std::vector<int> out;
    for (const auto& f : f_) {
      bool hit = false;
      for (const auto& e : f.o->errors) hit = hit || says(e.msg);
      for (const auto& h : f.o->log_hits) hit = hit || (h.tag == "wrong_ifname" && says(h.text));
      if (hit) out.push_back(f.rank);
    }
    return out;
  }

  // "missing ranks: 2" / "missing ranks: 1,3" in any rank's error.
  std::vector<int> verdict_missing() const {
    std::set<int> out;
    for (const auto& f : f_) {
      for (const auto& e : f.o->errors) {
        const std::string l = lower_copy(e.msg);
        const auto p = l.find("missing ranks:");
        if (p == std::string::npos) continue;
        size_t i = p + 14;
        while (i < l.size()) {
          while (i < l.size() && (l[i] == ' ' || l[i] == ',')) ++i;
          if (i >= l.size() || !std::isdigit(static_cast<unsigned char>(l[i]))) break;
          int v = 0;
          while (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i]))) v = v * 10 + (l[i++] - '0');
          if (v >= 0 && v < world_) out.insert(v);
        }
      }
    }
    return {out.begin(), out.end()};
  }

  std::vector<int> init_culprits(const std::string& cause) const {
    std::vector<int> c;
    if (cause == "wrong_ifname") {
      c = ifname_ranks();
    } else if (cause == "rendezvous_timeout" || cause == "rendezvous_error") {
      c = verdict_missing();
    }
    if (c.empty() || static_cast<int>(c.size()) >= world_) return {};
    return c;
  }

  // The rank's first event comes after a peer had already failed: it was late, not stuck.
  bool joined_late(int rank) const {
    const auto& o = *f_[rank].o;
    if (!o.has_trace) return false;
    double peer_fail = 0;
    for (const auto& f : f_) {
      if (f.rank == rank) continue;
      for (const auto& e : f.o->errors) {
        if (!peer_fail || e.t < peer_fail) peer_fail = e.t;
      }
    }
    return peer_fail && o.first_t > peer_fail;
  }

  // Host of "(HOST, PORT)" or "master HOST:PORT" in a text; empty when absent.
  static std::string addr_in(const std::string& text) {
    auto p = text.find("connect to (");
    if (p != std::string::npos) {
      p += 12;
      const auto q = text.find(',', p);
      if (q != std::string::npos) return text.substr(p, q - p);
    }
    p = text.find("master ");
    if (p != std::string::npos) {
      p += 7;
      const auto q = text.find(':', p);
      if (q != std::string::npos && q - p < 64) return text.substr(p, q - p);
    }
    return "";
  }

  // The rank's error or start line names a master address that differs from its peers'.
  bool other_master_addr(int rank) const {
    std::string mine;
    for (const auto& e : f_[rank].o->errors) {
      if (mine.empty()) mine = addr_in(e.msg);
    }
    for (const auto& h : f_[rank].o->log_hits) {
      if (mine.empty() && h.tag == "master_addr") mine = addr_in(h.text);
    }
    if (mine.empty()) return false;
    bool other = false;
    for (const auto& f : f_) {
      if (f.rank == rank) continue;
      for (const auto& h : f.o->log_hits) {
        if (h.tag != "master_addr") continue;
        const std::string a = addr_in(h.text);
        if (!a.empty() && a != mine) other = true;
      }
    }
    return other;
  }

  bool try_init() {
    const auto not_init = ranks_where([](const RankFacts& f) { return !f.o->init_ended; });
    if (not_init.empty()) return false;
    r_.phase = "init";
    const auto never_started = ranks_where([](const RankFacts& f) { return !f.o->start_t; });

    // A rank that died during init before anybody timed out is a rank_exit in init.
    if (const Obs* d = first_root_death(); d && root_precedes_echoes(*d)) {
      set_rank_exit(*d);
      r_.phase = "init";
      return true;
    }

    // The messages say which part of rendezvous failed.
    std::map<std::string, std::pair<int, const LogHit*>> tag_hits;  // first hit per tag
    for (const auto& f : f_) {
      for (const auto& hit : f.o->log_hits) {
        if (!tag_hits.count(hit.tag)) tag_hits[hit.tag] = {f.rank, &hit};
      }
    }
    bool rdzv_errors = false;
    bool rdzv_timeouts = false;
    for (const auto& f : f_) {
      for (const auto& e : f.o->errors) {
        if (e.cls == "rendezvous" || e.cls == "timeout") rdzv_errors = true;
        if (e.cls == "timeout" || (e.cls == "rendezvous" && message_says_timeout(e.msg))) rdzv_timeouts = true;
      }
    }
    const auto has = [&](const char* tag) { return tag_hits.count(tag) > 0; };
    std::string cause;
    std::string evidence_tag;
    for (const char* tag : {"wrong_ifname", "connection_refused", "dns_failure", "address_in_use"}) {
      if (has(tag)) {
        cause = tag;
        evidence_tag = tag;
        break;
      }
    }
    if (cause.empty()) {
      if (has("rendezvous_timeout") || rdzv_timeouts) {
        cause = "rendezvous_timeout";
        evidence_tag = has("rendezvous_timeout") ? "rendezvous_timeout" : "";
      } else if (rdzv_errors) {
        cause = "rendezvous_error";
      } else if (!never_started.empty()) {
        cause = "rank_never_started";
      } else {
        cause = "stuck_in_rendezvous";
      }
    }
    // Which rank the init failure is about, when only some ranks carry the cause: the one
    // whose own error names a missing interface, or the ranks the store's verdict names
    // ("missing ranks: N"); the peers' timeouts are echoes of it.
    std::vector<int> culprits;
    if (never_started.empty()) culprits = init_culprits(cause);
    if (!culprits.empty() && (cause == "rendezvous_timeout" || cause == "rendezvous_error") && culprits.size() == 1) {
      const int m = culprits.front();
      if (joined_late(m)) {
        cause = "late_joiner";
      } else if (other_master_addr(m)) {
        cause = "wrong_master_addr";
      }
    }
    r_.category = cause == "wrong_ifname" ? "network" : "rendezvous";
    r_.cause = cause;
    r_.missing_ranks = culprits.empty() ? never_started : culprits;
    r_.confidence = (!never_started.empty() && rdzv_errors) || !evidence_tag.empty() ? "high" : "medium";

    // Evidence: who never started, who waited in init, what they said.
    for (int rank : never_started) {
      const auto& h = in_.harness;
      if (auto it = h.launches.find(rank); it != h.launches.end()) {
        add_evidence(h_ref(it->second.line),
                     fmt::format("rank {} was launched (pid {}) at {:+.3f} s but ranks/{}/events.jsonl has no "
                                 "event: it never reached rendezvous",
                                 rank, it->second.pid, rel(it->second.t), rank));
      } else {
        add_evidence(fmt::format("ranks/{}/events.jsonl", rank), fmt::format("rank {} wrote no trace event", rank));
      }
    }
    for (int rank : not_init) {
      const auto& o = *f_[rank].o;
      if (!o.start_t) continue;
      add_evidence(ev_ref(rank, o.start_line),
                   fmt::format("rank {} started at {:+.3f} s and never ended phase init", rank, rel(*o.start_t)));
      break;
    }
    for (const Obs* x : all_obs(false)) {
      add_evidence(x->ref, fmt::format("rank {}: {}", x->rank, x->what));
      break;
    }
    if (!evidence_tag.empty()) {
      const auto& [rank, hit] = tag_hits[evidence_tag];
      add_evidence(fmt::format("ranks/{}/{}:{}", rank, hit->file, hit->line), hit->text);
    }

    if (!never_started.empty()) {
      const int rank = never_started.front();
      const auto& h = in_.harness;
      Obs x;
      x.rank = rank;
      if (auto it = h.launches.find(rank); it != h.launches.end()) {
        x.t = it->second.t;
        x.ref = h_ref(it->second.line);
        x.what = fmt::format("never started: launched (pid {}) but wrote no trace event", it->second.pid);
      } else {
        x.t = r_.t0;
        x.ref = fmt::format("ranks/{}/events.jsonl", rank);
        x.what = "never started: no trace event";
      }
      set_first(x);
    } else if (auto v = all_obs(false); !v.empty()) {
      const Obs* pick = v.front();
      if (!culprits.empty()) {
        for (const Obs* x : v) {
          if (x->rank == culprits.front()) {
            pick = x;
            break;
          }
        }
        add_evidence(pick->ref, fmt::format("rank {}: {}", pick->rank, pick->what));
      }
      set_first(*pick);
    }
    std::vector<int> waited;
    for (int rank : not_init) {
      if (f_[rank].o->start_t && std::find(culprits.begin(), culprits.end(), rank) == culprits.end())
        waited.push_back(rank);
    }
    std::vector<std::string> parts;
    if (!never_started.empty()) parts.push_back(fmt::format("{} never started", ranks_phrase(never_started)));
    if (!culprits.empty()) {
      parts.push_back(fmt::format("{} {}", ranks_phrase(culprits),
                                  cause == "late_joiner"         ? "started after its peers had already given up"
                                  : cause == "wrong_master_addr" ? "tried another MASTER_ADDR than its peers"
                                  : cause == "wrong_ifname"      ? "failed first: its socket interface does not exist"
                                                                 : "never joined rendezvous"));
    }
    if (!waited.empty()) {
      parts.push_back(fmt::format("{} {}", ranks_phrase(waited),
                                  !culprits.empty() ? "waited for it in rendezvous and failed"
                                  : cause == "rendezvous_timeout" ? "timed out waiting in rendezvous"
                                  : rdzv_errors                 ? "failed in rendezvous"
                                                                : "waited in rendezvous"));
    }
    static const std::map<std::string, const char*> kWhy = {
        {"wrong_ifname", "no usable socket interface (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME)"},
        {"connection_refused", "the rendezvous store refused the connection"},
        {"dns_failure", "a host name did not resolve"},
        {"address_in_use", "the rendezvous port is already in use"}};
    if (auto it = kWhy.find(cause); it != kWhy.end()) parts.push_back(it->second);
    r_.summary = fmt::format("{} ({}): {}", r_.category, r_.cause, fmt::join(parts, "; "));
    return true;
  }

  // ---- collective alignment ----------------------------------------------------------

  struct Key {
    int step;
    std::string op;
    long long numel;
    bool operator<(const Key& o) const { return std::tie(step, op, numel) < std::tie(o.step, o.op, o.numel); }
    bool operator==(const Key& o) const { return step == o.step && op == o.op && numel == o.numel; }
  };

  int count_at_step(int rank, int step) const {
    int n = 0;
    for (const auto& [seq, c] : f_[rank].o->colls) n += c.step == step;
    return n;
  }

  long long first_seq_at_step(int rank, int step) const {
    for (const auto& [seq, c] : f_[rank].o->colls) {
      if (c.step == step) return seq;
    }
    return 0;
  }

  // The rank is past step s: a later step, a later collective, or a clean exit.
  bool moved_on(int rank, int step) const {
    const auto& f = f_[rank];
    if (f.last_step > step) return true;
    for (const auto& [seq, c] : f.o->colls) {
      if (c.step > step) return true;
    }
    return f.last_step >= step && f.clean_exit();
  }

  const StepRecord* step_record(int rank, int step) const {
    for (const auto& s : f_[rank].o->steps) {
      if (s.step == step) return &s;
    }
    return nullptr;
  }

  // Picks the majority group; ties go to the group holding the lowest rank.
  static std::pair<std::vector<int>, std::vector<int>> split_majority(const std::map<Key, std::vector<int>>& groups,
                                                                      bool* tie) {
    auto best = groups.begin();
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      if (it->second.size() > best->second.size() ||
          (it->second.size() == best->second.size() && it->second.front() < best->second.front()))
        best = it;
    }
    *tie = std::count_if(groups.begin(), groups.end(),
                         [&](const auto& g) { return g.second.size() == best->second.size(); }) > 1;
    std::vector<int> minority;
    for (const auto& [k, ranks] : groups) {
      if (&ranks != &best->second) minority.insert(minority.end(), ranks.begin(), ranks.end());
    }
    std::sort(minority.begin(), minority.end());
    return {best->second, minority};
  }

  // Per-step counts: ranks past step s must have issued the same number of collectives
  // in it; a rank past s with fewer than a peer still inside s skipped some.
  std::optional<Divergence> count_divergence() const {
    int max_step = 0;
    for (const auto& f : f_) {
      for (const auto& [seq, c] : f.o->colls) max_step = std::max(max_step, c.step);
      max_step = std::max(max_step, f.last_step);
    }
    for (int s = 1; s <= max_step; ++s) {
      // Grouped by count (carried in Key.step) so split_majority() can pick the majority.
      std::map<Key, std::vector<int>> moved;
      std::vector<std::pair<int, int>> inside;  // rank, begun count
      for (const auto& f : f_) {
        const int n = count_at_step(f.rank, s);
        if (moved_on(f.rank, s)) {
          moved[{n, "", 0}].push_back(f.rank);
        } else if (n > 0) {
          inside.emplace_back(f.rank, n);
        }
      }
      if (moved.empty()) continue;
      Divergence d;
      d.step = s;
      int normal = 0;
      int odd = 0;
      if (moved.size() > 1) {
        auto [maj, min] = split_majority(moved, &d.tie);
        d.majority = maj;
        d.minority = min;
        normal = count_at_step(maj.front(), s);
        odd = count_at_step(min.front(), s);
      } else {
        const int n = moved.begin()->first.step;
        std::vector<int> over;
        for (const auto& [rank, begun] : inside) {
          if (begun > n) over.push_back(rank);
        }
        if (over.empty()) continue;
        const auto& past = moved.begin()->second;
        // Whichever side is smaller is the odd one out.
        if (past.size() <= over.size()) {
          d.minority = past;
          d.majority = over;
          normal = count_at_step(over.front(), s);
          odd = n;
        } else {
          d.minority = over;
          d.majority = past;
          normal = n;
          odd = count_at_step(over.front(), s);
        }
      }
      d.cause = odd < normal ? "skipped_collective" : "extra_collective";
      long long base = 0;
      for (int rank : d.majority) {
        const long long fs = first_seq_at_step(rank, s);
        if (fs && (!base || fs < base)) base = fs;
      }
      if (!base) base = first_seq_at_step(d.minority.front(), s);
      d.seq = base + std::min(odd, normal);
      d.detail = odd < normal ? fmt::format("{} issued {} of the {} collective(s) of step {} that {} issued",
                                            ranks_phrase(d.minority), odd, normal, s, ranks_phrase(d.majority))
                              : fmt::format("{} issued {} collective(s) in step {}, {} only {}",
                                            ranks_phrase(d.minority), odd, s, ranks_phrase(d.majority), normal);
      return d;
    }
    return std::nullopt;
  }

  std::optional<Divergence> find_divergence() {
    std::set<long long> seqs;
    for (const auto& f : f_) {
      for (const auto& [seq, c] : f.o->colls) seqs.insert(seq);
    }
    std::optional<Divergence> by_seq;
    for (long long seq : seqs) {
      std::map<Key, std::vector<int>> groups;
      for (const auto& f : f_) {
        auto it = f.o->colls.find(seq);
        if (it != f.o->colls.end()) groups[{it->second.step, it->second.op, it->second.numel}].push_back(f.rank);
      }
      if (groups.size() < 2) continue;
      Divergence d;
      d.seq = seq;
      auto [maj, min] = split_majority(groups, &d.tie);
      d.majority = maj;
      d.minority = min;
      const CollRecord& cm = f_[maj.front()].o->colls.at(seq);
      const CollRecord& cx = f_[min.front()].o->colls.at(seq);
      d.step = std::min(cm.step, cx.step);
      if (cx.step > cm.step) {
        d.cause = "skipped_collective";
      } else if (cx.step < cm.step) {
        d.cause = "extra_collective";
      } else {
        d.cause = "mismatched_collective";
      }
      d.detail =
          fmt::format("seq {} is {} numel {} of step {} on {} but {} numel {} of step {} on {}", seq, cx.op, cx.numel,
                      cx.step, ranks_phrase(d.minority), cm.op, cm.numel, cm.step, ranks_phrase(d.majority));
      if (d.cause == "mismatched_collective") {
        d.detail = cx.op != cm.op
                       ? fmt::format("seq {} (step {}): op {} on {} vs {} on {}", seq, cm.step, cx.op,
                                     ranks_phrase(d.minority), cm.op, ranks_phrase(d.majority))
                       : fmt::format("seq {} (step {}): {} numel {} on {} vs numel {} on {}", seq, cm.step, cm.op,
                                     cx.numel, ranks_phrase(d.minority), cm.numel, ranks_phrase(d.majority));
      }
      d.t = cx.begin_t;
      d.evidence.push_back(
          {ev_ref(min.front(), cx.begin_line),
           fmt::format("rank {} seq {}: {} numel {} step {}", min.front(), seq, cx.op, cx.numel, cx.step)});
      d.evidence.push_back({ev_ref(maj.front(), cm.begin_line),
                            fmt::format("rank {} seq {}: {} numel {} step {} (as on {})", maj.front(), seq, cm.op,
                                        cm.numel, cm.step, ranks_phrase(maj))});
      by_seq = d;
      break;
    }
    auto by_count = count_divergence();
    if (by_count) {
      // The step's first collective on the odd rank dates the divergence.
      const int m = by_count->minority.front();
      const StepRecord* sr = step_record(m, by_count->step);
      const long long fs = first_seq_at_step(m, by_count->step);
      by_count->t = sr ? sr->t : (fs ? f_[m].o->colls.at(fs).begin_t : f_[m].o->last_progress_t);
    }
    if (by_seq && by_count && by_count->minority == by_seq->minority && by_count->step == by_seq->step) {
      // Same event seen two ways: the counts say skipped vs extra better than the
      // first differing seq (a skipped bucket makes the next op look "mismatched").
      by_seq->cause = by_count->cause;
      by_seq->detail = by_count->detail;
      return by_seq;
    }
    if (by_seq && (!by_count || by_seq->seq <= by_count->seq)) return by_seq;
    return by_count;
  }

  void set_divergence(const Divergence& d0) {
    Divergence d = d0;
    // A rank that skipped the step's collectives because its loss was NaN/inf (no backward
    // phase in that step): the usual `if not isfinite(loss): continue`.
    const StepRecord* nan_sr = nullptr;
    if (d.cause == "skipped_collective" && d.minority.size() == 1) {
      const StepRecord* sr = step_record(d.minority.front(), d.step);
      if (sr && sr->loss_nonfinite && !sr->had_backward) {
        nan_sr = sr;
        d.cause = "nan_skip";
      }
    }
    // A minority collective issued from the shutdown phase (a final barrier) pairs with
    // the peers' next step: the rank ran out of batches, it did not branch.
    for (int rank : d.minority) {
      auto it = f_[rank].o->colls.find(d.seq);
      if (it != f_[rank].o->colls.end() && it->second.phase == "shutdown" && try_early_exit()) {
        r_.divergence_seq = d.seq;
        return;
      }
    }
    r_.category = "collective_mismatch";
    r_.cause = d.cause;
    r_.missing_ranks = d.minority;
    r_.divergence_seq = d.seq;
    r_.divergence_step = d.step;
    r_.confidence = d.tie ? "medium" : "high";
    r_.last_good_step = std::min(r_.last_good_step, d.step - 1);
    const int m = d.minority.front();
    // Where the majority was when it happened says the phase (backward, checkpoint barrier, eval).
    std::string phase;
    for (int rank : d.majority) {
      auto it = f_[rank].o->colls.find(d.seq);
      if (it != f_[rank].o->colls.end()) {
        phase = it->second.phase;
        break;
      }
    }
    r_.phase = answer_phase(phase);

    Obs x;
    x.rank = m;
    x.t = d.t;
    const StepRecord* sr = step_record(m, d.step);
    if (nan_sr) {
      x.what = fmt::format("had a non-finite loss at step {} and skipped backward and the step's collective(s)",
                           d.step);
      x.ref = ev_ref(m, nan_sr->line);
      add_evidence(x.ref, fmt::format("rank {}'s step {} event: loss is not finite (NaN/inf), no backward phase", m,
                                      d.step));
      cite_log_hits(m, {"nan_loss"}, 1);
    } else if (d.cause == "skipped_collective" && sr) {
      const int mine = count_at_step(m, d.step);
      const int theirs = count_at_step(d.majority.front(), d.step);
      x.what = fmt::format(
          "completed step {} with {} of its {} collective(s); its later collectives pair with its "
          "peers' previous ones",
          d.step, mine, theirs);
      x.ref = ev_ref(m, sr->line);
      add_evidence(x.ref, fmt::format("rank {} completed step {} ({:.0f} ms) after {} collective(s), {} issued {}", m,
                                      d.step, sr->dur_ms, mine, ranks_phrase(d.majority), theirs));
    } else {
      x.what = d.detail;
      x.ref = d.evidence.empty() ? ev_ref(m, f_[m].o->last_line) : d.evidence.front().ref;
    }
    set_first(x);
    for (const auto& e : d.evidence) add_evidence(e.ref, e.text);
    for (int rank : d.minority) {
      for (const auto& fe : f_[rank].o->faults) {
        add_evidence(ev_ref(rank, fe.line),
                     fmt::format("rank {}'s own fault hook logged: {} ({})", rank, fe.detail, fe.kind));
      }
    }
    // How it ended: who exited first, who was left waiting.
    for (int rank : d.minority) {
      const auto& f = f_[rank];
      if (f.clean_exit() && f.o->trace_exit_code) {
        add_evidence(ev_ref(rank, f.o->trace_exit_line),
                     fmt::format("rank {} finished {} steps and exited 0 at {:+.3f} s, first of all ranks", rank,
                                 f.last_step, rel(f.exit_t)));
      }
    }
    cite_stuck("");
    if (const Obs* e = first_echo()) add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, e->what));
    r_.summary = fmt::format("collective_mismatch ({}): {}; the collective sequences diverge at seq {} (step {})",
                             d.cause, d.detail, d.seq, d.step);
  }

  const Obs* first_echo() const {
    for (const Obs* x : all_obs(false)) {
      if (x->kind == ObsKind::kEcho) return x;
    }
    return nullptr;
  }

  // ---- early clean exit ----------------------------------------------------------------

  // Left the training loop: exited 0, or alive in the shutdown phase (a final barrier,
  // or lingering) - as opposed to dying.
  bool left_loop(const RankFacts& f) const {
    if (f.clean_exit()) return true;
    return f.o->has_trace && f.o->last_phase == "shutdown" &&
           (f.alive_at_end() || f.failure() == nullptr || f.failure()->kind == ObsKind::kEcho);
  }

  bool try_early_exit() {
    std::vector<int> early;
    for (const auto& f : f_) {
      if (!left_loop(f)) continue;
      bool peers_went_on = false;
      for (const auto& g : f_) {
        if (g.rank == f.rank) continue;
        peers_went_on |= g.last_step > f.last_step;
        for (const auto& [seq, c] : g.o->colls) peers_went_on |= c.step > f.last_step;
      }
      if (peers_went_on) early.push_back(f.rank);
    }
    if (early.empty()) return false;
    const auto is_early = [&](int rank) { return std::find(early.begin(), early.end(), rank) != early.end(); };
    const auto others = ranks_where([&](const RankFacts& g) { return !is_early(g.rank); });
    // When most ranks ran out together, the odd one out is the rank that had more
    // batches (e.g. its own drop_last): it is the one not where the others are.
    const bool flipped = early.size() * 2 > static_cast<size_t>(world_) && !others.empty();
    const auto& f = f_[early.front()];
    r_.category = "collective_mismatch";
    r_.cause = "uneven_batches";
    r_.missing_ranks = flipped ? others : early;
    r_.confidence = r_.stuck_collective ? "high" : "medium";
    r_.divergence_step = f.last_step + 1;
    const long long next_seq = f.o->colls.empty() ? 1 : f.o->colls.rbegin()->first + 1;
    bool others_have_it = false;
    for (int rank : others) others_have_it |= f_[rank].o->colls.count(next_seq) > 0;
    if (others_have_it) r_.divergence_seq = next_seq;
    r_.phase = "training";
    if (r_.stuck_collective) {
      for (int rank : r_.stuck_collective->waiting_ranks) {
        const CollRecord* c = stuck_record(rank);
        if (c && !is_early(rank)) {
          r_.phase = answer_phase(c->phase);
          break;
        }
      }
    }
    const std::string how = f.clean_exit() ? "exited 0" : "entered shutdown";
    const double left_t = f.clean_exit() ? f.exit_t : f.o->last_phase_t;
    Obs x;
    if (flipped) {
      const auto& g = f_[others.front()];
      x.rank = g.rank;
      x.t = left_t;
      x.ref = ev_ref(g.rank, g.o->last_progress_line);
      x.what = fmt::format("went on to step {} after {} ran out of batches at step {}", f.last_step + 1,
                           ranks_phrase(early), f.last_step);
    } else {
      x.rank = f.rank;
      x.t = left_t;
      x.ref = f.clean_exit() && f.o->trace_exit_code ? ev_ref(f.rank, f.o->trace_exit_line)
              : f.clean_exit()                       ? f.exit_ref
                                                     : ev_ref(f.rank, f.o->last_phase_line);
      x.what = fmt::format("left the training loop after step {} and {} while {} went on to step {}", f.last_step, how,
                           ranks_phrase(others), f.last_step + 1);
    }
    set_first(x);
    add_evidence(f.clean_exit() && f.o->trace_exit_code ? ev_ref(f.rank, f.o->trace_exit_line)
                                                        : ev_ref(f.rank, f.o->last_phase_line),
                 fmt::format("{} {} at {:+.3f} s after {} steps", ranks_phrase(early), how, rel(left_t), f.last_step));
    if (const StepRecord* sr = step_record(f.rank, f.last_step)) {
      add_evidence(ev_ref(f.rank, sr->line), fmt::format("rank {}'s last step: {}", f.rank, f.last_step));
    }
    cite_log_hits(f.rank, {"data_exhausted"});
    cite_stuck(" (it had already left the loop)");
    if (const Obs* e = first_echo()) add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, e->what));
    r_.summary = flipped ? fmt::format(
                               "collective_mismatch (uneven_batches): {} had more batches than {}, which left "
                               "the loop after step {}",
                               ranks_phrase(others), ranks_phrase(early), f.last_step)
                         : fmt::format(
                               "collective_mismatch (uneven_batches): {} ran out of batches after step {} and "
                               "{}; {} waited for it in step {}",
                               ranks_phrase(early), f.last_step, how, ranks_phrase(others), f.last_step + 1);
    return true;
  }

  // ---- rank death ---------------------------------------------------------------------

  bool has_oom_evidence(int rank) const {
    if (rank_has_tag(rank, "oom") || f_[rank].o->oom_evidence) return true;
    for (const auto& d : in_.harness.detections) {
      std::string low = d.detail;
      std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
      if ((d.rank == rank || d.rank == -1) &&
          (low.find("oom") != std::string::npos || low.find("out of memory") != std::string::npos))
        return true;
    }
    for (const auto& e : f_[rank].o->errors) {
      std::string low = e.msg;
      std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
      if (low.find("out of memory") != std::string::npos || low.find("bad_alloc") != std::string::npos) return true;
    }
    return false;
  }

  // A data-class exit caused by a too-small /dev/shm: PyTorch's "out of shared memory"
  // (DataLoader worker killed by SIGBUS), or ENOSPC writing a /dev/shm segment.
  bool has_shm_evidence(int rank, const std::string& what) const {
    const auto low = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
      return s;
    };
    const auto shm_text = [](const std::string& l) {
      return l.find("out of shared memory") != std::string::npos ||
             l.find("insufficient shared memory") != std::string::npos ||
             (l.find("bus error") != std::string::npos && l.find("shared memory") != std::string::npos);
    };
    // ENOSPC on a shm segment name ("unable to write to file </hanglab-dl-...>", "/dev/shm/...").
    const auto shm_enospc = [](const std::string& l) {
      return l.find("no space left on device") != std::string::npos &&
             (l.find("/dev/shm") != std::string::npos || l.find("</") != std::string::npos);
    };
    const std::string w = low(what);
    if (shm_text(w) || shm_enospc(w)) return true;
    for (const auto& e : f_[rank].o->errors) {
      const std::string l = low(e.msg);
      if (shm_text(l) || shm_enospc(l)) return true;
    }
    for (const auto& h : f_[rank].o->log_hits) {
      const std::string l = low(h.text);
      if ((h.tag == "bus_error" && shm_text(l)) || (h.tag == "disk_full" && shm_enospc(l))) return true;
    }
    return false;
  }

  void set_rank_exit(const Obs& d, bool ordered = true) {
    const auto& f = f_[d.rank];
    std::string cat = "rank_exit";
    std::string cause;
    if (d.signal) {
      cause = is_crash_signal(*d.signal) ? "crashed" : "killed";
      if (has_oom_evidence(d.rank)) cause = "oom";
    } else if (d.cls == "vanished") {
      // No exit path ran and nobody recorded a status: killed from outside or crashed.
      cause = has_oom_evidence(d.rank) ? "oom" : "killed";
    } else if (d.cls == "data") {
      cat = "data_loading";
      cause = "data_error";
      if (has_shm_evidence(d.rank, d.what)) {
        cause = "shm_exhausted";
      } else if (rank_has_tag(d.rank, "disk_full")) {
        cat = "resource_limit";
        cause = "disk_full";
      }
    } else if (d.cls == "usage") {
      cause = "usage_error";
    } else if (d.cls == "other") {
      cause = has_oom_evidence(d.rank) ? "oom" : "exception";
    } else {
      cause = "nonzero_exit";
    }
    r_.category = cat;
    r_.cause = cause;
    // Ranks that died together (a node going down) are all missing; a SIGTERM right after
    // a kill or crash is someone's teardown of the survivors (mpirun's abort), not a death
    // of its own.
    const auto terminated = [](const std::optional<int>& sig) { return sig && (*sig == 15 || *sig == 2 || *sig == 1); };
    std::vector<int> missing;
    for (const Obs* x : all_obs(false)) {
      if (x->kind == ObsKind::kRoot && x->t <= d.t + kExitReportSlackS &&
          (x->rank == d.rank || !terminated(x->signal) || terminated(d.signal)))
        missing.push_back(x->rank);
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    r_.missing_ranks = missing;
    r_.confidence = !ordered ? "low" : d.cls == "vanished" ? "medium" : "high";
    r_.phase = f.o->init_ended ? answer_phase(f.o->last_phase) : "init";
    // A rank that died while fetching a batch died in training; "data" is for data causes.
    if (r_.phase == "data" && d.cls != "data") r_.phase = "training";

    Obs first = d;
    if (d.signal) {
      // The peers saw its sockets close before the supervisor's waitpid noticed: the
      // process was dead by the first such error.
      for (const Obs* x : all_obs(false)) {
        if (x->kind == ObsKind::kEcho && x->cls == "comm" && x->t < first.t && x->t >= f.o->last_t) first.t = x->t;
      }
    }
    set_first(first);
    add_evidence(d.ref, fmt::format("rank {}: {}", d.rank, d.what));
    if (f.o->has_trace) {
      add_evidence(ev_ref(d.rank, f.o->last_progress_line), fmt::format("rank {}'s last event at {:+.3f} s: {}", d.rank,
                                                                        rel(f.o->last_progress_t), phase_phrase(*f.o)));
    }
    if (!f.o->bad_lines.empty()) {
      add_evidence(ev_ref(d.rank, f.o->bad_lines.back()),
                   "unparsable (truncated) trace line skipped: the process died mid-write");
    }
    if (const auto& oom = f.o->oom_evidence) {
      add_evidence(fmt::format("ranks/{}/{}:{}", d.rank, oom->file, oom->line), oom->text);
    }
    if (r_.cause == "shm_exhausted") cite_log_hits(d.rank, {"shm", "bus_error"});
    cite_log_hits(d.rank, {"oom", "segfault", "bus_error", "abort", "traceback", "disk_full", "cuda_error"});
    cite_stuck("");
    if (const Obs* e = first_echo()) add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, e->what));
    if (!ordered) {
      add_evidence(d.ref, "a peer had already failed before this death: the order does not prove it is the root cause");
    }
    const std::string verb = d.cls == "signal" || d.cls == "vanished" ? "" : "failed: ";
    r_.summary =
        fmt::format("{} ({}): rank {} {}{} at {:+.3f} s{}", cat, cause, d.rank, verb, d.what, rel(first.t),
                    r_.stuck_collective && !r_.stuck_collective->waiting_ranks.empty()
                        ? fmt::format("; {} were left in {} seq {}", ranks_phrase(r_.stuck_collective->waiting_ranks),
                                      r_.stuck_collective->op, r_.stuck_collective->seq)
                        : "");
  }

  // ---- frozen ------------------------------------------------------------------------

  // Heartbeats stop for good at least kFrozenPeriods before the process ends, while
  // another rank keeps beating past that point.
  bool silent_before_end(const RankFacts& f) const {
    const double gap = kFrozenPeriods * period_;
    if (f.obs_end - f.last_hb < gap) return false;
    return std::any_of(f_.begin(), f_.end(), [&](const RankFacts& g) {
      return g.rank != f.rank && g.has_hb && g.last_hb >= f.last_hb + gap;
    });
  }

  // A rank killed from outside after its heartbeats had long stopped froze first: the
  // kill (often by an operator or a watchdog) is not where it went wrong.
  bool froze_before_death(int rank) const {
    const auto& f = f_[rank];
    return f.exited && !f.teardown_exit && f.signal && f.o->has_trace && f.has_hb && silent_before_end(f);
  }

  bool try_frozen() {
    const bool any_hb = std::any_of(f_.begin(), f_.end(), [](const RankFacts& f) { return f.has_hb; });
    if (!any_hb) return false;
    std::vector<int> frozen;
    for (const auto& f : f_) {
      if ((f.alive_at_end() && f.o->has_trace && silent_before_end(f)) || froze_before_death(f.rank)) {
        frozen.push_back(f.rank);
      }
    }
    if (frozen.empty()) return false;
    frozen_.insert(frozen.begin(), frozen.end());
    const auto& f = f_[frozen.front()];
    r_.category = "straggler";
    r_.cause = "frozen";
    r_.missing_ranks = frozen;
    r_.confidence = "high";
    r_.phase = answer_phase(f.o->last_phase);
    if (r_.phase == "data") r_.phase = "training";  // frozen while fetching a batch: still training
    const double silent = f.obs_end - f.last_hb;
    Obs x;
    x.rank = f.rank;
    x.t = f.last_hb;
    x.ref = ev_ref(f.rank, f.last_hb_line);
    x.what = fmt::format("heartbeats stopped (process alive, silent for {:.1f} s = {:.0f} periods) in {}", silent,
                         std::floor(silent / period_), phase_phrase(*f.o));
    set_first(x);
    add_evidence(x.ref, fmt::format("rank {}'s last heartbeat at {:+.3f} s", f.rank, rel(f.last_hb)));
    add_evidence(
        ev_ref(f.rank, f.o->last_progress_line),
        fmt::format("rank {}'s last progress at {:+.3f} s: {}", f.rank, rel(f.o->last_progress_t), phase_phrase(*f.o)));
    for (const auto& g : f_) {
      if (frozen_.count(g.rank) || !g.has_hb) continue;
      add_evidence(ev_ref(g.rank, g.last_hb_line),
                   fmt::format("rank {} still heartbeating at {:+.3f} s", g.rank, rel(g.last_hb)));
      break;
    }
    for (const auto& det : in_.harness.detections) {
      if (det.detector == "heartbeat_loss" && det.rank == f.rank) {
        add_evidence(h_ref(det.line), fmt::format("supervisor: heartbeat_loss on rank {}: {}", f.rank, det.detail));
        break;
      }
    }
    if (f.teardown_exit) {
      add_evidence(f.exit_ref, fmt::format("rank {} was still alive at teardown: {}", f.rank,
                                           f.signal ? "killed by " + signal_name(*f.signal) : "exited"));
    } else if (f.exited) {
      add_evidence(f.exit_ref, fmt::format("rank {} was {} at {:+.3f} s, {:.1f} s after its last heartbeat", f.rank,
                                           f.signal ? "killed by " + signal_name(*f.signal) : "gone", rel(f.exit_t),
                                           f.exit_t - f.last_hb));
    }
    cite_stuck("");
    if (f.o->stack) {
      add_evidence(fmt::format("ranks/{}/stack.txt:{}", f.rank, f.o->stack->line),
                   fmt::format("rank {}'s main thread: {}", f.rank, f.o->stack->frame));
    }
    r_.summary = fmt::format(
        "straggler (frozen): {} stopped heartbeating in {} while alive; {}", ranks_phrase(frozen), phase_phrase(*f.o),
        r_.stuck_collective ? fmt::format("{} waited in {} seq {}", ranks_phrase(r_.stuck_collective->waiting_ranks),
                                          r_.stuck_collective->op, r_.stuck_collective->seq)
                            : "the others kept heartbeating");
    return true;
  }

  // ---- late arrival ----------------------------------------------------------------

  double step_start_t(int rank, int step) const {
    if (const StepRecord* prev = step_record(rank, step - 1)) return prev->t;
    return f_[rank].o->init_end_t;
  }

  // Peers timed out in the stuck collective before this rank even entered it: it was
  // late (a throttled CPU, a slow step), not gone. Its own later error is an echo of
  // theirs, which is why "everybody was inside" must be judged at the first timeout.
  bool try_late_arrival() {
    if (!r_.stuck_collective) return false;
    const auto& sc = *r_.stuck_collective;
    const ErrorRecord* first = nullptr;
    int first_rank = -1;
    for (int rank : sc.waiting_ranks) {
      for (const auto& e : f_[rank].o->errors) {
        if (e.cls == "timeout" && (e.seq == sc.seq || e.seq == 0) && (!first || e.t < first->t)) {
          first = &e;
          first_rank = rank;
        }
      }
    }
    if (!first) return false;
    std::vector<int> late;
    std::vector<int> punctual;
    for (int rank : sc.waiting_ranks) {
      (stuck_record(rank)->begin_t > first->t ? late : punctual).push_back(rank);
    }
    if (late.empty() || punctual.empty()) return false;
    const int m = late.front();
    const CollRecord& c = *stuck_record(m);
    std::vector<double> peers_s;
    for (int rank : punctual) peers_s.push_back(stuck_record(rank)->begin_t - step_start_t(rank, c.step));
    const double mine_s = c.begin_t - step_start_t(m, c.step);
    const double med = median(peers_s);
    slow_.insert(late.begin(), late.end());
    slow_detail_ = fmt::format("took {:.2f} s to reach {} seq {} in step {} vs {:.2f} s median of the others{}", mine_s,
                               sc.op, sc.seq, c.step, med, med > 0 ? fmt::format(" ({:.1f}x)", mine_s / med) : "");
    r_.category = "straggler";
    r_.cause = "slow_rank";
    r_.missing_ranks = late;
    r_.confidence = "medium";
    r_.phase = answer_phase(c.phase);
    Obs x;
    x.rank = m;
    x.t = first->t;
    x.ref = ev_ref(m, c.begin_line);
    x.what = fmt::format("reached {} seq {} only at {:+.3f} s, after rank {} had timed out waiting for it ({:+.3f} s)",
                         sc.op, sc.seq, rel(c.begin_t), first_rank, rel(first->t));
    set_first(x);
    add_evidence(x.ref, fmt::format("rank {} entered {} seq {} at {:+.3f} s: {}", m, sc.op, sc.seq, rel(c.begin_t),
                                    slow_detail_));
    add_evidence(ev_ref(first_rank, first->line),
                 fmt::format("rank {} timed out in seq {} at {:+.3f} s, before rank {} arrived: {}", first_rank, sc.seq,
                             rel(first->t), m, first->msg));
    if (const CollRecord* pc = stuck_record(punctual.front())) {
      add_evidence(ev_ref(punctual.front(), pc->begin_line),
                   fmt::format("{} entered it by {:+.3f} s", ranks_phrase(punctual), rel(pc->begin_t)));
    }
    r_.summary = fmt::format("straggler (slow_rank): {} {}; its peers timed out waiting for it", ranks_phrase(late),
                             slow_detail_);
    return true;
  }

  // ---- absent but alive ----------------------------------------------------------------

  bool try_absent_alive() {
    if (!r_.stuck_collective || r_.stuck_collective->absent_ranks.empty()) return false;
    std::vector<int> absent;
    for (int rank : r_.stuck_collective->absent_ranks) {
      const auto& f = f_[rank];
      if (f.alive_at_end() && f.o->has_trace) absent.push_back(rank);
    }
    if (absent.empty() || absent.size() != r_.stuck_collective->absent_ranks.size()) return false;
    const auto& f = f_[absent.front()];
    const std::string phase = f.o->last_phase;
    detect_slow();
    if (phase == "data") {
      r_.category = "data_loading";
      r_.cause = rank_has_tag(f.rank, "shm") ? "shm_exhausted" : "data_loader_stall";
    } else if (slow_.count(f.rank)) {
      r_.category = "straggler";
      r_.cause = "slow_rank";
    } else if (rank_has_tag(f.rank, "disk_full")) {
      // ENOSPC writing a /dev/shm segment is a too-small /dev/shm, not a full disk.
      const bool shm = has_shm_evidence(f.rank, "");
      r_.category = shm ? "data_loading" : "resource_limit";
      r_.cause = shm ? "shm_exhausted" : "disk_full";
    } else {
      r_.category = "straggler";
      r_.cause = "stuck_in_" + (phase.empty() ? std::string("unknown") : phase);
    }
    r_.missing_ranks = absent;
    r_.confidence = "medium";
    r_.phase = answer_phase(phase);
    Obs x;
    x.rank = f.rank;
    x.t = f.o->last_progress_t;
    x.ref = ev_ref(f.rank, f.o->last_progress_line);
    x.what = fmt::format("alive (heartbeating) but stuck in {}; never entered {} seq {}", phase_phrase(*f.o),
                         r_.stuck_collective->op, r_.stuck_collective->seq);
    set_first(x);
    add_evidence(x.ref, fmt::format("rank {}'s last progress at {:+.3f} s: {}", f.rank, rel(f.o->last_progress_t),
                                    phase_phrase(*f.o)));
    if (f.has_hb) {
      add_evidence(ev_ref(f.rank, f.last_hb_line),
                   fmt::format("rank {} still heartbeating at {:+.3f} s", f.rank, rel(f.last_hb)));
    }
    cite_stuck("");
    if (f.o->stack) {
      add_evidence(fmt::format("ranks/{}/stack.txt:{}", f.rank, f.o->stack->line),
                   fmt::format("rank {}'s main thread: {}", f.rank, f.o->stack->frame));
    }
    cite_log_hits(f.rank, {"shm", "disk_full", "oom"});
    r_.summary = fmt::format("{} ({}): {} alive but stuck in {}; {} waited in {} seq {}", r_.category, r_.cause,
                             ranks_phrase(absent), phase_phrase(*f.o), ranks_phrase(r_.stuck_collective->waiting_ranks),
                             r_.stuck_collective->op, r_.stuck_collective->seq);
    return true;
  }

  // ---- slow --------------------------------------------------------------------------

  void detect_slow() {
    if (!slow_.empty() || !slow_detail_.empty()) return;
    std::vector<std::pair<int, double>> busy;
    for (const auto& f : f_) {
      if (f.o->steps.size() >= 2 && !frozen_.count(f.rank)) busy.emplace_back(f.rank, f.busy_ms);
    }
    if (busy.size() < 2) return;
    std::vector<std::pair<int, double>> ratio;  // candidates: rank -> compute / median of the others
    for (const auto& [rank, ms] : busy) {
      std::vector<double> others;
      for (const auto& [r2, ms2] : busy) {
        if (r2 != rank) others.push_back(ms2);
      }
      const double med = median(others);
      if (med > 0 && ms >= kSlowRatio * med) ratio.emplace_back(rank, ms / med);
    }
    // The ranks that pace the job are those comparable to the slowest one. On a shared
    // host a rank that merely clears kSlowRatio while another is several times slower
    // (rank 3 at 2.1x beside a storage-starved rank 1 at 6.4x, from CPU contention with
    // it) is not a second straggler: keep only ranks within kSlowRatio of the worst.
    double worst = 0;
    for (const auto& [rank, x] : ratio) worst = std::max(worst, x);
    for (const auto& [rank, x] : ratio) {
      if (x * kSlowRatio < worst) continue;
      slow_.insert(rank);
      if (slow_detail_.empty()) {
        double ms = 0, med = 0;
        for (const auto& [r2, ms2] : busy)
          if (r2 == rank) ms = ms2;
        med = ms / x;
        slow_detail_ = fmt::format("{:.1f}x: {:.0f} ms of compute per step vs {:.0f} ms median of the others", x, ms,
                                   med);
      }
    }
    if (slow_detail_.empty()) slow_detail_ = "-";
  }

  bool try_slow() {
    detect_slow();
    if (slow_.empty()) return false;
    // A slow rank that already left (crash) is handled above; here every slow rank
    // still progressed or completed.
    std::vector<int> slow(slow_.begin(), slow_.end());
    const auto& f = f_[slow.front()];
    r_.category = "straggler";
    r_.cause = "slow_rank";
    r_.missing_ranks = slow;
    r_.confidence = f.o->steps.size() >= 3 ? "high" : "medium";
    r_.phase = answer_phase(f.clean_exit() ? "training" : f.o->last_phase);
    std::vector<double> waits;
    for (const auto& g : f_) {
      if (slow_.count(g.rank)) continue;
      for (const auto& s : g.o->steps) waits.push_back(s.coll_ms);
    }
    const double wait = median(waits);
    if (!f.o->steps.empty()) {
      const auto& s0 = f.o->steps.front();
      const auto& sn = f.o->steps.back();
      add_evidence(ev_ref(f.rank, s0.line),
                   fmt::format("rank {} step {}: {:.0f} ms, of which {:.0f} ms inside collectives", f.rank, s0.step,
                               s0.dur_ms, s0.coll_ms));
      add_evidence(ev_ref(f.rank, sn.line),
                   fmt::format("rank {} step {}: {:.0f} ms, of which {:.0f} ms inside collectives", f.rank, sn.step,
                               sn.dur_ms, sn.coll_ms));
    }
    for (const auto& g : f_) {
      if (slow_.count(g.rank) || g.o->steps.empty()) continue;
      const auto& s = g.o->steps.back();
      add_evidence(ev_ref(g.rank, s.line),
                   fmt::format("rank {} step {}: {:.0f} ms, of which {:.0f} ms waiting inside collectives", g.rank,
                               s.step, s.dur_ms, s.coll_ms));
      break;
    }
    r_.summary = fmt::format(
        "straggler (slow_rank): {} computes {}; the others wait ~{:.0f} ms per step for it in "
        "their collectives",
        ranks_phrase(slow), slow_detail_, wait);
    return true;
  }

  // ---- everybody stuck ---------------------------------------------------------------

  bool try_all_stuck() {
    const auto echoes = all_obs(false);
    const bool nobody_missing = !r_.stuck_collective || r_.stuck_collective->absent_ranks.empty();
    const bool all_waiting = r_.stuck_collective && r_.stuck_collective->absent_ranks.empty() &&
                             static_cast<int>(r_.stuck_collective->waiting_ranks.size()) == world_;
    const bool echo_first = !echoes.empty() && echoes.front()->kind == ObsKind::kEcho;
    if (!all_waiting && !(echo_first && nobody_missing)) return false;
    // Link errors that no death explains are what makes it provably "network": a comm
    // error after a peer already gave up (its exit closed the sockets) is an echo.
    bool link_errors = false;
    for (const Obs* x : echoes) {
      if (x->cls != "comm") continue;
      bool peer_gone = false;
      for (const auto& g : f_) {
        if (g.rank != x->rank && g.exited && g.exit_t <= x->t + kExitReportSlackS) peer_gone = true;
        if (const Obs* gx = g.failure(); g.rank != x->rank && gx && gx->t < x->t) peer_gone = true;
      }
      link_errors |= !peer_gone;
    }
    for (const auto& f : f_) {
      link_errors |= rank_has_tag(f.rank, "nccl_error") || rank_has_tag(f.rank, "wrong_ifname");
    }
    r_.category = link_errors ? "network" : "unknown";
    r_.cause = link_errors ? "comm_error" : (echo_first ? "collective_timeout" : "all_ranks_waiting");
    r_.missing_ranks.clear();
    r_.confidence = link_errors ? "medium" : "low";
    std::string phase;
    if (r_.stuck_collective) {
      if (const CollRecord* c = stuck_record(r_.stuck_collective->waiting_ranks.front())) phase = c->phase;
    }
    r_.phase = answer_phase(phase);
    if (echo_first) set_first(*echoes.front());
    cite_stuck("");
    for (const auto& f : f_) {
      if (f.has_hb) {
        add_evidence(ev_ref(f.rank, f.last_hb_line),
                     fmt::format("rank {} heartbeating until {:+.3f} s: alive, not frozen", f.rank, rel(f.last_hb)));
        break;
      }
    }
    for (const auto& f : f_) {
      if (f.o->stack) {
        add_evidence(fmt::format("ranks/{}/stack.txt:{}", f.rank, f.o->stack->line),
                     fmt::format("rank {}'s main thread: {}", f.rank, f.o->stack->frame));
        break;
      }
    }
    if (echo_first)
      add_evidence(echoes.front()->ref, fmt::format("rank {}: {}", echoes.front()->rank, echoes.front()->what));
    r_.summary =
        r_.stuck_collective
            ? fmt::format("{} ({}): all {} ranks wait in {} seq {} (step {}); no rank is missing, none exited first",
                          r_.category, r_.cause, world_, r_.stuck_collective->op, r_.stuck_collective->seq,
                          r_.last_good_step + 1)
            : fmt::format("{} ({}): every rank failed waiting; none is missing", r_.category, r_.cause);
    return true;
  }

  bool try_healthy() {
    if (f_.empty()) return false;
    for (const auto& f : f_) {
      if (!f.clean_exit() || f.last_step != f_.front().last_step) return false;
    }
    r_.category = "none";
    r_.cause = "none";
    r_.confidence = "high";
    r_.phase = "training";
    r_.missing_ranks.clear();
    for (const auto& f : f_) {
      if (f.o->trace_exit_code) {
        add_evidence(ev_ref(f.rank, f.o->trace_exit_line),
                     fmt::format("rank {} exited 0 after {} steps", f.rank, f.last_step));
      } else {
        add_evidence(f.exit_ref, fmt::format("rank {} exited 0 after {} steps", f.rank, f.last_step));
      }
    }
    r_.summary = fmt::format("none: all {} ranks completed {} steps and exited 0", world_, r_.last_good_step);
    return true;
  }

  void set_unknown() {
    r_.category = "unknown";
    r_.cause = "unknown";
    r_.confidence = "low";
    r_.phase = "training";
    const auto v = all_obs(false);
    if (!v.empty()) {
      set_first(*v.front());
      add_evidence(v.front()->ref, fmt::format("rank {}: {}", v.front()->rank, v.front()->what));
    }
    if (r_.stuck_collective) r_.missing_ranks = r_.stuck_collective->absent_ranks;
    cite_stuck("");
    r_.summary = "unknown: no rule explains these observations; see the per-rank timeline";
  }

  // ---- liveness, scope, echoes, answers --------------------------------------------------

  void assign_liveness() {
    const bool any_hb = std::any_of(f_.begin(), f_.end(), [](const RankFacts& f) { return f.has_hb; });
    for (auto& t : r_.per_rank) {
      const auto& f = f_[t.rank];
      if (frozen_.count(f.rank)) {
        t.liveness = "frozen";
      } else if (slow_.count(f.rank) && r_.cause == "slow_rank") {
        t.liveness = "slow";
      } else if (f.clean_exit()) {
        t.liveness = "completed";
      } else if (f.alive_at_end()) {
        t.liveness = any_hb && f.obs_end - f.last_hb >= kFrozenPeriods * period_ ? "frozen" : "hung";
      } else {
        // A rank that failed while waiting (timeout, lost peer) hung; a rendezvous that
        // failed outright (bad interface, refused) did not wait for anything.
        const Obs* x = f.failure();
        const bool waited = x && x->kind == ObsKind::kEcho && (x->cls != "rendezvous" || message_says_timeout(x->what));
        t.liveness = waited ? "hung" : "dead";
      }
    }
  }

  void finish() {
    if (!any_trace_) {
      // Exits and log lines only: the phase is not observable and the answer is weaker.
      r_.phase = "unknown";
      if (r_.confidence == "high") r_.confidence = "medium";
    }
    if (r_.category == "none") {
      r_.scope = "none";
    } else if (r_.missing_ranks.empty() || static_cast<int>(r_.missing_ranks.size()) >= world_) {
      r_.scope = "all";
    } else {
      r_.scope = "subset";
    }
    for (const Obs* x : all_obs(true)) {
      if (fmt::format("{}/{}", x->rank, x->ref) == first_key_) continue;
      r_.echoes.push_back({x->rank, x->t, x->what, x->ref});
    }
    build_answers();
    build_next_steps();
  }

  std::string rank_state_phrase(const RankTimeline& t) const {
    const auto& f = f_[t.rank];
    if (t.liveness == "completed") return fmt::format("completed {} steps", t.last_step);
    if (t.liveness == "frozen" && !f.o->has_trace) return "never wrote a trace event while the process existed";
    if (t.liveness == "frozen") {
      return fmt::format("no heartbeat for {:.1f} s ({:.0f} periods) while the process existed", f.obs_end - f.last_hb,
                         std::floor((f.obs_end - f.last_hb) / period_));
    }
    if (t.liveness == "slow") return slow_detail_;
    if (t.liveness == "dead") return t.failure.empty() ? "exited" : t.failure;
    // hung
    std::string where = t.last_coll_edge == "begin"
                            ? fmt::format("waiting in {} seq {}", t.last_coll_op, t.last_coll_seq)
                            : fmt::format("in {}", t.last_phase.empty() ? "?" : t.last_phase);
    if (!f.o->init_ended) where = "waiting in init";
    const Obs* x = f.failure();
    if (x)
      return fmt::format("{}, then {}", where,
                         x->cls == "timeout"      ? "timed out"
                         : x->cls == "comm"       ? "lost its peer"
                         : x->cls == "rendezvous" ? "rendezvous failed"
                                                  : "failed");
    return where + (f.teardown_exit ? " until teardown" : "");
  }

  void build_answers() {
    auto& a = r_.answers;
    const bool all_completed =
        !f_.empty() && std::all_of(f_.begin(), f_.end(), [](const RankFacts& f) { return f.clean_exit(); });
    const bool init = r_.phase == "init";
    std::vector<int> init_done;
    for (const auto& f : f_) {
      if (f.o->init_ended) init_done.push_back(f.rank);
    }
    if (!any_trace_) {
      a.push_back(
          "Init or training: unknown — no rank wrote a trace (a bring-your-own program?); judged from exits "
          "and log lines only");
    } else if (init) {
      const auto not_init = ranks_where([](const RankFacts& f) { return !f.o->init_ended; });
      std::vector<int> waited;
      for (int rank : not_init) {
        if (f_[rank].o->start_t) waited.push_back(rank);
      }
      std::vector<std::string> parts;
      if (!r_.missing_ranks.empty()) parts.push_back(fmt::format("{} never started", ranks_phrase(r_.missing_ranks)));
      if (!waited.empty()) {
        parts.push_back(
            fmt::format("{} started but never finished rendezvous/process-group creation", ranks_phrase(waited)));
      }
      if (!init_done.empty()) parts.push_back(fmt::format("{} did", ranks_phrase(init_done)));
      a.push_back(fmt::format("Init or training: init — {}", fmt::join(parts, "; ")));
    } else {
      a.push_back(fmt::format("Init or training: training — all {} ranks finished init{}", world_,
                              all_completed ? fmt::format(" and trained {} steps", r_.last_good_step)
                                            : fmt::format("; the failure came after step {}", r_.last_good_step)));
    }

    if (r_.scope == "none") {
      a.push_back("All or subset: none — no rank is missing or stuck");
    } else if (r_.scope == "all") {
      a.push_back(fmt::format(
          "All or subset: all — no single rank is missing{}",
          r_.stuck_collective ? fmt::format("; {} wait in {} seq {}", ranks_phrase(r_.stuck_collective->waiting_ranks),
                                            r_.stuck_collective->op, r_.stuck_collective->seq)
                              : "; every rank failed the same way"));
    } else {
      std::vector<int> others;
      for (const auto& f : f_) {
        if (std::find(r_.missing_ranks.begin(), r_.missing_ranks.end(), f.rank) == r_.missing_ranks.end())
          others.push_back(f.rank);
      }
      std::string rest;
      if (r_.cause == "slow_rank" && all_completed) {
        rest = "waited for it inside every collective";
      } else if (r_.cause == "slow_rank" && r_.stuck_collective) {
        rest = fmt::format("timed out waiting for it in {} seq {}", r_.stuck_collective->op, r_.stuck_collective->seq);
      } else if (r_.phase == "init") {
        rest = "waited for it in rendezvous";
      } else if (r_.stuck_collective) {
        rest = fmt::format("waited in {} seq {}", r_.stuck_collective->op, r_.stuck_collective->seq);
      } else {
        rest = "waited";
      }
      a.push_back(fmt::format("All or subset: subset — {} missing ({}); {} {}", ranks_phrase(r_.missing_ranks),
                              r_.cause, ranks_phrase(others), rest));
    }

    const int lg = r_.last_good_step;
    std::string next;
    if (all_completed) {
      next = "the run then finished";
    } else if (r_.phase == "init") {
      next = "the job never got past process-group creation (before step 1)";
    } else if (r_.phase == "checkpoint") {
      next = fmt::format("the failure hit the checkpoint save after step {}", lg);
    } else if (r_.phase == "eval") {
      next = fmt::format("the failure hit the eval pass after step {}", lg);
    } else if (r_.phase == "data") {
      next = fmt::format("the failure hit data loading of step {}", lg + 1);
    } else if (r_.phase == "shutdown") {
      next = "the failure hit the shutdown after the training loop";
    } else {
      next =
          fmt::format("step {} was a plain training step{}", lg + 1, lg == 0 ? " (the first gradient collective)" : "");
    }
    if (r_.divergence_step && r_.category == "collective_mismatch" && r_.cause != "uneven_batches") {
      next += fmt::format("; the per-rank collective sequences diverged at seq {} in step {}",
                          r_.divergence_seq.value_or(0), *r_.divergence_step);
    }
    if (r_.stuck_collective && r_.category != "none") {
      next += fmt::format("; ranks were left in {} seq {}", r_.stuck_collective->op, r_.stuck_collective->seq);
    }
    a.push_back(fmt::format("Last completed step: {} (by every rank); {}", lg, next));

    std::map<std::string, std::vector<int>> by;
    std::vector<std::string> parts;
    for (const char* l : {"dead", "frozen", "slow", "hung", "completed"}) {
      // Same liveness, same story: one group each (ranks keep their order).
      std::vector<std::pair<std::string, std::vector<int>>> groups;
      for (const auto& t : r_.per_rank) {
        if (t.liveness != l) continue;
        by[l].push_back(t.rank);
        const std::string phrase = rank_state_phrase(t);
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == phrase; });
        if (it == groups.end()) {
          groups.push_back({phrase, {t.rank}});
        } else {
          it->second.push_back(t.rank);
        }
      }
      for (const auto& [phrase, ranks] : groups)
        parts.push_back(fmt::format("{} {} ({})", l, ranks_phrase(ranks), phrase));
    }
    std::string verdict = r_.category == "none"                       ? "neither"
                          : !slow_.empty() && r_.cause == "slow_rank" ? "slow"
                          : by.count("dead") || by.count("frozen")    ? "dead"
                          : r_.category == "collective_mismatch"      ? "dead (deadlock by mismatch)"
                                                                      : "dead (no progress)";
    a.push_back(fmt::format("Slow or dead: {} — {}", verdict, fmt::join(parts, "; ")));
  }

  void build_next_steps() { r_.next_steps = playbook_next_steps(r_); }
};

}  // namespace

std::vector<std::string> playbook_next_steps(const TriageResult& r_) {
  std::vector<std::string> n;
    const std::string& c = r_.category;
    const std::string& k = r_.cause;
    const std::string who = r_.missing_ranks.empty() ? std::string("every rank") : ranks_phrase(r_.missing_ranks);
    if (c == "none") {
      n.push_back("Nothing to fix: keep this run's step times as the baseline for straggler checks.");
      return n;
    }
    if (c == "rendezvous" && k == "duplicate_rank") {
      n.push_back(
          "Two processes were started with the same RANK: check the launch lines (node_rank / --node_rank, "
          "RANK, the Slurm/torchrun/MPI rank mapping) for a copy-pasted value; every rank 0..WORLD_SIZE-1 must be "
          "started exactly once.");
      n.push_back(fmt::format("Find which node should have run {}: it was never started.", who));
      return n;
    }
    if (c == "rendezvous" || (c == "network" && r_.phase == "init")) {
      if (k == "wrong_ifname") {
        n.push_back(
            "Set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to the data-plane interface present on every node "
            "(check `ip -br addr` on each); NCCL_DEBUG=INFO shows which interface was picked.");
      }
      if (k == "wrong_master_addr") {
        n.push_back(fmt::format(
            "{} was launched with another MASTER_ADDR than its peers: fix that node's launch script / env "
            "(echo $MASTER_ADDR on each node, the torchrun --master_addr / --rdzv_endpoint) so every rank "
            "points at rank 0's host.",
            who));
      }
      if (k == "late_joiner") {
        n.push_back(fmt::format(
            "{} started after its peers had already given up on rendezvous: find why it was late (image pull, "
            "slow node boot, scheduler delay) or raise the rendezvous timeout (torchrun --rdzv_conf "
            "join_timeout=..., init_process_group timeout).",
            who));
      }
      if (!r_.missing_ranks.empty() && k != "wrong_master_addr" && k != "late_joiner") {
        n.push_back(
            fmt::format("Find out why {} never joined: its launcher/pod events, its stderr, whether the "
                        "process started at all (kubectl describe pod, scheduler logs).",
                        who));
      }
      n.push_back(
          "Check MASTER_ADDR/MASTER_PORT are reachable from every node (nc -vz), the port is free and not "
          "firewalled, and the host name resolves the same everywhere.");
      n.push_back(
          "Check node_rank/RANK are unique and WORLD_SIZE matches the launched ranks; clear stale elastic "
          "rendezvous state.");
      n.push_back(
          "Reproduce with the smallest setup first (torchrun --standalone on one node), then grow to "
          "multi-node.");
      return n;
    }
    if (c == "collective_mismatch") {
      if (k == "uneven_batches") {
        n.push_back(
            fmt::format("Compare the number of batches per rank: {} ran out first. Check DistributedSampler "
                        "drop_last vs padding, per-rank sample/token counts and variable-length batching.",
                        who));
        n.push_back(
            "Make every rank run the same number of steps (pad or drop the remainder, or use a join "
            "context), so no rank leaves while its peers are inside a collective.");
      } else if (k == "nan_skip") {
        n.push_back(fmt::format(
            "{} skipped backward after a non-finite loss at step {}: never skip a step on one rank only. Agree "
            "across ranks first (all_reduce an is-finite flag and skip on every rank together), or let "
            "torch.cuda.amp.GradScaler skip the optimizer step after backward.",
            who, r_.divergence_step.value_or(r_.last_good_step + 1)));
        n.push_back(
            "Find why the loss went NaN/inf on that rank: that step's batch (bad sample, inf input), the "
            "learning rate / loss scale, torch.autograd.set_detect_anomaly(True) on a re-run.");
      } else {
        n.push_back(
            fmt::format("Look for rank-dependent branches around step {} in {}: a NaN/inf check that skips "
                        "backward, a caught exception, an early continue, rank-specific logging/metrics "
                        "collectives.",
                        r_.divergence_step.value_or(r_.last_good_step + 1), who));
        n.push_back(
            "Compare per-rank collective sequences with TORCH_DISTRIBUTED_DEBUG=DETAIL (it checks op, shape "
            "and order across ranks at each collective).");
        n.push_back(
            "Check find_unused_parameters and dynamic-graph paths (DDP bucket count must be the same on "
            "every rank), and drop_last/padding so every rank runs the same steps.");
      }
      n.push_back("Do not raise the timeout: a mismatch never completes; fix the call sequence.");
      return n;
    }
    if (c == "data_loading" && k == "shm_exhausted" && r_.category == "data_loading") {
      n.push_back(fmt::format(
          "{}'s DataLoader workers ran out of shared memory (/dev/shm): check df -h /dev/shm on its node and "
          "raise it (docker --shm-size=8g or --ipc=host; Kubernetes: mount an emptyDir with medium: Memory "
          "and a sizeLimit at /dev/shm).",
          who));
      n.push_back(
          "Or need less of it: fewer DataLoader workers (num_workers), a smaller prefetch_factor or batch; "
          "num_workers=0 confirms it.");
      n.push_back(
          "Ignore the peers' errors (listed as echoes): they are 'Connection closed' echoes of the rank that "
          "exited.");
      return n;
    }
    if (c == "rank_exit" || c == "resource_limit" || (c == "data_loading" && k == "data_error")) {
      const bool gpu_oom = k == "oom" && r_.first_failure &&
                           r_.first_failure->what.find("CUDA out of memory") != std::string::npos;
      if (gpu_oom) {
        n.push_back(fmt::format("{} ran out of GPU memory (CUDA OOM): check its batch/sequence length at that step, "
                                "activation memory, fragmentation (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) "
                                "and anything else on that GPU (nvidia-smi).",
                                who));
      } else if (k == "killed" || k == "oom") {
        n.push_back(
            fmt::format("Find who killed {}: dmesg -T | grep -i -E 'oom|nvrm|xid', kubectl describe pod / "
                        "get events (OOMKilled, eviction, preemption, drain); exit status 137 = SIGKILL "
                        "(often the OOM killer).",
                        who));
      }
      if (k == "oom") {
        n.push_back(
            "Reduce the rank's memory (batch, activation checkpointing) or raise its memory limit; check "
            "for growth over steps.");
      }
      if (k == "cuda_error") {
        n.push_back(
            fmt::format("{} hit a CUDA error: check dmesg -T | grep -i -E 'xid|nvrm' on its node, nvidia-smi -q "
                        "(ECC, retired pages, clocks), and re-run with CUDA_LAUNCH_BLOCKING=1 to find the kernel.",
                        who));
      }
      if (k == "crashed") {
        n.push_back(
            fmt::format("{} crashed (139 = SIGSEGV): get the core dump / full backtrace; check CUDA/NCCL "
                        "errors and GPU Xid in dmesg, driver and library versions on that node.",
                        who));
      }
      if (k == "exception" || k == "usage_error" || k == "nonzero_exit") {
        n.push_back(
            fmt::format("Read the full traceback in {}'s stderr.log; the peers' timeouts and "
                        "'Connection closed' errors are echoes of it.",
                        who));
      }
      if (k == "shm_exhausted") {
        n.push_back(
            "/dev/shm is too small for NCCL's shared-memory transport: raise it (docker --shm-size, a Kubernetes "
            "emptyDir with medium: Memory mounted at /dev/shm) and check df -h /dev/shm on the node; "
            "NCCL_SHM_DISABLE=1 only to confirm.");
      }
      if (k == "data_error" || k == "disk_full") {
        n.push_back(
            "Check the data path of that rank: missing/short shards, disk space (df -h), permissions of "
            "the checkpoint directory.");
      }
      n.push_back(
          "Ignore the peers' errors (listed as echoes): find the first rank that exited and fix that one; "
          "cordon the node if it repeats.");
      return n;
    }
    if (c == "straggler") {
      if (k == "frozen") {
        n.push_back(
            fmt::format("{} exists but does nothing: check its state (grep State /proc/<pid>/status: T = "
                        "stopped, D = uninterruptible I/O), cgroup freezer, swap storms, node health.",
                        who));
        n.push_back(
            "Capture every rank's stack at once (py-spy dump --pid, gdb -p ... 'thread apply all bt') to "
            "see where the frozen one sits.");
      } else if (k == "slow_rank") {
        n.push_back(
            fmt::format("Profile {} against a peer: data loading vs compute time, CPU contention and "
                        "throttling (cpu.stat nr_throttled), NUMA placement, GPU clocks/ECC, slow shard "
                        "storage (nsys timeline).",
                        who));
        n.push_back(
            "Fix placement or the node rather than raising timeouts; compare step times to the baseline "
            "after the change.");
      } else if (k == "slow_storage") {
        n.push_back(
            fmt::format("Storage stalled {}: check the mount (nfsstat, mount options, server health), write "
                        "latency of the checkpoint path, and kernel 'blocked for more than' / 'not responding' lines.",
                        who));
      } else {
        n.push_back(
            fmt::format("Dump the stack of {} (py-spy dump / gdb) to see what it waits on while its peers "
                        "sit in the collective; check storage latency for checkpoint/eval phases.",
                        who));
      }
      n.push_back("A larger timeout only tells slow from dead; it is not the fix.");
      return n;
    }
    if (c == "data_loading") {
      n.push_back(
          fmt::format("Check {}'s data loader: /dev/shm size (df -h /dev/shm), num_workers, a slow or "
                      "missing shard, a worker deadlock (py-spy dump the loader workers).",
                      who));
      n.push_back("Check per-rank sample counts and DistributedSampler drop_last/padding.");
      return n;
    }
    if (c == "network") {
      if (k == "ib_error") {
        n.push_back(
            "An InfiniBand/RoCE transport error: check ibstat / ibv_devinfo (port state, link errors), the switch "
            "port and cable of the host that logged it, and the GID/MTU settings.");
      }
      n.push_back(
          "Check the links: ibstat / ibv_devinfo, end-to-end MTU, NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME; "
          "run nccl-tests on one node and across nodes.");
      n.push_back(
          "Re-run with NCCL_DEBUG=INFO (reproduction only) and isolate one variable at a time: fewer "
          "ranks, other nodes, TCP instead of RDMA.");
      return n;
    }
    if (!r_.missing_ranks.empty()) {
      n.push_back(
          fmt::format("Find out what {} was doing: the last lines of its own log, kubectl describe pod / get events "
                      "(OOMKilled, eviction), dmesg -T on its node; if it is still alive, py-spy dump --pid it.",
                      who));
      n.push_back(
          "Re-run with TORCH_NCCL_DESYNC_DEBUG=1 (and TORCH_NCCL_TRACE_BUFFER_SIZE) so the timeout report names "
          "the lagging ranks and whether they joined the collective.");
      return n;
    }
    n.push_back(
        "Capture every rank's stack at the same moment (py-spy dump / gdb thread apply all bt) to see "
        "whether all sit in the same collective.");
    n.push_back(
        "Re-run with TORCH_DISTRIBUTED_DEBUG=DETAIL and NCCL_DEBUG=INFO to compare the collective "
        "sequences and the transport.");
    n.push_back("Check the shared dependencies: network links (nccl-tests), the rendezvous store, shared storage.");
    return n;
}

TriageResult triage_run_dir(const std::filesystem::path& dir) {
  const RunObservations in = load_run_observations(dir);
  const bool any_trace =
      std::any_of(in.ranks.begin(), in.ranks.end(), [](const auto& kv) { return kv.second.has_trace; });
  if (!any_trace && !in.ranks.empty()) {
    // A bring-your-own program writes no hanglab trace: its stdout/stderr (and the
    // launcher's console) are all there is, exactly as on a real incident.
    TriageOptions o;
    o.logs_only = true;
    o.world_size = in.harness.world_size;
    try {
      TriageResult r = triage_logs({dir}, o);
      r.notes.insert(r.notes.begin(), "no rank wrote a hanglab trace (a bring-your-own program): judged from the "
                                      "ranks' stdout/stderr and the launcher's console, as plain logs");
      return r;
    } catch (const std::exception&) {
      // No log file either: the supervisor's record is all there is.
    }
  }
  return Analyzer(in).run();
}

nlohmann::json to_json(const TriageResult& r) {
  using nlohmann::json;
  const auto opt = [](const auto& v) -> json { return v ? json(*v) : json(nullptr); };
  json j;
  j["category"] = r.category;
  j["cause"] = r.cause;
  j["confidence"] = r.confidence;
  j["summary"] = r.summary;
  j["phase"] = r.phase;
  j["scope"] = r.scope;
  j["world_size"] = r.world_size;
  j["last_good_step"] = r.last_good_step;
  j["missing_ranks"] = r.missing_ranks;
  json live = json::object();
  for (const auto& t : r.per_rank) live[std::to_string(t.rank)] = t.liveness;
  j["liveness"] = live;
  json per = json::array();
  for (const auto& t : r.per_rank) {
    json p;
    p["rank"] = t.rank;
    p["liveness"] = t.liveness;
    p["last_step"] = t.last_step;
    p["last_phase"] = t.last_phase;
    p["last_coll"] = t.last_coll_seq
                         ? json{{"seq", t.last_coll_seq}, {"op", t.last_coll_op}, {"edge", t.last_coll_edge}}
                         : json(nullptr);
    p["exit_code"] = opt(t.exit_code);
    p["signal"] = opt(t.signal);
    p["mean_step_ms"] = t.mean_step_ms;
    p["busy_step_ms"] = t.busy_step_ms;
    p["last_event_t"] = t.last_event_t;
    p["last_progress_t"] = t.last_progress_t;
    p["last_hb_t"] = t.last_hb_t;
    p["stuck_in"] = t.stuck_in;
    p["failure"] = t.failure;
    if (r.source == "logs") {
      if (t.last_coll_seq && t.last_coll_numel >= 0) p["last_coll"]["numel"] = t.last_coll_numel;
      p["host"] = t.host;
      p["last_step_t"] = t.last_step_t;
      p["last_line"] = t.last_line;
      p["failure_ref"] = t.failure_ref;
    }
    per.push_back(std::move(p));
  }
  j["per_rank"] = per;
  if (r.stuck_collective) {
    const auto& s = *r.stuck_collective;
    j["stuck_collective"] = {
        {"op", s.op}, {"seq", s.seq}, {"waiting_ranks", s.waiting_ranks}, {"absent_ranks", s.absent_ranks}};
  } else {
    j["stuck_collective"] = nullptr;
  }
  const auto failure = [](const Failure& f) {
    json j{{"rank", f.rank}, {"t", f.t}, {"what", f.what}, {"evidence", f.evidence}};
    if (!f.t_exact) j["t_exact"] = false;
    return j;
  };
  j["first_failure"] = r.first_failure ? failure(*r.first_failure) : json(nullptr);
  j["echoes"] = json::array();
  for (const auto& e : r.echoes) j["echoes"].push_back(failure(e));
  j["divergence_seq"] = opt(r.divergence_seq);
  j["divergence_step"] = opt(r.divergence_step);
  j["answers"] = r.answers;
  j["evidence"] = json::array();
  for (const auto& e : r.evidence) j["evidence"].push_back({{"ref", e.ref}, {"text", e.text}});
  j["next_steps"] = r.next_steps;
  j["t0"] = r.t0;
  j["source"] = r.source;
  j["notes"] = r.notes;
  return j;
}

}  // namespace hanglab
