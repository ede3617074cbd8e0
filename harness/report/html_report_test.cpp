// Unit tests of the HTML reports: a canned run directory (the triage fixtures) renders a
// self-contained page with one row per rank, the fault and detector markers and the
// triage answer; a synthetic 64-rank run stays compact; the matrix page links each run.
// The real-browser check is e2e.html (headless Chromium).
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "report/html_report.hpp"
#include "run/run_record.hpp"
#include "util.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(HANGLAB_SOURCE_DIR) / "harness" / "testdata" / "triage";

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// A run directory with `ranks` ranks that each trace a few steps; rank 1 is killed.
fs::path synthetic_run(const std::string& name, int ranks) {
  fs::path d = fs::path(HANGLAB_BINARY_DIR) / "test-tmp" / "html" / name;
  fs::remove_all(d);
  fs::create_directories(d / "ranks");
  const double t0 = 1800000000.0;
  std::string h = fmt::format(R"({{"t":{},"ev":"run_start","scenario":"{}","world_size":{}}})", t0, name, ranks) + "\n";
  for (int r = 0; r < ranks; ++r) {
    fs::create_directories(d / "ranks" / std::to_string(r));
    std::ofstream ev(d / "ranks" / std::to_string(r) / "events.jsonl");
    double t = t0 + 0.5;
    ev << fmt::format(R"({{"t":{},"rank":{},"ev":"start"}})", t, r) << "\n";
    for (int s = 1; s <= 5; ++s) {
      ev << fmt::format(R"({{"t":{},"rank":{},"ev":"coll","edge":"begin","seq":{},"op":"allreduce","step":{}}})", t + 0.08, r, s, s) << "\n";
      if (!(r == 0 && s == 5))
        ev << fmt::format(R"({{"t":{},"rank":{},"ev":"coll","edge":"end","seq":{},"op":"allreduce","step":{}}})", t + 0.1, r, s, s) << "\n";
      else
        break;  // rank 0 is stuck in the last allreduce
      ev << fmt::format(R"({{"t":{},"rank":{},"ev":"step","step":{},"dur_ms":100}})", t + 0.1, r, s) << "\n";
      ev << fmt::format(R"({{"t":{},"rank":{},"ev":"hb"}})", t + 0.05, r) << "\n";
      t += 0.1;
    }
    h += fmt::format(R"({{"t":{},"ev":"launch","rank":{},"pid":{}}})", t0 + 0.01, r, 1000 + r) + "\n";
  }
  h += fmt::format(R"({{"t":{},"ev":"fault","kind":"kill_rank","ranks":[1],"detail":"SIGKILL"}})", t0 + 0.95) + "\n";
  h += fmt::format(R"({{"t":{},"ev":"exit","rank":1,"code":null,"signal":9,"status":137,"by_teardown":false}})", t0 + 0.96) + "\n";
  h += fmt::format(R"({{"t":{},"ev":"detect","detector":"exit_monitor","rank":1,"detail":"killed by SIGKILL"}})", t0 + 0.96) + "\n";
  h += fmt::format(R"({{"t":{},"ev":"run_end","outcome":"crash"}})", t0 + 2) + "\n";
  write_file(d / "harness.jsonl", h);
  return d;
}

}  // namespace

TEST_CASE("report.html of a canned run: rank rows, fault and detector markers, triage", "[html]") {
  std::string html = render_run_html(kFixtures / "killed");
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  for (int r = 0; r < 4; ++r) CHECK(count(html, fmt::format("class=\"rank-row\" data-rank=\"{}\"", r)) == 1);
  CHECK(count(html, "fault-marker\" id=\"fault-0\"") == 1);
  // One dashed line per detector (its first firing), a dot per rank it fired on.
  CHECK(count(html, "detect-marker\"") == 2);
  CHECK(count(html, "zt detect-dot") == 7);
  CHECK(html.find("backend_error r3 +2") != std::string::npos);
  CHECK(html.find("exit_monitor") != std::string::npos);
  CHECK(html.find("exit-marker") != std::string::npos);
  CHECK(html.find("SIGKILL") != std::string::npos);
  // The triage answer beside the timeline (computed from the run dir when triage.json is absent).
  CHECK(html.find("id=\"triage\"") != std::string::npos);
  CHECK(html.find("rank_exit") != std::string::npos);
  CHECK(html.find("Reproduces:") != std::string::npos);
  // Self-contained: nothing is fetched from the network.
  CHECK(html.find("src=\"http") == std::string::npos);
  CHECK(html.find("href=\"http") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find("<script>") != std::string::npos);
}

TEST_CASE("report.html shows a stuck collective and a checkpoint phase", "[html]") {
  std::string html = render_run_html(kFixtures / "checkpoint_hang");
  CHECK(html.find("phase-checkpoint") != std::string::npos);
  CHECK(html.find("coll stuck") != std::string::npos);
}

TEST_CASE("report.html stays compact at 64 ranks", "[html]") {
  fs::path d = synthetic_run("wide", 64);
  std::string html = render_run_html(d);
  CHECK(count(html, "class=\"rank-row\"") == 64);
  CHECK(count(html, "class=\"rank-label\"") == 64);
  CHECK(html.find("data-rank=\"63\"") != std::string::npos);
  // 10 px rows: the row backgrounds are 10 high.
  CHECK(count(html, "class=\"row-bg\"") == 64);
  std::smatch m;
  REQUIRE(std::regex_search(html, m, std::regex(R"re(id="timeline"[^>]*height="(\d+)")re")));
  CHECK(std::stoi(m[1]) < 64 * 10 + 120);
  CHECK(html.find("STUCK in allreduce seq 5") != std::string::npos);
  CHECK(count(html, "fault-target") == 1);
}

TEST_CASE("read_run_facts rebuilds the supervisor's facts from harness.jsonl", "[html]") {
  RunFacts f = read_run_facts(kFixtures / "killed");
  CHECK(f.outcome == "crash");
  CHECK(f.faults.size() == 1);
  CHECK(f.exits.size() == 4);
  CHECK(f.detections.size() == 7);
  CHECK(f.start_t == Approx(1795944360.01));
  REQUIRE(f.exits[2].signal);
  CHECK(*f.exits[2].signal == 9);
}

TEST_CASE("matrix.html links each run's report", "[html]") {
  fs::path d = synthetic_run("matrix-a", 2);
  write_file(d / "run.json", R"({"scenario":"matrix-a","start_t":1800000000.0,"duration_s":2.0,"outcome":"crash",
    "faults":[{"t":1800000000.95}],"detections":[{"detector":"exit_monitor","t":1800000000.96}],
    "triage":{"category":"rank_exit","cause":"killed"},
    "verdict":{"status":"fail","checks":[{"name":"outcome","status":"fail","expected":"hang","actual":"crash"}],
               "first_detection_s":{"exit_monitor":0.01}}})");
  MatrixEntry e = matrix_entry(d, d.parent_path());
  CHECK(e.link == "matrix-a/report.html");
  CHECK(e.status == "fail");
  CHECK(e.fault_at_s == Approx(0.95));
  REQUIRE(e.failed_checks.size() == 1);
  std::string html = render_matrix_html({e}, "m");
  CHECK(html.find("href=\"matrix-a/report.html\"") != std::string::npos);
  CHECK(count(html, "class=\"scenario-row\"") == 1);
  CHECK(html.find("b-fail") != std::string::npos);
  CHECK(html_escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}
