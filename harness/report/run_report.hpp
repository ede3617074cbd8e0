// One scenario run end to end as the CLI and validate see it: the run (run/runner), then
// its reports (report.txt, junit.xml, report.html), its history row and results/latest.
#pragma once

#include "run/runner.hpp"

namespace hanglab {

// Writes report.txt, junit.xml, report.html and the history row of a finished run. The
// HTML page and the history are extras: failing to write them only warns on stderr.
void write_run_reports(const Scenario& sc, const RunResult& res, const RunOptions& opts);

// run_scenario + write_run_reports + update_latest.
RunResult run_and_report(PreparedScenario& ps, const HostInfo& host, const RunOptions& opts);

}  // namespace hanglab
