// records/message_facts.cpp: a run record's message -> TextFacts (see message_facts.hpp).
#include "triage/records/message_facts.hpp"

#include <csignal>

#include "exit_codes.hpp"
#include "triage/logs/parse.hpp"
#include "triage/logs/scan.hpp"

namespace hanglab {

namespace {

using logparse::has;
using logparse::ihas;
using logparse::sv;
constexpr size_t npos = sv::npos;

// The cause the plain-log classifier reads in the message (logs/classify_text.cpp,
// classify_host.cpp, the pattern table), in the reasoner's words.
std::string classified_cause(const LogLine& l) {
  switch (l.kind) {
    case LogKind::kCudaOom: return "cuda_oom";
    case LogKind::kOomKill: return "oom";
    case LogKind::kShmBusError: return "shm_exhausted";
    // PyTorch's report of a DataLoader worker killed by SIGBUS (torch/csrc/DataLoader.cpp,
    // _error_if_any_worker_fails) adds "It is possible that dataloader's workers are out of shared
    // memory": a worker's SIGBUS is a full /dev/shm.
    case LogKind::kDataLoaderKilled: return l.signal == SIGBUS ? "shm_exhausted" : "";
    default: return "";
  }
}

// The word "OOM" ("OOM killer", "CUDA OOM"), not inside another word ("room", "bloom").
bool oom_word(sv m) {
  for (size_t k = logparse::ifind(m, "oom"); k != npos; k = logparse::ifind(m, "oom", k + 1)) {
    const bool before = k > 0 && logparse::alpha(m[k - 1]);
    const bool after = k + 3 < m.size() && logparse::alpha(m[k + 3]);
    if (!before && !after) return true;
  }
  return false;
}

// Texts the classifier does not read as an out-of-memory: libstdc++'s what() of a failed operator
// new ("std::bad_alloc", what a C++ rank's exception handler prints), the words "out of memory" of
// any allocator (the kernel's "Memory cgroup out of memory", a C library's or CUDA runtime's error
// quoted inside a longer exception text) and the word OOM.
bool host_oom_text(sv m) { return ihas(m, "bad_alloc") || ihas(m, "out of memory") || oom_word(m); }

// ENOSPC writing a shared-memory segment: PyTorch's shared-memory allocator names the segment in
// "unable to write to file </torch_..>: No space left on device (28)" (aten MapAllocator.cpp's
// "unable to write to file <%s>" with a /dev/shm name), and hanglab's loader writes the same for
// its segments (workloads/loop/loader.cpp). The classifier reads it as a full disk (kDiskFull).
bool shm_enospc(const LogLine& l, sv m) {
  return l.kind == LogKind::kDiskFull && (ihas(m, "/dev/shm") || has(m, "</"));
}

// Gloo's connect error: "timed out connecting: SO_ERROR: No route to host, remote=[10.230.7.2]:33193"
// (gloo/transport/tcp/pair.cc); the kernel's words for a destination no interface leads to.
bool unreachable_text(sv m) {
  return ihas(m, "no route to host") || ihas(m, "network is unreachable") || ihas(m, "timed out connecting");
}

std::string remote_addr(sv m) {
  const size_t p = m.find("remote=[");
  if (p == npos) return "";
  const size_t q = m.find(']', p + 8);
  return q == npos ? "" : std::string(m.substr(p + 8, q - p - 8));
}

// hanglab's rendezvous timeout (workloads/backends/c10d/process_group.cpp, nccl/id_exchange.cpp):
// "rendezvous timed out after 4000 ms: 3/4 ranks joined (missing ranks: 1,3)".
std::vector<int> missing_ranks(sv m) {
  std::vector<int> out;
  const size_t p = logparse::ifind(m, "missing ranks:");
  if (p == npos) return out;
  size_t i = p + 14;
  while (i < m.size()) {
    while (i < m.size() && (m[i] == ' ' || m[i] == ',')) ++i;
    if (i >= m.size() || !logparse::dig(m[i])) break;
    long long v = 0;
    while (i < m.size() && logparse::dig(m[i])) {
      if (v < 1000000000) v = v * 10 + (m[i] - '0');
      ++i;
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// The store host a message names: c10d's "... while trying to connect to (HOST, PORT)"
// (torch/csrc/distributed/c10d/socket.cpp) or the workloads' start line "master HOST:PORT".
std::string master_host(sv m) {
  size_t p = m.find("connect to (");
  if (p != npos) {
    p += 12;
    const size_t q = m.find(',', p);
    if (q != npos) return std::string(m.substr(p, q - p));
  }
  p = m.find("master ");
  if (p != npos) {
    p += 7;
    const size_t q = m.find(':', p);
    if (q != npos && q - p < 64) return std::string(m.substr(p, q - p));
  }
  return "";
}

// A socket interface that does not exist, in the words the classifier does not read: "failed to find
// interface" and the kernel's ENODEV "No such device" (binding to a named device). Gloo's "Unable to find
// address for: eth7" (gloo/transport/tcp/device.cc) and NCCL's "Bootstrap : no socket interface found"
// are the classifier's (kWrongIfname).
bool no_interface_text(sv m) { return ihas(m, "failed to find interface") || ihas(m, "no such device"); }

// hanglab's workloads print their error as "[rank 1] ERROR (data) in data at step 1: <what>"
// (workloads/common; logs/fields.cpp parse_harness_error reads it as the workload's class): what
// <what> means is its emitter's, so it is read on its own.
LogLine classified(sv text) {
  LogLine l;
  parse_log_line(text, LogLineContext{}, l);
  if (!logparse::starts(l.msg, "ERROR (")) return l;
  const size_t k = l.msg.find(": ");
  if (k == npos) return l;
  LogLine inner;
  parse_log_line(l.msg.substr(k + 2), LogLineContext{}, inner);
  return inner;
}

}  // namespace

TextFacts read_message_facts(std::string_view text) {
  TextFacts f;
  const LogLine l = classified(text);
  const sv m = text;
  f.cause = classified_cause(l);
  if (f.cause.empty() && host_oom_text(m)) f.cause = "oom";
  if (f.cause.empty() && shm_enospc(l, m)) f.cause = "shm_exhausted";
  f.timeout = message_says_timeout(m);  // the workloads' own test when they classify an error (exit_codes.hpp)
  f.no_interface = l.kind == LogKind::kWrongIfname || no_interface_text(m);
  f.unreachable = unreachable_text(m);
  f.remote = remote_addr(m);
  f.missing_ranks = missing_ranks(m);
  f.master = master_host(m);
  return f;
}

}  // namespace hanglab
