// The run's private Slurm cluster (see slurm_cluster.hpp).
#include "run/launchers/slurm_cluster.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "injector.hpp"
#include "process_control.hpp"
#include "run/port_lease.hpp"
#include "run/state.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path slurm_cluster_dir(const fs::path& run_dir) { return fs::absolute(run_dir) / "slurm"; }

std::string slurm_conf_text(const SlurmConfInput& in) {
  const std::string d = in.dir.string();
  std::string s;
  s += "# Written by hanglab for one run: a private single-host cluster (launcher = \"srun\").\n";
  s += "ClusterName=hanglab\n";
  s += fmt::format("SlurmctldHost={}(127.0.0.1)\n", in.node_name);
  s += fmt::format("SlurmctldPort={}\nSlurmdPort={}\n", in.slurmctld_port, in.slurmd_port);
  s += "SlurmUser=root\nSlurmdUser=root\n";
  // No munged: Slurm 22.05 still has the none plugins (removed in 23.11).
  s += "AuthType=auth/none\nCredType=cred/none\n";
  s += fmt::format("StateSaveLocation={}/state\nSlurmdSpoolDir={}\n", d, in.spool_dir.string());
  s += fmt::format("SlurmctldPidFile={0}/slurmctld.pid\nSlurmdPidFile={0}/slurmd.pid\n", d);
  s += fmt::format("SlurmctldLogFile={0}/slurmctld.log\nSlurmdLogFile={0}/slurmd.log\n", d);
  s += "SlurmctldDebug=info\nSlurmdDebug=info\n";
  if (!in.plugin_dir.empty()) s += "PluginDir=" + in.plugin_dir + "\n";
  s += fmt::format("PlugStackConfig={}/plugstack.conf\n", d);
  // Tasks stay in the cgroup slurmd runs in (ours): no cgroup plugin moves them.
  s += "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n";
  s += "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/builtin\n";
  s += "MpiDefault=none\nJobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n";
  s += "ReturnToService=2\nMailProg=/bin/true\n";
  // The node has as many CPUs as the run has ranks, whatever the host has.
  s += "SlurmdParameters=config_overrides\n";
  s += fmt::format("KillWait={}\n", in.kill_wait_s);
  s += fmt::format("NodeName={} NodeAddr=127.0.0.1 CPUs={} State=UNKNOWN\n", in.node_name, in.cpus);
  s += fmt::format("PartitionName=hanglab Nodes={} Default=YES MaxTime=INFINITE State=UP\n", in.node_name);
  return s;
}

namespace {

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::istringstream ss(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty() && ::access((fs::path(dir) / tool).c_str(), X_OK) == 0) return true;
  return false;
}

const std::vector<fs::path>& plugin_dirs() {
  static const std::vector<fs::path> dirs = {"/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm",
                                             "/usr/lib64/slurm", "/usr/lib/slurm", "/usr/local/lib/slurm"};
  return dirs;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !*buf) return "localhost";
  std::string h = buf;
  // slurmd names itself by the short host name.
  if (auto dot = h.find('.'); dot != std::string::npos) h.resize(dot);
  return h;
}

// The cgroup the daemons run in: any hierarchy where a process's membership is inherited
// (v2, else v1 pids), created under hanglab's own group there.
std::unique_ptr<OwnedCgroup> make_cgroup(RunState* state, std::string& note) {
  const char* env = std::getenv("HANGLAB_CGROUP_ROOT");
  const fs::path root = env && *env ? env : "/sys/fs/cgroup";
  std::error_code ec;
  CgroupMount m;
  if (fs::exists(root / "cgroup.controllers", ec)) {
    m = {true, root, ""};
  } else if (fs::exists(root / "pids" / "cgroup.procs", ec)) {
    m = {false, root / "pids", "pids"};
  } else {
    note = "no cgroup v2 at " + root.string() + " and no v1 pids hierarchy";
    return nullptr;
  }
  const std::string parent = cgroup_path_of(0, m);
  if (parent.empty()) {
    note = "cannot read this process's cgroup";
    return nullptr;
  }
  static std::atomic<int> seq{0};
  auto cg = std::make_unique<OwnedCgroup>(m, parent, fmt::format("hanglab-slurm-{}-{}", ::getpid(), seq++));
  try {
    cg->create("the Slurm cluster's cgroup", state);
  } catch (const std::exception& e) {
    note = e.what();
    return nullptr;
  }
  return cg;
}

std::string tail_lines(const fs::path& p, size_t n) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += "  " + lines[i] + "\n";
  return out;
}

}  // namespace

