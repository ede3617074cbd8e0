// The one data-parallel training loop of every built-in workload (torch_ddp on c10d Gloo
// or NCCL, mpi_ddp, nccl_ddp): the model in plain C++ (mlp.hpp), the data path of
// data.hpp/loader.hpp, the hooks, `[workload.args]`, log lines, trace events and exit
// codes of workloads/common, and the communication behind a small Collectives interface
// that each backend (workloads/backends/<name>) implements:
//   init (backend rendezvous) -> broadcast of the initial parameters -> per step: batch
//   from the shard files (in the rank or from ShmLoader workers), forward, backward +
//   one allreduce per gradient bucket, SGD -> periodic eval (allreduce of the loss sums)
//   and checkpoint (rank 0 saves, then barrier) -> after_loop (exit | barrier | linger)
//   -> the backend's clean shutdown (MPI_Finalize, ncclCommDestroy).
// A backend provides a BackendSpec and calls workload_main() from its main().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "exit_codes.hpp"
#include "flight_recorder.hpp"

namespace hanglab {

// An error a backend raises from a collective or from rendezvous, with the class it
// already knows (a backend's own watchdog knows a timeout from a peer loss better than
// the text does).
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(ErrorClass cls, const std::string& what) : std::runtime_error(what), cls_(cls) {}
  ErrorClass error_class() const { return cls_; }

 private:
  ErrorClass cls_;
};

// One backend's collectives on the world communicator. Called from the training thread
// only, in the same order on every healthy rank. Each call returns when the collective
// has completed locally (the result is in `data`), or throws CollectiveError; a call may
// also never return — with MPI that is the point.
class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual void allreduce_sum(float* data, int64_t n) = 0;
  virtual void allreduce_sum(double* data, int64_t n) = 0;
  virtual void broadcast(float* data, int64_t n, int root) = 0;
  virtual void barrier() = 0;
  // For the "process group ready" log line, e.g. "mpi, world_size 4, no collective timeout".
  virtual std::string describe() const = 0;
  // Clean shutdown on the success path only (MPI_Finalize: collective, it waits for all
  // ranks; ncclCommDestroy). Failure paths leave with _exit without it.
  virtual void finalize() {}
  // The collective the next call will be, as numbered by the trainer's trace (seq starts
  // at 1); backends that report errors per collective use it. Set by the trainer.
  int64_t current_seq = 0;
  int current_step = 0;
};

// Rank identity and the HANGLAB_* settings, from the environment.
struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr;
  int master_port = 0;
  std::string run_dir;
  std::string data_dir;
  std::string ckpt_dir;
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::milliseconds init_timeout{30000};
  std::chrono::milliseconds collective_timeout{5000};
};

struct BackendSpec {
  std::string workload;  // "mpi_ddp"
  std::string backend;   // "mpi"; the only value --backend accepts
  std::string summary;   // one line for --help and --describe
  // What the binary was compiled against, e.g. "LibTorch 2.15.0 (C++20, cxx11 ABI)";
  // empty for the backends without LibTorch. In --describe and the trace's start event.
  std::string built_with;
  // Documented environment (for --describe), beyond the common torchrun/HANGLAB_* set.
  std::vector<std::string> extra_env;
  // Free text for --describe: launchers, what the backend does on a hang.
  std::string notes;
  bool needs_master = false;  // MASTER_ADDR / MASTER_PORT required
  // When RANK and WORLD_SIZE are both unset: the launcher's identity (e.g. Open MPI's
  // OMPI_COMM_WORLD_RANK/SIZE, read before MPI_Init so the trace is open during it).
  // Empty = RANK and WORLD_SIZE are required. May throw UsageError.
  std::function<void(RankEnv&)> launcher_identity;
  // Builds the communicator, inside phase `init`. Throws CollectiveError or any
  // exception (classified rendezvous, exit 12).
  std::function<std::unique_ptr<Collectives>(const RankEnv&)> connect;
  // torch's Flight Recorder dump of this backend (flight_recorder.hpp); unset: the backend
  // has none (mpi_ddp, nccl_ddp), and HANGLAB_FR_DUMP is ignored.
  FrDumper fr_dumper;
};

// RANK/WORLD_SIZE (or the launcher's identity), MASTER_*, HANGLAB_* (exposed for tests).
// HANGLAB_TRACE may contain `%r`, replaced by the rank, so that one environment serves
// every rank of an mpirun job. Throws UsageError.
RankEnv read_rank_env(const BackendSpec& spec);
std::string trace_path_for_rank(const std::string& pattern, int rank);

// Parses argv, reads the environment, opens the trace, starts the heartbeat, runs the
// training program and leaves with _exit: 0 ok, 2 usage, 10 comm, 11 timeout,
// 12 rendezvous, 13 data, 1 other (exit_codes.hpp). Never returns normally except for
// --help/--describe and usage errors found before the trace opens (the return value).
int workload_main(int argc, char** argv, const BackendSpec& spec);

}  // namespace hanglab
