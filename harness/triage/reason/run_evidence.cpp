// One evidence model per run: the supervisor's record (each rank's exit and when, each
// detector and when), the captured stacks with the process state before the capture, and
// the progress lines the ranks printed, applied to an answer (see run_evidence.hpp).
//
// Observed facts outrank inferences from log text. For a run whose ranks wrote a hanglab
// trace the run-record reasoner already argued from the same exits; this fills the rank
// table (exit, state, top frames, progress) and the detector in context. For a
// bring-your-own run (no trace: the answer came from its plain logs) it also decides, from
// the observations, in this order:
//   a rank that exited abnormally before the harness tore the job down -> rank_exit,
//     the first such exit is the culprit (a death by signal within the exit-report slack
//     of it wins: its peers' "Connection reset" exits are its echoes);
//   else a rank whose stack shows it stopped (state T) -> straggler / frozen;
//   else a rank outside the collective its peers wait in -> straggler, in I/O
//     (slow_storage, phase checkpoint when it is a save), in data loading, or computing;
//   ranks' liveness from the same facts: exited -> dead/completed, stopped -> frozen,
//     busy outside a collective -> slow, waiting in one -> hung;
//   phase: a rank that printed progress lines before the failure was training.
#include "triage/reason/run_evidence.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "triage/reason/next_steps.hpp"
#include "triage/reason/run_analyzer.hpp"

