// `hanglab bench`: the runs and measurements; see bench.hpp. The statistics and the
// rendering are the pure functions of bench_stats.cpp and bench_render.cpp.
#include "bench/bench.hpp"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "bench/fr_bench.hpp"
#include "detect/exit_monitor.hpp"
#include "detect/harness_watchdog.hpp"
#include "detect/registry.hpp"
#include "bench/triage_gen.hpp"
#include "report/run_report.hpp"
#include "run/runner.hpp"
#include "run/supervisor.hpp"
#include "trace.hpp"  // workloads/common: the ranks' trace writer, timed in-process below
#include "run/workloads.hpp"
#include "util.hpp"
#include "validate/validate.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double tv_s(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

struct Cpu {
  double self_s = 0;      // this process: the supervisor, triage, the bench itself
  double children_s = 0;  // reaped children: the ranks
};

Cpu cpu_now() {
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  return {tv_s(self.ru_utime) + tv_s(self.ru_stime), tv_s(children.ru_utime) + tv_s(children.ru_stime)};
}

json stats(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return {{"n", v.size()},
          {"median", median_of(v)},
          {"min", *std::min_element(v.begin(), v.end())},
          {"max", *std::max_element(v.begin(), v.end())}};
}

// The t of the last event on `rank` before `t` that `match` accepts; nullopt if none.
template <class F>
std::optional<double> last_event_before(const std::map<int, std::vector<json>>& traces, int rank, double t, F match) {
  std::optional<double> best;
  auto it = traces.find(rank);
  if (it == traces.end()) return best;
  for (const auto& ev : it->second) {
    const double et = ev.value("t", 0.0);
    if (et <= t && match(ev) && (!best || et > *best)) best = et;
  }
  return best;
}

struct DetectorSample {
  std::string detector, scenario, trigger, bound_name;
  double after_fault_s = 0;
  std::optional<double> after_trigger_s, bound_s;
};

// Each detector's first firing after the fault, measured from its own trigger (bench.hpp).
std::vector<DetectorSample> detector_samples(const Scenario& sc, const RunResult& r) {
  std::vector<DetectorSample> out;
  if (r.facts.faults.empty()) return out;
  double fault_t = r.facts.faults.front().t;
  for (const auto& f : r.facts.faults) fault_t = std::min(fault_t, f.t);
  const auto traces = read_rank_traces(r.run_dir);
  std::set<std::string> seen;
  for (const Detection& d : r.facts.detections) {
    if (d.t < fault_t) continue;
    const DetectorInfo* info = find_detector(d.detector);
    if (!info || !info->timed) continue;
    // exit_monitor measures the fault's own kill; a peer exiting after its timeout is an echo.
    if (info == &kExitMonitor) {
      bool targeted = false;
      for (const auto& f : r.facts.faults)
        targeted = targeted || std::find(f.ranks.begin(), f.ranks.end(), d.rank) != f.ranks.end();
      if (!targeted) continue;
    }
    if (!seen.insert(d.detector).second) continue;
    DetectorSample s;
    s.detector = d.detector;
    s.scenario = sc.name;
    s.after_fault_s = d.t - fault_t;
    // What starts its clock and its bound: the registry's (detect/registry.hpp).
    s.trigger = std::string(info->clock);
    if (const auto v = timeout_value(sc.timeouts, info->setting); v && info->factor > 0) {
      s.bound_name = info->factor == 1 ? std::string(info->setting) : fmt::format("{:g} x {}", info->factor, info->setting);
      s.bound_s = detector_bound_s(*info, *v);
    } else if (info == &kExitMonitor) {
      // Its bound is the supervisor's own reaction time: one tick.
      s.bound_name = std::string(info->bound);
      s.bound_s = SupervisorOptions{}.tick_s;
    }
    if (info == &kHarnessWatchdog) {
      // The limit in force is in the detail: "(progress_s = 10)", "(checkpoint_s = 20; ...)".
      std::smatch m;
      if (std::regex_search(d.detail, m, std::regex(R"(\((\w+_s) = ([0-9.]+))"))) {
        s.bound_name = m[1];
        s.bound_s = std::stod(m[2]);
      }
    }
    std::optional<double> from;
    switch (info->clock_start) {
      case ClockStart::kFault:
        if (info->factor == 0 && !s.bound_s) break;  // reacts to the fault: no latency of its own to measure
        from = fault_t;
        break;
      case ClockStart::kCollectiveEntry:
        from = last_event_before(traces, d.rank, d.t, [](const json& ev) {
          return ev.value("ev", "") == "coll" && ev.value("edge", "") == "begin";
        });
        break;
      case ClockStart::kRankLastEvent:
        // Any trace line is a sign of life to the supervisor, not only `hb`.
        from = last_event_before(traces, d.rank, d.t, [](const json&) { return true; });
        break;
      case ClockStart::kJobLastProgress:
        // Its other clock: one rank stopped by a signal for the limit (the detection names it),
        // from the stop, which is the fault that stopped that rank.
        if (info == &kHarnessWatchdog && d.rank >= 0) {
          for (const auto& f : r.facts.faults)
            if (std::find(f.ranks.begin(), f.ranks.end(), d.rank) != f.ranks.end() && (!from || f.t < *from)) from = f.t;
          if (from) {
            s.trigger = "the rank's stop";
            break;
          }
        }
        for (const auto& [rank, evs] : traces) {
          const auto t = last_event_before(traces, rank, d.t, [](const json& ev) { return ev.value("ev", "") != "hb"; });
          if (t && (!from || *t > *from)) from = t;
        }
        break;
      case ClockStart::kNone:
        break;
    }
    if (from) s.after_trigger_s = d.t - *from;
    out.push_back(s);
  }
  return out;
}

