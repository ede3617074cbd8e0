// Tests for load_scenario(): a full scenario loads with every field, and each class of
// bad input is a ConfigError naming the right key at the right line:col.
#include <unistd.h>

#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "scenario/scenario.hpp"

using namespace hanglab;

namespace {

// One directory per test process (CTest runs each test case as its own process),
// removed when the process exits.
const std::filesystem::path kTempDir =
    std::filesystem::temp_directory_path() / ("hanglab_scenario_test." + std::to_string(::getpid()));
struct TempDirCleanup {
  ~TempDirCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(kTempDir, ec);
  }
} temp_dir_cleanup;

std::filesystem::path temp_dir() {
  std::filesystem::create_directories(kTempDir);
  return kTempDir;
}

std::filesystem::path write_file(const std::string& text, const std::string& stem = "t") {
  auto path = temp_dir() / (stem + ".toml");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

LoadOptions options() {
  LoadOptions o;
  o.known_workloads = {"torch_ddp", "mpi_ddp"};
  o.known_faults = {"kill_rank", "skip_collective"};
  o.flight_recorder_backends["torch_ddp"] = {"gloo", "nccl"};
  o.workload_args["torch_ddp"] = {
      {"checkpoint_every", "int"}, {"lr", "float"}, {"verbose", "bool"}, {"model", "string"}};
  return o;
}

Scenario load(const std::string& text, const std::string& stem = "t") {
  return load_scenario(write_file(text, stem), options());
}

// Loads `text` and returns the ConfigError it must raise.
ConfigError load_error(const std::string& text) {
  auto path = write_file(text);
  try {
    load_scenario(path, options());
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("no ConfigError for:\n" << text);
  throw std::logic_error("unreachable");
}

const std::string kWorkload = R"([workload]
name = "torch_ddp"
world_size = 4
steps = 20
)";
// A bring-your-own rank program, also lines 1-4.
const std::string kByoWorkload = R"([workload]
command = ["python3", "train.py"]
world_size = 4
steps = 20
)";

const std::string kFull = R"(# Reproduces: rank 1 skips the gradient allreduce at step 5
#   (data-dependent branch).
# Expected: ranks 0,2,3 block; Gloo timeout fires ~5 s later;
# triage names rank 1.
[scenario]
name = "skip-allreduce"
description = "a skipped collective"
tags = ["cpu", "gloo"]
deadline_s = 90

[workload]
name = "torch_ddp"
backend = "gloo"
world_size = 4
steps = 20
launcher = "local"
[workload.args]
verbose = true
checkpoint_every = 10
lr = 0.1
model = "tiny"
[workload.env]
TORCH_CPP_LOG_LEVEL = "INFO"

[timeouts]
init_s = 30
collective_s = 5
progress_s = 10.5
heartbeat_s = 1

[[fault]]
kind = "skip_collective"
ranks = [1]
at_step = 5
collective = "allreduce"

[[fault]]
kind = "kill_rank"
ranks = [2, 3]
at_s = 1.5
signal = "SIGKILL"

[expect]
outcome = "hang"
detected_by = ["backend_timeout", "harness_watchdog"]
not_detected_by = ["heartbeat_loss"]
detected_within_s = 15
not_before_s = 4.5
[expect.triage]
category = "collective_mismatch"
cause = "skipped_collective"
phase = "training"
scope = "subset"
missing_ranks = [1]
last_good_step = 4
[expect.triage.liveness]
0 = "hung"
1 = "hung"
)";

}  // namespace

