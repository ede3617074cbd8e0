// hanglab: the command-line entry point: subcommand dispatch. Subcommands: run (cli/run_cmd.cpp),
// triage, validate, report, history, list, describe, clean, bench, manifest (export/k8s_manifest.cpp),
// repro (repro/repro_cmd.cpp), preflight (preflight/preflight_cmd.cpp).
// Exit codes (design): 0 all expectations met, 1 an expectation failed, 2 scenario or
// usage error (nothing ran), 3 internal error or unknown verdict, 4 skipped, 130 interrupted.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <iostream>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "detect/registry.hpp"
#include "scenario/config_error.hpp"
#include "history/history.hpp"
#include "report/html_report.hpp"
#include "injector.hpp"
#include "report/junit.hpp"
#include "report/progress.hpp"
#include "report/report.hpp"
#include "run/run_record.hpp"
#include "cli/run_cmd.hpp"
#include "report/run_report.hpp"
#include "report/tooling_matrix.hpp"
#include "run/runner.hpp"
#include "run/state.hpp"
#include "triage/triage.hpp"
#include "util.hpp"
#include "validate/validate_run.hpp"
#include "bench/bench.hpp"
#include "export/k8s_manifest.hpp"
#include "repro/repro_cmd.hpp"
#include "preflight/preflight_cmd.hpp"
#include "run/workloads.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

int g_interrupt_pipe[2] = {-1, -1};
volatile sig_atomic_t g_interrupted = 0;

void on_interrupt(int) {
  g_interrupted = 1;
  char c = 1;
  (void)!::write(g_interrupt_pipe[1], &c, 1);
}

