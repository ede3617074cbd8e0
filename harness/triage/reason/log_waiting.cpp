// Plain-log reasoning: everybody waits (late arrival, stalls), no failure at all, a job that
// slowed down, unknown (see log_analyzer.hpp).
#include "triage/reason/log_analyzer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "util.hpp"

namespace hanglab::plainlog {

namespace {

// The evaluation's counterpart of set_checkpoint_stall. Programs that evaluate during training
// commonly do the evaluation's work, or its metric, on one process (mmengine's BaseMetric.evaluate
// computes on rank 0 and broadcasts the result; a script's `if rank == 0: validate()`), while the
// others go straight to the next collective and wait there. When that work outlasts the collective
// timeout, only the waiting ranks report, and the evaluating one logs nothing: the ranks that
// report wait in a collective, the rest of the world reports nothing, and the last phase line no
// step followed is an evaluation's start. Had every rank been in a collective (a skipped or
// mismatched one in the eval path), every rank's watchdog would fire; had the silent rank died,
// its death (or its launcher's report of it) is what the other rules read first. The evaluating
// rank is named only when the marker is its own.
const BusyWork kEvaluating{
    "eval", "an evaluation", "", "evaluating", "evaluating",
    "A rank that died silently during the evaluation would read the same here; its exit status or a stack dump of "
    "every rank tells them apart"};

// The data-preparation counterpart. A program that prepares its data in one process (ColBERT's
// indexer clusters the sampled embeddings with faiss k-means on one rank, a script's `if rank == 0:`
// tokenization or index build) sends the others straight to the next collective (often a barrier: a
// one-element all-reduce), where they wait. The preparing library's own progress line (kDataPrep)
// with no step after it, the ranks that report timing out, and the rest of the world silent: a live
// rank busy preparing data for longer than the collective timeout. A rank that died silently during
// the preparation would read the same; its exit status tells.
const BusyWork kPreparingData{
    "data", "a data preparation", " (its library's own progress line)", "preparing data", "preparing",
    "Raise the timeout or move the preparation before the process group's first collective"};

}  // namespace

// Every rank reported the stuck collective, but some only found their peers' sockets
// closed, after those peers had already timed out waiting for them: they arrived late.
bool LogAnalyzer::try_late_arrival() {
  const CollReport* first_timeout = nullptr;
  for (const auto& rep : reports_) {
    if (rep.pg != main_pg_ || rep.seq != stuck_seq_ || !rep.ev || !rep.ev->has_t) continue;
    if (rep.ev->kind != LogKind::kGlooTimeout && rep.ev->kind != LogKind::kWatchdogTimeout) continue;
    if (!first_timeout || rep.ev->t < first_timeout->ev->t) first_timeout = &rep;
  }
  if (!first_timeout) return false;
  double last_timeout_t = first_timeout->ev->t;
  for (const auto& rep : reports_) {
    if (rep.pg == main_pg_ && rep.seq == stuck_seq_ && rep.ev && rep.ev->has_t &&
        (rep.ev->kind == LogKind::kGlooTimeout || rep.ev->kind == LogKind::kWatchdogTimeout))
      last_timeout_t = std::max(last_timeout_t, rep.ev->t);
  }
  std::vector<int> late;
  const CollReport* late_rep = nullptr;
  for (const auto& rep : reports_) {
    if (rep.pg != main_pg_ || rep.seq != stuck_seq_ || !rep.ev || !rep.ev->has_t) continue;
    const bool dead_peer = rep.ev->kind == LogKind::kCommClosed || rep.ev->kind == LogKind::kNcclRemoteError ||
                           rep.ev->kind == LogKind::kCommException;
    // A peer that left right after its own timeout closes sockets: its waiting peers see
    // "closed" within moments. Late is well after that.
    if (dead_peer && rep.ev->t > last_timeout_t + 1.0) {
      late.push_back(rep.rank);
      if (!late_rep) late_rep = &rep;
    }
  }
  if (late.empty() || late.size() * 2 >= waiting_.size()) return false;
  std::sort(late.begin(), late.end());
  slow_.insert(late.begin(), late.end());
  const RankState& a = rs_[late.front()];
  r_.category = "straggler";
  r_.cause = "slow_rank";
  r_.missing_ranks = late;
  r_.confidence = "medium";
  r_.phase = phase_of_rank(a);
  Fail f = make_fail(*late_rep->ev, a.rank);
  f.what = fmt::format("reached {} only after rank {} had timed out waiting for it ({}): it found its peers' "
                       "connections closed",
                       stuck_name(), first_timeout->rank, clock(first_timeout->ev->t));
  set_first(f);
  add_evidence(ref(*first_timeout->ev), fmt::format("rank {} timed out in SeqNum {} at {}", first_timeout->rank,
                                                    stuck_seq_, clock(first_timeout->ev->t)));
  add_evidence(ref(*late_rep->ev), fmt::format("rank {} got there at {}: {}", a.rank, clock(late_rep->ev->t),
                                               short_text(late_rep->ev->text)));
  if (a.log && !a.log->recent.empty()) {
    const auto& st = a.log->recent.back();
    add_evidence(ref(st.file, st.line), fmt::format("rank {}'s last step before it: {}", a.rank, st.step));
  }
  r_.summary = fmt::format("straggler (slow_rank): {} arrived in {} after its peers had timed out waiting for it",
                           reason::ranks_phrase_counted(late), stuck_name());
  // What the logs show is the late rank's error coming late, not when it entered the collective:
  // a rank whose own traffic trickled through a lossy or congested link (TCP retransmission backs
  // off 1, 2, 4 s) keeps restarting its per-operation timeout and also finds its peers gone only
  // after they timed out. Its steps before the collective do not separate the two either (each
  // step line is printed after the step's allreduce, which synchronizes all ranks).
  note(fmt::format("whether {} reached {} late (a straggler: compute, storage, a throttled CPU) or was inside it "
                   "with its traffic delayed (a lossy or slow link between it and its peers) is undecidable from "
                   "these logs: a per-rank stack or the hosts' link counters (ip -s link, nstat TcpRetransSegs) "
                   "tell them apart",
                   reason::ranks_phrase(late), stuck_name()));
  return true;
}

bool LogAnalyzer::try_all_waiting() {
  if (waiting_.empty()) return false;
  if (try_late_arrival()) return true;
  const auto fails = all_fails();
  const Fail* first = nullptr;
  for (const Fail* f : fails) {
    if (f->role == Role::kEcho || f->role == Role::kRoot) {
      first = f;
      break;
    }
  }
  // Link errors that no death explains make it the network.
  const LogEvent* link = nullptr;
  for (const auto& e : c_.events) {
    if (e.kind == LogKind::kIbError || e.kind == LogKind::kSocketError || e.kind == LogKind::kNcclSystemError) {
      link = &e;
      break;
    }
  }
  r_.missing_ranks.clear();
  const std::optional<Marker> mark = stuck_marker();
  // Without a marker, the phase is training only where a line shows training: a step or progress
  // line, or a traceback frame inside the training loop. A collective's timeout alone does not:
  // collectives run in evaluation, in a save and at the end of a run as well, and a sequence
  // number counts all of them.
  r_.phase = mark ? marker_phase(mark->kind) : training_shown() ? "training" : "unknown";
  const bool partial = waiting_.size() < 2 || static_cast<int>(waiting_.size()) < world_;
  if (!link && mark && mark->kind == LogKind::kCheckpointBegin && partial) return set_checkpoint_stall(*mark, first);
  if (!link && mark && mark->kind == LogKind::kEvalBegin && partial && evaluating_alone(*mark))
    return set_busy_alone_straggler(*mark, first, kEvaluating);
  if (!link && mark && mark->kind == LogKind::kDataPrep && partial && preparing_alone(*mark))
    return set_busy_alone_straggler(*mark, first, kPreparingData);
  if (link) {
    // The link event's own meaning where the reader refined it (NCCL's socket refusal unwound through
    // bootstrap.cc is its rendezvous, rendezvous/bootstrap_error): a cause never goes out under another
    // category than its own.
    const bool own = !link->category.empty() && !link->cause.empty();
    r_.category = own ? link->category : "network";
    r_.cause = own || !link->cause.empty() ? link->cause
               : link->kind == LogKind::kIbError ? "ib_error"
                                                 : "comm_error";
    if (own && !link->phase.empty()) r_.phase = std::string(link->phase);
    r_.confidence = "medium";
    Fail f = make_fail(*link, link->rank);
    describe(*link, f);
    set_first(f);
    add_evidence(ref(*link), fmt::format("{}{}", link->rank >= 0 ? fmt::format("rank {}: ", link->rank) : "",
                                         short_text(link->text)));
  } else {
    r_.category = "unknown";
    r_.cause = "all_ranks_waiting";
    r_.confidence = "low";
    if (first) set_first_unblamed(*first);
    if (partial) {
      // Only some ranks of the world report the collective: the others are elsewhere (or
      // not in these logs): not "all ranks waiting", and not provably one of them.
      r_.cause = "unknown";
      partial_wait_ = true;
      note(fmt::format("only {} of the {} ranks report {}; the others' logs do not show it (absent, elsewhere, "
                       "or not in these logs): which rank holds the job is undecidable here",
                       reason::ranks_phrase_counted(waiting_), world_, stuck_name()));
    }
    note("every rank reports the same collective and none is missing: a shared dependency (network, the store, "
         "storage) or a hang inside the collective itself; the logs do not say which");
  }
  if (first) add_evidence(first->ref, fmt::format("rank {}: {}", first->rank, short_text(first->what)));
  r_.summary = partial_wait_ ? fmt::format("unknown: {} report{} a failure in {}; the rest of the world of {} does "
                                           "not, and these logs do not say why",
                                           reason::ranks_phrase_counted(waiting_), waiting_.size() == 1 ? "s" : "",
                                           stuck_name(), world_)
                             : fmt::format("{} ({}): all {} ranks report a failure in {}; no rank is missing",
                                           r_.category, r_.cause, waiting_.size(), stuck_name());
  return true;
}

// Horovod's stall check ("allreduce.avg_loss [missing ranks: 1]") names the ranks that
// never submitted a tensor their peers wait on, c10d's monitored_barrier ("[Rank 0]: Rank 1
// failed to pass monitoredBarrier in 2000 ms") the ranks that never reached the barrier: they
// are missing, proven by the backend; why (dead, slow, another code path) only other lines
// could say, and none did.
bool LogAnalyzer::try_stall_check() {
  const LogEvent* last = nullptr;
  for (const auto& e : c_.events) {
    if (e.kind == LogKind::kDesyncMissing &&
        (e.word == "stall" || e.word == "monitored_barrier" || e.word == "coordination") && !e.ranks.empty())
      last = &e;
  }
  if (!last) return false;
  std::vector<int> missing;
  for (int r : last->ranks)
    if (valid_rank(r) && std::find(missing.begin(), missing.end(), r) == missing.end()) missing.push_back(r);
  // Horovod 0.20 on lists one missing rank per line after "Missing ranks:" (parse.cpp
  // parse_hvd_missing_entry): the report is the run of such entries that ends with the last.
  if (last->report_entry)
    for (const LogEvent* e = last; e != c_.events.data() && (e - 1)->kind == LogKind::kDesyncMissing &&
                                   (e - 1)->report_entry && (e - 1)->file == e->file &&
                                   (e - 1)->line + 1 == e->line;) {
      --e;
      for (int r : e->ranks)
        if (valid_rank(r) && std::find(missing.begin(), missing.end(), r) == missing.end()) missing.push_back(r);
    }
  // With wait_all_ranks, rank 0 logs one "Rank N failed to pass" line per absent rank before
  // its summary: every such verdict counts (a stall warning, by contrast, is replaced by the next).
  // So does each of the JAX/TSL coordination service's verdicts (a heartbeat timeout per stale task).
  if (last->word == "monitored_barrier" || last->word == "coordination")
    for (const auto& e : c_.events)
      if (e.kind == LogKind::kDesyncMissing && e.word == last->word)
        for (int r : e.ranks)
          if (valid_rank(r) && std::find(missing.begin(), missing.end(), r) == missing.end()) missing.push_back(r);
  if (missing.empty()) return false;
  std::sort(missing.begin(), missing.end());
  r_.category = "unknown";
  r_.cause = "unknown";
  r_.confidence = "low";
  r_.missing_ranks = missing;
  r_.phase = default_phase();
  if (last->word == "coordination") return coordination_missing(*last);
  if (last->word == "monitored_barrier") {
    add_evidence(ref(*last), fmt::format("monitored_barrier: {}", short_text(last->text)));
    note(fmt::format("rank 0's monitored_barrier reports {} as never reaching the barrier; whether it died, is "
                     "slow or took another code path is not in these logs",
                     reason::ranks_phrase_counted(missing)));
    r_.summary = fmt::format("unknown: {} missing from a monitored_barrier; the cause is not in these logs",
                             reason::ranks_phrase_counted(missing));
    return true;
  }
  add_evidence(ref(*last), fmt::format("Horovod's stall check: {}", short_text(last->text)));
  if (startup_broadcasts_stalled()) {
    r_.phase = "init";
    note("every stalled tensor is a HorovodBroadcast_ of a variable: the broadcast of the initial state from the "
         "root rank (broadcast_global_variables, its hook or Keras callback) that runs once before training");
  }
  note(fmt::format("Horovod reports {} as never submitting the collective its peers wait on; whether it died, "
                   "is slow or took another code path is not in these logs",
                   reason::ranks_phrase_counted(missing)));
  r_.summary = fmt::format("unknown: {} missing from a collective (Horovod's stall check); the cause is not in "
                           "these logs",
                           reason::ranks_phrase_counted(missing));
  return true;
}

// Horovod's TensorFlow broadcast names its op "HorovodBroadcast_" + the tensor's name with every
// character outside [A-Za-z0-9_] replaced by '_' (horovod/tensorflow/mpi_ops.py@2626dc8 broadcast and
// _normalize_name): a variable "dense/kernel:0" stalls as "HorovodBroadcast_dense_kernel_0". Such
// broadcasts are what broadcast_variables / broadcast_global_variables (functions.py:66, run by
// BroadcastGlobalVariablesHook after the session starts and by Keras's callback at the start of
// training) send once, to give every rank the root's initial weights and optimizer slots. The stall
// check of Horovod <= 0.19 names each stalled op on its own line, "<op> [missing ranks: 1]" (before
// 0.13.6 "<op> [ready ranks: 0, 2]", all of them on one line)
// (common/operations.cc, later stall_inspector.cc). When every op the check names is such a
// broadcast and no step was logged, the job is still in its start-up state sync.
bool LogAnalyzer::startup_broadcasts_stalled() const {
  if (steps_seen()) return false;
  int ops = 0;
  for (const auto& e : c_.events) {
    if (e.kind != LogKind::kDesyncMissing || e.word != "stall") continue;
    const std::string_view t = e.text;
    if (e.report_entry) {  // an entry of the 0.20+ report: "1: [HorovodBroadcast_a_0, HorovodBroadcast_b_0]"
      const size_t open = t.find('[');
      if (open == std::string_view::npos) return false;
      for (size_t b = open + 1; b < t.size();) {
        while (b < t.size() && t[b] == ' ') ++b;
        if (t.compare(b, 3, "...") == 0 || t[b] == ']') break;
        if (t.compare(b, 17, "HorovodBroadcast_") != 0) return false;
        const size_t comma = t.find(',', b);
        b = comma == std::string_view::npos ? t.size() : comma + 1;
      }
      ++ops;
      continue;
    }
    // Before 0.13.6 the list named the ready ranks instead, every op on one line ("<op> [ready ranks:
    // 5, 6, 3], <op> [...]"): the parser keeps its first op that is no such broadcast, else its first.
    // (Only that form, of the one-line ones, names its op: e.op.)
    if (!e.op.empty()) {
      if (e.op.size() <= 17 || e.op.substr(0, 17) != "HorovodBroadcast_") return false;
      ++ops;
      continue;
    }
    const std::string_view mark = " [missing ranks: ";
    size_t k = t.find(mark);
    if (k == std::string_view::npos) return false;
    for (; k != std::string_view::npos; k = t.find(mark, k + 1)) {  // every op of the line
      size_t b = t.find_last_of(" :],", k - 1);
      b = b == std::string_view::npos ? 0 : b + 1;
      if (t.compare(b, 17, "HorovodBroadcast_") != 0 || k - b <= 17) return false;
    }
    ++ops;
  }
  return ops > 0;
}

// What a checkpoint stall and an evaluation straggler share: a straggler found by its phase marker
// while only some ranks wait; the marker's rank is named when its own line is the marker and it is
// not among the waiters (evaluating_alone already excludes a waiting evaluator).
void LogAnalyzer::set_marker_straggler(const Marker& mark, const Fail* first, const char* cause, const char* phase) {
  r_.category = "straggler";
  r_.cause = cause;
  r_.confidence = "low";
  r_.phase = phase;
  partial_wait_ = true;
  if (mark.rank >= 0 && !std::binary_search(waiting_.begin(), waiting_.end(), mark.rank)) {
    r_.missing_ranks = {mark.rank};
    slow_.insert(mark.rank);
  }
  if (first) set_first_unblamed(*first);
  add_evidence(mark.ref, fmt::format("{}: {}", who(mark.rank), short_text(mark.text)));
  if (first) add_evidence(first->ref, fmt::format("rank {}: {}", first->rank, short_text(first->what)));
}

// The service's heartbeat check sets a CONNECTED task whose last heartbeat is older than heartbeat_timeout_ms to
// ERROR ("Task <task> heartbeat timeout. This indicates that the remote task has failed, got preempted, or crashed
// unexpectedly", coordination_service.cc:394-398@google/tsl 6a79f3a2), and a barrier past its deadline lists the
// tasks not at it (:458-470@2e2b2c7). Those tasks are missing; which of the causes the text itself names is in
// their own logs, not in the service's (logs/coordination.cpp reads the tasks; the start-up barriers are
// rendezvous failures, read by try_init).
bool LogAnalyzer::coordination_missing(const LogEvent& last) {
  if (last.phase == "shutdown") r_.phase = "shutdown";  // the shutdown barrier: the tasks never got to shut down
  add_evidence(ref(last), fmt::format("coordination service: {}", short_text(last.text)));
  const std::string what = last.op.empty() ? std::string("no longer sending heartbeats to the coordination service")
                                           : fmt::format("never reaching the coordination service's barrier {}", last.op);
  note(fmt::format("the JAX/TSL coordination service reports {} as {}; dead, preempted or hung is not in these logs",
                   reason::ranks_phrase_counted(r_.missing_ranks), what));
  r_.summary = fmt::format("unknown: {} {}; the cause is not in these logs", reason::ranks_phrase_counted(r_.missing_ranks),
                           what);
  return true;
}

// A save that began and never reported its end, while the ranks that report wait in a
// collective and the rest of the world does not: the saving rank is still writing (one
// rank serialises the state dict or writes to slow storage) and its peers' next
// collective times out. Which rank saves is named only when its own line says so (a rank
// whose own save line is its last and that misses the collective is found earlier, by
// absence: stuck_in_checkpoint / slow_storage); checkpoint_stall is the save whose rank
// the logs do not name.
bool LogAnalyzer::set_checkpoint_stall(const Marker& mark, const Fail* first) {
  set_marker_straggler(mark, first, "checkpoint_stall", "checkpoint");
  note(fmt::format("a checkpoint save began and no line reports it finished; {} then timed out in {} while the "
                   "rest of the world did not report it: a rank still saving (longer than the collective timeout) "
                   "holds its peers",
                   reason::ranks_phrase_counted(waiting_), stuck_name()));
  r_.summary = fmt::format("straggler (checkpoint_stall): a checkpoint save was under way when {} timed out in {}; "
                           "{}",
                           reason::ranks_phrase_counted(waiting_), stuck_name(),
                           r_.missing_ranks.empty() ? std::string("the saving rank is not named in these logs")
                                                    : fmt::format("rank {} was saving", mark.rank));
  return true;
}

// A line that shows the job training: a step or progress line anywhere, or a traceback frame of
// the training loop (frames.cpp: a rank's own, or one in lines no rank can be named for).
bool LogAnalyzer::training_shown() const {
  if (steps_seen() || c_.unattributed_phase == LogKind::kTrainBegin) return true;
  // A gradient bucket's all-reduce: DDP's Reducer sums gradients in buckets of 1 MiB first
  // and 25 MiB after (kDefaultFirstBucketBytes, kDefaultBucketBytesCap: c10d/reducer.hpp:30-31@2.15.0),
  // DeepSpeed and Megatron their gradient buffers. An ALLREDUCE of 2^18 elements or more that the ranks
  // waited in is a backward pass's; start-up broadcasts the parameters (BROADCAST), and evaluation and
  // saves all-reduce metrics (a few elements) or gather state (ALLGATHER).
  for (const auto& rep : reports_)
    if (rep.seq == stuck_seq_ && rep.op == "ALLREDUCE" && rep.numel_in >= (1LL << 18)) return true;
  return std::any_of(rs_.begin(), rs_.end(), [](const RankState& s) { return s.log && s.log->phase == LogKind::kTrainBegin; });
}

// An evaluation that began and that no step line followed, while none of the ranks that
// report the wait is itself evaluating. A waiting rank's own evaluation marker (or its own
// last phase being eval) would fit uneven evaluation data or a collective skipped in eval
// as well, so it disqualifies.
bool LogAnalyzer::evaluating_alone(const Marker& mark) const {
  if (mark.rank >= 0 && std::binary_search(waiting_.begin(), waiting_.end(), mark.rank)) return false;
  return std::none_of(waiting_.begin(), waiting_.end(), [&](int w) {
    const RankState& s = rs_[w];
    return s.log && (s.log->phase == LogKind::kEvalBegin || s.log->phase == LogKind::kEvalEnd);
  });
}

// A rank busy alone in the work a marker names (an evaluation, a data preparation) holds its
// peers: set_marker_straggler's answer, with what the work is and who did it in the note and
// summary ("evaluation" / "evaluating", "data preparation" / "preparing data").
bool LogAnalyzer::set_busy_alone_straggler(const Marker& mark, const Fail* first, const BusyWork& w) {
  set_marker_straggler(mark, first, "slow_rank", w.phase);
  note(fmt::format("{} was under way{} and no step line followed it; {} then timed out in {} while the rest of the "
                   "world did not report it: a rank still {} (alone, longer than the collective timeout) holds its "
                   "peers. {}",
                   w.work, w.how_seen, reason::ranks_phrase_counted(waiting_), stuck_name(), w.doing, w.advice));
  r_.summary = fmt::format("straggler (slow_rank): {} was under way when {} timed out in {}; {}", w.work,
                           reason::ranks_phrase_counted(waiting_), stuck_name(),
                           r_.missing_ranks.empty() ? fmt::format("the {} rank is not named in these logs", w.who)
                                                    : fmt::format("rank {} was {}", mark.rank, w.doing));
  return true;
}

bool LogAnalyzer::preparing_alone(const Marker& mark) const {
  if (mark.rank >= 0 && std::binary_search(waiting_.begin(), waiting_.end(), mark.rank)) return false;
  return std::none_of(waiting_.begin(), waiting_.end(), [&](int w) {
    const RankState& s = rs_[w];
    return s.log && s.log->phase == LogKind::kDataPrep;
  });
}

// Every rank of the world ended normally, each with a clock, and the only failures no rank can be named
// for are a store or socket connection lost after the last of those ends: the launcher's side of the
// rendezvous store outliving the workers (torchrun's agents meet at an exit barrier over the store after
// their workers succeeded, api.py _exit_barrier; the agent hosting the store may leave first). Teardown,
// not a failure of the job.
bool LogAnalyzer::store_lost_after_all_ended() const {
  double last_end = 0;
  for (const auto& s : rs_) {
    if (!s.clean_end || !s.end_has_t) return false;
    last_end = std::max(last_end, s.end_t);
  }
  if (rs_.empty()) return false;
  bool any = false;
  for (const auto& f : anon_.fails) {
    if (f.role == Role::kInfo || f.role == Role::kTeardown) continue;
    if (!f.ev || !f.has_t || f.t <= last_end) return false;
    switch (f.ev->kind) {
      case LogKind::kCommClosed:
      case LogKind::kSocketError:
      case LogKind::kStoreTimeout:
      case LogKind::kStoreRefused:
        any = true;
        break;
      default:
        return false;
    }
  }
  return any;
}

bool LogAnalyzer::try_no_failure() {
  for (const auto& s : rs_) {
    for (const auto& f : s.fails) {
      if (f.role != Role::kInfo && f.role != Role::kTeardown) return false;
    }
  }
  if (use_anon_ && !store_lost_after_all_ended()) return false;
  // "no error logged" is a statement about every rank's log. A dump signal "due to a
  // collective timeout" is a peer's timeout, relayed: an error was logged, only not here.
  // Lines no rank can be named for (a paste from one process) say nothing of the others.
  for (const auto& e : c_.events) {
    if (e.kind == LogKind::kDumpSignal) return false;
  }
  size_t attributed = 0;
  for (const auto& s : rs_) attributed += s.seen() ? 1 : 0;
  if (attributed == 0) return false;
  std::vector<int> done, running, silent;
  for (const auto& s : rs_) {
    if (s.clean_end) {
      done.push_back(s.rank);
    } else if (s.seen()) {
      running.push_back(s.rank);
    } else {
      silent.push_back(s.rank);
    }
  }
  if (try_slowdown()) return true;
  if (!done.empty() && running.empty() && silent.empty()) {
    r_.category = "none";
    r_.cause = "none";
    r_.confidence = "high";
    const auto& s = rs_[done.front()];
    // An end known only from a warning printed at exit (ProcessGroupNCCL's destructor) places the
    // rank in its shutdown; a "done" line, at the end of training.
    const bool exiting = std::all_of(done.begin(), done.end(), [&](int k) { return rs_[k].exit_warning; });
    r_.phase = exiting ? "shutdown" : "training";
    add_evidence(s.end_ref, exiting ? fmt::format("every rank logged a warning printed only as it exits normally "
                                                  "(rank {}: the process group's destructor at exit)",
                                                  s.rank)
                                    : fmt::format("every rank logged its normal end (rank {}: step {})", s.rank,
                                                  s.end_step));
    r_.summary = world_ == 1 ? std::string("none: the job's one rank finished normally")
                             : fmt::format("none: all {} ranks finished normally", world_);
    return true;
  }
  // A rank whose steps fall behind while everyone still runs.
  double usual = 0, last = 0;
  const StepRec* at = nullptr;
  for (int rank : running) {
    if (step_jump(rs_[rank], &usual, &last, &at)) {
      slow_.insert(rank);
      r_.category = "straggler";
      r_.cause = "slow_rank";
      r_.missing_ranks = {rank};
      r_.confidence = "medium";
      r_.phase = phase_of_rank(rs_[rank]);
      add_evidence(ref(at->file, at->line),
                   fmt::format("rank {}'s step interval jumped from {:.2f} s to {:.2f} s per step", rank, usual, last));
      r_.summary = fmt::format("straggler (slow_rank): rank {} slowed down; no rank reported an error", rank);
      return true;
    }
  }
  r_.category = "unknown";
  r_.cause = "no_error_logged";
  r_.confidence = "low";
  r_.phase = default_phase();
  if (silence_proves(silent.size())) r_.missing_ranks = silent;
  note("no rank logged an error, a timeout or an exit: the job may still be running, or hang with timeouts longer "
       "than the logs cover (a blocked collective reports nothing until its timeout, MPI's never); which rank is "
       "missing is undecidable from these logs -- a stack dump of every rank (py-spy dump, gdb) or the run's "
       "trace would tell");
  if (!silent.empty()) note(fmt::format("{} wrote no line at all", reason::ranks_phrase_counted(silent)));
  r_.summary = "unknown (no_error_logged): the logs stop without an error on any rank";
  return true;
}

// Per-step times of a rank, oldest first: its own dur_ms when it logs them, else the
// intervals between its step lines' own clocks.
std::vector<double> LogAnalyzer::step_times(const RankState& s) {
  std::vector<double> v;
  if (!s.log) return v;
  const auto& rec = s.log->recent;
  const bool dur = std::all_of(rec.begin(), rec.end(), [](const StepRec& r) { return r.dur_ms >= 0; });
  for (size_t i = dur ? 0 : 1; i < rec.size(); ++i) {
    if (dur) {
      v.push_back(rec[i].dur_ms / 1000.0);
    } else if (rec[i].has_t && rec[i - 1].has_t && rec[i].step > rec[i - 1].step) {
      v.push_back((rec[i].t - rec[i - 1].t) / (rec[i].step - rec[i - 1].step));
    }
  }
  return v;
}

// No failure, but the steps became several times slower and stayed so. Synchronous
// training runs at the pace of its slowest rank: when every rank slowed alike, which
// one is the straggler is not in the logs (it needs per-rank compute or wait time).
bool LogAnalyzer::try_slowdown() {
  std::vector<int> slowed, steady;
  double before = 0, after = 0;
  int at_step = -1;
  for (const auto& s : rs_) {
    const auto v = step_times(s);
    if (v.size() < 6) continue;
    // A regime change, not noise on a busy machine: the last half is uniformly slower
    // than the first steps (its fastest step 1.5x their slowest, its median 2x theirs).
    const std::vector<double> head(v.begin(), v.begin() + static_cast<long>(std::max<size_t>(2, v.size() / 6)));
    const std::vector<double> tail(v.end() - static_cast<long>(v.size() / 2), v.end());
    const double early = median(head);
    const double late = median(tail);
    const bool uniform = *std::min_element(tail.begin(), tail.end()) >= 1.5 * *std::max_element(head.begin(), head.end());
    if (early > 0 && uniform && late >= 2.0 * early && late - early >= 0.2) {
      slowed.push_back(s.rank);
      before = early;
      after = late;
      if (at_step < 0) {
        const auto& rec = s.log->recent;
        for (size_t i = 0; i < v.size(); ++i) {
          if (v[i] >= 2 * early) {
            at_step = rec[rec.size() - v.size() + i].step;
            break;
          }
        }
      }
    } else {
      steady.push_back(s.rank);
    }
  }
  if (slowed.empty()) return false;
  r_.category = "straggler";
  r_.phase = "training";
  const RankState& a = rs_[slowed.front()];
  const auto& last = a.log->recent.back();
  add_evidence(ref(last.file, last.line),
               fmt::format("{}'s steps went from {:.0f} ms to {:.0f} ms{}", reason::ranks_phrase_counted(slowed), before * 1000,
                           after * 1000, at_step >= 0 ? fmt::format(" from step {} on", at_step) : ""));
  if (steady.empty()) {
    r_.cause = "slowdown";
    r_.missing_ranks.clear();
    r_.confidence = "low";
    note(fmt::format("every rank's step time grew {:.1f}x{}: synchronous training runs at the pace of its slowest "
                     "rank, so which rank is the straggler is undecidable from these logs (they carry no per-rank "
                     "compute or wait time); the run's trace, nsys, or per-rank data/compute timing would tell",
                     after / before, at_step >= 0 ? fmt::format(" from step {}", at_step) : ""));
    r_.summary = fmt::format("straggler (slowdown): the whole job slowed {:.1f}x{} with no error; the straggler "
                             "cannot be named from these logs",
                             after / before, at_step >= 0 ? fmt::format(" at step {}", at_step) : "");
  } else {
    slow_.insert(slowed.begin(), slowed.end());
    r_.cause = "slow_rank";
    r_.missing_ranks = slowed;
    r_.confidence = "medium";
    r_.summary = fmt::format("straggler (slow_rank): {} slowed {:.1f}x while {} did not", reason::ranks_phrase_counted(slowed),
                             after / before, reason::ranks_phrase_counted(steady));
  }
  return true;
}

// The first failure of an answer that blames no rank: its line, without its rank as a
// culprit (the first rank to report a timeout is a witness, not the cause).
void LogAnalyzer::set_first_unblamed(const Fail& f) {
  Fail g = f;
  g.what = fmt::format("{} (logged by {}: a witness, not a proven cause)", f.what, who(f.rank));
  g.rank = -1;
  set_first(g);
}

void LogAnalyzer::set_unknown() {
  r_.category = "unknown";
  r_.cause = "unknown";
  r_.confidence = "low";
  r_.phase = default_phase();
  const auto v = all_fails();
  // Only heartbeat-monitor lines: the watchdog itself hung (a stuck CUDA/NCCL call); which
  // rank caused it is not in them.
  std::set<int> beat;
  bool only_beats = false;
  for (const Fail* f : v) {
    if (f->role == Role::kInfo || f->role == Role::kTeardown) continue;
    if (!f->ev || f->ev->kind != LogKind::kHeartbeatMonitor) {
      only_beats = false;
      break;
    }
    only_beats = true;
    beat.insert(f->rank);
  }
  if (only_beats) {
    r_.cause = "heartbeat_timeout";
    every_rank_reported_ = world_ >= 2 && static_cast<int>(beat.size()) == world_ && !beat.count(-1);
    note("ProcessGroupNCCL's heartbeat monitor fired: its watchdog thread made no progress (a CUDA or NCCL call "
         "that never returned); the stuck call and the rank behind it are not in these lines -- the flight "
         "recorder dump (TORCH_NCCL_DUMP_ON_TIMEOUT) or a stack dump would tell");
  }
  for (const Fail* f : v) {
    if (f->role != Role::kInfo) {
      set_first_unblamed(*f);
      add_evidence(f->ref, fmt::format("rank {}: {}", f->rank, short_text(f->what)));
      break;
    }
  }
  note("no rule explains these logs; the per-rank timeline shows what each rank did last");
  r_.summary = "unknown: no rule explains these logs; see the per-rank timeline";
}

}  // namespace hanglab::plainlog
