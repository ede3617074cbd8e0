// harness_watchdog: the job is hung when, for progress_s, no rank made progress and every live
// rank was blocked — no busy thread, no storage wait — whether the ranks printed steps, epochs
// or nothing at all.
//
// Its two kinds of evidence:
//   - what the ranks say: a trace event other than a heartbeat; for a rank without a trace,
//     an output line, counted only when the rank's main thread ran in the window the line
//     arrived in or the one before. A progress bar's monitor thread redraws a stalled bar
//     (tqdm: every 10 s) while the rank's main thread waits in a collective: that redraw is
//     no news of progress.
//   - what the kernel shows (liveness.hpp): a rank with a busy thread or a storage wait is
//     working (computing, loading, saving, importing torch on a loaded host) or straggling,
//     not hung. Except where the rank itself says it waits: a traced rank inside a collective
//     or past its training loop (MPI and NCCL spin while they wait), or a Python rank whose
//     sampled stack, taken during the silence, is in a collective. A busy Python rank during a
//     silence of a quarter of the limit is exactly that disagreement: its stack is sampled.
//   - a rank stopped by a signal (state T) for the whole limit is a hang by itself, whatever its
//     peers do meanwhile: it makes no progress until someone continues it, and every peer needs it
//     at its next collective. Its peers' solo work after the stop (rank 0 finishing a step, writing
//     a log, preparing the next batch) no longer delays the verdict.
// A launcher's own CPU counts while it starts ranks (torchrun importing torch, a restart).
// The limit is progress_s, or checkpoint_s / eval_s while a traced rank is in that phase.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "detect/detect_sink.hpp"
#include "detect/detector.hpp"
#include "detect/liveness.hpp"

namespace hanglab {

extern const DetectorInfo kHarnessWatchdog;

class StackSampler;

struct WatchdogLimits {
  double progress_s = 10;
  std::optional<double> checkpoint_s;
  std::optional<double> eval_s;
};

class HarnessWatchdog {
 public:
  explicit HarnessWatchdog(WatchdogLimits limits, LivenessOptions lo = {});

  void start(double now_mono);
  // A trace event other than a heartbeat.
  void traced_progress(double now_mono);
  // An output line of a rank without a trace (judged at the rank's next liveness sample).
  void output_line(const RankWatch& r, double now_mono);

  struct Launcher {
    pid_t pid = 0;
    bool starting = false;  // a rank is not up yet, or being restarted
    // The launcher is stopping its workers after one of them failed, until this (monotonic) time at
    // the latest (torchrun: SIGTERM, then SIGKILL after its close timeout): the survivors' silence
    // meanwhile is that teardown's, not a hang. 0: no stop under way.
    double stopping_until_mono = 0;
  };
  // Every tick: samples liveness when due, asks for stacks where the signals disagree, and
  // fires once. Returns true when it fired now.
  bool check(const std::vector<RankWatch*>& ranks, const Launcher& launcher, double now_mono, StackSampler* stacks,
             const DetectFn& detect);

  bool fired() const { return fired_; }
  double last_alive_mono() const { return last_alive_mono_; }
  double last_progress_mono() const { return last_progress_mono_; }
  const LivenessSampler& liveness() const { return sampler_; }
  // What the watchdog knows of a rank now: its liveness, its last counted progress, whether
  // it is known to wait and why (for the pre-teardown snapshot).
  nlohmann::json rank_json(const RankWatch& r, double mono_to_unix) const;
  // "rank 0 blocked (futex), rank 1 stopped": the kernel's view, for details and reports.
  std::string kernel_summary(const std::vector<RankWatch*>& ranks) const;

 private:
  struct PerRank {
    double pending_line_mono = 0;  // first output line not judged yet
    bool prev_main_ran = false;    // the main thread ran in the window before the last
    double last_progress_mono = 0;
    double waiting_since_mono = 0;  // known to wait (trace or stack) since; 0: not known
    std::string waiting_why;
    // Stopped by a signal (state T: SIGSTOP, SIGTSTP, a background rank's SIGTTIN/SIGTTOU) in
    // every sample since; 0: not stopped. A debugger's or py-spy's tracing stop (t) is not this.
    double stopped_since_mono = 0;
  };
  std::pair<double, std::string> limit(const std::vector<RankWatch*>& ranks) const;
  std::string waits(const RankWatch& r, const StackSampler* stacks) const;

  WatchdogLimits limits_;
  LivenessSampler sampler_;
  std::map<int, PerRank> per_rank_;
  double start_mono_ = 0;
  double last_progress_mono_ = 0;  // counted progress of any rank
  double last_alive_mono_ = 0;     // progress, or a working rank
  bool fired_ = false;
};

}  // namespace hanglab