class Bench {
 public:
  explicit Bench(const BenchOptions& o) : o_(o) {}
  int run();

 private:
  bool interrupted() const { return o_.interrupted && *o_.interrupted; }
  // One run; its reports are written after the measurement. supervise: the CPU used up to
  // the end of supervision (the runner's "triage" state), filled when given.
  RunResult run_one(PreparedScenario& ps, const std::string& section, const std::string& label,
                    Cpu* supervise = nullptr);
  PreparedScenario load(const fs::path& file, const std::optional<Timeouts>& t);
  fs::path write_scenario(const std::string& name, const std::string& text);
  json detectors();
  json trace_overhead();
  json cpu_share();
  json triage();
  json flight_recorder();
  void note(const std::string& s) { std::cerr << "bench: " << s << std::endl; }

  const BenchOptions& o_;
  HostInfo host_;
  int repeat_ = 1;
  std::vector<std::string> errors_;
  json runs_ = json::array();
};

PreparedScenario Bench::load(const fs::path& file, const std::optional<Timeouts>& t) {
  PreparedScenario ps = prepare_scenario(file);
  if (t) {
    ps.scenario.timeouts = *t;
    ps.scenario.source_text =
        scenario_with_timeouts(ps.scenario.source_text, *t, "hanglab bench --quick: [timeouts] shortened");
  }
  return ps;
}

fs::path Bench::write_scenario(const std::string& name, const std::string& text) {
  const fs::path dir = o_.out / "scenarios";
  fs::create_directories(dir);
  const fs::path f = dir / (name + ".toml");
  write_file(f, text);
  return f;
}

RunResult Bench::run_one(PreparedScenario& ps, const std::string& section, const std::string& label, Cpu* supervise) {
  RunOptions ro;
  ro.results_dir = o_.out / "runs" / section;
  ro.capture_stacks = false;  // stacks cost seconds per hang and say nothing about latency
  ro.record_history = false;
  ro.interrupt_fd = o_.interrupt_fd;
  std::optional<Cpu> at_triage;
  ro.on_state = [&](const std::string& s) {
    if (!at_triage && s == "triage") at_triage = cpu_now();
  };
  const double t0 = mono_now();
  RunResult r = run_scenario(ps, host_, ro);
  if (supervise) *supervise = at_triage ? *at_triage : cpu_now();
  write_run_reports(ps.scenario, r, ro);
  note(fmt::format("{:<15} {:<28} outcome={:<9} {:5.1f} s  {}", section, label,
                   r.facts.outcome.empty() ? "-" : r.facts.outcome, mono_now() - t0, r.run_dir.string()));
  runs_.push_back({{"section", section}, {"label", label}, {"run_dir", r.run_dir.string()},
                   {"outcome", r.facts.outcome}, {"verdict", r.verdict.status}});
  return r;
}

