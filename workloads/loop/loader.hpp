// ShmLoader: the training loop's multi-process data loader, built the way PyTorch's DataLoader
// with num_workers > 0 works on Linux, so that its failure modes are the real ones:
//   - `num_workers` worker processes are fork(2)ed from the rank. A worker does plain
//     file I/O and POSIX shared memory only (no LibTorch, no collectives): it reads the
//     samples of a batch from the shard files, creates a segment under /dev/shm
//     (shm_open + ftruncate + mmap + write, or posix_fallocate first), and hands the
//     segment's name to the rank over a pipe. The rank maps it, copies the batch out
//     and unlinks it.
//   - Batches are assigned round-robin and at most `prefetch` are in flight per worker
//     (prefetch_factor), so each worker answers its requests in order and the rank reads
//     batch k from worker k % num_workers without reordering.
//   - Failures surface as DataError (the workload exits 13), never as a silent hang:
//       * a worker killed by a signal (SIGBUS when /dev/shm is full and the write through
//         the mapping finds no page) -> "DataLoader worker (pid N) is killed by signal:
//         Bus error. It is possible that dataloader's workers are out of shared memory.
//         Please try to raise your shared memory limit." (PyTorch's text);
//       * a worker that exits -> "DataLoader worker (pid N) exited unexpectedly ...";
//       * an error inside a worker (ENOSPC from ftruncate/posix_fallocate, a missing
//         shard) is sent back and re-raised as "Caught DataError in DataLoader worker
//         process W (pid N): ...", as PyTorch re-raises a worker's exception.
//   - Workers never outlive the rank: PR_SET_PDEATHSIG (SIGTERM), EOF on their request
//     pipe, and shutdown() all end them; each one unlinks the segments it may still own
//     on the way out, so a killed rank leaves nothing in /dev/shm.
// Plain C++ (no LibTorch): it builds and is unit-tested with the rest of the data path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "data.hpp"

namespace hanglab {

struct LoaderOptions {
  int num_workers = 1;             // >= 1
  int prefetch = 2;                // batches in flight per worker, 1..64
  std::string shm_alloc = "mmap";  // mmap | fallocate (see workload_args.hpp)
  // Segment names are "<prefix>-<batch seq>"; default "/hanglab-dl-<rank pid>".
  std::string shm_prefix;
  // Prefix of the lines workers write to stderr (PyTorch's worker messages).
  std::string log_prefix;
};

class ShmLoader {
 public:
  // Forks the workers. Throws DataError when a pipe or fork fails (after reaping any
  // worker already started). `dataset` must outlive the loader (workers use their
  // fork-time copy of it).
  ShmLoader(const ShardedDataset& dataset, LoaderOptions options);
  ShmLoader(const ShmLoader&) = delete;
  ShmLoader& operator=(const ShmLoader&) = delete;
  ~ShmLoader();

  // Queues one epoch's batches (global sample indices) and starts prefetching them.
  // Batches of an earlier epoch that were prefetched but never taken are dropped
  // (their segments unlinked), as when a training loop breaks out of an epoch.
  void start_epoch(const std::vector<std::vector<int64_t>>& batches);
  // True while the current epoch has batches left to take.
  bool has_next() const { return taken_ < epoch_end_; }
  // The next batch of the epoch, in order; blocks until a worker has delivered it.
  // Throws DataError (worker died, worker error, bad segment).
  Batch next();

  // Stops the workers (closes their request pipes, waits up to `grace_s`, then
  // SIGKILL) and unlinks every segment that may still exist. Idempotent, never throws;
  // the training program calls it on every exit path because it leaves with _exit.
  void shutdown(double grace_s = 2.0) noexcept;

  const std::vector<pid_t>& worker_pids() const { return pids_; }
  // The /dev/shm name of the segment carrying batch `seq` (for logs and tests).
  std::string segment_name(int64_t seq) const;

 private:
  struct Worker {
    pid_t pid = 0;
    int req_fd = -1;  // rank -> worker: batch requests
    int res_fd = -1;  // worker -> rank: segment names or errors
    bool reaped = false;
    bool have_status = false;  // reaped here, with its wait status
    int status = 0;
  };

  void send_request(int64_t seq);
  void fill_window();
  // Reads the reply to `seq` from its worker; throws DataError when the worker is gone.
  Batch receive(int64_t seq);
  Batch map_segment(int64_t seq, const std::string& name, uint64_t bytes);
  // Throws the DataError for a worker that died (reaps it first, bounded).
  [[noreturn]] void worker_died(size_t w, int64_t seq);
  // A worker other than the awaited one that died meanwhile, checked with WNOHANG.
  void check_workers_alive();
  void unlink_outstanding() noexcept;

  ShardedDataset dataset_;
  LoaderOptions options_;
  std::vector<Worker> workers_;
  std::vector<pid_t> pids_;
  // Every batch ever requested has a global sequence number: seq k goes to worker
  // k % num_workers. [next_reply_, next_request_) are in flight.
  std::deque<std::vector<int64_t>> pending_;  // batches of the epoch not yet requested
  int64_t next_request_ = 0;
  int64_t next_reply_ = 0;
  int64_t taken_ = 0;      // seq of the next batch next() returns
  int64_t epoch_end_ = 0;  // one past the last seq of the current epoch
  bool shut_down_ = false;
};

// The PyTorch-style text for a worker that was killed by `signo` (exposed for tests).
std::string worker_killed_message(pid_t pid, int signo);

}  // namespace hanglab
