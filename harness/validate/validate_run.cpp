// `hanglab validate`: the passes of real runs; see validate_run.hpp. The classification,
// statistics and rendering it prints are the pure functions of validate.hpp.
#include "validate/validate_run.hpp"

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "detect/registry.hpp"
#include "scenario/config_error.hpp"
#include "injector.hpp"
#include "report/progress.hpp"
#include "report/run_report.hpp"
#include "run/runner.hpp"
#include "run/workloads.hpp"
#include "util.hpp"
#include "validate/torch_checks.hpp"
#include "validate/validate.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& default_validate_faults() {
  static const std::vector<std::string> kFaults = {"kill_rank", "skip_collective_linger", "freeze_rank"};
  return kFaults;
}

namespace {

struct Planned {
  fs::path file;
  std::string name;
  bool healthy = false;
  double deadline_s = 120;
};

class Validator {
 public:
  explicit Validator(const ValidateOptions& o) : o_(o), progress_(0) {}

  int run();

 private:
  struct PassRuns {
    std::vector<RunObservation> runs;
    std::map<std::string, TraceSummary> clean_by_scenario;  // healthy runs without an alarm
    std::map<std::string, int> healthy_runs_by_scenario;
  };

  bool interrupted() const { return o_.interrupted && *o_.interrupted; }
  void plan();
  // Runs `what` once with `t` and `knobs` substituted (knobs only when it sets any); returns
  // false when interrupted.
  bool run_one(const Planned& what, const Timeouts& t, const TorchKnobs& knobs, const std::string& pass,
               PassRuns& into);
  // The knob probes (scenarios/validate/knobs/) under the proposal; false when interrupted.
  bool run_knob_probes(KnobProbe& probe);
  bool run_pass(const std::string& pass, const Timeouts& t, const TorchKnobs& knobs, bool with_faults, PassRuns& into);

