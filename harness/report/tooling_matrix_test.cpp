// The detection-tooling matrix judged on run directories shaped like real ones: run.json as
// `hanglab run` writes it (fields copied from a torchrun + Python + Flight Recorder run of
// scenarios/tooling/kill_rank.toml), real Flight Recorder dumps from harness/testdata/fr.
#include "report/tooling_matrix.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "util.hpp"

using namespace hanglab;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using nlohmann::json;

namespace {

constexpr double kT0 = 1796202498.5;  // launch
constexpr double kFault = kT0 + 12.7;

// This process's fixture folder, removed when the process ends.
struct TempRoot {
  fs::path path = fs::temp_directory_path() / ("hanglab_tooling_test_" + std::to_string(::getpid()));
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path fresh_dir(const std::string& name) {
  static TempRoot root;
  fs::path d = root.path / name / "20261202T090818Z";
  fs::remove_all(d);
  fs::create_directories(d / "ranks");
  for (int r = 0; r < 3; ++r) fs::create_directories(d / "ranks" / std::to_string(r));
  return d;
}

const ToolCell& cell(const ToolingRow& row, const std::string& tool) {
  for (const auto& c : row.cells)
    if (c.tool == tool) return c;
  FAIL("no cell " << tool);
  throw std::logic_error("unreachable");
}

json detection(const std::string& det, int rank, double t, const std::string& detail) {
  return {{"detector", det}, {"rank", rank}, {"t", t}, {"after_fault_s", t - kFault}, {"detail", detail}};
}

// rank 1 of 3 SIGKILLed under torchrun, Flight Recorder on: ranks 0 and 2 dumped.
fs::path killed_run() {
  fs::path d = fresh_dir("kill_rank");
  write_file(d / "scenario.toml", R"(# Reproduces: a rank is SIGKILLed
[scenario]
name = "kill_rank"
description = "torchrun, PyTorch DDP: a rank is SIGKILLed"
[workload]
command = ["python3", "train.py", "--steps", "8"]
backend = "gloo"
world_size = 3
steps = 8
launcher = "torchrun"
[detect]
flight_recorder = true
[[fault]]
kind = "kill_rank"
ranks = [1]
at_step = 3
[expect.triage]
category = "rank_exit"
cause = "killed"
missing_ranks = [1]
)");
  json run = {
      {"scenario", "kill_rank"},
      {"description", "torchrun, PyTorch DDP: a rank is SIGKILLed"},
      {"settings",
       {{"backend", "gloo"},
        {"launcher", "torchrun"},
        {"world_size", 3},
        {"workload", {"{venv}/bin/python", "{scenario_dir}/../../workloads/python_ddp/train.py", "--steps", "8"}}}},
      {"start_t", kT0},
      {"end_t", kFault + 3.0},
      {"outcome", "crash"},
      {"faults",
       json::array({{{"kind", "kill_rank"}, {"ranks", json::array({1})}, {"t", kFault}, {"fired", true}, {"detail", "sent SIGKILL to rank 1"}}})},
      {"detections",
       json::array({detection("exit_monitor", 1, kFault + 0.02, "rank 1 killed by SIGKILL"),
        detection("backend_error", 0, kFault + 0.5, "Connection closed by peer [127.0.0.1]:41234")})},
      {"torchrun",
       {{"alive_at_harness_teardown", false},
        {"root_cause",
         {{"rank", 1}, {"exitcode", -9}, {"time", "2026-12-02_09:08:31"}, {"traceback", "Signal 9 (SIGKILL) received by PID 26030"}}}}},
      {"flight_recorder",
       {{"dumped_ranks", {0, 2}},
        {"undumped_ranks", json::array({1})},
        {"torchfrtrace",
         {{"status", "crashed"}, {"detail", "KeyError: ('0', 0)"}, {"named_ranks", json::array()}, {"duration_s", 2.8}}}}},
      {"verdict", {{"status", "pass"}}}};
  write_file(d / "run.json", run.dump(2));
  write_file(d / "harness.jsonl", json({{"ev", "launcher_exit"}, {"t", kFault + 1.0}, {"code", 1}}).dump() + "\n");
  write_file(d / "triage.json", json({{"category", "rank_exit"}, {"cause", "killed"}, {"missing_ranks", json::array({1})}}).dump());
  const fs::path fr = fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/fr/killed";
  fs::copy_file(fr / "rank_0", d / "ranks/0/flight_recorder.pkl");
  fs::copy_file(fr / "rank_2", d / "ranks/2/flight_recorder.pkl");
  return d;
}

}  // namespace

TEST_CASE("tooling matrix: a killed rank under torchrun with Flight Recorder dumps", "[tooling_matrix]") {
  const fs::path d = killed_run();
  const ToolingRow row = tooling_row(d, d.parent_path());
  CHECK(row.scenario == "kill_rank");
  CHECK(row.fault == "kill_rank");
  CHECK(row.culprits == std::vector<int>{1});
  CHECK(row.truth_category == "rank_exit");
  REQUIRE(row.fault_t);
  CHECK_THAT(*row.fault_t, WithinAbs(kFault, 1e-6));
  CHECK(row.workload == "python train.py");
  REQUIRE(row.cells.size() == tooling_tools().size());

  // The peer that saw the closed connection: a victim; "a peer went away" is the class, not the cause.
  const ToolCell& pg = cell(row, "pg_error");
  CHECK(pg.status == "fired");
  CHECK_THAT(*pg.after_s, WithinAbs(0.5, 1e-6));
  CHECK(pg.ranks == std::vector<int>{0});
  CHECK(pg.rank_judgment == "wrong");
  CHECK(pg.victim);
  CHECK(pg.cause_judgment == "partly");
  CHECK_THAT(tooling_cell_text(pg), Contains("(victim)"));

  const ToolCell& hb = cell(row, "heartbeat");
  CHECK(hb.status == "na");
  CHECK_THAT(hb.note, Contains("ProcessGroupNCCL"));

  const ToolCell& tft = cell(row, "torchfrtrace");
  CHECK(tft.status == "no_verdict");
  CHECK_THAT(tft.note, Contains("KeyError"));

  // hanglab reads the same dumps: rank 1 left none while 0 and 2 did.
  const ToolCell& fr = cell(row, "fr_hanglab");
  CHECK(fr.status == "fired");
  CHECK(fr.ranks == std::vector<int>{1});
  CHECK(fr.rank_judgment == "right");
  CHECK(fr.post_mortem);

  const ToolCell& tr = cell(row, "torchrun");
  CHECK(tr.status == "fired");
  CHECK_THAT(*tr.after_s, WithinAbs(1.0, 1e-6));
  CHECK(tr.rank_judgment == "right");
  CHECK_FALSE(tr.victim);
  CHECK(tr.category == "rank_exit");
  CHECK(tr.cause == "killed");
  CHECK(tr.cause_judgment == "right");

  const ToolCell& hl = cell(row, "hanglab");
  CHECK(hl.status == "fired");
  CHECK_THAT(*hl.after_s, WithinAbs(0.02, 1e-6));
  CHECK(hl.rank_judgment == "right");
  CHECK(hl.cause_judgment == "partly");  // exit_monitor: a rank exited, not why

  const ToolCell& tg = cell(row, "triage");
  CHECK(tg.status == "fired");
  CHECK(tg.rank_judgment == "right");
  CHECK(tg.cause_judgment == "right");
  CHECK_THAT(*tg.after_s, WithinAbs(3.0, 1e-6));

  // A rank that wrote no error file: torchrun's placeholder line is no traceback, and the rank
  // it names (0, which complained) is a victim.
  json run = json::parse(read_file(d / "run.json"));
  run["torchrun"]["root_cause"] = {
      {"rank", 0}, {"exitcode", 10}, {"traceback", "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"}};
  write_file(d / "run.json", run.dump());
  const ToolingRow again = tooling_row(d, d.parent_path());
  const ToolCell& tr2 = cell(again, "torchrun");
  CHECK(tr2.cause == "exit 10");
  CHECK(tr2.victim);
  CHECK(tr2.cause_judgment == "partly");
}

TEST_CASE("tooling matrix: a fault the script injects is dated by its own log line", "[tooling_matrix]") {
  fs::path d = fresh_dir("skip_backward");
  write_file(d / "scenario.toml", R"([scenario]
name = "skip_backward"
[workload]
command = ["python3", "train.py"]
backend = "gloo"
world_size = 3
[workload.env]
HANGLAB_PY_FAULT_RANK = "1"
HANGLAB_PY_SKIP_STEP = "5"
HANGLAB_PY_UNRELATED = "x"
)");
  const double marker = kT0 + 10.25;
  write_file(d / "ranks/1/stdout.log", iso_time(kT0 + 9.0) + " [rank 1] step 4/12 loss 1.0\n" + iso_time(marker) +
                                           " [rank 1] WARNING: skipping batch at step 5: looks bad (HANGLAB_PY_SKIP_STEP)\n");
  // Another rank's line naming the variable does not date the fault: only the culprit's.
  write_file(d / "ranks/0/stdout.log", iso_time(kT0 + 5.0) + " [rank 0] (HANGLAB_PY_SKIP_STEP) echoed\n");
  json run = {{"scenario", "skip_backward"},
              {"settings", {{"backend", "gloo"}, {"launcher", "local"}, {"world_size", 3}, {"workload", {"python3", "train.py"}}}},
              {"start_t", kT0},
              {"end_t", marker + 20},
              {"faults", json::array()},
              {"detections", json::array({detection("backend_timeout", 2, marker + 10.5, "Timed out waiting 10000ms for recv operation")})},
              {"torchrun", nullptr},
              {"verdict", {{"status", "fail"}}}};
  write_file(d / "run.json", run.dump());
  write_file(d / "triage.json", json({{"category", "collective_mismatch"}, {"cause", "uneven_batches"}, {"missing_ranks", json::array({1})}}).dump());

  const ToolingRow row = tooling_row(d, d.parent_path());
  // Culprit and class from the variable (no [expect.triage] in this scenario).
  CHECK(row.fault == "HANGLAB_PY_SKIP_STEP=5");
  CHECK(row.culprits == std::vector<int>{1});
  CHECK(row.truth_category == "collective_mismatch");
  CHECK(row.truth_cause == "skipped_collective");
  REQUIRE(row.fault_t);
  CHECK_THAT(*row.fault_t, WithinAbs(marker, 1e-3));
  CHECK_THAT(row.fault_t_source, Contains("rank 1"));

  const ToolCell& pg = cell(row, "pg_error");
  CHECK_THAT(*pg.after_s, WithinAbs(10.5, 1e-3));
  CHECK(pg.ranks == std::vector<int>{2});
  CHECK(pg.cause == "timeout");
  CHECK(pg.cause_judgment == "none");  // a timeout says where, not why
  CHECK(cell(row, "torchrun").status == "na");
  CHECK_THAT(cell(row, "torchrun").note, Contains("launcher local"));
  CHECK(cell(row, "torchfrtrace").status == "na");
  CHECK(cell(row, "hanglab").status == "silent");
  // The right class, the wrong finer cause.
  CHECK(cell(row, "triage").cause_judgment == "partly");
  CHECK(cell(row, "triage").rank_judgment == "right");
}

TEST_CASE("tooling matrix: NCCL heartbeat monitor from a rank's log, and FR cells n/a when the scenario has it off",
          "[tooling_matrix]") {
  fs::path d = fresh_dir("nccl_freeze");
  write_file(d / "scenario.toml", R"([scenario]
name = "nccl_freeze"
[workload]
name = "torch_ddp"
backend = "nccl"
world_size = 2
[[fault]]
kind = "freeze_rank"
ranks = [1]
at_step = 3
[expect.triage]
category = "straggler"
cause = "frozen"
)");
  write_file(d / "ranks/0/stderr.log",
             iso_time(kFault + 600.0) +
                 " [rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Heartbeat monitor timed out! Process will be "
                 "terminated after dumping debug info. workMetaList_.size()=1\n");
  json run = {{"scenario", "nccl_freeze"},
              {"settings", {{"backend", "nccl"}, {"launcher", "local"}, {"world_size", 2}, {"workload", "torch_ddp"}}},
              {"start_t", kT0},
              {"end_t", kFault + 700},
              {"faults", json::array({{{"kind", "freeze_rank"}, {"ranks", json::array({1})}, {"t", kFault}, {"fired", true}}})},
              {"detections", json::array()},
              {"verdict", {{"status", "pass"}}}};
  write_file(d / "run.json", run.dump());
  const ToolingRow row = tooling_row(d, d.parent_path());
  const ToolCell& hb = cell(row, "heartbeat");
  CHECK(hb.status == "fired");
  CHECK_THAT(*hb.after_s, WithinAbs(600.0, 1e-3));
  CHECK(hb.ranks == std::vector<int>{0});
  CHECK(hb.victim);
  CHECK(cell(row, "torchfrtrace").status == "na");
  // The built-in workload records it on NCCL too: n/a only because this scenario turned it off.
  CHECK_THAT(cell(row, "fr_hanglab").note, Contains("Flight Recorder off in this scenario"));
  CHECK(cell(row, "triage").status == "no_verdict");  // no triage.json
}

TEST_CASE("tooling matrix: a built-in workload on MPI has no torch Flight Recorder", "[tooling_matrix]") {
  fs::path d = fresh_dir("mpi_kill");
  write_file(d / "scenario.toml", R"([scenario]
name = "mpi_kill"
[workload]
name = "mpi_ddp"
backend = "mpi"
world_size = 2
launcher = "mpirun"
[[fault]]
kind = "kill_rank"
ranks = [1]
at_step = 3
)");
  json run = {{"scenario", "mpi_kill"},
              {"settings", {{"backend", "mpi"}, {"launcher", "mpirun"}, {"world_size", 2}, {"workload", "mpi_ddp"}}},
              {"start_t", kT0},
              {"end_t", kFault + 5},
              {"faults", json::array({{{"kind", "kill_rank"}, {"ranks", json::array({1})}, {"t", kFault}, {"fired", true}}})},
              {"detections", json::array()},
              {"verdict", {{"status", "pass"}}}};
  write_file(d / "run.json", run.dump());
  const ToolingRow row = tooling_row(d, d.parent_path());
  for (const char* tool : {"torchfrtrace", "fr_hanglab"}) {
    CHECK(cell(row, tool).status == "na");
    CHECK_THAT(cell(row, tool).note, Contains("MPI backend: no torch Flight Recorder"));
  }
}

TEST_CASE("tooling matrix: Markdown and HTML over runs, and a directory that is not a run", "[tooling_matrix]") {
  const fs::path d = killed_run();
  const std::vector<ToolingRow> rows = {tooling_row(d, d.parent_path())};
  const std::string md = render_tooling_md(rows, "Generated for a test.");
  CHECK_THAT(md, Contains("Generated for a test."));
  CHECK_THAT(md, Contains("| **kill_rank** (`kill_rank`, run pass) | rank 1: rank_exit/killed |"));
  CHECK_THAT(md, Contains("| torchrun summary (Root Cause) | 1 | 1 | 1 | 1 |"));
  // The summary row: PG error (victim, partly), heartbeat n/a, torchfrtrace crashed, ...
  CHECK_THAT(md, Contains("| kill_rank | rank 1: rank_exit/killed | +0.5 s · rank ✗ (victim) · cause ~ | n/a | no verdict | "
                          "after run +3.0 s · rank ✓ · cause "));
  CHECK_THAT(md, Contains("| +1.0 s · rank ✓ · cause ✓ | +0.0 s · rank ✓ · cause ~ | after run +3.0 s · rank ✓ · cause ✓ |"));
  CHECK_THAT(md, Contains("| NCCL heartbeat monitor | 0 | 0 | 0 | 0 |"));
  const std::string html = render_tooling_html(rows, "Generated <for> a test.");
  CHECK_THAT(html, Contains("Generated &lt;for&gt; a test."));
  CHECK_THAT(html, Contains("<td class=\"good\""));
  CHECK_THAT(html, Contains("<td class=\"na\""));
  CHECK_THROWS_WITH(tooling_row(d / "ranks", d), Contains("not a hanglab run directory"));
}

TEST_CASE("tooling matrix: without a known fault the scenario's [expect.triage] is the truth", "[tooling_matrix]") {
  fs::path d = fresh_dir("byo_stall");
  write_file(d / "scenario.toml", R"([scenario]
name = "byo_stall"
[workload]
command = ["python3", "stall.py"]
world_size = 2
[expect.triage]
category = "data_loading"
missing_ranks = [0]
)");
  json run = {{"scenario", "byo_stall"},
              {"settings", {{"backend", "gloo"}, {"launcher", "local"}, {"world_size", 2}, {"workload", {"python3", "stall.py"}}}},
              {"start_t", kT0},
              {"end_t", kT0 + 40},
              {"faults", json::array()},
              {"detections", json::array({detection("harness_watchdog", -1, kT0 + 30, "no progress on any live rank for 30.0 s")})}};
  write_file(d / "run.json", run.dump());
  write_file(d / "triage.json", json({{"category", "data_loading"}, {"cause", "loader_stall"}, {"missing_ranks", json::array({0})}}).dump());
  const ToolingRow row = tooling_row(d, d.parent_path());
  CHECK(row.fault == "none");
  CHECK(row.culprits == std::vector<int>{0});
  CHECK(row.truth_category == "data_loading");
  CHECK_FALSE(row.fault_t);
  CHECK_THAT(row.fault_t_source, Contains("after launch"));
  const ToolCell& hl = cell(row, "hanglab");
  CHECK(hl.status == "fired");
  CHECK_THAT(*hl.after_s, WithinAbs(30.0, 1e-6));  // after launch
  CHECK(hl.ranks.empty());                          // job-wide
  CHECK(hl.cause_judgment == "none");
  CHECK(cell(row, "triage").cause_judgment == "right");  // no finer cause asked
  CHECK(cell(row, "pg_error").status == "silent");
}
