// records/message_facts.cpp: a run record's message -> TextFacts (see message_facts.hpp).
#include "triage/records/message_facts.hpp"

#include "exit_codes.hpp"
#include "triage/logs/parse.hpp"
#include "triage/logs/scan.hpp"

namespace hanglab {

namespace {

using logparse::sv;
constexpr size_t npos = sv::npos;

// The causes the run-record reasoner asks a message about (host or CUDA memory, /dev/shm), from what
// the plain-log classifier says the message proves (logs/meaning.cpp: a DataLoader worker killed by
// SIGBUS is shm_exhausted there, PyTorch's message saying so).
std::string memory_cause(const LineReading& r) {
  return r.cause == "oom" || r.cause == "cuda_oom" || r.cause == "shm_exhausted" ? r.cause : "";
}

// The peer address Gloo's connect errors name, "remote=[ADDR]:PORT" (gloo/transport/tcp/pair.cc,
// debug_logger.cc; logs/peer_connect.cpp) -> ADDR.
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

// hanglab's workloads print their error as "[rank 1] ERROR (data) in data at step 1: <what>"
// (workloads/common; logs/fields.cpp parse_harness_error reads it as the workload's class): what
// <what> means is its emitter's, so it is read on its own.
// When the classifier reads nothing in <what>, the line is the workload's error of its class.
LogLine classified(sv text) {
  LogLine l;
  parse_log_line(text, LogLineContext{}, l);
  if (!logparse::starts(l.msg, "ERROR (")) return l;
  const size_t k = l.msg.find(": ");
  if (k == npos) return l;
  LogLine inner;
  parse_log_line(l.msg.substr(k + 2), LogLineContext{}, inner);
  return inner.kind == LogKind::kNone ? l : inner;
}

}  // namespace

TextFacts read_message_facts(std::string_view text) {
  TextFacts f;
  const LogLine l = classified(text);
  const sv m = text;
  f.read = line_meaning(l);
  f.cause = memory_cause(f.read);
  f.timeout = message_says_timeout(m);  // the workloads' own test when they classify an error (exit_codes.hpp)
  f.no_interface = f.read.kind == LogKind::kWrongIfname;
  f.unreachable = f.read.cause == "host_unreachable";
  f.remote = remote_addr(m);
  f.missing_ranks = missing_ranks(m);
  f.master = master_host(m);
  return f;
}

}  // namespace hanglab