TEST_CASE("a full scenario loads with every field", "[scenario]") {
  auto path = write_file(kFull, "full");
  Scenario sc = load_scenario(path, options());

  CHECK(sc.file == path);
  CHECK(sc.source_text == kFull);
  CHECK(sc.name == "skip-allreduce");
  CHECK(sc.description == "a skipped collective");
  CHECK(sc.reproduces == "rank 1 skips the gradient allreduce at step 5 (data-dependent branch).");
  CHECK(sc.expected_note == "ranks 0,2,3 block; Gloo timeout fires ~5 s later; triage names rank 1.");
  CHECK(sc.tags == std::vector<std::string>{"cpu", "gloo"});
  CHECK(sc.deadline_s == 90);

  const WorkloadSpec& w = sc.workload;
  CHECK(w.name == "torch_ddp");
  CHECK(w.command.empty());
  CHECK(w.backend == "gloo");
  CHECK(w.world_size == 4);
  CHECK(w.steps == 20);
  CHECK(w.launcher == "local");
  using Args = std::vector<std::pair<std::string, std::string>>;
  CHECK(w.args == Args{{"verbose", "true"}, {"checkpoint_every", "10"}, {"lr", "0.1"}, {"model", "tiny"}});
  CHECK(w.env == std::map<std::string, std::string>{{"TORCH_CPP_LOG_LEVEL", "INFO"}});

  CHECK(sc.timeouts.init_s == 30);
  CHECK(sc.timeouts.collective_s == 5);
  CHECK(sc.timeouts.progress_s == 10.5);
  CHECK_FALSE(sc.timeouts.checkpoint_s);  // optional per-phase watchdog limits: unset here
  CHECK_FALSE(sc.timeouts.eval_s);
  CHECK(sc.timeouts.heartbeat_s == 1);

  REQUIRE(sc.faults.size() == 2);
  const FaultSpec& f0 = sc.faults[0];
  CHECK(f0.kind == "skip_collective");
  CHECK(f0.ranks == std::vector<int>{1});
  CHECK(f0.at_step == 5);
  CHECK_FALSE(f0.at_s);
  CHECK(f0.index == 0);
  CHECK(f0.key_prefix() == "fault[0]");
  CHECK(f0.pos.file == path.string());
  CHECK(f0.pos.line == 31);
  CHECK(f0.pos.col == 1);
  // The injector's own keys stay in the table, with their source positions.
  REQUIRE(f0.table.get("collective"));
  CHECK(f0.table.get("collective")->value<std::string>() == "allreduce");
  CHECK(f0.table.get("collective")->source().begin.line == 35);
  Scenario assigned;
  assigned = load_scenario(path, options());  // move-assigned, as the runner does
  CHECK(assigned.faults[0].table.get("collective")->source().begin.line == 35);
  const FaultSpec& f1 = sc.faults[1];
  CHECK(f1.kind == "kill_rank");
  CHECK(f1.ranks == std::vector<int>{2, 3});
  CHECK_FALSE(f1.at_step);
  CHECK(f1.at_s == 1.5);
  CHECK(f1.key_prefix() == "fault[1]");
  CHECK(f1.table.get("signal")->value<std::string>() == "SIGKILL");

  const ExpectSpec& ex = sc.expect;
  CHECK(ex.outcome == "hang");
  CHECK(ex.detected_by == std::vector<std::string>{"backend_timeout", "harness_watchdog"});
  CHECK(ex.not_detected_by == std::vector<std::string>{"heartbeat_loss"});
  CHECK(ex.detected_within_s == 15);
  CHECK(ex.not_before_s == 4.5);
  CHECK(ex.triage.category == "collective_mismatch");
  CHECK(ex.triage.cause == "skipped_collective");
  CHECK(ex.triage.phase == "training");
  CHECK(ex.triage.scope == "subset");
  CHECK(ex.triage.missing_ranks == std::vector<int>{1});
  CHECK(ex.triage.last_good_step == 4);
  CHECK(ex.triage.liveness == std::map<int, std::string>{{0, "hung"}, {1, "hung"}});
}

TEST_CASE("defaults: name from the file stem, no tags, deadline 120", "[scenario]") {
  Scenario sc = load(kWorkload, "my-scenario");
  CHECK(sc.name == "my-scenario");
  CHECK(sc.description.empty());
  CHECK(sc.tags.empty());
  CHECK(sc.deadline_s == 120);
  CHECK(sc.reproduces.empty());
  CHECK(sc.expected_note.empty());
  CHECK(sc.workload.backend == "gloo");
  CHECK(sc.workload.launcher == "local");
  CHECK(sc.timeouts.init_s == 30);
  CHECK(sc.timeouts.collective_s == 5);
  CHECK(sc.timeouts.progress_s == 10);
  CHECK(sc.timeouts.heartbeat_s == 1);
  CHECK(sc.faults.empty());
  CHECK_FALSE(sc.expect.outcome);
  CHECK(sc.expect.detected_by.empty());
  CHECK_FALSE(sc.expect.triage.category);
}

TEST_CASE("header comments stop at the first non-comment line", "[scenario]") {
  Scenario sc = load("# Expected: completes\n#\n# Note: not captured\n# Reproduces: a\n#  b\n\n" + kWorkload +
                     "# Reproduces: ignored, not in the opening block\n");
  CHECK(sc.expected_note == "completes");
  CHECK(sc.reproduces == "a b");
}

TEST_CASE("a bring-your-own command workload takes env but no args", "[scenario]") {
  Scenario sc = load(R"([workload]
command = ["python3", "train.py", "--steps", "3"]
world_size = 2
[workload.env]
"ODD.NAME" = "x"
)");
  CHECK(sc.workload.name.empty());
  CHECK(sc.workload.command == std::vector<std::string>{"python3", "train.py", "--steps", "3"});
  CHECK(sc.workload.env.at("ODD.NAME") == "x");

  auto e = load_error(R"([workload]
command = ["python3", "train.py"]
[workload.args]
lr = 1
)");
  CHECK(e.key() == "workload.args");
  CHECK(e.line() == 3);
  CHECK(e.col() == 1);
  CHECK_THAT(e.what(), Catch::Contains("not allowed with command"));
}

