// torch_ddp_nccl (torch_ddp, backend nccl): the one training loop (workloads/loop) on
// LibTorch c10d's ProcessGroupNCCL, as `init_process_group("nccl", device_id=...)`
// builds it: TCPStore rendezvous (backends/c10d), one GPU per rank (cuda:LOCAL_RANK),
// the collective timeout as the process group's timeout, communicators created eagerly
// in phase init. Everything that watches a hang is torch's own and tuned by its usual
// knobs: the watchdog (TORCH_NCCL_ASYNC_ERROR_HANDLING, TORCH_NCCL_BLOCKING_WAIT), the
// heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING, TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) and
// the Flight Recorder (TORCH_FR_BUFFER_SIZE, TORCH_FR_DUMP_TEMP_FILE,
// TORCH_NCCL_DUMP_ON_TIMEOUT). With the default async error handling the watchdog tears
// the process down on a timeout ("Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=...)"), so such a rank exits by SIGABRT, not through the loop's exit
// codes. Runs only where a GPU is; built wherever the venv's torch has CUDA.
// [detect] flight_recorder (HANGLAB_FR_DUMP): the loop writes c10d::dump_nccl_trace (what
// Python's _dump_nccl_trace returns) on SIGUSR1/SIGTERM, on a fatal error and at the end
// (loop/flight_recorder.hpp), and torch's own dump on timeout goes to the same file through a
// DebugInfoWriter registered here, before the process group exists.
#include <c10/cuda/CUDAFunctions.h>
#if __has_include(<torch/csrc/distributed/c10d/FlightRecorder.hpp>)
#include <torch/csrc/distributed/c10d/FlightRecorder.hpp>  // DebugInfoWriter, where it has a header of its own
#endif
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <memory>
#include <string>

#include "process_group.hpp"
#include "trainer.hpp"

namespace hanglab {
namespace {

// torch's writer interface for its own dumps (DebugInfoWriter::registerWriter): the dump
// ProcessGroupNCCL makes on a timeout lands in this rank's dump file, atomically.
class RankDumpWriter : public c10d::DebugInfoWriter {
 public:
  explicit RankDumpWriter(int rank) : c10d::DebugInfoWriter(fr_dump_path(), rank) { filename_ = fr_dump_path(); }
  void write(const std::string& trace) override { fr_dump_write(trace, "ProcessGroupNCCL's dump"); }
};

std::unique_ptr<Collectives> connect(const RankEnv& env) {
  return c10d_connecting([&]() -> std::unique_ptr<Collectives> {
    c10d_limit_threads();
    const int gpus = c10::cuda::device_count();
    if (env.local_rank >= gpus) {
      throw CollectiveError(ErrorClass::kOther, "ProcessGroupNCCL needs one GPU per rank: LOCAL_RANK " +
                                                    std::to_string(env.local_rank) + " but this host has " +
                                                    std::to_string(gpus) + " CUDA device(s)");
    }
    const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
    c10::cuda::set_device(device.index());
    if (!fr_dump_path().empty()) c10d::DebugInfoWriter::registerWriter(std::make_unique<RankDumpWriter>(env.rank));
    auto store = c10d_rendezvous(env);
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = env.collective_timeout;
    opts->group_name = "0";  // the default group's name, as in the Flight Recorder dumps of a Python job
    auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, opts);
    pg->setBoundDeviceId(device);
    pg->eagerConnectSingleDevice(device);  // ncclCommInitRank now, inside phase init
    std::string description = "nccl (ProcessGroupNCCL, NCCL " + c10d::getNcclVersion() + "), world_size " +
                              std::to_string(env.world_size) + ", device " + device.str() + ", collective timeout " +
                              std::to_string(env.collective_timeout.count()) + " ms";
    auto backend = c10d_apply_debug_level(pg, store, env, description);  // before `description` is read
    return std::make_unique<C10dCollectives>(backend, device, description);
  });
}

}  // namespace
}  // namespace hanglab

int main(int argc, char** argv) {
  hanglab::BackendSpec spec;
  spec.backend = "nccl";
  spec.summary = "hanglab's LibTorch c10d data-parallel training workload (ProcessGroupNCCL, one GPU per rank)";
  spec.extra_env = {"NCCL_DEBUG",
                    "NCCL_SOCKET_IFNAME",
                    "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                    "TORCH_NCCL_BLOCKING_WAIT",
                    "TORCH_NCCL_ENABLE_MONITORING",
                    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
                    "TORCH_FR_DUMP_TEMP_FILE",
                    "TORCH_NCCL_DUMP_ON_TIMEOUT",
                    "TORCH_FR_DUMP_ON_TIMEOUT"};
  spec.notes =
      "One GPU per rank (cuda:LOCAL_RANK). On a collective timeout ProcessGroupNCCL's watchdog aborts the "
      "communicator and, with the default TORCH_NCCL_ASYNC_ERROR_HANDLING, the process (SIGABRT).";
  spec.connect = hanglab::connect;
  // _dump_nccl_trace(includeCollectives=True, includeStackTraces=True, onlyActive=False).
  spec.fr_dumper = [] { return c10d::dump_nccl_trace(true, true, false); };
  return hanglab::c10d_workload_main(argc, argv, spec);
}
