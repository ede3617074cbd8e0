// nccl_ddp: hanglab's data-parallel training workload on raw CUDA + NCCL, without
// LibTorch. The training program is the one loop of every workload (workloads/loop:
// its hooks, log lines, trace and exit codes); this file supplies its
// collectives the way ProcessGroupNCCL does them:
//   - rendezvous: rank 0 creates the ncclUniqueId and serves it over a tiny TCP exchange
//     on MASTER_ADDR:MASTER_PORT (torch passes it through the TCPStore), bounded by
//     HANGLAB_INIT_TIMEOUT_MS; then ncclCommInitRankConfig on a non-blocking
//     communicator, polled so that a peer that never arrives is a bounded init failure;
//   - every collective: the host data is staged into pinned memory, copied to a device
//     buffer, reduced with ncclAllReduce (ncclBroadcast for the initial parameters, a
//     one-element allreduce for the barrier, as torch's barrier on NCCL) on the rank's
//     stream, and copied back; the training thread then polls the stream;
//   - a watchdog thread, like ProcessGroupNCCL's: it polls ncclCommGetAsyncError and
//     the age of the collective in flight; past HANGLAB_COLLECTIVE_TIMEOUT_MS it writes
//     torch's "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=...)" line,
//     calls ncclCommAbort (so the kernel spinning on a missing peer returns) and ends the
//     rank with error class timeout (exit 11); an asynchronous NCCL error (a peer's
//     connection closed, a remote abort) ends it with class comm (exit 10).
// The gradients are computed on the host by the plain C++ MLP: the GPU carries only the
// communication, which is what the hang faults are about.
//
// Device: LOCAL_RANK modulo the visible device count. NCCL refuses two ranks of one
// communicator on the same GPU ("Duplicate GPU detected"), so world_size must not exceed
// the GPUs of a single host. Builds wherever the CUDA toolkit and NCCL are found; runs
// only where a GPU is (hanglab tags its scenarios "gpu" and skips them elsewhere).
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "exit_codes.hpp"
#include "id_exchange.hpp"
#include "runtime.hpp"
#include "trainer.hpp"

