// Tests for the torch-knob interaction rules of `hanglab validate`: the static rules for the
// NCCL-only knobs (heartbeat vs the dump, dump wait vs the launchers' grace, error handling off),
// the measured ones judged on canned probe facts, and the settings file's [torch] table.
#include <unistd.h>

#include <fstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "validate/torch_checks.hpp"
#include "validate/validate.hpp"

using namespace hanglab;

namespace {

TorchKnobs knobs(const std::string& body) {
  std::vector<ConfigError> errors;
  toml::table root = toml::parse("[torch]\n" + body, std::string_view("k.toml"));
  TorchKnobs k = parse_torch_table(*root["torch"].as_table(), "k.toml", "torch", errors);
  REQUIRE(errors.empty());
  return k;
}

const KnobInteraction* row(const std::vector<KnobInteraction>& rows, const std::string& id) {
  for (const auto& r : rows)
    if (r.id == id) return &r;
  return nullptr;
}

Timeouts timeouts(double collective_s) {
  Timeouts t;
  t.collective_s = collective_s;
  return t;
}

}  // namespace

TEST_CASE("heartbeat timeout shorter than collective_s + dump wait: harmful, static (NCCL)", "[torch_checks]") {
  const KnobProbe none;
  auto rows = torch_interactions(knobs("nccl_heartbeat_timeout_s = 20\n"), timeouts(10), none);
  const KnobInteraction* r = row(rows, "heartbeat_before_dump");
  REQUIRE(r);
  // torch's default dump wait is 15 s: 10 + 15 = 25 > 20.
  CHECK(r->verdict == "harmful");
  CHECK_FALSE(r->measured_here);
  CHECK(r->measured.find("10 + 15 = 25 s") != std::string::npos);

  rows = torch_interactions(knobs("nccl_heartbeat_timeout_s = 30\n"), timeouts(10), none);
  CHECK(row(rows, "heartbeat_before_dump")->verdict == "needs_nccl");
  // Monitoring off: the heartbeat timeout is unused, nothing to be harmful about.
  rows = torch_interactions(knobs("nccl_heartbeat_timeout_s = 5\nnccl_enable_monitoring = false\n"), timeouts(10), none);
  CHECK(row(rows, "heartbeat_before_dump")->verdict == "needs_nccl");
}

TEST_CASE("dump wait longer than a launcher's grace period loses the dump", "[torch_checks]") {
  const KnobProbe none;
  auto rows = torch_interactions(knobs("nccl_wait_timeout_dump_ms = 60000\n"), timeouts(5), none);
  const KnobInteraction* r = row(rows, "dump_wait_vs_grace");
  REQUIRE(r);
  CHECK(r->verdict == "harmful");
  CHECK(r->measured.find("torchrun's 30 s") != std::string::npos);
  CHECK(r->measured.find(fmt::format("hanglab's {:g} s", hanglab_term_grace_s())) != std::string::npos);
  rows = torch_interactions(knobs("nccl_wait_timeout_dump_ms = 1000\n"), timeouts(5), none);
  CHECK(row(rows, "dump_wait_vs_grace")->verdict == "needs_nccl");
}

TEST_CASE("measured: no torch dump on a Gloo timeout with fr_dump_on_timeout", "[torch_checks]") {
  KnobProbe p;
  p.ran = true;
  p.timeout_ranks = 2;
  p.torch_dumps = 0;
  auto rows = torch_interactions(knobs("fr_dump_on_timeout = true\n"), timeouts(5), p);
  const KnobInteraction* r = row(rows, "dump_on_timeout_gloo");
  REQUIRE(r);
  CHECK(r->verdict == "harmful");
  CHECK(r->measured_here);
  CHECK(r->measured.rfind("2 ranks timed out; torch wrote 0 dumps", 0) == 0);
  p.torch_dumps = 2;  // where torch does dump (what a NCCL watchdog would do), nothing to report
  CHECK(row(torch_interactions(knobs("fr_dump_on_timeout = true\n"), timeouts(5), p), "dump_on_timeout_gloo")->verdict ==
        "benign");
  // No timeout seen: no verdict from a run that did not exercise it.
  p.timeout_ranks = 0;
  CHECK(row(torch_interactions(knobs("fr_dump_on_timeout = true\n"), timeouts(5), p), "dump_on_timeout_gloo")->verdict ==
        "needs_nccl");
}