void install_interrupt_handlers() {
  if (::pipe2(g_interrupt_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// A run directory (from its trace, or --logs-only from its stdout/stderr), or plain logs.
int cmd_triage(const std::vector<std::string>& paths, const std::string& format, const TriageOptions& opts) {
  TriageResult r;
  try {
    r = triage_paths(std::vector<fs::path>(paths.begin(), paths.end()), opts);
  } catch (const std::exception& e) {
    std::cerr << paths.front() << ":0:0: " << e.what() << "\n";
    return 2;
  }
  if (format == "json")
    std::cout << to_json(r).dump(2) << "\n";
  else
    std::cout << render_text(r);
  return 0;
}

int cmd_validate(ValidateOptions o) {
  sweep_dead_runs(&std::cerr);
  install_interrupt_handlers();
  o.interrupt_fd = g_interrupt_pipe[0];
  o.interrupted = &g_interrupted;
  return run_validate(o);
}

// Regenerates report.txt, report.html and junit.xml of finished run directories from
// their files; a matrix page over them with --matrix.
// --tooling-matrix FILE.md: the detection-tooling matrix over them (FILE.md and FILE.html).
int cmd_report(const std::vector<std::string>& dirs, const std::string& format, const std::string& matrix,
               const std::string& tooling, const std::string& origin) {
  int rc = 0;
  std::vector<MatrixEntry> entries;
  std::vector<ToolingRow> tooling_rows;
  for (const auto& d : dirs) {
    try {
      if (!fs::exists(fs::path(d) / "run.json") && !fs::exists(fs::path(d) / "harness.jsonl"))
        throw std::runtime_error(d + ": not a hanglab run directory (no harness.jsonl, no run.json)");
      if (!tooling.empty()) tooling_rows.push_back(tooling_row(d, fs::absolute(tooling).parent_path()));
      if (format != "none") {  // none: only the pages over all runs (--matrix, --tooling-matrix)
        LoadedRun run = load_run_dir(d);
        std::vector<std::string> wrote;
        if (format == "all" || format == "text") {
          write_file(fs::path(d) / "report.txt", render_run_report(run.scenario, run.result));
          wrote.push_back("report.txt");
        }
        if (format == "all" || format == "html") {
          write_file(fs::path(d) / "report.html", render_run_html(d));
          wrote.push_back("report.html");
        }
        if (format == "all" || format == "junit") {
          write_file(fs::path(d) / "junit.xml", junit_xml({junit_suite(run.scenario, run.result)}));
          wrote.push_back("junit.xml");
        }
        std::cout << verdict_line(run.result) << "\n  " << d << ": " << fmt::format("{}", fmt::join(wrote, ", ")) << "\n";
      }
      if (!matrix.empty()) entries.push_back(matrix_entry(d, fs::absolute(matrix).parent_path()));
    } catch (const std::exception& e) {
      std::cerr << d << ":0:0: " << e.what() << "\n";
      rc = 2;
    }
  }
  if (!matrix.empty() && !entries.empty()) {
    write_file(matrix, render_matrix_html(entries, fmt::format("hanglab runs: {} scenarios", entries.size())));
    std::cout << "html: " << matrix << "\n";
  }
  // A directory that is not a run: nothing is (over)written.
  if (!tooling.empty() && rc == 0 && !tooling_rows.empty()) {
    fs::path md = tooling, html = fs::path(tooling).replace_extension(".html");
    if (md.extension() != ".md") md += ".md";
    std::string note = origin.empty() ? fmt::format("Generated {} from {} run directories.", iso_time(unix_now()).substr(0, 19) + "Z",
                                                    tooling_rows.size())
                                      : origin;
    write_file(md, render_tooling_md(tooling_rows, note));
    write_file(html, render_tooling_html(tooling_rows, note));
    for (const auto& r : tooling_rows) {
      std::cout << r.scenario << " (" << r.fault << "):\n";
      for (const auto& c : r.cells) std::cout << "  " << tooling_tool_title(c.tool) << ": " << tooling_cell_text(c) << "\n";
    }
    std::cout << "tooling matrix: " << md.string() << ", " << html.string() << "\n";
  }
  return rc;
}

int cmd_history(const std::string& results, const std::string& scenario, size_t last, bool strict) {
  const fs::path db_path = fs::path(results) / "history.sqlite";
  if (!fs::exists(db_path)) {
    std::cerr << db_path.string() << ":0:0: no run history here (it is written by `hanglab run`)\n";
    return 2;
  }
  HistoryDb db(db_path);
  const auto runs = db.runs(scenario.empty() ? std::nullopt : std::optional<std::string>(scenario));
  const auto regressions = find_regressions(runs);
  std::cout << render_history(runs, regressions, last);
  if (!strict) return 0;
  // --strict: fail when the newest run of a scenario regressed (a CI gate).
  std::map<std::string, long long> newest;
  for (const auto& r : runs) newest[r.scenario] = r.id;
  for (const auto& g : regressions)
    if (newest[g.scenario] == g.run_id) return 1;
  return 0;
}

int cmd_list() {
  std::cout << "workloads:\n";
  for (const auto& w : workload_registry()) {
    std::string built;
    for (const auto& b : w.backends) {
      const bool here = ::access((workload_dir() / workload_binary(w, b)).c_str(), X_OK) == 0;
      built += fmt::format("{}{} {}", built.empty() ? "" : ", ", b, here ? "built" : "not built");
    }
    std::cout << fmt::format("  {:<22} {}\n  {:<22} backends: {}; LibTorch: {}\n", w.name, w.summary, "", built,
                             w.libtorch.empty() ? "-" : w.libtorch);
  }
  std::cout << "  (or any command: [workload] command = [...])\n\nfaults:\n";
  for (const auto& i : injector_registry()) std::cout << fmt::format("  {:<22} {}\n", i.kind, i.summary);
  std::cout << "\ndetectors:\n";
  for (const DetectorInfo* d : detector_registry())
    std::cout << fmt::format("  {:<22} {} [{}; bound: {}]\n", d->name, d->description, source_name(d->source), d->bound);
  return 0;
}

int cmd_describe(const std::string& kind) {
  if (const DetectorInfo* d = find_detector(kind)) {
    std::cout << fmt::format("detector {}: {}\nsource: {}\nsetting: {}\nbound: {}\nclock starts at: {}\n", d->name,
                             d->description, source_name(d->source), d->setting.empty() ? "-" : d->setting, d->bound,
                             d->clock);
    std::cout << fmt::format("reports: {}{}\nimplies outcome: {}\ncolour: {}\ntimed in the run record: {}\n",
                             d->category.empty() ? "-" : d->category, d->cause.empty() ? "" : "/" + std::string(d->cause),
                             d->outcome.empty() ? "-" : d->outcome, d->colour, d->timed ? "yes" : "no (post-mortem)");
    for (const auto& [phase, setting] : d->phase_settings)
      if (!phase.empty()) std::cout << fmt::format("inside phase {}: bound by {} when it is set\n", phase, setting);
    return 0;
  }
  if (const InjectorInfo* i = find_injector(kind)) {
    std::cout << fmt::format("fault {}: {}\nmechanism: {}\n\ncommon keys:\n", i->kind, i->summary, i->mechanism);
    const bool by_node = std::any_of(i->keys.begin(), i->keys.end(), [](const KeyDoc& k) { return k.key == "nodes"; });
    std::cout << (by_node ? "  ranks     -       -         not for this fault: it acts on whole nodes (nodes = [..] below)\n"
                          : "  ranks     [int]   required  ranks the fault targets (0-based, < world_size): no default, the "
                            "fault is about which rank\n")
              << "  at_step   int     -         trigger when the targeted ranks (every one still alive) have entered this\n"
                 "                              step (1-based, <= steps)\n"
                 "  at_s      float   -         trigger this many seconds after launch (< deadline_s)\n"
                 "  at_output string  -         trigger when any rank prints a line containing this text (a\n"
                 "                              bring-your-own program; not for in-process hooks of the built-in loop)\n";
    std::cout << fmt::format("                              none of them: {}\n", i->default_trigger);
    std::cout << "\nkeys of " << i->kind << ":\n";
    if (i->keys.empty()) std::cout << "  (none)\n";
    for (const auto& k : i->keys) {
      // A derived default, "(the rank below ...)", or a long one is spelled out after the doc.
      const std::string def = !k.required_reason.empty() ? "required" : k.default_value;
      const bool derived = !def.empty() && def.front() == '(';
      std::string note;
      if (!k.required_reason.empty())
        note = " (required: " + k.required_reason + ")";
      else if ((derived || def.size() > 9) && k.doc.find("default") == std::string::npos)
        note = " (default: " + (derived ? def.substr(1, def.size() - 2) : def) + ")";
      std::cout << fmt::format("  {:<11} {:<7} {:<9} {}{}\n", k.key, k.type,
                               derived ? "derived" : def.size() > 9 ? "see doc" : def, k.doc, note);
    }
    std::cout << "\nWhat it needs of the workload is arranged or refused when the scenario loads; every run\n"
                 "records whether it was exercised (run.json faults[].exercised, evidence).\n";
    return 0;
  }
  if (const WorkloadInfo* w = find_workload(kind)) {
    std::cout << fmt::format("workload {}: {}\nbackends: {}\n\n[workload.args]:\n", w->name, w->summary,
                             fmt::join(w->backends, ", "));
    if (w->args->empty()) std::cout << "  (none)\n";
    for (const auto& a : *w->args)
      std::cout << fmt::format("  {:<26} {:<7} {:<7} {}\n", a.name, a.type, a.default_value, a.doc);
    return 0;
  }
  if (kind == "torch") {
    std::cout << "[torch]: torch's own knobs, in scenario and `hanglab validate` settings files; each sets one "
                 "environment\nvariable in every rank (local, mpirun and torchrun launchers; Python and LibTorch "
                 "ranks). The\nprocess-group timeout is [timeouts] collective_s. Defaults are torch 2.15's when the "
                 "key is absent.\n\n";
    std::cout << fmt::format("  {:<26} {:<5} {:<16} {:<8} {:<36} {}\n", "key", "type", "values", "default",
                             "variable", "read by");
    for (const auto& k : kTorchKnobs) {
      const std::string type(k.type);
      const std::string values = type == "enum" ? std::string(k.values)
                                 : type == "bool" ? "true|false"
                                                  : fmt::format("{}..{}", k.lo, k.hi);
      std::cout << fmt::format("  {:<26} {:<5} {:<16} {:<8} {:<36} {}\n      {}\n", k.key, type == "enum" ? "str" : type,
                               values, k.torch_default, k.env,
                               std::string(k.backends) == "nccl" ? "ProcessGroupNCCL only" : "every backend", k.doc);
    }
    std::cout << "\nA variable of this list in [workload.env] is an error: set it here (typed, recorded in run.json "
                 "settings.torch,\nand checked by `hanglab validate`, whose report has a \"torch knobs\" section).\n";
    return 0;
  }
  std::cerr << "hanglab: unknown fault kind or workload '" << kind << "' (see `hanglab list`)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hanglab: fault injection and reproduction harness for distributed-training hangs"};
  app.require_subcommand(1);
  // Bad input is one line (CLI11's default adds "Run with --help for more information.").
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("hanglab: ") + e.what() + " (see --help)\n";
  });
  app.set_version_flag("--version", "hanglab 0.1.0");

  RunCommand rc;
  std::string results = "results";
  auto* run = app.add_subcommand("run", "run scenarios (files or directories of *.toml) and check their expectations");
  run->add_option("paths", rc.paths, "scenario files or directories")->required();
  run->add_option("--results", rc.results, "where run directories go")->capture_default_str();
  run->add_option("--junit", rc.junit, "also write one combined JUnit XML file here");
  run->add_flag("--json", rc.json_out, "print the results as JSON instead of text");
  run->add_flag("--no-stacks", rc.no_stacks, "do not capture stacks of hung ranks");
  run->add_option("-j,--jobs", rc.jobs, "runs at once (each in its own worker process); default: the number of CPUs")
      ->check(CLI::Range(1, 256));
  run->add_option("--repeat", rc.repeat, "run each scenario N times and report its pass rate")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));

  std::string format = "text";
  std::vector<std::string> triage_in;
  TriageOptions topts;
  int triage_world = 0;
  auto* triage = app.add_subcommand(
      "triage", "build the rank timeline and verdict from a run directory or from plain logs of any job");
  triage->add_option("paths", triage_in, "a hanglab run directory, or log files / directories of logs")->required();
  triage->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  triage->add_option("--world-size", triage_world, "the job's world size, when the logs do not state it")
      ->check(CLI::Range(1, kMaxWorld));
  triage->add_flag("--logs-only", topts.logs_only, "judge a run directory from its ranks' stdout/stderr alone");

  ValidateOptions vopts;
  std::string vsettings, vout, vresults = "results/validate";
  bool no_recheck = false;
  auto* validate = app.add_subcommand(
      "validate", "validate proposed timeout/watchdog settings on healthy slow phases and a fault catalog; recommend settings");
  validate->add_option("settings", vsettings, "settings TOML ([timeouts], [validate])")->required();
  validate->add_option("--scenarios", vopts.scenarios,
                       "fault scenarios (files or directories); default: kill_rank, skip_collective_linger, freeze_rank "
                       "from scenarios/");
  validate->add_option("--baseline", vopts.baseline, "healthy scenarios to measure phases on; default: scenarios/validate");
  validate->add_option("--results", vresults, "where the runs, validate.txt/json and recommended.toml go")
      ->capture_default_str();
  validate->add_option("--repeat", vopts.repeat, "baseline runs per pass")->capture_default_str()->check(CLI::Range(1, 100));
  validate->add_option("--out", vout, "write the recommended settings here (default: <results>/recommended.toml)");
  validate->add_flag("--no-recheck", no_recheck, "do not re-validate the recommended settings (one pass only)");

  std::vector<std::string> report_dirs;
  std::string report_format = "all", report_matrix, report_tooling, report_origin;
  auto* report = app.add_subcommand("report", "regenerate report.txt, report.html and junit.xml from run directories");
  report->add_option("run_dirs", report_dirs, "hanglab run directories")->required();
  report->add_option("--format", report_format, "which reports")
      ->check(CLI::IsMember({"all", "text", "html", "junit", "none"}))
      ->capture_default_str();
  report->add_option("--matrix", report_matrix, "also write one HTML page over all the given runs to this file");
  report->add_option("--tooling-matrix", report_tooling,
                     "also write the detection-tooling matrix over the given runs to this .md file (and .html beside it)");
  report->add_option("--origin", report_origin, "a line under the tooling matrix's title (date, commit, host)");

  std::string hist_scenario;
  size_t hist_last = 20;
  bool hist_strict = false;
  auto* history = app.add_subcommand("history", "detection latency and verdicts across recorded runs; flags regressions");
  history->add_option("--results", results, "the results directory holding history.sqlite")->capture_default_str();
  history->add_option("--scenario", hist_scenario, "only this scenario");
  history->add_option("--last", hist_last, "runs shown per scenario")->capture_default_str();
  history->add_flag("--strict", hist_strict, "exit 1 when the newest run of a scenario is a regression");

  BenchOptions bopts;
  std::string bench_out = "results/bench";
  auto* bench = app.add_subcommand(
      "bench", "measure detection latency vs bounds, verdict latency, trace overhead, harness CPU and triage at scale; "
               "writes bench.json, bench.txt, bench.html");
  bench->add_option("--out", bench_out, "where bench.json, bench.html and the runs go")->capture_default_str();
  bench->add_flag("--quick", bopts.quick, "fewer repeats and ranks, shorter timeouts: a smoke test (~1 min)");
  bench->add_option("--repeat", bopts.repeat, "runs per detector scenario (default 3; --quick 1)")->check(CLI::Range(1, 50));

  auto* list = app.add_subcommand("list", "list workloads, faults and detectors");
  std::string kind;
  auto* describe = app.add_subcommand("describe", "print a fault's or workload's keys, defaults and units, or a detector's bound and clock");
  describe->add_option("kind", kind, "fault kind, workload name, detector name, or torch (the [torch] knobs)")->required();

  ManifestCommand mc;
  auto* manifest = app.add_subcommand(
      "manifest", "write a Kubernetes manifest (Indexed Job + headless Service, or a Kubeflow PyTorchJob) that runs "
                  "a scenario's workload under torchrun, one pod per [topology] node; faults are not carried over");
  manifest->add_option("scenario", mc.scenario, "scenario TOML file")->required();
  manifest->add_option("--kind", mc.options.kind, "indexed-job or pytorchjob")
      ->check(CLI::IsMember({"indexed-job", "pytorchjob"}))
      ->capture_default_str();
  manifest->add_option("--image", mc.options.image, "container image holding a hanglab checkout with its build and venv")
      ->capture_default_str();
  manifest->add_option("--image-root", mc.options.image_root, "where that checkout is inside the image")
      ->capture_default_str();
  manifest->add_option("--name", mc.options.name, "object name (default: hanglab-<scenario>)");
  manifest->add_option("--rdzv-port", mc.options.rdzv_port, "torchrun's c10d rendezvous port")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  manifest->add_option("--format", mc.options.format, "yaml, or json (a v1 List)")
      ->check(CLI::IsMember({"yaml", "json"}))
      ->capture_default_str();
  manifest->add_option("--out", mc.out, "write here instead of stdout (nothing is written on bad input)");
  manifest->add_flag("--preflight", mc.options.preflight,
                     "add an init container that runs `hanglab preflight` on every pod before torchrun starts");

  repro::ReproCommand rp;
  int repro_world = 0;
  auto* repro_sub = app.add_subcommand(
      "repro", "turn an incident's logs into reproduction scenario(s); --run runs them and compares with the incident");
  repro_sub->add_option("incident", rp.inputs, "the incident: log files, a log directory, a run directory or FR dumps")
      ->required();
  repro_sub->add_option("--world-size", repro_world, "the reproduction's world size (default: the incident's, at most 4)");
  repro_sub->add_option("--backend", rp.backend, "gloo or nccl")->capture_default_str();
  repro_sub->add_flag("--run", rp.run, "run each candidate and compare its triage with the incident's");
  repro_sub->add_option("--out", rp.out, "scenario file (several candidates: <stem>.<candidate>.toml); default: under "
                                         "<results>/repro/");
  repro_sub->add_flag("--force", rp.force, "let --out replace existing files");
  repro_sub->add_option("--results", rp.results, "where run records (and scenarios without --out) go")
      ->capture_default_str();

  preflight::PreflightCommand pfc;
  auto* preflight_sub = preflight::add_preflight_subcommand(app, pfc);

  auto* clean = app.add_subcommand(
      "clean", "revert what killed hanglab runs left (processes, mounts, cgroups); exit 1 if something could not be");

  // An unknown first word is named as such (CLI11 alone would say "A subcommand is
  // required", or print the top-level help for `hanglab frob --help` and exit 0).
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::cerr << fmt::format("hanglab: unknown subcommand '{}' (expected one of: {}; see hanglab --help)\n", argv[1],
                               fmt::join(names, ", "));
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*run) {
      install_interrupt_handlers();
      rc.interrupt_fd = g_interrupt_pipe[0];
      rc.interrupted = &g_interrupted;
      return run_command(rc);
    }
    if (*triage) {
      if (triage_world > 0) topts.world_size = triage_world;
      return cmd_triage(triage_in, format, topts);
    }
    if (*validate) {
      vopts.settings_file = vsettings;
      vopts.results = vresults;
      vopts.out = vout;
      vopts.recheck = !no_recheck;
      return cmd_validate(vopts);
    }
    if (*report) return cmd_report(report_dirs, report_format, report_matrix, report_tooling, report_origin);
    if (*history) return cmd_history(results, hist_scenario, hist_last, hist_strict);
    if (*bench) {
      install_interrupt_handlers();
      bopts.out = bench_out;
      bopts.interrupt_fd = g_interrupt_pipe[0];
      bopts.interrupted = &g_interrupted;
      return run_bench(bopts);
    }
    if (*manifest) return manifest_command(mc);
    if (*repro_sub) {
      if (repro_sub->count("--world-size")) rp.world_size = repro_world;
      install_interrupt_handlers();
      rp.interrupted = &g_interrupted;
      return repro::repro_command(rp);
    }
    if (*preflight_sub) return preflight::preflight_command(pfc);
    if (*list) return cmd_list();
    if (*describe) return cmd_describe(kind);
    if (*clean) {
      auto swept = sweep_dead_runs(&std::cerr);
      if (swept.empty()) std::cerr << "hanglab: nothing to clean (no dead run in " << state_dir().string() << ")\n";
      for (const auto& r : swept)
        if (!r.problems.empty()) return 1;
      return 0;
    }
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hanglab: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}
