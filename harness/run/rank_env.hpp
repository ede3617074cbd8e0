// The environment every rank starts with, under every launcher: torchrun's contract (what
// `torchrun` gives each worker: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
// GROUP_WORLD_SIZE, ROLE_RANK, ROLE_NAME, ROLE_WORLD_SIZE, MASTER_ADDR/PORT, TORCHELASTIC_*)
// so that a torchrun-style script runs unchanged under the local and mpirun launchers too,
// plus hanglab's own HANGLAB_* variables (run, data and checkpoint directories, timeouts).
//
// hanglab runs every rank on one node: local rank = global rank, group (node) 0 of 1, and
// one role ("default", torchrun's default) spanning the world. Not set outside torchrun:
// TORCHELASTIC_USE_AGENT_STORE (there is no agent store: init_process_group must create its
// own TCPStore on rank 0) and TORCHELASTIC_SIGNALS_TO_HANDLE (an agent setting).
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "scenario/scenario.hpp"

namespace hanglab {

struct RankEnvInput {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string run_id;                 // TORCHELASTIC_RUN_ID (torchrun's --rdzv-id)
  std::filesystem::path run_dir;      // absolute
  int max_restarts = 0;               // TORCHELASTIC_MAX_RESTARTS
};

// torchrun's per-worker variables, as torchrun 2.x sets them for a single-node job.
std::map<std::string, std::string> torchrun_contract_env(const RankEnvInput& in);

// The whole environment hanglab adds for one rank: the contract, HANGLAB_RUN_DIR,
// HANGLAB_DATA_DIR, HANGLAB_CKPT_DIR, the timeouts, PYTHONUNBUFFERED, OMP_NUM_THREADS=1
// (as torchrun sets it); with [detect] flight_recorder, TORCH_FR_BUFFER_SIZE and
// HANGLAB_FR_DUMP; with [torch], each knob's variable and TORCH_FR_DUMP_TEMP_FILE (torch's own
// dumps land in the run directory); then the scenario's [workload.env] over it.
std::map<std::string, std::string> rank_env(const RankEnvInput& in, const Scenario& sc);

// A variable torchrun sets for each worker itself: under launcher torchrun its value wins
// over the contract hanglab computed (its MASTER_PORT is its agent store, its error file is
// in its log directory), unless a fault or [workload.env] changed it on purpose.
bool is_torchrun_contract_key(const std::string& name);

// Where a rank dumps torch's Flight Recorder ([detect] flight_recorder = true): HANGLAB_FR_DUMP.
std::filesystem::path rank_fr_dump(const std::filesystem::path& run_dir, int rank);

// TORCH_FR_DUMP_TEMP_FILE of a rank when [torch] is set: torch writes <prefix><rank> there.
std::filesystem::path rank_torch_fr_prefix(const std::filesystem::path& run_dir, int rank);

// Where a rank's TORCHELASTIC_ERROR_FILE goes under the local and mpirun launchers.
std::filesystem::path rank_error_file(const std::filesystem::path& run_dir, int rank);

}  // namespace hanglab
