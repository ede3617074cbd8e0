// The rank trace (`events.jsonl`): one JSON object per line, each line written with a
// single unbuffered write(2) on an O_APPEND|O_CLOEXEC descriptor, so that
//   - the last event before a SIGKILL is already on disk (nothing sits in a buffer),
//   - lines from concurrent writers (the heartbeat thread, the training thread, even a
//     second process appending to the same file) never interleave.
// Every line starts with `t` (Unix seconds, microsecond precision), `rank`, `ev`; the
// event's own fields follow in the order given. The event names and fields are the
// rank-trace table of DESIGN.md.
//
// Also provides Heartbeat: a side thread that writes {"ev":"hb"} every period until
// stopped, so the harness can tell "alive but blocked" (hb, no progress) from "frozen"
// (no hb while the process exists).
//
// A Trace built from an unset HANGLAB_TRACE is disabled and every call is a no-op; so is
// one built while HANGLAB_TRACE_OFF is set (non-empty, not "0", not "ab"): the documented
// switch that turns the whole trace off, heartbeats included, to measure what tracing costs.
// The harness then sees the rank's stdout/stderr only. HANGLAB_TRACE_OFF=ab alternates
// instead, inside one run: the training loop (workloads/loop) pauses the trace for
// steps 4k+2 and 4k+3 and traces steps 4k+1 and 4k+4 (ABBA, trace_step_traced()), so the
// traced and untraced steps share the machine's drift (`hanglab bench`).
//
// Also provides StepTimes: step durations kept in memory and written at the end of
// training when HANGLAB_STEP_TIMES is set, so step time is measured the same way with the
// trace on and off.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace hanglab {

// Insertion-ordered, so trace lines read in the order fields were given.
using TraceFields = nlohmann::ordered_json;

// Wall-clock time as Unix seconds with microsecond resolution.
double unix_time_now();

// True when HANGLAB_TRACE_OFF is set to anything but "", "0" or "ab".
bool trace_switched_off();
// True when HANGLAB_TRACE_OFF=ab.
bool trace_alternating();
// The ABBA rule of HANGLAB_TRACE_OFF=ab: steps 4k+1 and 4k+4 are traced.
inline bool trace_step_traced(int step) { return step % 4 == 1 || step % 4 == 0; }

class Trace {
 public:
  // Disabled trace: emit() does nothing.
  Trace() = default;
  // Opens (creating parents and the file) `path` for appending. Throws std::system_error
  // naming the syscall and path when it cannot.
  Trace(const std::string& path, int rank);
  // From HANGLAB_TRACE; disabled when unset or empty, or when trace_switched_off().
  // Throws like the constructor.
  static Trace from_env(int rank);

  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  Trace(Trace&& other) noexcept;
  Trace& operator=(Trace&& other) noexcept;
  ~Trace();

  bool enabled() const { return fd_ >= 0; }
  // While paused, emit() writes nothing (HANGLAB_TRACE_OFF=ab). Thread-safe.
  void pause(bool paused) const noexcept { paused_ = paused; }
  int rank() const { return rank_; }

  // Writes one line {"t":..,"rank":..,"ev":ev, ...fields}. Thread-safe and async-kill
  // safe by construction (one write(2)). Never throws: a failing write (disk full) is
  // reported once on stderr and otherwise ignored, because losing trace lines must not
  // change how the workload fails.
  void emit(std::string_view ev, const TraceFields& fields = TraceFields::object()) const noexcept;

  // The line emit() would write (with trailing newline); exposed for tests.
  static std::string format_line(double t, int rank, std::string_view ev, const TraceFields& fields);

 private:
  int fd_ = -1;
  int rank_ = -1;
  mutable std::atomic<bool> warned_{false};
  mutable std::atomic<bool> paused_{false};
};

// Step timing for benchmarks, independent of the trace. From HANGLAB_STEP_TIMES (a path;
// `%r` is replaced by the rank); disabled (every call a no-op) when unset. begin_step()
// costs one steady-clock read and a vector append; write() (at the end of training, by the
// workload's main thread) writes one line per step, "STEP MS TRACED" with MS the time from
// that step's start to the next one's (the last: to end()), to a microsecond, so everything
// a step costs -- the trace writes of its events and its log line included -- is counted;
// TRACED is 1 or 0 as given to begin_step().
// A write failure is reported once on stderr and otherwise ignored.
class StepTimes {
 public:
  StepTimes() = default;
  static StepTimes from_env(int rank);
  bool enabled() const { return !path_.empty(); }
  void begin_step(int step, bool traced = true);
  void end();
  void write() const noexcept;

 private:
  std::string path_;
  struct Start {
    int step;
    bool traced;
    std::chrono::steady_clock::time_point t;
  };
  std::vector<Start> starts_;
  std::chrono::steady_clock::time_point end_{};
};

class Heartbeat {
 public:
  // Starts the thread; the first hb is written immediately. `trace` must outlive this.
  Heartbeat(const Trace& trace, std::chrono::milliseconds period);
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;
  ~Heartbeat();

  // Idempotent; returns after the thread has exited (at most one write later).
  void stop();

 private:
  void run();

  const Trace& trace_;
  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hanglab
