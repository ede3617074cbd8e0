// Plain-log reasoning: run(), the order of the rules (classify), roots, phases (see log_analyzer.hpp).
#include "triage/reason/log_analyzer.hpp"
#include "triage/reason/log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "util.hpp"

namespace hanglab::plainlog {

TriageResult LogAnalyzer::run() {
  r_.source = "logs";
  setup_world();
  attach();
  derive();
  find_collectives();
  classify();
  assign_liveness();
  finish();
  return std::move(r_);
}

void LogAnalyzer::classify() {
  set_stuck();
  if (try_duplicate()) return;
  if (try_external_stop()) return;
  if (try_job_limit()) return;
  // The init rules read a job that never got through set-up: not one that trained, nor one whose
  // init-done line says every rank joined (what failed after it is read by the rules below).
  const bool past_init = training_started_ || init_done_;
  if (!past_init && try_init()) return;
  if (!past_init && try_membership()) return;
  if (!past_init && try_store_wait()) return;
  if (try_mismatch()) return;
  if (try_ahead()) return;
  if (try_started_lag()) return;
  const Fail* root = first_root();
  if (root && aborted_together(*root)) return set_aborted_together(*root);
  if (root && watchdog_aborted(*root)) return set_watchdog_aborted(*root);
  if (root && root_precedes_echoes(*root)) {
    if ((adopted_ = anon_root_owner(*root))) return set_root(*adopted_, true);
    return set_root(*root, true);
  }
  if (try_busy_bar()) return;
  if (try_vanished()) return;
  if (try_absent()) return;
  if (try_desync_report()) return;
  if (try_all_waiting()) return;
  if (try_stall_check()) return;
  if (try_no_failure()) return;
  if (root) return set_root(*root, false);
  set_unknown();
}

bool LogAnalyzer::aborted_together(const Fail& root) {
  if (root.ev || root.role != Role::kExit || root.signal != 6 || !root.has_t) return false;
  together_.clear();
  for (const auto& l : c_.launch_failures) {
    if (l.signal == 6 && l.has_t && std::fabs(l.t - root.t) <= 1.0 && valid_rank(l.rank) &&
        std::find(together_.begin(), together_.end(), l.rank) == together_.end())
      together_.push_back(l.rank);
  }
  if (together_.size() < 2) return false;
  for (int r : together_) {
    for (const auto& f : rs_[r].fails) {
      if (f.ev) return false;  // a rank with its own error line: the ordinary rules decide
    }
  }
  std::sort(together_.begin(), together_.end());
  return true;
}

void LogAnalyzer::set_aborted_together(const Fail& root) {
  r_.category = "unknown";
  r_.cause = "unknown";
  r_.confidence = "low";
  // The watchdog aborts after a collective timed out: collectives were running, which is
  // training by the same rule as a WorkNCCL timeout line (unless init lines say otherwise).
  r_.phase = training_started_ || init_seen_ ? default_phase() : "training";
  every_rank_reported_ = true;  // the watchdog aborts every rank it finds stuck
  set_first_unblamed(root);
  add_evidence(root.ref, fmt::format("{} exited by SIGABRT at the same second ({}), none with an error of its own",
                                     reason::ranks_phrase_counted(together_), clock(root.t, 1.0)));
  note("SIGABRT on several ranks at once is ProcessGroupNCCL's watchdog taking each process down after a "
       "collective timeout: an echo; torchrun's \"Root Cause\" is only the first it noticed. The rank that "
       "caused the timeout is not in these logs");
  r_.summary = fmt::format("unknown: {} aborted together (the watchdog's SIGABRT after a collective timeout); the "
                           "cause is not in these logs",
                           reason::ranks_phrase_counted(together_));
}

// A SIGABRT exit of a process whose lines show ProcessGroupNCCL's watchdog throwing or tearing it down
// ("Exception raised from <watchdog function> at ProcessGroupNCCL.cpp", "To avoid data inconsistency, we are
// taking the entire process down": LogKind::kNcclAsyncFailed): the watchdog's abort after a collective failed,
// not a crash. The marker is the exiting rank's own, or unattributed where the paste names no other rank.
bool LogAnalyzer::watchdog_aborted(const Fail& root) const {
  // Where a rank reports the collective itself, the waiting rules read it.
  if (root.role != Role::kExit || root.signal != 6 || !reports_.empty()) return false;
  int seen = 0;
  for (const auto& s : rs_) {
    seen += s.seen() ? 1 : 0;
    for (const auto& f : s.fails)
      if (f.ev && f.role == Role::kRoot) return false;  // a rank's own error line: the ordinary rules decide
  }
  const auto marker = [](const LogEvent* e) { return e->kind == LogKind::kNcclAsyncFailed; };
  if (valid_rank(root.rank) && std::any_of(rs_[root.rank].evs.begin(), rs_[root.rank].evs.end(), marker)) return true;
  if (seen > 1) return false;
  return std::any_of(c_.events.begin(), c_.events.end(), [&](const LogEvent& e) { return e.rank < 0 && marker(&e); });
}

void LogAnalyzer::set_watchdog_aborted(const Fail& root) {
  r_.category = "unknown";
  r_.cause = "unknown";
  r_.confidence = "low";
  r_.phase = default_phase();
  set_first_unblamed(root);
  add_evidence(root.ref, fmt::format("exited by SIGABRT after ProcessGroupNCCL's watchdog threw ({})", short_text(root.what)));
  note("ProcessGroupNCCL's watchdog takes its process down (std::terminate, SIGABRT) after one of its collectives "
       "failed or timed out: the SIGABRT is its tear-down, not a crash; the collective's failure and its cause are "
       "not in these logs");
  r_.summary = "unknown: a process aborted by ProcessGroupNCCL's watchdog after a collective failed; the cause is not "
               "in these logs";
}

std::vector<const Fail*> LogAnalyzer::all_fails() const {
  std::vector<const Fail*> v;
  for (const auto& s : rs_) {
    for (const auto& f : s.fails) v.push_back(&f);
  }
  if (use_anon_) {
    for (const auto& f : anon_.fails) v.push_back(&f);
  }
  std::stable_sort(v.begin(), v.end(), [](const Fail* a, const Fail* b) {
    if (a->has_t && b->has_t && a->t != b->t) return a->t < b->t;
    if (a->has_t != b->has_t) return a->has_t;
    // torchrun's summary lists the other failures first and its "Root Cause" last
    // (errors/__init__.py ChildFailedError.format_msg); at one whole second its root is its pick
    // (get_first_failure: the earliest timestamp), not the entries above it.
    if (a->launcher_root != b->launcher_root) return a->launcher_root;
    if (a->file != b->file) return a->file < b->file;
    return a->line < b->line;
  });
  return v;
}

// Two failures written by one process: the same rank, or (neither attributed) the same pid on the same host,
// or the same "[host:N]" tag (Open MPI's opal_output prefix is host and pid).
static bool one_writer(const Fail& a, const Fail& b) {
  if (a.rank >= 0 || b.rank >= 0) return a.rank == b.rank;
  if (!a.ev || !b.ev || a.ev->host != b.ev->host) return false;
  if (a.ev->pid >= 0 && a.ev->pid == b.ev->pid) return true;
  return a.ev->rank_src == RankSource::kHostTag && b.ev->rank_src == RankSource::kHostTag && a.ev->rank == b.ev->rank;
}

// The earliest root candidate: real failures first (OOM, CUDA, crash, kill, exception);
// a plain non-zero exit only when no rank logged anything stronger.
const Fail* LogAnalyzer::first_root() const {
  const Fail* best = nullptr;
  for (const Fail* f : all_fails()) {
    if (f->aftermath) continue;
    if (f->role != Role::kRoot && !(f->role == Role::kExit && f->signal && f->signal != 15 && f->signal != 2)) continue;
    if (!best) {
      best = f;
      continue;
    }
    // Among roots that overlap in time, the stronger kind is the cause (the kernel's
    // OOM kill over the exit status the launcher noticed later).
    if (!before(*best, *f) && f->strength > best->strength && f->rank == best->rank) best = f;
    // An exception exits with a code, never by SIGKILL. The shell's own "Killed" after it (in
    // the process's stream) means the process was SIGKILLed while its shell lived: the OOM
    // killer or a deliberate kill, not a job teardown (which takes the shell too, and which
    // srun/torchrun/Kubernetes report instead): it died of the kill.
    else if (best->strength == 1 && best->role == Role::kRoot && f->rank == best->rank && f->signal == 9 &&
             f->ev && f->ev->kind == LogKind::kExitStatus && f->ev->code == kNoCode)
      best = f;
    // A SIGKILL and the kernel's (or cgroup's) OOM kill of the same process are one death,
    // whichever line was written first: the OOM kill names why.
    else if (best->signal == 9 && best->role == Role::kExit && f->rank == best->rank && f->ev &&
             f->ev->kind == LogKind::kOomKill)
      best = f;
    // The main process's "DataLoader worker (pid(s) ...) exited unexpectedly" (dataloader.py
    // _try_get_data: no signal it could name) and the worker's own bus-error message (its SIGBUS
    // handler, torch/csrc/DataLoader.cpp: "insufficient shared memory (shm)") are one death, written
    // by two processes in either order: the worker's words name why.
    // A signal handler's header that names no signal (glog's "*** Aborted at ...", Open MPI's "[host:pid] ***
    // Process received signal ***") and the same process's line naming the signal after it ("*** SIGSEGV ...
    // received by PID", "[host:pid] Signal: Segmentation fault (11)") are one death: the second says which.
    else if (best->ev && best->ev->kind == LogKind::kCrash && best->ev->signal == 0 && best->strength == 1 &&
             (f->signal > 0 || (f->ev && f->ev->kind == LogKind::kCrash && f->ev->signal > 0)) &&
             one_writer(*best, *f))
      best = f;
    else if (best->ev && best->ev->kind == LogKind::kDataLoaderKilled && best->ev->signal == 0 &&
             f->rank == best->rank && f->ev && f->ev->kind == LogKind::kShmBusError)
      best = f;
  }
  if (best) return best;
  // (torchrun's "Root Cause" entry is a failure even where the paste cut its exit status.)
  for (const Fail* f : all_fails()) {
    if (f->role == Role::kExit && !f->aftermath && f->code != 0 && (f->code != kNoCode || f->launcher_root))
      return f;
  }
  return nullptr;
}

// No other rank had failed on its own well before the root. A launcher's notice of a
// death ("exited on signal 9", torchrun's summary) is written after the fact: the death
// is bounded by the rank's last own line instead.
bool LogAnalyzer::root_precedes_echoes(const Fail& root) const {
  Fail bound = root;
  if (root.role == Role::kExit && valid_rank(root.rank) && rs_[root.rank].seen()) {
    const RankLog& g = *rs_[root.rank].log;
    bound.has_t = g.has_last_t;
    bound.t = g.last_t;
    bound.res = 0;
    bound.file = g.last_file;
    bound.line = g.last_line;
  }
  for (const Fail* f : all_fails()) {
    if (f->rank == root.rank || f->role != Role::kEcho) continue;
    const bool cross_host = f->host.empty() || root.host.empty() || f->host != root.host;
    if (before(*f, bound, cross_host ? kSkewS : 0.05)) return false;
  }
  return true;
}

// The phase when no rank's state says more: training once a step or collective is seen,
// init only when a line proves it, else unknown. The paste's last phase marker says more
// when no step line followed it: a traceback's innermost frame inside init (collectives
// run at start-up too: DDP's broadcast, a CUDA-graph capture) or inside the training loop.
std::string LogAnalyzer::default_phase() const {
  if (use_anon_) {
    switch (c_.unattributed_phase) {
      case LogKind::kCheckpointBegin: return "checkpoint";
      case LogKind::kEvalBegin: return "eval";
      case LogKind::kShutdown: return "shutdown";
      default: break;
    }
  }
  // A traceback in lines no rank can be named for, its innermost frame inside start-up or
  // the training loop (frames.cpp): the failure it reports hit that phase. Start-up only while
  // no step or progress line anywhere says the job had gone on to train (collectives run at
  // start-up too: DDP's broadcast of the parameters, a CUDA-graph capture).
  if (c_.unattributed_phase == LogKind::kTrainBegin) return "training";
  if (c_.unattributed_phase == LogKind::kInitBegin && !c_.unattributed_phase_stepped && !steps_seen()) return "init";
  // Otherwise the last save / evaluation / data / shutdown marker that no step line followed,
  // a rank's own or the paste's (a traceback's frame in _save_checkpoint, a hung rank's stack
  // inside ModelCheckpoint.save_checkpoint): the work the job was in when it stopped.
  if (const auto m = stuck_marker(); m && m->kind != LogKind::kInitBegin) return marker_phase(m->kind);
  // The last bar in lines no rank can be named for counted start-up work (HF's "Loading checkpoint
  // shards", from_pretrained's weights; progress.cpp's bar_phase) and no step or training bar came
  // after it anywhere: the job was still starting.
  if (!training_started_ && !steps_seen() && c_.unattributed_bar.seen() && c_.unattributed_bar.phase == "init")
    return "init";
  return training_started_ ? "training" : init_seen_ ? "init" : "unknown";
}

bool LogAnalyzer::steps_seen() const {
  if (c_.unattributed_steps > 0 || c_.progress_lines > 0) return true;
  return std::any_of(rs_.begin(), rs_.end(), [](const RankState& s) { return s.log && s.log->n_steps > 0; });
}

std::string LogAnalyzer::phase_of_rank(const RankState& s) const {
  if (!s.log) return default_phase();
  switch (s.log->phase) {
    case LogKind::kCheckpointBegin: return "checkpoint";
    case LogKind::kEvalBegin: return "eval";
    case LogKind::kDataWait:
    case LogKind::kDataPrep: return "data";
    case LogKind::kShutdown: return "shutdown";
    // A frame of start-up after the rank's last step line: it failed in (re)initialisation.
    case LogKind::kInitBegin:
      if (!step_after(*s.log)) return "init";
      break;
    case LogKind::kTrainBegin: return "training";
    default: break;
  }
  if (s.log->n_steps == 0 && !training_started_) return default_phase();
  return "training";
}

bool LogAnalyzer::step_after(const RankLog& g) {
  for (const auto& st : g.recent) {
    if (st.file == g.phase_file ? st.line > g.phase_line : (st.has_t && g.phase_has_t && st.t > g.phase_t))
      return true;
  }
  return false;
}

std::optional<Marker> LogAnalyzer::stuck_marker() const {
  for (const auto& s : rs_) {
    if (!s.log || s.log->phase == LogKind::kNone || step_after(*s.log)) continue;
    if (marker_phase(s.log->phase) == "training") continue;
    return Marker{s.log->phase, s.rank, ref(s.log->phase_file, s.log->phase_line), s.log->phase_text};
  }
  if (c_.unattributed_phase != LogKind::kNone && !c_.unattributed_phase_stepped &&
      marker_phase(c_.unattributed_phase) != "training")
    return Marker{c_.unattributed_phase, -1, ref(c_.unattributed_phase_file, c_.unattributed_phase_line),
                  c_.unattributed_phase_text};
  return std::nullopt;
}

// A checkpoint's end with nothing after it still names the save: its closing barrier, or
// the first collective after it, is what hung.
std::string LogAnalyzer::marker_phase(LogKind k) {
  switch (k) {
    case LogKind::kCheckpointBegin:
    case LogKind::kCheckpointEnd: return "checkpoint";
    case LogKind::kEvalBegin: return "eval";
    case LogKind::kDataWait:
    case LogKind::kDataPrep: return "data";
    // The training loop's end (HF Trainer's 'train_runtime' summary, "Training completed") with no
    // step after it: what failed came after the work, while the program was ending.
    case LogKind::kDone:
    case LogKind::kShutdown: return "shutdown";
    case LogKind::kInitBegin: return "init";
    default: return "training";
  }
}

void LogAnalyzer::set_first(const Fail& f) {
  r_.first_failure = Failure{f.rank, f.has_t ? f.t : 0, f.what, f.ref, !f.has_t || f.exact, f.cause, f.signal};
  first_key_ = fmt::format("{}/{}", f.rank, f.ref);
}

int LogAnalyzer::last_good_step() const {
  int lg = -1;
  int loggers = 0;
  for (const auto& s : rs_) {
    if (!s.log || s.log->n_steps == 0) continue;
    ++loggers;
    lg = lg < 0 ? s.log->last_step : std::min(lg, s.log->last_step);
  }
  return std::max(lg, 0);
}

}  // namespace hanglab::plainlog

namespace hanglab {

TriageResult analyze_log_corpus(const LogCorpus& corpus, const TriageOptions& opts) {
  return plainlog::LogAnalyzer(corpus, opts).run();
}

}  // namespace hanglab
