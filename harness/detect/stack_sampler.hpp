// Sampled stacks of Python ranks, read without stopping them (py-spy dump --nonblocking, a
// few tens of milliseconds per dump): every Python rank now and then (period_s), and at once
// on request where the kernel's view and the rank's output disagree (a rank busy on a CPU
// while the job prints no progress: working, or spinning in a collective?). Each dump runs
// as a child process, its output written with hanglab's stack header ("# py-spy of rank R
// (pid P) at T", "# state: S wchan: W") to ranks/<r>/stack.sample.txt, so that
// triage/records parses it as it parses a captured stack.txt. Everything it started is ended
// by stop() or the destructor; on_spawn records each child in the run's state file.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "detect/detector.hpp"
#include "triage/model/observations.hpp"

namespace hanglab {

struct StackSample {
  int rank = 0;
  pid_t pid = 0;
  double t = 0;     // Unix time the dump began
  double mono = 0;  // ...on the monotonic clock
  std::string text;  // header + py-spy's output
  std::optional<StackFrameInfo> info;  // parsed and classified (collective, io, compute, ...)
};

struct StackSamplerOptions {
  std::filesystem::path run_dir;
  double period_s = 2.0;    // each Python rank at most this often unasked; 0: on request only
  double timeout_s = 5.0;   // a dump still running after this is killed
  std::string py_spy = "py-spy";
  std::function<void(pid_t, const std::string&)> on_spawn;
};

class StackSampler {
 public:
  explicit StackSampler(StackSamplerOptions o);
  ~StackSampler();
  StackSampler(const StackSampler&) = delete;
  StackSampler& operator=(const StackSampler&) = delete;

  // Collects finished dumps and starts due ones (at most two at a time, the most overdue
  // first). Ranks that are not Python (by /proc/P/exe) are never sampled.
  void tick(const std::vector<const RankWatch*>& ranks, double now_mono);
  // Sample this rank as soon as possible (next tick).
  void request(int rank) { requested_[rank] = true; }
  // The newest finished sample of the rank's current process; nullptr when none.
  const StackSample* latest(int rank) const;
  bool available() const { return available_; }
  // Ends every dump still running.
  void stop();

 private:
  struct Running {
    int rank = 0;
    pid_t pid = 0;      // the rank's
    pid_t child = 0;    // py-spy's
    int pidfd = -1;
    double t = 0, mono = 0;
    std::filesystem::path tmp;
  };
  bool is_python(pid_t pid, double now_mono);
  void start(const RankWatch& r, double now_mono);
  void finish(Running& run, bool timed_out);

  StackSamplerOptions o_;
  bool available_ = false;
  std::vector<Running> running_;
  std::map<int, StackSample> latest_;
  std::map<int, double> last_start_mono_;
  std::map<int, bool> requested_;
  std::map<pid_t, std::pair<bool, double>> python_;  // is it, and when it was asked
};

// The process state and wait channel of a process's main thread (for the stack header).
void main_thread_state(pid_t pid, std::string& state, std::string& wchan);

}  // namespace hanglab
