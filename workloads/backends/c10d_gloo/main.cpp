// torch_ddp (backend gloo): the one training loop (workloads/loop) on LibTorch c10d's
// ProcessGroupGloo, as `init_process_group("gloo")` builds it: TCPStore rendezvous
// (backends/c10d), one Gloo device per GLOO_SOCKET_IFNAME interface, the collective
// timeout as the backend timeout. Gloo's own errors and timeouts ("Connection reset by
// peer", "Timed out waiting ... for recv operation to complete") are what a rank reports.
// Flight Recorder: ProcessGroupGloo records every collective into libtorch_cpu's recorder
// when TORCH_FR_BUFFER_SIZE > 0; c10d::dump_fr_trace (what Python's _dump_fr_trace calls)
// returns its pickle, which the loop writes to HANGLAB_FR_DUMP (loop/flight_recorder.hpp).
#include <torch/csrc/distributed/c10d/FlightRecorder.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdlib>
#include <memory>
#include <string>

#include "process_group.hpp"
#include "trainer.hpp"

namespace hanglab {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::unique_ptr<Collectives> connect(const RankEnv& env) {
  return c10d_connecting([&]() -> std::unique_ptr<Collectives> {
    c10d_limit_threads();
    auto store = c10d_rendezvous(env);
    auto opts = c10d::ProcessGroupGloo::Options::create(env.collective_timeout);
    const std::string ifnames = env_or_empty("GLOO_SOCKET_IFNAME");
    if (!ifnames.empty()) {
      // Like torch: one Gloo device per listed interface.
      size_t start = 0;
      while (start <= ifnames.size()) {
        const size_t comma = ifnames.find(',', start);
        const std::string name = ifnames.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!name.empty()) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (env.master_addr == "localhost" || env.master_addr.rfind("127.", 0) == 0 || env.master_addr == "::1") {
      // Single host: bind where the master is, which is loopback.
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(env.master_addr));
    } else {
      // Multi-host: binding to the master's address would fail on other nodes; torch's
      // default resolves this host's own name (falling back to loopback).
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    c10::intrusive_ptr<c10d::Backend> pg =
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, opts);
    // As init_process_group names the default group after building its backend
    // (ProcessGroup::setGroupName/setGroupDesc): the Flight Recorder's entries carry it.
    pg->setGroupUid("0");
    pg->setGroupDesc("default_pg");
    std::string description = "gloo, world_size " + std::to_string(env.world_size) + ", collective timeout " +
                              std::to_string(env.collective_timeout.count()) + " ms";
    pg = c10d_apply_debug_level(pg, store, env, description);
    return std::make_unique<C10dCollectives>(pg, c10::Device(c10::kCPU), description);
  });
}

}  // namespace
}  // namespace hanglab

int main(int argc, char** argv) {
  hanglab::BackendSpec spec;
  spec.backend = "gloo";
  spec.summary = "hanglab's LibTorch c10d data-parallel training workload (ProcessGroupGloo)";
  spec.extra_env = {"GLOO_SOCKET_IFNAME"};
  spec.notes =
      "--backend=nccl is the torch_ddp_nccl binary (ProcessGroupNCCL), built where the venv's torch has CUDA.";
  spec.connect = hanglab::connect;
  // _dump_fr_trace(includeCollectives=True, includeStackTraces=True), as the Python ranks dump.
  spec.fr_dumper = [] { return c10d::dump_fr_trace(true, true, false); };
  return hanglab::c10d_workload_main(argc, argv, spec);
}
