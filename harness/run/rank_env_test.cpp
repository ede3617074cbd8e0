// The rank environment: torchrun's whole per-worker contract under every launcher, so a
// torchrun-style script runs unchanged; what torchrun itself sets is left to torchrun.
#include <catch2/catch.hpp>

#include "run/rank_env.hpp"

using namespace hanglab;

namespace {
RankEnvInput input(int rank, int ws) {
  RankEnvInput in;
  in.rank = rank;
  in.world_size = ws;
  in.master_port = 29512;
  in.run_id = "kill_rank-20261202T000000Z";
  in.run_dir = "/results/kill_rank/20261202T000000Z";
  return in;
}
}  // namespace

TEST_CASE("torchrun's contract for one node: local = global, one group, one role", "[rank_env]") {
  const auto env = torchrun_contract_env(input(2, 4));
  const std::map<std::string, std::string> want = {
      {"RANK", "2"},          {"WORLD_SIZE", "4"},       {"LOCAL_RANK", "2"},       {"LOCAL_WORLD_SIZE", "4"},
      {"GROUP_RANK", "0"},    {"GROUP_WORLD_SIZE", "1"}, {"ROLE_RANK", "2"},        {"ROLE_NAME", "default"},
      {"ROLE_WORLD_SIZE", "4"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29512"},
      {"TORCHELASTIC_RUN_ID", "kill_rank-20261202T000000Z"}, {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
      {"TORCHELASTIC_ERROR_FILE", "/results/kill_rank/20261202T000000Z/ranks/2/error.json"}};
  CHECK(env == want);
  // No agent store outside torchrun: env:// must create its own store on rank 0.
  CHECK(env.count("TORCHELASTIC_USE_AGENT_STORE") == 0);
  // Every name in it is one torchrun sets itself.
  for (const auto& [k, v] : env) CHECK(is_torchrun_contract_key(k));
}

TEST_CASE("every rank gets its own rank, role rank and error file -- the rest is shared", "[rank_env]") {
  Scenario sc;
  sc.workload.world_size = 3;
  for (int r = 0; r < 3; ++r) {
    auto env = rank_env(input(r, 3), sc);
    CHECK(env["RANK"] == std::to_string(r));
    CHECK(env["LOCAL_RANK"] == std::to_string(r));
    CHECK(env["ROLE_RANK"] == std::to_string(r));
    CHECK(env["TORCHELASTIC_ERROR_FILE"] == "/results/kill_rank/20261202T000000Z/ranks/" + std::to_string(r) + "/error.json");
    CHECK(env["HANGLAB_DATA_DIR"] == "/results/kill_rank/20261202T000000Z/data");
    CHECK(env["HANGLAB_CKPT_DIR"] == "/results/kill_rank/20261202T000000Z/ckpt");
    CHECK(env["OMP_NUM_THREADS"] == "1");
  }
}

TEST_CASE("timeouts in ms, and [workload.env] over everything", "[rank_env]") {
  Scenario sc;
  sc.timeouts.collective_s = 7.5;
  sc.timeouts.heartbeat_s = 0.25;
  sc.workload.env = {{"OMP_NUM_THREADS", "4"}, {"MASTER_ADDR", "10.0.0.9"}, {"MY_FLAG", "x"}};
  auto env = rank_env(input(0, 2), sc);
  CHECK(env["HANGLAB_COLLECTIVE_TIMEOUT_MS"] == "7500");
  CHECK(env["HANGLAB_HEARTBEAT_MS"] == "250");
  CHECK(env["OMP_NUM_THREADS"] == "4");
  CHECK(env["MASTER_ADDR"] == "10.0.0.9");
  CHECK(env["MY_FLAG"] == "x");
}

TEST_CASE("[workload.env] values expand {scenario_dir} like the command does", "[rank_env]") {
  Scenario sc;
  sc.file = "/srv/scenarios/thirdparty/x.toml";
  sc.workload.env = {{"PYTHONPATH", "{scenario_dir}/exit_shim"}, {"PLAIN", "a{b}c"}};
  auto env = rank_env(input(0, 2), sc);
  CHECK(env["PYTHONPATH"] == "/srv/scenarios/thirdparty/exit_shim");
  CHECK(env["PLAIN"] == "a{b}c");
}

TEST_CASE("contract keys are torchrun's names, and only those", "[rank_env]") {
  for (const char* k : {"RANK", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_NAME", "MASTER_PORT",
                        "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE"})
    CHECK(is_torchrun_contract_key(k));
  for (const char* k : {"HANGLAB_TRACE", "OMP_NUM_THREADS", "GLOO_SOCKET_IFNAME", "RANKS", "PATH", ""})
    CHECK_FALSE(is_torchrun_contract_key(k));
}

TEST_CASE("[detect] flight_recorder: each rank records (buffer size) and dumps into its own folder", "[rank_env]") {
  Scenario sc;
  CHECK(rank_env(input(1, 2), sc).count("HANGLAB_FR_DUMP") == 0);
  CHECK(rank_env(input(1, 2), sc).count("TORCH_FR_BUFFER_SIZE") == 0);
  sc.detect.flight_recorder = true;
  sc.detect.fr_buffer_size = 500;
  for (int r = 0; r < 2; ++r) {
    auto env = rank_env(input(r, 2), sc);
    CHECK(env["TORCH_FR_BUFFER_SIZE"] == "500");
    CHECK(env["HANGLAB_FR_DUMP"] ==
          "/results/kill_rank/20261202T000000Z/ranks/" + std::to_string(r) + "/flight_recorder.pkl");
  }
  sc.workload.env = {{"TORCH_FR_BUFFER_SIZE", "20"}};  // the user's own setting wins
  CHECK(rank_env(input(0, 2), sc)["TORCH_FR_BUFFER_SIZE"] == "20");
}

TEST_CASE("[torch]: every rank gets each knob's variable, over [detect], and torch's own dumps in its folder",
          "[rank_env]") {
  Scenario sc;
  CHECK(rank_env(input(0, 2), sc).count("TORCH_FR_DUMP_TEMP_FILE") == 0);  // no [torch]: nothing of torch's
  sc.detect.flight_recorder = true;
  sc.detect.fr_buffer_size = 500;
  sc.torch.set["fr_buffer_size"] = {"TORCH_FR_BUFFER_SIZE", "0"};
  sc.torch.set["distributed_debug"] = {"TORCH_DISTRIBUTED_DEBUG", "DETAIL"};
  sc.torch.set["nccl_heartbeat_timeout_s"] = {"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "10"};
  for (int r = 0; r < 2; ++r) {
    auto env = rank_env(input(r, 2), sc);
    CHECK(env["TORCH_FR_BUFFER_SIZE"] == "0");  // a validate pass sets both on purpose: the knob wins
    CHECK(env["TORCH_DISTRIBUTED_DEBUG"] == "DETAIL");
    CHECK(env["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] == "10");
    CHECK(env["TORCH_FR_DUMP_TEMP_FILE"] == "/results/kill_rank/20261202T000000Z/ranks/" + std::to_string(r) + "/torch_fr_");
  }
}
