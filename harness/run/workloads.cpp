#include "run/workloads.hpp"

#include <functional>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "injector.hpp"
#include "run/launchers/launchers.hpp"
#include "scenario/config_error.hpp"

namespace hanglab {

namespace fs = std::filesystem;

namespace {
#ifdef HANGLAB_LIBTORCH_VERSION
constexpr const char* kLibTorchVersion = HANGLAB_LIBTORCH_VERSION;
#else
constexpr const char* kLibTorchVersion = "";
#endif
}  // namespace

const std::vector<WorkloadInfo>& workload_registry() {
  static const std::vector<WorkloadInfo> kWorkloads = {
      {"torch_ddp", "torch_ddp", {"gloo", "nccl"}, &torch_ddp_args(),
       "the training loop on LibTorch c10d (TCPStore rendezvous; gloo: ProcessGroupGloo, nccl: ProcessGroupNCCL "
       "with torch's watchdog, heartbeat monitor and Flight Recorder, one GPU per rank)",
       true, {{"nccl", "torch_ddp_nccl"}}, kLibTorchVersion, {"gloo", "nccl"}},
      {"nccl_probe", "nccl_probe", {"nccl"}, [] { static const std::vector<ArgSpec> kNoArgs; return &kNoArgs; }(),
       "NCCL's CPU-side bootstrap on every rank (ncclGetUniqueId: socket interface selection), rank 0's id shared; "
       "built only where NCCL is found",
       false},
      // The same training loop (workloads/loop), so the same [workload.args] table.
      {"mpi_ddp", "mpi_ddp", {"mpi"}, &torch_ddp_args(),
       "the training loop on Open MPI (MPI_Allreduce per gradient bucket, no collective "
       "timeout); multi-rank only under launcher mpirun, world_size 1 under local; built only where MPI is found"},
      {"nccl_ddp", "nccl_ddp", {"nccl"}, &torch_ddp_args(),
       "the training loop on raw CUDA + NCCL (ncclAllReduce per gradient bucket, a watchdog of its own in "
       "ProcessGroupNCCL's style: ncclCommAbort after collective_s); needs a GPU per rank; built only where "
       "the CUDA toolkit and NCCL are found"},
  };
  return kWorkloads;
}

const std::string& workload_binary(const WorkloadInfo& w, const std::string& backend) {
  for (const auto& [b, file] : w.backend_binaries)
    if (b == backend) return file;
  return w.binary;
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

namespace {
bool uses_venv(const WorkloadSpec& w) {
  for (const auto& a : w.command)
    if (a.find("{venv}") != std::string::npos) return true;
  return false;
}

std::string join_words(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// The modules of `mods` that the project venv's python cannot find (find_spec, no import
// of the module itself), space-separated; empty when all are there. Module names are
// checked by the scenario loader ([A-Za-z0-9_.]), so they pass through the shell as they are.
std::string missing_python_modules(const std::vector<std::string>& mods) {
  const fs::path venv = project_venv();
  if (venv.empty()) return join_words(mods);
  std::string py = (venv / "bin" / "python").string(), q;
  for (char c : py) q += (c == '\'' ? std::string("'\\''") : std::string(1, c));
  std::string cmd = "'" + q + "' -c 'import importlib.util as u, sys; print(\" \".join(m for m in sys.argv[1:] if u.find_spec(m) is None))'";
  for (const auto& m : mods) cmd += " " + m;
  cmd += " 2>/dev/null";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return join_words(mods);
  std::string out;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int st = ::pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (st != 0 && out.empty()) return join_words(mods);  // the interpreter itself failed
  return out;
}
}  // namespace

std::string workload_unsupported_reason(const Scenario& sc) {
  const auto& w = sc.workload;
  if (auto why = launcher_unsupported_reason(w.launcher); !why.empty()) return why;
  if (!w.command.empty()) {
    if (uses_venv(w) && project_venv().empty())
      return "the command uses {venv} and there is no project venv (.venv: run ci/install-deps.sh, or set HANGLAB_VENV)";
    if (!w.python_modules.empty()) {
      const std::string missing = missing_python_modules(w.python_modules);
      if (!missing.empty())
        return "the project venv lacks the Python module(s) " + missing + " this command needs (run ci/install-deps.sh)";
    }
    return {};
  }
  const WorkloadInfo* info = find_workload(w.name);
  if (!info) return "unknown workload '" + w.name + "'";
  bool backend_ok = false;
  for (const auto& b : info->backends) backend_ok = backend_ok || b == w.backend;
  if (!backend_ok) return "workload " + w.name + " does not support backend '" + w.backend + "' in this build";
  fs::path bin = workload_dir() / workload_binary(*info, w.backend);
  if (::access(bin.c_str(), X_OK) != 0)
    return "workload binary " + bin.string() + " is not built here (CMake did not find what it needs: LibTorch 2.x "
           "for torch_ddp, LibTorch with CUDA for torch_ddp_nccl, MPI for mpi_ddp, CUDA/NCCL for nccl_*)";
  return {};
}

// Bring-your-own commands may name paths relative to the scenario file or the built
// workloads, so a scenario runs the same from any working directory.
std::string expand_placeholders(std::string s, const Scenario& sc) {
  if (s.find('{') == std::string::npos) return s;  // most env values: nothing to expand (and no file needed)
  const std::pair<std::string, std::function<std::string()>> subst[] = {
      {"{scenario_dir}", [&] { return fs::absolute(sc.file).parent_path().lexically_normal().string(); }},
      {"{workload_dir}", [] { return workload_dir().lexically_normal().string(); }},
      {"{venv}", [] { return project_venv().string(); }},
  };
  for (const auto& [from, to] : subst) {
    if (s.find(from) == std::string::npos) continue;
    const std::string value = to();
    for (size_t pos; (pos = s.find(from)) != std::string::npos;) s.replace(pos, from.size(), value);
  }
  return s;
}

std::vector<std::string> workload_argv(const Scenario& sc) {
  const auto& w = sc.workload;
  if (!w.command.empty()) {
    std::vector<std::string> argv;
    for (const auto& a : w.command) argv.push_back(expand_placeholders(a, sc));
    return argv;
  }
  const WorkloadInfo* info = find_workload(w.name);
  std::vector<std::string> argv{(workload_dir() / workload_binary(*info, w.backend)).string(), "--steps=" + std::to_string(w.steps),
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
    if (!w.flight_recorder_backends.empty()) o.flight_recorder_backends[w.name] = w.flight_recorder_backends;
  }
  for (const auto& i : injector_registry()) o.known_faults.push_back(i.kind);
  return o;
}

fs::path default_scenarios_dir() {
  std::error_code ec;
  if (fs::is_directory("scenarios", ec)) return "scenarios";
#ifdef HANGLAB_DEFAULT_SCENARIOS_DIR
  if (fs::is_directory(HANGLAB_DEFAULT_SCENARIOS_DIR, ec)) return HANGLAB_DEFAULT_SCENARIOS_DIR;
#endif
  return "scenarios";
}

namespace {

ConfigError error_at(const SourcePos& p, const Scenario& sc, const std::string& key, const std::string& msg) {
  return ConfigError(p.file.empty() ? sc.file.string() : p.file, p.line, p.col, key, msg);
}

// Where execvp would find `prog` with this PATH; empty when nowhere.
std::string find_on_path(const std::string& prog, const std::string& path) {
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    fs::path cand = fs::path(dir.empty() ? "." : dir) / prog;
    struct stat st{};
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  return {};
}

// Interpreters whose first non-option argument is a script file they open.
bool is_script_interpreter(const std::string& base) {
  for (const char* p : {"python", "bash", "sh", "dash", "perl", "ruby", "node", "Rscript"})
    if (base == p) return true;
  // python3, python3.11, ...
  return base.rfind("python", 0) == 0 && base.find_first_not_of("0123456789.", 6) == std::string::npos;
}

// Options of these interpreters that take a value as the next argument.
bool option_takes_value(const std::string& interp, const std::string& opt) {
  if (interp.rfind("python", 0) == 0) return opt == "-W" || opt == "-X" || opt == "-Q";
  if (interp == "bash" || interp == "sh" || interp == "dash") return opt == "-o" || opt == "-O" || opt == "--rcfile";
  return false;
}

}  // namespace

void check_workload_runnable(const Scenario& sc) {
  const auto& w = sc.workload;
  // Without the project venv a {venv} command is skipped (unsupported here), not wrong.
  if (!w.command.empty() && !(uses_venv(w) && project_venv().empty())) {
    const std::vector<std::string> argv = workload_argv(sc);
    auto pos = [&](size_t i) { return i < w.command_pos.size() ? w.command_pos[i] : w.table_pos; };
    const std::string& prog = argv[0];
    std::string path_env;
    if (auto it = w.env.find("PATH"); it != w.env.end()) path_env = it->second;
    else if (const char* p = std::getenv("PATH")) path_env = p;
    std::string resolved;
    if (prog.find('/') != std::string::npos) {
      struct stat st{};
      if (::stat(prog.c_str(), &st) != 0)
        throw error_at(pos(0), sc, "workload.command", "no such file: " + prog);
      if (!S_ISREG(st.st_mode) || ::access(prog.c_str(), X_OK) != 0)
        throw error_at(pos(0), sc, "workload.command", "not an executable file: " + prog);
      resolved = prog;
    } else {
      resolved = find_on_path(prog, path_env);
      if (resolved.empty())
        throw error_at(pos(0), sc, "workload.command", "program '" + prog + "' not found on PATH (" + path_env + ")");
    }
    const std::string base = fs::path(resolved).filename().string();
    if (is_script_interpreter(base)) {
      for (size_t i = 1; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a == "-m" || a == "-c" || a == "-" || a == "-e" || a == "--eval") break;  // no script file
        if (a.size() > 1 && a[0] == '-') {
          if (option_takes_value(base, a)) ++i;
          continue;
        }
        struct stat st{};
        if (::stat(a.c_str(), &st) != 0)
          throw error_at(pos(i), sc, "workload.command", base + " script not found: " + a);
        if (S_ISDIR(st.st_mode) && base.rfind("python", 0) != 0)
          throw error_at(pos(i), sc, "workload.command", base + " script is a directory: " + a);
        if (::access(a.c_str(), R_OK) != 0)
          throw error_at(pos(i), sc, "workload.command", base + " script not readable: " + a);
        break;
      }
    }
  } else if (w.name == "mpi_ddp" && (w.launcher == "torchrun" || w.launcher == "srun")) {
    throw error_at(w.launcher_pos, sc, "workload.launcher",
                   "mpi_ddp forms its world under mpirun only (under " + w.launcher +
                       " each rank would be an MPI singleton)");
  } else if (w.name == "mpi_ddp" && w.launcher == "local" && w.world_size > 1) {
    throw error_at(w.launcher_pos, sc, "workload.launcher",
                   "mpi_ddp runs several ranks only under launcher = \"mpirun\" (world_size is " +
                       std::to_string(w.world_size) + "; under local each rank would be an MPI singleton)");
  }
  // The supervisor holds ~4 descriptors per rank (stdout/stderr pipes and logs) plus a
  // few of its own; raise the soft limit to the hard one if that is what it takes.
  const rlim_t need = static_cast<rlim_t>(w.world_size) * 4 + 64;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
      throw error_at(w.world_size_pos, sc, "workload.world_size",
                     "world_size " + std::to_string(w.world_size) + " needs ~" + std::to_string(need) +
                         " open files; this process may open at most " + std::to_string(rl.rlim_max) +
                         " (ulimit -n)");
    rl.rlim_cur = need;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace hanglab
