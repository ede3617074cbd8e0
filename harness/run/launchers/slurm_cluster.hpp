// A private single-host Slurm cluster for one run (launcher = "srun"): slurmctld and one
// slurmd on this host, configured by a slurm.conf of the run's own (<run dir>/slurm/), on
// two ports leased like the rendezvous port (run/port_lease.hpp), so parallel runs each
// have a cluster of their own. The runner starts it before the supervisor execs srun and
// stops it after every rank is gone, on every path (the destructor stops it too).
//
// Nothing outlives a run, even a SIGKILLed hanglab: each daemon is recorded in the run
// state (RunState::process) before it execs, dies with hanglab (PR_SET_PDEATHSIG), and
// runs in a cgroup of its own (hanglab-slurm-*, recorded before mkdir), which every
// slurmstepd slurmd forks (a daemon of its own session, not in any group of ours, its
// environment cleared) inherits: the sweep kills what is left in that cgroup. Without a
// usable cgroup hierarchy the daemons are still recorded, and stop() finds the step
// daemons by the log file they hold open; describe() says which. slurmd's spool (a short
// temp dir, /tmp/hanglab-slurmd-<hanglab pid>-*) of a SIGKILLed hanglab is removed by the
// next cluster started on the host.
//
// Slurm 22.05 (Debian 12) still ships auth/none and cred/none: the cluster needs no munged
// and no key. Newer Slurm (23.11+) removed auth/none; there this would need auth/slurm or
// munge (slurm_unsupported_reason() names the missing plugin).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

class RunState;
class PortLease;
class OwnedCgroup;

// The cluster's folder in a run directory: slurm.conf, the daemons' logs, slurmctld's state.
std::filesystem::path slurm_cluster_dir(const std::filesystem::path& run_dir);

struct SlurmConfInput {
  std::string node_name;             // this host's name (what slurmd calls itself)
  int cpus = 1;                      // the node's CPUs: one per rank (config_overrides)
  int slurmctld_port = 0, slurmd_port = 0;
  std::filesystem::path dir;         // logs, pid files, StateSaveLocation
  std::filesystem::path spool_dir;   // SlurmdSpoolDir: short (slurmstepd's unix sockets live there)
  std::string plugin_dir;            // PluginDir; empty = Slurm's default
  int kill_wait_s = 5;               // KillWait: SIGTERM -> SIGKILL at a time limit or scancel
};
// The slurm.conf text: auth/none, proctrack/linuxproc, task/none, select/cons_tres CR_CPU,
// one node, one default partition, no accounting.
std::string slurm_conf_text(const SlurmConfInput& in);

// Empty when a cluster can be started here, else why not (the scenario is skipped):
// root, slurmctld/slurmd/srun/sinfo on PATH, the auth/none plugin.
std::string slurm_unsupported_reason();

class SlurmCluster {
 public:
  // Writes slurm.conf, starts both daemons and waits (at most ready_timeout_s) until the
  // node is idle. Throws std::runtime_error with the daemons' last log lines on failure,
  // after stopping what it started.
  SlurmCluster(const std::filesystem::path& run_dir, int cpus, RunState* state, double ready_timeout_s = 30);
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::filesystem::path& conf() const { return conf_; }
  const std::string& node_name() const { return node_; }
  // Seconds from the first fork to an idle node.
  double start_s() const { return start_s_; }
  // SIGTERM to both daemons, then SIGKILL to whatever is left (slurmstepd and its tasks
  // included) after a short grace; the cgroup and spool removed. Idempotent.
  void stop();
  // For harness.jsonl and run.json: ports, conf, pids, cgroup, start time.
  nlohmann::json describe() const;

 private:
  pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& out, const std::string& what);
  void wait_ready(double timeout_s);
  std::vector<pid_t> leftovers() const;
  std::string log_tails() const;

  std::filesystem::path dir_, conf_, spool_;
  std::string node_;
  int cpus_ = 1;
  RunState* state_ = nullptr;
  std::unique_ptr<PortLease> ctld_port_, slurmd_port_;
  std::unique_ptr<OwnedCgroup> cgroup_;
  std::string cgroup_note_;
  struct Daemon {
    std::string what;
    pid_t pid = 0;
    unsigned long long start = 0;
    int state_id = 0;
  };
  std::vector<Daemon> daemons_;
  double start_s_ = 0;
  bool stopped_ = false;
};

}  // namespace hanglab
