// Unit tests of `hanglab bench`'s pure parts: the statistics, the bench.json check, the
// text and HTML renderings; and the synthetic incident generator against real triage.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "bench/bench.hpp"
#include "bench/triage_gen.hpp"

using namespace hanglab;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<double> noisy(double center, double spread, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-spread, spread);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center + d(rng));
  return v;
}

// A complete bench.json as run_bench writes it.
json canned() {
  return json::parse(R"json({
    "version": 1, "generated": "2026-12-01T23:00:00.000000Z", "quick": true, "repeat": 1, "duration_s": 60,
    "command": "hanglab bench --quick",
    "host": {"cpus": 2, "kernel": "Linux 6.1", "loadavg_1m_at_start": 3.5, "loadavg_1m_at_end": 4.0},
    "detectors": [
      {"detector": "exit_monitor", "scenario": "kill_rank", "trigger": "the fault (kill)", "bound": "supervisor tick",
       "bound_s": 0.02, "after_fault_s": {"n": 1, "median": 0.021, "min": 0.021, "max": 0.021},
       "after_trigger_s": {"n": 1, "median": 0.021, "min": 0.021, "max": 0.021},
       "ratio": {"n": 1, "median": 1.05, "min": 1.05, "max": 1.05}, "ratios": [1.05]},
      {"detector": "backend_error", "scenario": "kill_rank", "trigger": "the fault", "bound": null, "bound_s": null,
       "after_fault_s": {"n": 1, "median": 0.05, "min": 0.05, "max": 0.05}, "after_trigger_s": {"n": 1, "median": 0.05, "min": 0.05, "max": 0.05},
       "ratio": null, "ratios": []},
      {"detector": "backend_timeout", "scenario": "freeze_rank", "trigger": "t", "bound": "collective_s", "bound_s": 2,
       "after_fault_s": {"n": 2, "median": 2.05, "min": 2.04, "max": 2.06}, "after_trigger_s": {"n": 2, "median": 2.01, "min": 2.0, "max": 2.02},
       "ratio": {"n": 2, "median": 1.005, "min": 1.0, "max": 1.01}, "ratios": [1.0, 1.01]},
      {"detector": "heartbeat_loss", "scenario": "freeze_rank", "trigger": "t", "bound": "3 x heartbeat_s", "bound_s": 1.5,
       "after_fault_s": {"n": 1, "median": 1.2, "min": 1.2, "max": 1.2}, "after_trigger_s": {"n": 1, "median": 1.52, "min": 1.52, "max": 1.52},
       "ratio": {"n": 1, "median": 1.013, "min": 1.013, "max": 1.013}, "ratios": [1.013]},
      {"detector": "harness_watchdog", "scenario": "freeze_rank", "trigger": "t", "bound": "progress_s", "bound_s": 4,
       "after_fault_s": {"n": 1, "median": 6.1, "min": 6.1, "max": 6.1}, "after_trigger_s": {"n": 1, "median": 4.03, "min": 4.03, "max": 4.03},
       "ratio": {"n": 1, "median": 1.0075, "min": 1.0075, "max": 1.0075}, "ratios": [1.0075]}
    ],
    "verdicts": [
      {"scenario": "kill_rank", "outcome": "crash", "to_detection_s": {"n": 1, "median": 0.02, "min": 0.02, "max": 0.02},
       "to_all_gone_s": {"n": 1, "median": 0.3, "min": 0.3, "max": 0.3}, "to_verdict_s": {"n": 1, "median": 0.5, "min": 0.5, "max": 0.5}}
    ],
    "trace_overhead": {"workload": "torch_ddp", "design": "in-run ABBA", "runs": [{"on_ms": 21.1, "off_ms": 21.0, "ratio": 1.0048, "steps": 116}],
      "goal_fraction": 0.01, "median_on_ms": 21.1, "median_off_ms": 21.0, "steps_on": 27, "steps_off": 27,
      "ratio": 1.0048, "ci90": [0.99, 1.02], "overhead_pct": 0.48, "goal": "not shown",
      "overhead_us_per_step": 100, "emit_us": 4.2, "events_per_step": 14, "writer_pct": 0.28},
    "cpu_share": [{"ranks": 16, "steps": 8, "step_ms": 50, "wall_s": 12.0, "harness_cpu_s": 0.4, "triage_cpu_s": 0.1,
      "ranks_cpu_s": 20.0, "harness_share": 0.0196, "harness_core_pct": 3.3, "cpus": 2}],
    "triage": [{"ranks": 1024, "steps": 100, "files": 1024, "bytes": 7000000, "lines": 106493, "generate_s": 0.3,
      "wall_s": 0.8, "peak_rss_mb": 60.5, "ok": true, "answer": "network/all_ranks_waiting missing 513 of 1024"}],
    "flight_recorder": {"title": "Flight Recorder: hanglab vs torchfrtrace", "available": true, "repeat": 1,
      "goal_ratio": 10, "goal_ranks": 1024, "dumps": "harness/testdata/fr", "torchfrtrace": "/v/bin/torchfrtrace",
      "rows": [{"case": "mismatched", "layout": "nccl-keyed", "ranks": 8, "files": 8, "bytes": 14000, "expected": [5],
        "missing_dumps": [],
        "hanglab": {"wall_s": {"n": 1, "median": 0.02, "min": 0.02, "max": 0.02, "runs": [0.02]}, "peak_rss_mb": 9,
                    "verdict": "collective_mismatch/mismatched_collective: ranks 5", "ranks": [5], "ok": true},
        "torchfrtrace": {"wall_s": {"n": 1, "median": 2.1, "min": 2.1, "max": 2.1, "runs": [2.1]}, "peak_rss_mb": 300,
                         "kind": "blames", "ranks": [5], "ok": true, "verdict": "culprit ranks {5} at seq 5 (gloo:all_reduce)"},
        "agree": true, "ratio": 105.0}],
      "agree": 1, "disagree": 0, "no_torchfrtrace_verdict": 0, "goal": "not measured"},
    "runs": [{"section": "detectors", "label": "kill_rank #1"}], "errors": []
  })json");
}

