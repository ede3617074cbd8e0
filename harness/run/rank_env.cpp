#include "run/rank_env.hpp"

#include <string_view>

#include "run/workloads.hpp"

namespace hanglab {

namespace fs = std::filesystem;

namespace {
std::string ms(double s) { return std::to_string(static_cast<long long>(s * 1000)); }
}  // namespace

fs::path rank_error_file(const fs::path& run_dir, int rank) {
  return run_dir / "ranks" / std::to_string(rank) / "error.json";
}

fs::path rank_torch_fr_prefix(const fs::path& run_dir, int rank) {
  return run_dir / "ranks" / std::to_string(rank) / "torch_fr_";
}

fs::path rank_fr_dump(const fs::path& run_dir, int rank) {
  return run_dir / "ranks" / std::to_string(rank) / "flight_recorder.pkl";
}

std::map<std::string, std::string> torchrun_contract_env(const RankEnvInput& in) {
  const std::string r = std::to_string(in.rank), ws = std::to_string(in.world_size);
  return {{"RANK", r},
          {"WORLD_SIZE", ws},
          {"LOCAL_RANK", r},
          {"LOCAL_WORLD_SIZE", ws},
          {"GROUP_RANK", "0"},
          {"GROUP_WORLD_SIZE", "1"},
          {"ROLE_RANK", r},
          {"ROLE_NAME", "default"},
          {"ROLE_WORLD_SIZE", ws},
          {"MASTER_ADDR", in.master_addr},
          {"MASTER_PORT", std::to_string(in.master_port)},
          {"TORCHELASTIC_RUN_ID", in.run_id},
          {"TORCHELASTIC_RESTART_COUNT", "0"},
          {"TORCHELASTIC_MAX_RESTARTS", std::to_string(in.max_restarts)},
          {"TORCHELASTIC_ERROR_FILE", rank_error_file(in.run_dir, in.rank).string()}};
}

std::map<std::string, std::string> rank_env(const RankEnvInput& in, const Scenario& sc) {
  auto env = torchrun_contract_env(in);
  env.insert({{"HANGLAB_RUN_DIR", in.run_dir.string()},
              {"HANGLAB_DATA_DIR", (in.run_dir / "data").string()},
              {"HANGLAB_CKPT_DIR", (in.run_dir / "ckpt").string()},
              {"HANGLAB_HEARTBEAT_MS", ms(sc.timeouts.heartbeat_s)},
              {"HANGLAB_INIT_TIMEOUT_MS", ms(sc.timeouts.init_s)},
              {"HANGLAB_COLLECTIVE_TIMEOUT_MS", ms(sc.timeouts.collective_s)},
              {"PYTHONUNBUFFERED", "1"},
              // As torchrun does for multi-process jobs: one intra-op thread per rank.
              {"OMP_NUM_THREADS", "1"}});
  if (sc.detect.flight_recorder) {
    // torch records collectives only with a buffer; the rank dumps to this path (train.py:
    // when a collective raises, on SIGTERM/SIGUSR1, at exit), written atomically.
    env["TORCH_FR_BUFFER_SIZE"] = std::to_string(sc.detect.fr_buffer_size);
    env["HANGLAB_FR_DUMP"] = rank_fr_dump(in.run_dir, in.rank).string();
  }
  if (sc.torch.any()) {
    // [torch]: the knobs as torch reads them (over [detect]'s buffer size: a validate pass sets
    // both on purpose). Where torch dumps by itself (TORCH_FR_DUMP_ON_TIMEOUT: NCCL's watchdog),
    // it writes <prefix><rank>: keep that in the run directory, not /tmp.
    for (const auto& [k, v] : sc.torch.env()) env[k] = v;
    env["TORCH_FR_DUMP_TEMP_FILE"] = rank_torch_fr_prefix(in.run_dir, in.rank).string();
  }
  for (const auto& [k, v] : sc.workload.env) env[k] = expand_placeholders(v, sc);
  return env;
}

bool is_torchrun_contract_key(const std::string& name) {
  static const std::string_view kKeys[] = {"RANK",          "WORLD_SIZE",       "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                           "GROUP_RANK",    "GROUP_WORLD_SIZE", "ROLE_RANK",  "ROLE_NAME",
                                           "ROLE_WORLD_SIZE", "MASTER_ADDR",    "MASTER_PORT"};
  for (auto k : kKeys)
    if (name == k) return true;
  return name.rfind("TORCHELASTIC_", 0) == 0;
}

}  // namespace hanglab