  const ValidateOptions& o_;
  ValidateSettings settings_;
  Progress progress_;
  HostInfo host_;
  std::vector<Planned> baseline_, faults_;
  std::string fault_source_;
};

void Validator::plan() {
  const fs::path sdir = default_scenarios_dir();
  std::vector<std::string> baseline = o_.baseline;
  if (baseline.empty()) baseline.push_back((sdir / "validate").string());
  std::vector<fs::path> fault_files;
  if (!o_.scenarios.empty()) {
    fault_files = expand_scenario_paths(o_.scenarios);
    fault_source_ = "--scenarios " + fmt::format("{}", fmt::join(o_.scenarios, " "));
  } else {
    for (const auto& name : default_validate_faults())
      if (fs::exists(sdir / (name + ".toml"))) fault_files.push_back(sdir / (name + ".toml"));
    fault_source_ = "default subset of " + sdir.string() + "/";
    if (fault_files.empty()) {
      fault_files = expand_scenario_paths({sdir.string()});
      fault_source_ = "every fault scenario in " + sdir.string() + "/";
    }
  }
  // Everything is loaded and validated before anything runs: bad input exits 2 at once.
  std::set<std::string> seen;
  auto add = [&](const fs::path& f) {
    PreparedScenario ps = prepare_scenario(f);
    Planned p{f, ps.scenario.name, ps.scenario.faults.empty(), ps.scenario.deadline_s};
    if (!seen.insert(fs::weakly_canonical(f).string()).second) return;
    // A healthy scenario in the fault list is one more baseline; a fault scenario in the
    // baseline list is validated like the catalog's.
    (p.healthy ? baseline_ : faults_).push_back(p);
  };
  for (const auto& f : expand_scenario_paths(baseline)) add(f);
  for (const auto& f : fault_files) add(f);
  if (baseline_.empty())
    throw ConfigError(baseline.front(), 0, 0, "", "no healthy scenario (without [[fault]]) to measure the phases on");
}

bool Validator::run_one(const Planned& what, const Timeouts& t, const TorchKnobs& knobs, const std::string& pass,
                        PassRuns& into) {
  if (interrupted()) return false;
  PreparedScenario ps = prepare_scenario(what.file);
  ps.scenario.timeouts = t;
  ps.scenario.source_text =
      scenario_with_timeouts(ps.scenario.source_text, t,
                             fmt::format("hanglab validate ({} pass): [timeouts] replaced by {}", pass,
                                         pass == "measure" ? "permissive values (the deadline)" : settings_.file));
  if (knobs.any()) {
    ps.scenario.torch = knobs;
    ps.scenario.source_text = scenario_with_torch(ps.scenario.source_text, knobs);
  }
  progress_.begin(fmt::format("{} {}", pass, what.name));
  RunOptions ro;
  ro.results_dir = o_.results / pass;
  ro.history_db = o_.results / "history.sqlite";
  ro.capture_stacks = false;  // stacks say nothing about timeouts and cost seconds per hang
  ro.interrupt_fd = o_.interrupt_fd;
  ro.on_state = progress_.state_callback();
  RunResult r = run_and_report(ps, host_, ro);
  if (r.facts.teardown_reason == "interrupted" || interrupted()) return false;

  RunObservation obs;
  obs.scenario = what.name;
  obs.run_dir = r.run_dir.string();
  obs.healthy = what.healthy;
  obs.skipped = r.verdict.status == "skipped";
  obs.skip_reason = r.verdict.skip_reason;
  obs.facts = r.facts;
  obs.verdict_status = r.verdict.status;
  const ExpectSpec& ex = ps.scenario.expect;
  bool runtime_detector = false;
  for (const auto& d : ex.detected_by) {
    const DetectorInfo* info = find_detector(d);
    runtime_detector = runtime_detector || (info && info->timed);
  }
  obs.detection_required =
      runtime_detector || (ex.detected_by.empty() && ex.outcome && (*ex.outcome == "hang" || *ex.outcome == "crash"));
  TraceSummary summary = summarize_traces(read_rank_traces(r.run_dir));
  obs.spans = summary.spans;

  // One line per run, judged on its own as the pass will judge it.
  std::string status = "SKIPPED", line_text = obs.skip_reason;
  if (!obs.skipped) {
    const PassResult alone = classify_pass(pass, {obs}, t, settings_.slack_s);
    status = alone.pass() ? "PASS" : "FAIL";
    std::vector<std::string> parts;
    if (what.healthy) {
      for (const auto& f : alone.findings)
        parts.push_back(fmt::format("{}{} +{:.2f}s", f.detector.empty() ? f.detail : f.detector,
                                    f.ranks.size() > 1 ? fmt::format(" x{}", f.ranks.size()) : "", f.at_s));
      line_text = parts.empty() ? "no alarm" : "alarms: " + fmt::format("{}", fmt::join(parts, ", "));
    } else {
      for (const auto& l : alone.latencies)
        parts.push_back(fmt::format("{} {:+.2f}s{}", l.detector, l.latency_s, l.late ? " LATE" : ""));
      for (const auto& f : alone.findings)
        if (f.kind != "late") parts.push_back(f.kind == "miss" ? "MISSED: " + f.detail : "alarm before the fault: " + f.detector);
      line_text = "after the fault: " + (parts.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(parts, ", ")));
    }
  }
  progress_.result(fmt::format("{:<8} {:<12} {:<24} outcome={:<9} {:5.1f}s  {}", status, pass, what.name,
                               r.facts.outcome.empty() ? "-" : r.facts.outcome, r.duration_s, line_text));
  if (what.healthy && !obs.skipped) {
    ++into.healthy_runs_by_scenario[what.name];
    if (r.facts.detections.empty() && r.facts.outcome == "completed") into.clean_by_scenario[what.name].merge(summary);
  }
  into.runs.push_back(std::move(obs));
  return true;
}

bool Validator::run_pass(const std::string& pass, const Timeouts& t, const TorchKnobs& knobs, bool with_faults,
                         PassRuns& into) {
  for (int i = 0; i < o_.repeat; ++i)
    for (const auto& b : baseline_)
      if (!run_one(b, t, knobs, pass, into)) return false;
  if (with_faults)
    for (const auto& f : faults_)
      if (!run_one(f, t, knobs, pass, into)) return false;
  return true;
}

struct KnobProbeRun {
  std::string kind;  // healthy | timeout | debug | control | mismatch (read_knob_probe)
  std::string file;  // in scenarios/validate/knobs/
  TorchKnobs knobs;
};

