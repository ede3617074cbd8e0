// What one plain-log event means for its rank: role (root, echo, exit, teardown), category,
// cause and strength by its kind; exit statuses; lines only init writes (see timeline.hpp).
#include "triage/logs/timeline.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "triage/logs/catalogue.hpp"
#include "triage/model/causes.hpp"
#include "util.hpp"

namespace hanglab::plainlog {

Fail LogTimeline::make_fail(const LogEvent& e, int rank) const {
  Fail f;
  f.ev = &e;
  f.rank = rank;
  f.has_t = e.has_t;
  f.exact = e.t_exact;
  f.t = e.t;
  f.res = e.t_res;
  f.file = e.file;
  f.line = e.line;
  f.ref = ref(e);
  f.host = e.host.empty() && valid_rank(rank) ? rs_[rank].host : e.host;
  f.signal = e.signal;
  f.code = e.code;
  return f;
}

std::string short_text(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n) + "...";
}

// What a line of each kind means when nothing more specific is known (the pattern table's and the
// catalogue's meanings override it): role, category, cause, strength among simultaneous roots
// (OOM/CUDA/crash 3, signal death 2, exception 1) and the words put before the line's text.
// Kinds with fields that decide (a signal, an exception class, a pid) are in describe_special().
struct KindMeaning {
  LogKind kind;
  Role role;
  const char* category;
  const char* cause;
  int strength;
  const char* prefix;
};

static constexpr KindMeaning kKindMeanings[] = {
    {LogKind::kCudaOom, Role::kRoot, "rank_exit", "cuda_oom", 3, "CUDA out of memory: "},
    {LogKind::kCudaError, Role::kRoot, "rank_exit", "cuda_error", 3, "CUDA error: "},
    {LogKind::kDataError, Role::kRoot, "data_loading", "data_error", 1, ""},
    {LogKind::kUsageError, Role::kRoot, "rank_exit", "usage_error", 1, ""},
    {LogKind::kShmBusError, Role::kRoot, "data_loading", "shm_exhausted", 2,
     "DataLoader shared memory exhausted (/dev/shm): "},
    {LogKind::kResourceLimit, Role::kRoot, "resource_limit", "resource_limit", 2, "a resource limit ended the job: "},
    {LogKind::kDiskFull, Role::kRoot, "resource_limit", "disk_full", 2, "disk full: "},
    // Host memory ran out in the process's own allocation: the oom the run records name the same way
    // (reason/run_death.cpp: a rank whose error says so died of oom).
    {LogKind::kHostOom, Role::kRoot, "rank_exit", "oom", 3, "out of host memory: "},
    {LogKind::kFdExhausted, Role::kRoot, "resource_limit", "fd_exhausted", 2, "out of file descriptors: "},
    // More processes than GPUs: a rank's set_device (or its communicator) names a GPU the node
    // lacks. As strong as any CUDA error, since it is one, but it says why.
    {LogKind::kInvalidDevice, Role::kRoot, "rendezvous", "invalid_device", 3, "no such GPU on this node: "},
    {LogKind::kShmError, Role::kRoot, "resource_limit", "nccl_shm", 2,
     "NCCL could not create its shared-memory segment: "},
    {LogKind::kWrongIfname, Role::kRoot, "network", "wrong_ifname", 2, "no usable network interface: "},
    {LogKind::kIbError, Role::kRoot, "network", "ib_error", 1, "InfiniBand/RoCE transport error: "},
    {LogKind::kAddressInUse, Role::kRoot, "rendezvous", "address_in_use", 1, ""},
    {LogKind::kDnsFailure, Role::kRoot, "rendezvous", "dns_failure", 1, ""},
    {LogKind::kStoreRefused, Role::kEcho, "rendezvous", "connection_refused", 0, ""},
    {LogKind::kStoreTimeout, Role::kEcho, "rendezvous", "rendezvous_timeout", 0, ""},
    {LogKind::kRendezvousError, Role::kEcho, "rendezvous", "rendezvous_error", 0, ""},
    // A peer's failure seen from here: a timeout, a closed or reset connection, an abort.
    {LogKind::kGlooTimeout, Role::kEcho, "", "", 0, ""},
    {LogKind::kCommClosed, Role::kEcho, "", "", 0, ""},
    {LogKind::kNcclRemoteError, Role::kEcho, "", "", 0, ""},
    {LogKind::kNcclSystemError, Role::kEcho, "", "", 0, ""},
    {LogKind::kNcclError, Role::kEcho, "", "", 0, ""},
    {LogKind::kSocketError, Role::kEcho, "", "", 0, ""},
    {LogKind::kCommException, Role::kEcho, "", "", 0, ""},
    {LogKind::kCommAborted, Role::kEcho, "", "", 0, ""},
    {LogKind::kNcclAsyncFailed, Role::kEcho, "", "", 0, ""},
    {LogKind::kHeartbeatMonitor, Role::kEcho, "", "", 0, ""},
    {LogKind::kWatchdogRepeat, Role::kEcho, "", "", 0, ""},
    {LogKind::kChildFailed, Role::kEcho, "", "", 0, ""},
};

