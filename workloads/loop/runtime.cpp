// Log lines, trace, progress record and the fatal path shared by mpi_ddp and nccl_ddp;
// see runtime.hpp.
#include "runtime.hpp"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <exception>
#include <mutex>
#include <thread>

#include "flight_recorder.hpp"
#include "loader.hpp"

namespace hanglab {
namespace {

std::atomic<int> g_rank{-1};
const Trace* g_trace = nullptr;
Heartbeat* g_heartbeat = nullptr;
ShmLoader* g_loader = nullptr;
std::mutex g_progress_mutex;
Progress g_progress;
std::atomic<bool> g_failing{false};

void vlog(FILE* stream, const char* fmt, va_list args) {
  char body[2048];
  std::vsnprintf(body, sizeof body, fmt, args);
  char line[2100];
  const int rank = g_rank.load();
  if (rank >= 0) {
    std::snprintf(line, sizeof line, "[rank %d] %s\n", rank, body);
  } else {
    std::snprintf(line, sizeof line, "[rank ?] %s\n", body);
  }
  std::fputs(line, stream);
  std::fflush(stream);
}

}  // namespace

void runtime_set_rank(int rank) { g_rank = rank; }
int runtime_rank() { return g_rank.load(); }
void runtime_set_trace(const Trace* trace) { g_trace = trace; }

void runtime_pause_trace(bool paused) {
  if (g_trace != nullptr) g_trace->pause(paused);
}
void runtime_set_heartbeat(Heartbeat* heartbeat) { g_heartbeat = heartbeat; }
void runtime_set_loader(ShmLoader* loader) { g_loader = loader; }

void progress_set_phase(const std::string& phase, int step) {
  std::lock_guard<std::mutex> lock(g_progress_mutex);
  g_progress.phase = phase;
  g_progress.step = step;
}

void progress_enter_collective(int64_t seq, const std::string& op, int64_t numel) {
  std::lock_guard<std::mutex> lock(g_progress_mutex);
  g_progress.in_collective = true;
  g_progress.seq = seq;
  g_progress.op = op;
  g_progress.numel = numel;
}

void progress_leave_collective() {
  std::lock_guard<std::mutex> lock(g_progress_mutex);
  g_progress.in_collective = false;
}

Progress progress_snapshot() {
  std::lock_guard<std::mutex> lock(g_progress_mutex);
  return g_progress;
}

void log_info(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog(stdout, fmt, args);
  va_end(args);
}

void log_error(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog(stderr, fmt, args);
  va_end(args);
}

void emit(std::string_view ev, const TraceFields& fields) {
  if (g_trace != nullptr) g_trace->emit(ev, fields);
}

void fail(ErrorClass cls, const std::string& what) {
  // Two threads can fail at once (the watchdog and the training thread woken by the
  // abort); exactly one writes the error, the other waits for _exit to take it along.
  if (g_failing.exchange(true)) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const int code = exit_code_for(cls);
  if (g_heartbeat != nullptr) g_heartbeat->stop();  // keep `exit` the last line of the trace
  if (g_loader != nullptr) g_loader->shutdown();
  const Progress p = progress_snapshot();
  TraceFields fields{{"msg", what}, {"where", p.phase}, {"class", error_class_name(cls)}, {"step", p.step}};
  std::string coll;
  if (p.in_collective) {
    fields["seq"] = p.seq;
    fields["op"] = p.op;
    fields["numel"] = p.numel;
    coll = " (in " + p.op + " seq " + std::to_string(p.seq) + ", numel " + std::to_string(p.numel) + ")";
  }
  emit("error", fields);
  // What the recorder holds now is the state that made the rank fail (a no-op unless armed).
  fr_dump((std::string("the loop ended early: ") + error_class_name(cls)).c_str(), /*final=*/true);
  emit("exit", {{"code", code}});
  log_error("ERROR (%s) in %s at step %d: %s%s", error_class_name(cls), p.phase.c_str(), p.step, what.c_str(),
            coll.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);
}

void report_fault(HookKind kind, int step, const std::string& detail) {
  emit("fault", {{"kind", hook_kind_name(kind)}, {"detail", detail}, {"step", step}});
  log_info("hanglab hook %s at step %d: %s", hook_kind_name(kind), step, detail.c_str());
}

PhaseScope::PhaseScope(const char* name, int step)
    : name_(name), step_(step), uncaught_(std::uncaught_exceptions()) {
  progress_set_phase(name, step);
  emit("phase", {{"name", name_}, {"edge", "begin"}, {"step", step_}});
}

PhaseScope::~PhaseScope() {
  if (std::uncaught_exceptions() > uncaught_) return;
  emit("phase", {{"name", name_}, {"edge", "end"}, {"step", step_}});
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void sleep_ms(int64_t ms) {
  if (ms > 0) std::this_thread::sleep_for(Ms(ms));
}

namespace {
double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}
}  // namespace

void burn_cpu_ms(int64_t ms) {
  if (ms <= 0) return;
  // Measured on the thread's own CPU clock, so the step costs the same work whatever the
  // machine does and a CPU limit stretches its wall time as it would a real forward pass.
  const double end = thread_cpu_ms() + static_cast<double>(ms);
  volatile double sink = 0;
  double x = 1.0;
  while (thread_cpu_ms() < end) {
    for (int i = 0; i < 4000; ++i) x = x * 1.0000001 + 1e-9;
    sink = x;
  }
  (void)sink;
}

}  // namespace hanglab