TEST_CASE("workload args: ints accepted for floats, floats round-trip, file order kept", "[scenario]") {
  Scenario sc = load(kWorkload + "[workload.args]\nmodel = \"m\"\nlr = 3\nverbose = false\n");
  using Args = std::vector<std::pair<std::string, std::string>>;
  CHECK(sc.workload.args == Args{{"model", "m"}, {"lr", "3"}, {"verbose", "false"}});

  sc = load(kWorkload + "[workload.args]\nlr = 1.0000000000000002\n");
  REQUIRE(sc.workload.args.size() == 1);
  CHECK(std::stod(sc.workload.args[0].second) == 1.0000000000000002);
}

TEST_CASE("fault tables: kind-specific keys are left to the injector", "[scenario]") {
  Scenario sc = load(kWorkload + "[[fault]]\nkind = \"kill_rank\"\nranks = [0]\nwhatever_ms = 3\n");
  REQUIRE(sc.faults.size() == 1);
  CHECK_FALSE(sc.faults[0].at_step);
  CHECK_FALSE(sc.faults[0].at_s);
  CHECK(sc.faults[0].table.get("whatever_ms")->value<int>() == 3);
}

TEST_CASE("error messages have the form FILE:LINE:COL: KEY: MESSAGE", "[scenario][errors]") {
  const std::string file = (temp_dir() / "t.toml").string();

  SECTION("wrong type") {
    auto e = load_error("[workload]\nname = \"torch_ddp\"\nworld_size = \"4\"\n");
    CHECK(std::string(e.what()) == file + ":3:14: workload.world_size: expected an integer, got string");
  }
  SECTION("rank out of range points at the element") {
    auto e = load_error(kWorkload + "[[fault]]\nkind = \"kill_rank\"\nranks = [1, 4]\n");
    CHECK(std::string(e.what()) ==
          file + ":7:13: fault[0].ranks: rank 4 out of range: world_size is 4 (ranks 0..3)");
  }
  SECTION("unknown key") {
    auto e = load_error(kWorkload + "[timeouts]\ncollective_ms = 5\n");
    CHECK(std::string(e.what()) ==
          file + ":6:1: timeouts.collective_ms: unknown key (expected one of: init_s, collective_s, progress_s, "
                 "heartbeat_s, checkpoint_s, eval_s)");
  }
  SECTION("unknown fault kind") {
    auto e = load_error(kWorkload + "[[fault]]\nkind = \"oom\"\nranks = [0]\n");
    CHECK(std::string(e.what()) ==
          file + ":6:8: fault[0].kind: unknown fault kind \"oom\" (known: kill_rank, skip_collective)");
  }
  SECTION("syntax error carries the parser's position and no key") {
    auto e = load_error("[workload]\nname = = \"x\"\n");
    CHECK(e.key().empty());
    CHECK(e.line() == 2);
    CHECK(e.col() == 8);
    CHECK_THAT(e.what(), Catch::StartsWith(file + ":2:8: "));
  }
  SECTION("missing file") {
    const auto missing = temp_dir() / "does-not-exist.toml";
    try {
      load_scenario(missing, options());
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()) == missing.string() + ":0:0: cannot read: No such file or directory");
      CHECK(e.line() == 0);
      CHECK(e.key().empty());
    }
  }
  SECTION("a directory is unreadable") {
    try {
      load_scenario(temp_dir(), options());
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::EndsWith(":0:0: cannot read: Is a directory"));
    }
  }
}

namespace {
struct BadCase {
  const char* what;
  std::string toml;
  std::string key;
  int line;
  int col;
  std::string message_part;
};
}  // namespace