json Bench::detectors() {
  const fs::path sdir = default_scenarios_dir();
  std::optional<Timeouts> quick_t;
  if (o_.quick) {
    Timeouts t;
    t.init_s = 30;
    t.collective_s = 2;
    // The watchdog runs from launch: it must outlast loading LibTorch on a loaded machine.
    t.progress_s = 8;
    t.heartbeat_s = 0.5;
    quick_t = t;
  }
  std::vector<std::string> names = {"kill_rank", "freeze_rank"};
  if (!o_.quick) names.push_back("skip_collective_linger");
  std::vector<DetectorSample> samples;
  json verdicts = json::array();
  std::map<std::string, json> verdict_by;
  for (int i = 0; i < repeat_ && !interrupted(); ++i) {
    for (const auto& name : names) {
      if (interrupted()) break;
      const fs::path file = sdir / (name + ".toml");
      if (!fs::exists(file)) {
        errors_.push_back("detectors: " + file.string() + " not found");
        continue;
      }
      PreparedScenario ps = load(file, quick_t);
      const Scenario sc = ps.scenario;
      RunResult r = run_one(ps, "detectors", fmt::format("{} #{}", name, i + 1));
      const double verdict_t = unix_now();
      if (r.verdict.status == "skipped" || r.facts.faults.empty()) {
        errors_.push_back(fmt::format("detectors: {} did not fire its fault ({})", name,
                                      r.verdict.skip_reason.empty() ? r.facts.outcome : r.verdict.skip_reason));
        continue;
      }
      for (auto& s : detector_samples(sc, r)) samples.push_back(s);
      if (name == "skip_collective_linger") continue;
      double fault_t = r.facts.faults.front().t;
      std::optional<double> first_detect;
      for (const auto& d : r.facts.detections)
        if (d.t >= fault_t && (!first_detect || d.t < *first_detect)) first_detect = d.t;
      double last_exit = 0;
      for (const auto& e : r.facts.exits) last_exit = std::max(last_exit, e.t);
      json& v = verdict_by[name];
      if (v.is_null())
        v = {{"scenario", name}, {"outcome", r.facts.outcome}, {"to_detection_s", json::array()},
             {"to_all_gone_s", json::array()}, {"to_verdict_s", json::array()}};
      if (first_detect) v["to_detection_s"].push_back(*first_detect - fault_t);
      v["to_all_gone_s"].push_back(std::max(last_exit, r.facts.end_t) - fault_t);
      v["to_verdict_s"].push_back(verdict_t - fault_t);
    }
  }
  // Per detector and scenario: the samples and their spread.
  json dets = json::array();
  std::map<std::pair<std::string, std::string>, std::vector<const DetectorSample*>> by;
  for (const auto& s : samples) by[{s.detector, s.scenario}].push_back(&s);
  for (const auto& [key, v] : by) {
    std::vector<double> after_fault, after_trigger, ratio;
    for (const auto* s : v) {
      after_fault.push_back(s->after_fault_s);
      if (s->after_trigger_s) after_trigger.push_back(*s->after_trigger_s);
      if (s->after_trigger_s && s->bound_s && *s->bound_s > 0) ratio.push_back(*s->after_trigger_s / *s->bound_s);
    }
    const DetectorSample& s0 = *v.front();
    dets.push_back({{"detector", key.first},
                    {"scenario", key.second},
                    {"trigger", s0.trigger},
                    {"bound", s0.bound_s ? json(s0.bound_name) : json(nullptr)},
                    {"bound_s", s0.bound_s ? json(*s0.bound_s) : json(nullptr)},
                    {"after_fault_s", stats(after_fault)},
                    {"after_trigger_s", stats(after_trigger)},
                    {"ratio", stats(ratio)},
                    {"ratios", ratio}});
  }
  for (auto& [name, v] : verdict_by) {
    for (const char* k : {"to_detection_s", "to_all_gone_s", "to_verdict_s"}) {
      std::vector<double> xs = v[k].get<std::vector<double>>();
      v[k] = stats(xs);
    }
    verdicts.push_back(v);
  }
  return {{"detectors", dets}, {"verdicts", verdicts}};
}

// The trace writer alone: microseconds per emit() of a collective-sized event onto a file in
// `dir` (one write(2) each, as in a rank), the median of 5 rounds of 4,000.
double emit_cost_us(const fs::path& dir) {
  const fs::path f = dir / "emit_cost.jsonl";
  std::vector<double> rounds;
  for (int round = 0; round < 5; ++round) {
    std::error_code ec;
    fs::remove(f, ec);
    Trace trace(f.string(), 0);
    const int n = 4000;
    const double t0 = mono_now();
    for (int i = 0; i < n; ++i)
      trace.emit("coll", {{"edge", i % 2 ? "end" : "begin"}, {"seq", i}, {"op", "allreduce"}, {"numel", 4160},
                          {"step", i / 16}});
    rounds.push_back((mono_now() - t0) / n * 1e6);
  }
  std::error_code ec;
  fs::remove(f, ec);
  return median_of(rounds);
}

