#include "report/run_report.hpp"

#include <iostream>

#include "history/history.hpp"
#include "report/html_report.hpp"
#include "report/junit.hpp"
#include "report/report.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;

void write_run_reports(const Scenario& sc, const RunResult& res, const RunOptions& opts) {
  if (res.run_dir.empty()) return;
  write_file(res.run_dir / "report.txt", render_run_report(sc, res));
  write_file(res.run_dir / "junit.xml", junit_xml({junit_suite(sc, res)}));
  try {
    write_file(res.run_dir / "report.html", render_run_html(res.run_dir));
  } catch (const std::exception& e) {
    std::cerr << "hanglab: warning: report.html not written: " << e.what() << "\n";
  }
  if (opts.record_history && !res.record.is_null()) {
    try {
      record_run_history(opts.history_db.empty() ? opts.results_dir / "history.sqlite" : opts.history_db,
                         history_record_from_run_json(res.record, fs::absolute(res.run_dir).string()));
    } catch (const std::exception& e) {
      std::cerr << "hanglab: warning: run history not recorded: " << e.what() << "\n";
    }
  }
}

RunResult run_and_report(PreparedScenario& ps, const HostInfo& host, const RunOptions& opts) {
  RunResult res = run_scenario(ps, host, opts);
  write_run_reports(ps.scenario, res, opts);
  if (!res.run_dir.empty()) update_latest(opts.results_dir, res.run_dir);
  return res;
}

}  // namespace hanglab