TEST_CASE("measured: a zero buffer asked to dump gives empty dumps, a slow dump outlasts the grace", "[torch_checks]") {
  KnobProbe p;
  p.ran = true;
  p.dump_entries = {0, 0};
  p.dump_ms = {150, 180};
  auto rows = torch_interactions(knobs("fr_buffer_size = 0\nfr_dump_on_timeout = true\n"), timeouts(5), p);
  REQUIRE(row(rows, "buffer_vs_dump"));
  CHECK(row(rows, "buffer_vs_dump")->verdict == "harmful");
  CHECK(row(rows, "dump_time_vs_grace")->verdict == "benign");
  // A buffer that records: benign; full ring noted.
  p.dump_entries = {40, 40};
  rows = torch_interactions(knobs("fr_buffer_size = 40\n"), timeouts(5), p);
  CHECK(row(rows, "buffer_vs_dump")->verdict == "benign");
  CHECK(row(rows, "buffer_vs_dump")->measured.find("the ring is full") != std::string::npos);
  // A dump longer than hanglab's grace, or a SIGTERMed rank that did not finish its dump.
  p.dump_ms = {150, hanglab_term_grace_s() * 1000 + 500};
  CHECK(row(torch_interactions(knobs("fr_buffer_size = 40\n"), timeouts(5), p), "dump_time_vs_grace")->verdict ==
        "harmful");
  p.dump_ms = {150};
  p.sigterm_ranks = 2;
  p.sigterm_dumps = 1;
  CHECK(row(torch_interactions(knobs("fr_buffer_size = 40\n"), timeouts(5), p), "dump_time_vs_grace")->verdict ==
        "harmful");
}

TEST_CASE("distributed_debug: cost measured against the control, alarms only with the knob are harmful", "[torch_checks]") {
  KnobProbe p;
  p.ran = p.debug_ran = p.control_ran = true;
  p.debug_outcome = p.control_outcome = "completed";
  p.step_ms_on = {130, 131, 135};
  p.step_ms_off = {100, 101, 102};
  auto rows = torch_interactions(knobs("distributed_debug = \"DETAIL\"\n"), timeouts(5), p);
  const KnobInteraction* r = row(rows, "debug_cost");
  REQUIRE(r);
  CHECK(r->verdict == "benign");
  CHECK(r->measured.find("+30%") != std::string::npos);
  // The LibTorch pair prices the check itself (steps that are only collectives).
  p.cpp_step_ms_on = {8.0, 9.0, 10.0};
  p.cpp_step_ms_off = {0.5, 0.5, 0.6};
  rows = torch_interactions(knobs("distributed_debug = \"DETAIL\"\n"), timeouts(5), p);
  CHECK(row(rows, "debug_cost")->verdict == "benign");
  CHECK(row(rows, "debug_cost")->measured.find("p50 9.00 ms vs 0.50 ms without (18.0x), slowest 10 ms") != std::string::npos);
  p.cpp_alarms_on = 1;  // an alarm with the knob only
  CHECK(row(torch_interactions(knobs("distributed_debug = \"DETAIL\"\n"), timeouts(5), p), "debug_cost")->verdict ==
        "harmful");
  p.cpp_alarms_on = 0;
  p.alarms_on = 1;
  CHECK(row(torch_interactions(knobs("distributed_debug = \"DETAIL\"\n"), timeouts(5), p), "debug_cost")->verdict ==
        "harmful");
  // What torch 2.15 does on Gloo: DETAIL crashes DDP's constructor, the control completes.
  p.alarms_on = 2;
  p.debug_outcome = "crash";
  p.step_ms_on.clear();
  p.debug_deaths = "2 ranks SIGSEGV: Fatal Python error: Segmentation fault in _ddp_init_helper";
  rows = torch_interactions(knobs("distributed_debug = \"DETAIL\"\n"), timeouts(5), p);
  CHECK(row(rows, "debug_cost")->verdict == "harmful");
  CHECK(row(rows, "debug_cost")->measured.find("crash with the knobs (0 steps), completed without (3 steps, p50 101 ms)") !=
        std::string::npos);
  CHECK(row(rows, "debug_cost")->measured.find("SIGSEGV") != std::string::npos);
  // OFF: nothing to check.
  CHECK(row(torch_interactions(knobs("distributed_debug = \"OFF\"\n"), timeouts(5), p), "debug_cost") == nullptr);
}

TEST_CASE("async error handling 0 or 2 leaves a timed-out NCCL rank running", "[torch_checks]") {
  const KnobProbe none;
  for (int mode : {0, 2})
    CHECK(row(torch_interactions(knobs(fmt::format("nccl_async_error_handling = {}\n", mode)), timeouts(5), none),
              "async_error_handling")
              ->verdict == "harmful");
  for (int mode : {1, 3})
    CHECK(row(torch_interactions(knobs(fmt::format("nccl_async_error_handling = {}\n", mode)), timeouts(5), none),
              "async_error_handling")
              ->verdict == "needs_nccl");
}

TEST_CASE("settings files take [torch], and a bad knob is one error naming file:line:col and key", "[torch_checks]") {
  const std::string base = "[timeouts]\ninit_s = 30\ncollective_s = 5\nprogress_s = 10\nheartbeat_s = 1\n";
  const ValidateSettings s = parse_validate_settings(base + "[torch]\nnccl_heartbeat_timeout_s = 10\n", "p.toml");
  CHECK(s.torch.env().at("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC") == "10");
  try {
    parse_validate_settings(base + "[torch]\nfr_buffer_size = 1.5\n", "p.toml");
    FAIL("accepted a float buffer size");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "p.toml:7:18: torch.fr_buffer_size: expected an integer");
  }
}

