// What one plain-log event means for its rank: role (root, echo, exit, teardown), category,
// cause and strength by its kind; exit statuses; lines only init writes (see timeline.hpp).
#include "triage/logs/timeline.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "util.hpp"

namespace hanglab::plainlog {

std::string signal_name(int sig) {
  static const std::map<int, const char*> kNames = {
      {1, "SIGHUP"},  {2, "SIGINT"},   {4, "SIGILL"},   {6, "SIGABRT"},  {7, "SIGBUS"},   {8, "SIGFPE"},
      {9, "SIGKILL"}, {11, "SIGSEGV"}, {13, "SIGPIPE"}, {15, "SIGTERM"}, {24, "SIGXCPU"}};
  auto it = kNames.find(sig);
  return it != kNames.end() ? it->second : fmt::format("signal {}", sig);
}

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

std::string LogTimeline::short_text(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n) + "...";
}

// Role and meaning of an event on a rank; kInfo for what is not a failure. What the
// pattern table says the line proves overrides the kind's default category and cause.
void LogTimeline::describe(const LogEvent& e, Fail& f) const {
  describe_kind(e, f);
  if (f.role == Role::kInfo) return;
  if (!e.cause.empty()) f.cause = e.cause;
  if (!e.category.empty()) f.category = e.category;
  // A line the table says proves a link fault (an NCCL socket that timed out or has no route to
  // its peer) is a cause of its own, not a peer's echo: a dead peer process closes or resets its
  // connections, it does not leave them unanswered.
  if (f.role == Role::kEcho && e.category == "network") {
    f.role = Role::kRoot;
    f.strength = 1;
    f.what = "network: " + f.what;
  }
}