static void set_root(Fail& f, const char* category, const char* cause, int strength, std::string what) {
  f.role = Role::kRoot;
  f.category = category;
  f.cause = cause;
  f.strength = strength;
  f.what = std::move(what);
}

// The kinds whose meaning depends on a field of the line; false for the others.
static bool describe_special(const LogEvent& e, const std::string& txt, Fail& f) {
  switch (e.kind) {
    case LogKind::kOomKill:
      set_root(f, "rank_exit", "oom", 3,
               e.pid >= 0 ? fmt::format("OOM-killed by the kernel (pid {}{})", e.pid, e.word.empty() ? "" : ", " + e.word)
                          : "OOM-killed: " + txt);
      f.signal = 9;
      return true;
    case LogKind::kCrash:
      // glog's header before it names the signal: a death by one of its six failure signals, weaker than
      // the line that names which (the same rank's "*** SIGSEGV ..." that follows wins).
      if (e.word == "glog_failure_header") {
        set_root(f, "rank_exit", "crashed", 1,
                 "dying of a fatal signal (glog's failure handler: SIGSEGV, SIGILL, SIGFPE, SIGABRT, SIGBUS or "
                 "SIGTERM): " + txt);
        return true;
      }
      // Open MPI's handler's header ("[host:pid] *** Process received signal ***", opal/util/stacktrace.c),
      // installed for opal_signal's list (default "6,7,8,11": SIGABRT, SIGBUS, SIGFPE, SIGSEGV): a crash, its
      // signal on the handler's next line.
      if (e.catalogue && e.signal == 0 && e.role == "root") {
        set_root(f, "rank_exit", "crashed", 1, "crashed (Open MPI's signal handler; the signal is on its next line): " + txt);
        return true;
      }
      set_root(f, "rank_exit", e.signal == 11 ? "segfault" : "crashed", 3,
               e.signal > 0 ? fmt::format("crashed ({}): {}", signal_name(e.signal), txt) : "crashed: " + txt);
      return true;
    case LogKind::kTerminate:
      // A communication exception nobody caught is the collective's failure, not a crash.
      if (e.comm_what) {
        f.role = Role::kEcho;
        f.what = "aborted after a collective error: " + txt;
        return true;
      }
      if (e.read_what) return true;  // context: its what() line is the failure (kInfo)
      for (const char* comm : {"DistBackendError", "IoException", "DistNetworkError", "DistStoreError"}) {
        if (e.word.find(comm) == std::string::npos) continue;
        f.role = Role::kEcho;
        f.what = "aborted after a collective error: " + txt;
        return true;
      }
      // libstdc++'s std::bad_alloc: an allocation failed, the process ran out of host memory.
      if (e.word.find("bad_alloc") != std::string::npos) {
        set_root(f, "rank_exit", "oom", 3, "out of host memory (std::bad_alloc): " + txt);
        return true;
      }
      set_root(f, "rank_exit", "crashed", 2, "std::terminate: " + txt);
      return true;
    case LogKind::kException:
      if (e.handled) return true;  // context of the exception raised after it (kInfo)
      // torch.multiprocessing.spawn's parent re-raises a child's failure as ProcessRaisedException
      // ("-- Process i terminated with the following error:" and the child's traceback): the
      // child's own error, which follows, is the failure.
      if (e.word.find("ProcessRaisedException") != std::string::npos) return true;
      set_root(f, "rank_exit", "exception", 1, "exception: " + txt);
      return true;
    case LogKind::kDataLoaderKilled:
      // The parent reports the signal that ended the worker (torch/csrc/DataLoader.cpp, paddle's
      // data_loader.cc): SIGBUS is its shared memory (the message says so), SIGKILL proves no sender (the
      // OOM killer, a cgroup limit, a job manager or a person): oom only beside the OOM's own report
      // (LogAnalyzer::set_root).
      set_root(f, "data_loading", e.signal == 7 ? "shm_exhausted" : "data_loader_crash", 2,
               "DataLoader worker died: " + txt);
      return true;
    case LogKind::kWatchdogTimeout:
      f.role = Role::kEcho;
      f.what = e.seq >= 0 ? fmt::format("watchdog timeout in {} SeqNum={}{} after {} ms", e.op.empty() ? "?" : e.op,
                                        e.seq, e.numel_in >= 0 ? fmt::format(" NumelIn={}", e.numel_in) : "",
                                        e.ran_ms >= 0 ? e.ran_ms : e.timeout_ms)
                          : "watchdog timeout: " + txt;
      return true;
    case LogKind::kSignalException:
      f.role = Role::kTeardown;
      f.what = fmt::format("received {} ({})", signal_name(e.signal), txt);
      return true;
    case LogKind::kLauncherSignal:
      f.role = Role::kTeardown;
      f.what = fmt::format("the launcher sent {} (pid {}): teardown", e.word.empty() ? "a signal" : e.word, e.pid);
      return true;
    default:
      return describe_exit(e, txt, f);
  }
}

