// Plain-log reasoning: collective mismatches -- differing fields, the backend's own checks,
// a rank a step ahead or out of the loop (see log_analyzer.hpp).
#include "triage/reason/log_analyzer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "util.hpp"

namespace hanglab::plainlog {

bool LogAnalyzer::try_mismatch() {
  // Same PG and SeqNum, different OpType or Numel: definite (and it names the rank that
  // ran the odd collective, where Gloo's size check may name its neighbour).
  std::map<std::pair<std::string, long long>, std::vector<const CollReport*>> at;
  for (const auto& rep : reports_) at[{rep.pg, rep.seq}].push_back(&rep);
  for (const auto& [key, reps] : at) {
    std::map<std::tuple<std::string, long long, long long>, std::vector<const CollReport*>> groups;
    for (const CollReport* rep : reps) {
      if (!rep->fields_complete || rep->op.empty()) continue;
      groups[{rep->op, rep->numel_in, rep->numel_out}].push_back(rep);
    }
    if (groups.size() < 2) continue;
    auto maj = groups.begin();
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      if (it->second.size() > maj->second.size()) maj = it;
    }
    const bool tie = std::count_if(groups.begin(), groups.end(),
                                   [&](auto& g) { return g.second.size() == maj->second.size(); }) > 1;
    std::vector<int> minority, majority;
    const CollReport* odd = nullptr;
    for (auto& [k, g] : groups) {
      for (const CollReport* rep : g) (&g == &maj->second ? majority : minority).push_back(rep->rank);
      if (&g != &maj->second && !odd) odd = g.front();
    }
    std::sort(minority.begin(), minority.end());
    std::sort(majority.begin(), majority.end());
    const CollReport* norm = maj->second.front();
    const bool op_differs = odd->op != norm->op;
    r_.category = "collective_mismatch";
    r_.cause = "mismatched_collective";
    if (!majority_proven(key.first, majority.size(), minority.size(), reps.size()) || tie) {
      unnamed_mismatch(*odd, *norm, key.second, minority, majority);
      return true;
    }
    // A rank that ran out of data and went to its final barrier pairs that barrier with
    // its peers' next gradient collective: uneven batches, not a code-path branch.
    for (const LogEvent* e : rs_[minority.front()].evs) {
      if (e->kind == LogKind::kDataExhausted) {
        r_.cause = "uneven_batches";
        add_evidence(ref(*e), fmt::format("rank {}: {}", minority.front(), short_text(e->text)));
      }
    }
    r_.missing_ranks = minority;
    r_.divergence_seq = key.second;
    r_.confidence = tie ? "medium" : "high";
    const std::string pg = key.first == "default" ? "" : fmt::format(" of PG {}", key.first);
    const std::string detail =
        op_differs ? fmt::format("at SeqNum {}{} {} ran {} while {} ran {}", key.second, pg, reason::ranks_phrase_counted(minority),
                                 odd->op, reason::ranks_phrase_counted(majority), norm->op)
                   : fmt::format("at SeqNum {}{} {} ran {} with NumelIn={} while {} ran it with NumelIn={}",
                                 key.second, pg, reason::ranks_phrase_counted(minority), odd->op, odd->numel_in,
                                 reason::ranks_phrase_counted(majority), norm->numel_in);
    // What the odd rank was doing says the phase (validation while others train).
    const RankState& m = rs_[minority.front()];
    r_.phase = phase_of_rank(m);
    Fail f = make_fail(*odd->ev, odd->rank);
    f.what = fmt::format("entered a different collective than its peers: {} SeqNum={} NumelIn={} (peers: {} "
                         "NumelIn={})",
                         odd->op, key.second, odd->numel_in, norm->op, norm->numel_in);
    set_first(f);
    add_evidence(ref(*odd->ev), fmt::format("rank {}: {} SeqNum={} NumelIn={} NumelOut={}", odd->rank, odd->op,
                                            key.second, odd->numel_in, odd->numel_out));
    add_evidence(ref(*norm->ev), fmt::format("rank {} (as {}): {} SeqNum={} NumelIn={} NumelOut={}", norm->rank,
                                             reason::ranks_phrase_counted(majority), norm->op, key.second, norm->numel_in,
                                             norm->numel_out));
    if (m.log && m.log->phase != LogKind::kNone) {
      add_evidence(ref(m.log->phase_file, m.log->phase_line),
                   fmt::format("rank {} before it: {}", m.rank, short_text(m.log->phase_text)));
    }
    if (tie) note("the groups are the same size: which side is the odd one out is not decidable from the counts");
    r_.summary = fmt::format("collective_mismatch ({}): {}", r_.cause, detail);
    return true;
  }
  // Same PG, different SeqNum among the ranks that report: their collective counts differ.
  std::map<std::string, std::map<long long, std::vector<int>>> seqs;
  for (const auto& rep : reports_) {
    if (rep.ev && rep.ev->kind == LogKind::kWatchdogTimeout) seqs[rep.pg][rep.seq].push_back(rep.rank);
  }
  for (const auto& [pg, by] : seqs) {
    if (by.size() < 2) continue;
    auto maj = by.begin();
    for (auto it = by.begin(); it != by.end(); ++it) {
      if (it->second.size() > maj->second.size()) maj = it;
    }
    std::vector<int> minority;
    long long odd_seq = -1;
    for (const auto& [seq, ranks] : by) {
      if (seq == maj->first) continue;
      minority.insert(minority.end(), ranks.begin(), ranks.end());
      if (odd_seq < 0) odd_seq = seq;
    }
    std::sort(minority.begin(), minority.end());
    const CollReport* odd0 = report_of(minority.front(), pg);
    const CollReport* norm0 = report_of(maj->second.front(), pg);
    // Different sizes or ops as well: the ranks run different collectives, not the same
    // ones shifted by a skipped or extra call.
    const bool differs = odd0 && norm0 && !odd0->op.empty() && !norm0->op.empty() &&
                         (odd0->op != norm0->op ||
                          (odd0->numel_in >= 0 && norm0->numel_in >= 0 && odd0->numel_in != norm0->numel_in));
    size_t reporting = 0;
    for (const auto& [sq, rk] : by) reporting += rk.size();
    // Each rank's watchdog reports its oldest unfinished collective: the ranks at the lower SeqNum stalled at
    // the earlier one, the others got past it. The odd side is named only where the count and that order agree
    // (the fewer ranks stalled first); fewer ranks ahead of the rest could have added calls or the rest skipped.
    const bool minority_ahead = odd_seq > maj->first;
    if (minority_ahead || !majority_proven(pg, maj->second.size(), minority.size(), reporting)) {
      if (!differs) continue;  // one rank a few collectives behind another, sides unknown: no rule decides
      r_.category = "collective_mismatch";
      r_.cause = "mismatched_collective";
      unnamed_mismatch(*odd0, *norm0, std::min(odd_seq, maj->first), minority, maj->second);
      return true;
    }
    r_.category = "collective_mismatch";
    r_.cause = differs ? "mismatched_collective"
               : odd_seq < maj->first ? "skipped_collective" : "extra_collective";
    r_.missing_ranks = minority;
    r_.divergence_seq = std::min(odd_seq, maj->first);
    r_.confidence = "medium";
    r_.phase = phase_of_rank(rs_[minority.front()]);
    const CollReport* odd = report_of(minority.front(), pg);
    const CollReport* norm = report_of(maj->second.front(), pg);
    Fail f = make_fail(*odd->ev, odd->rank);
    f.what = fmt::format("timed out at SeqNum {} while {} timed out at SeqNum {}: the ranks issued different "
                         "numbers of collectives on this process group",
                         odd_seq, reason::ranks_phrase_counted(maj->second), maj->first);
    set_first(f);
    add_evidence(ref(*odd->ev), fmt::format("rank {}: SeqNum={} {}", odd->rank, odd->seq, odd->op));
    add_evidence(ref(*norm->ev), fmt::format("rank {} (as {}): SeqNum={} {}", norm->rank,
                                             reason::ranks_phrase_counted(maj->second), norm->seq, norm->op));
    note("SeqNum counts collectives per process group on each rank: ranks stuck at different SeqNums did not issue "
         "the same sequence; which side skipped and which added one needs the code path (TORCH_DISTRIBUTED_DEBUG="
         "DETAIL)");
    r_.summary = fmt::format("collective_mismatch ({}): {} timed out at SeqNum {}, {} at SeqNum {}", r_.cause,
                             reason::ranks_phrase_counted(minority), odd_seq, reason::ranks_phrase_counted(maj->second), maj->first);
    return true;
  }
  return try_reported_mismatch();
}