namespace hanglab {
namespace {

std::string cuda_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string text = std::string(ncclGetErrorString(r));
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += " (" + std::string(last) + ")";
  return text;
}

int64_t ms_left(Clock::time_point deadline) {
  return std::chrono::duration_cast<Ms>(deadline - Clock::now()).count();
}

// ---------------------------------------------------------------------------------------
// The watchdog: the part of ProcessGroupNCCL that turns a hang into an error.

class Watchdog {
 public:
  Watchdog(ncclComm_t comm, int rank, Ms timeout) : comm_(comm), rank_(rank), timeout_(timeout) {
    thread_ = std::thread([this] { run(); });
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() { stop(); }

  // The training thread brackets every NCCL call and the wait for its stream.
  void begin(int64_t seq, const char* op, int64_t numel, int step) {
    std::lock_guard<std::mutex> lock(mutex_);
    active_ = true;
    seq_ = seq;
    op_ = op;
    numel_ = numel;
    step_ = step;
    start_ = Clock::now();
  }
  void end() {
    std::lock_guard<std::mutex> lock(mutex_);
    active_ = false;
  }
  // True once the watchdog has decided to end the process; the training thread then
  // stops touching NCCL and waits for the _exit.
  bool tripped() const { return tripped_.load(); }
  // Held by the training thread around each (short, non-blocking) call on the
  // communicator or its stream, and by ncclCommAbort: the abort must not free the
  // communicator under a call in flight.
  std::mutex& comm_mutex() { return comm_mutex_; }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    const Ms poll = std::max(Ms(10), std::min(Ms(100), timeout_ / 10));
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, poll);
      if (stopping_) break;
      ncclResult_t async = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &async);
      if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        const ncclResult_t e = r != ncclSuccess ? r : async;
        trip(lock, ErrorClass::kComm, "NCCL error: " + nccl_text(e, comm_) + " (reported by ncclCommGetAsyncError)");
      }
      if (active_) {
        const auto ran = std::chrono::duration_cast<Ms>(Clock::now() - start_);
        if (ran > timeout_) {
          std::string op = op_;
          for (char& c : op) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          trip(lock, ErrorClass::kTimeout,
               "[Rank " + std::to_string(rank_) + "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" +
                   std::to_string(seq_) + ", OpType=" + op + ", NumelIn=" + std::to_string(numel_) +
                   ", NumelOut=" + std::to_string(numel_) + ", Timeout(ms)=" + std::to_string(timeout_.count()) +
                   ") ran for " + std::to_string(ran.count()) + " milliseconds before timing out.");
        }
      }
    }
  }

  // Aborts the communicator (so kernels waiting on a peer return and the peers' NCCL
  // sees this rank go) and ends the process through fail(). ncclCommAbort can itself
  // block on a wedged device; it gets a bounded time, then the rank exits regardless, as
  // torch's heartbeat monitor kills a process whose abort hangs.
  [[noreturn]] void trip(std::unique_lock<std::mutex>& lock, ErrorClass cls, const std::string& what) {
    tripped_ = true;
    lock.unlock();
    log_error("%s", what.c_str());
    log_error("aborting the NCCL communicator (ncclCommAbort) and taking the process down");
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread([this, done] {
      std::lock_guard<std::mutex> comm_lock(comm_mutex_);
      ncclCommAbort(comm_);
      *done = true;
    }).detach();
    const auto give_up = Clock::now() + Ms(5000);
    while (!*done && Clock::now() < give_up) std::this_thread::sleep_for(Ms(10));
    if (!*done) log_error("ncclCommAbort did not return within 5000 ms; exiting without it");
    fail(cls, what);
  }

  ncclComm_t comm_;
  int rank_;
  Ms timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool active_ = false;
  int64_t seq_ = 0;
  std::string op_;
  int64_t numel_ = 0;
  int step_ = 0;
  Clock::time_point start_;
  std::atomic<bool> tripped_{false};
  std::mutex comm_mutex_;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------

class NcclCollectives : public Collectives {
 public:
  NcclCollectives(ncclComm_t comm, cudaStream_t stream, const RankEnv& env, int device)
      : comm_(comm), stream_(stream), env_(env), device_(device), watchdog_(comm, env.rank, env.collective_timeout) {}

  void allreduce_sum(float* data, int64_t n) override { reduce(data, n, ncclFloat, sizeof(float), "allreduce"); }
  void allreduce_sum(double* data, int64_t n) override { reduce(data, n, ncclDouble, sizeof(double), "allreduce"); }

  void broadcast(float* data, int64_t n, int root) override {
    stage_in(data, n * sizeof(float));
    watchdog_.begin(current_seq, "broadcast", n, current_step);
    const auto count = static_cast<size_t>(n);
    check_call(guarded([&] { return ncclBroadcast(dev_, dev_, count, ncclFloat, root, comm_, stream_); }),
               "ncclBroadcast");
    stage_out(data, n * sizeof(float));
  }

  // torch's barrier on NCCL: a one-element allreduce, then wait for it.
  void barrier() override {
    float one = 1.0f;
    reduce(&one, 1, ncclFloat, sizeof(float), "barrier");
  }