// The knob probes. A debug level is measured on runs of its own (with every knob, as proposed,
// against a control without any) and left out of the Flight Recorder probes: on torch 2.15,
// DETAIL crashes DDP's constructor, which would hide every other knob's effect.
std::vector<KnobProbeRun> knob_probe_plan(const TorchKnobs& k) {
  TorchKnobs without_debug = k;
  without_debug.set.erase("distributed_debug");
  std::vector<KnobProbeRun> plan = {{"healthy", "python_healthy.toml", without_debug},
                                    {"timeout", "python_timeout.toml", without_debug}};
  const auto debug = k.string_value("distributed_debug");
  if (debug && *debug != "OFF") {
    plan.push_back({"debug", "python_healthy.toml", k});
    plan.push_back({"control", "python_healthy.toml", TorchKnobs{}});
    plan.push_back({"cost", "cpp_healthy.toml", k});
    plan.push_back({"cost_control", "cpp_healthy.toml", TorchKnobs{}});
  }
  if (debug && *debug == "DETAIL")
    for (const auto& [kind, file] : {std::pair<std::string, std::string>{"op", "cpp_op_mismatch.toml"},
                                     {"skip", "cpp_skip_allreduce.toml"}}) {
      plan.push_back({kind, file, k});
      plan.push_back({kind + "_control", file, TorchKnobs{}});
    }
  return plan;
}

bool Validator::run_knob_probes(KnobProbe& probe) {
  const fs::path dir = default_scenarios_dir() / "validate" / "knobs";
  PassRuns runs;
  for (const auto& run : knob_probe_plan(settings_.torch)) {
    PreparedScenario ps = prepare_scenario(dir / run.file);
    const std::string label = run.kind.find("control") != std::string::npos ? " (no knobs)"
                              : run.kind == "debug" ? " (all knobs)"
                              : run.knobs.set.size() < settings_.torch.set.size() ? " (no debug level)"
                                                                                   : "";
    Planned p{dir / run.file, ps.scenario.name + label, ps.scenario.faults.empty(), ps.scenario.deadline_s};
    // The proposal's timeouts, except where a Python rank needs more than a C++ one: `import
    // torch` takes seconds before the first output line (init_s, progress_s).
    Timeouts t = settings_.timeouts;
    t.init_s = std::max(t.init_s, ps.scenario.timeouts.init_s);
    t.progress_s = std::max(t.progress_s, ps.scenario.timeouts.progress_s);
    if (!run_one(p, t, run.knobs, "knobs", runs)) return false;
    if (!runs.runs.back().skipped) read_knob_probe(runs.runs.back().run_dir, run.kind, probe);
  }
  return true;
}

std::string timeouts_line(const Timeouts& t) {
  std::string s = fmt::format("init_s={:g} collective_s={:g} progress_s={:g} heartbeat_s={:g}", t.init_s, t.collective_s,
                              t.progress_s, t.heartbeat_s);
  s += t.checkpoint_s ? fmt::format(" checkpoint_s={:g}", *t.checkpoint_s) : " checkpoint_s=-";
  s += t.eval_s ? fmt::format(" eval_s={:g}", *t.eval_s) : " eval_s=-";
  return s;
}