// The odd side of a mismatch is proven only when the majority would stay one if every
// rank that did not report had joined the minority.
bool LogAnalyzer::majority_proven(const std::string& pg, size_t maj, size_t min, size_t reporting) const {
  size_t members = static_cast<size_t>(std::max(world_, 0));
  if (ray_hidden_lines() > 0) return false;  // Ray folded other processes' reports out of the paste
  if (pg != "default") {
    auto it = pg_members_.find(pg);
    members = it != pg_members_.end() ? it->second.size() : reporting;
  }
  const size_t unreported = members > reporting ? members - reporting : 0;
  return maj > min + unreported;
}

// A mismatch the logs prove without proving which side is odd: no rank is named.
void LogAnalyzer::unnamed_mismatch(const CollReport& a, const CollReport& b, long long seq, const std::vector<int>& side_a,
                      const std::vector<int>& side_b) {
  r_.missing_ranks.clear();
  r_.divergence_seq = seq;
  r_.confidence = "low";
  r_.phase = phase_of_rank(rs_[a.rank]);
  Fail f = make_fail(*a.ev, a.rank);
  f.what = fmt::format("{} ran {} SeqNum={} NumelIn={} while {} ran {} SeqNum={} NumelIn={}", reason::ranks_phrase_counted(side_a),
                       a.op.empty() ? "?" : a.op, a.seq, a.numel_in, reason::ranks_phrase_counted(side_b), b.op.empty() ? "?" : b.op,
                       b.seq, b.numel_in);
  set_first_unblamed(f);
  add_evidence(ref(*a.ev), fmt::format("rank {}: {} SeqNum={} NumelIn={}", a.rank, a.op, a.seq, a.numel_in));
  add_evidence(ref(*b.ev), fmt::format("rank {}: {} SeqNum={} NumelIn={}", b.rank, b.op, b.seq, b.numel_in));
  note("the ranks ran different collectives, but which side is the odd one is undecidable from these logs: the "
       "sides are the same size, or ranks that did not report could be on either side");
  r_.summary = fmt::format("collective_mismatch ({}): {}; which side diverged is not in these logs", r_.cause,
                           f.what);
}

