#include "process_group.hpp"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupWrapper.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/debug.h>
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#else
#include <torch/version.h>  // torch before the header-only split
#endif
#include <ATen/ATen.h>

#include <chrono>
#include <cstdlib>
#include <system_error>
#include <thread>
#include <vector>

namespace hanglab {

std::string c10d_exception_text(const std::exception& e) {
  std::string text;
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    text = c10_error->what_without_backtrace();
  } else {
    text = e.what();
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

// Store-based barrier before the backend is built. TCPStore's own waitWorkers gives up
// silently after the timeout, and Gloo's full-mesh connect then fails later with a bare
// "Socket Timeout" after a mix of both timeouts; this bounds rendezvous by
// HANGLAB_INIT_TIMEOUT_MS and names the ranks that never arrived. Rank 0 hosts the store
// and decides: when its deadline passes it publishes the verdict, so every waiting rank
// fails at the same moment with the same message instead of "Broken pipe" once rank 0
// is gone.
void wait_for_all_ranks(c10d::Store& store, const RankEnv& env) {
  const std::string prefix = "hanglab/rendezvous/";
  const std::string failed_key = prefix + "failed";
  const auto deadline = Clock::now() + env.init_timeout;
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  try {
    store.set(prefix + std::to_string(env.rank), std::vector<uint8_t>{'1'});
    store.add(prefix + "count", 1);
    while (store.add(prefix + "count", 0) < env.world_size) {
      if (store.check({failed_key})) {
        const auto verdict = store.get(failed_key);
        throw std::runtime_error(std::string(verdict.begin(), verdict.end()) + " (reported by rank 0)");
      }
      if (env.rank == 0 && Clock::now() >= deadline) {
        std::string missing;
        int joined = 0;
        for (int r = 0; r < env.world_size; ++r) {
          if (store.check({prefix + std::to_string(r)})) {
            ++joined;
          } else {
            missing += (missing.empty() ? "" : ",") + std::to_string(r);
          }
        }
        const std::string verdict = "rendezvous timed out after " + std::to_string(env.init_timeout.count()) +
                                    " ms: " + std::to_string(joined) + "/" + std::to_string(env.world_size) +
                                    " ranks joined (missing ranks: " + missing + ")";
        store.set(failed_key, std::vector<uint8_t>(verdict.begin(), verdict.end()));
        // Keep the store up for a few polls so the waiting ranks read the verdict.
        std::this_thread::sleep_for(Ms(200));
        throw std::runtime_error(verdict);
      }
      std::this_thread::sleep_for(Ms(20));
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error("rendezvous failed: lost the store at " + where +
                             " (rank 0 gone?): " + c10d_exception_text(e));
  } catch (const std::system_error& e) {
    throw std::runtime_error("rendezvous failed: lost the store at " + where + " (rank 0 gone?): " + e.what());
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Store> c10d_rendezvous(const RankEnv& env) {
  c10d::TCPStoreOptions store_opts;
  store_opts.port = static_cast<uint16_t>(env.master_port);
  store_opts.isServer = env.rank == 0;
  store_opts.numWorkers = env.world_size;
  store_opts.waitWorkers = false;  // wait_for_all_ranks() does it, bounded and with names
  store_opts.timeout = env.init_timeout;
  auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_opts);
  wait_for_all_ranks(*store, env);
  return store;
}

c10::intrusive_ptr<c10d::Backend> c10d_apply_debug_level(c10::intrusive_ptr<c10d::Backend> pg,
                                                         const c10::intrusive_ptr<c10d::Store>& store,
                                                         const RankEnv& env, std::string& description) {
  // Python's _c10d_init reads the variable at import; a C++ program has to ask.
  c10d::setDebugLevelFromEnvironment();
  if (c10d::debug_level() != c10d::DebugLevel::Detail) return pg;
  // _create_process_group_wrapper(): a helper Gloo group on its own store prefix, same timeout.
  auto prefix_store = c10::make_intrusive<c10d::PrefixStore>("pg_wrapper:0", store);
  auto opts = c10d::ProcessGroupGloo::Options::create(env.collective_timeout);
  const bool loopback = env.master_addr == "localhost" || env.master_addr.rfind("127.", 0) == 0 || env.master_addr == "::1";
  opts->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname(env.master_addr)
                                   : c10d::ProcessGroupGloo::createDefaultDevice());
  auto helper = c10::make_intrusive<c10d::ProcessGroupGloo>(prefix_store, env.rank, env.world_size, opts);
  description += " (TORCH_DISTRIBUTED_DEBUG=DETAIL: ProcessGroupWrapper)";
  return c10::make_intrusive<c10d::ProcessGroupWrapper>(pg, helper);
}

void c10d_limit_threads() {
  if (std::getenv("OMP_NUM_THREADS") == nullptr) at::set_num_threads(1);
}

std::string libtorch_build_info() {
  return std::string("LibTorch ") + TORCH_VERSION + " (C++" + std::to_string(__cplusplus / 100 % 100) + ", " +
         (_GLIBCXX_USE_CXX11_ABI ? "cxx11" : "pre-cxx11") + " ABI)";
}

int c10d_workload_main(int argc, char** argv, BackendSpec spec) {
  spec.workload = "torch_ddp";
  spec.built_with = libtorch_build_info();
  spec.needs_master = true;  // TCPStore rendezvous, as init_process_group(env://)
  return workload_main(argc, argv, spec);
}

C10dCollectives::C10dCollectives(c10::intrusive_ptr<c10d::Backend> backend, c10::Device device,
                                 std::string description)
    : backend_(std::move(backend)), device_(device), description_(std::move(description)) {}

namespace {

// A c10d error as the loop's CollectiveError, classified by its text (timeout vs comm).
template <class F>
void run_collective(F f) {
  try {
    f();
  } catch (const CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string text = c10d_exception_text(e);
    throw CollectiveError(classify_collective_error(text), text);
  }
}

template <class T>
constexpr at::ScalarType scalar_type() {
  return std::is_same_v<T, double> ? at::kDouble : at::kFloat;
}

}  // namespace

template <class T>
void C10dCollectives::allreduce_impl(T* data, int64_t n) {
  run_collective([&] {
    at::Tensor host = at::from_blob(data, {n}, scalar_type<T>());
    std::vector<at::Tensor> ts{device_.is_cpu() ? host : host.to(device_)};
    backend_->allreduce(ts)->wait();
    if (!device_.is_cpu()) host.copy_(ts[0]);  // waits for the collective on the stream
  });
}

void C10dCollectives::allreduce_sum(float* data, int64_t n) { allreduce_impl(data, n); }
void C10dCollectives::allreduce_sum(double* data, int64_t n) { allreduce_impl(data, n); }

void C10dCollectives::broadcast(float* data, int64_t n, int root) {
  run_collective([&] {
    at::Tensor host = at::from_blob(data, {n}, at::kFloat);
    std::vector<at::Tensor> ts{device_.is_cpu() ? host : host.to(device_)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    backend_->broadcast(ts, opts)->wait();
    if (!device_.is_cpu()) host.copy_(ts[0]);
  });
}

void C10dCollectives::barrier() {
  run_collective([&] {
    c10d::BarrierOptions opts;
    if (!device_.is_cpu()) opts.device_ids = {device_.index()};
    backend_->barrier(opts)->wait();
  });
}

}  // namespace hanglab
