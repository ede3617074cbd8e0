// Plain-log reasoning: liveness (slow vs dead), the rank rows, echoes, notes and the four
// answers (see log_analyzer.hpp).
#include "triage/reason/log_analyzer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "util.hpp"

namespace hanglab::plainlog {

void LogAnalyzer::assign_liveness() {
  const std::set<int> missing(r_.missing_ranks.begin(), r_.missing_ranks.end());
  for (auto& s : rs_) {
    const Fail* f = s.first_fail();
    std::string l;
    if (slow_.count(s.rank)) {
      l = "slow";
    } else if (s.clean_end) {
      l = "completed";
    } else if (f && (f->role == Role::kRoot || (f->role == Role::kExit && (f->signal || f->code != 0)))) {
      l = "dead";
    } else if (missing.count(s.rank) && r_.category == "rank_exit") {
      l = "dead";
    } else if (alive_.count(s.rank) || s.left_loop) {
      l = "hung";
    } else if (f && (f->role == Role::kEcho || f->role == Role::kTeardown)) {
      l = "hung";
    } else if (missing.count(s.rank) && (r_.category == "straggler" || r_.category == "data_loading")) {
      l = "hung";
    } else if (!s.seen()) {
      l = "unknown";
    } else if (missing.count(s.rank)) {
      l = "unknown";
    } else {
      l = r_.category == "none" ? "completed" : "hung";
    }
    s.liveness = l;
  }
}

namespace {

// A cause that is a setting every rank of the job shares, so that its failure stops every rank in
// init whichever process's lines show it (scope all), with the mechanism:
//   rendezvous/address_in_use: the store's port (MASTER_PORT, the agent's rendezvous endpoint) is the
//     job's; the store cannot listen, so no rank can rendezvous (torch/csrc/distributed/c10d/socket.cpp
//     "The server socket has failed to listen on any local network address");
//   rendezvous/duplicate_gpu: NCCL's init (init.cc initTransportsRank, "Duplicate GPU detected") fails on
//     the ranks that share a device, and every other rank of the communicator then waits in init's next
//     bootstrap all-gather for them: the communicator never forms (usually no rank called set_device,
//     so all share device 0);
//   rank_exit/topology_error: every process of a node builds its topology from the same source (the
//     node's /sys, NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE), so a topology that NCCL cannot read fails
//     every rank's ncclTopoGetSystem alike.
bool shared_setting_cause(const std::string& category, const std::string& cause) {
  return (category == "rendezvous" && (cause == "address_in_use" || cause == "duplicate_gpu")) ||
         (category == "rank_exit" && cause == "topology_error");
}

}  // namespace

// A usage error of the program's own arguments where every worker got the same ones: a launcher starts each
// worker with one command line (torchrun, mpirun, srun, horovodrun), so what one rejects, all reject. Proven when
// the rejected argument is the one the launcher itself adds to every worker (the reader's "launcher_argument":
// torch's --local-rank) or when two ranks report it.
bool LogAnalyzer::same_arguments_rejected() {
  if (r_.category != "rank_exit" || r_.cause != "usage_error") return false;
  std::set<int> ranks;
  for (const Fail* f : all_fails()) {
    if (!f->ev || f->ev->kind != LogKind::kUsageError) continue;
    if (f->ev->word == "launcher_argument") return true;
    if (f->rank >= 0) ranks.insert(f->rank);
  }
  return ranks.size() >= 2;
}

void LogAnalyzer::finish() {
  if (r_.last_good_step == 0) r_.last_good_step = last_good_step();
  if (r_.category == "collective_mismatch" && r_.divergence_step) {
    r_.last_good_step = std::min(r_.last_good_step, *r_.divergence_step - 1);
  }
  if (!forced_scope_.empty()) {
    r_.scope = forced_scope_;
  } else if (r_.category == "none") {
    r_.scope = "none";
  } else if (shared_setting_cause(r_.category, r_.cause) || same_arguments_rejected()) {
    r_.scope = "all";
  } else if (world_stated_ && world_ == 1) {
    r_.scope = "all";  // a job of one process (NCCL's "nranks 1", world_size=1): what failed is all of it
  } else if (!r_.missing_ranks.empty()) {
    // "all" needs the world: a lone rank in a paste is one of an unknown number.
    r_.scope = static_cast<int>(r_.missing_ranks.size()) >= world_ && (world_stated_ || world_ >= 2) ? "all" : "subset";
  } else if (r_.category == "collective_mismatch" || r_.category == "straggler" || r_.cause == "rendezvous_timeout" ||
             (r_.category == "rank_exit" && !use_anon_)) {
    // A rendezvous that timed out is short of ranks: those that never arrived are a subset of the
    // world (the ones that arrived waited for them), whether or not the logs name them.
    r_.scope = "subset";  // some ranks took another path / a process died, even where the logs cannot say which
  } else if (r_.category == "unknown" && r_.cause != "all_ranks_waiting" && !every_rank_reported_ &&
             (!partial_wait_ || !others_elsewhere())) {
    // Nothing proves that every rank, or which ones, are affected: an excerpt of some
    // ranks' timeouts says nothing of the ranks whose logs were not pasted.
    r_.scope = "unknown";
  } else if (partial_join_ || partial_wait_) {
    r_.scope = "subset";  // fewer ranks arrived (store count) or report the collective than the world has
  } else if (use_anon_ && (!r_.first_failure || r_.first_failure->rank < 0)) {
    r_.scope = anon_scope();
  } else {
    r_.scope = "all";
  }
  // Per-rank rows.
  for (const auto& s : rs_) {
    RankTimeline t;
    t.rank = s.rank;
    t.liveness = s.liveness;
    t.host = s.host;
    if (s.log) {
      t.last_step = std::max(0, s.log->last_step);
      if (!s.log->recent.empty() && s.log->recent.back().has_t) t.last_step_t = s.log->recent.back().t;
      t.last_event_t = s.log->has_last_t ? s.log->last_t : 0;
      t.last_progress_t = t.last_step_t;
      t.last_line = ref(s.log->last_file, s.log->last_line);
      t.last_phase = phase_of_rank(s);
      // Mean step interval over the recent step lines (the logs carry no compute time).
      const auto& rec = s.log->recent;
      std::vector<double> per;
      for (size_t i = 1; i < rec.size(); ++i) {
        if (rec[i].has_t && rec[i - 1].has_t && rec[i].step > rec[i - 1].step)
          per.push_back((rec[i].t - rec[i - 1].t) * 1000.0 / (rec[i].step - rec[i - 1].step));
      }
      if (!per.empty()) t.mean_step_ms = median(per);
      std::vector<double> dur;
      for (const auto& st : rec) {
        if (st.dur_ms >= 0) dur.push_back(st.dur_ms);
      }
      if (!dur.empty()) t.busy_step_ms = median(dur);
    }
    for (const CollReport* rep : reports_of(s.rank)) {
      if (rep->pg == main_pg_ || t.last_coll_seq == 0) {
        t.last_coll_seq = rep->seq;
        t.last_coll_op = rep->op;
        t.last_coll_numel = rep->numel_in;
        t.last_coll_edge = "begin";
      }
    }
    if (s.exit_signal) {
      t.signal = s.exit_signal;
    } else if (s.exit_code) {
      t.exit_code = s.exit_code;
    } else if (s.clean_end) {
      t.exit_code = 0;
    }
    if (const Fail* f = s.first_fail()) {
      t.failure = short_text(f->what, 120);
      t.failure_ref = f->ref;
    }
    r_.per_rank.push_back(std::move(t));
  }
  // Echoes: every other rank's first failure, and the launcher's teardown, in time order.
  std::vector<const Fail*> echoes;
  const int root_rank = r_.first_failure ? r_.first_failure->rank : -1;
  for (const auto& s : rs_) {
    if (s.rank == root_rank && r_.category != "collective_mismatch") continue;  // its own aftermath
    const Fail* f = s.first_fail();
    if (f && f->role == Role::kInfo) f = nullptr;
    if (f && fmt::format("{}/{}", f->rank, f->ref) == first_key_) {
      f = nullptr;  // the first failure itself: its rank's next one, if any
      for (const auto& g : s.fails) {
        if (&g != s.first_fail() && g.role != Role::kInfo && g.role != Role::kExit) {
          f = &g;
          break;
        }
      }
    }
    if (f) echoes.push_back(f);
  }
  std::stable_sort(echoes.begin(), echoes.end(), [](const Fail* a, const Fail* b) {
    if (a->has_t && b->has_t && a->t != b->t) return a->t < b->t;
    if (a->has_t != b->has_t) return a->has_t;
    return a->rank < b->rank;
  });
  size_t teardown = 0;
  for (const LogEvent* e : host_events_) {
    if (e->kind == LogKind::kLauncherSignal) ++teardown;
  }
  for (const auto& s : rs_) {
    for (const auto& f : s.fails) teardown += f.role == Role::kTeardown && f.ev && f.ev->kind == LogKind::kLauncherSignal;
  }
  for (const Fail* f : echoes) {
    if (r_.echoes.size() >= kMaxEchoes) break;
    r_.echoes.push_back({f->rank, f->has_t ? f->t : 0, short_text(f->what, 140), f->ref, !f->has_t || f->exact});
  }
  if (echoes.size() > kMaxEchoes) {
    note(fmt::format("{} more ranks failed after the first failure; the first {} echoes are listed",
                     echoes.size() - kMaxEchoes, kMaxEchoes));
  }
  if (teardown) {
    note(fmt::format("the launcher sent {} closing signal(s) (SIGTERM, SIGKILL) during teardown: echoes, not causes",
                     teardown));
  }
  input_notes();
  build_answers();
  r_.next_steps = playbook_next_steps(r_);
}

// The scope of a failure in lines no rank can be named for (a paste from some of the
// processes), after the playbook's question "all ranks stuck (links, rendezvous, a shared
// dependency) or a subset missing (a rank exited, took another path, stalls)":
//   a death, a mismatch, a straggler is one process of the job: subset;
//   a wrong interface or the job's time limit fails every rank alike: all;
//   otherwise it depends on what the paste shows of the other processes (writers told
//   apart by NCCL's "host:pid" prefix). When it shows the process(es) where the root
//   fired AND other processes that only echo it (a closed connection, an abort), the
//   failure spread: a process's own resource (its GPU memory, its /dev/shm segment) is a
//   subset, a broken link took the job down with it: all. When only one process is shown,
//   or every process shown hit the root itself, the paste cannot tell: unknown.
std::string LogAnalyzer::anon_scope() const {
  if (r_.category == "rank_exit" || r_.category == "collective_mismatch" || r_.category == "straggler")
    return "subset";
  if (r_.cause == "wrong_ifname" || r_.cause == "time_limit" || r_.cause == "preemption" || r_.cause == "store_timeout" ||
      r_.cause == "stale_rendezvous")
    return "all";
  // A launcher that could not start the job's processes (its daemons or proxies, a task, an exec: mpirun's
  // "unable to reliably start one or more daemons", Hydra's "Launch proxy failed." / execvp error, srun's task
  // launch) aborts the whole launch: no rank of the job runs.
  if (r_.category == "rendezvous" && r_.cause == "launch_error") return "all";

  std::set<std::string> root_w, echo_w;
  for (const auto& f : anon_.fails) {
    if (!f.ev || f.ev->pid < 0) continue;
    const std::string w = fmt::format("{}:{}", f.ev->host, f.ev->pid);
    if (f.role == Role::kRoot && !f.aftermath) {
      root_w.insert(w);
    } else if (f.role == Role::kEcho) {
      echo_w.insert(w);
    }
  }
  for (const LogEvent* e : anon_.evs) {  // a process whose local peer left: reached by the failure
    if (e->kind == LogKind::kLocalPeerClosed && e->pid >= 0) echo_w.insert(fmt::format("{}:{}", e->host, e->pid));
  }
  bool echo_only = false;  // a process that only echoed the root
  for (const auto& w : echo_w) echo_only |= !root_w.count(w);
  if (root_w.empty() || !echo_only) return "unknown";
  if (r_.category == "network") return "all";
  if (r_.category == "resource_limit" || r_.category == "data_loading") return "subset";
  return "unknown";
}

void LogAnalyzer::input_notes() {
  std::vector<std::string> trunc, clockless, noyear, local;
  for (const auto& f : c_.files) {
    if (f.local_rank_lines > 0) local.push_back(f.name);
    if (f.ends_mid_line) trunc.push_back(f.name);
    if (!f.any_clock && f.lines > 0) clockless.push_back(f.name);
    if (f.no_year_clock) noyear.push_back(f.name);
  }
  const auto list = [](const std::vector<std::string>& v) {
    std::vector<std::string> head(v.begin(), v.begin() + static_cast<long>(std::min<size_t>(v.size(), 4)));
    return fmt::format("{}{}", fmt::join(head, ", "), v.size() > 4 ? fmt::format(" and {} more", v.size() - 4) : "");
  };
  if (!trunc.empty()) {
    note(fmt::format("{} end(s) mid-line (truncated or still being written): fields cut off at the end are not "
                     "used",
                     list(trunc)));
  }
  if (!clockless.empty()) {
    note(fmt::format("{} carr{} no timestamps: their lines are ordered by position only, and against other files "
                     "by what they say",
                     list(clockless), clockless.size() == 1 ? "ies" : "y"));
  }
  if (!noyear.empty()) {
    note(fmt::format("{} use{} stamps without a year (glog/syslog): dated {}{}", list(noyear),
                     noyear.size() == 1 ? "s" : "", c_.year, c_.year_known ? " from the other stamps" : " (assumed)"));
  }
  if (!local.empty()) {
    note(fmt::format("in {}, ranks were read from torchrun's \"[defaultN]:\" prefixes, which are local ranks: "
                     "right for a single-node job, not across nodes",
                     list(local)));
  }
  note(fmt::format("read {} file(s), {} lines, {} bytes", c_.files.size(), c_.lines, c_.bytes));
}

void LogAnalyzer::build_answers() {
  auto& a = r_.answers;
  std::vector<int> loggers;
  for (const auto& s : rs_) {
    if (s.log && s.log->n_steps > 0) loggers.push_back(s.rank);
  }
  if (r_.phase == "init") {
    a.push_back(fmt::format("Init or training: init — no rank logged a training step or a completed process-group "
                            "setup; {}",
                            r_.summary));
  } else if (r_.phase == "unknown") {
    // The answer is the headline's phase: collectives without a step line show a job past init,
    // not that it was training (start-up runs collectives too).
    a.push_back(training_started_
                    ? std::string("Init or training: past init; phase unknown — ranks reported collectives, but no "
                                  "step line shows training")
                    : std::string("Init or training: unknown — the logs show neither steps nor collectives nor init "
                                  "errors"));
  } else if (r_.phase != "training") {
    a.push_back(fmt::format("Init or training: past init — the failure hit {}", r_.phase));
  } else {
    a.push_back(fmt::format("Init or training: training — {}",
                            loggers.empty() ? std::string("ranks reported collectives (no step lines in the logs)")
                                            : fmt::format("{} logged steps (up to step {})", reason::ranks_phrase_counted(loggers),
                                                          max_step())));
  }
  if (r_.scope == "none") {
    a.push_back("All or subset: none — no rank is missing or stuck");
  } else if (r_.scope == "unknown") {
    a.push_back("All or subset: unknown — these lines show one process, or only processes that hit the failure "
                "themselves: whether the others are stuck too is not in them");
  } else if (r_.scope == "all") {
    a.push_back(fmt::format("All or subset: all — no single rank is missing{}",
                            r_.stuck_collective ? fmt::format("; {} report {}", reason::ranks_phrase_counted(waiting_), stuck_name())
                                                : ""));
  } else {
    std::vector<int> others;  // the waiting ranks that are not themselves the missing ones
    for (int rank : waiting_) {
      if (std::find(r_.missing_ranks.begin(), r_.missing_ranks.end(), rank) == r_.missing_ranks.end())
        others.push_back(rank);
    }
    // A subset whose ranks the logs cannot name (a death no line attributes, ranks short of the world).
    const std::string who = r_.missing_ranks.empty()
                                ? fmt::format("some ranks, not named in these logs, are affected ({})", r_.cause)
                                : fmt::format("{} missing ({})", reason::ranks_phrase_counted(r_.missing_ranks), r_.cause);
    a.push_back(fmt::format("All or subset: subset — {}{}", who,
                            r_.stuck_collective && !others.empty()
                                ? fmt::format("; {} waited in {}", reason::ranks_phrase_counted(others), stuck_name())
                                : ""));
  }
  if (loggers.empty()) {
    a.push_back(fmt::format("Last completed step: unknown — no rank logged step lines; phase {}", r_.phase));
  } else {
    std::string what = r_.phase == "checkpoint" ? "the failure hit a checkpoint save"
                       : r_.phase == "eval"     ? "the failure hit evaluation/validation"
                       : r_.phase == "data"     ? "the failure hit data loading"
                       : r_.phase == "init"     ? "the job never finished init"
                                                : fmt::format("step {} was a plain training step{}", r_.last_good_step + 1,
                                                              r_.last_good_step == 0 ? " (the first collective)" : "");
    a.push_back(fmt::format("Last completed step: {} (lowest last step over {} that log steps); {}",
                            r_.last_good_step, loggers.size() == rs_.size() ? "all ranks" : reason::ranks_phrase_counted(loggers),
                            what));
  }
  std::map<std::string, std::vector<int>> by;
  for (const auto& t : r_.per_rank) by[t.liveness].push_back(t.rank);
  std::vector<std::string> parts;
  for (const char* l : {"dead", "slow", "hung", "unknown", "completed"}) {
    if (by.count(l)) parts.push_back(fmt::format("{} {}", l, reason::ranks_phrase_counted(by[l])));
  }
  std::string verdict;
  if (r_.category == "none") {
    verdict = "neither";
  } else if (!slow_.empty()) {
    verdict = "slow";
  } else if (r_.category == "rank_exit" || by.count("dead")) {
    verdict = "dead";
  } else if (r_.category == "collective_mismatch") {
    verdict = "dead (deadlock by mismatch)";
  } else if (r_.cause == "unresponsive") {
    verdict = "hung (alive but not progressing)";
  } else {
    verdict = "unknown";
  }
  if (parts.empty()) parts.push_back("no rank's state is in these logs");
  a.push_back(fmt::format("Slow or dead: {} — {}", verdict, fmt::join(parts, "; ")));
}

int LogAnalyzer::max_step() const {
  int m = 0;
  for (const auto& s : rs_) {
    if (s.log) m = std::max(m, s.log->max_step);
  }
  return m;
}

}  // namespace hanglab::plainlog
