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
std::string verdict_line(const RunResult& res);
std::string summary_table(const std::vector<RunResult>& results);
// `run --repeat N`: per scenario (first-appearance order), how many of its runs passed
// (pass or observed) out of those that ran (skipped runs are counted apart), the verdicts
// that were not a pass, and the total pass rate in the last line.
std::string pass_rate_table(const std::vector<RunResult>& results);
JunitSuite junit_suite(const Scenario& sc, const RunResult& res);

}  // namespace hanglab
