// Run-record reasoning: per-rank collective sequences that diverge (skipped, extra or
// mismatched collectives, a NaN skip) and a rank that left the loop early (uneven batches).
#include "triage/reason/run_analyzer.hpp"

#include <algorithm>
#include <tuple>

namespace hanglab::reason {

// ---- collective alignment ----------------------------------------------------------

int Analyzer::count_at_step(int rank, int step) const {
  int n = 0;
  for (const auto& [seq, c] : f_[rank].o->colls) n += c.step == step;
  return n;
}

long long Analyzer::first_seq_at_step(int rank, int step) const {
  for (const auto& [seq, c] : f_[rank].o->colls) {
    if (c.step == step) return seq;
  }
  return 0;
}

// The rank is past step s: a later step, a later collective, or a clean exit.
bool Analyzer::moved_on(int rank, int step) const {
  const auto& f = f_[rank];
  if (f.last_step > step) return true;
  for (const auto& [seq, c] : f.o->colls) {
    if (c.step > step) return true;
  }
  return f.last_step >= step && f.clean_exit();
}

const StepRecord* Analyzer::step_record(int rank, int step) const {
  for (const auto& s : f_[rank].o->steps) {
    if (s.step == step) return &s;
  }
  return nullptr;
}

// Picks the majority group; ties go to the group holding the lowest rank.
std::pair<std::vector<int>, std::vector<int>> Analyzer::split_majority(const std::map<Key,
                                                                       std::vector<int>>& groups, bool* tie) {
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
std::optional<Divergence> Analyzer::count_divergence() const {
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

std::optional<Divergence> Analyzer::find_divergence() {
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

void Analyzer::set_divergence(const Divergence& d0) {
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

const Obs* Analyzer::first_echo() const {
  for (const Obs* x : all_obs(false)) {
    if (x->role == ObsKind::kEcho) return x;
  }
  return nullptr;
}

// ---- early clean exit ----------------------------------------------------------------

// Left the training loop: exited 0, or alive in the shutdown phase (a final barrier,
// or lingering) - as opposed to dying.
bool Analyzer::left_loop(const RankFacts& f) const {
  if (f.clean_exit()) return true;
  return f.o->has_trace && f.o->last_phase == "shutdown" &&
         (f.alive_at_end() || f.failure() == nullptr || f.failure()->role == ObsKind::kEcho);
}

bool Analyzer::try_early_exit() {
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
  cite_log_hits(f.rank, hit_data_exhausted);
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

}  // namespace hanglab::reason