// Trace lines a traced step writes: rank 0's non-heartbeat events of steps after the first
// quad, per traced step.
double events_per_traced_step(const fs::path& run_dir, int first_step) {
  std::ifstream in(run_dir / "ranks" / "0" / "events.jsonl");
  std::set<int> steps;
  size_t events = 0;
  for (std::string line; std::getline(in, line);) {
    const json ev = json::parse(line, nullptr, false);
    if (!ev.is_object() || ev.value("ev", "") == "hb" || !ev.contains("step") || !ev["step"].is_number_integer()) continue;
    const int s = ev["step"].get<int>();
    if (s < first_step) continue;
    steps.insert(s);
    ++events;
  }
  return steps.empty() ? 0 : static_cast<double>(events) / static_cast<double>(steps.size());
}

// Every detector that fires during a run, quoted for a TOML list (the registry's).
std::string runtime_detector_list() {
  std::string out;
  for (const DetectorInfo* d : detector_registry())
    if (d->timed && d->expectable) out += fmt::format("{}\"{}\"", out.empty() ? "" : ", ", d->name);
  return out;
}

// A healthy torch_ddp scenario, written to <out>/scenarios/ so the runs can be repeated.
std::string healthy_toml(const std::string& name, int ranks, int steps, int step_ms, const std::string& env,
                         double init_s) {
  return fmt::format(R"(# Reproduces: nothing (hanglab bench): a healthy {1}-rank torch_ddp run.
# Expected: completes; no detector fires.
[scenario]
name = "{0}"
tags = ["bench"]
deadline_s = {5}

[workload]
name = "torch_ddp"
backend = "gloo"
world_size = {1}
steps = {2}
[workload.args]
step_ms = {3}
[workload.env]
{4}
[timeouts]
init_s = {6}
collective_s = {6}
progress_s = {6}
heartbeat_s = 1

[expect]
outcome = "completed"
not_detected_by = [{7}]
)",
                     name, ranks, steps, step_ms, env, init_s * 3, init_s, runtime_detector_list());
}

