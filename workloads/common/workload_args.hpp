// The [workload.args] each built-in workload accepts, shared by the workload (which
// parses them from `--name=value` argv) and the harness (which validates a scenario's
// [workload.args] against the same table before anything is spawned).
#pragma once

#include <string>
#include <vector>

namespace hanglab {

struct ArgSpec {
  const char* name;
  const char* type;           // int | float | bool | string
  const char* default_value;  // as it would be written on the command line
  const char* doc;            // one line, with the unit
};

inline const std::vector<ArgSpec>& torch_ddp_args() {
  static const std::vector<ArgSpec> kArgs = {
      {"input_dim", "int", "16", "features per sample"},
      {"hidden", "int", "64", "hidden units per MLP layer"},
      {"layers", "int", "2", "hidden layers of the MLP"},
      {"batch_size", "int", "8", "samples per batch per rank"},
      {"dataset_size", "int", "1024", "samples in the synthetic dataset"},
      {"shards", "int", "8", "shard files the dataset is split into"},
      {"seed", "int", "1", "seed of the dataset, the model init and the sampler shuffle"},
      {"drop_last", "bool", "false", "DistributedSampler drop_last (else pad by repeating indices)"},
      {"bucket_kb", "int", "16", "gradient bucket size in KiB; one allreduce per bucket"},
      {"lr", "float", "0.05", "SGD learning rate"},
      {"step_ms", "int", "100", "compute per step in ms (slept or burned, see `compute`), so steps take real time"},
      {"compute", "string", "sleep",
       "how step_ms is spent: sleep (wall time) | burn (CPU time of the training thread, so a CPU limit slows the "
       "step)"},
      {"step_jitter_ms", "int", "0", "uniform random extra compute per step, 0..N ms"},
      {"first_collective_delay_ms", "int", "0", "extra delay before the first allreduce (slow warm-up)"},
      {"checkpoint_every", "int", "0", "save a checkpoint every N steps (0 = never)"},
      {"checkpoint_ranks", "string", "rank0", "who saves: rank0 | all"},
      {"checkpoint_delay_ms", "int", "0", "extra time spent in each save (slow storage stand-in)"},
      {"num_workers", "int", "0",
       "data-loader worker processes; each batch comes back through a /dev/shm segment (0 = the rank reads its "
       "batches itself)"},
      {"prefetch", "int", "2", "batches in flight per data-loader worker (prefetch_factor), 1..64"},
      {"shm_alloc", "string", "mmap",
       "how a worker sizes its /dev/shm segment: mmap (ftruncate, write through the mapping: a full /dev/shm kills "
       "the worker with SIGBUS) | fallocate (posix_fallocate first: a full /dev/shm is ENOSPC)"},
      {"eval_every", "int", "0", "run eval every N steps (0 = never)"},
      {"eval_batches", "int", "4", "batches per eval pass"},
      {"after_loop", "string", "exit", "after the last batch: exit | barrier (final barrier then exit) | linger (sleep until killed)"},
  };
  return kArgs;
}

}  // namespace hanglab
