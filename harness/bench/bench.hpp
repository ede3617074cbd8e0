// `hanglab bench`: the performance figures hanglab claims, measured in one command on this
// machine and written as <out>/bench.json, bench.txt (what it prints) and bench.html
// (self-contained: inline SVG plots, nothing fetched). Sections, each from real runs:
//
//   detectors      each detector's latency divided by its configured bound, from repeated
//                  kill_rank / freeze_rank / skip_collective_linger runs (scenarios/). The
//                  latency is measured from the moment the detector's own clock starts,
//                  read from the run's files: exit_monitor from the fault (kill(2)) of the
//                  rank it names, bound = the supervisor's polling tick (due within a few); backend_timeout from the detecting rank entering the
//                  collective that timed out, bound = collective_s; heartbeat_loss from the
//                  frozen rank's last trace line (hb or any other: each is a sign of life),
//                  bound = 3 x heartbeat_s; harness_watchdog
//                  from the last progress event of any rank, bound = progress_s (or the
//                  checkpoint_s / eval_s in force). backend_error has no configured bound:
//                  seconds after the fault only. Latency after the fault is kept too.
//   verdicts       fault -> verdict known (run_scenario returned: teardown, triage and the
//                  expectation check done) for a crash (kill_rank) and a hang (freeze_rank),
//                  with fault -> first detection and fault -> last rank gone.
//   trace_overhead tracing on vs off for the same healthy torch_ddp workload, alternating
//                  ABBA by step inside one run (HANGLAB_TRACE_OFF=ab: steps 4k+1, 4k+4
//                  traced, 4k+2, 4k+3 not), so both arms share the machine's drift; step
//                  times from HANGLAB_STEP_TIMES (in memory, the same for both arms); ratio
//                  of the median step times with a 90 % paired bootstrap interval (ABBA
//                  quads, then steps, resampled), against the goal < 1 %. Beside it, the
//                  writer alone: Trace::emit() timed in-process (us per event) x the lines
//                  a traced step writes, as a share of the untraced step.
//   cpu_share      a healthy torch_ddp run at 16, 32 and 64 ranks: the hanglab process's
//                  own CPU (getrusage RUSAGE_SELF) while supervising, vs the ranks'
//                  (RUSAGE_CHILDREN) and the wall time.
//   triage         `hanglab triage` of synthetic 1,024- and 16,384-rank incidents
//                  (bench/triage_gen.hpp): wall time and peak RSS of that child process.
//   flight_recorder "Flight Recorder: hanglab vs torchfrtrace" (bench/fr_bench.hpp): real
//                  Gloo dumps scaled to 8 and 1,024 ranks (--quick: 8) by fr_scale.py, read by
//                  `hanglab triage` and by the venv's torchfrtrace: times, verdicts, agreement.
//
// --quick: fewer repeats and ranks, shorter timeouts (a smoke test, ~1 minute); the figures
// are then indicative only. Exit code: 0 written, 2 bad options, 3 a section could not be
// measured (the others are still written), 130 interrupted.
#pragma once

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

struct BenchOptions {
  std::filesystem::path out = "results/bench";
  bool quick = false;
  int repeat = 0;  // runs per detector scenario and trace A/B pairs / 2; 0 = 1 quick, 3 full
  std::filesystem::path hanglab_exe;  // for `hanglab triage` children; empty = /proc/self/exe
  int interrupt_fd = -1;
  const volatile std::sig_atomic_t* interrupted = nullptr;
};

int run_bench(const BenchOptions& opts);

// ---- pure helpers (bench_stats.cpp), unit-tested ------------------------------------------

double median_of(std::vector<double> v);  // 0 for an empty vector

struct RatioEstimate {
  double ratio = 0;   // median(pooled a) / median(pooled b)
  double lo = 0;      // 90 % bootstrap interval
  double hi = 0;
};
// a, b: samples in clusters (e.g. step times per run, or per ABBA block). The interval
// resamples clusters with replacement -- the same cluster indices for both arms when
// `paired` (a and b of equal size, cluster i of a beside cluster i of b) -- then samples
// within each cluster, with a fixed seed (the same data give the same interval).
RatioEstimate ratio_of_medians(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                               int iterations = 2000, bool paired = false);

// "met" (the whole interval within 1 +- goal), "missed" (the interval above 1 + goal), or
// "not shown" (otherwise: the noise on this machine is larger than the goal).
std::string goal_verdict(const RatioEstimate& r, double goal_fraction);

// The problems of a bench.json (a missing figure, a non-positive ratio...); empty = sane.
std::vector<std::string> check_bench_json(const nlohmann::json& j);

// What `hanglab bench` prints (also bench.txt), and bench.html.
std::string render_bench_text(const nlohmann::json& j);
std::string render_bench_html(const nlohmann::json& j);

}  // namespace hanglab