json Bench::trace_overhead() {
  // One run traces steps 4k+1 and 4k+4 and not 4k+2, 4k+3 (HANGLAB_TRACE_OFF=ab): the two
  // arms share the machine's drift, which on a shared 2-core box dwarfs a 1 % effect
  // between separate runs. Step times from HANGLAB_STEP_TIMES, the same for both arms.
  const int runs = o_.quick ? 1 : repeat_;
  const int steps = o_.quick ? 120 : 400, step_ms = 20, ranks = 2, skip = 4;
  std::vector<std::vector<double>> on_quads, off_quads;  // per ABBA quad: its two steps of each arm
  json run_list = json::array();
  double events_per_step = 0;
  for (int k = 0; k < runs && !interrupted(); ++k) {
    const std::string name = fmt::format("trace_ab_{}", k + 1);
    const fs::path times = fs::absolute(o_.out / "trace_ab" / (name + ".rank%r.txt"));
    fs::create_directories(times.parent_path());
    const std::string env =
        fmt::format("HANGLAB_STEP_TIMES = \"{}\"\nHANGLAB_TRACE_OFF = \"ab\"\n", times.string());
    PreparedScenario ps = load(write_scenario(name, healthy_toml(name, ranks, steps, step_ms, env, 60)), std::nullopt);
    RunResult r = run_one(ps, "trace_overhead", name);
    std::string t0 = times.string();
    t0.replace(t0.find("%r"), 2, "0");
    std::map<int, std::pair<std::vector<double>, std::vector<double>>> quads;
    std::vector<double> on, off;
    std::ifstream in(t0);
    int step = 0, traced = 0;
    double ms = 0;
    while (in >> step >> ms >> traced) {
      if (step <= skip) continue;
      auto& q = quads[(step - 1) / 4];
      (traced ? q.first : q.second).push_back(ms);
      (traced ? on : off).push_back(ms);
    }
    if (r.facts.outcome != "completed" || on.size() + off.size() < static_cast<size_t>(steps - skip) / 2) {
      errors_.push_back(fmt::format("trace_overhead: {} gave {} step times (outcome {})", name, on.size() + off.size(),
                                    r.facts.outcome));
      continue;
    }
    events_per_step = events_per_traced_step(r.run_dir, skip + 1);
    for (auto& [i, q] : quads) {
      if (q.first.empty() || q.second.empty()) continue;
      on_quads.push_back(q.first);
      off_quads.push_back(q.second);
    }
    run_list.push_back({{"on_ms", median_of(on)}, {"off_ms", median_of(off)}, {"ratio", median_of(on) / median_of(off)},
                        {"steps", on.size() + off.size()}});
  }
  json j = {{"workload", fmt::format("torch_ddp, {} ranks, {} steps of step_ms={} (sleep) per run", ranks, steps, step_ms)},
            {"design", "in-run ABBA: steps 4k+1, 4k+4 traced, 4k+2, 4k+3 not (HANGLAB_TRACE_OFF=ab); first 4 dropped"},
            {"runs", run_list},
            {"goal_fraction", 0.01}};
  if (on_quads.empty()) return j;
  const RatioEstimate e = ratio_of_medians(on_quads, off_quads, 2000, true);
  std::vector<double> all_on, all_off;
  for (const auto& v : on_quads) all_on.insert(all_on.end(), v.begin(), v.end());
  for (const auto& v : off_quads) all_off.insert(all_off.end(), v.begin(), v.end());
  j["median_on_ms"] = median_of(all_on);
  j["median_off_ms"] = median_of(all_off);
  j["steps_on"] = all_on.size();
  j["steps_off"] = all_off.size();
  j["ratio"] = e.ratio;
  j["ci90"] = {e.lo, e.hi};
  j["overhead_pct"] = (e.ratio - 1) * 100;
  j["overhead_us_per_step"] = (median_of(all_on) - median_of(all_off)) * 1000;
  // The writer's own cost, precise where the step-time A/B is noisy: emit() timed here,
  // times the lines a traced step writes, against the untraced median step.
  const double us = emit_cost_us(o_.out / "trace_ab");
  j["emit_us"] = us;
  j["events_per_step"] = events_per_step;
  j["writer_pct"] = 100 * us * events_per_step / 1000 / std::max(1e-9, median_of(all_off));
  j["goal"] = goal_verdict(e, 0.01);
  return j;
}

json Bench::cpu_share() {
  const std::vector<int> worlds = o_.quick ? std::vector<int>{16} : std::vector<int>{16, 32, 64};
  const int steps = o_.quick ? 8 : 20, step_ms = 50;
  json out = json::array();
  for (int n : worlds) {
    if (interrupted()) break;
    const std::string name = fmt::format("cpu_share_{}", n);
    PreparedScenario ps =
        load(write_scenario(name, healthy_toml(name, n, steps, step_ms, "", 120)), std::nullopt);
    const Cpu before = cpu_now();
    Cpu at_end;
    RunResult r = run_one(ps, "cpu_share", name, &at_end);
    const Cpu after = cpu_now();
    const double wall = r.facts.end_t - r.facts.start_t;
    const double harness = at_end.self_s - before.self_s;
    const double ranks_cpu = after.children_s - before.children_s;
    if (r.facts.outcome != "completed" || wall <= 0) {
      errors_.push_back(fmt::format("cpu_share: the {}-rank run did not complete (outcome {})", n, r.facts.outcome));
      continue;
    }
    out.push_back({{"ranks", n},
                   {"steps", steps},
                   {"step_ms", step_ms},
                   {"wall_s", wall},
                   {"harness_cpu_s", harness},
                   {"triage_cpu_s", after.self_s - at_end.self_s},
                   {"ranks_cpu_s", ranks_cpu},
                   {"harness_share", harness / std::max(1e-9, harness + ranks_cpu)},
                   {"harness_core_pct", 100 * harness / wall},
                   {"cpus", std::thread::hardware_concurrency()}});
  }
  return out;
}

