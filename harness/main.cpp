// hanglab: the command-line entry point. Subcommands: run, triage, list, describe.
// Exit codes (design): 0 all expectations met, 1 an expectation failed, 2 scenario or
// usage error (nothing ran), 3 internal error or unknown verdict, 4 skipped, 130 interrupted.
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <iostream>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "config_error.hpp"
#include "injector.hpp"
#include "junit.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "triage.hpp"
#include "workloads.hpp"

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

int cmd_run(const std::vector<std::string>& paths, const std::string& results, const std::string& junit, bool json_out,
            bool no_stacks) {
  std::vector<PreparedScenario> prepared;
  try {
    for (const auto& f : expand_scenario_paths(paths)) prepared.push_back(prepare_scenario(f));
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  install_interrupt_handlers();
  HostInfo host = detect_host();
  RunOptions opts;
  opts.results_dir = results;
  opts.capture_stacks = !no_stacks;
  opts.interrupt_fd = g_interrupt_pipe[0];
  std::vector<RunResult> out;
  std::vector<Verdict> verdicts;
  std::vector<JunitSuite> suites;
  const size_t n = prepared.size();
  for (size_t i = 0; i < n && !g_interrupted; ++i) {
    auto& ps = prepared[i];
    if (!json_out)
      std::cerr << fmt::format("[{}/{}] {} ...", i + 1, n, ps.scenario.name) << std::endl;
    RunResult r;
    try {
      r = run_scenario(ps, host, opts);
    } catch (const std::exception& e) {
      std::cerr << "hanglab: internal error in " << ps.scenario.name << ": " << e.what() << "\n";
      r.scenario = ps.scenario.name;
      r.verdict.status = "unknown";
      r.verdict.checks.push_back({"harness", "unknown", "a finished run", "internal error", e.what()});
    }
    if (!json_out) std::cout << verdict_line(r) << std::endl;
    verdicts.push_back(r.verdict);
    suites.push_back(junit_suite(ps.scenario, r));
    out.push_back(std::move(r));
  }
  if (!junit.empty()) write_junit_file(junit, suites);
  if (json_out) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : out)
      j.push_back({{"scenario", r.scenario},
                   {"run_dir", r.run_dir.string()},
                   {"outcome", r.facts.outcome},
                   {"triage", {{"category", r.triage.category}, {"cause", r.triage.cause}, {"missing_ranks", r.triage.missing_ranks}}},
                   {"duration_s", r.duration_s},
                   {"verdict", to_json(r.verdict)}});
    std::cout << j.dump(2) << std::endl;
  } else {
    if (out.size() > 1) std::cout << "\n" << summary_table(out);
    std::cout << "run records: " << fs::absolute(results).string()
              << (out.size() == 1 && !out[0].run_dir.empty() ? " (this run: " + out[0].run_dir.string() + ")" : "")
              << "\n";
    if (!junit.empty()) std::cout << "junit: " << junit << "\n";
  }
  if (g_interrupted) {
    std::cerr << "hanglab: interrupted; ranks torn down, injectors reverted\n";
    return 130;
  }
  return exit_code_for(verdicts);
}

int cmd_triage(const std::string& dir, const std::string& format) {
  TriageResult r;
  try {
    r = triage_run_dir(dir);
  } catch (const std::exception& e) {
    std::cerr << dir << ":0:0: " << e.what() << "\n";
    return 2;
  }
  if (format == "json")
    std::cout << to_json(r).dump(2) << "\n";
  else
    std::cout << render_text(r);
  return 0;
}

int cmd_list() {
  std::cout << "workloads:\n";
  for (const auto& w : workload_registry()) std::cout << fmt::format("  {:<22} {}\n", w.name, w.summary);
  std::cout << "  (or any command: [workload] command = [...])\n\nfaults:\n";
  for (const auto& i : injector_registry()) std::cout << fmt::format("  {:<22} {}\n", i.kind, i.summary);
  std::cout << "\ndetectors:\n"
               "  backend_timeout        a collective raised a timeout\n"
               "  backend_error          peer closed, connection reset, NCCL error\n"
               "  exit_monitor           a rank exited non-zero or by signal\n"
               "  harness_watchdog       no progress on any live rank for progress_s\n"
               "  heartbeat_loss         a rank is alive but its heartbeat stopped (3 periods)\n"
               "  triage                 the analyzer found a fault\n";
  return 0;
}

int cmd_describe(const std::string& kind) {
  if (const InjectorInfo* i = find_injector(kind)) {
    std::cout << fmt::format("fault {}: {}\nmechanism: {}\n\ncommon keys:\n", i->kind, i->summary, i->mechanism);
    std::cout << "  ranks     [int]   required  ranks the fault targets (0-based, < world_size)\n"
                 "  at_step   int     -         trigger when a targeted rank enters this step (1-based)\n"
                 "  at_s      float   -         trigger this many seconds after launch\n"
                 "                              (neither: from launch)\n";
    std::cout << "\nkeys of " << i->kind << ":\n";
    if (i->keys.empty()) std::cout << "  (none)\n";
    for (const auto& k : i->keys)
      std::cout << fmt::format("  {:<9} {:<7} {:<9} {}\n", k.key, k.type, k.default_value.empty() ? "-" : k.default_value, k.doc);
    return 0;
  }
  if (const WorkloadInfo* w = find_workload(kind)) {
    std::cout << fmt::format("workload {}: {}\nbackends: {}\n\n[workload.args]:\n", w->name, w->summary,
                             fmt::join(w->backends, ", "));
    for (const auto& a : *w->args)
      std::cout << fmt::format("  {:<26} {:<7} {:<7} {}\n", a.name, a.type, a.default_value, a.doc);
    return 0;
  }
  std::cerr << "hanglab: unknown fault kind or workload '" << kind << "' (see `hanglab list`)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hanglab: fault injection and reproduction harness for distributed-training hangs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hanglab 0.1.0");

  std::vector<std::string> paths;
  std::string results = "results", junit;
  bool json_out = false, no_stacks = false;
  auto* run = app.add_subcommand("run", "run scenarios (files or directories of *.toml) and check their expectations");
  run->add_option("paths", paths, "scenario files or directories")->required();
  run->add_option("--results", results, "where run directories go")->capture_default_str();
  run->add_option("--junit", junit, "also write one combined JUnit XML file here");
  run->add_flag("--json", json_out, "print the results as JSON instead of text");
  run->add_flag("--no-stacks", no_stacks, "do not capture stacks of hung ranks");

  std::string dir, format = "text";
  auto* triage = app.add_subcommand("triage", "analyze a run directory and print the rank timeline and verdict");
  triage->add_option("run_dir", dir, "a hanglab run directory")->required();
  triage->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();

  auto* list = app.add_subcommand("list", "list workloads, faults and detectors");
  std::string kind;
  auto* describe = app.add_subcommand("describe", "print a fault's or workload's keys, defaults and units");
  describe->add_option("kind", kind, "fault kind or workload name")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*run) return cmd_run(paths, results, junit, json_out, no_stacks);
    if (*triage) return cmd_triage(dir, format);
    if (*list) return cmd_list();
    if (*describe) return cmd_describe(kind);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hanglab: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}
