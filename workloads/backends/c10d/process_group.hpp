// What the two LibTorch c10d backends (c10d_gloo, c10d_nccl) share: the rendezvous that
// init_process_group(env://) does (a TCPStore served by rank 0, bounded by the init
// timeout and naming the ranks that never arrived) and the Collectives of the one
// training loop (workloads/loop) on a c10d Backend: ProcessGroupGloo or
// ProcessGroupNCCL, with their own timeouts, watchdog, heartbeat monitor and Flight
// Recorder — nothing of hanglab's in between but the tensor wrapping.
//
// Every c10d error (c10::Error, DistBackendError, gloo's exceptions) reaches the loop as
// a CollectiveError with its message only (c10::Error::what() carries a C++ backtrace).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <exception>
#include <string>

#include "trainer.hpp"

namespace hanglab {

// The message of an exception without c10's backtrace, on one line.
std::string c10d_exception_text(const std::exception& e);

// The store of init_process_group(env://) after every rank has joined it. Throws
// std::runtime_error with the ranks that are missing after HANGLAB_INIT_TIMEOUT_MS.
c10::intrusive_ptr<c10d::Store> c10d_rendezvous(const RankEnv& env);

// As init_process_group does with TORCH_DISTRIBUTED_DEBUG (hanglab's [torch] distributed_debug):
// sets c10d's debug level from the environment and, at DETAIL, wraps `pg` in ProcessGroupWrapper,
// which checks every collective's op, sequence number and shapes against the other ranks' on a
// helper Gloo group (store prefix "pg_wrapper:0", the collective timeout) before running it, so
// a mismatch fails at once. Otherwise returns `pg` unchanged. Appends " (TORCH_DISTRIBUTED_DEBUG=
// DETAIL: ProcessGroupWrapper)" to `description` when it wraps.
c10::intrusive_ptr<c10d::Backend> c10d_apply_debug_level(c10::intrusive_ptr<c10d::Backend> pg,
                                                         const c10::intrusive_ptr<c10d::Store>& store,
                                                         const RankEnv& env, std::string& description);

// at::set_num_threads(1) unless OMP_NUM_THREADS is set (torchrun's default: N ranks per
// host must not oversubscribe the cores).
void c10d_limit_threads();

// "LibTorch 2.15.0 (C++20, cxx11 ABI)": what this binary was compiled against.
std::string libtorch_build_info();

// workload_main() for workload torch_ddp on a c10d backend: fills in what every c10d
// backend shares (workload name, LibTorch build, MASTER_ADDR/PORT required).
int c10d_workload_main(int argc, char** argv, BackendSpec spec);

// The loop's collectives on a c10d Backend. Tensors live on `device`: the CPU for Gloo
// (the loop's buffers are wrapped, no copy), a GPU for NCCL (copied there and back; the
// copy back waits for the collective on the stream, which is where a hang shows).
class C10dCollectives : public Collectives {
 public:
  C10dCollectives(c10::intrusive_ptr<c10d::Backend> backend, c10::Device device, std::string description);

  void allreduce_sum(float* data, int64_t n) override;
  void allreduce_sum(double* data, int64_t n) override;
  void broadcast(float* data, int64_t n, int root) override;
  void barrier() override;
  std::string describe() const override { return description_; }

 private:
  template <class T>
  void allreduce_impl(T* data, int64_t n);

  c10::intrusive_ptr<c10d::Backend> backend_;
  c10::Device device_;
  std::string description_;
};

// Runs `connect` (building the c10d Backend) with its errors as CollectiveError of class
// rendezvous, their text without backtraces.
template <class F>
auto c10d_connecting(F connect) -> decltype(connect()) {
  try {
    return connect();
  } catch (const CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    throw CollectiveError(ErrorClass::kRendezvous, c10d_exception_text(e));
  }
}

}  // namespace hanglab