json Bench::triage() {
  const std::vector<int> worlds = o_.quick ? std::vector<int>{1024} : std::vector<int>{1024, 16384};
  const int steps = o_.quick ? 100 : 200;
  fs::path exe = o_.hanglab_exe;
  if (exe.empty()) exe = fs::read_symlink("/proc/self/exe");
  json out = json::array();
  for (int n : worlds) {
    if (interrupted()) break;
    const SyntheticJob job{n, steps, n / 2 + 1};
    const fs::path dir = o_.out / "triage_work" / fmt::format("{}-ranks", n);
    fs::remove_all(dir);
    const double g0 = mono_now();
    const uint64_t bytes = write_synthetic_incident(job, dir, false);
    const double gen_s = mono_now() - g0;
    const TriageMeasure m = measure_log_triage(dir, job, 0, exe);
    fs::remove_all(dir);
    note(fmt::format("{:<15} {:<28} {:.2f} s, peak RSS {:.0f} MB: {}", "triage", fmt::format("{} ranks", n), m.wall_s,
                     m.maxrss_kb / 1024.0, m.answer));
    if (!m.ok) errors_.push_back(fmt::format("triage: {} ranks: {}", n, m.answer));
    out.push_back({{"ranks", n},
                   {"steps", steps},
                   {"files", n},
                   {"bytes", bytes},
                   {"lines", synthetic_incident_lines(job)},
                   {"generate_s", gen_s},
                   {"wall_s", m.wall_s},
                   {"peak_rss_mb", m.maxrss_kb / 1024.0},
                   {"ok", m.ok},
                   {"answer", m.answer}});
  }
  std::error_code ec;
  fs::remove(o_.out / "triage_work", ec);
  return out;
}

json Bench::flight_recorder() {
  FrBenchOptions fo;
  fo.hanglab_exe = o_.hanglab_exe.empty() ? fs::read_symlink("/proc/self/exe") : o_.hanglab_exe;
  // fo.work empty: the scaled dump sets go to a temporary directory, removed afterwards.
  // --quick: 8 ranks, one run each (indicative only); the full run adds 1,024 ranks.
  fo.ranks = o_.quick ? std::vector<int>{8} : std::vector<int>{8, 1024};
  fo.repeat = repeat_;
  fo.interrupted = o_.interrupted;
  fo.note = [this](const std::string& s) { note(s); };
  return run_fr_bench(fo, errors_);
}

int Bench::run() {
  repeat_ = o_.repeat > 0 ? o_.repeat : (o_.quick ? 1 : 3);
  host_ = detect_host();
  fs::create_directories(o_.out);
  utsname u{};
  ::uname(&u);
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  const double t0 = mono_now();
  json j = {{"version", 1},
            {"generated", iso_time(unix_now())},
            {"command", fmt::format("hanglab bench --out {}{}{}", o_.out.string(), o_.quick ? " --quick" : "",
                                    o_.repeat > 0 ? fmt::format(" --repeat {}", o_.repeat) : "")},
            {"quick", o_.quick},
            {"repeat", repeat_},
            {"host", {{"cpus", std::thread::hardware_concurrency()},
                      {"kernel", std::string(u.sysname) + " " + u.release},
                      {"loadavg_1m_at_start", load[0]}}}};
  note(fmt::format("{} mode, {} repeat(s); runs under {}", o_.quick ? "quick" : "full", repeat_,
                   (o_.out / "runs").string()));
  const json d = detectors();
  j["detectors"] = d["detectors"];
  j["verdicts"] = d["verdicts"];
  if (!interrupted()) j["trace_overhead"] = trace_overhead();
  if (!interrupted()) j["cpu_share"] = cpu_share();
  if (!interrupted()) j["triage"] = triage();
  if (!interrupted()) j["flight_recorder"] = flight_recorder();
  ::getloadavg(load, 3);
  j["host"]["loadavg_1m_at_end"] = load[0];
  j["duration_s"] = mono_now() - t0;
  j["runs"] = runs_;
  j["errors"] = errors_;
  if (interrupted()) {
    std::cerr << "hanglab: interrupted; ranks torn down, injectors reverted (nothing written)\n";
    return 130;
  }
  for (const auto& p : check_bench_json(j))
    if (std::find(errors_.begin(), errors_.end(), p) == errors_.end()) errors_.push_back(p);
  j["errors"] = errors_;
  write_file(o_.out / "bench.json", j.dump(2) + "\n");
  const std::string text = render_bench_text(j);
  write_file(o_.out / "bench.txt", text);
  write_file(o_.out / "bench.html", render_bench_html(j));
  std::cout << text << "written: " << (o_.out / "bench.json").string() << ", " << (o_.out / "bench.html").string()
            << "\n";
  return errors_.empty() ? 0 : 3;
}

}  // namespace

int run_bench(const BenchOptions& opts) {
  Bench b(opts);
  return b.run();
}

}  // namespace hanglab