TEST_CASE("each class of bad input names the key and its line:col", "[scenario][errors]") {
  // kWorkload occupies lines 1-4.
  const std::string fault = "[[fault]]\nkind = \"kill_rank\"\n";  // lines 5-6
  const std::vector<BadCase> cases = {
      // unknown keys, one per table
      {"unknown top-level table", kWorkload + "[faults]\nx = 1\n", "faults", 5, 2, "unknown table"},
      {"unknown top-level key", "title = 1\n" + kWorkload, "title", 1, 1, "unknown table"},
      {"unknown [scenario] key", "[scenario]\nnmae = \"x\"\n" + kWorkload, "scenario.nmae", 2, 1, "unknown key"},
      {"unknown [workload] key", kWorkload + "world = 2\n", "workload.world", 5, 1, "unknown key"},
      {"unknown [timeouts] key", kWorkload + "[timeouts]\ninit = 1\n", "timeouts.init", 6, 1, "unknown key"},
      {"unknown [detect] key", kWorkload + "[detect]\nflightrecorder = true\n", "detect.flightrecorder", 6, 1,
       "unknown key (expected one of: flight_recorder, fr_buffer_size)"},
      {"[detect] flight_recorder not a boolean", kWorkload + "[detect]\nflight_recorder = \"yes\"\n",
       "detect.flight_recorder", 6, 19, "expected true or false, got string"},
      {"[detect] fr_buffer_size without the recorder", kWorkload + "[detect]\nfr_buffer_size = 100\n",
       "detect.fr_buffer_size", 6, 18, "only with flight_recorder = true"},
      {"[detect] fr_buffer_size zero", kByoWorkload + "[detect]\nflight_recorder = true\nfr_buffer_size = 0\n",
       "detect.fr_buffer_size", 7, 18, "must be between 1 and 1000000 (got 0)"},
      {"[detect] flight_recorder on a built-in workload without torch",
       "[workload]\nname = \"mpi_ddp\"\nbackend = \"mpi\"\n[detect]\nflight_recorder = true\n",
       "detect.flight_recorder", 5, 19,
       "the built-in workload \"mpi_ddp\" on backend \"mpi\" has no torch Flight Recorder (only torch_ddp on gloo, "
       "nccl; or a bring-your-own command whose ranks dump to HANGLAB_FR_DUMP)"},
      {"[detect] flight_recorder on torch_ddp over MPI", kWorkload + "backend = \"mpi\"\n[detect]\nflight_recorder = true\n",
       "detect.flight_recorder", 7, 19, "the built-in workload \"torch_ddp\" on backend \"mpi\" has no torch Flight Recorder"},
      {"[detect] not a table", "detect = true\n" + kWorkload, "detect", 1, 10, "expected a table, got boolean"},
      {"unknown [expect] key", kWorkload + "[expect]\noutcome = \"hang\"\ndetect = []\n", "expect.detect", 7, 1,
       "unknown key"},
      {"unknown [expect.triage] key", kWorkload + "[expect.triage]\ncat = \"x\"\n", "expect.triage.cat", 6, 1,
       "unknown key"},
      {"unknown arg", kWorkload + "[workload.args]\nbatch = 4\n", "workload.args.batch", 6, 1,
       "unknown argument for workload \"torch_ddp\" (known: checkpoint_every, lr, model, verbose)"},
      // types
      {"wrong arg type", kWorkload + "[workload.args]\ncheckpoint_every = 2.5\n", "workload.args.checkpoint_every",
       6, 20, "expected an integer, got float"},
      {"float arg as string", kWorkload + "[workload.args]\nlr = \"0.1\"\n", "workload.args.lr", 6, 6,
       "expected a number, got string"},
      {"bool arg as int", kWorkload + "[workload.args]\nverbose = 1\n", "workload.args.verbose", 6, 11,
       "expected a boolean, got integer"},
      {"table where a value belongs", "scenario = 3\n" + kWorkload, "scenario", 1, 12,
       "expected a table, got integer"},
      {"tags not strings", "[scenario]\ntags = [\"a\", 2]\n" + kWorkload, "scenario.tags", 2, 14,
       "expected a string, got integer"},
      {"env value not a string", kWorkload + "[workload.env]\nX = 1\n", "workload.env.X", 6, 5,
       "expected a string, got integer"},
      {"timeout not a number", kWorkload + "[timeouts]\nprogress_s = \"10\"\n", "timeouts.progress_s", 6, 14,
       "expected a number, got string"},
      {"timeout not positive", kWorkload + "[timeouts]\nheartbeat_s = 0\n", "timeouts.heartbeat_s", 6, 15,
       "must be a finite number > 0"},
      {"deadline infinite", "[scenario]\ndeadline_s = inf\n" + kWorkload, "scenario.deadline_s", 2, 14,
       "must be a finite number > 0"},
      {"[fault] instead of [[fault]]", kWorkload + "[fault]\nkind = \"kill_rank\"\n", "fault", 5, 1,
       "expected an array of tables ([[fault]]), got table"},
      // workload
      {"unknown workload", "[workload]\nname = \"jax\"\n", "workload.name", 2, 8,
       "unknown workload \"jax\" (known: torch_ddp, mpi_ddp)"},
      {"both name and command", "[workload]\nname = \"torch_ddp\"\ncommand = [\"a\"]\n", "workload.command", 3, 11,
       "not both"},
      {"neither name nor command", "[workload]\nworld_size = 2\n", "workload", 1, 1, "needs name"},
      {"empty command", "[workload]\ncommand = []\n", "workload.command", 2, 11, "non-empty"},
      {"missing [workload]", "[scenario]\nname = \"x\"\n", "workload", 1, 1, "missing required table"},
      {"world_size too big", "[workload]\nname = \"torch_ddp\"\nworld_size = 5000\n", "workload.world_size", 3, 14,
       "must be between 1 and 4096 (got 5000)"},
      {"steps zero", "[workload]\nname = \"torch_ddp\"\nsteps = 0\n", "workload.steps", 3, 9, "must be >= 1"},
      {"bad backend", "[workload]\nname = \"torch_ddp\"\nbackend = \"tcp\"\n", "workload.backend", 3, 11,
       "must be one of gloo, nccl, mpi (got \"tcp\")"},
      {"bad launcher", "[workload]\nname = \"torch_ddp\"\nlauncher = \"slurm\"\n", "workload.launcher", 3, 12,
       "must be one of local, mpirun"},
      {"unsafe scenario name", "[scenario]\nname = \"a/b\"\n" + kWorkload, "scenario.name", 2, 8,
       "only letters, digits"},
      // faults
      {"rank >= world_size", kWorkload + fault + "ranks = [0, 4]\n", "fault[0].ranks", 7, 13,
       "rank 4 out of range"},
      {"negative rank", kWorkload + fault + "ranks = [-1]\n", "fault[0].ranks", 7, 10, "rank -1 out of range"},
      {"duplicate rank", kWorkload + fault + "ranks = [1, 2, 1]\n", "fault[0].ranks", 7, 16, "rank 1 listed twice"},
      {"rank not an int", kWorkload + fault + "ranks = [\"1\"]\n", "fault[0].ranks", 7, 10,
       "expected an integer, got string"},
      {"empty ranks", kWorkload + fault + "ranks = []\n", "fault[0].ranks", 7, 9, "at least one rank"},
      {"missing ranks", kWorkload + fault, "fault[0].ranks", 5, 1, "missing required key"},
      {"missing kind", kWorkload + "[[fault]]\nranks = [0]\n", "fault[0].kind", 5, 1, "missing required key"},
      {"unknown kind in 2nd fault", kWorkload + fault + "ranks = [0]\n[[fault]]\nkind = \"nope\"\nranks = [0]\n",
       "fault[1].kind", 9, 8, "unknown fault kind \"nope\""},
      {"at_step > steps", kWorkload + fault + "ranks = [0]\nat_step = 21\n", "fault[0].at_step", 8, 11,
       "must be between 1 and 20 (got 21)"},
      {"at_step zero", kWorkload + fault + "ranks = [0]\nat_step = 0\n", "fault[0].at_step", 8, 11,
       "must be between 1 and 20"},
      {"at_s negative", kWorkload + fault + "ranks = [0]\nat_s = -1\n", "fault[0].at_s", 8, 8,
       "must be a finite number >= 0"},
      {"both at_step and at_s", kWorkload + fault + "ranks = [0]\nat_step = 2\nat_s = 1.0\n", "fault[0].at_s", 9,
       8, "set at most one trigger"},
      {"both at_s and at_step", kWorkload + fault + "ranks = [0]\nat_s = 1.0\nat_step = 2\n", "fault[0].at_step",
       9, 11, "set at most one trigger"},
      {"at_output after at_s", kWorkload + fault + "ranks = [0]\nat_s = 1.0\nat_output = \"x\"\n",
       "fault[0].at_output", 9, 13, "set at most one trigger: at_step, at_s or at_output"},
      {"at_output empty", kWorkload + fault + "ranks = [0]\nat_output = \"\"\n", "fault[0].at_output", 8, 13,
       "must be 1 to 200 characters"},
      {"at_output not a string", kWorkload + fault + "ranks = [0]\nat_output = 3\n", "fault[0].at_output", 8, 13,
       "string"},
      {"at_output two lines", kWorkload + fault + "ranks = [0]\nat_output = \"a\\nb\"\n", "fault[0].at_output", 8,
       13, "within one line"},
      // expect
      {"bad outcome", kWorkload + "[expect]\noutcome = \"stuck\"\n", "expect.outcome", 6, 11,
       "must be one of completed, hang, crash, slow (got \"stuck\")"},
      {"unknown detector", kWorkload + "[expect]\ndetected_by = [\"nccl_watchdog\"]\n", "expect.detected_by", 6, 16,
       "unknown detector \"nccl_watchdog\""},
      {"detector in both lists",
       kWorkload + "[expect]\ndetected_by = [\"exit_monitor\"]\nnot_detected_by = [\"exit_monitor\"]\n",
       "expect.not_detected_by", 7, 20, "also listed in detected_by"},
      {"timing without a timed detector", kWorkload + "[expect]\ndetected_by = [\"triage\"]\ndetected_within_s = 3\n",
       "expect.detected_within_s", 7, 21, "needs a detector other than triage"},
      {"negative detected_within_s",
       kWorkload + "[expect]\ndetected_by = [\"exit_monitor\"]\ndetected_within_s = -2\n",
       "expect.detected_within_s", 7, 21, ">= 0"},
      {"not_before_s > detected_within_s",
       kWorkload + "[expect]\ndetected_by = [\"exit_monitor\"]\ndetected_within_s = 2\nnot_before_s = 3\n",
       "expect.not_before_s", 8, 16, "must not exceed detected_within_s (2)"},
      {"bad category", kWorkload + "[expect.triage]\ncategory = \"deadlock\"\n", "expect.triage.category", 6, 12,
       "must be one of rendezvous, collective_mismatch"},
      {"bad phase", kWorkload + "[expect.triage]\nphase = \"backward\"\n", "expect.triage.phase", 6, 9,
       "must be one of init, training"},
      {"bad scope", kWorkload + "[expect.triage]\nscope = \"some\"\n", "expect.triage.scope", 6, 9,
       "must be one of all, subset, none"},
      {"cause not a string", kWorkload + "[expect.triage]\ncause = 1\n", "expect.triage.cause", 6, 9,
       "expected a string, got integer"},
      {"missing_ranks out of range", kWorkload + "[expect.triage]\nmissing_ranks = [9]\n",
       "expect.triage.missing_ranks", 6, 18, "rank 9 out of range"},
      {"last_good_step > steps", kWorkload + "[expect.triage]\nlast_good_step = 21\n", "expect.triage.last_good_step",
       6, 18, "must be between 0 and 20"},
      {"liveness rank out of range", kWorkload + "[expect.triage.liveness]\n4 = \"dead\"\n",
       "expect.triage.liveness.4", 6, 1, "keys are ranks 0..3"},
      {"liveness key not a rank", kWorkload + "[expect.triage.liveness]\nr1 = \"dead\"\n",
       "expect.triage.liveness.r1", 6, 1, "keys are ranks"},
      {"bad liveness", kWorkload + "[expect.triage.liveness]\n1 = \"sleeping\"\n", "expect.triage.liveness.1", 6, 5,
       "must be one of completed, dead, hung, frozen, slow"},
  };
  for (const BadCase& c : cases) {
    INFO(c.what << "\n" << c.toml);
    auto path = write_file(c.toml);
    bool threw = false;
    try {
      load_scenario(path, options());
    } catch (const ConfigError& e) {
      threw = true;
      INFO(e.what());
      CHECK(e.file() == path.string());
      CHECK(e.key() == c.key);
      CHECK(e.line() == c.line);
      CHECK(e.col() == c.col);
      CHECK_THAT(e.what(), Catch::Contains(c.message_part));
    }
    CHECK(threw);
  }
}