// The backend said so itself: PyTorch's DETAIL-mode fingerprint check names the ranks;
// Gloo's size check fires on the rank whose buffer did not match its peer's message.
bool LogAnalyzer::try_reported_mismatch() {
  std::map<int, int> named;  // rank -> times named in fingerprint mismatches
  std::vector<const LogEvent*> sized;
  std::vector<int> desync_odd;  // the smaller side of a desync report's snapshot (logs/desync.cpp)
  const LogEvent* desync_ev = nullptr;
  const LogEvent* first = nullptr;
  for (const auto& e : c_.events) {
    if (e.kind != LogKind::kCollMismatch) continue;
    if (!first) first = &e;
    if (e.word == "desync") {
      // Two collectives at one count of the default group's snapshot; ranks only where one side is smaller.
      for (int r : e.ranks)
        if (valid_rank(r)) desync_odd.push_back(r);
      if (!desync_odd.empty() && !desync_ev) desync_ev = &e;
    } else if (e.word == "fingerprint") {
      // A fingerprint line may name ranks beyond the world this corpus shows (a subgroup,
      // a truncated or garbled paste): only ranks of the timeline can be culprits here.
      for (int r : e.ranks)
        if (valid_rank(r)) ++named[r];
    } else if (valid_rank(e.rank)) {
      sized.push_back(&e);
    }
  }
  if (!first) return false;
  std::vector<int> odd;
  if (!desync_odd.empty()) {
    odd = desync_odd;
  } else if (!named.empty()) {
    // The rank named in every report is the odd one; with a single pair, the other side of rank 0.
    int best = -1, count = 0;
    bool unique = false;
    for (const auto& [r, n] : named) {
      if (n > count) {
        best = r;
        count = n;
        unique = true;
      } else if (n == count) {
        unique = false;
      }
    }
    // One pair ("Rank 1 is running X, but Rank 0 is running Y") does not say which of the
    // two is the odd one: only a rank named against several peers is.
    if (unique && count >= 2) odd.push_back(best);
  } else {
    std::set<int> reporters;
    for (const LogEvent* e : sized) reporters.insert(e->rank);
    if (!reporters.empty() && reporters.size() * 2 < static_cast<size_t>(std::max(world_, 1)))
      odd.assign(reporters.begin(), reporters.end());
  }
  odd.erase(std::remove_if(odd.begin(), odd.end(), [&](int r) { return !valid_rank(r); }), odd.end());
  if (odd.empty()) {
    // The backend proved the mismatch; the logs do not prove the side.
    r_.category = "collective_mismatch";
    r_.cause = "mismatched_collective";
    r_.missing_ranks.clear();
    r_.confidence = "medium";
    if (first->seq >= 0) r_.divergence_seq = first->seq;
    r_.phase = default_phase();
    Fail f = make_fail(*first, valid_rank(first->rank) ? first->rank : -1);
    f.what = "the backend detected ranks running different collectives: " + short_text(first->text, 200);
    set_first_unblamed(f);
    add_evidence(ref(*first), short_text(first->text));
    note("the backend's check proves the ranks ran different collectives; which side is the odd one needs every "
         "rank's fingerprint (one pair, or a check that names no rank, does not tell)");
    r_.summary = "collective_mismatch (mismatched_collective): the backend detected a collective mismatch; which "
                 "rank diverged is not in these logs";
    return true;
  }
  r_.category = "collective_mismatch";
  r_.cause = "mismatched_collective";
  r_.missing_ranks = odd;
  r_.confidence = "high";
  if (first->seq >= 0) r_.divergence_seq = first->seq;
  const RankState& m = rs_[odd.front()];
  r_.phase = phase_of_rank(m);
  const LogEvent* ev = desync_ev ? desync_ev : first;
  for (const LogEvent* e : sized) {
    if (e->rank == odd.front()) ev = e;
  }
  Fail f = make_fail(*ev, odd.front());
  f.what = ev->word == "size"
               ? fmt::format("received a message of another size than the collective it posted ({}): it and its "
                             "peers ran different collectives",
                             short_text(ev->text, 120))
           : ev->word == "desync"
               ? fmt::format("ran another collective than the other ranks at the same count: {}",
                             short_text(ev->text, 200))
               : fmt::format("named by the collective fingerprint check: {}", short_text(ev->text, 200));
  set_first(f);
  add_evidence(ref(*ev), fmt::format("{}: {}", ev->rank >= 0 ? fmt::format("rank {}", ev->rank) : "backend",
                                     short_text(ev->text)));
  if (m.log && !m.log->recent.empty()) {
    const auto& st = m.log->recent.back();
    add_evidence(ref(st.file, st.line), fmt::format("rank {}'s last step: {}", m.rank, st.step));
  }
  for (const Fail* e : all_fails()) {
    if (e->role == Role::kEcho && e->rank != odd.front()) {
      add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, short_text(e->what)));
      break;
    }
  }
  if (ev->word == "size") {
    note("Gloo's size check fires on the rank that received a message of the wrong size: usually the rank that "
         "ran the odd collective, but it can be its ring neighbour; the per-rank Numel at the same SeqNum "
         "(TORCH_DISTRIBUTED_DEBUG=DETAIL) names the culprit for sure");
  }
  r_.summary = fmt::format("collective_mismatch (mismatched_collective): {} ran a different collective than its "
                           "peers ({})",
                           reason::ranks_phrase_counted(odd),
                           ev->word == "size"     ? "message size mismatch"
                           : ev->word == "desync" ? "ProcessGroupNCCL's desync report"
                                                  : "fingerprint mismatch");
  return true;
}

