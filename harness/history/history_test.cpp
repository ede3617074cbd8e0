// Unit tests of the run history: the SQLite round trip on a temporary database, the
// record built from run.json, regression detection and the rendered table.
#include <catch2/catch.hpp>

#include <filesystem>

#include "history/history.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

fs::path temp_db(const std::string& name) {
  fs::path d = fs::path(HANGLAB_BINARY_DIR) / "test-tmp" / "history" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d / "history.sqlite";
}

HistoryRecord rec(const std::string& scenario, double t, const std::string& verdict,
                  std::map<std::string, double> lat) {
  HistoryRecord r;
  r.scenario = scenario;
  r.started_at = t;
  r.run_dir = "results/" + scenario + "/" + std::to_string(static_cast<long long>(t));
  r.torch_version = "1.13.0";
  r.backend = "gloo";
  r.world_size = 4;
  r.settings = R"({"timeouts":{"init_s":30,"collective_s":5,"progress_s":10,"heartbeat_s":1}})";
  r.verdict = verdict;
  r.outcome = "crash";
  r.triage_category = "rank_exit";
  r.triage_cause = "killed";
  r.duration_s = 4.5;
  r.latencies = std::move(lat);
  return r;
}

}  // namespace

TEST_CASE("history: runs and their detection latencies round-trip through SQLite", "[history]") {
  const fs::path path = temp_db("roundtrip");
  {
    HistoryDb db(path);
    CHECK(db.record(rec("kill_rank", 1000, "pass", {{"exit_monitor", 0.02}, {"backend_error", 0.05}})) > 0);
    db.record(rec("baseline", 1001, "pass", {}));
    db.record(rec("kill_rank", 1002, "fail", {{"exit_monitor", 0.03}}));
  }
  HistoryDb db(path);  // reopened: the data is on disk
  auto all = db.runs();
  REQUIRE(all.size() == 3);
  CHECK(all[0].scenario == "kill_rank");
  CHECK(all[1].scenario == "baseline");
  CHECK(all[0].latencies.size() == 2);
  CHECK(all[0].latencies.at("backend_error") == Approx(0.05));
  CHECK(all[0].torch_version == "1.13.0");
  CHECK(all[0].world_size == 4);
  CHECK(all[0].triage_category == "rank_exit");
  auto kill = db.runs(std::string("kill_rank"));
  REQUIRE(kill.size() == 2);
  CHECK(kill[1].verdict == "fail");
  CHECK(db.runs(std::string("nope")).empty());
}

TEST_CASE("history: a record from run.json", "[history]") {
  auto j = nlohmann::json::parse(R"({
    "scenario": "kill_rank", "start_t": 1795944360.0, "duration_s": 3.2, "outcome": "crash",
    "host": {"torch_version": "1.13.0"},
    "settings": {"backend": "gloo", "world_size": 4, "timeouts": {"collective_s": 5}},
    "triage": {"category": "rank_exit", "cause": "killed"},
    "verdict": {"status": "pass", "first_detection_s": {"exit_monitor": 0.08, "backend_error": 0.05}}})");
  HistoryRecord r = history_record_from_run_json(j, "/tmp/run");
  CHECK(r.scenario == "kill_rank");
  CHECK(r.started_at == 1795944360.0);
  CHECK(r.backend == "gloo");
  CHECK(r.world_size == 4);
  CHECK(r.verdict == "pass");
  CHECK(r.triage_cause == "killed");
  CHECK(r.latencies.at("exit_monitor") == Approx(0.08));
  CHECK(r.settings.find("collective_s") != std::string::npos);
  CHECK(r.torch_version == "1.13.0");
  CHECK_FALSE(torch_version().empty());
}

TEST_CASE("history: regressions are flagged", "[history]") {
  std::vector<HistoryRecord> runs = {
      rec("kill_rank", 1, "pass", {{"exit_monitor", 1.0}}),
      rec("kill_rank", 2, "pass", {{"exit_monitor", 1.2}}),
      rec("kill_rank", 3, "pass", {{"exit_monitor", 2.5}}),  // 2.5 < 1.5 x 1.1 + 1 = 2.65: fine
      rec("kill_rank", 4, "fail", {{"exit_monitor", 4.0}}),  // > 1.5 x median(1.0,1.2,2.5)=1.2 -> 2.8; and pass -> fail
      rec("kill_rank", 5, "skipped", {}),                      // ignored
      rec("kill_rank", 6, "fail", {{"exit_monitor", 1.1}}),  // fail -> fail is not a new regression
      rec("other", 7, "pass", {{"backend_timeout", 5.1}}),   // first of its scenario: nothing to compare
  };
  for (size_t i = 0; i < runs.size(); ++i) runs[i].id = static_cast<long long>(i + 1);
  auto reg = find_regressions(runs);
  REQUIRE(reg.size() == 2);
  CHECK(reg[0].run_id == 4);
  CHECK(reg[0].what == "verdict pass -> fail");
  CHECK(reg[1].run_id == 4);
  CHECK(reg[1].what.find("exit_monitor latency 4.00 s > 1.5 x median 1.20 s + 1 s") != std::string::npos);

  std::string text = render_history(runs, reg, 20);
  CHECK(text.find("REGRESSION: verdict pass -> fail") != std::string::npos);
  CHECK(text.find("kill_rank (7 runs)") == std::string::npos);
  CHECK(text.find("kill_rank (6 runs)") != std::string::npos);
  CHECK(text.find("i30 c5 p10 h1") != std::string::npos);
  CHECK(text.find("2 regressions") != std::string::npos);
  CHECK(render_history({}, {}, 20) == "no runs recorded\n");
}

TEST_CASE("history: an unwritable database is a warning, not a failure", "[history]") {
  // A directory where the database file should be: open fails, record_run_history only warns.
  const fs::path path = temp_db("unwritable");
  fs::create_directories(path);
  CHECK_NOTHROW(record_run_history(path, rec("x", 1, "pass", {})));
  CHECK_THROWS_AS(HistoryDb(path), std::runtime_error);
}
