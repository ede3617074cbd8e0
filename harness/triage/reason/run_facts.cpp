// Run-record reasoning, the facts: per-rank exits, heartbeats and steps from the observations,
// each failure seen as a root cause or an echo of one, the rank timelines and the collective
// most ranks are stuck in; classify() (the order of the rules) and the evidence helpers the
// rules share. See run_analyzer.hpp.
#include "triage/reason/run_analyzer.hpp"

#include <algorithm>
#include <tuple>

#include "exit_codes.hpp"
#include "util.hpp"

namespace hanglab::reason {


std::string exit_code_meaning(int code) {
  for (const auto& info : exit_code_table()) {
    if (info.code == code) return info.name;
  }
  return "unknown code";
}

std::string join_ranks(const std::vector<int>& ranks) { return rank_ranges(ranks); }

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

// ---- setup ---------------------------------------------------------------------

void Analyzer::setup() {
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

const RankObservations& Analyzer::obs(int rank) {
  auto it = in_.ranks.find(rank);
  if (it != in_.ranks.end()) return it->second;
  auto& e = empty_[rank];
  e.rank = rank;
  return e;
}

// ---- per-rank facts --------------------------------------------------------------

void Analyzer::build_facts() {
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
void Analyzer::demote_sigpipe_echoes() {
  constexpr int kSigpipe = 13;
  for (auto& f : f_) {
    for (auto& x : f.obs) {
      if (x.role != ObsKind::kRoot || x.cls != "signal" || x.signal != kSigpipe) continue;
      bool peer_failed = false;
      for (const auto& g : f_) {
        if (g.rank == f.rank) continue;
        for (const auto& y : g.obs) {
          peer_failed = peer_failed || (y.role == ObsKind::kRoot && y.signal != kSigpipe &&
                                        y.t <= x.t + kExitReportSlackS);
        }
      }
      if (!peer_failed) continue;
      x.role = ObsKind::kEcho;
      x.cls = "comm";
      x.what += ": wrote to the connection of a peer that had already failed";
    }
  }
}

// Plain logs (no supervisor record): a rank whose trace simply stops, without an exit
// event, before a peer reports the connection to it closed, is a process that died.
std::optional<double> Analyzer::vanished_at(const RankFacts& f) const {
  if (f.exited || in_.harness.teardown_t || !f.o->has_trace) return std::nullopt;
  for (const auto& g : f_) {
    if (g.rank == f.rank) continue;
    for (const auto& e : g.o->errors) {
      if (e.cls == "comm" && e.t >= f.o->last_t) return e.t;
    }
  }
  return std::nullopt;
}

void Analyzer::build_obs(RankFacts& f) {
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
    x.role = ObsKind::kRoot;
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
    x.says = err->says;
    x.cause = err->says.cause;
    x.role = (x.cls == "timeout" || x.cls == "comm" || x.cls == "rendezvous") ? ObsKind::kEcho : ObsKind::kRoot;
    x.code = f.code.value_or(kNoCode);
    x.signal = f.teardown_exit ? 0 : f.signal.value_or(0);
    // A rank that raised a timeout and was then killed by a signal from outside is
    // still an echo; a signal death after an error is reported with the error.
    f.obs.push_back(std::move(x));
  } else if (f.exited && !f.teardown_exit && (f.signal || (f.code && *f.code != 0))) {
    Obs x;
    x.rank = f.rank;
    x.t = f.exit_t;
    x.ref = f.exit_ref;
    x.signal = f.signal.value_or(0);
    x.code = f.code.value_or(kNoCode);
    if (f.signal) {
      x.cls = "signal";
      x.role = ObsKind::kRoot;
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
      x.role = (c == kExitComm || c == kExitTimeout || c == kExitRendezvous) ? ObsKind::kEcho : ObsKind::kRoot;
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
    x.role = ObsKind::kTeardown;
    x.cls = "teardown";
    x.signal = f.signal.value_or(0);
    x.code = f.code.value_or(kNoCode);
    x.what =
        f.signal
            ? fmt::format("killed by {} at harness teardown ({})", signal_name(*f.signal), teardown_why)
            : fmt::format("exited with code {} at harness teardown ({})", f.code.value_or(-1), teardown_why);
    f.obs.push_back(std::move(x));
  }
}

void Analyzer::build_timelines() {
  for (const auto& f : f_) {
    const auto& o = *f.o;
    RankTimeline t;
    t.rank = f.rank;
    for (const auto& n : in_.harness.nodes)
      if (std::find(n.ranks.begin(), n.ranks.end(), f.rank) != n.ranks.end()) t.host = n.name;
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
void Analyzer::find_stuck_collective() {
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

const CollRecord* Analyzer::stuck_record(int rank) const {
  if (!stuck_seq_) return nullptr;
  auto it = f_[rank].o->colls.find(*stuck_seq_);
  return it == f_[rank].o->colls.end() ? nullptr : &it->second;
}

// ---- classification ---------------------------------------------------------------

void Analyzer::classify() {
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

std::vector<const Obs*> Analyzer::all_obs(bool with_teardown) const {
  std::vector<const Obs*> v;
  for (const auto& f : f_) {
    for (const auto& x : f.obs) {
      if (with_teardown || x.role != ObsKind::kTeardown) v.push_back(&x);
    }
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const Obs* a, const Obs* b) { return a->t != b->t ? a->t < b->t : a->rank < b->rank; });
  return v;
}

// The first death, except that a death by SIGTERM/SIGINT/SIGHUP reported with another rank's
// kill or crash (inside the reporting slack: a dying process closes its sockets before the kernel
// reports its exit, and two exits reaped together share one time) is the launcher stopping a
// survivor (torchrun's SIGTERM after a worker died), not the first death.
const Obs* Analyzer::first_root_death() const {
  const Obs* first = nullptr;
  for (const Obs* x : all_obs(false)) {
    if (x->role != ObsKind::kRoot) continue;
    if (!first) {
      first = x;
      if (!stop_signal(first->signal)) return first;
    } else if (x->t > first->t + kExitReportSlackS) {
      break;
    } else if (!stop_signal(x->signal) && x->rank != first->rank) {
      return x;
    }
  }
  return first;
}

// A death is the root when no peer had already failed on its own before it: comm
// errors may precede the recorded exit by the supervisor's reporting latency, but a
// timeout before the death means that rank was already missing for a whole timeout.
bool Analyzer::root_precedes_echoes(const Obs& d) const {
  for (const Obs* x : all_obs(false)) {
    if (x->role != ObsKind::kEcho || x->rank == d.rank) continue;
    if (x->cls == "comm" && x->t < d.t - kExitReportSlackS) return false;
    if (x->cls != "comm" && x->t < d.t) return false;
  }
  return true;
}

void Analyzer::add_evidence(std::string ref, std::string text) {
  for (const auto& e : r_.evidence) {
    if (e.ref == ref && e.text == text) return;
  }
  r_.evidence.push_back({std::move(ref), std::move(text)});
}

void Analyzer::set_first(const Obs& x) {
  r_.first_failure = Failure{x.rank, x.t, x.what, x.ref, true, x.cause, x.signal};
  first_key_ = fmt::format("{}/{}", x.rank, x.ref);
}

std::vector<int> Analyzer::ranks_where(const std::function<bool(const RankFacts&)>& pred) const {
  std::vector<int> v;
  for (const auto& f : f_) {
    if (pred(f)) v.push_back(f.rank);
  }
  return v;
}

// Evidence for the peers stuck in the collective: the first waiting rank's begin line.
void Analyzer::cite_stuck(const std::string& why) {
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

void Analyzer::cite_log_hits(int rank, HitTest which, size_t max_hits) {
  size_t n = 0;
  for (const auto& hit : f_[rank].o->log_hits) {
    if (!which(hit) || n >= max_hits) continue;
    add_evidence(fmt::format("ranks/{}/{}:{}", rank, hit.file, hit.line), hit.text);
    ++n;
  }
}

bool Analyzer::rank_has_hit(int rank, HitTest which) const {
  const auto& hits = f_[rank].o->log_hits;
  return std::any_of(hits.begin(), hits.end(), which);
}

}  // namespace hanglab::reason

namespace hanglab {

TriageResult analyze_run(const RunObservations& in) { return reason::Analyzer(in).run(); }

}  // namespace hanglab