TEST_CASE("the first error in file order is reported", "[scenario][errors]") {
  // [expect] is checked after [workload] but comes first in the file.
  auto e = load_error("[expect]\noutcome = \"bad\"\n[workload]\nname = \"torch_ddp\"\nsteps = 0\n");
  CHECK(e.key() == "expect.outcome");
  CHECK(e.line() == 2);

  // Unknown keys inside one table: the earlier line wins although "zzz" sorts last.
  e = load_error("[workload]\nzzz = 1\naaa = 2\nname = \"torch_ddp\"\n");
  CHECK(e.key() == "workload.zzz");
}

TEST_CASE("an invalid world_size or steps does not produce range errors elsewhere", "[scenario][errors]") {
  auto e = load_error(R"([[fault]]
kind = "kill_rank"
ranks = [7]
[workload]
name = "torch_ddp"
world_size = 0
)");
  CHECK(e.key() == "workload.world_size");

  e = load_error("[[fault]]\nkind = \"kill_rank\"\nranks = [0]\nat_step = 50\n[workload]\nname = \"torch_ddp\"\nsteps = \"x\"\n");
  CHECK(e.key() == "workload.steps");
}

TEST_CASE("config_error_at points at a node", "[scenario]") {
  auto tbl = toml::parse(std::string_view("a = 1\nbb = \"x\"\n"), std::string_view("f.toml"));
  ConfigError e = config_error_at("f.toml", *tbl.get("bb"), "fault[0].bb", "bad value");
  CHECK(std::string(e.what()) == "f.toml:2:6: fault[0].bb: bad value");
  ConfigError e2 = config_error_at("f.toml", tbl.get("a")->source(), "", "whole thing");
  CHECK(std::string(e2.what()) == "f.toml:1:5: whole thing");
}

