// classify_host.cpp: what a message of the host means (classify_text's last family): the kernel and
// container runtime, data loading, crashes, storage, CUDA.
#include <string>

#include "triage/logs/parse_parts.hpp"

namespace hanglab::logparse {

// A host-memory allocation of the process's own that failed (not a kill: the process reports it, then
// raises or aborts): libstdc++'s operator new throws std::bad_alloc, whose what() is "std::bad_alloc"
// (libstdc++-v3/libsupc++/new_handler.cc bad_alloc::what); ATen's CPU allocator's enforce "DefaultCPUAllocator:
// can't allocate memory: you tried to allocate N bytes. Error code 12 (Cannot allocate memory)"
// (c10/core/impl/alloc_cpu.cpp alloc_cpu()@0803da82). The libstdc++ terminate handler's line naming the
// exception is kTerminate (its word says bad_alloc; logs/meaning.cpp).
bool host_alloc_failed(sv m) {
  return has(m, "std::bad_alloc") || has(m, "DefaultCPUAllocator: can't allocate memory");
}

// ENOSPC writing a shared-memory object is a full /dev/shm (a tmpfs), not a full disk: a path under
// /dev/shm, or ATen's MapAllocator extending a segment by writing its last byte, "unable to write to file
// <NAME>: No space left on device (28)" (aten/src/ATen/MapAllocator.cpp:310@9de0cafe), NAME a shm_open name
// such as "/torch_<pid>_<rand>_<n>" (NewProcessWideShmHandle, :35): one leading '/' and no other, which
// shm_open requires and a file path lacks. hanglab's loader writes the same for its segments
// (workloads/loop/loader.cpp). PyTorch's "unable to allocate shared memory(shm) for file <...>" says so itself.
bool shm_enospc(sv m) {
  if (!has(m, "No space left on device")) return false;
  if (has(m, "shared memory") || has(m, "/dev/shm/")) return true;
  const size_t k = m.find("unable to write to file </");
  if (k == npos) return false;
  const size_t name = k + 25;  // the '/' that starts the name
  const size_t close = m.find('>', name);
  return close != npos && close > name + 1 && m.substr(name + 1, close - name - 1).find('/') == npos;
}

// The kernel and container runtime, data loading, crashes, storage, CUDA.
bool dataloader_killed(sv m, LogLine& o) {
  const bool worker = has(m, "DataLoader worker");
  const bool process = has(m, "DataLoader process (pid");  // Paddle's
  if (!(worker && (has(m, "killed by signal") || has(m, "exited unexpectedly"))) &&
      !(process && has(m, "killed by signal")))
    return false;
  o.kind = LogKind::kDataLoaderKilled;
  if (size_t k = m.find("killed by signal"); k != npos) o.signal = signal_from_name(m.substr(k + 16));
  o.pid = int_after(m, "(pid ", 0, false);
  return true;
}

bool host_lines(sv m, LogLine& o) {
  // --- kernel and container runtime
  if ((has(m, "Killed process ") && (ihas(m, "out of memory") || ihas(m, "oom"))) || has(m, "oom-kill:")) {
    o.kind = LogKind::kOomKill;
    long long pid = int_after(m, "Killed process ", 0, false);
    if (pid < 0) pid = int_after(m, ",pid=", 0, false);
    o.pid = pid;
    if (size_t k = m.find("Killed process "); k != npos) {
      const size_t open = m.find('(', k);
      const size_t close = m.find(')', k);
      if (open != npos && close != npos && close > open) o.word = m.substr(open + 1, close - open - 1);
    } else if (size_t k2 = m.find(",task="); k2 != npos) {
      o.word = token_after(m.substr(k2), ",task=", ",");
    }
    return true;
  }
  if (has(m, "OOMKilled")) {
    o.kind = LogKind::kOomKill;
    return true;
  }
  if (has(m, "oom_reaper") || has(m, "invoked oom-killer")) return true;

  // --- data loading, crashes, storage
  if (dataloader_killed(m, o)) return true;
  if (has(m, "Unexpected bus error encountered in worker") || has(m, "insufficient shared memory")) {
    o.kind = LogKind::kShmBusError;
    return true;
  }
  if (has(m, "terminate called after throwing an instance of")) {
    o.kind = LogKind::kTerminate;
    o.word = token_after(m, "instance of '", "'");
    return true;
  }
  if (has(m, "Traceback (most recent call last)")) {
    o.kind = LogKind::kTraceback;
    return true;
  }
  // After "terminate called after throwing an instance of 'std::bad_alloc'": its what() line, or the
  // text a C++ program's own handler prints.
  if (host_alloc_failed(m)) {
    o.kind = LogKind::kHostOom;
    return true;
  }
  if (has(m, "Segmentation fault") || has(m, "(core dumped)") || starts(trim(m), "Bus error") ||
      has(m, "Fatal Python error") || has(m, "Illegal instruction") || has(m, "Floating point exception")) {
    o.kind = LogKind::kCrash;
    o.signal = signal_from_name(m);
    if (!o.signal) o.signal = 6;
    return true;
  }
  // The shell's notice of a child killed by SIGKILL: "Killed" alone, or bash's
  // "line 28:  8156 Killed   python3 main.py".
  if (trim(m) == "Killed" || (has(m, ": line ") && has(m, " Killed "))) {
    o.kind = LogKind::kExitStatus;
    o.signal = 9;
    return true;
  }
  if (has(m, "No space left on device")) {
    o.kind = shm_enospc(m) ? LogKind::kShmBusError : LogKind::kDiskFull;
    return true;
  }
  if (const LogKind k = system_error_kind(m); k != LogKind::kNone) {
    o.kind = k;
    return true;
  }
  if (has(m, "Stale file handle") || has(m, "not responding, still trying") || has(m, "Input/output error") ||
      has(m, "Remote I/O error") || (has(m, "blocked for more than") && has(m, "seconds"))) {
    o.kind = LogKind::kStorageError;
    return true;
  }
  if (has(m, "CUDA out of memory") || cuda_runtime_oom(m)) {
    o.kind = LogKind::kCudaOom;
    return true;
  }
  if (has(m, "CUDA error") || (has(m, "NVRM") && has(m, "Xid"))) {
    o.kind = LogKind::kCudaError;
    return true;
  }
  return false;
}

}  // namespace hanglab::logparse