// The step a stuck rank was in: the failing line names it, else one past its last step.
int LogAnalyzer::failing_step(const RankState& s) const {
  for (const auto& f : s.fails) {
    if (f.ev && f.ev->step >= 0 && (f.role == Role::kEcho)) return f.ev->step;
  }
  if (s.log && s.log->n_steps > 0) return s.log->last_step + cadence(s);
  return -1;
}

int LogAnalyzer::cadence(const RankState& s) {
  if (!s.log || s.log->recent.size() < 2) return 1;
  std::vector<double> inc;
  for (size_t i = 1; i < s.log->recent.size(); ++i) {
    const int d = s.log->recent[i].step - s.log->recent[i - 1].step;
    if (d > 0) inc.push_back(d);
  }
  return inc.empty() ? 1 : std::max(1, static_cast<int>(median(inc)));
}

// A failure of rank `a` dated by its record of `step` (else its last recorded step, else its
// last line); `sr` is set to the record used.
Fail LogAnalyzer::step_fail(const RankState& a, int step, const StepRec*& sr) const {
  sr = step_rec(a, step);
  if (!sr && !a.log->recent.empty()) sr = &a.log->recent.back();
  Fail f;
  f.rank = a.rank;
  f.has_t = sr && sr->has_t;
  f.t = sr ? sr->t : 0;
  f.ref = sr ? ref(sr->file, sr->line) : ref(a.log->last_file, a.log->last_line);
  return f;
}

