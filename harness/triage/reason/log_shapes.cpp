// Plain-log reasoning, rules that read shapes rather than wordings (issue 24 item 2; see
// log_analyzer.hpp):
//   membership   the processes' own join lines ("GLOBAL_RANK: i, MEMBER: i+1/N", "world_size=N" per
//                rank) against the world size: the ranks that never stated joining never joined,
//                and the job is stuck in init;
//   busy bar     a progress bar (tqdm) that kept counting while its peers timed out waiting in a
//                collective: that process was alive and busy -- a straggler, in the phase its bar
//                describes (data preparation before the first step, a save, an evaluation);
//   stop signal  a launcher or agent that received a signal and passed it on to its workers, before
//                anything in the job failed: the job was stopped from outside. The answer names the
//                signal and what usually sends it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "triage/reason/log_analyzer.hpp"

namespace hanglab::plainlog {

namespace {

// Signals that end a process when nobody handles them: a launcher passing one on stops the job.
// SIGCONT, SIGTSTP, SIGUSR1/2 (a scheduler's advance warning) are passed on too and stop nothing.
bool stopping(int sig) { return sig == 1 || sig == 2 || sig == 3 || sig == 9 || sig == 15 || sig == 24; }

}  // namespace

std::vector<int> LogTimeline::never_joined() const {
  // The processes state their own membership (each prints its line as it joins): two or more such
  // lines in the paste make it the job's combined output, where a rank that printed nothing never
  // got there. One host at most: a paste of one node's log says nothing of another node's ranks.
  if (!world_stated_ || world_ < 2 || !single_node_) return {};
  // A store's count of arrivals (a barrier's worker_count, "3/8 clients joined") is no join line of
  // the rank that prints it; but it bounds the silence: where the store counted more ranks than the
  // paste shows, ranks that arrived wrote nothing here, and silence proves nothing.
  std::set<int> stated;
  int counted = 0;
  for (const auto& h : c_.world_hints) {
    if (h.world != world_) continue;
    if (h.joined >= 0) counted = std::max(counted, h.joined);
    else if (valid_rank(h.rank)) stated.insert(h.rank);
  }
  if (stated.size() < 2) return {};
  std::vector<int> v;
  for (const auto& s : rs_)
    if (!s.seen()) v.push_back(s.rank);
  if (world_ - static_cast<int>(v.size()) < counted) return {};
  if (v.empty() || static_cast<int>(v.size()) >= world_) return {};
  return v;
}

bool LogAnalyzer::try_membership() {
  const std::vector<int> missing = never_joined();
  if (missing.empty()) return false;
  std::vector<int> joined;
  const WorldHint* line = nullptr;
  for (const auto& h : c_.world_hints) {
    if (h.world != world_ || !valid_rank(h.rank)) continue;
    if (std::find(joined.begin(), joined.end(), h.rank) == joined.end()) joined.push_back(h.rank);
    if (!line && h.joined < 0) line = &h;  // a join line, not a store's count
  }
  std::sort(joined.begin(), joined.end());
  // A rank that waits in a store count short of the world (init_process_group's store barrier,
  // the TCPStore's "waiting for clients"): the ranks that never joined leave it waiting into the
  // rendezvous timeout.
  const WorldHint* count = nullptr;
  for (const auto& h : c_.world_hints)
    if (h.joined >= 0 && h.world == world_ && h.joined < world_ && (!count || h.joined > count->joined)) count = &h;
  // init_process_group's store barrier counts the ranks that arrived (store.add) and each waiter
  // prints the count with its own rank every 10 s: when a count stated again and again is the number
  // of ranks seen waiting, no other rank got there, whatever lines of their own they printed before
  // (a join line comes first). One wait line is a moment's count: a rank may arrive the next second.
  std::vector<int> never = missing;
  if (count && count->settled >= 1) {
    std::set<int> waiters;
    for (const auto& h : c_.world_hints)
      if (h.joined >= 0 && h.world == world_ && valid_rank(h.rank)) waiters.insert(h.rank);
    if (!waiters.empty() && count->joined <= static_cast<int>(waiters.size())) {
      never.clear();
      for (int r = 0; r < world_; ++r)
        if (!waiters.count(r)) never.push_back(r);
    }
  }
  r_.category = "rendezvous";
  r_.cause = count ? "rendezvous_timeout" : "rank_never_started";
  r_.phase = "init";
  r_.missing_ranks = never;
  r_.confidence = "medium";
  partial_join_ = true;
  Fail f;
  f.rank = missing.front();
  f.ref = fmt::format("(no log of rank {})", missing.front());
  f.what = fmt::format("never joined: no line of its own, while {} stated joining a world of {}",
                       reason::ranks_phrase_counted(joined), world_);
  set_first(f);
  add_evidence(ref(line->file, line->line),
               fmt::format("rank {} joins a world of {}: {}", line->rank, world_, short_text(line->text)));
  add_evidence(f.ref, fmt::format("{} never printed a line, not even its join line, in a world of {}",
                                  reason::ranks_phrase_counted(missing), world_));
  if (count)
    add_evidence(ref(count->file, count->line),
                 fmt::format("the store counted {} of {} ranks: {}", count->joined, world_, short_text(count->text)));
  note(
      fmt::format("each process prints its own join line as it enters init; {} did and {} did not, and no line says "
                  "init completed: the job waits in init for ranks that never started (or never reached this "
                  "point). This reads the paste as the job's whole output up to the hang",
                  reason::ranks_phrase_counted(joined), reason::ranks_phrase_counted(missing)));
  r_.summary = fmt::format("rendezvous ({}): {} of a world of {} never joined; {} waited in init", r_.cause,
                           reason::ranks_phrase_counted(missing), world_, reason::ranks_phrase_counted(joined));
  return true;
}

// The bar of a process that was drawing it while its peers waited in the stuck collective: its redraw
// is stamped after their first timeout, or written after it in the same file, or -- before the first
// step, when the peers' collective is the job's start-up one and their wait began with the program --
// the bar had been running for most of their timeout, or the timeout line runs on from the unfinished bar.
std::string LogAnalyzer::bar_busy_while(const BarSeen& b, const LogEvent& timeout) const {
  // A training loop's bar counts steps, and a data-parallel step needs its peers' collectives: one that
  // kept counting through a peer's whole timeout was not late to that collective but issuing others
  // (uneven data, a skipped collective) or training apart from it; its lines do not say which.
  if (b.phase == "training") return "";
  // It counted: redraws that went further, or one redraw whose own count and clock show items done
  // since it began ("280000/2969526 [29:55<...").
  if (!b.seen() || (b.advances < 1 && !(b.last_n > 0 && b.elapsed_s > 0))) return "";
  if (b.has_t && timeout.has_t && b.t > timeout.t)
    return fmt::format("still counting at {}, after the first timeout at {}", clock(b.t), clock(timeout.t));
  if (b.file == timeout.file && b.line > timeout.line) return "still counting after the first timeout line";
  // The timeout was written onto the bar's own line: tqdm ends a finished bar's line, so the bar was still
  // running (its work unfinished) when the peer's timeout came.
  if (b.file == timeout.file && b.line == timeout.line && b.total > 0 && b.last_n < b.total)
    return "its bar was unfinished when the first timeout was written onto its line";
  const double wait_s = (timeout.timeout_ms > 0 ? timeout.timeout_ms : timeout.ran_ms) / 1000.0;
  if (b.phase != "training" && !steps_seen() && wait_s > 0 && b.elapsed_s >= 0.5 * wait_s)
    return fmt::format("its bar had run {:.0f} s of its peers' {:.0f} s timeout, before any training step", b.elapsed_s,
                       wait_s);
  return "";
}

bool LogAnalyzer::try_busy_bar() {
  if (waiting_.empty() || stuck_seq_ < 0) return false;
  const CollReport* first = nullptr;
  for (const auto& rep : reports_) {
    if (rep.pg != main_pg_ || rep.seq != stuck_seq_ || !rep.ev) continue;
    if (!first || (rep.ev->has_t && (!first->ev->has_t || rep.ev->t < first->ev->t))) first = &rep;
  }
  if (!first) return false;
  std::vector<int> busy;
  const BarSeen* bar = nullptr;
  std::string why;
  for (const auto& s : rs_) {
    if (!s.log || std::binary_search(waiting_.begin(), waiting_.end(), s.rank)) continue;
    const std::string w = bar_busy_while(s.log->bar, *first->ev);
    if (w.empty()) continue;
    busy.push_back(s.rank);
    if (!bar) bar = &s.log->bar, why = w;
  }
  if (!bar) {
    why = bar_busy_while(c_.unattributed_bar, *first->ev);
    if (why.empty()) return false;
    bar = &c_.unattributed_bar;  // the bar names no rank: which one it is stays open
  }
  slow_.insert(busy.begin(), busy.end());
  r_.category = "straggler";
  r_.cause = "slow_rank";
  r_.phase = bar->phase.empty() ? default_phase() : bar->phase;
  r_.missing_ranks = busy;
  r_.confidence = "medium";
  const std::string who_drew =
      busy.empty() ? std::string("a process the logs do not name") : reason::ranks_phrase_counted(busy);
  const std::string what = fmt::format("\"{}\" at {}{}", bar->desc.empty() ? "(no description)" : bar->desc,
                                       bar->last_n, bar->total > 0 ? fmt::format("/{}", bar->total) : "");
  Fail f;
  f.rank = busy.empty() ? -1 : busy.front();
  f.ref = ref(bar->file, bar->line);
  f.has_t = bar->has_t;
  f.t = bar->t;
  f.what = fmt::format("alive and busy: its progress bar {} kept counting ({}) while {} waited in {}", what, why,
                       reason::ranks_phrase_counted(waiting_), stuck_name());
  set_first(f);
  add_evidence(f.ref, fmt::format("{}'s progress bar {} advanced {} time(s) from {}: {}", who_drew, what, bar->advances,
                                  bar->first_n, why));
  add_evidence(ref(*first->ev),
               fmt::format("{} timed out in {}", reason::ranks_phrase_counted(waiting_), stuck_name()));
  note(fmt::format(
      "a bar that keeps counting is a live process doing slow work ({}), not a dead or hung one: the peers' "
      "collective timeout is shorter than that work, or the work belongs outside the collective's reach",
      bar->phase.empty() ? "what its description names" : bar->phase));
  r_.summary = fmt::format("straggler (slow_rank): {} still busy in {} ({}) while {} timed out in {}", who_drew,
                           r_.phase, what, reason::ranks_phrase_counted(waiting_), stuck_name());
  return true;
}

// A launcher's notice that it received a signal and passes it on (kStopSignal: torchrun's "Received
// ... death signal", srun's, slurmstepd's, mpirun's), the agent's own SignalException, or a closing
// signal other than the SIGTERM/SIGKILL a launcher sends on its own (torchrun forwards the one it got).
const LogEvent* LogAnalyzer::stop_notice() const {
  for (const auto& e : c_.events) {
    const bool passed_on = e.kind == LogKind::kStopSignal || e.kind == LogKind::kSignalException ||
                           (e.kind == LogKind::kLauncherSignal && e.signal != 15 && e.signal != 9);
    if (passed_on && stopping(e.signal)) return &e;
  }
  return nullptr;
}

bool LogAnalyzer::try_external_stop() {
  const LogEvent* n = stop_notice();
  if (!n) return false;
  // The limit itself was named (Slurm's time limit, a preemption): that rule says more.
  for (const auto& e : c_.events)
    if (e.kind == LogKind::kResourceLimit) return false;
  // Ranks stuck in init for want of members: the stop is someone's reaction to that hang.
  if (!training_started_ && !never_joined().empty()) return false;
  // Nothing in the job failed before the notice. A failure after it is its consequence (a worker's
  // traceback on the signal, a peer's closed rendezvous); one whose order cannot be told is fine
  // for an echo, but a root of unknown order might be the cause the launcher reacted to.
  const Fail notice = make_fail(*n, -1);
  std::vector<const RankState*> states;
  for (const auto& s : rs_) states.push_back(&s);
  states.push_back(&anon_);
  for (const RankState* s : states) {
    for (const auto& f : s->fails) {
      if (f.role == Role::kInfo || f.role == Role::kTeardown || f.ev == n) continue;
      if (f.role == Role::kExit && !f.signal && (f.code == kNoCode || f.code == 0)) continue;
      if (before(f, notice)) return false;
      if (f.role == Role::kRoot && !before(notice, f) && !(f.has_t && n->has_t && f.t >= n->t)) return false;
    }
  }
  const std::string sig = signal_name(n->signal);
  const std::string who =
      n->word.empty() ? (n->kind == LogKind::kSignalException ? "torchrun" : "the launcher") : n->word;
  r_.phase = default_phase();
  forced_scope_ = "all";
  Fail f = notice;
  f.what = fmt::format("{} received {} and passed it on to the job's processes", who, sig);
  add_evidence(notice.ref, fmt::format("{}: {}", who, short_text(n->text)));
  note(fmt::format("{}: {}", sig, reason::signal_senders(n->signal)));
  if (n->signal == 2) {
    // Ctrl-C is a person at the launching terminal: a reaction (a job that looked hung, a wrong
    // run), not a failure of the job; what it was doing then is what the lines before it show.
    r_.category = "unknown";
    r_.cause = "unknown";
    r_.confidence = "low";
    forced_scope_.clear();
    set_first_unblamed(f);
    r_.summary = fmt::format(
        "unknown: the job was interrupted by hand ({} received {}, Ctrl-C); nothing in these "
        "lines failed before it, and why it was stopped is not in them",
        who, sig);
    return true;
  }
  r_.category = "rank_exit";
  r_.cause = "external_signal";
  r_.confidence = n->kind == LogKind::kLauncherSignal ? "medium" : "high";
  set_first_unblamed(f);
  r_.summary = fmt::format(
      "rank_exit (external_signal): the job was stopped from outside: {} received {} and passed "
      "it on; no rank failed before it ({})",
      who, sig, reason::signal_senders(n->signal));
  return true;
}

// The scheduler ended the whole job at its limit (Slurm's "*** STEP|JOB N ON host CANCELLED AT t DUE TO TIME
// LIMIT ***" / "DUE TO PREEMPTION", slurmstepd req.c): a notice about the job, not about a rank, so it decides
// even where srun names the ranks it then terminated ("tasks 8-15: Terminated": the limit's teardown) and the
// notice itself carries no rank. Not when a rank failed of its own before it (the job may have hung on that).
bool LogAnalyzer::try_job_limit() {
  if (use_anon_) return false;  // the ordinary rules read unattributed lines then
  const Fail* limit = nullptr;
  for (const auto& f : anon_.fails)
    if (!f.aftermath && (f.role == Role::kRoot || f.role == Role::kExit) && f.category == "resource_limit" &&
        (f.cause == "time_limit" || f.cause == "preemption")) {
      limit = &f;
      break;
    }
  if (!limit) return false;
  for (const auto& s : rs_)
    for (const auto& f : s.fails)
      if (f.role == Role::kRoot && !f.aftermath && before(f, *limit)) return false;
  set_root(*limit, true);
  return true;
}

}  // namespace hanglab::plainlog