TEST_CASE("per-phase watchdog limits checkpoint_s and eval_s are optional [timeouts] keys") {
  Scenario sc = load(kWorkload + "[timeouts]\ncheckpoint_s = 40\neval_s = 12.5\n");
  REQUIRE(sc.timeouts.checkpoint_s);
  CHECK(*sc.timeouts.checkpoint_s == 40);
  REQUIRE(sc.timeouts.eval_s);
  CHECK(*sc.timeouts.eval_s == 12.5);
  CHECK(sc.timeouts.progress_s == 10);  // the default stays
  auto e = load_error(kWorkload + "[timeouts]\ncheckpoint_s = 0\n");
  CHECK(e.key() == "timeouts.checkpoint_s");
}

TEST_CASE("[expect] fault_manifests: a boolean, only with a [[fault]]", "[scenario]") {
  const std::string fault = "[[fault]]\nkind = \"kill_rank\"\nranks = [1]\n";  // lines 5-7
  CHECK_FALSE(load(kWorkload + fault).expect.fault_manifests.has_value());
  const Scenario off = load(kWorkload + fault + "[expect]\nfault_manifests = false\n");
  REQUIRE(off.expect.fault_manifests.has_value());
  CHECK_FALSE(*off.expect.fault_manifests);
  CHECK(*load(kWorkload + fault + "[expect]\nfault_manifests = true\n").expect.fault_manifests);

  ConfigError typed = load_error(kWorkload + fault + "[expect]\nfault_manifests = \"no\"\n");
  CHECK(typed.key() == "expect.fault_manifests");
  CHECK(typed.line() == 9);
  CHECK_THAT(typed.what(), Catch::Contains("expected true or false"));
  ConfigError alone = load_error(kWorkload + "[expect]\nfault_manifests = false\n");
  CHECK(alone.key() == "expect.fault_manifests");
  CHECK(alone.line() == 6);
  CHECK_THAT(alone.what(), Catch::Contains("no [[fault]]"));
}