bool has_problem(const std::vector<std::string>& p, const std::string& s) {
  return std::any_of(p.begin(), p.end(), [&](const std::string& x) { return x.find(s) != std::string::npos; });
}

}  // namespace

TEST_CASE("median_of", "[bench]") {
  CHECK(median_of({}) == 0);
  CHECK(median_of({3}) == 3);
  CHECK(median_of({5, 1, 3}) == 3);
  CHECK(median_of({4, 1, 3, 2}) == 2.5);
}

TEST_CASE("ratio_of_medians: equal arms give 1 inside a narrow interval", "[bench]") {
  std::vector<std::vector<double>> a, b;
  for (int r = 0; r < 4; ++r) {
    a.push_back(noisy(20, 0.5, 50, 1 + r));
    b.push_back(noisy(20, 0.5, 50, 100 + r));
  }
  const RatioEstimate e = ratio_of_medians(a, b);
  CHECK(e.ratio == Approx(1).margin(0.02));
  CHECK(e.lo <= e.ratio);
  CHECK(e.hi >= e.ratio);
  CHECK(e.hi - e.lo < 0.05);
  CHECK(goal_verdict(e, 0.05) == "met");
  // The same data give the same interval (fixed seed).
  const RatioEstimate again = ratio_of_medians(a, b);
  CHECK(again.lo == e.lo);
  CHECK(again.hi == e.hi);
}