std::string slurm_unsupported_reason() {
  if (::geteuid() != 0) return "launcher srun: the private Slurm cluster (slurmctld, slurmd) needs root";
  for (const char* tool : {"slurmctld", "slurmd", "srun", "sinfo"})
    if (!on_path(tool))
      return fmt::format("launcher srun: `{}` is not on PATH (install slurmctld, slurmd and slurm-client: "
                         "ci/install-deps.sh)",
                         tool);
  bool any_dir = false;
  for (const auto& d : plugin_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    any_dir = true;
    if (fs::exists(d / "auth_none.so", ec)) return {};
  }
  if (any_dir)
    return "launcher srun: this Slurm has no auth/none plugin (removed in Slurm 23.11); hanglab's private cluster "
           "runs without munge only on Slurm <= 23.02 (Debian 12 ships 22.05)";
  return {};
}

SlurmCluster::SlurmCluster(const fs::path& run_dir, int cpus, RunState* state, double ready_timeout_s)
    : dir_(slurm_cluster_dir(run_dir)), node_(host_name()), cpus_(std::max(1, cpus)), state_(state) {
  const double t0 = mono_now();
  fs::create_directories(dir_ / "state");
  // slurmstepd listens on <spool>/<node>_<job>.<step>: a unix socket path, at most 107
  // bytes, which a deep run directory could exceed.
  // Named after this hanglab: the spool of a SIGKILLed one (no process uses it once the
  // sweep ran) is removed by the next cluster started here.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = e.path().filename().string();
    long owner = 0;
    if (name.rfind("hanglab-slurmd-", 0) != 0 || sscanf(name.c_str(), "hanglab-slurmd-%ld-", &owner) != 1 ||
        owner <= 0 || owner == ::getpid())
      continue;
    if (::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
  }
  std::string tmpl = (fs::temp_directory_path() / fmt::format("hanglab-slurmd-{}-XXXXXX", ::getpid())).string();
  if (!::mkdtemp(tmpl.data())) throw_system_error("mkdtemp", tmpl);
  spool_ = tmpl;
  ctld_port_ = std::make_unique<PortLease>();
  slurmd_port_ = std::make_unique<PortLease>();
  SlurmConfInput in;
  in.node_name = node_;
  in.cpus = cpus_;
  in.slurmctld_port = ctld_port_->port();
  in.slurmd_port = slurmd_port_->port();
  in.dir = dir_;
  in.spool_dir = spool_;
  conf_ = dir_ / "slurm.conf";
  write_file(conf_, slurm_conf_text(in));
  write_file(dir_ / "plugstack.conf", "");
  cgroup_ = make_cgroup(state_, cgroup_note_);
  try {
    // The ports are ours until the daemons bind them: the leases hold only the lock, not
    // the port, so nothing else of ours will take them meanwhile.
    spawn({"slurmctld", "-D", "-i", "-f", conf_.string()}, dir_ / "slurmctld.out", "slurmctld");
    spawn({"slurmd", "-D", "-f", conf_.string()}, dir_ / "slurmd.out", "slurmd");
    wait_ready(ready_timeout_s);
  } catch (...) {
    stop();
    throw;
  }
  start_s_ = mono_now() - t0;
}

SlurmCluster::~SlurmCluster() {
  try {
    stop();
  } catch (...) {
  }
}

