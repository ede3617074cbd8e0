// Reports of finished runs: the run.json record, the human report.txt, the one-line
// verdict printed per scenario, the summary table of a matrix, and the JUnit suite.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "injector.hpp"
#include "report/junit.hpp"
#include "run/runner.hpp"

namespace hanglab {

std::string render_run_report(const Scenario& sc, const RunResult& res);

// A [preflight] run's nodes as run.json "preflight" holds them (run/preflight_run.cpp): per node, its
// exit and its own checks that did not pass (node 0's report also carries the others' checks).
struct PreflightNodeView {
  int node = -1;
  std::string exit;  // "exit N" | "did not finish"
  int passed = 0;
  std::vector<nlohmann::json> not_passed;
};
std::vector<PreflightNodeView> preflight_nodes(const nlohmann::json& preflight);
std::string verdict_line(const RunResult& res);
std::string summary_table(const std::vector<RunResult>& results);
// `run --repeat N`: per scenario (first-appearance order), how many of its runs passed
// (pass or observed) out of those that ran (skipped runs are counted apart), the verdicts
// that were not a pass, and the total pass rate in the last line.
std::string pass_rate_table(const std::vector<RunResult>& results);
JunitSuite junit_suite(const Scenario& sc, const RunResult& res);

}  // namespace hanglab