  std::string describe() const override {
    int v = 0;
    ncclGetVersion(&v);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device_);
    return "nccl " + std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
           std::to_string(v % 100) + ", world_size " + std::to_string(env_.world_size) + ", device " +
           std::to_string(device_) + " (" + prop.name + "), collective timeout " +
           std::to_string(env_.collective_timeout.count()) + " ms (watchdog: ncclCommAbort on expiry)";
  }

  void finalize() override {
    // ncclCommFinalize flushes outstanding work with the peers: bounded by the watchdog
    // like a collective.
    watchdog_.begin(current_seq, "finalize", 0, current_step);
    check_call(guarded([&] { return ncclCommFinalize(comm_); }), "ncclCommFinalize");
    watchdog_.end();
    watchdog_.stop();
    ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }

 private:
  void reduce(void* data, int64_t n, ncclDataType_t type, size_t elem, const char* op) {
    const size_t bytes = static_cast<size_t>(n) * elem;
    stage_in(data, bytes);
    watchdog_.begin(current_seq, op, n, current_step);
    const auto count = static_cast<size_t>(n);
    check_call(guarded([&] { return ncclAllReduce(dev_, dev_, count, type, ncclSum, comm_, stream_); }),
               "ncclAllReduce");
    stage_out(data, bytes);
  }

  void ensure_capacity(size_t bytes) {
    if (bytes <= capacity_) return;
    if (dev_ != nullptr) cudaFree(dev_);
    if (host_ != nullptr) cudaFreeHost(host_);
    dev_ = nullptr;
    host_ = nullptr;
    cuda_check(cudaMalloc(&dev_, bytes), "cudaMalloc");
    cuda_check(cudaMallocHost(&host_, bytes), "cudaMallocHost");
    capacity_ = bytes;
  }

  // Pinned staging keeps both copies asynchronous, so the training thread waits in
  // wait_stream()'s polling loop (where the watchdog can end it) and not inside a
  // blocking cudaMemcpy.
  void stage_in(const void* data, size_t bytes) {
    ensure_capacity(std::max<size_t>(bytes, 4));
    std::memcpy(host_, data, bytes);
    cuda_check(guarded([&] { return cudaMemcpyAsync(dev_, host_, bytes, cudaMemcpyHostToDevice, stream_); }),
               "cudaMemcpyAsync H2D");
  }

  void stage_out(void* data, size_t bytes) {
    cuda_check(guarded([&] { return cudaMemcpyAsync(host_, dev_, bytes, cudaMemcpyDeviceToHost, stream_); }),
               "cudaMemcpyAsync D2H");
    wait_stream();
    watchdog_.end();
    std::memcpy(data, host_, bytes);
  }

  // A non-blocking communicator may answer ncclInProgress (the enqueue, or the lazy
  // connection set-up with the peers, still running): wait for it to settle, under the
  // watchdog, before touching the communicator again.
  void check_call(ncclResult_t r, const char* call) {
    while (r == ncclInProgress) {
      park_if_tripped();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      ncclResult_t state = ncclSuccess;
      const ncclResult_t q = guarded([&] { return ncclCommGetAsyncError(comm_, &state); });
      r = q != ncclSuccess ? q : state;
    }
    if (r != ncclSuccess) {
      park_if_tripped();
      throw CollectiveError(ErrorClass::kComm, std::string(call) + " failed: NCCL error: " + nccl_text(r, comm_));
    }
  }

  void wait_stream() {
    for (;;) {
      park_if_tripped();
      const cudaError_t q = guarded([&] { return cudaStreamQuery(stream_); });
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) {
        park_if_tripped();
        throw CollectiveError(ErrorClass::kComm, "CUDA error while waiting for the collective: " + cuda_text(q));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // Runs one short call on the communicator or its stream under the watchdog's comm
  // mutex, unless the watchdog is already ending the process.
  template <class Call>
  decltype(std::declval<Call>()()) guarded(Call call) {
    std::unique_lock<std::mutex> lock(watchdog_.comm_mutex());
    if (watchdog_.tripped()) {
      lock.unlock();
      park_if_tripped();
    }
    return call();
  }

  // The watchdog is ending the process: anything the training thread did now (an error
  // of its own from the aborted stream) would be an echo written over the root cause.
  void park_if_tripped() {
    if (!watchdog_.tripped()) return;
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  void cuda_check(cudaError_t e, const char* call) {
    if (e == cudaSuccess) return;
    park_if_tripped();
    throw CollectiveError(ErrorClass::kComm, std::string(call) + ": CUDA error: " + cuda_text(e));
  }

  ncclComm_t comm_;
  cudaStream_t stream_;
  const RankEnv& env_;
  int device_;
  void* dev_ = nullptr;
  void* host_ = nullptr;
  size_t capacity_ = 0;
  Watchdog watchdog_;
};

std::unique_ptr<Collectives> connect(const RankEnv& env) {
  const auto deadline = Clock::now() + env.init_timeout;
  int devices = 0;
  const cudaError_t de = cudaGetDeviceCount(&devices);
  if (de != cudaSuccess || devices == 0) {
    throw CollectiveError(ErrorClass::kUsage, "no usable CUDA device: " + (de != cudaSuccess
                                                                               ? "cudaGetDeviceCount: " + cuda_text(de)
                                                                               : std::string("0 devices visible")));
  }
  const int device = env.local_rank % devices;
  if (env.local_world_size > devices) {
    log_info("WARNING: %d local ranks on %d visible GPU(s): NCCL rejects two ranks of one communicator on one GPU",
             env.local_world_size, devices);
  }
  cudaError_t ce = cudaSetDevice(device);
  if (ce != cudaSuccess) {
    throw CollectiveError(ErrorClass::kUsage, "cudaSetDevice(" + std::to_string(device) + "): " + cuda_text(ce));
  }

  ncclUniqueId id{};
  if (env.rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      throw CollectiveError(ErrorClass::kRendezvous, "ncclGetUniqueId failed: " + nccl_text(r, nullptr));
    }
    serve_id(env.master_port, env.world_size, std::string(id.internal, sizeof id.internal), deadline,
             env.init_timeout);
  } else {
    const std::string blob =
        fetch_id(env.master_addr, env.master_port, env.rank, sizeof id.internal, deadline, env.init_timeout);
    std::memcpy(id.internal, blob.data(), sizeof id.internal);
  }

  // Non-blocking, so that init is bounded by the init timeout: NCCL's own bootstrap would
  // otherwise wait (and retry its connects) on a peer that never arrives.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, env.world_size, id, env.rank, &config);
  while (r == ncclInProgress) {
    if (ms_left(deadline) <= 0) {
      ncclCommAbort(comm);
      throw CollectiveError(ErrorClass::kRendezvous, "ncclCommInitRankConfig did not complete within " +
                                                         std::to_string(env.init_timeout.count()) +
                                                         " ms (a peer never joined the NCCL bootstrap?)");
    }
    std::this_thread::sleep_for(Ms(1));
    ncclResult_t state = ncclSuccess;
    const ncclResult_t q = ncclCommGetAsyncError(comm, &state);
    r = q != ncclSuccess ? q : state;
  }
  if (r != ncclSuccess) {
    const std::string text = nccl_text(r, comm);
    if (comm != nullptr) ncclCommAbort(comm);
    throw CollectiveError(ErrorClass::kRendezvous, "ncclCommInitRankConfig failed: " + text);
  }
  cudaStream_t stream = nullptr;
  ce = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (ce != cudaSuccess) throw CollectiveError(ErrorClass::kOther, "cudaStreamCreate: " + cuda_text(ce));
  return std::make_unique<NcclCollectives>(comm, stream, env, device);
}

}  // namespace
}  // namespace hanglab

int main(int argc, char** argv) {
  hanglab::BackendSpec spec;
  spec.workload = "nccl_ddp";
  spec.backend = "nccl";
  spec.summary =
      "hanglab's CUDA + NCCL data-parallel training workload (plain C++ MLP on the host, ncclAllReduce per gradient "
      "bucket on the GPU, ProcessGroupNCCL-style watchdog)";
  spec.extra_env = {"CUDA_VISIBLE_DEVICES", "NCCL_DEBUG", "NCCL_SOCKET_IFNAME"};
  spec.notes =
      "Needs a GPU per rank (device LOCAL_RANK % visible devices). The ncclUniqueId travels from rank 0 over TCP on "
      "MASTER_ADDR:MASTER_PORT; init is bounded by HANGLAB_INIT_TIMEOUT_MS; a collective running longer than "
      "HANGLAB_COLLECTIVE_TIMEOUT_MS makes the watchdog call ncclCommAbort and exit 11.";
  spec.needs_master = true;
  spec.connect = hanglab::connect;
  return hanglab::workload_main(argc, argv, spec);
}
