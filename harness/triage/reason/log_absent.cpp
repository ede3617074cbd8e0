// Plain-log reasoning: ranks missing by absence from the collective their peers wait in --
// alive (straggler), in a phase, or dead-or-hung unknown (see log_analyzer.hpp).
#include "triage/reason/log_analyzer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>
#include <cmath>

#include "util.hpp"

namespace hanglab::plainlog {

// Evidence that a rank was alive after `t`: a line after it.
bool LogAnalyzer::lines_after(const RankState& s, double t, std::string* where) const {
  if (!s.log || !s.log->has_last_t) return false;
  if (s.log->last_t > t) {
    if (where) *where = ref(s.log->last_file, s.log->last_line);
    return true;
  }
  return false;
}

bool LogAnalyzer::steps_after(const RankState& s, double t, const StepRec** rec) const {
  if (!s.log) return false;
  for (const auto& st : s.log->recent) {
    if (st.has_t && st.t > t) {
      *rec = &st;
      return true;
    }
  }
  return false;
}

// The last interval between step lines against the rank's usual one.
bool LogAnalyzer::step_jump(const RankState& s, double* usual, double* last, const StepRec** at) const {
  if (!s.log || s.log->recent.size() < 4) return false;
  const auto& rec = s.log->recent;
  std::vector<double> per;
  for (size_t i = 1; i + 1 < rec.size(); ++i) {
    if (!rec[i].has_t || !rec[i - 1].has_t || rec[i].step <= rec[i - 1].step) continue;
    per.push_back((rec[i].t - rec[i - 1].t) / (rec[i].step - rec[i - 1].step));
  }
  const auto& a = rec[rec.size() - 2];
  const auto& b = rec.back();
  if (per.size() < 2 || !a.has_t || !b.has_t || b.step <= a.step) return false;
  *usual = median(per);
  *last = (b.t - a.t) / (b.step - a.step);
  *at = &b;
  return *usual > 0 && *last >= kJumpRatio * *usual && *last - *usual >= 0.5;
}

// Ranks of the main PG that never reported the stuck collective and did not leave the loop; a rank
// without a single line only when the silent ones are few enough to prove it (silence_proves()).
// A rank whose heartbeat monitor reported its watchdog thread stuck ("ProcessGroupNCCL's watchdog
// got stuck for N seconds without making progress in monitoring enqueued collectives", "Heartbeat
// monitor timed out!": ProcessGroupNCCL.cpp's HeartbeatMonitor, which fires when the watchdog has
// not beaten for TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC). The watchdog is the thread that reports a
// collective's timeout, so such a rank's silence about the collective its peers timed out in
// proves nothing: it may be waiting in that same collective (blocked in a CUDA call, say).
bool LogAnalyzer::watchdog_stuck(const RankState& s) const {
  return std::any_of(s.evs.begin(), s.evs.end(), [](const LogEvent* e) { return e->kind == LogKind::kHeartbeatMonitor; });
}

// "Some NCCL operations have failed or timed out" (ProcessGroupNCCL.cpp WorkNCCL::handleException@2.15.0) is
// printed for a work of the rank's own whose exception the watchdog found: the rank was in a collective of that
// group when it failed (the next line, "To avoid data inconsistency, we are taking the entire process down", is
// printed by the same handler). Its missing timeout line is the paste's cut or its own report's wording, not an absence.
bool LogAnalyzer::own_work_failed(const RankState& s) const {
  return std::any_of(s.evs.begin(), s.evs.end(), [&](const LogEvent* e) {
    return e->kind == LogKind::kNcclAsyncFailed && pg_key(*e) == main_pg_;
  });
}

// Lines Ray's driver folded into "[repeated Nx across cluster]" (LogFileInfo::ray_hidden_lines): other
// processes' lines whose ranks the paste does not show.
uint64_t LogAnalyzer::ray_hidden_lines() const {
  uint64_t n = 0;
  for (const auto& f : c_.files) n += f.ray_hidden_lines;
  return n;
}

std::vector<int> LogAnalyzer::provable_absent() {
  // Ranks that left the loop are handled above; without logs they are not provably absent
  // unless the world size is stated.
  std::vector<int> absent;
  if (const uint64_t hidden = ray_hidden_lines(); hidden > 0 && !absent_.empty()) {
    note(fmt::format("Ray's log deduplication left {} line(s) of other processes out of the paste (\"[repeated Nx "
                     "across cluster]\"): a rank silent here may have printed them, so none is named missing",
                     hidden));
    return absent;
  }
  for (int rank : absent_) {
    const auto& s = rs_[rank];
    if (s.clean_end || s.left_loop) continue;
    if (!s.seen() && !world_stated_) continue;
    if (own_work_failed(s)) {
      note(fmt::format("rank {} logged that its own NCCL work failed or timed out (ProcessGroupNCCL's handleException, "
                       "printed for a collective of its own): it was waiting in a collective too, not absent from them",
                       rank));
      continue;
    }
    if (watchdog_stuck(s)) {
      note(fmt::format("rank {}'s own watchdog was stuck (its heartbeat monitor says so): it could not report the "
                       "collective its peers timed out in, so its silence about it does not show that it never "
                       "entered it",
                       rank));
      continue;
    }
    absent.push_back(rank);
  }
  // The stuck collective's last report is the last line of a file that also holds the silent
  // ranks' lines: the paste ends there. Every rank in that collective reports it when its own
  // timeout expires, within moments of the others and in no fixed order; with no more reporters
  // than silent ranks, the silent ones' reports may as well be the lines the excerpt stops short
  // of (one rank's timeout as a two-rank paste's last line). Many reporters and one silent rank
  // in their midst is an absence the cut does not explain.
  if (const CollReport* last = last_report(); last && !absent.empty() && waiting_.size() <= absent.size()) {
    const uint32_t file = last->ev->file;
    if (file < c_.files.size() && last->ev->line >= c_.files[file].last_text_line) {
      std::vector<int> cut;
      for (int rank : absent)
        if (rs_[rank].seen() && rs_[rank].log->last_file == file) cut.push_back(rank);
      if (!cut.empty()) {
        note(fmt::format("{} reported {} on the last line of {}: the excerpt ends there, so whether {} reported it "
                         "a moment later is not in it; not named missing",
                         reason::ranks_phrase_counted(waiting_), stuck_name(), c_.files[file].name,
                         reason::ranks_phrase(cut)));
        absent.erase(std::remove_if(absent.begin(), absent.end(),
                                    [&](int r) { return std::find(cut.begin(), cut.end(), r) != cut.end(); }),
                     absent.end());
      }
    }
  }
  {
    size_t unseen = 0;
    for (int rank : absent) unseen += rs_[rank].seen() ? 0 : 1;
    if (unseen > 0 && !silence_proves(unseen)) {
      note(fmt::format("{} rank(s) of the world have no line in these logs: an excerpt of some ranks' logs says "
                       "nothing about the others, so they are not named missing",
                       unseen));
      absent.erase(std::remove_if(absent.begin(), absent.end(), [&](int r) { return !rs_[r].seen(); }), absent.end());
    }
  }
  return absent;
}

// The first timeout report of the peers in the stuck collective.
const CollReport* LogAnalyzer::first_report() const {
  const CollReport* first = nullptr;
  for (const auto& rep : reports_) {
    if (rep.pg != main_pg_ || rep.seq != stuck_seq_ || !rep.ev) continue;
    if (!first || (rep.ev->has_t && (!first->ev->has_t || rep.ev->t < first->ev->t))) first = &rep;
  }
  return first;
}

// The stuck collective's report written last in the logs (the latest file, then line).
const CollReport* LogAnalyzer::last_report() const {
  const CollReport* last = nullptr;
  for (const auto& rep : reports_) {
    if (rep.pg != main_pg_ || rep.seq != stuck_seq_ || !rep.ev) continue;
    if (!last || std::tie(rep.ev->file, rep.ev->line) > std::tie(last->ev->file, last->ev->line)) last = &rep;
  }
  return last;
}

// Desync reports name lagging ranks: their ranks into `desync`, the first report's line.
const LogEvent* LogAnalyzer::desync_report(std::set<int>& desync) const {
  const LogEvent* desync_ev = nullptr;
  for (const auto& e : c_.events) {
    if (e.kind == LogKind::kDesyncMissing || e.kind == LogKind::kDesyncLagging) {
      desync.insert(e.ranks.begin(), e.ranks.end());
      if (!desync_ev) desync_ev = &e;
    }
  }
  return desync_ev;
}

// The last desync report that names ranks (logs/desync.cpp gives an event ranks only where they are global
// ranks of the default group): "ranks [..] are the lagging ranks ... They never joined any collectives"
// (analyzeMissingRanks, TraceUtils.h:80-86@v2.15.0), or the lowest seq's ranks while the snapshot shows the
// others past it (analyzeLaggingRanks :88-121). Those ranks never entered the collective their peers are in;
// the report calls them "lagging/dead/mismatched" (:100-101): the category stays open, as for Horovod's stall
// check and the coordination service's verdicts. Read after try_absent, which decides a rank that every
// rank's own lines show absent (alive, dead, in a save); the report speaks where the lines of the others
// are not there.
bool LogAnalyzer::try_desync_report() {
  const LogEvent* last = nullptr;
  for (const auto& e : c_.events)
    if ((e.kind == LogKind::kDesyncMissing || e.kind == LogKind::kDesyncLagging) && e.word == "desync" &&
        !e.ranks.empty())
      last = &e;
  if (!last) return false;
  std::vector<int> missing;
  for (int r : last->ranks)
    if (valid_rank(r) && std::find(missing.begin(), missing.end(), r) == missing.end()) missing.push_back(r);
  if (missing.empty()) return false;
  std::sort(missing.begin(), missing.end());
  r_.category = "unknown";
  r_.cause = "unknown";
  r_.confidence = "low";
  r_.missing_ranks = missing;
  // As for ranks that all wait (try_all_waiting): a marker's phase, else training only where a line shows it.
  const std::optional<Marker> mark = stuck_marker();
  r_.phase = mark ? marker_phase(mark->kind) : training_shown() ? "training" : "unknown";
  const bool never = last->kind == LogKind::kDesyncMissing;
  add_evidence(ref(*last), fmt::format("rank {}'s desync report (TORCH_NCCL_DESYNC_DEBUG): {} {}", last->rank,
                                       reason::ranks_phrase_counted(missing),
                                       never ? "never joined any collective of the default group"
                                             : fmt::format("stayed at collective #{} while the other ranks went on",
                                                           last->seq)));
  note(fmt::format("the desync report reads every rank's last started and finished collective from the store: {} "
                   "{}; whether it died, is slow or took another code path the report leaves open "
                   "(\"lagging/dead/mismatched\") and no other line says",
                   reason::ranks_phrase_counted(missing),
                   never ? "never started a collective of the default group"
                         : "never started the collective after the one it was last in, which the other ranks are "
                           "past"));
  r_.summary = fmt::format("unknown: {} missing from {} (ProcessGroupNCCL's desync report); the cause is not in these "
                           "logs",
                           reason::ranks_phrase_counted(missing),
                           never ? "every collective of the default group" : "the collective the others are past");
  return true;
}

// The evidence of an absence: who reported the timeout and who never did, the absent rank's last line.
void LogAnalyzer::cite_absent(const RankState& a, const std::vector<int>& absent, const CollReport& first_rep,
                              const LogEvent* desync_ev) {
  const CollReport* first = &first_rep;
  const double t_first = first->ev->has_t ? first->ev->t : 0;
  const std::string coll = stuck_name();
  add_evidence(ref(*first->ev), fmt::format("{} reported a timeout in {} (first at {}); {} never did",
                                            reason::ranks_phrase_counted(waiting_), coll, first->ev->has_t ? clock(t_first) : "?",
                                            reason::ranks_phrase_counted(absent)));
  if (!a.seen()) {
    add_evidence(fmt::format("(no log of rank {})", a.rank),
                 fmt::format("rank {} has no line at all in these logs (world size {} {})", a.rank, world_,
                             opts_.world_size ? "given by --world-size" : "stated in the logs"));
  } else {
    add_evidence(ref(a.log->last_file, a.log->last_line),
                 fmt::format("rank {}'s last line{}{}", a.rank,
                             a.log->has_last_t ? " at " + clock(a.log->last_t) : "",
                             a.log->n_steps ? fmt::format(" (last step {})", a.log->last_step) : ""));
  }
  if (desync_ev) {
    add_evidence(ref(*desync_ev), fmt::format("desync report: {}", short_text(desync_ev->text)));
  }
}

// A storage error on the absent rank's host (or its own): a slow save is slow storage.
const LogEvent* LogAnalyzer::storage_error_near(const RankState& a) const {
  for (const LogEvent* e : a.evs)
    if (e->kind == LogKind::kStorageError) return e;
  for (const LogEvent* e : host_events_)
    if (e->kind == LogKind::kStorageError && (e->host.empty() || a.host.empty() || e->host == a.host)) return e;
  return nullptr;
}

bool LogAnalyzer::try_absent() {
  if (absent_.empty() || waiting_.empty()) return false;
  std::vector<int> absent = provable_absent();
  if (absent.empty()) return false;
  const CollReport* first = first_report();
  const double t_first = first && first->ev->has_t ? first->ev->t : 0;
  // Gloo's timeout among the reports (not necessarily the first line: the closed
  // connections a timing-out rank causes may be logged before its own timeout).
  bool gloo = false;
  for (const auto& rep : reports_)
    gloo = gloo || (rep.pg == main_pg_ && rep.seq == stuck_seq_ && rep.ev && rep.ev->kind == LogKind::kGlooTimeout);
  const bool dead_peer_seen = dead_peer_echo() != nullptr;
  std::set<int> desync;
  const LogEvent* desync_ev = desync_report(desync);
  const RankState& a = rs_[absent.front()];
  r_.missing_ranks = absent;
  const std::string coll = stuck_name();
  cite_absent(a, absent, *first, desync_ev);
  // Alive after the peers' timeout?
  std::string alive_ref;
  const StepRec* later = nullptr;
  const bool alive = first && first->ev->has_t && lines_after(a, t_first, &alive_ref);
  const bool progressed = first && first->ev->has_t && steps_after(a, t_first, &later);
  const LogEvent* answered = nullptr;  // answered the dump signal: alive
  for (const LogEvent* e : a.evs) {
    if (e->kind == LogKind::kDumpSignal || e->kind == LogKind::kHeartbeatMonitor) {
      answered = e;
      break;
    }
  }
  double usual = 0, last = 0;
  const StepRec* jump_at = nullptr;
  const bool jumped = step_jump(a, &usual, &last, &jump_at);
  const LogEvent* storage_ev = storage_error_near(a);
  const bool storage = storage_ev != nullptr;
  const std::string phase = phase_of_rank(a);
  r_.phase = phase;
  // Its evaluation's end logged after its peers had already timed out waiting: it was evaluating then.
  const bool eval_ended_late = a.seen() && a.log->phase == LogKind::kEvalEnd && a.log->phase_has_t && first &&
                               first->ev->has_t && a.log->phase_t > t_first;
  Fail f;
  f.rank = a.rank;
  if (a.seen()) {
    f.has_t = a.log->has_last_t;
    f.t = a.log->last_t;
    f.ref = ref(a.log->last_file, a.log->last_line);
  } else {
    f.ref = fmt::format("(no log of rank {})", a.rank);
  }
  if (progressed || (jumped && alive)) {
    slow_.insert(absent.begin(), absent.end());
    r_.category = "straggler";
    r_.cause = "slow_rank";
    r_.confidence = "high";
    f.what = absent_slow(a, progressed ? later : nullptr, t_first, jumped ? jump_at : nullptr, usual, last);
  } else if (phase == "checkpoint" && a.seen()) {
    r_.category = "straggler";
    r_.cause = storage ? "slow_storage" : "stuck_in_checkpoint";
    r_.confidence = "medium";
    add_evidence(ref(a.log->phase_file, a.log->phase_line),
                 fmt::format("rank {} began a checkpoint save and never logged its end: {}", a.rank,
                             short_text(a.log->phase_text)));
    if (storage_ev) add_evidence(ref(*storage_ev), fmt::format("storage: {}", short_text(storage_ev->text)));
    f.what = fmt::format("stuck in a checkpoint save ({}) while its peers waited in {}", short_text(a.log->phase_text, 80),
                         coll);
  } else if ((phase == "eval" || eval_ended_late) && a.seen() &&
             std::none_of(waiting_.begin(), waiting_.end(), [&](int w) { return phase_of_rank(rs_[w]) == "eval"; })) {
    // It began an evaluation and never logged its end (or logged it only after its peers had
    // timed out), while none of the peers that wait is evaluating: it evaluates alone
    // (validation or generation on one rank) for longer than its peers' collective timeout.
    // Had the peers been evaluating too, uneven evaluation batches would fit the same lines:
    // that is not decided here.
    slow_.insert(absent.begin(), absent.end());
    r_.category = "straggler";
    r_.cause = "slow_rank";
    r_.confidence = "medium";
    r_.phase = "eval";
    add_evidence(ref(a.log->phase_file, a.log->phase_line),
                 eval_ended_late ? fmt::format("rank {} ended its evaluation at {}, after its peers had timed out at "
                                               "{}: {}",
                                               a.rank, clock(a.log->phase_t), clock(t_first),
                                               short_text(a.log->phase_text))
                                 : fmt::format("rank {} began an evaluation and never logged its end: {}", a.rank,
                                               short_text(a.log->phase_text)));
    f.what = fmt::format("evaluating alone ({}) while its peers waited in {}", short_text(a.log->phase_text, 80), coll);
  } else if (phase == "data" && a.seen()) {
    r_.category = "data_loading";
    r_.cause = "data_loader_stall";
    r_.confidence = "medium";
    add_evidence(ref(a.log->phase_file, a.log->phase_line),
                 fmt::format("rank {} was loading data: {}", a.rank, short_text(a.log->phase_text)));
    f.what = fmt::format("stuck loading data ({}) while its peers waited in {}", short_text(a.log->phase_text, 80),
                         coll);
  } else if (const LogEvent* dx = exhausted_data(a)) {
    // It said it had no data left while its peers waited in a collective: it left the
    // loop (or idles for more) with fewer batches than they had: uneven data.
    r_.category = "collective_mismatch";
    r_.cause = "uneven_batches";
    r_.confidence = "medium";
    r_.phase = "training";
    add_evidence(ref(*dx), fmt::format("rank {} ran out of data: {}", a.rank, short_text(dx->text)));
    f.what = fmt::format("ran out of data ({}) and never entered {} that its peers waited in",
                         short_text(dx->text, 80), coll);
  } else if (answered || (alive && a.fails.empty())) {
    alive_.insert(a.rank);
    r_.category = "straggler";
    r_.cause = "unresponsive";
    r_.confidence = "medium";
    if (answered) {
      add_evidence(ref(*answered), fmt::format("rank {} answered after the timeout (alive): {}", a.rank,
                                               short_text(answered->text)));
    } else {
      add_evidence(alive_ref, fmt::format("rank {} still logged after its peers' timeout (alive)", a.rank));
    }
    f.what = fmt::format("alive but never entered {} (its last progress line is {})", coll, f.ref);
  } else if (gloo && !dead_peer_seen && a.seen()) {
    // Gloo over TCP: a dead peer closes its sockets at once ("Connection closed by
    // peer"); a timeout with no closed connection means its process still held them.
    alive_.insert(a.rank);
    r_.category = "straggler";
    r_.cause = "unresponsive";
    r_.confidence = "medium";
    f.what = fmt::format("silent since {} but alive: its peers' Gloo {} timed out instead of seeing its "
                         "connections close",
                         f.has_t ? clock(f.t) : "its last line", coll);
    note(fmt::format("{} is taken as alive because Gloo peers time out on a live but silent process and see "
                     "\"Connection closed by peer\" at once when it dies; what it was doing (frozen, a deadlock, a "
                     "long compute) is not in the logs: dump its stack (py-spy dump) if it still exists",
                     reason::ranks_phrase_counted(absent)));
  } else {
    absent_unproven(a, absent, desync.count(a.rank) > 0, f);
  }
  set_first(f);
  if (jumped && r_.cause != "slow_rank") {
    add_evidence(ref(jump_at->file, jump_at->line),
                 fmt::format("rank {}'s step interval jumped from {:.2f} s to {:.2f} s per step before it went "
                             "silent",
                             a.rank, usual, last));
  }
  r_.summary = fmt::format("{} ({}): {} missing from {} that {} reported", r_.category, r_.cause,
                           reason::ranks_phrase_counted(absent), coll, reason::ranks_phrase_counted(waiting_));
  if (r_.cause == "unresponsive") r_.summary += "; alive but silent";
  return true;
}

// Absent but alive and slow: it logged a step after its peers' timeout (later), or its step interval
// jumped before it went missing (jump_at). What it did, and the evidence.
std::string LogAnalyzer::absent_slow(const RankState& a, const StepRec* later, double t_first, const StepRec* jump_at,
                                     double usual, double last) {
  const std::string coll = stuck_name();
  if (later) {
    add_evidence(ref(later->file, later->line),
                 fmt::format("rank {} still logged step {} at {}, after its peers timed out at {}: slow, not dead",
                             a.rank, later->step, clock(later->t), clock(t_first)));
  }
  if (jump_at) {
    add_evidence(ref(jump_at->file, jump_at->line),
                 fmt::format("rank {}'s step interval jumped from {:.2f} s to {:.2f} s per step before the "
                             "failure",
                             a.rank, usual, last));
  }
  return later ? fmt::format("kept progressing (step {} at {}) after its peers had timed out in {}", later->step,
                             clock(later->t), coll)
               : fmt::format("slowed down ({:.1f} s per step vs {:.1f} s usual) and missed {}", last, usual, coll);
}

// Absent, and nothing says whether it died, hangs elsewhere or is slow: what is provable, in a note.
void LogAnalyzer::absent_unproven(const RankState& a, const std::vector<int>& absent, bool in_desync, Fail& f) {
  const std::string coll = stuck_name();
  r_.category = "unknown";
  r_.cause = "rank_absent";
  r_.confidence = in_desync ? "medium" : "low";
  f.what = a.seen() ? fmt::format("never reported the timeout of {} that {} reported; its last line is {}", coll,
                                  reason::ranks_phrase_counted(waiting_), f.ref)
                    : fmt::format("never reported the timeout of {} and has no log line at all", coll);
  note(fmt::format("provable: {} did not report {} while {} did{}. Not provable from these logs: whether it died "
                   "(no exit status, kernel or launcher line names it), hangs elsewhere, or is slow",
                   reason::ranks_phrase_counted(absent), coll, reason::ranks_phrase_counted(waiting_),
                   in_desync ? " (the desync report names it too)" : ""));
}

}  // namespace hanglab::plainlog