TEST_CASE("scenario_with_torch replaces the [torch] table and keeps the rest", "[torch_checks]") {
  const std::string text = "[workload]\nname = \"x\"\n[torch]\nfr_buffer_size = 5\n[expect]\noutcome = \"completed\"\n";
  const std::string out = scenario_with_torch(text, knobs("distributed_debug = \"INFO\"\n"));
  CHECK(out.find("fr_buffer_size = 5") == std::string::npos);
  CHECK(out.find("[expect]\noutcome = \"completed\"") != std::string::npos);
  toml::table root = toml::parse(out);
  CHECK(root["torch"]["distributed_debug"].value<std::string>() == "INFO");
}

TEST_CASE("read_knob_probe: crash frames, step times, timeouts and torch's own dumps from a run directory",
          "[torch_checks]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hanglab_knob_probe_test." + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (int r = 0; r < 2; ++r) fs::create_directories(dir / "ranks" / std::to_string(r));
  auto put = [&](const fs::path& p, const std::string& text) { std::ofstream(dir / p) << text; };
  // A debug run: both ranks died of SIGSEGV in DDP's constructor (faulthandler lists the other
  // threads first; the frame that counts is the current thread's).
  put("run.json", R"({"outcome": "crash", "start_t": 100.0, "settings": {"world_size": 2}, "faults": [],
      "exits": [{"rank": 0, "signal": "SIGSEGV"}, {"rank": 1, "signal": "SIGSEGV"}],
      "detections": [{"detector": "exit_monitor", "rank": 0, "t": 104.0, "after_fault_s": 4.0}]})");
  put("ranks/0/stderr.log",
      "2026-12-02T09:25:17.702417Z Fatal Python error: Segmentation fault\n"
      "2026-12-02T09:25:17.702417Z Thread 0x00007f3c848196c0 (most recent call first):\n"
      "2026-12-02T09:25:17.702417Z   File \"/usr/lib/python3.11/signal.py\", line 82 in sigwait\n"
      "2026-12-02T09:25:17.702587Z Current thread 0x00007f3c84bd42c0 (most recent call first):\n"
      "2026-12-02T09:25:17.702587Z   File \"/x/site-packages/torch/nn/parallel/distributed.py\", line 1487 in "
      "_ddp_init_helper\n");
  KnobProbe p;
  read_knob_probe(dir, "debug", p);
  CHECK(p.debug_ran);
  CHECK(p.debug_outcome == "crash");
  CHECK(p.alarms_on == 1);
  CHECK(p.debug_deaths ==
        "2 ranks SIGSEGV: Fatal Python error: Segmentation fault in _ddp_init_helper "
        "(torch/nn/parallel/distributed.py:1487)");
  // A timeout run: rank 1 frozen, rank 0 timed out and dumped through the script; torch wrote
  // nothing of its own for rank 0, and rank 1's file is there.
  put("run.json", R"({"outcome": "hang", "start_t": 100.0, "settings": {"world_size": 2},
      "faults": [{"kind": "freeze_rank", "ranks": [1]}], "exits": [{"rank": 0, "code": 1, "signal": null}],
      "detections": [{"detector": "backend_timeout", "rank": 0, "t": 110.0}]})");
  put("ranks/0/stdout.log", "[rank 0] step 3/200 loss 0.5 dur_ms 101\n");
  put("ranks/0/stderr.log",
      "[rank 0] flight recorder: 1234 bytes written to /r/ranks/0/flight_recorder.pkl in 35 ms (the loop ended early)\n");
  put("ranks/1/torch_fr_1", "x");
  KnobProbe t;
  read_knob_probe(dir, "timeout", t);
  CHECK(t.timeout_ranks == 1);
  CHECK(t.torch_dumps == 1);
  CHECK(t.dump_ms == std::vector<double>{35});
  CHECK(t.step_ms_on.empty());  // a Flight Recorder probe prices nothing
  fs::remove_all(dir);
}

TEST_CASE("recommended knobs: each harmful interaction with a clear fix is fixed, the rest kept", "[torch_checks]") {
  KnobProbe p;
  p.ran = true;
  p.timeout_ranks = 2;
  p.dump_entries = {0};
  const TorchKnobs k = knobs(
      "nccl_heartbeat_timeout_s = 10\nfr_dump_on_timeout = true\nfr_buffer_size = 0\nnccl_async_error_handling = 0\n"
      "nccl_enable_monitoring = true\n");
  const auto rows = torch_interactions(k, timeouts(5), p);
  std::vector<std::string> notes;
  const TorchKnobs fixed = recommend_torch_knobs(k, rows, timeouts(9.5), 3, notes);
  CHECK(notes.size() == 4);
  CHECK(fixed.int_value("nccl_heartbeat_timeout_s") == 74);  // ceil(3 x (9.5 + 15))
  CHECK(fixed.int_value("fr_buffer_size") == 2000);
  CHECK_FALSE(fixed.has("fr_dump_on_timeout"));
  CHECK(fixed.int_value("nccl_async_error_handling") == 3);
  CHECK(fixed.bool_value("nccl_enable_monitoring") == true);  // nothing wrong with it: kept
  // The fix passes the same static checks (the measured ones need new runs).
  for (const auto& r : torch_interactions(fixed, timeouts(9.5), KnobProbe{})) CHECK_FALSE(r.finding());
}
