// `hanglab bench`: statistics and the sanity check of bench.json (pure functions).
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "bench/fr_bench.hpp"
#include "detect/registry.hpp"

namespace hanglab {

using nlohmann::json;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<long>(n / 2), v.end());
  const double hi = v[n / 2];
  if (n % 2) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + static_cast<long>(n / 2))) / 2;
}

RatioEstimate ratio_of_medians(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                               int iterations, bool paired) {
  RatioEstimate r;
  const auto pooled = [](const std::vector<std::vector<double>>& runs) {
    std::vector<double> all;
    for (const auto& v : runs) all.insert(all.end(), v.begin(), v.end());
    return all;
  };
  const double mb = median_of(pooled(b));
  if (a.empty() || b.empty() || mb <= 0) return r;
  r.ratio = median_of(pooled(a)) / mb;
  r.lo = r.hi = r.ratio;
  // Two-level bootstrap: the noise between runs (a run landing on a busy moment of a shared
  // machine) and within them both widen the interval.
  std::mt19937_64 rng(20261201);
  paired = paired && a.size() == b.size();
  std::vector<size_t> picks;
  const auto resample = [&rng](const std::vector<std::vector<double>>& runs, const std::vector<size_t>* given) {
    std::vector<double> all;
    std::uniform_int_distribution<size_t> pick_run(0, runs.size() - 1);
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto& run = runs[given ? (*given)[i] : pick_run(rng)];
      if (run.empty()) continue;
      std::uniform_int_distribution<size_t> pick(0, run.size() - 1);
      for (size_t k = 0; k < run.size(); ++k) all.push_back(run[pick(rng)]);
    }
    return median_of(std::move(all));
  };
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(std::max(iterations, 1)));
  for (int i = 0; i < iterations; ++i) {
    const std::vector<size_t>* given = nullptr;
    if (paired) {
      std::uniform_int_distribution<size_t> pick(0, a.size() - 1);
      picks.resize(a.size());
      for (auto& p : picks) p = pick(rng);
      given = &picks;
    }
    const double den = resample(b, given);
    if (den > 0) ratios.push_back(resample(a, given) / den);
  }
  if (ratios.empty()) return r;
  std::sort(ratios.begin(), ratios.end());
  const auto q = [&](double p) {
    return ratios[std::min(ratios.size() - 1, static_cast<size_t>(p * static_cast<double>(ratios.size())))];
  };
  r.lo = std::min(q(0.05), r.ratio);
  r.hi = std::max(q(0.95), r.ratio);
  return r;
}

std::string goal_verdict(const RatioEstimate& r, double goal_fraction) {
  if (r.ratio <= 0) return "not measured";
  if (r.lo > 1 + goal_fraction) return "missed";
  // Met only when the measurement is precise enough to say so: the whole interval within
  // 1 +- goal. An interval below 1 - goal (tracing cannot make steps faster) is noise too.
  if (r.hi < 1 + goal_fraction && r.lo > 1 - goal_fraction) return "met";
  return "not shown";
}

namespace {

bool positive(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() && j[key].get<double>() > 0;
}

}  // namespace

std::vector<std::string> check_bench_json(const json& j) {
  std::vector<std::string> p;
  const auto need_array = [&](const char* key) -> const json* {
    if (!j.contains(key) || !j[key].is_array() || j[key].empty()) {
      p.push_back(fmt::format("bench.json: {}: missing or empty", key));
      return nullptr;
    }
    return &j[key];
  };
  if (const json* d = need_array("detectors")) {
    std::set<std::string> names;
    for (const auto& x : *d) {
      const std::string name = x.value("detector", "");
      names.insert(name);
      if (!x.contains("after_fault_s") || !positive(x["after_fault_s"], "median"))
        p.push_back(fmt::format("bench.json: detectors: {} ({}): no latency after the fault", name,
                                x.value("scenario", "")));
      if (!x["bound_s"].is_null() && (!x.contains("ratio") || !positive(x["ratio"], "median")))
        p.push_back(fmt::format("bench.json: detectors: {} ({}): no latency/bound ratio", name, x.value("scenario", "")));
    }
    // Every detector that fires during a run (the registry's) is measured.
    for (const DetectorInfo* want : detector_registry())
      if (want->timed && !names.count(std::string(want->name)))
        p.push_back(fmt::format("bench.json: detectors: {} never measured", want->name));
  }
  if (const json* v = need_array("verdicts")) {
    bool crash = false;
    for (const auto& x : *v) {
      crash = crash || x.value("outcome", "") == "crash";
      if (!x.contains("to_verdict_s") || !positive(x["to_verdict_s"], "median"))
        p.push_back(fmt::format("bench.json: verdicts: {}: no fault -> verdict latency", x.value("scenario", "")));
    }
    if (!crash) p.push_back("bench.json: verdicts: no crash verdict measured");
  }
  if (!j.contains("trace_overhead") || !positive(j["trace_overhead"], "ratio")) {
    p.push_back("bench.json: trace_overhead: no ratio");
  } else {
    const json& t = j["trace_overhead"];
    const double ratio = t["ratio"].get<double>();
    if (!(ratio > 0.5 && ratio < 2)) p.push_back(fmt::format("bench.json: trace_overhead: ratio {} is not plausible", ratio));
    if (!positive(t, "emit_us") || !positive(t, "events_per_step") || !positive(t, "writer_pct"))
      p.push_back("bench.json: trace_overhead: no trace writer cost");
    if (!t.contains("ci90") || !t["ci90"].is_array() || t["ci90"].size() != 2 || t["ci90"][0].get<double>() > ratio ||
        t["ci90"][1].get<double>() < ratio)
      p.push_back("bench.json: trace_overhead: the interval does not contain the ratio");
  }
  if (const json* c = need_array("cpu_share")) {
    for (const auto& x : *c) {
      const double share = x.value("harness_share", -1.0);
      if (!positive(x, "harness_cpu_s") || !positive(x, "ranks_cpu_s") || !positive(x, "wall_s") || share <= 0 ||
          share >= 1)
        p.push_back(fmt::format("bench.json: cpu_share: {} ranks: implausible figures", x.value("ranks", 0)));
    }
  }
  if (const json* t = need_array("triage")) {
    for (const auto& x : *t) {
      if (!positive(x, "wall_s") || !positive(x, "peak_rss_mb"))
        p.push_back(fmt::format("bench.json: triage: {} ranks: no time or memory", x.value("ranks", 0)));
      if (!x.value("ok", false))
        p.push_back(fmt::format("bench.json: triage: {} ranks: wrong answer ({})", x.value("ranks", 0),
                                x.value("answer", "")));
    }
  }
  for (const auto& x : check_fr_bench_json(j.contains("flight_recorder") ? j["flight_recorder"] : json()))
    p.push_back(x);
  return p;
}

}  // namespace hanglab
