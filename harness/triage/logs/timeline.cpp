// The plain-log timeline: the world, which line belongs to which rank, per-rank failures,
// the collectives ranks report being stuck in (see timeline.hpp).
#include "triage/logs/timeline.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "util.hpp"

namespace hanglab::plainlog {

std::string LogTimeline::at(bool has_t, double t) const {
  if (!has_t) return "(no clock)";
  return fmt::format("{:+.3f} s", t - t0_);
}

std::string LogTimeline::clock(double t) {
  const long long day = static_cast<long long>(std::floor(t / 86400.0));
  double s = t - static_cast<double>(day) * 86400.0;
  const int h = static_cast<int>(s / 3600);
  s -= h * 3600;
  const int m = static_cast<int>(s / 60);
  s -= m * 60;
  return fmt::format("{:02d}:{:02d}:{:06.3f}", h, m, s);
}

void LogTimeline::add_evidence(const std::string& where, const std::string& text) {
  for (const auto& e : r_.evidence) {
    if (e.ref == where && e.text == text) return;
  }
  r_.evidence.push_back({where, text});
}

void LogTimeline::note(const std::string& s) {
  if (std::find(r_.notes.begin(), r_.notes.end(), s) == r_.notes.end()) r_.notes.push_back(s);
}

// a ended before b started, taking the stamps' resolution into account; same-file
// clock-less lines by position; otherwise not provable.
// An inherited clock is a lower bound only ("at or after"): it can show that b came
// late, never that a came early.
bool LogTimeline::before(const Fail& a, const Fail& b, double slack) {
  if (a.has_t && a.exact && b.has_t) return a.t + a.res + slack <= b.t;
  if (a.file == b.file) return a.line < b.line;
  return false;
}

// A world the logs do not state, bounded from below by what ran: the processes NCCL's line prefixes
// name and the group sizes that gathers and reduce-scatters imply. Raises world_ above the ranks seen.
void LogTimeline::world_at_least(int max_rank) {
  // NCCL's prefix names each process it runs in and the device it drives ("host:pid:tid [dev]",
  // src/debug.cc): distinct processes on distinct devices are that many ranks at least (a restart's
  // new pids reuse the devices; one process driving several devices is one).
  std::set<std::pair<std::string, long long>> procs;
  std::set<std::pair<std::string, int>> devs;
  for (const auto& p : c_.nccl_procs) {
    procs.emplace(p.host, p.pid);
    devs.emplace(p.host, p.dev);
  }
  int n = static_cast<int>(std::min(procs.size(), devs.size()));
  // An all-gather's output is its input once per member of the group, a reduce-scatter's input its
  // output once per member (WorkNCCL's NumelIn/NumelOut, ProcessGroupNCCL.cpp): the group, and so the
  // world, has at least that many ranks.
  const LogEvent* sized = nullptr;
  for (const auto& e : c_.events) {
    if (e.kind != LogKind::kWatchdogTimeout || e.numel_in <= 0 || e.numel_out <= 0) continue;
    const bool gather = e.op.find("ALLGATHER") != std::string::npos;
    const bool scatter = e.op.find("REDUCE_SCATTER") != std::string::npos;
    const long long big = gather ? e.numel_out : e.numel_in, small = gather ? e.numel_in : e.numel_out;
    if ((!gather && !scatter) || big % small != 0 || big / small > kMaxWorld) continue;
    if (static_cast<int>(big / small) > n) {
      n = static_cast<int>(big / small);
      sized = &e;
    }
  }
  if (sized && n > max_rank + 1 && max_rank >= 0) {
    world_ = n;
    add_evidence(ref(*sized), fmt::format("world size {} at least: {} (NumelIn {}, NumelOut {}) ran over {} ranks", n,
                                          sized->op, sized->numel_in, sized->numel_out, n));
    note(fmt::format("world size not stated in the logs: at least {}, the group {} ran over; rerun with "
                     "--world-size N if the job had more",
                     n, sized->op));
  } else if (n > max_rank + 1 && max_rank >= 0) {
    world_ = n;
    add_evidence(ref(c_.nccl_procs.front().file, c_.nccl_procs.front().line),
                 fmt::format("world size {} at least: NCCL's line prefixes name {} processes on {} devices", n,
                             procs.size(), devs.size()));
    note(fmt::format("world size not stated in the logs: at least {}, the processes NCCL's prefixes name "
                     "(\"host:pid:tid [dev]\"); rerun with --world-size N if the job had more",
                     n));
  }
}

void LogTimeline::setup_world() {
  int strong_max = -1;
  for (const auto& [rank, g] : c_.ranks) {
    if (g.host_tag_lines < g.lines) strong_max = std::max(strong_max, rank);
  }
  int max_rank = strong_max;
  decide_srun_agents();
  for (const auto& e : c_.events) {
    if (e.rank_src == RankSource::kHostTag || (srun_agents_ && e.kind == LogKind::kSrunTask)) continue;
    max_rank = std::max(max_rank, e.other_rank >= 0 && e.kind != LogKind::kDumpSignal &&
                                          e.kind != LogKind::kSummaryEntry && e.kind != LogKind::kPgInit &&
                                          e.kind != LogKind::kInitDone
                                      ? std::max(e.rank, e.other_rank)
                                      : e.rank);
  }
  for (const auto& l : c_.launch_failures) max_rank = std::max(max_rank, l.rank);
  // Horovod's stall check, c10d's monitored_barrier and the JAX/TSL coordination service (a barrier's or
  // the heartbeat check's tasks, logs/coordination.cpp) name ranks of the job (the parser bounds them: kMaxWorld).
  for (const auto& e : c_.events) {
    if ((e.kind != LogKind::kDesyncMissing && e.kind != LogKind::kRendezvousError) ||
        (e.word != "stall" && e.word != "monitored_barrier" && e.word != "coordination"))
      continue;
    for (int r : e.ranks) max_rank = std::max(max_rank, r);
  }
  // srun's "tasks 8-15: Terminated" names every task of its list (the parser bounds them too); the
  // tasks are ranks only where srun started the ranks themselves, not torch's agents.
  for (const auto& e : c_.events)
    if (e.kind == LogKind::kSrunTask && !srun_agents_)
      for (int r : e.ranks) max_rank = std::max(max_rank, r);
  // One node (at most one host named anywhere): torchrun's "local_rank: N" is rank N.
  {
    std::set<std::string> hosts;
    for (const auto& [rank, g] : c_.ranks)
      if (!g.host.empty()) hosts.insert(g.host);
    for (const auto& e : c_.events)
      if (!e.host.empty() && e.kind != LogKind::kOomKill) hosts.insert(e.host);
    for (const auto& l : c_.launch_failures)
      if (!l.host.empty()) hosts.insert(l.host);
    // torchrun's agent said the job spans nodes (agent_layout.cpp): one host's paste of it.
    single_node_ = hosts.size() <= 1 && !c_.agent.multi_node;
  }
  for (const auto& e : c_.events)
    if (e.kind == LogKind::kLauncherExit)
      if (const int g = global_of_local(e.local_rank); g >= 0) max_rank = std::max(max_rank, g);
  int stated = 0;
  const WorldHint* hint = nullptr;
  std::set<int> values;
  for (const auto& h : c_.world_hints) {
    values.insert(h.world);
    if (h.world > stated) {
      stated = h.world;
      hint = &h;
    }
  }
  if (opts_.world_size) {
    world_ = *opts_.world_size;
    world_stated_ = true;
    add_evidence("--world-size", fmt::format("world size {} given on the command line", world_));
    if (stated && stated != world_) {
      note(fmt::format("the logs state world size {} ({}) but --world-size says {}; using {}", stated,
                       ref(hint->file, hint->line), world_, world_));
    }
  } else if (stated) {
    world_ = stated;
    world_stated_ = true;
    add_evidence(ref(hint->file, hint->line), fmt::format("world size {}: {}", stated, hint->text));
    if (values.size() > 1) {
      note(fmt::format("the logs state several world sizes ({}); the largest, {}, is used (smaller ones are "
                       "usually sub-communicators or an earlier attempt)",
                       fmt::join(values, ", "), stated));
    }
  }
  // Ranks that only "[host:N]" names: kept when they fit the world, else taken for pids.
  const int fit = world_stated_ ? world_ : 2 * (max_rank + 1) + 8;
  for (const auto& [rank, g] : c_.ranks) {
    if (g.host_tag_lines < g.lines) continue;
    if (rank < fit) {
      max_rank = std::max(max_rank, rank);
    } else {
      dropped_.insert(rank);
    }
  }
  if (!dropped_.empty()) {
    note(fmt::format("\"[host:N]\" tags with N = {} do not fit the world: taken as process ids (Open MPI's crash "
                     "handler prints \"[host:pid]\"), not ranks",
                     fmt::join(std::vector<int>(dropped_.begin(), dropped_.end()), ", ")));
  }
  // A launcher that kills every process it started when one fails lists them all (DeepSpeed's
  // "Killing subprocess PID"): on one node, with no rank above the list, that is the world.
  if (!world_stated_ && single_node_) {
    std::set<long long> killed;
    const LogEvent* first = nullptr;
    for (const auto& e : c_.events) {
      if (e.kind == LogKind::kLauncherSignal && e.cause == "launcher_kill_all" && e.pid >= 0) {
        killed.insert(e.pid);
        if (!first) first = &e;
      }
    }
    if (first && static_cast<int>(killed.size()) >= max_rank + 1) {
      world_ = static_cast<int>(killed.size());
      world_stated_ = true;
      add_evidence(ref(*first), fmt::format("world size {}: the launcher killed its {} subprocess{} on one node",
                                            world_, world_, world_ == 1 ? "" : "es"));
    }
  }
  if (!world_stated_) world_at_least(max_rank);
  if (!world_stated_ && world_ <= max_rank) {
    world_ = max_rank + 1;
    if (world_ > 0) {
      note(fmt::format("world size not stated in the logs (world_size=, WORLD_SIZE, nranks): taken as the highest "
                       "rank seen + 1 = {}. Ranks above {} would be invisible: if the job had more, rerun with "
                       "--world-size N to find them missing",
                       world_, max_rank));
    }
  }
  if (max_rank + 1 > world_) {
    note(fmt::format("rank {} appears in the logs although the world size is {}: the world is widened to {}",
                     max_rank, world_, max_rank + 1));
    world_ = max_rank + 1;
  }
  r_.world_size = world_;
  rs_.resize(static_cast<size_t>(std::max(0, world_)));
  for (int i = 0; i < world_; ++i) {
    rs_[i].rank = i;
    auto it = c_.ranks.find(i);
    if (it != c_.ranks.end()) {
      rs_[i].log = &it->second;
      rs_[i].host = it->second.host;
    }
  }
  // Report times are relative to the earliest clock in the logs.
  for (const auto& [rank, g] : c_.ranks) {
    if (g.has_first_t && (!have_t0_ || g.first_t < t0_)) {
      t0_ = g.first_t;
      have_t0_ = true;
    }
  }
  for (const auto& e : c_.events) {
    if (e.has_t && (!have_t0_ || e.t < t0_)) {
      t0_ = e.t;
      have_t0_ = true;
    }
  }
  r_.t0 = t0_;
}

// Ranks without a single line are evidence only when the logs are the job's: several
// ranks logged and the silent ones are a minority. One rank's log (or an excerpt of two
// ranks out of eight) says nothing about the ranks whose logs were not pasted.
bool LogTimeline::silence_proves(size_t n_silent) const {
  size_t seen = 0;
  for (const auto& s : rs_) seen += s.seen() ? 1 : 0;
  return n_silent > 0 && seen >= 2 && n_silent * 2 < static_cast<size_t>(std::max(world_, 1));
}

// The rank's own statement that its data ran out ("data exhausted", a data service with
// no tasks left for it).
const LogEvent* LogTimeline::exhausted_data(const RankState& s) {
  for (const LogEvent* e : s.evs) {
    if (e->kind == LogKind::kDataExhausted) return e;
  }
  return nullptr;
}

// Ranks that do not report the stuck collective are provably elsewhere: some of them
// logged other lines, or the silent ones are few among the ranks that logged.
bool LogTimeline::others_elsewhere() const {
  size_t other_seen = 0, silent = 0;
  for (const auto& s : rs_) {
    if (std::binary_search(waiting_.begin(), waiting_.end(), s.rank)) continue;
    (s.seen() ? other_seen : silent) += 1;
  }
  // Unseen ranks are "few among the world" only against a world the logs state: one taken as the
  // highest rank seen + 1 is the seen ranks' own bound, and an excerpt of ranks 1 and 2 (srun's
  // "1:", "2:" labels) says nothing of rank 0 or of ranks above them.
  return other_seen > 0 || (world_stated_ && silence_proves(silent));
}

// "rank 3", or what a line without a rank is: a process the logs do not name.
std::string LogTimeline::who(int rank) {
  return rank >= 0 ? fmt::format("rank {}", rank) : std::string("a process (rank not in the logs)");
}

void LogTimeline::attach() {
  for (const auto& [pid, rank] : c_.pid_rank) pid_rank_.emplace(pid, rank);
  for (const auto& l : c_.launch_failures) {
    if (l.pid >= 0 && l.rank >= 0) pid_rank_.emplace(l.pid, l.rank);
  }
  for (const auto& e : c_.events) {
    if ((e.kind == LogKind::kMpiExit) && e.pid > 0 && e.other_rank >= 0) pid_rank_.emplace(e.pid, e.other_rank);
  }
  // On one node, torchrun's summary "local_rank: 0 (pid: 48)" names the process of rank 0: the
  // lines that process printed under its pid (NCCL's "host:48:48 [0] NCCL WARN Cuda failure ...")
  // are rank 0's, though they name no rank. Across nodes a pid names nothing without its host.
  // Across nodes, where torchrun's agent said where its workers sit, its local rank names the global one.
  for (const auto& e : c_.events)
    if (e.kind == LogKind::kLauncherExit && e.pid > 0)
      if (const int g = global_of_local(e.local_rank); g >= 0 && valid_rank(g)) pid_rank_.emplace(e.pid, g);
  bool any_seen = false;
  for (const auto& s : rs_) any_seen |= s.seen();
  for (const auto& e : c_.events) {
    int rank = dropped(e.rank) ? -1 : e.rank;
    switch (e.kind) {
      case LogKind::kMpiExit:
        rank = e.other_rank;
        break;
      case LogKind::kSrunTask:
        rank = srun_agents_ ? -1 : e.other_rank;
        break;
      case LogKind::kLauncherExit:
      case LogKind::kLauncherSignal:
      case LogKind::kSignalReceived:
      case LogKind::kOomKill:
      case LogKind::kDataLoaderKilled:
      case LogKind::kCrash:  // the kernel's "python3[1220]: segfault at", glog's "*** SIGSEGV ... received by PID"
        if (e.pid >= 0) {
          auto it = pid_rank_.find(e.pid);
          if (it != pid_rank_.end()) rank = it->second;
          // A DataLoader worker's pid is not the rank's: it stays on the line's rank.
        }
        if (e.kind == LogKind::kLauncherExit && rank < 0) rank = global_of_local(e.local_rank);
        break;
      default:
        // A line under a process's pid (NCCL's "host:pid:tid" prefix) whose pid torchrun's
        // summary named, on one node (above).
        if (rank < 0 && e.pid > 0 && e.rank < 0 && single_node_)
          if (auto it = pid_rank_.find(e.pid); it != pid_rank_.end()) rank = it->second;
        break;
    }
    if (e.kind == LogKind::kDataLoaderKilled && e.rank >= 0 && !dropped(e.rank)) rank = e.rank;
    // srun's "tasks 0,2-3: Terminated" names several ranks: the line is each one's.
    if (e.kind == LogKind::kSrunTask && !srun_agents_)
      for (int r : e.ranks)
        if (r != rank && valid_rank(r)) {
          rs_[r].evs.push_back(&e);
          if (!e.host.empty() && rs_[r].host.empty()) rs_[r].host = e.host;
        }
    if (valid_rank(rank)) {
      rs_[rank].evs.push_back(&e);
      if (!e.host.empty() && rs_[rank].host.empty() && e.kind != LogKind::kOomKill) rs_[rank].host = e.host;
    } else if (!dropped(e.rank) || !any_seen) {
      // A "[host:pid]" line (Open MPI's crash handler) is a writer's only when no rank
      // of the world logged: next to healthy ranks it is the launcher's own.
      anon_.evs.push_back(&e);
    }
    if (valid_rank(rank)) {
    } else if (e.kind == LogKind::kOomKill || e.kind == LogKind::kStorageError || e.kind == LogKind::kIbError ||
               e.kind == LogKind::kShmError || e.kind == LogKind::kWrongIfname || e.kind == LogKind::kChildFailed ||
               e.kind == LogKind::kLauncherSignal || e.kind == LogKind::kNcclError ||
               e.kind == LogKind::kSocketError) {
      host_events_.push_back(&e);
    }
    if (!e.pg.empty() && valid_rank(e.rank) && !e.pg_default) pg_members_[e.pg].insert(e.rank);
    if (e.kind == LogKind::kPgInit && e.other_rank >= 0 && !e.pg.empty() && !e.pg_default)
      pg_members_[e.pg].insert(e.other_rank);
  }
  for (const auto& l : c_.launch_failures) {
    if (valid_rank(l.rank) && !l.host.empty() && rs_[l.rank].host.empty()) rs_[l.rank].host = l.host;
  }
  for (const auto& [pid, rank] : pid_rank_) {
    if (valid_rank(rank)) rs_[rank].pids.insert(pid);
  }
}

void LogTimeline::mark_outside_teardown(const std::vector<RankState*>& states) {
  bool have = false;
  double notice_t = 0;
  for (const auto& e : c_.events) {
    if (e.kind != LogKind::kLauncherSignal || !e.has_t || (e.signal != 15 && e.signal != 9)) continue;
    if (!have || e.t < notice_t) notice_t = e.t;
    have = true;
  }
  if (!have) return;
  // Anything failing before the notice (a root, an echo, a non-zero exit, a line with no
  // clock to order it by) means the launcher may be reacting to it: nothing is changed.
  for (const RankState* sp : states) {
    for (const auto& f : sp->fails) {
      if (f.role == Role::kInfo || f.role == Role::kTeardown) continue;
      if (!f.has_t || f.t < notice_t) return;
    }
  }
  for (RankState* sp : states) {
    for (auto& f : sp->fails) {
      // Only echoes: a launcher's notice of an exit may follow its closing signals although the
      // exit caused them (DeepSpeed's sigkill_handler prints "Killing subprocess" first), and a
      // death by the closing signal of a pid it names is the teardown already (derive()).
      if (f.role != Role::kEcho) continue;
      f.role = Role::kTeardown;
      if (f.ev) teardown_evs_.insert(f.ev);
      f.what += " (after the launcher began to stop the job)";
    }
  }
}

void LogTimeline::derive() {
  std::set<long long> sigtermed;  // pids the launcher sent SIGTERM to
  for (const auto& e : c_.events) {
    if (e.kind == LogKind::kLauncherSignal && e.pid >= 0) sigtermed.insert(e.pid);
  }
  // torchrun's agent, once a worker failed, sends SIGTERM to the others at once and SIGKILL to those
  // still alive 30 s later (elastic/multiprocessing/api.py _close(death_sig=SIGTERM, timeout=30)):
  // in its summary (one agent: one file and host), a SIGTERM death at or after another entry's own
  // failure, or a SIGKILL clearly after it (beyond the whole-second stamps), is that teardown.
  std::map<std::pair<uint32_t, std::string>, double> first_own;  // (file, host) -> earliest own failure
  for (const auto& l : c_.launch_failures) {
    if (!l.has_t || l.signal == 15 || l.signal == 9) continue;
    const auto key = std::make_pair(l.file, l.host);
    if (auto it = first_own.find(key); it == first_own.end() || l.t < it->second) first_own[key] = l.t;
  }
  const auto agent_teardown = [&](const LaunchFailure& l) {
    if (!l.has_t || (l.signal != 15 && l.signal != 9)) return false;
    const auto it = first_own.find(std::make_pair(l.file, l.host));
    return it != first_own.end() && (l.signal == 15 ? l.t >= it->second : l.t >= it->second + 2.0);
  };
  // Launcher summary entries become exits of their rank.
  for (const auto& l : c_.launch_failures) {
    if (!valid_rank(l.rank)) continue;
    Fail f;
    f.rank = l.rank;
    f.role = Role::kExit;
    f.has_t = l.has_t;
    f.t = l.t;
    f.res = 1.0;  // torchrun prints whole seconds
    f.file = l.file;
    f.line = l.line;
    f.ref = ref(l.file, l.line);
    f.host = l.host;
    f.launcher_root = l.root_claim;
    exit_meaning(l.signal, l.code, f);
    // torchrun's workers are Python interpreters: status 1 is an uncaught exception's (the
    // interpreter's exit status for one; its traceback went to the worker's stderr).
    if (!l.signal && l.code == 1) f.cause = "exception";
    // A death by signal of a pid the launcher had sent SIGTERM ("Sending process N closing
    // signal SIGTERM", then SIGKILL when it would not stop: a frozen rank) is its teardown,
    // as for the launcher's own exit lines below.
    if (l.pid >= 0 && sigtermed.count(l.pid) && (f.signal == 15 || f.signal == 9)) f.role = Role::kTeardown;
    if (agent_teardown(l)) f.role = Role::kTeardown;
    f.what += " (torchrun failure summary" + (l.traceback.empty() ? std::string(")") : ": " + l.traceback + ")");
    auto& s = rs_[l.rank];
    if (!s.exit_code && !s.exit_signal) {
      if (f.signal) {
        s.exit_signal = f.signal;
      } else if (f.code != kNoCode) {
        s.exit_code = f.code;
      }
      s.exit_ref = f.ref;
    }
    s.fails.push_back(std::move(f));
  }
  anon_.rank = -1;
  std::vector<RankState*> states;
  for (auto& s : rs_) states.push_back(&s);
  states.push_back(&anon_);
  for (RankState* sp : states) {
    RankState& s = *sp;
    // The unattributed lines may be several processes' (NCCL's "host:pid:tid" prefix):
    // an echo makes what follows an aftermath only in its own process.
    const bool anon = sp == &anon_;
    const auto writer = [anon](const LogEvent* ev) { return anon && ev ? ev->pid : -1LL; };
    std::set<long long> echoed_by;
    for (const LogEvent* e : s.evs) {
      const bool echoed = echoed_by.count(writer(e)) > 0;
      switch (e->kind) {
        case LogKind::kDone:
          s.clean_end = true;
          s.end_step = e->step;
          s.end_total = e->total_steps;
          s.end_ref = ref(*e);
          s.end_t = e->t;
          s.end_has_t = e->has_t;
          continue;
        case LogKind::kShutdown:
          // The process exiting normally (patterns.hpp kProcessExit): its end, unless a failure on it
          // says otherwise (the reasoning reads failures first; megatron's crash after this warning).
          if (e->word == "process_exit" && !s.clean_end) {
            s.clean_end = s.exit_warning = true;
            s.end_ref = ref(*e);
            s.end_t = e->t;
            s.end_has_t = e->has_t;
          }
          break;
        case LogKind::kLeftLoop:
          if (!s.left_loop) {
            s.left_loop = true;
            s.end_ref = ref(*e);
            s.end_t = e->t;
            s.end_has_t = e->has_t;
          }
          continue;
        default:
          break;
      }
      Fail f = make_fail(*e, s.rank);
      describe(*e, f);
      if (f.role == Role::kInfo) continue;
      f.launcher_root = e->first_failed;
      if (f.role == Role::kExit) {
        // A death by signal after the launcher's SIGTERM to the same pid is the teardown.
        if (e->pid >= 0 && sigtermed.count(e->pid) && (f.signal == 15 || f.signal == 9)) f.role = Role::kTeardown;
        if (!s.exit_code && !s.exit_signal) {
          if (f.signal) {
            s.exit_signal = f.signal;
          } else if (f.code != kNoCode) {
            s.exit_code = f.code;
          }
          s.exit_ref = f.ref;
        }
      }
      // A rank that already failed while waiting: what follows on it is the echo's
      // aftermath (SIGABRT from the watchdog, exit 1, "terminate called").
      if (echoed && (f.role == Role::kRoot || f.role == Role::kExit)) f.role = Role::kEcho;
      if (f.role == Role::kEcho) echoed_by.insert(writer(e));
      if ((e->kind == LogKind::kGlooTimeout || e->kind == LogKind::kCommClosed || e->kind == LogKind::kStoreTimeout ||
           e->kind == LogKind::kRendezvousError || e->kind == LogKind::kException ||
           e->kind == LogKind::kDataError || e->kind == LogKind::kUsageError || e->kind == LogKind::kCudaError ||
           e->kind == LogKind::kCudaOom) &&
          e->code != kNoCode && !s.exit_code && !s.exit_signal) {
        s.exit_code = e->code;  // the hanglab workloads exit right after their ERROR line
        s.exit_ref = ref(*e);
      }
      s.fails.push_back(std::move(f));
    }
    std::stable_sort(s.fails.begin(), s.fails.end(), [](const Fail& a, const Fail& b) {
      if (a.has_t && b.has_t && a.t != b.t) return a.t < b.t;
      if (a.has_t != b.has_t) return a.has_t;
      return std::tie(a.file, a.line) < std::tie(b.file, b.line);
    });
    // Re-apply "after an echo" in time order (summary entries were appended first); a
    // launcher's exit notice of a rank that failed waiting is that failure's aftermath
    // whatever its (whole-second) time says.
    std::set<long long> seen_echo;
    std::set<long long> any_echo;
    for (const auto& f : s.fails)
      if (f.role == Role::kEcho) any_echo.insert(writer(f.ev));
    for (auto& f : s.fails) {
      const long long w = writer(f.ev);
      if (seen_echo.count(w) && (f.role == Role::kRoot || f.role == Role::kExit) && f.strength < 3)
        f.role = Role::kEcho;
      if (any_echo.count(w) && f.role == Role::kExit) f.aftermath = true;
      if (f.role == Role::kEcho) seen_echo.insert(w);
    }
  }
  explain_plain_exits();
  mark_outside_teardown(states);
  note_phase_facts(states);
  decide_anon();
}

// Whether the job had begun to train (steps, progress, collectives that ran) and whether a line
// that only init writes was seen.
void LogTimeline::note_phase_facts(const std::vector<RankState*>& states) {
  for (const RankState* sp : states) {
    const RankState& s = *sp;
    if (s.log && s.log->n_steps > 0) training_started_ = true;
    // DETAIL mode's "Running collective" past the first: the job was issuing collectives.
    if (s.log && s.log->started.seq >= 1) training_started_ = true;
    // Not an init-done line ("Init COMPLETE", "All distributed processes registered"): it ends the
    // set-up of one communicator or group, and the next collective may still be set-up's own (DDP's
    // parameter broadcast) or an inference job's; only what ran after it says training began.
    for (const LogEvent* e : s.evs) {
      if (e->kind == LogKind::kInitDone) init_done_ = true;
      // (The watchdog's repeat of a timeout, "watchdog thread terminated with exception: ... Watchdog
      // caught ...", is the same report where the paste lacks the first line: with a sequence number
      // past the first collectives; torch 1.x's repeat has none, and a BROADCAST then may be DDP's
      // set-up broadcast.)
      if (e->kind == LogKind::kWatchdogTimeout || (e->kind == LogKind::kWatchdogRepeat && e->seq >= 2) ||
          (e->seq >= 0 && (e->kind == LogKind::kGlooTimeout || e->kind == LogKind::kCommClosed)) ||
          e->kind == LogKind::kDone || e->kind == LogKind::kPgInit || e->kind == LogKind::kCollMismatch)
        training_started_ = true;
    }
  }
  if (c_.unattributed_steps > 0 || c_.progress_lines > 0) training_started_ = true;
  // "last completed NCCL work: 136" (a dump signal, a watchdog's status): collectives ran.
  for (const auto& e : c_.events) {
    if ((e.kind == LogKind::kDumpSignal || e.kind == LogKind::kWorkStatus) && e.last_completed >= 1)
      training_started_ = true;
    // The heartbeat monitor's "workMetaList_.size()=103": that many collectives in flight.
    // One can be the job's first (the init barrier); several mean it was issuing them.
    if (e.kind == LogKind::kHeartbeatMonitor && e.pending >= 2) training_started_ = true;
  }
  for (const auto& e : c_.events) {
    if (init_event(e)) {
      init_seen_ = true;
      break;
    }
  }
}

void LogTimeline::find_collectives() {
  std::map<std::pair<int, std::string>, size_t> have;  // (rank, PG) -> its report
  for (const auto& s : rs_) {
    for (const LogEvent* e : s.evs) {
      if (teardown_evs_.count(e)) continue;
      bool coll = ((e->kind == LogKind::kWatchdogTimeout || e->kind == LogKind::kWatchdogRepeat) && e->seq >= 0) ||
                  (e->seq >= 0 && !e->op.empty() &&
                   (e->kind == LogKind::kGlooTimeout || e->kind == LogKind::kCommClosed ||
                    e->kind == LogKind::kCommException || e->kind == LogKind::kException)) ||
                  (e->kind == LogKind::kWorkStatus && e->seq >= 0);
      // Gloo's own errors carry no sequence number, nor did ProcessGroupNCCL's WorkNCCL before torch
      // 1.10 ("WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=60000)"): one unnamed collective (seq 0).
      const bool seqless = !coll && e->seq < 0 &&
                           (e->kind == LogKind::kGlooTimeout || e->kind == LogKind::kCommClosed ||
                            e->kind == LogKind::kWatchdogTimeout ||
                            (e->kind == LogKind::kCommException &&
                             (e->text.find("Timed out waiting") != std::string::npos ||
                              e->text.find("Connection closed") != std::string::npos ||
                              e->text.find("Connection reset") != std::string::npos)));
      // A dump signal's "last enqueued NCCL work: N, last completed: N-1": inside collective N.
      const bool inside = !coll && !seqless && e->kind == LogKind::kDumpSignal && e->last_enqueued >= 0 &&
                          e->last_completed >= 0 && e->last_enqueued > e->last_completed;
      if (!coll && !seqless && !inside) continue;
      if (seqless && s.fails.empty()) continue;
      const std::string pg = pg_key(*e);
      if (auto it = have.find({s.rank, pg}); it != have.end()) {
        // A later line may complete what a truncated one left out.
        CollReport& rep = reports_[it->second];
        if (rep.seq == e->seq && rep.op.empty() && !e->op.empty()) {
          rep.op = e->op;
          rep.numel_in = e->numel_in;
          rep.numel_out = e->numel_out;
          rep.fields_complete = !e->partial;
        }
        continue;
      }
      have.emplace(std::make_pair(s.rank, pg), reports_.size());
      CollReport rep;
      rep.rank = s.rank;
      rep.pg = pg;
      rep.seq = seqless ? 0 : inside ? e->last_enqueued : e->seq;
      rep.op = e->op;
      rep.numel_in = e->numel_in;
      rep.numel_out = e->numel_out;
      rep.fields_complete = !e->partial && !e->op.empty();
      rep.ev = e;
      rep.step = e->step;
      reports_.push_back(rep);
      reporters_.insert(s.rank);
    }
  }
  for (size_t i = 0; i < reports_.size(); ++i) report_index_.emplace(reports_[i].rank, i);
  if (reports_.empty()) return;
  // The main PG: the default one when reported, else the one most ranks report.
  std::map<std::string, int> count;
  for (const auto& rep : reports_) ++count[rep.pg];
  main_pg_ = count.count("default") ? "default" : std::max_element(count.begin(), count.end(), [](auto& a, auto& b) {
                                                    return a.second < b.second;
                                                  })->first;
  std::map<long long, int> by_seq;
  for (const auto& rep : reports_) {
    if (rep.pg == main_pg_) ++by_seq[rep.seq];
  }
  stuck_seq_ = std::max_element(by_seq.begin(), by_seq.end(), [](auto& a, auto& b) {
                 return a.second < b.second;
               })->first;
  for (const auto& rep : reports_) {
    if (rep.pg == main_pg_ && rep.seq == stuck_seq_) waiting_.push_back(rep.rank);
  }
  std::sort(waiting_.begin(), waiting_.end());
  // Missing by absence: members of a reporting PG that reported no collective failure
  // anywhere (a rank stuck in another PG's collective is waiting, not missing) and did
  // not leave the loop.
  std::set<int> candidates;
  for (const auto& [pg, n] : count) {
    if (pg == "default") {
      for (int i = 0; i < world_; ++i) candidates.insert(i);
    } else if (auto it = pg_members_.find(pg); it != pg_members_.end()) {
      candidates.insert(it->second.begin(), it->second.end());
    }
  }
  for (int rank : candidates) {
    if (!valid_rank(rank) || reporters_.count(rank)) continue;
    absent_.push_back(rank);
  }
}

// "ALLREDUCE SeqNum 1423", "BARRIER SeqNum 7 of PG 1", "a collective (no SeqNum in the logs)"
std::string LogTimeline::stuck_name() const {
  if (stuck_seq_ < 0) return "no collective";
  const std::string op = r_.stuck_collective ? r_.stuck_collective->op : "";
  if (stuck_seq_ == 0) return op.empty() ? "a collective (no SeqNum in the logs)" : op + " (no SeqNum in the logs)";
  return fmt::format("{} SeqNum {}{}", op.empty() ? "the collective" : op, stuck_seq_,
                     main_pg_ == "default" ? "" : " of PG " + main_pg_);
}

// A rank's reports (one per PG); indexed, since 16k ranks x 16k reports would not do.
std::vector<const CollReport*> LogTimeline::reports_of(int rank) const {
  std::vector<const CollReport*> v;
  auto [b, e] = report_index_.equal_range(rank);
  for (auto it = b; it != e; ++it) v.push_back(&reports_[it->second]);
  return v;
}

const CollReport* LogTimeline::report_of(int rank, const std::string& pg) const {
  auto [b, e] = report_index_.equal_range(rank);
  for (auto it = b; it != e; ++it) {
    if (reports_[it->second].pg == pg) return &reports_[it->second];
  }
  return nullptr;
}

void LogTimeline::set_stuck() {
  if (stuck_seq_ < 0) return;
  StuckCollective sc;
  sc.seq = stuck_seq_;
  const CollReport* first = report_of(waiting_.front(), main_pg_);
  sc.op = first ? first->op : "";
  for (int rank : waiting_) {
    const CollReport* rep = report_of(rank, main_pg_);
    if (rep && !rep->op.empty()) {
      sc.op = rep->op;
      break;
    }
  }
  sc.waiting_ranks = waiting_;
  sc.absent_ranks = absent_;
  r_.stuck_collective = sc;
}

}  // namespace hanglab::plainlog
