// Run-record reasoning, the answer: each rank's liveness (slow vs dead), the scope, the
// echoes, and the four questions answered in one line each.
#include "triage/reason/run_analyzer.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "exit_codes.hpp"
#include "triage/reason/next_steps.hpp"

namespace hanglab::reason {

// ---- liveness, scope, echoes, answers --------------------------------------------------

void Analyzer::assign_liveness() {
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
      const bool waited = x && x->role == ObsKind::kEcho && (x->cls != "rendezvous" || x->says.timeout);
      t.liveness = waited ? "hung" : "dead";
    }
  }
}

void Analyzer::finish() {
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

std::string Analyzer::rank_state_phrase(const RankTimeline& t) const {
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

void Analyzer::build_answers() {
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

}  // namespace hanglab::reason
