// report.txt: the timeline groups a detector firing on many ranks, and ranks ending the
// same way, into one line with the ranks compressed.
#include <catch2/catch.hpp>

#include "report/report.hpp"

using namespace hanglab;

namespace {

RunResult hang_of(int world, int frozen) {
  RunResult r;
  r.scenario = "freeze";
  r.facts.start_t = 100;
  r.facts.end_t = 120;
  r.facts.outcome = "hang";
  r.facts.teardown_reason = "hang";
  r.facts.faults.push_back({"freeze_rank", {frozen}, 101, "SIGSTOP"});
  r.facts.detections.push_back({"heartbeat_loss", frozen, 104, "no heartbeat"});
  for (int k = 0, i = 0; k < world; ++k) {
    if (k == frozen) continue;
    r.facts.detections.push_back({"backend_timeout", k, 106 + 0.01 * i, "Timed out waiting 5000ms"});
    r.facts.exits.push_back({k, 11, std::nullopt, 106.5 + 0.01 * i++});
  }
  r.facts.detections.push_back({"harness_watchdog", -1, 116, "no progress"});
  r.verdict.status = "pass";
  return r;
}

}  // namespace

TEST_CASE("report.txt: one line per detector and per way of ending, ranks compressed", "[report]") {
  Scenario sc;
  sc.name = "freeze";
  const std::string four = render_run_report(sc, hang_of(4, 1));
  CHECK(four.find("fault     freeze_rank on rank 1 -> SIGSTOP") != std::string::npos);
  CHECK(four.find("detect    heartbeat_loss rank 1: no heartbeat") != std::string::npos);
  CHECK(four.find("detect    backend_timeout ranks 0,2,3 (to +6.020): rank 0: Timed out") != std::string::npos);
  CHECK(four.find("exit      ranks 0,2,3 code 11 (to +6.520)") != std::string::npos);
  CHECK(four.find("detect    harness_watchdog: no progress") != std::string::npos);

  const std::string wide = render_run_report(sc, hang_of(64, 37));
  CHECK(wide.find("detect    backend_timeout ranks 0-36,38-63 (to +6.620): rank 0:") != std::string::npos);
  CHECK(wide.find("exit      ranks 0-36,38-63 code 11") != std::string::npos);
  size_t lines = 0;
  for (size_t p = wide.find("Timeline"); p < wide.find("TRIAGE") && p != std::string::npos; p = wide.find('\n', p + 1))
    ++lines;
  CHECK(lines < 10);
}
