// Tests for the [torch] table: every knob parses to the variable torch reads, each class of bad
// value is one ConfigError at the value's line:col naming the key, and a scenario rejects a knob
// set twice ([workload.env], [detect] fr_buffer_size) or contradicting [detect].
#include <unistd.h>

#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "scenario/scenario.hpp"
#include "scenario/torch_knobs.hpp"

using namespace hanglab;

namespace {

TorchKnobs parse(const std::string& text, std::vector<ConfigError>& errors) {
  toml::table root = toml::parse(text, std::string_view("s.toml"));
  return parse_torch_table(*root["torch"].as_table(), "s.toml", "torch", errors);
}

std::string only_error(const std::string& text) {
  std::vector<ConfigError> errors;
  parse(text, errors);
  REQUIRE(errors.size() == 1);
  return errors.front().what();
}

const std::filesystem::path kDir =
    std::filesystem::temp_directory_path() / ("hanglab_torch_knobs_test." + std::to_string(::getpid()));
struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    std::filesystem::remove_all(kDir, ec);
  }
} cleanup;

Scenario load(const std::string& text) {
  std::filesystem::create_directories(kDir);
  const auto path = kDir / "k.toml";
  std::ofstream(path, std::ios::trunc) << text;
  LoadOptions o;
  o.known_workloads = {"torch_ddp"};
  return load_scenario(path, o);
}

const std::string kWorkload = "[workload]\nname = \"torch_ddp\"\n";
const std::string kByo = "[workload]\ncommand = [\"python3\", \"train.py\"]\n";

}  // namespace

TEST_CASE("every [torch] knob maps to the variable torch reads, typed", "[torch_knobs]") {
  std::vector<ConfigError> errors;
  const TorchKnobs k = parse(
      "[torch]\n"
      "nccl_async_error_handling = 3\n"
      "nccl_heartbeat_timeout_s = 600\n"
      "nccl_enable_monitoring = false\n"
      "fr_buffer_size = 0\n"
      "fr_dump_on_timeout = true\n"
      "nccl_wait_timeout_dump_ms = 60000\n"
      "distributed_debug = \"DETAIL\"\n",
      errors);
  REQUIRE(errors.empty());
  const auto env = k.env();
  CHECK(env.size() == kTorchKnobs.size());
  CHECK(env.at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "3");
  CHECK(env.at("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC") == "600");
  CHECK(env.at("TORCH_NCCL_ENABLE_MONITORING") == "0");
  CHECK(env.at("TORCH_FR_BUFFER_SIZE") == "0");
  CHECK(env.at("TORCH_FR_DUMP_ON_TIMEOUT") == "1");
  CHECK(env.at("TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC") == "60000");
  CHECK(env.at("TORCH_DISTRIBUTED_DEBUG") == "DETAIL");
  CHECK(k.int_value("nccl_heartbeat_timeout_s") == 600);
  CHECK(k.bool_value("nccl_enable_monitoring") == false);
  CHECK(k.set.at("distributed_debug").line == 8);
  // Round trip through the TOML validate writes into run directories.
  std::vector<ConfigError> again;
  const TorchKnobs k2 = parse(torch_knobs_toml(k), again);
  CHECK(again.empty());
  CHECK(k2.env() == env);
}

TEST_CASE("bad [torch] values: one error at the value, naming the key", "[torch_knobs]") {
  CHECK(only_error("[torch]\nnccl_heartbeat_timeout_s = \"600\"\n") ==
        "s.toml:2:28: torch.nccl_heartbeat_timeout_s: expected an integer");
  CHECK(only_error("[torch]\nnccl_async_error_handling = 4\n") ==
        "s.toml:2:29: torch.nccl_async_error_handling: must be between 0 and 3 (got 4)");
  CHECK(only_error("[torch]\nfr_buffer_size = -1\n") == "s.toml:2:18: torch.fr_buffer_size: must be between 0 and 10000000 (got -1)");
  CHECK(only_error("[torch]\nfr_dump_on_timeout = 1\n") == "s.toml:2:22: torch.fr_dump_on_timeout: expected true or false");
  CHECK(only_error("[torch]\ndistributed_debug = \"detail\"\n") ==
        "s.toml:2:21: torch.distributed_debug: must be one of OFF,INFO,DETAIL (got \"detail\")");
  const std::string unknown = only_error("[torch]\nTORCH_DISTRIBUTED_DEBUG = \"DETAIL\"\n");
  CHECK(unknown.rfind("s.toml:2:1: torch.TORCH_DISTRIBUTED_DEBUG: unknown key (the variable TORCH_DISTRIBUTED_DEBUG is "
                      "the key distributed_debug)",
                      0) == 0);
}

TEST_CASE("a scenario's [torch] is loaded, and a knob set twice or contradicting [detect] is an error", "[torch_knobs]") {
  const Scenario sc = load(kWorkload + "[torch]\ndistributed_debug = \"INFO\"\nfr_buffer_size = 100\n");
  CHECK(sc.torch.env().at("TORCH_DISTRIBUTED_DEBUG") == "INFO");
  CHECK(sc.torch.env().at("TORCH_FR_BUFFER_SIZE") == "100");

  auto error_of = [](const std::string& text) -> std::string {
    try {
      load(text);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "loaded";
  };
  CHECK(error_of(kWorkload + "[torch]\ndistributed_debug = \"LOUD\"\n").find("k.toml:4:21: torch.distributed_debug:") != std::string::npos);
  CHECK(error_of(kByo + "[workload.env]\nTORCH_NCCL_HEARTBEAT_TIMEOUT_SEC = \"5\"\n") ==
        (kDir / "k.toml").string() +
            ":4:1: workload.env.TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC: set it as [torch] nccl_heartbeat_timeout_s (a typed "
            "torch knob)");
  // The older spelling torch also reads is the same knob.
  CHECK(error_of(kByo + "[workload.env]\nTORCH_NCCL_TRACE_BUFFER_SIZE = \"5\"\n").find("set it as [torch] fr_buffer_size") !=
        std::string::npos);
  CHECK(error_of(kByo + "[detect]\nflight_recorder = true\nfr_buffer_size = 10\n[torch]\nfr_buffer_size = 20\n")
            .find(":7:18: torch.fr_buffer_size: set twice") != std::string::npos);
  CHECK(error_of(kByo + "[detect]\nflight_recorder = true\n[torch]\nfr_buffer_size = 0\n")
            .find(":6:18: torch.fr_buffer_size: 0 records nothing") != std::string::npos);
  CHECK(error_of(kWorkload + "[torhc]\n").find("unknown table (expected one of: [scenario], [workload], [topology], "
                                               "[timeouts], [detect], [torch]") != std::string::npos);
}
