// classify_text(): what a plain log message means -- its LogKind and fields. Message kinds
// are tested most specific first (a DistBackendError whose text is a watchdog timeout is an
// echo, not a generic exception); see parse_parts.hpp.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "triage/logs/parse_parts.hpp"
#include "triage/logs/patterns.hpp"

namespace hanglab::logparse {

namespace {

// One family of messages each, tested in order; true when the line was read (its kind may stay
// kNone: a line known to mean nothing).

// Hanglab's own workloads (exact formats, cheap to test first).
bool workload_lines(sv m, LogLine& o) {
  // --- hanglab workloads (exact formats, cheap to test first)
  if (parse_harness_error(m, o)) return true;
  if (parse_legacy_error(m, o)) return true;
  if (starts(m, "done: ")) {
    long long s = 0;
    size_t e = read_int(m, 6, &s);
    if (e != npos) {
      o.kind = LogKind::kDone;
      o.step = static_cast<int>(s);
      if (e < m.size() && m[e] == '/') {
        long long tot = 0;
        if (read_int(m, e + 1, &tot) != npos) o.total_steps = static_cast<int>(tot);
      }
      return true;
    }
  }
  if (starts(m, "hanglab hook ")) return true;  // injected ground truth: never evidence
  // Slurm's own daemons talking to each other ("slurmstepd: error: Failed to send MESSAGE_TASK_EXIT:
  // Connection refused" once srun is gone after a cancel or preemption): no rendezvous store, no
  // rank's connection (facebookincubator/submitit#1613).
  {
    const sv t = trim(m);
    if ((starts(t, "slurmstepd") || starts(t, "srun: ") || starts(t, "slurmd")) && has(t, "Connection refused"))
      return true;
  }
  if (starts(m, "lingering after the training loop") || m == "final barrier") {
    o.kind = LogKind::kLeftLoop;
    return true;
  }
  if (starts(m, "data exhausted after ") || starts(m, "data loader exhausted after ")) {
    o.kind = LogKind::kDataExhausted;
    o.step = static_cast<int>(int_after(m, "after ", 0, false));
    o.total_steps = static_cast<int>(int_after(m, " of ", 0, false));
    return true;
  }
  if (starts(m, "process group ready")) {
    o.kind = LogKind::kInitDone;
    set_world(m, o);
    return true;
  }
  if (starts(m, "checkpoint at step ") && has(m, " saved")) {
    o.kind = LogKind::kCheckpointEnd;
    o.step = static_cast<int>(int_after(m, "step ", 0, false));
    return true;
  }
  if (starts(m, "eval at step ")) {
    o.kind = LogKind::kEvalEnd;
    o.step = static_cast<int>(int_after(m, "step ", 0, false));
    return true;
  }
  return false;
}

// PyTorch ProcessGroupNCCL's and c10d's own lines.
bool torch_c10d_lines(sv m, LogLine& o) {
  // --- PyTorch ProcessGroupNCCL
  if (has(m, "Watchdog caught collective operation timeout")) {
    o.kind = (has(m, "thread terminated with exception") || starts(trim(m), "what():")) ? LogKind::kWatchdogRepeat
                                                                                         : LogKind::kWatchdogTimeout;
    parse_workncll_fields(m, o);
    return true;
  }
  if (has(m, "Received a dump signal") || has(m, "dump signal from another rank")) {
    o.kind = LogKind::kDumpSignal;
    if (size_t k = m.find("from "); k != npos) {
      size_t q = skip_sp(m, k + 5);
      if (starts(m.substr(q), "rank ")) {
        long long v = 0;
        if (read_int(m, q + 5, &v) != npos) o.other_rank = bounded_rank(v);
      }
    }
    parse_work_status(m, o);
    return true;
  }
  if (has(m, "Heartbeat monitor timed out") || has(m, "watchdog got stuck for")) {
    o.kind = LogKind::kHeartbeatMonitor;
    return true;
  }
  if (has(m, " [missing ranks: ")) {
    // Horovod's stall check: "allreduce.avg_loss [missing ranks: 1]": the ranks that never
    // submitted the tensor its peers wait on (word "stall").
    o.kind = LogKind::kDesyncMissing;
    o.word = "stall";
    size_t p = m.find(" [missing ranks: ") + 17;
    const size_t e = m.find(']', p);
    while (e != npos && p < e) {
      long long v = 0;
      const size_t q = read_int(m, skip_sp(m, p), &v);
      if (q == npos || q > e) break;
      o.ranks.push_back(bounded_rank(v));
      p = q;
      while (p < e && (m[p] == ',' || m[p] == ' ')) ++p;
    }
    return true;
  }
  if (const size_t rr = m.find(" [ready ranks: "); rr != npos) {
    // Horovod before 0.13.6 listed the ranks that HAD submitted each stalled tensor
    // (operations.cc CheckForStalledTensors: "Stalled ops: <tensor> [ready ranks: 5, 6, 3], ...",
    // @v0.13.0): a rank below the highest ready one and not in the list is provably missing; the
    // ranks above it are unknown (the world is not in the line). The highest ready rank is a rank of
    // the job (other_rank, for the world's size).
    std::vector<int> ready;
    size_t p = rr + 15;
    const size_t e = m.find(']', p);
    while (e != npos && p < e) {
      long long v = 0;
      const size_t q = read_int(m, skip_sp(m, p), &v);
      if (q == npos || q > e) break;
      ready.push_back(bounded_rank(v));
      p = q;
      while (p < e && (m[p] == ',' || m[p] == ' ')) ++p;
    }
    std::sort(ready.begin(), ready.end());
    std::vector<int> gap;
    for (int r = 0; !ready.empty() && r < ready.back(); ++r)
      if (!std::binary_search(ready.begin(), ready.end(), r)) gap.push_back(r);
    if (!gap.empty()) {
      o.kind = LogKind::kDesyncMissing;
      o.word = "stall";
      o.other_rank = ready.back();
      o.ranks = std::move(gap);
      // The tensors' names: the word before each list ("Stalled ops: HorovodBroadcast_w_0 [ready
      // ...], ..."; one line, longer than an event keeps): the first that is no start-up broadcast of a
      // variable ("HorovodBroadcast_"), else the first.
      for (size_t k = rr; k != npos; k = m.find(" [ready ranks: ", k + 1)) {
        size_t b = k;
        while (b > 0 && m[b - 1] != ' ' && m[b - 1] != ':' && m[b - 1] != ',') --b;
        const sv name = m.substr(b, k - b);
        if (o.op.empty()) o.op = name;
        if (name.substr(0, 17) != "HorovodBroadcast_") {
          o.op = name;
          break;
        }
      }
      return true;
    }
  }
  if (has(m, "are the lagging ranks")) {
    o.kind = LogKind::kDesyncMissing;
    read_rank_list(m, m.find("ranks ["), o.ranks);
    return true;
  }
  if (has(m, "joined but didn't finish collective #") || has(m, "but didn't join collective #")) {
    o.kind = LogKind::kDesyncLagging;
    read_rank_list(m, 0, o.ranks);
    o.seq = int_after(m, "collective #", 0, false);
    return true;
  }
  if (has(m, "Detected mismatch between collectives on ranks")) {
    // "Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, ...), but Rank 2
    //  is running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[1] ...)"
    o.kind = LogKind::kCollMismatch;
    o.word = "fingerprint";
    for (size_t k = m.find("Rank "); k != npos; k = m.find("Rank ", k + 5)) {
      long long v = 0;
      const size_t e = read_int(m, k + 5, &v);
      if (e != npos && e < m.size() && m.compare(e, 4, " is ") == 0) o.ranks.push_back(bounded_rank(v));
    }
    o.seq = int_after(m, "SequenceNumber=", 0, false);
    return true;
  }
  if (has(m, "Running collective: CollectiveFingerPrint(")) {
    // DETAIL mode logs every collective a rank enters: its sequence number, op and tensor
    // shape. "TensorShape=[73]" is 73 elements; "[20, 10]" 200; a list of shapes or none: unknown.
    o.kind = LogKind::kCollStart;
    o.seq = int_after(m, "SequenceNumber=", 0, false);
    o.op = token_after(m, "OpType=", ",)");
    o.numel_in = shape_numel(m);
    return true;
  }
  if (has(m, "op.preamble.length <= op.nbytes")) {
    // Gloo received a message of another size than the buffer it posted for the same slot:
    // the two ranks ran different collectives.
    o.kind = LogKind::kCollMismatch;
    o.word = "size";
    return true;
  }
  if (has(m, "last enqueued") && (has(m, "last completed") || has(m, "work sequence id"))) {
    o.kind = LogKind::kWorkStatus;
    parse_work_status(m, o);
    return true;
  }
  if (has(m, "ProcessGroupNCCL initialization options") || has(m, "ProcessGroupNCCL initialized with")) {
    o.kind = LogKind::kPgInit;
    long long g = int_after(m, "global rank:", 0, false);
    if (g >= 0) o.other_rank = bounded_rank(g);
    long long sz = int_after(m, "size:", 0, false);
    if (sz > 0) o.world = bounded_world(sz);
    return true;
  }
  return false;
}

// A Python exception line (a traceback's last line, possibly rank-prefixed).
// torch.multiprocessing.spawn's parent reports a child it started that died: ProcessContext.join raises
// "process %d terminated with signal %s" / "process %d terminated with exit code %d"
// (torch/multiprocessing/spawn.py:201-214@2.15.0, ProcessExitedException; a plain Exception before 1.6).
// The number is the child's spawn index, its local rank; a launcher's notice of that death.
bool spawn_exit(sv m, LogLine& o) {
  const size_t k = m.find("process ");
  if (k == npos || (k > 0 && m[k - 1] != ' ')) return false;
  long long idx = -1;
  const size_t e = read_int(m, k + 8, &idx);
  if (e == npos || m.compare(e, 17, " terminated with ") != 0) return false;
  const sv rest = m.substr(e + 17);
  if (rest.compare(0, 7, "signal ") == 0) {
    o.signal = signal_from_name(rest.substr(7));
    if (!o.signal) return false;
  } else if (rest.compare(0, 10, "exit code ") == 0) {
    long long c = 0;
    if (read_int(rest, 10, &c) == npos) return false;
    o.code = static_cast<int>(c);
  } else {
    return false;
  }
  o.kind = LogKind::kLauncherExit;
  o.local_rank = bounded_rank(idx);
  return true;
}

bool exception_lines(sv m, LogLine& o) {
  if (spawn_exit(m, o)) return true;
  // --- exceptions (a Python traceback's last line, possibly rank-prefixed)
  if (const sv cls = exception_class(m); !cls.empty()) {
    o.word = cls;
    if (has(cls, "OutOfMemoryError") || has(m, "CUDA out of memory") || cuda_runtime_oom(m)) {
      o.kind = LogKind::kCudaOom;
    } else if (cls == "MemoryError" || host_alloc_failed(m)) {
      // CPython raises MemoryError when its allocator fails (PyErr_NoMemory): host memory, like the rest.
      o.kind = LogKind::kHostOom;
    } else if (const LogKind k = system_error_kind(m); k != LogKind::kNone) {
      o.kind = k;
    } else if (starts(cls, "nccl")) {  // ncclRemoteError:, ncclSystemError:, ncclInternalError: ...
      o.kind = cls == "ncclRemoteError"          ? LogKind::kNcclRemoteError
               : cls == "ncclSystemError"        ? LogKind::kNcclSystemError
               : cls == "ncclUnhandledCudaError" ? LogKind::kCudaError
                                                 : LogKind::kNcclError;
    } else if (has(m, "Unable to find address for") || has(m, "no socket interface found")) {
      o.kind = LogKind::kWrongIfname;
    } else if (has(m, "unhandled system error") && !has(m, "NCCL error")) {
      o.kind = LogKind::kNcclSystemError;
    } else if (has(cls, "ChildFailedError")) {
      o.kind = LogKind::kChildFailed;
    } else if (has(cls, "SignalException") || cls == "KeyboardInterrupt") {
      o.kind = LogKind::kSignalException;
      long long s = int_after(m, "got signal:", 0, false);
      o.signal = s > 0 ? static_cast<int>(s) : (cls == "KeyboardInterrupt" ? 2 : 0);
    } else if (has(cls, "DistStoreError") || has(m, "clients joined") || has(m, "client socket has timed out") ||
               has(m, "Socket Timeout")) {
      o.kind = LogKind::kStoreTimeout;
      if (size_t k = m.find(" clients joined"); k != npos) {
        size_t b = m.rfind(' ', k - 1);
        long long j = 0, w = 0;
        size_t e = read_int(m, b == npos ? 0 : b + 1, &j);
        if (e != npos && e < m.size() && m[e] == '/' && read_int(m, e + 1, &w) != npos) {
          o.joined = static_cast<int>(j);
          o.world = bounded_world(w);
        }
      }
    } else if (has(cls, "Rendezvous")) {
      o.kind = has(cls, "Timeout") ? LogKind::kStoreTimeout : LogKind::kRendezvousError;
      if (has(cls, "RendezvousClosedError")) o.word = "RendezvousClosedError";  // as below
      if (has(cls, "RendezvousConnectionError")) o.word = "RendezvousConnectionError";
    } else if (has(m, "unhandled cuda error") || (has(m, "CUDA error") && !comm_text(m))) {
      o.kind = LogKind::kCudaError;
    } else if (comm_text(m)) {
      // "RuntimeError: [...unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete"
      if (has(m, "Timed out waiting") && has(m, " operation to complete")) {
        o.kind = LogKind::kGlooTimeout;
        o.timeout_ms = int_after(m, "Timed out waiting ", 0, false);
      } else if (has(m, "remote process exited")) {
        o.kind = LogKind::kNcclRemoteError;
      } else if (has(m, "Connection closed by peer") || has(m, "Connection reset by peer") ||
                 (has(m, "Read error") && has(m, "pair.cc")) || has(m, "Broken pipe")) {
        o.kind = LogKind::kCommClosed;
      } else {
        o.kind = LogKind::kCommException;
      }
    } else if (has(m, "No space left on device")) {
      // ENOSPC on a shared-memory segment is a full /dev/shm, not a full disk (classify_host.cpp).
      o.kind = shm_enospc(m) ? LogKind::kShmBusError : LogKind::kDiskFull;
    } else if (dataloader_killed(m, o)) {
    } else if (has(m, "Address already in use")) {
      o.kind = LogKind::kAddressInUse;
    } else if (has(m, "Connection refused") || has(m, "failed to connect")) {
      o.kind = LogKind::kStoreRefused;
    } else if (resolver_failure(m)) {
      o.kind = LogKind::kDnsFailure;
    } else if (has(m, "insufficient shared memory")) {
      o.kind = LogKind::kShmBusError;
    } else {
      o.kind = LogKind::kException;
    }
    return true;
  }
  return false;
}

// c10::Error's backtrace header "Exception raised from <function> at <file>:<line> (most recent call first):"
// (c10/util/Exception.cpp) naming ProcessGroupNCCL's watchdog thread: the exception the watchdog throws to
// take the process down (TORCH_NCCL_ASYNC_ERROR_HANDLING), then std::terminate's SIGABRT. The function by
// version: workCleanupLoop (1.x), ncclCommWatchdog (2.0-2.2), watchdogHandler (2.3-2.6), and in 2.15's
// libtorch_cuda.so Watchdog::runLoop, checkTimeout (a work's timeout) and WorkNCCL::handleException.
static bool watchdog_throw(sv m) {
  if (!starts(m, "Exception raised from ") || !has(m, "ProcessGroupNCCL.cpp")) return false;
  const sv fn = m.substr(22, m.find(' ', 22) == npos ? sv::npos : m.find(' ', 22) - 22);
  for (sv w : {sv("workCleanupLoop"), sv("ncclCommWatchdog"), sv("watchdogHandler"), sv("runLoop"),
               sv("checkTimeout"), sv("handleException")})
    if (fn == w) return true;
  return false;
}

// NCCL's own lines and the errors it names.
bool nccl_lines(sv m, LogLine& o) {
  if (has(m, "NCCL communicator was aborted") || has(m, "ProcessGroupNCCL aborted") ||
      has(m, "communicator was aborted")) {
    o.kind = LogKind::kCommAborted;
    return true;
  }
  if (has(m, "Some NCCL operations have failed or timed out") || has(m, "taking the entire process down") ||
      watchdog_throw(m)) {
    o.kind = LogKind::kNcclAsyncFailed;
    return true;
  }

  // --- NCCL's own lines ("host:pid:tid [dev] NCCL WARN ...")
  if (const size_t nk = m.find("NCCL WARN"); nk != npos || has(m, "NCCL INFO")) {
    if (has(m, "no socket interface found") || has(m, "No socket interface") || has(m, "SOCKET_IFNAME")) {
      o.kind = LogKind::kWrongIfname;
    } else if ((has(m, "shared memory") || has(m, "/dev/shm") || has(m, "shm_")) &&
               (ihas(m, "error") || ihas(m, "unable") || ihas(m, "fail") || ihas(m, "cannot"))) {
      o.kind = LogKind::kShmError;
      o.world = -1;
      long long size = int_after(m, "(size ", 0, false);
      o.numel_in = size;
    } else if (has(m, "NET/IB") && !has(m, "collective mismatch error") &&
               (ihas(m, "error") || ihas(m, "fail") || has(m, "IBV_WC") || ihas(m, "retry"))) {
      // (NET/IB's "collective mismatch error": the catalogue's, which says what it cannot tell.)
      o.kind = LogKind::kIbError;
    } else if (has(m, "NET/Socket") && (ihas(m, "error") || ihas(m, "fail") || ihas(m, "closed"))) {
      o.kind = LogKind::kSocketError;
    } else if (has(m, "Call to connect returned")) {
      return true;  // NCCL retrying a connect (socket.h, misc/socket.cc): no failure until it gives up
    } else if (nk != npos && has(m, "Connect to ") && has(m, " failed")) {
      // NCCL's own socket connect ("Connect to %s failed : %s", include/socket.h@2.4.8;
      // "socketStartConnect: Connect to ..." in 2.1x): its link to a peer, no rendezvous store.
      o.kind = LogKind::kSocketError;
      o.category = "network";
      o.cause = "connection_failed";
    } else if (has(m, "Init COMPLETE")) {
      o.kind = LogKind::kInitDone;
      if (size_t k = m.find(" rank "); k != npos) {
        long long r = 0;
        if (read_int(m, k + 6, &r) != npos) o.other_rank = bounded_rank(r);
      }
      long long n = int_after(m, " nranks ", 0, false);
      if (n > 0) o.world = bounded_world(n);
    } else if ((has(m, "Abort COMPLETE") || has(m, "Destroy COMPLETE")) && has(m, " nranks ")) {
      // "comm 0x56.. rank 5 nranks 8 cudaDev 1 busId a7000 - Abort COMPLETE": the size of the
      // communicator, not a sign that init had finished (an abort can end a failed init).
      const long long n = int_after(m, " nranks ", 0, false);
      if (n > 0) {
        o.kind = LogKind::kWorldSize;
        o.world = bounded_world(n);
      }
    } else if (nk == npos && has(m, " opCount ") && has(m, "[nranks=")) {
      // NCCL_DEBUG_SUBSYS=COLL's trace of each collective (enqueue.cc ncclEnqueueCheck:
      // "%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p
      // [nranks=%d] stream %p"): the size of that communicator, so the world is at least that.
      const long long n = int_after(m, "[nranks=", 0, false);
      if (n > 0) {
        o.kind = LogKind::kWorldSize;
        o.world = bounded_world(n);
      }
    } else if (nk != npos && (has(m, "remote process exited") || has(m, "Connection closed"))) {
      o.kind = LogKind::kNcclRemoteError;
    } else if (nk != npos && (ihas(m, "error") || ihas(m, "fail"))) {
      o.kind = LogKind::kNcclError;
    }
    if (o.kind != LogKind::kNone) return true;
  }
  if (has(m, "remote process exited or there was a network error")) {
    o.kind = LogKind::kNcclRemoteError;
    return true;
  }
  if (has(m, "unhandled system error")) {
    o.kind = LogKind::kNcclSystemError;
    return true;
  }
  if (has(m, "unhandled cuda error")) {
    o.kind = LogKind::kCudaError;
    return true;
  }
  return false;
}

// Gloo / TCP, the store, rendezvous and interfaces.
bool gloo_store_lines(sv m, LogLine& o) {
  // --- Gloo / TCP
  if (has(m, "Timed out waiting") && (has(m, " operation to complete") || has(m, "ms for"))) {
    o.kind = LogKind::kGlooTimeout;
    o.timeout_ms = int_after(m, "Timed out waiting ", 0, false);
    o.word = has(m, "for recv") ? sv("recv") : has(m, "for send") ? sv("send") : sv();
    return true;
  }
  if (has(m, "Connection closed by peer") || has(m, "Connection reset by peer") || has(m, "Broken pipe") ||
      (has(m, "Read error") && has(m, "pair.cc")) || has(m, "Connection closed by remote")) {
    o.kind = LogKind::kCommClosed;
    return true;
  }

  // --- store / rendezvous / interfaces
  if (has(m, "no socket interface found") || has(m, "Unable to find address for") ||
      (has(m, "SOCKET_IFNAME") && (has(m, "No such device") || ihas(m, "not found"))) ||
      // setsockopt(SO_BINDTODEVICE) fails with ENODEV when the named interface does not exist (socket(7)).
      (has(m, "SO_BINDTODEVICE") && has(m, "No such device"))) {
    o.kind = LogKind::kWrongIfname;
    return true;
  }
  if (has(m, "client socket has timed out") || has(m, "Socket Timeout") || has(m, "clients joined") ||
      has(m, "waiting for clients") || has(m, "Timed out initializing process group")) {
    o.kind = LogKind::kStoreTimeout;
    if (size_t k = m.find(" clients joined"); k != npos) {
      size_t b = m.rfind(' ', k - 1);
      long long j = 0, w = 0;
      size_t e = read_int(m, b == npos ? 0 : b + 1, &j);
      if (e != npos && e < m.size() && m[e] == '/' && read_int(m, e + 1, &w) != npos) {
        o.joined = static_cast<int>(j);
        o.world = bounded_world(w);
      }
    }
    return true;
  }
  if (has(m, "Address already in use")) {
    o.kind = LogKind::kAddressInUse;
    return true;
  }
  if (has(m, "client socket has failed to connect") || (has(m, "Connection refused") && ihas(m, "connect"))) {
    o.kind = LogKind::kStoreRefused;
    return true;
  }
  if (resolver_failure(m)) {
    o.kind = LogKind::kDnsFailure;
    return true;
  }
  if (has(m, "RendezvousTimeoutError") || has(m, "RendezvousClosedError") || has(m, "RendezvousConnectionError")) {
    o.kind = has(m, "Timeout") ? LogKind::kStoreTimeout : LogKind::kRendezvousError;
    // Which one: a closed rendezvous (torch/distributed/elastic/rendezvous/dynamic_rendezvous.py and
    // etcd_rendezvous.py raise RendezvousClosedError once an agent of the run id shut it down) means
    // another thing than one that could not be reached.
    if (has(m, "RendezvousClosedError")) o.word = "RendezvousClosedError";
    // c10d_rendezvous_backend.py's _create_tcp_store raises RendezvousConnectionError ("The connection
    // to the C10d store has failed") when its TCPStore client never connected: the store unreached,
    // not agents that timed out waiting for each other.
    if (has(m, "RendezvousConnectionError")) o.word = "RendezvousConnectionError";
    return true;
  }
  return false;
}

// Torchelastic's notices and failure summary.
bool torchelastic_lines(sv m, LogLine& o) {
  // --- launchers: torchelastic, Open MPI, Slurm
  if (has(m, "closing signal SIG")) {
    o.kind = LogKind::kLauncherSignal;
    o.pid = int_after(m, "Sending process ", 0, false);
    const size_t k = m.find("closing signal ");
    o.word = token_after(m.substr(k), "closing signal ", " \t.");
    if (o.word.empty()) o.word = m.substr(k + 15);
    o.signal = signal_from_name(o.word);
    return true;
  }
  if (has(m, "failed (exitcode: ")) {
    o.kind = LogKind::kLauncherExit;
    long long c = int_after(m, "failed (exitcode: ", 0, false);
    if (c < 0 && c > -65) {
      o.signal = static_cast<int>(-c);
    }
    o.code = static_cast<int>(c);
    o.local_rank = bounded_rank(int_after(m, "local_rank: ", 0, false));
    o.pid = int_after(m, "(pid: ", 0, false);
    return true;
  }
  // glog's failure signal handler writes DumpTimeInfo's "*** Aborted at <t> (unix time) try \"date -d @<t>\" if
  // you are using GNU date ***" first, then DumpSignalInfo's "*** SIGSEGV (@0x8) received by PID ...", then the
  // stack, then re-raises the signal (google/glog src/signalhandler.cc:162, :196, :299, :310 @v0.3.5). It is
  // installed only for SIGSEGV, SIGILL, SIGFPE, SIGABRT, SIGBUS and SIGTERM (kFailureSignals, :64-70): the header
  // alone says the process is dying of one of them, not which (a paste often keeps only the first line per rank).
  if (starts(trim(m), "*** Aborted at ") && has(m, " (unix time) ")) {
    o.kind = LogKind::kCrash;
    o.signal = 0;
    o.word = "glog_failure_header";
    return true;
  }
  if (starts(trim(m), "*** SIG")) {  // glog's failure signal handler: "*** SIGSEGV (@0x0) received by PID ..."
    // SIGTERM is among glog's failure signals, but it is a request to stop that some process sent (a launcher
    // passing on Ctrl-C, a teardown, a scheduler; "from PID S" names the sender, 0 one outside the namespace):
    // the process was stopped, it did not crash.
    if (signal_from_name(m) == 15) {
      o.kind = LogKind::kSignalReceived;
      o.signal = 15;
      o.pid = int_after(m, "received by PID ", 0, false);
      return true;
    }
    o.kind = LogKind::kCrash;
    o.signal = signal_from_name(m);
    if (!o.signal) o.signal = 6;
    o.pid = int_after(m, "received by PID ", 0, false);
    return true;
  }
  if (has(m, ") received by PID ")) {
    o.kind = LogKind::kSignalReceived;
    o.signal = static_cast<int>(int_after(m, "Signal ", 0, false));
    o.pid = int_after(m, "received by PID ", 0, false);
    return true;
  }
  if (has(m, "ChildFailedError")) {
    o.kind = LogKind::kChildFailed;
    return true;
  }
  if (has(m, "Root Cause (first observed failure)")) {
    o.kind = LogKind::kSummaryHeader;
    o.word = "root";
    return true;
  }
  {
    const sv tm = trim(m);
    if (tm == "Failures:") {
      o.kind = LogKind::kSummaryHeader;
      o.word = "failures";
      return true;
    }
    if (tm.size() >= 4 && tm[0] == '[' && tm[tm.size() - 1] == ':' && tm[tm.size() - 2] == ']') {
      long long v = 0;
      if (read_int(tm, 1, &v) == tm.size() - 2) {
        o.kind = LogKind::kSummaryEntry;
        o.other_rank = bounded_rank(v);
        return true;
      }
    }
    if (tm.size() >= 10 && (tm.find_first_not_of('=') == npos || tm.find_first_not_of('-') == npos)) {
      o.kind = LogKind::kSummaryEnd;
      return true;
    }
    static const char* kFields[] = {"time", "host", "rank", "exitcode", "error_file", "traceback"};
    for (const char* f : kFields) {
      const size_t n = std::strlen(f);
      if (tm.size() > n && tm.compare(0, n, f) == 0 && (tm[n] == ' ' || tm[n] == ':')) {
        size_t q = skip_sp(tm, n);
        if (q < tm.size() && tm[q] == ':') {
          // torchrun's rank field is always "rank: N (local_rank: M)" (errors/__init__.py
          // _FAILURE_FORMAT_TEMPLATE, torch 1.9 "  rank: ${rank} (local_rank: ${local_rank})" to
          // 2.15 "  rank      : ..."): a program's own "rank: 2, memory allocated: 0" is no field.
          if (std::strcmp(f, "rank") == 0 && !has(tm.substr(q), "(local_rank:")) return false;
          o.kind = LogKind::kSummaryField;
          o.word = tm.substr(0, n);
          o.where = trim(tm.substr(q + 1));
          return true;
        }
      }
    }
  }
  return false;
}

// Open MPI's and Slurm's notices.
bool mpi_slurm_lines(sv m, LogLine& o) {
  if (has(m, "mpirun noticed that process rank ")) {
    o.kind = LogKind::kMpiExit;
    o.other_rank = bounded_rank(int_after(m, "process rank ", 0, false));
    o.pid = int_after(m, "with PID ", 0, false);
    o.host = token_after(m, "on node ", " \t");
    if (has(m, "exited on signal")) {
      o.signal = static_cast<int>(int_after(m, "exited on signal ", 0, false));
    } else {
      long long c = int_after(m, "exit code ", 0, false);
      o.code = c >= 0 ? static_cast<int>(c) : kNoCode;
    }
    return true;
  }
  if (has(m, "Process name: [[")) {
    o.kind = LogKind::kMpiProcessName;
    const size_t k = m.find("Process name: [[");
    const size_t close = m.find("]", k + 16);
    const size_t comma = m.find(',', k + 16);
    if (close != npos && comma != npos && comma < close) {
      const size_t comma2 = m.find(',', comma + 1);
      long long v = 0;
      if (comma2 != npos && read_int(m, comma2 + 1, &v) != npos) o.other_rank = bounded_rank(v);
    }
    return true;
  }
  if (starts(trim(m), "srun: error: ") && (has(m, ": task ") || has(m, ": tasks "))) {
    o.kind = LogKind::kSrunTask;
    const sv rest = trim(m).substr(13);
    const size_t colon = rest.find(':');
    if (colon != npos) o.host = rest.substr(0, colon);
    const bool plural = !has(m, ": task ");
    const size_t k = m.find(plural ? ": tasks " : ": task ");
    const size_t list_at = k + (plural ? 8 : 7);
    o.other_rank = bounded_rank(int_after(m, plural ? ": tasks " : ": task ", 0, false));
    if (plural) {
      // "tasks 0,2-3: Terminated": every task of the list, in o.ranks.
      const size_t end = m.find(':', list_at);
      const sv list = m.substr(list_at, end == npos ? npos : end - list_at);
      size_t i = 0;
      while (i < list.size()) {
        long long a = 0, b = 0;
        const size_t after_a = read_int(list, i, &a);
        if (after_a == npos) break;
        b = a;
        size_t next = after_a;
        if (next < list.size() && list[next] == '-') {
          const size_t after_b = read_int(list, next + 1, &b);
          if (after_b == npos) break;
          next = after_b;
        }
        for (long long r = a; r <= b && r - a < 65536; ++r)
          if (bounded_rank(r) >= 0) o.ranks.push_back(static_cast<int>(r));
        if (next >= list.size() || list[next] != ',') break;
        i = next + 1;
      }
    }
    const size_t c2 = m.find(": ", list_at);
    if (c2 != npos) {
      const sv what = m.substr(c2 + 2);
      o.word = what;
      if (has(what, "exit code")) {
        o.code = static_cast<int>(int_after(what, "exit code", 0, false));
      } else {
        o.signal = signal_from_name(what);
      }
    }
    return true;
  }
  if (has(m, "oom_kill event") || has(m, "oom-kill event")) {
    o.kind = LogKind::kOomKill;
    return true;
  }
  return false;
}

}  // namespace

// Texts that the C library and the CUDA runtime print for one error whatever program passes them
// on: glibc's strerror (and Python's OSError "[Errno N] <strerror>", libuv's "EADDRINUSE" names in
// c10d's socket errors) and cudaGetErrorString. The program around them (a DataLoader, torch.save,
// set_device, TCPStore) only adds where; the error says why. kNone when the line has none of them.
LogKind system_error_kind(sv m) {
  // EMFILE "Too many open files", ENFILE "Too many open files in system".
  if (has(m, "Too many open files") || has(m, "[Errno 24]") || has(m, "[Errno 23]")) return LogKind::kFdExhausted;
  // cudaErrorInvalidDevice (also NCCL's "Cuda failure 'invalid device ordinal'").
  if (ihas(m, "invalid device ordinal")) return LogKind::kInvalidDevice;
  // EADDRINUSE: glibc's "Address already in use", libuv's name and lower-case message.
  if (ihas(m, "address already in use") || has(m, "EADDRINUSE") || has(m, "[Errno 98]")) return LogKind::kAddressInUse;
  return LogKind::kNone;
}

// cudaErrorMemoryAllocation through c10's CUDA check: "CUDA error: " + cudaGetErrorString(err)
// (c10/cuda/CUDAException.cpp:29-31@0e4c6cd), whose text for that error is "out of memory"; the
// same runtime error is a CUDA OOM whichever check printed it.
bool cuda_runtime_oom(sv m) {
  return has(m, "CUDA error: out of memory") || has(m, "cudaErrorMemoryAllocation");
}

// lm-evaluation-harness runs each request type of its tasks through the model on every rank,
// announcing it with `eval_logger.info(f"Running {reqtype} requests")` (lm_eval/evaluator.py,
// evaluate()): reqtype is loglikelihood, loglikelihood_rolling, generate_until (greedy_until before
// 0.4). An evaluation under way on the writing rank.
static bool lm_eval_requests(sv m) {
  const size_t k = m.find("Running ");
  if (k == npos) return false;
  for (sv t : {sv("loglikelihood requests"), sv("loglikelihood_rolling requests"), sv("generate_until requests"),
               sv("greedy_until requests")})
    if (m.compare(k + 8, t.size(), t) == 0) return true;
  return false;
}

bool classify_text(sv m, LogLine& o) {
  // The families in the order they are tested: the most specific first.
  for (const auto part : {workload_lines, argparse_usage_error, torch_c10d_lines, exception_lines, nccl_lines,
                          gloo_store_lines, torchelastic_lines, agent_layout_lines, mpi_slurm_lines, host_lines})
    if (part(m, o)) return true;
  // --- exit statuses
  {
    long long c = -1;
    bool found = false;
    static const char* kKeys[] = {"exit code", "Exit Code", "exit status", "exitcode", "exited with code",
                                  "return code =", "returned exit code"};
    for (const char* key : kKeys) {
      const size_t k = m.find(key);
      if (k == npos) continue;
      size_t q = k + std::strlen(key);
      while (q < m.size() && (m[q] == ' ' || m[q] == ':' || m[q] == '=' || m[q] == '\t')) ++q;
      if (read_int(m, q, &c) != npos) {
        found = true;
        break;
      }
    }
    if (found) {
      o.kind = LogKind::kExitStatus;
      if (c < 0 && c > -65) {
        o.signal = static_cast<int>(-c);
      }
      o.code = static_cast<int>(c);
      return true;
    }
  }

  // --- phases
  if (ihas(m, "saving checkpoint") || ihas(m, "saving model checkpoint") || ihas(m, "save_checkpoint") ||
      ihas(m, "writing checkpoint") || saving_checkpoint(m)) {
    o.kind = LogKind::kCheckpointBegin;
    return true;
  }
  if (ihas(m, "checkpoint saved") || ihas(m, "saved checkpoint") || (ihas(m, "checkpoint") && ihas(m, " saved "))) {
    o.kind = LogKind::kCheckpointEnd;
    return true;
  }
  if (ihas(m, "running validation") || ihas(m, "running evaluation") || ihas(m, "start evaluation") ||
      ihas(m, "starting validation") || ihas(m, "starting evaluation") || istarts(m, "evaluating") ||
      lm_eval_requests(m)) {
    o.kind = LogKind::kEvalBegin;
    return true;
  }
  if (ihas(m, "validation loss") || ihas(m, "eval_loss") || ihas(m, "evaluation finished") ||
      ihas(m, "validation finished")) {
    o.kind = LogKind::kEvalEnd;
    return true;
  }
  if (ihas(m, "waiting for data") || ihas(m, "loading shard") || ihas(m, "reading shard") ||
      ihas(m, "fetching batch")) {
    o.kind = LogKind::kDataWait;
    return true;
  }
  // HF Trainer's end-of-training metrics, logged once after its loop (trainer.py
  // _inner_training_loop: metrics = speed_metrics("train", ...); self.log(metrics), printed as a
  // dict by ProgressCallback/PrinterCallback): {'train_runtime': ..., 'train_loss': ...}. Its
  // evaluations log 'eval_runtime' instead, which is not this.
  if (has(m, "'train_runtime':") || has(m, "\"train_runtime\":") || ihas(m, "training completed") ||
      ihas(m, "training finished") || ihas(m, "finished training") || ihas(m, "training done")) {
    o.kind = LogKind::kDone;
    return true;
  }
  if (has(m, "Completed store-based barrier") || ihas(m, "process group initialized") ||
      ihas(m, "init_process_group done")) {
    o.kind = LogKind::kInitDone;
    set_world(m, o);
    return true;
  }
  set_world(m, o);
  if (o.world < 0) {
    long long n = int_after(m, "WORLD_SIZE=", 0, false);
    if (n > 0) o.world = bounded_world(n);
  }
  if (o.world > 0) o.kind = LogKind::kWorldSize;
  return o.kind != LogKind::kNone;
}

}  // namespace hanglab::logparse
