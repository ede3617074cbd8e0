// Plain-log reasoning: the earliest real failure and its echoes (root vs echo), the
// launcher's claims, a rank that vanished (see log_analyzer.hpp).
#include "triage/reason/log_analyzer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "util.hpp"

namespace hanglab::plainlog {

bool LogAnalyzer::has_oom_evidence(const RankState& s) const {
  for (const auto& f : s.fails) {
    if (f.cause == "oom") return true;
  }
  for (const LogEvent* e : host_events_) {
    if (e->kind == LogKind::kOomKill && e->pid >= 0 && s.pids.count(e->pid)) return true;
  }
  return false;
}

const LogEvent* LogAnalyzer::unowned_oom_report() const {
  for (const LogEvent* e : host_events_) {
    if (e->kind == LogKind::kOomKill && e->pid < 0) return e;
  }
  return nullptr;
}

void LogAnalyzer::set_root(const Fail& root, bool ordered) {
  const RankState& s = valid_rank(root.rank) ? rs_[root.rank] : anon_;
  r_.category = root.category.empty() ? "rank_exit" : root.category;
  r_.cause = root.cause.empty() ? "nonzero_exit" : root.cause;
  if ((r_.cause == "killed" || r_.cause == "nonzero_exit") && has_oom_evidence(s)) r_.cause = "oom";
  // A DataLoader worker SIGKILLed whose pid the kernel's OOM report names.
  if (r_.cause == "data_loader_crash" && root.signal == 9 && root.ev && root.ev->pid >= 0)
    for (const LogEvent* e : host_events_)
      if (e->kind == LogKind::kOomKill && e->pid == root.ev->pid) r_.cause = "oom";
  // The kernel's OOM kill of a DataLoader worker (its parent reports the same pid killed): the data
  // loading ran the host out of memory.
  if (r_.cause == "oom" && root.ev && root.ev->kind == LogKind::kOomKill && root.ev->pid >= 0)
    for (const auto& e : c_.events)
      if (e.kind == LogKind::kDataLoaderKilled && e.pid == root.ev->pid) r_.category = "data_loading";
  // A SIGKILL beside the job's own OOM report that names no process: Slurm's task/cgroup summary
  // "Detected N oom-kill event(s) in <step> [cgroup]. Some of your processes may have been killed by
  // the cgroup out-of-memory handler." (task_cgroup_memory.c:918@slurm-20-02-7-1, :814@slurm-20-11-9-1,
  // :349@slurm-22-05-11-1) / "Detected N oom_kill event[s] in <step>. Some of the step tasks have been
  // OOM Killed." (:349@slurm-23-02-8-1, :304@slurm-24-05-8-1, :302@slurm-24-11-7-1), a pod's OOMKilled:
  // the out-of-memory handler kills with SIGKILL, so the kill is the OOM's.
  if ((r_.cause == "killed" || r_.cause == "data_loader_crash") && root.signal == 9 && unowned_oom_report()) {
    r_.cause = "oom";
    add_evidence(ref(*unowned_oom_report()), fmt::format("the job's OOM report: {}", short_text(unowned_oom_report()->text)));
  }
  // A CUDA OOM that no line ties to a rank: what the logs prove is a GPU whose memory ran out (the
  // resource), not which rank's death the job failed on.
  if (r_.cause == "cuda_oom" && r_.category == "rank_exit" && !valid_rank(root.rank)) r_.category = "resource_limit";
  // Ranks that died with it.
  std::vector<int> missing;
  for (const Fail* f : all_fails()) {
    if (f->rank < 0) continue;
    // A plain exit is a root only where nothing stronger is (first_root's fallback): then it and the
    // launcher's other plain exits at the same whole second (torchrun's summary: it noticed them at
    // once, and its stamps cannot order them) are the failure.
    const bool plain_root = root.role == Role::kExit && !root.signal && !root.ev && f->role == Role::kExit &&
                            !f->signal && f->code != 0 && !f->ev && f->file == root.file && f->has_t && root.has_t &&
                            f->t == root.t;
    const bool rootish =
        !f->aftermath && (f->role == Role::kRoot || (f->role == Role::kExit && f->signal && f->signal != 15) ||
                          plain_root);
    if (!rootish) continue;
    // Died together: only provable with the lines' own clocks, not inherited ones.
    const bool exact = f->ev && f->ev->t_exact && root.ev && root.ev->t_exact;
    // Ranks that failed the same way (the same message, e.g. a bad argument on every
    // rank) or at the same moment (a node going down) are all missing.
    const bool same_text = f->ev && root.ev && f->ev->text == root.ev->text && f->category == root.category;
    // A crash signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE) is the process's own, never an
    // echo of another's death: every rank that died of it is missing.
    const bool own_crash = root.signal == f->signal && (f->signal == 11 || f->signal == 7 || f->signal == 4 ||
                                                        f->signal == 8);
    if (f->rank == root.rank || same_text || own_crash || plain_root ||
        (exact && f->t <= root.t + root.res + kTogetherS && f->category == root.category)) {
      const Fail* ff = rs_[f->rank].first_fail();
      if (ff && ff->role == Role::kEcho) continue;
      missing.push_back(f->rank);
    }
  }
  if (adopted_ && &root == &*adopted_) missing.push_back(root.rank);  // its traceback: it exited
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  // A link or interface fault: the rank that logged it is a witness, not missing.
  if (r_.category == "network") {
    if (!missing.empty()) {
      note(fmt::format("{} logged the link/interface error; a network fault leaves no rank missing: every rank "
                       "waits",
                       reason::ranks_phrase_counted(missing)));
    }
    missing.clear();
  }
  // The job's time limit or a preemption ends every rank alike (Slurm's "CANCELLED ... DUE TO
  // TIME LIMIT" / "DUE TO PREEMPTION", which srun -l shows as task 0's line): the rank whose
  // stream carried it is a witness.
  if (r_.cause == "time_limit" || r_.cause == "preemption") {
    if (!missing.empty() && r_.cause == "time_limit")
      note(fmt::format("{} carried the scheduler's time-limit notice; a time limit ends every rank alike: none is "
                       "missing. What made the job outlast its limit is not in these lines",
                       reason::ranks_phrase_counted(missing)));
    else if (!missing.empty())
      note(fmt::format("{} carried the scheduler's preemption notice; a preemption ends every rank alike: none is "
                       "missing",
                       reason::ranks_phrase_counted(missing)));
    missing.clear();
  }
  r_.missing_ranks = missing;
  r_.phase = phase_of_rank(s);
  // A failure its emitter prints only while setting up (the catalogue's phase "init": NCCL's
  // topology search, bootstrap, device open in init.cc/graph/bootstrap.cc) is init even after the
  // process-group banner ("All distributed processes registered", "Init COMPLETE" of another
  // communicator): ProcessGroupNCCL creates a communicator lazily, at its first collective, after
  // init_process_group has returned. Only a step line before it shows a communicator made mid-run.
  if (root.ev && root.ev->phase == "init" && !steps_seen() && (r_.phase == "training" || r_.phase == "unknown"))
    r_.phase = "init";
  // A crash while exiting, after the work was done: no rank is missing from the work. A rank
  // killed from outside then (SIGKILL, SIGTERM: the OOM killer, an operator, a scheduler) did not
  // end of its own: it is the one the failure is about.
  const bool killed = root.signal != 0 && !is_crash_signal(root.signal);
  if (r_.phase == "shutdown" && !killed) r_.missing_ranks.clear();
  // DataLoader workers feed the training loop: their deaths are in training.
  if (r_.phase == "unknown" && root.ev &&
      (root.ev->kind == LogKind::kDataLoaderKilled || root.ev->kind == LogKind::kShmBusError))
    r_.phase = "training";
  r_.confidence = !ordered ? "low" : root.has_t && root.ev && root.ev->t_exact ? "high" : "medium";
  set_first(root);
  add_evidence(root.ref, fmt::format("{}: {}", who(root.rank), root.what));
  // The rank's own exit, and its last step.
  if (!s.exit_ref.empty() && s.exit_ref != root.ref) {
    add_evidence(s.exit_ref, fmt::format("rank {} {}", root.rank,
                                         s.exit_signal ? "exited by " + signal_name(*s.exit_signal)
                                                       : fmt::format("exited with code {}", s.exit_code.value_or(-1))));
  }
  if (s.log && s.log->n_steps > 0 && !s.log->recent.empty()) {
    const auto& st = s.log->recent.back();
    add_evidence(ref(st.file, st.line), fmt::format("rank {}'s last step: {}", root.rank, st.step));
  }
  if (root.cause == "oom" || r_.cause == "oom") {
    for (const LogEvent* e : host_events_) {
      if (e->kind == LogKind::kOomKill && e->pid >= 0 && s.pids.count(e->pid))
        add_evidence(ref(*e), fmt::format("kernel: {}", short_text(e->text)));
    }
  }
  // The first echo, and torchrun's own claim when it names someone else.
  for (const Fail* f : all_fails()) {
    if (f->role == Role::kEcho && f->rank != root.rank) {
      add_evidence(f->ref, fmt::format("first echo: rank {} {} ({})", f->rank, short_text(f->what, 120),
                                       !f->has_t ? "no clock" : (f->exact ? "" : "at or after ") + clock(f->t)));
      break;
    }
  }
  check_launcher_claim(root);
  if (!ordered) {
    note("a peer had already failed before this death: the order does not prove it is the root cause");
  } else if (root.has_t) {
    // Say how much the order rests on: a different host's clock, whole-second stamps.
    for (const Fail* f : all_fails()) {
      if (f->role != Role::kEcho || f->rank == root.rank || !f->has_t) continue;
      const double gap = f->t - (root.t + root.res);
      if (gap < kSkewS && (f->host.empty() || root.host.empty() || f->host != root.host)) {
        note(fmt::format("the first echo (rank {}, {}) is only {:.3f} s after the root and the two were logged by "
                         "{}: the order relies on their clocks agreeing to within that; the kinds agree with it (a "
                         "{} causes peers' errors, not the reverse)",
                         f->rank, f->ref, std::max(0.0, gap),
                         f->host.empty() || root.host.empty() ? "hosts not named in the logs" : "different hosts",
                         root.cause));
      }
      break;
    }
  }
  const std::string when = root.has_t ? fmt::format(" at {}", clock(root.t, root.res)) : "";
  r_.summary = fmt::format("{} ({}): {}{} {}{}", r_.category, r_.cause, who(root.rank), root.rank < 0 ? ":" : "",
                           short_text(root.what, 140), when);
  if (r_.stuck_collective && !waiting_.empty()) {
    r_.summary += fmt::format("; {} then failed in {}", reason::ranks_phrase_counted(waiting_), stuck_name());
  }
}

std::optional<Fail> LogAnalyzer::anon_root_owner(const Fail& root) const {
  const LogEvent* re = root.ev;
  if (root.rank >= 0 || !re || root.role != Role::kRoot) return std::nullopt;
  if (re->kind != LogKind::kCudaOom && re->kind != LogKind::kCudaError) return std::nullopt;
  if (!single_node_ || re->pid < 0 || re->nccl_dev < 0 || pid_rank_.count(re->pid)) return std::nullopt;
  for (const LogEvent* e : anon_.evs) {
    if (e->pid >= 0 && e->pid != re->pid) return std::nullopt;  // more than one process
  }
  const int r = re->nccl_dev;
  if (!valid_rank(r) || !rs_[r].seen() || !rs_[r].fails.empty()) return std::nullopt;
  for (const auto& s : rs_) {
    if (s.rank != r && s.seen()) return std::nullopt;  // more than one rank
  }
  if (!rs_[r].pids.empty() && !rs_[r].pids.count(re->pid)) return std::nullopt;
  const LogEvent* tb = nullptr;
  for (const LogEvent* e : rs_[r].evs) {
    if (e->kind != LogKind::kTraceback) continue;
    const bool after = e->file == re->file ? e->line > re->line : (e->has_t && re->has_t && e->t >= re->t);
    if (after) {
      tb = e;
      break;
    }
  }
  if (!tb) return std::nullopt;
  Fail f = root;
  f.rank = r;
  f.category = "rank_exit";
  f.what = fmt::format("{} (NCCL's device {}; rank {}'s traceback follows at {}: the process exited)", root.what, r,
                       r, ref(*tb));
  return f;
}

// torchrun names a "Root Cause" by whole-second timestamps: when it disagrees with the
// order of the ranks' own lines, say so with both references.
void LogAnalyzer::check_launcher_claim(const Fail& root) {
  for (const auto& l : c_.launch_failures) {
    if (!l.root_claim) continue;
    if (l.rank == root.rank) {
      add_evidence(ref(l.file, l.line), fmt::format("torchrun's summary names rank {} as the root cause too", l.rank));
      return;
    }
    std::string why;
    if (valid_rank(l.rank)) {
      const Fail* ff = rs_[l.rank].first_fail();
      if (ff && ff->role == Role::kEcho) {
        why = fmt::format("; rank {}'s own first error is an echo ({}: {})", l.rank, ff->ref, short_text(ff->what, 100));
      }
    }
    add_evidence(ref(l.file, l.line),
                 fmt::format("torchrun's summary names rank {} as \"Root Cause (first observed failure)\"{}, but "
                             "rank {} failed first{}{}",
                             l.rank, l.has_t ? " at " + clock(l.t).substr(0, 8) + " (whole seconds)" : "",
                             root.rank, root.has_t ? " at " + clock(root.t, root.res) : "", why));
    note(fmt::format("torchrun's \"Root Cause\" (rank {}) is not the first failure: torchrun orders failures by "
                     "whole-second timestamps of when it noticed them (a SIGKILLed rank writes no error file), so "
                     "an echo can be named first",
                     l.rank));
    return;
  }
}

// The first dead-peer echo (a closed or reset connection, NCCL's "remote process
// exited") that only a death explains. A closed connection proves that *some* peer went
// away; when another rank had already failed on its own before it (a Gloo rank that
// times out closes all its connections, then exits), that rank closed it, and it says
// nothing of a silent rank, which may be frozen, not dead. Which peers time out and
// which see the closed connection is a race of a few ms between their deadlines, so the
// answer must not depend on it: null then.
const Fail* LogAnalyzer::dead_peer_echo() const {
  const Fail* dead_peer = nullptr;
  for (const Fail* f : all_fails()) {
    if (f->role == Role::kEcho && f->ev &&
        (f->ev->kind == LogKind::kCommClosed || f->ev->kind == LogKind::kNcclRemoteError ||
         (f->ev->kind == LogKind::kCommException && f->ev->peer_closed))) {
      dead_peer = f;
      break;
    }
  }
  if (!dead_peer) return nullptr;
  for (const Fail* f : all_fails()) {
    if (f == dead_peer) break;
    if (f->rank != dead_peer->rank && f->role != Role::kInfo && f->role != Role::kTeardown) return nullptr;
  }
  // The rank that times out closes its connections the moment its deadline passes, but
  // logs its timeout only once the exception has reached the program: that line can
  // come after the echo it caused (24 ms seen under load). A death brings no peer's
  // collective timeout with it: the peers in the same collective see the closed
  // connection, and any timeout comes a whole collective timeout later.
  if (dead_peer->has_t) {
    for (const Fail* f : all_fails()) {
      if (f->rank == dead_peer->rank || !f->ev || !f->has_t) continue;
      const bool timeout = f->ev->kind == LogKind::kGlooTimeout || f->ev->kind == LogKind::kWatchdogTimeout;
      if (timeout && f->t >= dead_peer->t && f->t <= dead_peer->t + kSkewS) return nullptr;
    }
  }
  return dead_peer;
}

bool LogAnalyzer::try_vanished() {
  const Fail* dead_peer = dead_peer_echo();
  if (!dead_peer) return false;
  std::vector<int> gone;
  for (const auto& s : rs_) {
    if (!s.seen() || !s.fails.empty() || s.clean_end || s.left_loop) continue;
    if (s.log->has_last_t && dead_peer->has_t && s.log->last_t > dead_peer->t + dead_peer->res) continue;
    gone.push_back(s.rank);
  }
  if (gone.empty()) return false;
  const RankState& s = rs_[gone.front()];
  r_.category = "rank_exit";
  r_.cause = has_oom_evidence(s) ? "oom" : "killed";
  r_.missing_ranks = gone;
  r_.confidence = gone.size() == 1 ? "medium" : "low";
  r_.phase = phase_of_rank(s);
  Fail f;
  f.rank = s.rank;
  f.has_t = s.log->has_last_t;
  f.t = s.log->last_t;
  f.ref = ref(s.log->last_file, s.log->last_line);
  f.what = fmt::format("its log stops{} without an error or exit line; {} then reported a peer's connection closed "
                       "({}): the process died",
                       f.has_t ? " at " + clock(f.t) : "", fmt::format("rank {}", dead_peer->rank), dead_peer->ref);
  set_first(f);
  add_evidence(f.ref, fmt::format("rank {}'s last line{}", s.rank, f.has_t ? " at " + clock(f.t) : ""));
  add_evidence(dead_peer->ref, fmt::format("rank {}: {}", dead_peer->rank, short_text(dead_peer->what)));
  note(fmt::format("how {} died is not in these logs (no exit status, no kernel line): SIGKILL/OOM kill, a "
                   "node failure or an eviction look the same from its peers; check dmesg and the pod's events",
                   reason::ranks_phrase_counted(gone)));
  r_.summary = fmt::format("rank_exit ({}): {} stopped logging and its peers then lost their connections to it",
                           r_.cause, reason::ranks_phrase_counted(gone));
  return true;
}

}  // namespace hanglab::plainlog
