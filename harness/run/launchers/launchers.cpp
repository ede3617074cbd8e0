// The launcher registry: one line per launcher that starts all ranks from one process;
// and what every launcher shares: the project venv, the ranks' error files.
#include "run/launchers/launchers.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "run/launchers/slurm_cluster.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<LauncherPlan> launcher_spec(const WorkloadSpec& w, const std::vector<LaunchSpec>& specs,
                                          const std::vector<std::map<std::string, std::string>>& base_env,
                                          const fs::path& run_dir, const NodeNetView* nodes) {
  if (w.launcher.empty() || w.launcher == "local") return std::nullopt;
  if (w.launcher == "mpirun") return LauncherPlan{mpirun_launch_spec(specs, run_dir), false};
  if (w.launcher == "torchrun") return torchrun_launch_plan(w, specs, base_env, run_dir, nodes);
  if (w.launcher == "srun") return srun_launch_plan(w, specs, base_env, run_dir);
  throw std::invalid_argument("unknown launcher '" + w.launcher + "'");
}

std::string launcher_unsupported_reason(const std::string& name) {
  if (name.empty() || name == "local") return {};
  if (name == "mpirun")
    return ::system("command -v mpirun >/dev/null 2>&1") == 0
               ? std::string()
               : "launcher mpirun: `mpirun` is not on PATH (install openmpi-bin)";
  if (name == "torchrun") {
    const fs::path venv = project_venv();
    if (venv.empty())
      return "launcher torchrun: no project venv (.venv with torch 2.x: run ci/install-deps.sh, or set HANGLAB_VENV)";
    if (::access((venv / "bin" / "torchrun").c_str(), X_OK) != 0)
      return "launcher torchrun: " + (venv / "bin" / "torchrun").string() + " is not there (torch not installed in the venv)";
    if (const fs::path shim = rank_exec_shim(); ::access(shim.c_str(), X_OK) != 0)
      return "launcher torchrun: hanglab_rank_exec is not built beside hanglab (" + shim.string() + ")";
    return {};
  }
  if (name == "srun") {
    if (auto why = slurm_unsupported_reason(); !why.empty()) return why;
    if (const fs::path shim = rank_exec_shim(); ::access(shim.c_str(), X_OK) != 0)
      return "launcher srun: hanglab_rank_exec is not built beside hanglab (" + shim.string() + ")";
    return {};
  }
  return "launcher '" + name + "' is not available";
}

void write_rank_launch(const fs::path& run_dir, const LaunchSpec& s, json env) {
  const fs::path rdir = run_dir / "ranks" / std::to_string(s.rank);
  env["HANGLAB_TRACE"] = (rdir / "events.jsonl").string();
  if (!s.hooks.empty()) env["HANGLAB_HOOKS"] = s.hooks.dump();
  std::vector<std::string> argv = s.wrapper;
  argv.insert(argv.end(), s.argv.begin(), s.argv.end());
  fs::create_directories(rdir);
  write_file(rdir / "launch.json", json{{"rank", s.rank}, {"argv", argv}, {"env", env}}.dump(2) + "\n");
}

fs::path rank_exec_shim() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).parent_path() / "hanglab_rank_exec";
}

fs::path project_venv() {
  std::vector<fs::path> cands;
  if (const char* v = std::getenv("HANGLAB_VENV"); v && *v) cands.emplace_back(v);
  cands.emplace_back(fs::current_path() / ".venv");
#ifdef HANGLAB_SOURCE_VENV
  cands.emplace_back(HANGLAB_SOURCE_VENV);
#endif
  for (const auto& c : cands)
    if (::access((c / "bin" / "python").c_str(), X_OK) == 0) return fs::absolute(c).lexically_normal();
  return {};
}

namespace {

// "attempt_3" -> 3; -1 when not that shape.
int attempt_of(const std::string& name) {
  if (name.rfind("attempt_", 0) != 0) return -1;
  try {
    return std::stoi(name.substr(8));
  } catch (...) {
    return -1;
  }
}

std::optional<ErrorFileRecord> read_error_file(const fs::path& run_dir, const fs::path& file, int rank,
                                               int attempt) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  ErrorFileRecord e;
  e.rank = rank;
  e.attempt = attempt;
  e.path = fs::relative(file, run_dir, ec).string();
  json j = json::parse(read_file(file), nullptr, false);
  if (j.is_object()) {
    // torch.distributed.elastic's format: {"message": {"message": "...", "extraInfo":
    // {"py_callstack": "...", "timestamp": "..."}}}; a plain string message is accepted too.
    const json& m = j.contains("message") ? j["message"] : json();
    if (m.is_object()) {
      e.message = m.value("message", "");
      if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
        const json& ts = m["extraInfo"].contains("timestamp") ? m["extraInfo"]["timestamp"] : json();
        e.timestamp = ts.is_string() ? ts.get<std::string>() : ts.is_number() ? ts.dump() : "";
      }
    } else if (m.is_string()) {
      e.message = m.get<std::string>();
    }
  } else {
    e.message = "(not JSON)";
  }
  return e;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<ErrorFileRecord> read_error_files(const fs::path& run_dir) {
  std::vector<ErrorFileRecord> out;
  std::error_code ec;
  if (fs::is_directory(run_dir / "ranks", ec))
    for (const auto& d : fs::directory_iterator(run_dir / "ranks", ec)) {
      const std::string name = d.path().filename().string();
      if (!all_digits(name)) continue;
      if (auto e = read_error_file(run_dir, d.path() / "error.json", std::stoi(name), 0)) out.push_back(*e);
    }
  // torchrun --log-dir: <dir>/<rdzv id>_<random>/attempt_<n>/<local rank>/error.json. On
  // one node the local rank is the global rank.
  if (fs::is_directory(run_dir / "torchrun", ec))
    for (auto it = fs::recursive_directory_iterator(run_dir / "torchrun", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() != "error.json") continue;
      const fs::path rank_dir = it->path().parent_path();
      const int attempt = attempt_of(rank_dir.parent_path().filename().string());
      if (attempt < 0 || !all_digits(rank_dir.filename().string())) continue;
      if (auto e = read_error_file(run_dir, it->path(), std::stoi(rank_dir.filename().string()), attempt))
        out.push_back(*e);
    }
  std::sort(out.begin(), out.end(), [](const ErrorFileRecord& a, const ErrorFileRecord& b) {
    return std::tie(a.attempt, a.rank, a.path) < std::tie(b.attempt, b.rank, b.path);
  });
  return out;
}

json to_json(const ErrorFileRecord& e) {
  return {{"rank", e.rank}, {"attempt", e.attempt}, {"path", e.path}, {"message", e.message},
          {"timestamp", e.timestamp}};
}

}  // namespace hanglab
