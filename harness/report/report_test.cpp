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

TEST_CASE("report.txt of a preflight run: each node's checks that did not pass, no triage block", "[report]") {
  Scenario sc;
  sc.name = "preflight_tiny_shm";
  sc.preflight = PreflightSpec{};
  RunResult r;
  r.facts.start_t = 100;
  r.facts.end_t = 101;
  r.verdict.status = "pass";
  r.facts.exits.push_back({0, 1, std::nullopt, 100.5});
  r.facts.exits.push_back({1, 1, std::nullopt, 100.6});
  const nlohmann::json shm_fail = {{"name", "shm.capacity"}, {"node", 1}, {"status", "fail"},
                                   {"measured", "64.0 KiB free of 64.0 KiB"}, {"rule", "free >= 1.0 MiB"},
                                   {"detail", ""}};
  r.record["preflight"] = {
      {"nodes",
       {{{"node", 0},
         {"exit_code", 1},
         {"report",
          {{"checks",
            {{{"name", "net.ifname"}, {"node", 0}, {"status", "pass"}},
             shm_fail}}}}},  // node 0 gathers node 1's checks too
        {{"node", 1}, {"exit_code", 1}, {"report", {{"checks", {shm_fail}}}}}}},
      {"failed_checks", {{{"check", "shm.capacity"}, {"node", 1}}}}};
  const std::string out = render_run_report(sc, r);
  CHECK(out.find("TRIAGE") == std::string::npos);
  CHECK(out.find("exit      nodes 0,1 code 1 (to +0.600)") != std::string::npos);
  CHECK(out.find("node 0: exit 1, 1 check(s) passed\n") != std::string::npos);
  CHECK(out.find("node 1: exit 1, 0 check(s) passed, 1 not\n    [fail] shm.capacity     64.0 KiB free of 64.0 KiB "
                 "(rule: free >= 1.0 MiB)") != std::string::npos);
  CHECK(out.find("failed: shm.capacity on node 1") != std::string::npos);
}