TEST_CASE("launcher torchrun: max_restarts and [expect.torchrun]", "[scenario]") {
  Scenario sc = load(R"([workload]
name = "torch_ddp"
world_size = 3
launcher = "torchrun"
max_restarts = 2
[expect]
outcome = "crash"
[expect.torchrun]
restarted = 2
tore_down = true
hung_in_teardown = false
root_cause_rank = 2
)");
  CHECK(sc.workload.launcher == "torchrun");
  CHECK(sc.workload.max_restarts == 2);
  REQUIRE(sc.expect.torchrun.any());
  CHECK(*sc.expect.torchrun.restarted == 2);
  CHECK(*sc.expect.torchrun.tore_down);
  CHECK_FALSE(*sc.expect.torchrun.hung_in_teardown);
  CHECK(*sc.expect.torchrun.root_cause_rank == 2);

  SECTION("max_restarts under another launcher") {
    ConfigError e = load_error("[workload]\nname = \"torch_ddp\"\nmax_restarts = 1\n");
    CHECK(e.key() == "workload.max_restarts");
    CHECK(e.line() == 3);
  }
  SECTION("[expect.torchrun] under another launcher") {
    ConfigError e = load_error("[workload]\nname = \"torch_ddp\"\n[expect.torchrun]\nrestarted = 0\n");
    CHECK(e.key() == "expect.torchrun");
    CHECK(e.line() == 3);
  }
  SECTION("an unknown key, a wrong type, a rank out of range") {
    const std::string head = "[workload]\nname = \"torch_ddp\"\nworld_size = 3\nlauncher = \"torchrun\"\n[expect.torchrun]\n";
    CHECK(load_error(head + "restarts = 1\n").key() == "expect.torchrun.restarts");
    CHECK(load_error(head + "tore_down = 1\n").key() == "expect.torchrun.tore_down");
    ConfigError e = load_error(head + "root_cause_rank = 3\n");
    CHECK(e.key() == "expect.torchrun.root_cause_rank");
    CHECK(e.line() == 6);
  }
}

TEST_CASE("launcher srun: time_limit_min, and nodes > 1", "[scenario]") {
  Scenario sc = load("[workload]\nname = \"torch_ddp\"\nworld_size = 4\nlauncher = \"srun\"\ntime_limit_min = 2\n"
                     "[topology]\nnodes = 2\n");
  CHECK(sc.workload.launcher == "srun");
  CHECK(sc.workload.time_limit_min == 2);
  CHECK(sc.topology.nodes == 2);
  SECTION("time_limit_min under another launcher") {
    ConfigError e = load_error("[workload]\nname = \"torch_ddp\"\ntime_limit_min = 1\n");
    CHECK(e.key() == "workload.time_limit_min");
    CHECK(e.line() == 3);
  }
  SECTION("time_limit_min out of range") {
    CHECK(load_error("[workload]\nname = \"torch_ddp\"\nlauncher = \"srun\"\ntime_limit_min = 0\n").key() ==
          "workload.time_limit_min");
  }
  SECTION("nodes > 1 under torchrun (one agent per node), refused under mpirun") {
    CHECK(load("[workload]\nname = \"torch_ddp\"\nworld_size = 4\nlauncher = \"torchrun\"\n[topology]\nnodes = 2\n")
              .topology.multi_node());
    ConfigError e = load_error("[workload]\nname = \"torch_ddp\"\nworld_size = 4\nlauncher = \"mpirun\"\n"
                               "[topology]\nnodes = 2\n");
    CHECK(e.key() == "topology.nodes");
  }
}

