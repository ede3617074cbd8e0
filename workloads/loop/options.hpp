// The training loop's command line: the `--name=value` table of workload_args.hpp
// (`--steps`, `--backend` and every `[workload.args]` key) parsed and checked into
// Options, and `--describe` (the workload contract as one JSON line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainer.hpp"

namespace hanglab {

struct Options {
  int steps = 10;
  std::string backend;
  int input_dim = 16;
  int hidden = 64;
  int layers = 2;
  int batch_size = 8;
  int64_t dataset_size = 1024;
  int shards = 8;
  int64_t seed = 1;
  bool drop_last = false;
  int bucket_kb = 16;
  double lr = 0.05;
  int step_ms = 100;
  std::string compute = "sleep";
  int step_jitter_ms = 0;
  int first_collective_delay_ms = 0;
  int checkpoint_every = 0;
  std::string checkpoint_ranks = "rank0";
  int checkpoint_delay_ms = 0;
  int num_workers = 0;
  int prefetch = 2;
  std::string shm_alloc = "mmap";
  int eval_every = 0;
  int eval_batches = 4;
  std::string after_loop = "exit";
};

// `text` as a whole decimal integer (std::stoll, nothing left over), else nullopt.
std::optional<int64_t> parse_whole_int(const std::string& text);

// Parses argv; exits 0 after --describe/--help, exits 2 on any usage error.
Options parse_command_line(int argc, char** argv, const BackendSpec& spec);

}  // namespace hanglab