namespace hanglab {

namespace {

using reason::join_ranks;

struct Seen {
  int rank = -1;
  const RankObservations* o = nullptr;
  const HarnessExit* exit = nullptr;
  bool teardown = false;  // the exit came from the harness' teardown
  bool abnormal() const { return exit && !teardown && (exit->signal || (exit->code && *exit->code != 0)); }
  const StackFrameInfo* stack() const { return o && o->stack && !o->stack->klass.empty() ? &*o->stack : nullptr; }
  std::string klass() const { return stack() ? stack()->klass : ""; }
};

std::string exit_phrase(const HarnessExit& e) {
  if (e.signal) return fmt::format("killed by signal {}{}", *e.signal, *e.signal == 9 ? " (SIGKILL)" : "");
  if (e.code) return fmt::format("exited with code {}", *e.code);
  return "exited";
}

std::string short_frame(const std::string& f) {
  std::string s = f.substr(0, f.find('\t'));
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string busy_phrase(const Seen& s) {
  const auto* st = s.stack();
  if (!st) return "";
  if (st->klass == "io" && st->klass_what == "a checkpoint save") {
    // Name the save: torch.save itself, or the program's save and where it stands in it
    // ("a checkpoint save (SFTTrainer._save_checkpoint ..., in RepoCard.save ...)").
    if (st->torch_save) return "torch.save";
    std::string top;
    for (const auto& f : st->frames)
      if (!f.empty()) { top = f; break; }
    return "a checkpoint save (" + short_frame(st->klass_frame) +
           (top.empty() || top == st->klass_frame ? "" : ", in " + short_frame(top)) + ")";
  }
  if (st->klass == "io") return "I/O (" + st->klass_what + ")";
  if (st->klass == "data") return "data loading";
  if (st->klass == "compute") return "its own code (" + short_frame(st->klass_frame) + ")";
  return st->klass_what;
}

// The supervisor's record per rank folder: its exit (and whether the teardown caused it).
std::map<int, Seen> observe(const RunObservations& in) {
  const auto& h = in.harness;
  std::map<int, Seen> seen;
  for (const auto& [rank, o] : in.ranks) {
    if (rank < 0) continue;  // a launcher's own console (torchrun, mpirun), not a rank
    Seen s;
    s.rank = rank;
    s.o = &o;
    if (auto it = h.exits.find(rank); it != h.exits.end()) {
      s.exit = &it->second;
      s.teardown = it->second.by_teardown.value_or(h.teardown_t && it->second.t >= *h.teardown_t);
    }
    seen[rank] = s;
  }
  return seen;
}

// The rank table: exits, state, top frames, progress.
void fill_rank_table(std::map<int, Seen>& seen, TriageResult& r, bool traced) {
  for (auto& t : r.per_rank) {
    auto it = seen.find(t.rank);
    if (it == seen.end()) continue;
    const Seen& s = it->second;
    if (s.exit) {
      if (!traced) {  // (a traced run's table already has them from the same record)
        t.exit_code = s.exit->code;
        t.signal = s.exit->signal;
      }
      t.exit_t = s.exit->t;
      t.exit_by_harness = s.teardown;
    }
    if (const auto* st = s.o->stack ? &*s.o->stack : nullptr) {
      t.proc_state = st->state;
      t.stack_class = st->klass;
      t.top_frames.clear();
      for (size_t i = 0; i < st->frames.size() && t.top_frames.size() < 3; ++i)
        t.top_frames.push_back(short_frame(st->frames[i]));
      if (t.stuck_in.empty() && !st->klass_frame.empty()) t.stuck_in = short_frame(st->klass_frame);
    }
    if (s.o->progress) {
      t.progress = s.o->progress->last_what;
      t.progress_t = s.o->progress->last_t;
      t.progress_lines = s.o->progress->lines;
      t.progress_every_s = s.o->progress->median_gap_s;
    }
  }
}

// What a bring-your-own run's observations decide: the culprits, their category and cause.
struct ByoVerdict {
  std::vector<int> culprits;
  std::string category, cause, headline;
  double fail_t = 0;
};

ByoVerdict decide_culprits(const RunObservations& in, std::map<int, Seen>& seen, TriageResult& r) {
  const auto& h = in.harness;
  ByoVerdict v;
  auto& culprits = v.culprits;
  auto& category = v.category;
  auto& cause = v.cause;
  auto& headline = v.headline;
  double& fail_t = v.fail_t;
  std::vector<const Seen*> dead;
  for (const auto& [rank, s] : seen)
    if (s.abnormal()) dead.push_back(&s);
  std::sort(dead.begin(), dead.end(), [](const Seen* a, const Seen* b) { return a->exit->t < b->exit->t; });
  // The log reading already named a culprit from the text (a traceback as root, "Connection
  // closed" as echo, collective sequences that diverge): an exit code alone does not
  // outrank that, since echoes exit non-zero too and in any order; a signal death does.
  const bool log_decided = !r.missing_ranks.empty() && r.category != "unknown" && r.category != "none";
  // A rank whose own log already showed it failing as an echo of the logs' culprit (its
  // "Connection closed by peer" traceback, NCCL's watchdog timeout) and that then died of a
  // signal was ending of that error: the abort came in its exit path (torch 2.x's Gloo
  // worker thread and Py_FinalizeEx: "terminate called without an active exception" after
  // the traceback; NCCL's watchdog takes the process down with SIGABRT by design). Its signal
  // is not a death of its own and does not outrank the logs.
  const auto ends_echo = [&](const Seen* d) {
    if (!log_decided || !d->exit->signal) return false;
    if (std::find(r.missing_ranks.begin(), r.missing_ranks.end(), d->rank) != r.missing_ranks.end()) return false;
    return std::any_of(r.echoes.begin(), r.echoes.end(),
                       [&](const Failure& e) { return e.rank == d->rank && e.t <= d->exit->t; });
  };
  const auto own_signal = [&](const Seen* d) { return d->exit->signal && !ends_echo(d); };
  std::vector<int> stopped;
  for (const auto& [rank, s] : seen)
    if (s.klass() == "stopped" && !(s.exit && !s.teardown)) stopped.push_back(rank);
  if (!stopped.empty()) {
    // A stopped rank outranks the exits: its peers' timeouts are its echoes.
    culprits = stopped;
    category = "straggler";
    cause = "frozen";
    const Seen& c = seen[stopped.front()];
    // It went silent at its last progress line (when it stopped, at the latest).
    fail_t = c.o->progress ? c.o->progress->last_t : c.stack()->t.value_or(h.stacks_t.value_or(0));
    headline = fmt::format("rank(s) {} stopped (process state T at the stack capture){}", join_ranks(stopped),
                           dead.empty() ? " while the others waited"
                                        : fmt::format("; rank(s) {} gave up on them and exited", [&] {
                                            std::vector<int> d;
                                            for (const Seen* x : dead) d.push_back(x->rank);
                                            return join_ranks(d);
                                          }()));
    r.first_failure = Failure{
        c.rank, fail_t,
        c.o->progress ? fmt::format("stopped (state T at the stack capture); its last progress line ({}) is the "
                                    "time shown",
                                    c.o->progress->last_what)
                      : std::string("stopped (state T at the stack capture)"),
        fmt::format("ranks/{}/stack.txt", c.rank)};
    r.echoes.clear();
    for (const Seen* d : dead)
      r.echoes.push_back({d->rank, d->exit->t, exit_phrase(*d->exit), reason::h_ref(d->exit->line)});
  } else if (!dead.empty() && [&] {
               const Seen* first = dead.front();
               for (const Seen* d : dead) {
                 if (d->exit->t > first->exit->t + reason::kExitReportSlackS) break;
                 if (own_signal(d)) return true;
               }
               return !log_decided;
             }()) {
    // Within the exit-report slack: a signal death before an exit code, and a kill or crash before
    // a SIGTERM/SIGINT/SIGHUP death, which is what a launcher sends the survivors (torchrun, at once).
    const auto terminated = [](const Seen* d) { return reason::stop_signal(d->exit->signal.value_or(0)); };
    const Seen* first = dead.front();
    for (const Seen* d : dead) {
      if (d->exit->t > first->exit->t + reason::kExitReportSlackS) break;
      if ((own_signal(d) && !own_signal(first)) || (own_signal(d) && terminated(first) && !terminated(d))) {
        first = d;
        break;
      }
    }
    culprits = {first->rank};
    category = "rank_exit";
    const bool kept = r.category == "rank_exit" && r.missing_ranks == culprits;
    // The logs gave this rank's own failure a cause that ends a process by itself (its
    // traceback says "Unable to find address for: eth9", a refused store): it exited of
    // that cause, and the exit confirms the rank; "exception" would lose what it said.
    const bool logged_cause = !first->exit->signal && r.first_failure &&
                              r.first_failure->rank == first->rank &&
                              (r.category == "network" || r.category == "rendezvous");
    if (logged_cause) category = r.category;
    cause = kept || logged_cause ? r.cause
            : first->exit->signal ? (reason::is_crash_signal(*first->exit->signal) ? "crashed" : "killed")
                                  : "exception";
    fail_t = first->exit->t;
    headline = fmt::format("rank {} {} at {:+.3f} s [{}]", first->rank, exit_phrase(*first->exit), fail_t - r.t0,
                           reason::h_ref(first->exit->line));
    r.first_failure = Failure{first->rank, fail_t, exit_phrase(*first->exit), reason::h_ref(first->exit->line)};
    r.echoes.clear();
    for (const Seen* d : dead) {
      if (d != first)
        r.echoes.push_back({d->rank, d->exit->t, exit_phrase(*d->exit), reason::h_ref(d->exit->line)});
    }
  } else if (!log_decided) {
    std::vector<int> waiting, busy;
    for (const auto& [rank, s] : seen) {
      const std::string k = s.klass();
      if (k == "collective" || k == "init") waiting.push_back(rank);
      if (k == "io" || k == "data" || k == "compute") busy.push_back(rank);
    }
    if (!busy.empty() && !waiting.empty()) {
      culprits = busy;
      category = "straggler";
      const std::string k = seen[busy.front()].klass();
      cause = k == "io" ? "slow_storage" : k == "data" ? "data_loader_stall" : "slow_rank";
      if (k == "data") category = "data_loading";
      headline = fmt::format("rank(s) {} in {} while rank(s) {} waited in {}", join_ranks(busy),
                             busy_phrase(seen[busy.front()]), join_ranks(waiting),
                             seen[waiting.front()].stack()->klass_what);
    }
    if (!culprits.empty()) {
      const Seen& c = seen[culprits.front()];
      fail_t = c.stack()->t.value_or(h.stacks_t.value_or(0));
      r.first_failure = Failure{c.rank, fail_t, headline, fmt::format("ranks/{}/stack.txt", c.rank)};
    }
  }
  return v;
}

// The verdict applied: none when every rank exited 0, else the culprits; liveness from the observations.
void apply_verdict(const ByoVerdict& v, std::map<int, Seen>& seen, TriageResult& r) {
  const auto& culprits = v.culprits;
  const auto& category = v.category;
  const auto& cause = v.cause;
  const auto& headline = v.headline;
  const bool all_clean =
      !seen.empty() && r.world_size > 0 && static_cast<int>(seen.size()) >= r.world_size &&
      std::all_of(seen.begin(), seen.end(), [](const auto& kv) {
        const Seen& s = kv.second;
        return s.exit && !s.teardown && !s.exit->signal && s.exit->code && *s.exit->code == 0;
      });
  if (culprits.empty() && all_clean) {
    // Every rank exited 0 on its own: nothing failed, whatever the logs lacked.
    r.category = "none";
    r.cause = "none";
    r.scope = "none";
    r.missing_ranks.clear();
    r.confidence = "high";
    r.summary = fmt::format("none: all {} ranks exited 0 (the supervisor's record)", seen.size());
    for (auto& t : r.per_rank) t.liveness = "completed";
  }
  if (!culprits.empty()) {
    r.category = category;
    r.cause = cause;
    r.missing_ranks = culprits;
    r.scope = static_cast<int>(culprits.size()) < r.world_size ? "subset" : "all";
    r.confidence = "high";
    r.summary = fmt::format("{} ({}): {}", category, cause, headline);
  }
  // Liveness from what was observed.
  for (auto& t : r.per_rank) {
    const Seen& s = seen[t.rank];
    // A survivor whose collective failed on a peer's closed connection was waiting on the
    // dead peer when it learned of the death. That is later evidence than a stack sampled
    // before the death, which in a fast loop is as likely a compute frame as a collective;
    // and whether it then died of that error or its launcher stopped it first is the
    // launcher's timing, not the rank's state: either way it was hung on the culprit.
    const bool culprit = std::find(culprits.begin(), culprits.end(), t.rank) != culprits.end();
    const bool failed_on_dead_peer = !culprits.empty() && !culprit && s.o &&
                                     std::any_of(s.o->log_hits.begin(), s.o->log_hits.end(), reason::hit_peer_closed);
    if (s.exit && !s.teardown) {
      t.liveness = s.abnormal() ? (failed_on_dead_peer ? "hung" : "dead") : "completed";
      continue;
    }
    const std::string k = s.klass();
    if (k == "stopped") t.liveness = "frozen";
    else if (failed_on_dead_peer) t.liveness = "hung";
    else if (k == "io" || k == "data" || k == "compute") t.liveness = "slow";
    else if (k == "collective" || k == "init") t.liveness = "hung";
  }
}

// The phase and the last completed step, from the stacks and the progress lines.
void byo_phase(const ByoVerdict& v, std::map<int, Seen>& seen, TriageResult& r, bool traced) {
  const auto& culprits = v.culprits;
  const double fail_t = v.fail_t;
  // Phase: what the culprit's stack shows, else progress printed before the failure. A
  // stack sampled before the job's first progress line shows the culprit before training
  // began (the liveness watch samples a rank that is quiet while it starts), not where it
  // failed: ranks print progress only once every rank is past init, the culprit too.
  double first_progress_t = 0;
  for (const auto& [rank, s] : seen)
    if (s.o->progress && (fail_t == 0 || s.o->progress->first_t <= fail_t) &&
        (first_progress_t == 0 || s.o->progress->first_t < first_progress_t))
      first_progress_t = s.o->progress->first_t;
  std::string phase;
  if (!culprits.empty()) {
    const Seen& c = seen[culprits.front()];
    if (const auto* st = c.stack(); st && !(st->t && first_progress_t > 0 && *st->t < first_progress_t)) {
      if (st->klass == "io" && st->klass_what == "a checkpoint save") phase = "checkpoint";
      // A batch fetch inside the loop (the stack class "DataLoader next") is part of the step it feeds: "data"
      // is the phase only where the answer is a data cause, as for a traced rank (run_death.cpp).
      else if (st->klass == "data") phase = r.category == "data_loading" ? "data" : "training";
      else if (st->klass == "init") phase = "init";
      else phase = st->phase;  // e.g. stopped inside Trainer.train
    }
  }
  // A culprit's own frames say init (DDP's construction broadcasting the parameters, a framework's init_*)
  // while a peer waits inside training, evaluation or a save: the job is past init, and the culprit was
  // (re)building a model inside that later phase (accelerate's training_check wraps a new model in DDP).
  // A rank stopped or killed stands wherever the signal found it; the peers' wait shows where the job was.
  if (phase == "init") {
    for (const auto& [rank, s] : seen) {
      if (std::find(culprits.begin(), culprits.end(), rank) != culprits.end()) continue;
      const auto* st = s.stack();
      if (!st || !(st->phase == "training" || st->phase == "eval" || st->phase == "checkpoint")) continue;
      if (st->t && fail_t > 0 && *st->t < fail_t) continue;  // sampled before the failure: not its wait
      phase = st->phase;
      r.evidence.push_back({fmt::format("ranks/{}/stack.txt", rank),
                            fmt::format("rank {}'s stack places it in {} while it waited: the job was past init, "
                                        "whatever the culprit's frames were building",
                                        rank, phase)});
      break;
    }
  }
  if (phase.empty() && (r.phase == "init" || r.phase == "unknown" || r.phase.empty())) {
    std::vector<int> trained;
    for (const auto& [rank, s] : seen) {
      if (s.o->progress && (fail_t == 0 || s.o->progress->first_t <= fail_t)) trained.push_back(rank);
    }
    if (!trained.empty()) {
      phase = "training";
      const auto& p = *seen[trained.front()].o->progress;
      r.evidence.push_back({fmt::format("ranks/{}/{}", trained.front(), p.last_ref),
                            fmt::format("rank(s) {} printed progress lines (last: {}): the job was training",
                                        join_ranks(trained), p.last_what)});
    }
  }
  // Without a trace the last completed step is what the progress lines counted: the
  // fewest steps any counting rank reported (DDP keeps ranks in step; many programs
  // print from rank 0 only, whose count then stands for the job).
  if (!traced && r.last_good_step == 0) {
    std::optional<long long> fewest;
    std::string fewest_ref;
    std::vector<int> counters;
    for (const auto& [rank, s] : seen) {
      if (!s.o->progress || !s.o->progress->steps_done) continue;
      counters.push_back(rank);
      if (!fewest || *s.o->progress->steps_done < *fewest) {
        fewest = *s.o->progress->steps_done;
        fewest_ref = fmt::format("ranks/{}/{}", rank, s.o->progress->last_ref);
      }
    }
    if (fewest && *fewest > 0 && *fewest < (1LL << 30)) {
      r.last_good_step = static_cast<int>(*fewest);
      r.evidence.push_back({fewest_ref, fmt::format("last completed step {}: the fewest steps counted by the "
                                                          "progress lines of rank(s) {}",
                                                          *fewest, join_ranks(counters))});
    }
  }
  // ...else where the other ranks stood when they lost the culprit: their own traceback
  // through the program's training function (accelerate's training_check, a Trainer's
  // _inner_training_loop), a save or an evaluation, or the same read off their captured
  // stacks (logs/frames.cpp's table).
  if (phase.empty() && (r.phase == "init" || r.phase == "unknown" || r.phase.empty())) {
    for (const auto& t : r.per_rank) {
      if (std::find(culprits.begin(), culprits.end(), t.rank) != culprits.end()) continue;
      if (t.last_phase == "training" || t.last_phase == "checkpoint" || t.last_phase == "eval" ||
          t.last_phase == "data") {
        phase = t.last_phase;
        r.evidence.push_back({t.failure_ref.empty() ? t.last_line : t.failure_ref,
                              fmt::format("rank {}'s own lines place it in {} when it failed", t.rank, phase)});
        break;
      }
      const auto it = seen.find(t.rank);
      if (it == seen.end()) continue;
      if (const auto* st = it->second.stack()) {
        if (const std::string& p = st->phase; !p.empty() && p != "init") {
          phase = p;
          r.evidence.push_back({fmt::format("ranks/{}/stack.txt", t.rank),
                                fmt::format("rank {}'s stack places it in {} while it waited", t.rank, phase)});
          break;
        }
      }
    }
  }
  if (!phase.empty()) r.phase = phase;
}

// The observed answers replace the ones the log reasoner argued from text.
void byo_answers(const ByoVerdict& v, TriageResult& r) {
  const auto& culprits = v.culprits;
  const auto& headline = v.headline;
  for (auto it = r.answers.begin(); it != r.answers.end();) {
    // The log reasoner's answers argued from text only: the observed ones replace them.
    it = culprits.empty() ? std::next(it) : r.answers.erase(it);
  }
  if (!culprits.empty()) {
    r.answers.push_back(fmt::format("What failed first: {}", headline));
    r.answers.push_back(fmt::format("Phase: {}", r.phase));
    std::vector<std::string> parts;
    for (const char* l : {"dead", "frozen", "slow", "hung", "completed"}) {
      std::vector<int> ranks;
      for (const auto& t : r.per_rank)
        if (t.liveness == l) ranks.push_back(t.rank);
      if (!ranks.empty()) parts.push_back(fmt::format("{} {}", l, join_ranks(ranks)));
    }
    r.answers.push_back(fmt::format("Slow or dead: {}", fmt::join(parts, "; ")));
    r.answers.push_back(fmt::format("Scope: {} (missing rank(s) {})", r.scope, join_ranks(r.missing_ranks)));
    r.next_steps = playbook_next_steps(r);
    r.notes.push_back("the supervisor's record (exits, signals) and the captured stacks decided this answer; the "
                      "notes above are what the logs alone could tell");
  }
}

// The detector in context: which detector fired and what the ranks were doing then.
void detector_context(const RunObservations& in, std::map<int, Seen>& seen, TriageResult& r) {
  const auto& h = in.harness;
  const HarnessDetect* det = nullptr;
  for (const auto& d : h.detections) {
    if (d.detector == "harness_watchdog" || d.detector == "backend_timeout" || d.detector == "heartbeat_loss") {
      det = &d;
      break;
    }
  }
  if (det) {
    std::vector<std::string> busy_parts;
    std::vector<int> stopped_alive;
    std::map<std::string, std::vector<int>> waiting;
    for (const auto& [rank, s] : seen) {
      if (s.exit && s.exit->t <= det->t && !s.teardown) continue;  // dead by then
      const std::string k = s.klass();
      if (k == "io" || k == "data" || k == "compute") {
        double last = 0;
        if (s.o->progress) last = s.o->progress->last_t;
        if (s.o->last_progress_t > last) last = s.o->last_progress_t;
        const double at = s.stack()->t.value_or(det->t);
        busy_parts.push_back(last > 0 ? fmt::format("rank {} was in {} for {:.1f} s", rank, busy_phrase(s), at - last)
                                      : fmt::format("rank {} was in {}", rank, busy_phrase(s)));
      } else if (k == "collective" || k == "init") {
        waiting[s.stack()->klass_what].push_back(rank);
      } else if (k == "stopped") {
        stopped_alive.push_back(rank);
      }
    }
    if (busy_parts.empty() && !stopped_alive.empty()) {
      r.detector_context = fmt::format("{} fired while rank(s) {} stood stopped (process state T): frozen, not slow "
                                       "— no timeout would have let it finish [{}]",
                                       det->detector, join_ranks(stopped_alive), reason::h_ref(det->line));
    }
    if (!busy_parts.empty()) {
      double since = 0;
      for (const auto& [rank, s] : seen) {
        double last = s.o->progress ? s.o->progress->last_t : 0;
        last = std::max(last, s.o->last_progress_t);
        since = std::max(since, last);
      }
      std::string ctx = since > 0 ? fmt::format("{} after {:.1f} s without progress while {}", det->detector,
                                                det->t - since, fmt::join(busy_parts, ", "))
                                  : fmt::format("{} fired while {}", det->detector, fmt::join(busy_parts, ", "));
      for (const auto& [what, ranks] : waiting)
        ctx += fmt::format("; rank(s) {} waiting in {}", join_ranks(ranks), what);
      ctx += ": slow, not dead";
      const bool save = std::any_of(seen.begin(), seen.end(), [](const auto& kv) {
        return kv.second.stack() && kv.second.klass() == "io";
      });
      if (save) {
        if (det->detector == "harness_watchdog" && h.progress_s)
          ctx += fmt::format("; progress_s ({:.0f} s) is below this job's checkpoint time", *h.progress_s);
        else if (det->detector == "backend_timeout" && h.collective_s)
          ctx += fmt::format("; collective_s ({:.0f} s) is below this job's checkpoint time", *h.collective_s);
      }
      ctx += fmt::format(" [{}]", reason::h_ref(det->line));
      r.detector_context = ctx;
    }
  }
}

}  // namespace

void apply_run_evidence(const RunObservations& in, TriageResult& r, bool traced) {
  const auto& h = in.harness;
  // Times relative to the launch, as in the run-record answer (the log reading starts at
  // the first log line).
  if (!traced && h.start_t) r.t0 = *h.start_t;
  std::map<int, Seen> seen = observe(in);
  fill_rank_table(seen, r, traced);
  // A bring-your-own run: decide from the observations.
  if (!traced) {
    const ByoVerdict v = decide_culprits(in, seen, r);
    apply_verdict(v, seen, r);
    byo_phase(v, seen, r, traced);
    byo_answers(v, r);
  }
  detector_context(in, seen, r);
}

}  // namespace hanglab
