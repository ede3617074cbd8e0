// Exit codes and error classes shared by every hanglab workload, plus the two exception
// types that map to a fixed code. The harness reads a rank's exit code (and the `class`
// field of its trace `error` event) to tell a communication failure from a timeout, a
// rendezvous failure or a data error; death by signal is reported by the harness as
// 128+signo and never produced by a workload itself.
//
// Classification is by where the error happened first (init -> rendezvous; inside a
// collective -> timeout or comm by message) and only then by exception type, because the
// backends (Gloo, NCCL, MPI) throw plain runtime errors whose text is all we have.
#pragma once

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hanglab {

constexpr int kExitOk = 0;
constexpr int kExitException = 1;   // unhandled exception (a Python-style crash)
constexpr int kExitUsage = 2;       // bad command line, environment or hook spec
constexpr int kExitComm = 10;       // peer closed, connection reset, read error
constexpr int kExitTimeout = 11;    // a collective timed out
constexpr int kExitRendezvous = 12; // store connect / process-group creation failed
constexpr int kExitData = 13;       // shard missing, short, unreadable; checkpoint write failed

struct ExitCodeInfo {
  int code;
  const char* name;
  const char* meaning;
};

inline const std::vector<ExitCodeInfo>& exit_code_table() {
  static const std::vector<ExitCodeInfo> kTable = {
      {kExitOk, "ok", "training finished (or the rank left the loop early by a hook and exited cleanly)"},
      {kExitException, "exception", "unhandled exception outside any collective"},
      {kExitUsage, "usage", "bad command line, environment or HANGLAB_HOOKS"},
      {kExitComm, "comm", "communication error inside a collective: peer closed, connection reset, read error"},
      {kExitTimeout, "timeout", "a collective timed out (backend timeout)"},
      {kExitRendezvous, "rendezvous", "store connect/timeout or process-group creation failed"},
      {kExitData, "data", "dataset shard missing/short/unreadable or checkpoint write failed"},
  };
  return kTable;
}

// The `class` of a trace `error` event.
enum class ErrorClass { kUsage, kRendezvous, kTimeout, kComm, kData, kOther };

inline const char* error_class_name(ErrorClass c) {
  switch (c) {
    case ErrorClass::kUsage: return "usage";
    case ErrorClass::kRendezvous: return "rendezvous";
    case ErrorClass::kTimeout: return "timeout";
    case ErrorClass::kComm: return "comm";
    case ErrorClass::kData: return "data";
    case ErrorClass::kOther: return "other";
  }
  return "other";
}

inline int exit_code_for(ErrorClass c) {
  switch (c) {
    case ErrorClass::kUsage: return kExitUsage;
    case ErrorClass::kRendezvous: return kExitRendezvous;
    case ErrorClass::kTimeout: return kExitTimeout;
    case ErrorClass::kComm: return kExitComm;
    case ErrorClass::kData: return kExitData;
    case ErrorClass::kOther: return kExitException;
  }
  return kExitException;
}

// Thrown for configuration problems found at startup (exit 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when the data path fails: shard missing/short/unreadable, checkpoint not
// writable (exit 13).
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline bool message_says_timeout(std::string_view what) {
  std::string lower(what);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos;
}

// An exception that escaped a collective. Everything that is not a timeout is treated
// as a communication error: Gloo reports peer loss as "Connection closed by peer",
// "Read error ... Connection reset by peer", "Broken pipe", "Connection refused", and a
// size mismatch between paired collectives surfaces from the same IO path.
inline ErrorClass classify_collective_error(std::string_view what) {
  return message_says_timeout(what) ? ErrorClass::kTimeout : ErrorClass::kComm;
}

}  // namespace hanglab