int Validator::run() {
  settings_ = load_validate_settings(o_.settings_file);
  if (o_.repeat < 1) throw ConfigError("--repeat", 0, 0, "", "must be >= 1");
  plan();
  host_ = detect_host();
  fs::create_directories(o_.results);
  const fs::path out_file = o_.out.empty() ? o_.results / "recommended.toml" : o_.out;

  const size_t per_pass = baseline_.size() * static_cast<size_t>(o_.repeat) + faults_.size();
  const size_t probes = settings_.torch.any() ? knob_probe_plan(settings_.torch).size() : 0;
  progress_.set_total(per_pass * (o_.recheck ? 2 : 1) + probes);
  std::vector<std::string> names;
  for (const auto& f : faults_) names.push_back(f.name);
  std::vector<std::string> bnames;
  for (const auto& b : baseline_) bnames.push_back(b.name);
  std::cout << fmt::format("hanglab validate {}\n  proposed: {}\n  baseline (healthy): {} x{}\n  faults ({}): {}\n\n",
                           settings_.file, timeouts_line(settings_.timeouts), fmt::join(bnames, ", "), o_.repeat,
                           fault_source_, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")))
            << std::flush;

  auto interrupted_exit = [&] {
    progress_.done();
    std::cerr << "hanglab: interrupted; ranks torn down, injectors reverted\n";
    return 130;
  };

  PassRuns proposed;
  if (!run_pass("proposed", settings_.timeouts, settings_.torch, true, proposed)) return interrupted_exit();
  KnobProbe probe;
  if (settings_.torch.any() && !run_knob_probes(probe)) return interrupted_exit();
  const std::vector<KnobInteraction> knob_rows =
      settings_.torch.any() ? torch_interactions(settings_.torch, settings_.timeouts, probe) : std::vector<KnobInteraction>{};
  const int knob_harmful =
      static_cast<int>(std::count_if(knob_rows.begin(), knob_rows.end(), [](const KnobInteraction& r) { return r.finding(); }));

  // Phase durations come from healthy runs that no alarm cut short; a baseline that had
  // an alarm under the proposal is measured again with permissive timeouts.
  TraceSummary measured;
  std::vector<std::string> measured_from;
  int measure_runs = 0;
  PassRuns measure;
  for (const auto& b : baseline_) {
    if (proposed.clean_by_scenario.count(b.name)) {
      measured.merge(proposed.clean_by_scenario[b.name]);
      measured_from.push_back(b.name + " (proposed pass)");
      continue;
    }
    if (!proposed.healthy_runs_by_scenario.count(b.name)) continue;  // skipped here
    Timeouts permissive = settings_.timeouts;
    permissive.init_s = permissive.collective_s = permissive.progress_s = b.deadline_s;
    permissive.checkpoint_s = permissive.eval_s = b.deadline_s;
    measure_runs += o_.repeat;
    progress_.set_total(per_pass * (o_.recheck ? 2 : 1) + probes + static_cast<size_t>(measure_runs));
    for (int i = 0; i < o_.repeat; ++i)
      if (!run_one(b, permissive, settings_.torch, "measure", measure)) return interrupted_exit();
    if (measure.clean_by_scenario.count(b.name)) {
      measured.merge(measure.clean_by_scenario[b.name]);
      measured_from.push_back(b.name + " (measure pass: permissive timeouts)");
    }
  }
  std::map<std::string, Distribution> stats;
  for (const auto& [k, v] : measured.samples) stats[k] = summarize(v);
  const Recommendation rec = recommend(stats, settings_.timeouts, settings_.margin);

  const PassResult first = classify_pass("proposed", proposed.runs, settings_.timeouts, settings_.slack_s);

  std::vector<std::string> knob_notes;
  const TorchKnobs rec_knobs = settings_.torch.any() ? recommend_torch_knobs(settings_.torch, knob_rows, rec.timeouts,
                                                                              settings_.margin.factor, knob_notes)
                                                     : TorchKnobs{};
  std::optional<PassResult> second;
  if (o_.recheck) {
    PassRuns recommended;
    if (!run_pass("recommended", rec.timeouts, rec_knobs, true, recommended)) return interrupted_exit();
    second = classify_pass("recommended", recommended.runs, rec.timeouts, settings_.slack_s);
  }
  progress_.done();

  // The report.
  std::string report;
  report += fmt::format("\nhealthy phase durations, seconds ({}):\n",
                        measured_from.empty() ? "no clean baseline run: nothing measured"
                                              : fmt::format("{}", fmt::join(measured_from, "; ")));
  report += render_phase_table(stats);
  report += "\n" + render_pass(first, &rec, settings_.cost_ranks);
  if (settings_.torch.any()) report += "\n" + render_torch_section(settings_.torch, knob_rows, probe);
  std::vector<std::string> header = {
      "hanglab validate: recommended timeouts and watchdog settings",
      fmt::format("proposed: {} ({})", settings_.file, timeouts_line(settings_.timeouts)),
      fmt::format("measured on: {}, {} UTC", measured_from.empty() ? "nothing" : fmt::format("{}", fmt::join(bnames, ", ")),
                  iso_time(unix_now()).substr(0, 19)),
      fmt::format("proposed settings: {}", first.pass() && knob_harmful == 0 ? "PASS" : "FAIL"),
  };
  if (second) header.push_back(fmt::format("re-validated in the same command: {} ({} false positives, {} misses, {} late)",
                                           second->pass() ? "PASS" : "FAIL", second->count("false_positive"),
                                           second->count("miss"), second->count("late")));
  header.push_back("collective_s clears the longest healthy wait in a collective (checkpoint barrier, slow first collective);");
  header.push_back("checkpoint_s / eval_s are the harness watchdog's limit while a rank is in that phase.");
  std::string toml_text = recommendation_toml(rec, settings_, header);
  if (settings_.torch.any()) {
    // The knobs: the proposal with each harmful interaction that has a clear fix fixed.
    toml_text += fmt::format("\n# [torch]: the proposal{}\n", knob_notes.empty() ? " (no harmful interaction found)"
                                                                                 : ", changed where it was harmful "
                                                                                   "(validate.txt, \"torch knobs\"):");
    for (const auto& n : knob_notes) toml_text += "#   " + n + "\n";
    if (rec_knobs.any()) toml_text += torch_knobs_toml(rec_knobs);
  }
  if (out_file.has_parent_path()) fs::create_directories(out_file.parent_path());
  write_file(out_file, toml_text);

  report += fmt::format("\nrecommended settings (each timeout clears the healthy durations by the larger of {:g} x p99 and "
                        "max + {:g} s), written to {}:\n",
                        settings_.margin.factor, settings_.margin.add_s, out_file.string());
  for (const auto& a : rec.advice)
    report += fmt::format("  {:<13} {:>6g}   (proposed {}) {}\n", a.key, a.recommended,
                          a.proposed ? fmt::format("{:g}", *a.proposed) : "-", a.basis);
  if (settings_.torch.any()) {
    report += fmt::format("  [torch]{}\n", knob_notes.empty() ? " as proposed" : ":");
    for (const auto& n : knob_notes) report += "    " + n + "\n";
  }
  if (second) report += "\n" + render_pass(*second, &rec, settings_.cost_ranks);
  const bool proposal_ok = first.pass() && knob_harmful == 0;
  report += fmt::format("\nverdict: the proposed settings {}", proposal_ok ? "PASS" : "FAIL");
  if (!proposal_ok)
    report += fmt::format(" ({} false positive{}, {} miss{}, {} late{})", first.count("false_positive"),
                          first.count("false_positive") == 1 ? "" : "s", first.count("miss"),
                          first.count("miss") == 1 ? "" : "es", first.count("late"),
                          settings_.torch.any() ? fmt::format(", {} harmful torch-knob interaction{}", knob_harmful,
                                                              knob_harmful == 1 ? "" : "s")
                                                : "");
  if (second)
    report += fmt::format("; the recommended settings {}{}", second->pass() ? "PASS" : "FAIL",
                          second->pass() ? " -> adopt " + out_file.string() : "");
  report += "\n";
  std::cout << report << std::flush;

  json j = {{"settings_file", settings_.file},
            {"proposed", to_json(first)},
            {"recommended_timeouts", to_json(rec.timeouts)},
            {"recommended_file", out_file.string()},
            {"slack_s", settings_.slack_s},
            {"margin", {{"factor", settings_.margin.factor}, {"add_s", settings_.margin.add_s}}}};
  json phases = json::object();
  for (const auto& [k, d] : stats) phases[k] = {{"n", d.n}, {"p50", d.p50}, {"p99", d.p99}, {"max", d.max}};
  j["phases"] = phases;
  if (second) j["recommended"] = to_json(*second);
  if (settings_.torch.any()) {
    j["torch_knobs"] = to_json(knob_rows, probe);
    j["torch_knobs"]["harmful"] = knob_harmful;
  }
  j["pass"] = proposal_ok;
  write_file(o_.results / "validate.json", j.dump(2) + "\n");
  write_file(o_.results / "validate.txt", report);
  return proposal_ok ? 0 : 1;
}

}  // namespace

int run_validate(const ValidateOptions& opts) {
  Validator v(opts);
  return v.run();
}

}  // namespace hanglab
