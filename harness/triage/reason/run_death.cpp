// Run-record reasoning, dead: a rank that died first (its peers' errors are echoes; OOM and
// /dev/shm evidence name the cause), and a live rank whose heartbeats stopped (frozen).
#include "triage/reason/run_analyzer.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace hanglab::reason {

// ---- rank death ---------------------------------------------------------------------

// An out-of-memory the records show (records/message_facts.cpp read what each message says): the
// kernel's or the cgroup's record, a detector's notice, the rank's own error.
bool Analyzer::has_oom_evidence(int rank) const {
  const auto oom = [](const TextFacts& s) { return s.cause == "oom" || s.cause == "cuda_oom"; };
  if (rank_has_hit(rank, hit_oom) || f_[rank].o->oom_evidence) return true;
  for (const auto& d : in_.harness.detections)
    if ((d.rank == rank || d.rank == -1) && oom(d.says)) return true;
  for (const auto& e : f_[rank].o->errors)
    if (oom(e.says)) return true;
  return false;
}

// A data-class exit caused by a too-small /dev/shm: PyTorch's "out of shared memory"
// (DataLoader worker killed by SIGBUS), or ENOSPC writing a /dev/shm segment.
bool Analyzer::has_shm_evidence(int rank) const {
  for (const auto& e : f_[rank].o->errors)
    if (e.says.cause == "shm_exhausted") return true;
  return rank_has_hit(rank, hit_shm);
}

void Analyzer::set_rank_exit(const Obs& d, bool ordered) {
  const auto& f = f_[d.rank];
  std::string cat = "rank_exit";
  std::string cause;
  if (d.signal) {
    cause = is_crash_signal(d.signal) ? "crashed" : "killed";
    if (has_oom_evidence(d.rank)) cause = "oom";
  } else if (d.cls == "vanished") {
    // No exit path ran and nobody recorded a status: killed from outside or crashed.
    cause = has_oom_evidence(d.rank) ? "oom" : "killed";
  } else if (d.cls == "data") {
    cat = "data_loading";
    cause = "data_error";
    if (has_shm_evidence(d.rank)) {
      cause = "shm_exhausted";
    } else if (rank_has_hit(d.rank, hit_disk_full)) {
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
  std::vector<int> missing;
  for (const Obs* x : all_obs(false)) {
    if (x->role == ObsKind::kRoot && x->t <= d.t + kExitReportSlackS &&
        (x->rank == d.rank || !stop_signal(x->signal) || stop_signal(d.signal)))
      missing.push_back(x->rank);
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  r_.missing_ranks = missing;
  r_.confidence = !ordered ? "low" : d.cls == "vanished" ? "medium" : "high";
  // Every rank of a node ([topology] nodes > 1), and only whole nodes, gone within
  // kNodeLossWindowS of each other: the node went down, not its ranks one by one.
  std::string node_phrase;
  if (d.signal && in_.harness.nodes.size() > 1) {
    std::vector<std::string> names;
    size_t covered = 0;
    double lo = 1e300, hi = -1e300;
    for (const auto& n : in_.harness.nodes) {
      if (n.ranks.size() < 2) continue;
      bool all = true;
      for (int r : n.ranks) all &= std::binary_search(missing.begin(), missing.end(), r);
      if (!all) continue;
      names.push_back(n.name.empty() ? fmt::format("node{}", n.node) : n.name);
      covered += n.ranks.size();
      for (int r : n.ranks) {
        const double t = f_[r].exited ? f_[r].exit_t : f_[r].o->last_t;
        lo = std::min(lo, t);
        hi = std::max(hi, t);
      }
    }
    if (!names.empty() && covered == missing.size() && hi - lo <= kNodeLossWindowS) {
      r_.cause = "node_failure";
      std::string ns;
      for (const auto& n : names) ns += (ns.empty() ? "" : ", ") + n;
      node_phrase = fmt::format("all {} ranks of {} vanished within {:.0f} ms ({}): the node went down, not one rank; ",
                                missing.size(), ns, (hi - lo) * 1000, ranks_phrase(missing));
      add_evidence(d.ref, fmt::format("{} held ranks {} and nothing else failed there first", ns, ranks_phrase(missing)));
    }
  }
  r_.phase = f.o->init_ended ? answer_phase(f.o->last_phase) : "init";
  // A rank that died while fetching a batch died in training; "data" is for data causes.
  if (r_.phase == "data" && d.cls != "data") r_.phase = "training";

  Obs first = d;
  if (d.signal) {
    // The peers saw its sockets close before the supervisor's waitpid noticed: the
    // process was dead by the first such error.
    for (const Obs* x : all_obs(false)) {
      if (x->role == ObsKind::kEcho && x->cls == "comm" && x->t < first.t && x->t >= f.o->last_t) first.t = x->t;
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
  if (r_.cause == "shm_exhausted") cite_log_hits(d.rank, hit_shm);
  cite_log_hits(d.rank, hit_root);
  cite_stuck("");
  if (const Obs* e = first_echo()) add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, e->what));
  if (!ordered) {
    add_evidence(d.ref, "a peer had already failed before this death: the order does not prove it is the root cause");
  }
  const std::string verb = d.cls == "signal" || d.cls == "vanished" ? "" : "failed: ";
  r_.summary =
      fmt::format("{} ({}): {}rank {} {}{} at {:+.3f} s{}", cat, r_.cause, node_phrase, d.rank, verb, d.what, rel(first.t),
                  r_.stuck_collective && !r_.stuck_collective->waiting_ranks.empty()
                      ? fmt::format("; {} were left in {} seq {}", ranks_phrase(r_.stuck_collective->waiting_ranks),
                                    r_.stuck_collective->op, r_.stuck_collective->seq)
                      : "");
}

// ---- frozen ------------------------------------------------------------------------

// Heartbeats stop for good at least kFrozenPeriods before the process ends, while
// another rank keeps beating past that point.
bool Analyzer::silent_before_end(const RankFacts& f) const {
  const double gap = kFrozenPeriods * period_;
  if (f.obs_end - f.last_hb < gap) return false;
  return std::any_of(f_.begin(), f_.end(), [&](const RankFacts& g) {
    return g.rank != f.rank && g.has_hb && g.last_hb >= f.last_hb + gap;
  });
}

// A rank killed from outside after its heartbeats had long stopped froze first: the
// kill (often by an operator or a watchdog) is not where it went wrong.
bool Analyzer::froze_before_death(int rank) const {
  const auto& f = f_[rank];
  return f.exited && !f.teardown_exit && f.signal && f.o->has_trace && f.has_hb && silent_before_end(f);
}

bool Analyzer::try_frozen() {
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

}  // namespace hanglab::reason