pid_t SlurmCluster::spawn(const std::vector<std::string>& argv, const fs::path& out, const std::string& what) {
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::string conf_env = "SLURM_CONF=" + conf_.string();
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) throw_system_error("pipe2", "starting " + what);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    ::close(go[0]), ::close(go[1]);
    throw_system_error("open", out.string());
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(go[0]), ::close(go[1]), ::close(out_fd);
    throw_system_error("fork", "starting " + what);
  }
  if (pid == 0) {
    // Async-signal-safe only. Its own process group (Ctrl-C reaches hanglab alone), dies
    // with hanglab, and waits for the parent to record it and move it into the cgroup
    // before it execs, so nothing it forks escapes either.
    child_after_fork(parent);
    ::close(go[1]);
    char c = 0;
    if (::read(go[0], &c, 1) != 1 || c != 'g') _exit(127);
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    ::syscall(SYS_close_range, 3u, ~0u, 0u);
    ::putenv(const_cast<char*>(conf_env.c_str()));
    ::execvp(cargv[0], cargv.data());
    _exit(127);
  }
  ::close(go[0]);
  ::close(out_fd);
  ::setpgid(pid, pid);
  // Not a stray for the supervisor's end-of-run sweep of its children: stop() ends it.
  register_helper_process(pid);
  Daemon d{what, pid, process_start_time(pid), 0};
  if (state_) d.state_id = state_->process(pid, "Slurm " + what);
  daemons_.push_back(d);
  std::string problem;
  if (cgroup_) {
    try {
      cgroup_->add_process(pid, "moving " + what + " into the cluster's cgroup");
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  const char g = problem.empty() ? 'g' : 'x';
  (void)!::write(go[1], &g, 1);
  ::close(go[1]);
  if (!problem.empty()) throw std::runtime_error(problem);
  return pid;
}

void SlurmCluster::wait_ready(double timeout_s) {
  const double end = mono_now() + timeout_s;
  std::string last;
  for (;;) {
    for (const auto& d : daemons_)
      if (process_start_time(d.pid) != d.start || process_state(d.pid) == 'Z')
        throw std::runtime_error(fmt::format("Slurm {} exited while starting (conf {}):\n{}", d.what, conf_.string(),
                                             log_tails()));
    // %t: the compact state, "idle*" while slurmd has not registered (not responding).
    ToolResult r = run_tool({"env", "SLURM_CONF=" + conf_.string(), "sinfo", "-h", "-N", "-o", "%t"});
    last = r.output;
    while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
    if (r.ok() && last == "idle") return;
    if (mono_now() > end)
      throw std::runtime_error(fmt::format("the Slurm node did not become idle within {:.0f} s (sinfo: '{}'; conf {}):\n{}",
                                           timeout_s, last, conf_.string(), log_tails()));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string SlurmCluster::log_tails() const {
  std::string s;
  for (const char* f : {"slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"})
    if (auto t = tail_lines(dir_ / f, 6); !t.empty()) s += std::string(f) + ":\n" + t;
  return s;
}

std::vector<pid_t> SlurmCluster::leftovers() const {
  std::vector<pid_t> out;
  if (cgroup_ && cgroup_->exists()) {
    std::istringstream ss(cgroup_->read("cgroup.procs").value_or(""));
    for (long p; ss >> p;)
      if (p > 0 && p != ::getpid()) out.push_back(static_cast<pid_t>(p));
    return out;
  }
  // No cgroup: the daemons, and every process holding slurmd.log open (slurmstepd logs there).
  for (const auto& d : daemons_)
    if (process_start_time(d.pid) == d.start) out.push_back(d.pid);
  const fs::path log = dir_ / "slurmd.log";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::error_code ec2;
    for (const auto& fd : fs::directory_iterator(e.path() / "fd", ec2)) {
      std::error_code ec3;
      if (fs::read_symlink(fd.path(), ec3) == log) {
        out.push_back(static_cast<pid_t>(std::atol(name.c_str())));
        break;
      }
    }
  }
  return out;
}

void SlurmCluster::stop() {
  if (stopped_) return;
  stopped_ = true;
  // SIGTERM first: slurmctld saves its state and both write their last log lines.
  for (const auto& d : daemons_)
    if (process_start_time(d.pid) == d.start) ::kill(d.pid, SIGTERM);
  auto daemons_alive = [&] {
    for (const auto& d : daemons_) {
      ::waitpid(d.pid, nullptr, WNOHANG);
      if (process_start_time(d.pid) == d.start && process_state(d.pid) != 'Z') return true;
    }
    return false;
  };
  for (double end = mono_now() + 3; daemons_alive() && mono_now() < end;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Then whatever is left: a daemon that did not stop, slurmstepd, its tasks.
  for (int round = 0; round < 50; ++round) {
    auto left = leftovers();
    for (const auto& d : daemons_) ::waitpid(d.pid, nullptr, WNOHANG);
    if (left.empty()) break;
    for (pid_t p : left) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    // slurmstepd is reparented to hanglab (a subreaper while ranks run): reap what is ours.
    for (pid_t p : left) ::waitpid(p, nullptr, WNOHANG);
  }
  for (auto& d : daemons_) {
    ::waitpid(d.pid, nullptr, WNOHANG);
    if (state_ && d.state_id) state_->released(d.state_id), d.state_id = 0;
  }
  if (cgroup_) {
    if (auto problem = cgroup_->remove(); !problem.empty())
      std::fprintf(stderr, "hanglab: warning: the Slurm cluster's cgroup: %s\n", problem.c_str());
  }
  std::error_code ec;
  if (!spool_.empty()) fs::remove_all(spool_, ec);
}

json SlurmCluster::describe() const {
  json daemons = json::array();
  for (const auto& d : daemons_) daemons.push_back({{"what", d.what}, {"pid", d.pid}});
  return {{"conf", conf_.string()},
          {"node", node_},
          {"cpus", cpus_},
          {"slurmctld_port", ctld_port_ ? ctld_port_->port() : 0},
          {"slurmd_port", slurmd_port_ ? slurmd_port_->port() : 0},
          {"daemons", daemons},
          {"cgroup", cgroup_ ? json(cgroup_->dir().string()) : json(nullptr)},
          {"cgroup_note", cgroup_note_},
          {"start_s", start_s_}};
}

}  // namespace hanglab
