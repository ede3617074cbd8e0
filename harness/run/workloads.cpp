#include "run/workloads.hpp"

#include <cstdlib>
#include <unistd.h>

#include "injector.hpp"

namespace hanglab {

namespace fs = std::filesystem;

const std::vector<WorkloadInfo>& workload_registry() {
  static const std::vector<WorkloadInfo> kWorkloads = {
      {"torch_ddp", "torch_ddp", {"gloo"}, &torch_ddp_args(),
       "LibTorch c10d data-parallel MLP training (TCPStore rendezvous, ProcessGroupGloo, bucketed gradient allreduce)"},
      {"nccl_probe", "nccl_probe", {"nccl"}, [] { static const std::vector<ArgSpec> kNoArgs; return &kNoArgs; }(),
       "NCCL's CPU-side bootstrap on every rank (ncclGetUniqueId: socket interface selection), rank 0's id shared; "
       "built only where NCCL is found",
       false},
      // Same [workload.args] table as torch_ddp: the plain-C++ trainer (workloads/plain_ddp)
      // implements every one of them.
      {"mpi_ddp", "mpi_ddp", {"mpi"}, &torch_ddp_args(),
       "the torch_ddp training loop without LibTorch on Open MPI (MPI_Allreduce per gradient bucket, no collective "
       "timeout); multi-rank only under launcher mpirun, world_size 1 under local; built only where MPI is found"},
      {"nccl_ddp", "nccl_ddp", {"nccl"}, &torch_ddp_args(),
       "the torch_ddp training loop without LibTorch on CUDA + NCCL (ncclAllReduce per gradient bucket, "
       "ProcessGroupNCCL-style watchdog: ncclCommAbort after collective_s); needs a GPU per rank; built only where "
       "the CUDA toolkit and NCCL are found"},
  };
  return kWorkloads;
}

const WorkloadInfo* find_workload(const std::string& name) {
  for (const auto& w : workload_registry())
    if (w.name == name) return &w;
  return nullptr;
}

fs::path workload_dir() {
  if (const char* d = std::getenv("HANGLAB_WORKLOAD_DIR"); d && *d) return d;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  // build/harness/hanglab -> build/workloads
  if (!ec) return exe.parent_path().parent_path() / "workloads";
  return "workloads";
}

std::string workload_unsupported_reason(const Scenario& sc) {
  const auto& w = sc.workload;
  if (!w.command.empty()) return {};
  const WorkloadInfo* info = find_workload(w.name);
  if (!info) return "unknown workload '" + w.name + "'";
  fs::path bin = workload_dir() / info->binary;
  if (::access(bin.c_str(), X_OK) != 0)
    return "workload binary " + bin.string() + " is not built here (CMake did not find what it needs: LibTorch for torch_ddp, MPI for mpi_ddp, CUDA/NCCL for nccl_*)";
  bool backend_ok = false;
  for (const auto& b : info->backends) backend_ok = backend_ok || b == w.backend;
  if (!backend_ok) return "workload " + w.name + " does not support backend '" + w.backend + "' in this build";
  if (w.launcher == "mpirun" && ::system("command -v mpirun >/dev/null 2>&1") != 0)
    return "launcher mpirun: `mpirun` is not on PATH (install openmpi-bin)";
  if (w.launcher != "local" && w.launcher != "mpirun") return "launcher '" + w.launcher + "' is not available";
  return {};
}

namespace {
// Bring-your-own commands may name paths relative to the scenario file or the built
// workloads, so a scenario runs the same from any working directory.
std::string expand_placeholders(std::string s, const Scenario& sc) {
  const std::pair<std::string, std::string> subst[] = {
      {"{scenario_dir}", fs::absolute(sc.file).parent_path().lexically_normal().string()},
      {"{workload_dir}", workload_dir().lexically_normal().string()},
  };
  for (const auto& [from, to] : subst)
    for (size_t pos; (pos = s.find(from)) != std::string::npos;) s.replace(pos, from.size(), to);
  return s;
}
}  // namespace

std::vector<std::string> workload_argv(const Scenario& sc) {
  const auto& w = sc.workload;
  if (!w.command.empty()) {
    std::vector<std::string> argv;
    for (const auto& a : w.command) argv.push_back(expand_placeholders(a, sc));
    return argv;
  }
  const WorkloadInfo* info = find_workload(w.name);
  std::vector<std::string> argv{(workload_dir() / info->binary).string(), "--steps=" + std::to_string(w.steps),
                                "--backend=" + w.backend};
  for (const auto& [k, v] : w.args) argv.push_back("--" + k + "=" + v);
  return argv;
}

LoadOptions make_load_options() {
  LoadOptions o;
  for (const auto& w : workload_registry()) {
    o.known_workloads.push_back(w.name);
    auto& args = o.workload_args[w.name];
    for (const auto& a : *w.args) args[a.name] = a.type;
  }
  for (const auto& i : injector_registry()) o.known_faults.push_back(i.kind);
  return o;
}

}  // namespace hanglab