// Exit notices: srun's task lines, Open MPI's, launchers', a signal received.
bool describe_exit(const LogEvent& e, const std::string& txt, Fail& f) {
  // srun's "task 0: Out Of Memory": Slurm's cgroup OOM handler killed the task (the step's memory
  // limit), the OOM kill itself, not an echo of one.
  if (e.kind == LogKind::kSrunTask && e.word.find("Out Of Memory") != std::string::npos) {
    set_root(f, "rank_exit", "oom", 3, "OOM-killed by Slurm's cgroup (" + txt + ")");
    f.signal = 9;
    return true;
  }
  // "MPI_ABORT was invoked on rank N in communicator MPI_COMM_WORLD": the rank gave up on its own
  // (an uncaught error), and Open MPI kills the rest: a cause, as weak as an exception line (a
  // rank's own exception or crash printed before it is the story).
  if (e.kind == LogKind::kMpiExit && e.word == "MPI_ABORT") {
    set_root(f, "rank_exit", "nonzero_exit", 1, "called MPI_Abort (" + txt + ")");
    return true;
  }
  switch (e.kind) {
    case LogKind::kSrunTask:
    case LogKind::kMpiExit:
    case LogKind::kLauncherExit:
    case LogKind::kSignalReceived:
    case LogKind::kExitStatus:
      f.role = Role::kExit;
      exit_meaning(e.signal, e.code, f);
      f.what += fmt::format(" ({})", txt);
      return true;
    default:
      return false;
  }
}

void describe_kind(const LogEvent& e, Fail& f) {
  const std::string txt = short_text(e.text);
  for (const auto& k : kKindMeanings) {
    if (k.kind != e.kind) continue;
    f.role = k.role;
    f.category = k.category;
    f.cause = k.cause;
    f.strength = k.strength;
    f.what = k.prefix + txt;
    return;
  }
  if (!describe_special(e, txt, f)) f.role = Role::kInfo;
}

// The catalogue's role for the line (its emitter's source says what the message is) overrides
// the kind's default: a line can be a root of one kind in one place and benign in another.
static void apply_role(const LogEvent& e, Fail& f) {
  if (e.role == "root") {
    // A message the emitter prints as a cause (Open MPI's help text), read by an exit kind that
    // found no status in it: what it says is the line, not "failed".
    if (f.role == Role::kExit && e.signal == 0 && e.code == kNoCode) f.what.clear();
    f.role = Role::kRoot;
    f.strength = std::max(f.strength, 1);
  } else if (e.role == "echo") {
    f.role = Role::kEcho;
  } else if (e.role == "exit") {
    f.role = Role::kExit;
    if (f.what.empty()) exit_meaning(e.signal, e.code, f);
  } else {
    f.role = Role::kInfo;  // benign, context: not a failure
  }
  if (f.what.empty()) f.what = short_text(e.text);
  if (e.catalogue) f.what += " [catalogue: " + e.catalogue->origin() + "]";
}

