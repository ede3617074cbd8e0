// Process-wide runtime of the training loop (trainer.hpp), whatever the backend: the
// rank's log lines (`[rank R] step S/N loss ...`, `[rank R] ERROR (class) in phase at
// step S: ...`), its trace, where it is (phase, step, collective) and the one
// fatal-error path with its exit codes.
//
// Thread-safety: the progress record is guarded by a mutex and fail() may be called from
// any thread (nccl_ddp's watchdog calls it while the training thread is blocked on the
// GPU stream); the first caller wins, later callers park until the process is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "exit_codes.hpp"
#include "hooks.hpp"
#include "trace.hpp"

namespace hanglab {

class ShmLoader;

// Where the rank is; the error event and line of fail() report it.
struct Progress {
  std::string phase = "startup";
  int step = 0;
  bool in_collective = false;
  int64_t seq = 0;
  std::string op;
  int64_t numel = 0;
};

// The process-wide objects the fatal path needs. Set once at startup by workload_main.
void runtime_set_rank(int rank);
int runtime_rank();
void runtime_set_trace(const Trace* trace);
// Pauses or resumes the rank's trace (HANGLAB_TRACE_OFF=ab); no-op without one.
void runtime_pause_trace(bool paused);
void runtime_set_heartbeat(Heartbeat* heartbeat);
void runtime_set_loader(ShmLoader* loader);

void progress_set_phase(const std::string& phase, int step);
void progress_enter_collective(int64_t seq, const std::string& op, int64_t numel);
void progress_leave_collective();
Progress progress_snapshot();

// One formatted line, one write, flushed: the harness time-stamps lines as they arrive.
__attribute__((format(printf, 1, 2))) void log_info(const char* fmt, ...);
__attribute__((format(printf, 1, 2))) void log_error(const char* fmt, ...);

// Trace event on this rank's trace (no-op without HANGLAB_TRACE).
void emit(std::string_view ev, const TraceFields& fields = TraceFields::object());

// Writes the `error` and `exit` events and the stderr line, stops the heartbeat and the
// data loader, then leaves with _exit(code of `cls`). _exit, not exit: a communicator's
// teardown (MPI_Finalize, ncclCommDestroy) waits for peers that may be gone, and a
// hanging exit path must never be what a scenario observes by accident.
[[noreturn]] void fail(ErrorClass cls, const std::string& what);

// The `fault` event and log line of an in-process hook that acted.
void report_fault(HookKind kind, int step, const std::string& detail);

// Traces a phase's begin now and its end when the scope closes normally; when an
// exception unwinds through it the phase stays open (it is where the rank died).
class PhaseScope {
 public:
  PhaseScope(const char* name, int step);
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;
  ~PhaseScope();

 private:
  const char* name_;
  int step_;
  int uncaught_;
};

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

double ms_since(Clock::time_point start);
void sleep_ms(int64_t ms);
// Spends `ms` of CPU time of the calling thread (what a CPU quota stretches).
void burn_cpu_ms(int64_t ms);

}  // namespace hanglab