const StepRec* LogAnalyzer::step_rec(const RankState& s, int step) const {
  if (!s.log) return nullptr;
  for (auto it = s.log->recent.rbegin(); it != s.log->recent.rend(); ++it) {
    if (it->step == step) return &*it;
  }
  return nullptr;
}

// A rank that completed the step its peers are stuck in (it skipped their collective),
// or left the loop with fewer steps while they went on (uneven batches).
bool LogAnalyzer::try_ahead() {
  std::vector<int> stuck;  // ranks that failed waiting
  for (const auto& s : rs_) {
    const Fail* f = s.first_fail();
    if (f && f->role == Role::kEcho && s.log && s.log->n_steps > 0) stuck.push_back(s.rank);
  }
  // Without any error (MPI has no collective timeout): a rank that ended normally while
  // the others' logs just stop is measured against where they stopped.
  bool silent_stop = false;
  if (stuck.empty()) {
    const bool someone_ended =
        std::any_of(rs_.begin(), rs_.end(), [](const RankState& s) { return s.clean_end || s.left_loop; });
    if (!someone_ended) return false;
    for (const auto& s : rs_) {
      if (s.seen() && s.fails.empty() && !s.clean_end && !s.left_loop && s.log->n_steps > 0) stuck.push_back(s.rank);
    }
    if (stuck.empty()) return false;
    silent_stop = true;
  }
  std::map<int, int> fail_steps;
  for (int rank : stuck) ++fail_steps[failing_step(rs_[rank])];
  const int fail_step =
      std::max_element(fail_steps.begin(), fail_steps.end(), [](auto& a, auto& b) { return a.second < b.second; })
          ->first;
  if (fail_step < 0) return false;
  // Skipped: completed fail_step without failing first.
  std::vector<int> ahead;
  for (const auto& s : rs_) {
    if (!s.log || s.log->n_steps == 0 || std::find(stuck.begin(), stuck.end(), s.rank) != stuck.end()) continue;
    const Fail* f = s.first_fail();
    if (f && (f->role == Role::kRoot)) continue;
    if (s.log->max_step >= fail_step) ahead.push_back(s.rank);
  }
  if (!ahead.empty() && ahead.size() < stuck.size()) {
    const RankState& a = rs_[ahead.front()];
    const StepRec* sr = nullptr;
    r_.category = "collective_mismatch";
    r_.cause = "skipped_collective";
    r_.missing_ranks = ahead;
    r_.divergence_step = fail_step;
    r_.confidence = silent_stop ? "medium" : "high";
    if (silent_stop) note(kSnapshotNote);
    r_.phase = "training";
    r_.last_good_step = fail_step - 1;
    Fail f = step_fail(a, fail_step, sr);
    f.what = fmt::format("completed step {} while {} were stuck in it: it did not take part in their collective "
                         "(a skipped collective pairs its later calls with its peers' earlier ones)",
                         fail_step, reason::ranks_phrase_counted(stuck));
    set_first(f);
    add_evidence(f.ref, fmt::format("rank {} logged step {}", a.rank, sr ? sr->step : a.log->last_step));
    const RankState& p = rs_[stuck.front()];
    if (const Fail* pf = p.first_fail()) {
      add_evidence(pf->ref, fmt::format("rank {} failed inside step {}: {}", p.rank, fail_step, short_text(pf->what)));
    }
    if (!a.end_ref.empty()) {
      add_evidence(a.end_ref, fmt::format("rank {} then {}", a.rank,
                                          a.clean_end ? "finished and exited normally" : "left the training loop"));
    }
    r_.summary = fmt::format("collective_mismatch (skipped_collective): {} completed step {} that {} never "
                             "completed; its collectives no longer matched theirs",
                             reason::ranks_phrase_counted(ahead), fail_step, reason::ranks_phrase_counted(stuck));
    return true;
  }
  if (!ahead.empty() && ahead.size() == stuck.size()) {
    // As many ranks went on as were stuck (two ranks: one each). Completing a step whose
    // collective the others never left proves the collectives no longer matched; but one
    // side skipping a collective and the other adding one leave the same step lines, so
    // which side is odd is not in these logs: no rank is named.
    const RankState& a = rs_[ahead.front()];
    const StepRec* sr = nullptr;
    r_.category = "collective_mismatch";
    r_.cause = "mismatched_collective";
    r_.missing_ranks.clear();
    r_.divergence_step = fail_step;
    r_.confidence = "low";
    r_.phase = "training";
    r_.scope = "subset";
    r_.last_good_step = fail_step - 1;
    Fail f = step_fail(a, fail_step, sr);
    f.what = fmt::format("{} completed step {}, which {} never completed: their collectives no longer matched",
                         reason::ranks_phrase_counted(ahead), fail_step, reason::ranks_phrase_counted(stuck));
    set_first_unblamed(f);
    add_evidence(f.ref, fmt::format("rank {} logged step {}", a.rank, sr ? sr->step : a.log->last_step));
    const RankState& p = rs_[stuck.front()];
    if (const Fail* pf = p.first_fail()) {
      add_evidence(pf->ref, fmt::format("rank {} failed inside step {}: {}", p.rank, fail_step, short_text(pf->what)));
    }
    note("one side went on while the other was stuck, but which side is the odd one is undecidable from these logs: "
         "a rank that skipped a collective and a peer that ran an extra one print the same step lines when the sides "
         "are the same size (two ranks); the trace's per-step collectives or a DETAIL-mode log tell");
    r_.summary = fmt::format("collective_mismatch (mismatched_collective): {}; which side diverged is not in these logs",
                             f.what);
    return true;
  }
  // Uneven: left the loop (finished) after fewer steps than its peers went on to.
  std::vector<int> early;
  int early_step = -1;
  for (const auto& s : rs_) {
    if (!(s.clean_end || s.left_loop) || !s.log) continue;
    const Fail* f = s.first_fail();
    if (f && f->role == Role::kRoot) continue;
    const int last = s.end_step >= 0 ? s.end_step : s.log->last_step;
    if (last < fail_step) {
      early.push_back(s.rank);
      early_step = last;
    }
  }
  // A rank that left its loop while its peers still waited in a collective proves uneven data even
  // one against one (two ranks): leaving the loop is its own act, not an echo.
  if (!early.empty() && early.size() <= stuck.size()) {
    const RankState& a = rs_[early.front()];
    r_.category = "collective_mismatch";
    r_.cause = "uneven_batches";
    r_.missing_ranks = early;
    r_.divergence_step = early_step + 1;
    r_.confidence = silent_stop ? "medium" : "high";
    if (silent_stop) note(kSnapshotNote);
    r_.phase = "training";
    Fail f;
    f.rank = a.rank;
    f.has_t = a.end_has_t;
    f.t = a.end_t;
    f.ref = a.end_ref;
    f.what = fmt::format("left the training loop after step {}{} while {} went on to step {}", early_step,
                         a.end_total > 0 ? fmt::format(" of {}", a.end_total) : "", reason::ranks_phrase_counted(stuck), fail_step);
    set_first(f);
    add_evidence(a.end_ref, fmt::format("rank {} finished after {} steps", a.rank, early_step));
    for (const LogEvent* e : a.evs) {
      if (e->kind == LogKind::kDataExhausted) {
        add_evidence(ref(*e), fmt::format("rank {}: {}", a.rank, short_text(e->text)));
        break;
      }
    }
    const RankState& p = rs_[stuck.front()];
    if (const Fail* pf = p.first_fail()) {
      add_evidence(pf->ref, fmt::format("rank {} failed inside step {}: {}", p.rank, fail_step, short_text(pf->what)));
    }
    r_.summary = fmt::format("collective_mismatch (uneven_batches): {} ran out of batches after step {}; {} waited "
                             "for it in step {}",
                             reason::ranks_phrase_counted(early), early_step, reason::ranks_phrase_counted(stuck), fail_step);
    return true;
  }
  return false;
}