void LogTimeline::describe_kind(const LogEvent& e, Fail& f) const {
  const std::string txt = short_text(e.text);
  switch (e.kind) {
    case LogKind::kCudaOom:
      f.role = Role::kRoot;
      f.category = "rank_exit";
      f.cause = "cuda_oom";
      f.strength = 3;
      f.what = "CUDA out of memory: " + txt;
      return;
    case LogKind::kOomKill:
      f.role = Role::kRoot;
      f.category = "rank_exit";
      f.cause = "oom";
      f.strength = 3;
      f.signal = 9;
      f.what = e.pid >= 0 ? fmt::format("OOM-killed by the kernel (pid {}{})", e.pid,
                                        e.word.empty() ? "" : ", " + e.word)
                          : "OOM-killed: " + txt;
      return;
    case LogKind::kCudaError:
      f.role = Role::kRoot;
      f.category = "rank_exit";
      f.cause = "cuda_error";
      f.strength = 3;
      f.what = "CUDA error: " + txt;
      return;
    case LogKind::kCrash:
      f.role = Role::kRoot;
      f.category = "rank_exit";
      f.cause = e.signal == 11 ? "segfault" : "crashed";
      f.strength = 3;
      f.what = fmt::format("crashed ({}): {}", signal_name(e.signal), txt);
      return;
    case LogKind::kTerminate:
      // A communication exception nobody caught is the collective's failure, not a crash.
      if (e.word.find("DistBackendError") != std::string::npos || e.word.find("IoException") != std::string::npos ||
          e.word.find("DistNetworkError") != std::string::npos || e.word.find("DistStoreError") != std::string::npos) {
        f.role = Role::kEcho;
        f.what = "aborted after a collective error: " + txt;
      } else {
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = "crashed";
        f.strength = 2;
        f.what = "std::terminate: " + txt;
      }
      return;
    case LogKind::kException:
      if (e.handled) return;  // context of the exception raised after it (kInfo)
      f.role = Role::kRoot;
      f.category = "rank_exit";
      f.cause = "exception";
      f.strength = 1;
      f.what = "exception: " + txt;
      return;
    case LogKind::kDataError:
      f.role = Role::kRoot;
      f.category = "data_loading";
      f.cause = "data_error";
      f.strength = 1;
      f.what = txt;
      return;
    case LogKind::kUsageError:
      f.role = Role::kRoot;
      f.category = "rank_exit";
      f.cause = "usage_error";
      f.strength = 1;
      f.what = txt;
      return;
    case LogKind::kDataLoaderKilled:
      f.role = Role::kRoot;
      f.category = "data_loading";
      f.cause = e.signal == 7 ? "shm_exhausted" : e.signal == 9 ? "oom" : "data_loader_crash";
      f.strength = 2;
      f.what = "DataLoader worker died: " + txt;
      return;
    case LogKind::kShmBusError:
      f.role = Role::kRoot;
      f.category = "data_loading";
      f.cause = "shm_exhausted";
      f.strength = 2;
      f.what = "DataLoader shared memory exhausted (/dev/shm): " + txt;
      return;
    case LogKind::kResourceLimit:
      f.role = Role::kRoot;
      f.category = "resource_limit";
      f.cause = "resource_limit";
      f.strength = 2;
      f.what = "a resource limit ended the job: " + txt;
      return;
    case LogKind::kDiskFull:
      f.role = Role::kRoot;
      f.category = "resource_limit";
      f.cause = "disk_full";
      f.strength = 2;
      f.what = "disk full: " + txt;
      return;
    case LogKind::kShmError:
      f.role = Role::kRoot;
      f.category = "resource_limit";
      f.cause = "nccl_shm";
      f.strength = 2;
      f.what = "NCCL could not create its shared-memory segment: " + txt;
      return;
    case LogKind::kWrongIfname:
      f.role = Role::kRoot;
      f.category = "network";
      f.cause = "wrong_ifname";
      f.strength = 2;
      f.what = "no usable network interface: " + txt;
      return;
    case LogKind::kIbError:
      f.role = Role::kRoot;
      f.category = "network";
      f.cause = "ib_error";
      f.strength = 1;
      f.what = "InfiniBand/RoCE transport error: " + txt;
      return;
    case LogKind::kAddressInUse:
      f.role = Role::kRoot;
      f.category = "rendezvous";
      f.cause = "address_in_use";
      f.strength = 1;
      f.what = txt;
      return;
    case LogKind::kDnsFailure:
      f.role = Role::kRoot;
      f.category = "rendezvous";
      f.cause = "dns_failure";
      f.strength = 1;
      f.what = txt;
      return;
    case LogKind::kStoreRefused:
      f.role = Role::kEcho;
      f.category = "rendezvous";
      f.cause = "connection_refused";
      f.what = txt;
      return;
    case LogKind::kStoreTimeout:
      f.role = Role::kEcho;
      f.category = "rendezvous";
      f.cause = "rendezvous_timeout";
      f.what = txt;
      return;
    case LogKind::kRendezvousError:
      f.role = Role::kEcho;
      f.category = "rendezvous";
      f.cause = "rendezvous_error";
      f.what = txt;
      return;
    case LogKind::kWatchdogTimeout:
      f.role = Role::kEcho;
      f.what = e.seq >= 0 ? fmt::format("watchdog timeout in {} SeqNum={}{} after {} ms",
                                        e.op.empty() ? "?" : e.op, e.seq,
                                        e.numel_in >= 0 ? fmt::format(" NumelIn={}", e.numel_in) : "",
                                        e.ran_ms >= 0 ? e.ran_ms : e.timeout_ms)
                          : "watchdog timeout: " + txt;
      return;
    case LogKind::kGlooTimeout:
      f.role = Role::kEcho;
      f.what = txt;
      return;
    case LogKind::kCommClosed:
    case LogKind::kNcclRemoteError:
    case LogKind::kNcclSystemError:
    case LogKind::kNcclError:
    case LogKind::kSocketError:
    case LogKind::kCommException:
    case LogKind::kCommAborted:
    case LogKind::kNcclAsyncFailed:
    case LogKind::kHeartbeatMonitor:
    case LogKind::kWatchdogRepeat:
    case LogKind::kChildFailed:
      f.role = Role::kEcho;
      f.what = txt;
      return;
    case LogKind::kSignalException:
      f.role = Role::kTeardown;
      f.what = fmt::format("received {} ({})", signal_name(e.signal), txt);
      return;
    case LogKind::kLauncherSignal:
      f.role = Role::kTeardown;
      f.what = fmt::format("the launcher sent {} (pid {}): teardown", e.word.empty() ? "a signal" : e.word, e.pid);
      return;
    case LogKind::kSrunTask:
      // srun's "task 0: Out Of Memory": Slurm's cgroup OOM handler killed the task (the step's
      // memory limit), the OOM kill itself, not an echo of one.
      if (e.word.find("Out Of Memory") != std::string::npos) {
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = "oom";
        f.strength = 3;
        f.signal = 9;
        f.what = "OOM-killed by Slurm's cgroup (" + txt + ")";
        return;
      }
      [[fallthrough]];
    case LogKind::kMpiExit:
      // "MPI_ABORT was invoked on rank N in communicator MPI_COMM_WORLD": the rank gave up on its own
      // (an uncaught error), and Open MPI kills the rest: a cause, as weak as an exception line (a
      // rank's own exception or crash printed before it is the story).
      if (e.kind == LogKind::kMpiExit && e.word == "MPI_ABORT") {
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = "nonzero_exit";
        f.strength = 1;
        f.what = "called MPI_Abort (" + txt + ")";
        return;
      }
      [[fallthrough]];
    case LogKind::kLauncherExit:
    case LogKind::kSignalReceived:
    case LogKind::kExitStatus:
      f.role = Role::kExit;
      exit_meaning(e.signal, e.code, f);
      f.what += fmt::format(" ({})", txt);
      return;
    default:
      f.role = Role::kInfo;
      return;
  }
}

// Exit statuses: a signal death is a root candidate; a plain non-zero code is an exit
// (root only when nothing else explains it).
void LogTimeline::exit_meaning(int signal, int code, Fail& f) {
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
    f.what = fmt::format("exited with code {}", code == kNoCode ? -1 : code);
  }
}

// A line that only init writes: the store, the interface, the communicator's setup.
bool LogTimeline::init_event(const LogEvent& e) {
  switch (e.kind) {
    case LogKind::kStoreTimeout:
    case LogKind::kStoreRefused:
    case LogKind::kRendezvousError:
    case LogKind::kWrongIfname:
    case LogKind::kShmError:
    case LogKind::kAddressInUse:
    case LogKind::kDnsFailure:
    case LogKind::kInitStep:
    case LogKind::kInitBegin:
      return true;
    default:
      break;
  }
  for (const char* w : {"init_process_group", "ncclCommInitRank", "setting up NCCL communicator", "ncclUniqueId",
                        "connectFullMesh", "Bootstrap"}) {
    if (e.text.find(w) != std::string::npos) return true;
  }
  return false;
}

}  // namespace hanglab::plainlog