TEST_CASE("ratio_of_medians: a 10 % slower arm misses a 1 % goal -- noise makes it undecided", "[bench]") {
  std::vector<std::vector<double>> slow, fast;
  for (int r = 0; r < 3; ++r) {
    slow.push_back(noisy(22, 0.2, 40, 7 + r));
    fast.push_back(noisy(20, 0.2, 40, 70 + r));
  }
  const RatioEstimate e = ratio_of_medians(slow, fast);
  CHECK(e.ratio == Approx(1.1).margin(0.01));
  CHECK(goal_verdict(e, 0.01) == "missed");
  // Runs that disagree by +-10 % cannot show a 1 % effect either way.
  const RatioEstimate wide = ratio_of_medians({noisy(20, 0.1, 30, 1), noisy(22, 0.1, 30, 2)},
                                              {noisy(20, 0.1, 30, 3), noisy(18, 0.1, 30, 4)});
  CHECK(wide.hi - wide.lo > 0.05);
  CHECK(goal_verdict(wide, 0.01) == "not shown");
  CHECK(goal_verdict(RatioEstimate{}, 0.01) == "not measured");
  CHECK(goal_verdict(RatioEstimate{0.9, 0.85, 0.95}, 0.01) == "not shown");  // faster when traced: noise
  CHECK(goal_verdict(RatioEstimate{1.003, 0.995, 1.008}, 0.01) == "met");
  CHECK(goal_verdict(RatioEstimate{1.003, 0.985, 1.008}, 0.01) == "not shown");
  // Paired: a drift common to both arms (cluster i of each 1.5x the last) cancels.
  std::vector<std::vector<double>> on, off;
  for (int q = 0; q < 30; ++q) {
    const double drift = 20 * (1 + 0.5 * (q % 5));
    on.push_back({drift * 1.002, drift * 1.003});
    off.push_back({drift, drift * 1.001});
  }
  const RatioEstimate paired = ratio_of_medians(on, off, 2000, true);
  const RatioEstimate unpaired = ratio_of_medians(on, off, 2000, false);
  CHECK(paired.hi - paired.lo < unpaired.hi - unpaired.lo);
  CHECK(goal_verdict(paired, 0.01) == "met");
}

TEST_CASE("check_bench_json accepts a complete bench.json and names what is missing", "[bench]") {
  json j = canned();
  CHECK(check_bench_json(j).empty());
  j["detectors"].erase(j["detectors"].begin() + 3);  // heartbeat_loss
  j["trace_overhead"].erase("ratio");
  j["triage"][0]["ok"] = false;
  j["cpu_share"][0]["harness_share"] = 0;
  j["flight_recorder"]["rows"][0]["hanglab"]["ok"] = false;
  const auto p = check_bench_json(j);
  const auto has = [&](const std::string& s) {
    return std::any_of(p.begin(), p.end(), [&](const std::string& x) { return x.find(s) != std::string::npos; });
  };
  CHECK(has("heartbeat_loss never measured"));
  CHECK(has("trace_overhead: no ratio"));
  CHECK(has("triage: 1024 ranks: wrong answer"));
  CHECK(has("cpu_share: 16 ranks"));
  CHECK(has("flight_recorder: mismatched nccl-keyed 8 ranks: hanglab triage named 5 where the culprit is 5 (collective_mismatch"));
  j.erase("flight_recorder");
  CHECK(has_problem(check_bench_json(j), "bench.json: flight_recorder: missing"));
  CHECK(check_bench_json(json::object()).size() >= 5);
}

TEST_CASE("bench text and HTML carry every figure -- the page is self-contained", "[bench]") {
  const json j = canned();
  const std::string text = render_bench_text(j);
  for (const char* want : {"exit_monitor", "1.050x", "collective_s 2.00 s", "ratio 1.0048", "goal < 1 %: not shown",
                           "1.96%", "1024", "60.5", "4.2 us per event", "0.280 %",
                           "Flight Recorder: hanglab vs torchfrtrace", "105x", "culprit ranks {5} at seq 5"})
    CHECK(text.find(want) != std::string::npos);
  const std::string html = render_bench_html(j);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("heartbeat_loss (freeze_rank)") != std::string::npos);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
}

TEST_CASE("the synthetic incident triages to the absent rank, in a forked child", "[bench]") {
  const fs::path dir = fs::path(HANGLAB_BINARY_DIR) / "test-tmp" / "bench" / "incident";
  fs::remove_all(dir);
  const SyntheticJob job{64, 20, 33};
  CHECK(write_synthetic_incident(job, dir, false) > 0);
  size_t files = 0;
  for ([[maybe_unused]] const auto& f : fs::directory_iterator(dir)) ++files;
  CHECK(files == 64);
  const TriageMeasure m = measure_log_triage(dir, job, 1);
  INFO(m.answer);
  CHECK(m.ok);
  CHECK(m.wall_s > 0);
  CHECK(m.maxrss_kb > 0);
  fs::remove_all(dir);
}