void describe_event(const LogEvent& e, Fail& f) {
  describe_kind(e, f);
  if (!e.role.empty()) apply_role(e, f);
  if (f.role == Role::kInfo) return;
  if (!e.cause.empty()) f.cause = e.cause;
  if (!e.category.empty()) f.category = e.category;
  // A catalogue meaning whose answer triage does not give (model/causes.hpp; the catalogue check
  // reports it) is not applied: the line stays unread, as before the catalogue knew it.
  if (e.catalogue && (f.role == Role::kRoot || f.role == Role::kExit) &&
      !listed_cause(f.category.empty() ? "rank_exit" : f.category, f.cause.empty() ? "nonzero_exit" : f.cause)) {
    f = Fail{};
    f.role = Role::kInfo;
    return;
  }
  // A line the table says proves a link fault (an NCCL socket that timed out or has no route to
  // its peer) is a cause of its own, not a peer's echo: a dead peer process closes or resets its
  // connections, it does not leave them unanswered.
  if (f.role == Role::kEcho && e.category == "network") {
    f.role = Role::kRoot;
    f.strength = 1;
    f.what = "network: " + f.what;
  }
}

}  // namespace hanglab::plainlog

namespace hanglab {

LineReading line_meaning(const LogLine& l) {
  LogEvent e;
  event_fields(l, e);
  plainlog::Fail f;
  plainlog::describe_event(e, f);
  LineReading r;
  r.kind = l.kind;
  r.role = f.role;
  if (f.role != Role::kInfo) {
    r.category = f.category;
    r.cause = f.cause;
  }
  r.signal = f.signal ? f.signal : l.signal;
  return r;
}

}  // namespace hanglab

namespace hanglab::plainlog {

// Exit statuses: a signal death is a root candidate; a plain non-zero code is an exit
// (root only when nothing else explains it).
void exit_meaning(int signal, int code, Fail& f) {
  if (!signal && code != kNoCode && code > 128 && code < 160) signal = code - 128;  // 137 = 128+9
  f.signal = signal;
  f.code = code;
  if (signal) {
    f.category = "rank_exit";
    f.cause = signal == 9 ? "killed" : (signal == 15 || signal == 2 || signal == 1) ? "killed" : signal == 11 ? "segfault" : "crashed";
    f.strength = 2;
    f.what = fmt::format("exited by {}{}", signal_name(signal),
                         code != kNoCode && code > 0 ? fmt::format(" (exit code {})", code) : "");
  } else {
    f.category = "rank_exit";
    f.cause = "nonzero_exit";
    // A launcher's entry cut before its exit status (a paste that ends inside torchrun's summary):
    // it lists failed workers only.
    f.what = code == kNoCode ? std::string("failed (its exit status is cut from these lines)")
                             : fmt::format("exited with code {}", code);
  }
}

// A line that only init writes: the store, the interface, the communicator's setup.
bool LogTimeline::init_event(const LogEvent& e) {
  // A line the catalogue read: its meaning's phase says whether only init writes it (a kind the
  // meaning chose, e.g. an NCCL error trace, can be written in any phase).
  if (e.catalogue) return e.phase == "init";
  // IB/RoCE set-up (a queue pair that cannot be brought up, no usable HCA or GID): NCCL does it while it
  // connects its peers, before data moves (patterns.cpp's ibv_modify_qp entry; the catalogue's own
  // ib_config meanings say phase init).
  if (e.kind == LogKind::kIbError && e.cause == "ib_config") return true;
  switch (e.kind) {
    case LogKind::kStoreTimeout:
    case LogKind::kStoreRefused:
    case LogKind::kRendezvousError:
    case LogKind::kWrongIfname:
    case LogKind::kShmError:
    case LogKind::kAddressInUse:
    case LogKind::kDnsFailure:
    case LogKind::kInvalidDevice:  // the device is chosen once, at start-up (set_device, the communicator)
    case LogKind::kInitStep:
    case LogKind::kInitBegin:
      return true;
    default:
      break;
  }
  // (Ray's raylet: a worker process that died before it registered, "probably it crashed during start".)
  for (const char* w : {"init_process_group", "ncclCommInitRank", "setting up NCCL communicator", "ncclUniqueId",
                        "connectFullMesh", "Bootstrap", "crashed during start"}) {
    if (e.text.find(w) != std::string::npos) return true;
  }
  return false;
}

}  // namespace hanglab::plainlog
