// The srun launcher: one `srun` starts every rank as a task of one job step on the run's
// private Slurm cluster (launchers/slurm_cluster.hpp, started by the runner), as
//
//   srun -l --kill-on-bad-exit=1 -N 1 -n WORLD --cpus-per-task 1 --job-name RUN_ID
//        [--time MINUTES] hanglab_rank_exec RUN_DIR
//
// with SLURM_CONF pointing at the cluster's slurm.conf. Every task is hanglab_rank_exec,
// as under torchrun: it takes its rank from SLURM_PROCID, reads ranks/<r>/launch.json (the
// rank's argv with its wrapper, and its whole environment: hanglab's rendezvous at
// MASTER_ADDR/MASTER_PORT, the trace path, hooks), records its pid in exec.jsonl,
// redirects its output to the rank's fifos and execs the rank. The ranks are slurmstepd's
// children, not srun's; srun's own lines (its -l labels on anything a task printed before
// the redirect, "srun: error: HOST: task 1: Killed", "Terminating StepId=...") are the
// launcher's log.
#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "run/launchers/launchers.hpp"
#include "run/launchers/slurm_cluster.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

LauncherPlan srun_launch_plan(const WorkloadSpec& w, const std::vector<LaunchSpec>& specs,
                              const std::vector<std::map<std::string, std::string>>& base_env,
                              const fs::path& run_dir) {
  const fs::path dir = fs::absolute(run_dir);
  std::string run_id = "hanglab";
  if (!base_env.empty())
    if (auto it = base_env[0].find("TORCHELASTIC_RUN_ID"); it != base_env[0].end()) run_id = it->second;
  for (const auto& s : specs) {
    // srun gives every task its own environment (SLURM_*) and nothing of the torchrun
    // contract: the rank's environment is taken whole, as the local launcher sets it.
    json env = json::object();
    for (const auto& [k, v] : s.env) env[k] = v;
    write_rank_launch(dir, s, std::move(env));
  }
  LauncherPlan p;
  p.rank_fifos = true;
  p.labelled_output = true;
  const fs::path shim = rank_exec_shim();
  p.spec.rank = -1;
  p.spec.argv = {"srun", "-l", "--kill-on-bad-exit=1", "-N", "1", "-n", std::to_string(specs.size()),
                 "--cpus-per-task", "1", "--job-name", run_id};
  if (w.time_limit_min > 0) p.spec.argv.insert(p.spec.argv.end(), {"--time", std::to_string(w.time_limit_min)});
  p.spec.argv.insert(p.spec.argv.end(), {shim.string(), dir.string()});
  p.spec.env = {{"SLURM_CONF", (slurm_cluster_dir(run_dir) / "slurm.conf").string()}};
  return p;
}

namespace {

// "1-3,5" (srun's task list) -> {1,2,3,5}; empty when malformed.
std::vector<int> task_list(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(pos, comma - pos);
    int a = 0, b = 0, n = 0;
    if (sscanf(item.c_str(), "%d-%d%n", &a, &b, &n) == 2 && n == static_cast<int>(item.size()) && a <= b && b - a < 65536) {
      for (int i = a; i <= b; ++i) out.push_back(i);
    } else if (sscanf(item.c_str(), "%d%n", &a, &n) == 1 && n == static_cast<int>(item.size())) {
      out.push_back(a);
    } else {
      return {};
    }
    pos = comma + 1;
  }
  return out;
}

}  // namespace

std::optional<SrunTaskExit> parse_srun_task_exit(const std::string& line) {
  // srun's report of tasks that ended badly (src/srun/srun_job.c, 22.05):
  //   srun: error: vm: task 1: Killed
  //   srun: error: vm: tasks 0,2-3: Exited with exit code 11
  //   srun: error: vm: task 0: Segmentation fault (core dumped)
  static const std::regex kLine(R"(srun: error: [^:]+: tasks? ([0-9,\-]+): (.+)$)");
  std::smatch m;
  if (!std::regex_search(line, m, kLine)) return std::nullopt;
  SrunTaskExit e;
  e.tasks = task_list(m[1]);
  if (e.tasks.empty()) return std::nullopt;
  std::string what = m[2];
  if (!what.empty() && what.back() == '\r') what.pop_back();
  int code = 0;
  if (sscanf(what.c_str(), "Exited with exit code %d", &code) == 1) {
    e.code = code;
    return e;
  }
  if (auto p = what.find(" (core dumped)"); p != std::string::npos) what.resize(p);
  for (int sig = 1; sig < 65; ++sig)
    if (const char* name = strsignal(sig); name && what == name) {
      e.signal = sig;
      return e;
    }
  return std::nullopt;
}

}  // namespace hanglab
