#include "workloads.hpp"

#include <cstdlib>
#include <unistd.h>

#include "injector.hpp"

namespace hanglab {

namespace fs = std::filesystem;

const std::vector<WorkloadInfo>& workload_registry() {
  static const std::vector<WorkloadInfo> kWorkloads = {
      {"torch_ddp", "torch_ddp", {"gloo"}, &torch_ddp_args(),
       "LibTorch c10d data-parallel MLP training (TCPStore rendezvous, ProcessGroupGloo, bucketed gradient allreduce)"},
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
    return "workload binary " + bin.string() + " is not built here (LibTorch not found at configure time?)";
  bool backend_ok = false;
  for (const auto& b : info->backends) backend_ok = backend_ok || b == w.backend;
  if (!backend_ok) return "workload " + w.name + " does not support backend '" + w.backend + "' in this build";
  if (w.launcher != "local") return "launcher '" + w.launcher + "' is not available in this build";
  return {};
}

std::vector<std::string> workload_argv(const Scenario& sc) {
  const auto& w = sc.workload;
  if (!w.command.empty()) return w.command;
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
