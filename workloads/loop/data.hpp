// The training loop's data path, kept free of LibTorch so it compiles fast and can be reused:
//   - ShardedDataset: a deterministic synthetic regression set (a fixed random linear
//     teacher plus noise, all from `seed`) stored as binary shard files, plus a held-out
//     file for eval. Every rank makes sure the files exist (race-free between ranks), and
//     every training step READS its samples from the files again, so storage faults
//     (missing, truncated, slow, unreadable shards) hit the step that touches them.
//   - DistributedSampler: torch.utils.data.DistributedSampler semantics (per-epoch
//     shuffle identical on all ranks, padding or drop_last, rank-strided subset) and the
//     batching of a DataLoader with the same drop_last.
// Data-path failures throw DataError (the workload exits 13).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hanglab {

// mkdir -p; throws DataError naming the directory that could not be made.
void make_dirs(const std::string& dir);

struct DatasetSpec {
  std::string root;       // HANGLAB_DATA_DIR; the set lives in a subdirectory named by its parameters
  int input_dim = 16;
  int64_t size = 1024;    // training samples
  int shards = 8;
  uint64_t seed = 1;
};

// A batch as flat row-major arrays: x is n * input_dim, y is n.
struct Batch {
  std::vector<float> x;
  std::vector<float> y;
  int64_t rows() const { return static_cast<int64_t>(y.size()); }
};

class ShardedDataset {
 public:
  static constexpr int64_t kHeldOutSize = 256;

  explicit ShardedDataset(DatasetSpec spec);

  // Creates any missing or wrong-sized file. Each file is generated into a
  // process-unique temp name and rename(2)d into place, so ranks generating the same
  // shard at once all end up with one complete, identical file. Throws DataError.
  void ensure_files() const;

  // Reads the training samples with these global indices (open + pread + close per shard
  // per call). Throws DataError naming the file and what was wrong.
  Batch read_train(const std::vector<int64_t>& indices) const;
  // Reads held-out samples; indices are taken modulo kHeldOutSize.
  Batch read_held_out(const std::vector<int64_t>& indices) const;

  const std::string& dir() const { return dir_; }
  std::string shard_path(int shard) const;
  std::string held_out_path() const;
  int64_t samples_per_shard() const { return per_shard_; }
  int input_dim() const { return spec_.input_dim; }

 private:
  struct FileLayout {
    std::string path;
    int64_t first_index;  // global index of the file's first sample
    int64_t count;
  };

  FileLayout shard_layout(int shard) const;
  FileLayout held_out_layout() const;
  void ensure_file(const FileLayout& layout) const;
  // Appends the samples `global_indices` (all within `layout`) to `batch`.
  void read_from(const FileLayout& layout, const std::vector<int64_t>& global_indices, Batch& batch) const;
  int64_t file_bytes(int64_t count) const;

  DatasetSpec spec_;
  std::string dir_;
  int64_t per_shard_;
};

class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int world_size, int rank, uint64_t seed, bool drop_last);

  // Samples this rank sees per epoch (identical on all ranks with the same drop_last).
  int64_t num_samples() const { return num_samples_; }
  // This rank's indices for `epoch`: a permutation seeded by (seed + epoch), padded by
  // repeating its head or truncated (drop_last) to a multiple of world_size, then
  // indices[rank::world_size].
  std::vector<int64_t> indices(int epoch) const;
  // Batches of `batch_size` over indices(epoch); the last partial batch is dropped when
  // drop_last.
  std::vector<std::vector<int64_t>> batches(int epoch, int batch_size) const;
  int64_t batches_per_epoch(int batch_size) const;
  bool drop_last() const { return drop_last_; }

 private:
  int64_t dataset_size_;
  int world_size_;
  int rank_;
  uint64_t seed_;
  bool drop_last_;
  int64_t num_samples_;
};

}  // namespace hanglab