TEST_CASE("python_modules: the venv modules a bring-your-own command needs", "[scenario]") {
  Scenario sc = load("[workload]\ncommand = [\"python3\", \"-m\", \"x\"]\npython_modules = [\"lightning\", \"jsonargparse\", \"a.b_c\"]\n");
  CHECK(sc.workload.python_modules == std::vector<std::string>{"lightning", "jsonargparse", "a.b_c"});
  SECTION("only with command") {
    ConfigError e = load_error("[workload]\nname = \"torch_ddp\"\npython_modules = [\"lightning\"]\n");
    CHECK(e.key() == "workload.python_modules");
    CHECK(e.line() == 3);
  }
  SECTION("a name that is not a module (it would reach a shell)") {
    ConfigError e = load_error("[workload]\ncommand = [\"python3\"]\npython_modules = [\"x; rm -rf /\"]\n");
    CHECK(e.key() == "workload.python_modules");
    CHECK(e.line() == 3);
  }
  SECTION("not an array of strings") {
    CHECK(load_error("[workload]\ncommand = [\"python3\"]\npython_modules = \"lightning\"\n").key() == "workload.python_modules");
  }
}

TEST_CASE("[detect] flight_recorder: off by default, buffer size 2000 unless set", "[scenario]") {
  Scenario off = load(kWorkload);
  CHECK_FALSE(off.detect.flight_recorder);
  const std::string& kWorkload = kByoWorkload;
  Scenario on = load(kWorkload + "[detect]\nflight_recorder = true\n");
  CHECK(on.detect.flight_recorder);
  CHECK(on.detect.fr_buffer_size == 2000);
  Scenario sized = load(kWorkload + "[detect]\nflight_recorder = true\nfr_buffer_size = 64\n");
  CHECK(sized.detect.fr_buffer_size == 64);
  Scenario explicit_off = load(kWorkload + "[detect]\nflight_recorder = false\n");
  CHECK_FALSE(explicit_off.detect.flight_recorder);
}

TEST_CASE("[detect] flight_recorder: torch_ddp records it on Gloo and on NCCL", "[scenario]") {
  for (const char* backend : {"gloo", "nccl"}) {
    Scenario sc = load(kWorkload + "backend = \"" + backend + "\"\n[detect]\nflight_recorder = true\nfr_buffer_size = 100\n");
    CHECK(sc.detect.flight_recorder);
    CHECK(sc.detect.fr_buffer_size == 100);
  }
  // The default backend is gloo.
  CHECK(load(kWorkload + "[detect]\nflight_recorder = true\n").detect.flight_recorder);
}

TEST_CASE("[topology]: nodes spread the ranks evenly, and what cannot be is an error at its key", "[scenario]") {
  const std::string w4 = "[workload]\nname = \"torch_ddp\"\nworld_size = 4\n";  // lines 1-3
  Scenario one = load(w4);
  CHECK_FALSE(one.topology.multi_node());
  CHECK(one.topology.node_of(3) == 0);

  Scenario two = load(w4 + "[topology]\nnodes = 2\nsecond_nic = true\n");
  CHECK(two.topology.multi_node());
  CHECK(two.topology.ranks_per_node == 2);
  CHECK(two.topology.second_nic);
  CHECK(two.topology.node_of(0) == 0);
  CHECK(two.topology.node_of(1) == 0);
  CHECK(two.topology.node_of(2) == 1);
  CHECK(two.topology.node_of(3) == 1);
  CHECK(load(w4 + "[topology]\nnodes = 4\nranks_per_node = 1\n").topology.node_of(3) == 3);

  const std::vector<BadCase> cases = {
      {"uneven spread", w4 + "[topology]\nnodes = 3\n", "topology.nodes", 5, 9, "does not spread evenly over 3 nodes"},
      {"nodes x ranks_per_node is not the world", w4 + "[topology]\nnodes = 2\nranks_per_node = 3\n",
       "topology.ranks_per_node", 6, 18, "2 node(s) x 3 rank(s) is 6 ranks, but [workload] world_size is 4"},
      {"unknown key", w4 + "[topology]\nnode = 2\n", "topology.node", 5, 1, "unknown key"},
      {"second_nic on one node", w4 + "[topology]\nsecond_nic = true\n", "topology.second_nic", 5, 14,
       "only with nodes > 1"},
      {"mpi across nodes", "[workload]\nname = \"mpi_ddp\"\nbackend = \"mpi\"\nworld_size = 4\n[topology]\nnodes = 2\n",
       "topology.nodes", 6, 9, "not mpi"},
      {"nodes out of range", w4 + "[topology]\nnodes = 0\n", "topology.nodes", 5, 9, ""},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    ConfigError e = load_error(c.toml);
    INFO(e.what());
    CHECK(e.key() == c.key);
    CHECK(e.line() == c.line);
    CHECK(e.col() == c.col);
    CHECK_THAT(e.what(), Catch::Contains(c.message_part));
  }
}