// DETAIL mode logs every collective a rank enters. Where the logs end with the ranks' last
// entered collectives at different SequenceNumbers, no rank failed on its own and no rank
// reported a timeout, the ranks behind (a proven minority) never entered the collective
// their peers are in: the sequences diverged there (a different op or size: mismatched;
// the same: skipped). Which side is odd needs the counts to prove it, as for timeouts.
bool LogAnalyzer::try_started_lag() {
  if (!reports_.empty()) return false;  // timeouts say where each rank is stuck: the rules above
  std::map<long long, std::vector<int>> by;  // last entered SequenceNumber -> ranks
  for (const auto& s : rs_) {
    if (!s.log || s.log->started.seq < 0) continue;
    if (s.log->started.mixed) return false;  // several process groups' counters: not comparable
    by[s.log->started.seq].push_back(s.rank);
  }
  if (by.size() < 2) return false;
  // A rank that died or failed on its own stops entering collectives too: that is its death.
  for (const Fail* f : all_fails()) {
    if (f->role == Role::kRoot || (f->role == Role::kExit && (f->signal || (f->code != kNoCode && f->code != 0))))
      return false;
  }
  // The ranks that went furthest are the majority; the rest lag. The rest of the world
  // (ranks with no such line) could be on either side.
  auto ahead = std::prev(by.end());
  std::vector<int> behind;
  size_t reporting = 0;
  for (const auto& [seq, ranks] : by) {
    reporting += ranks.size();
    if (seq != ahead->first) behind.insert(behind.end(), ranks.begin(), ranks.end());
  }
  std::sort(behind.begin(), behind.end());
  const RankLog::Started& odd = rs_[behind.front()].log->started;
  const RankLog::Started& norm = rs_[ahead->second.front()].log->started;
  if (!majority_proven("default", ahead->second.size(), behind.size(), reporting)) return false;
  const bool differs = !odd.op.empty() && !norm.op.empty() &&
                       (odd.op != norm.op || (odd.numel >= 0 && norm.numel >= 0 && odd.numel != norm.numel));
  r_.category = "collective_mismatch";
  r_.cause = differs ? "mismatched_collective" : "skipped_collective";
  r_.missing_ranks = behind;
  r_.divergence_seq = odd.seq;
  r_.confidence = "medium";
  r_.phase = phase_of_rank(rs_[behind.front()]);
  Fail f;
  f.rank = behind.front();
  f.has_t = odd.has_t;
  f.t = odd.t;
  f.ref = ref(odd.file, odd.line);
  f.what = fmt::format("last entered {} SequenceNumber={} (numel {}) while {} had gone on to {} SequenceNumber={} "
                       "(numel {}): it never entered their collective",
                       odd.op.empty() ? "a collective" : odd.op, odd.seq, odd.numel,
                       reason::ranks_phrase_counted(ahead->second), norm.op.empty() ? "a collective" : norm.op,
                       norm.seq, norm.numel);
  set_first(f);
  add_evidence(f.ref, fmt::format("rank {}: Running collective SequenceNumber={} {}", f.rank, odd.seq, odd.op));
  add_evidence(ref(norm.file, norm.line),
               fmt::format("rank {} (as {}): Running collective SequenceNumber={} {}", ahead->second.front(),
                           reason::ranks_phrase_counted(ahead->second), norm.seq, norm.op));
  note(kSnapshotNote);
  note("TORCH_DISTRIBUTED_DEBUG=DETAIL logs each collective a rank enters: the ranks behind never entered the "
       "collective the others wait in, so their sequences of collectives diverged (a branch, a different set of "
       "tensors or keys per rank); a rank merely slower to get there leaves the same lines in a snapshot");
  r_.summary = fmt::format("collective_mismatch ({}): {} last entered SequenceNumber {}, {} SequenceNumber {}; "
                           "the logs end there",
                           r_.cause, reason::ranks_phrase_counted(behind), odd.seq,
                           reason::ranks_phrase_counted(ahead->second), norm.seq);
  return true;
}

}  // namespace hanglab::plainlog
