// Process and cgroup control shared by the process/CPU/memory injectors (freeze_rank,
// throttle_cpu, oom_rank): identifying a rank's processes without being fooled by pid
// reuse, signalling a rank, and cgroups that hanglab creates for itself and removes
// again. Only groups made here (named `hanglab-...`) are ever written to or removed;
// existing groups are read (to find where a process lives) and receive back the
// processes that were taken out of them, nothing else.
//
// Cgroup hierarchies are looked up under $HANGLAB_CGROUP_ROOT (default /sys/fs/cgroup):
// the unified v2 hierarchy when <root>/cgroup.controllers exists, else the v1
// hierarchy of one controller at <root>/<controller>. The variable exists for hosts
// that mount cgroups elsewhere and for tests that need the "no cgroup" path.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hanglab {

class RunState;  // run/state.hpp

// ---- processes ----

// Field 22 of /proc/PID/stat (start time in clock ticks since boot); 0 when gone.
unsigned long long process_start_time(pid_t pid);
// Field 3 of /proc/PID/stat ('R', 'S', 'T', 'Z' ...); 0 when gone.
char process_state(pid_t pid);
// utime + stime of the whole process in seconds (all threads, not children).
double process_cpu_seconds(pid_t pid);

// One process of a rank, pinned by its start time so that a recycled pid is never
// signalled or moved by mistake (revert may run long after the rank was reaped).
struct ProcessRef {
  int rank = -1;
  pid_t pid = 0;
  unsigned long long start = 0;
  static ProcessRef of(int rank, pid_t pid) { return {rank, pid, process_start_time(pid)}; }
  bool same_process() const { return pid > 0 && start != 0 && process_start_time(pid) == start; }
};

// The processes of a rank: every member of its process group when the rank leads one
// (the supervisor starts each rank as a group leader, so helpers the rank forked, such
// as a `sh -c` wrapper's child or data-loader workers, count too), else the pid alone.
std::vector<pid_t> rank_processes(pid_t pid);
// Sends `sig` to the rank's process group when it leads one, else to the pid. Returns
// 0 or the errno of kill(2).
int signal_rank(pid_t pid, int sig);

// ---- cgroups ----

struct CgroupMount {
  bool v2 = false;
  std::filesystem::path root;  // the hierarchy's mount point
  std::string controller;      // "cpu" | "memory"
};

// Where `controller` is usable on this host. On failure returns nullopt and sets `why`.
std::optional<CgroupMount> find_cgroup_mount(const std::string& controller, std::string& why);
// The cgroup of `pid` (0 = this process) in that hierarchy, as listed in
// /proc/PID/cgroup ("/" = the root); empty when unreadable.
std::string cgroup_path_of(pid_t pid, const CgroupMount& m);
// A fresh, host-unique group name: hanglab-<harness pid>-<sequence>-rank<r>.
std::string new_cgroup_name(int rank);
// Why a child group cannot be created under `parent_rel`, or "" when it can: the parent
// must be a writable directory and, for v2, already delegate the controller in its
// cgroup.subtree_control (hanglab never enables controllers in groups it did not make).
std::string cgroup_parent_problem(const CgroupMount& m, const std::string& parent_rel);

// A cgroup that hanglab created. Not copyable: exactly one owner removes it.
class OwnedCgroup {
 public:
  OwnedCgroup(CgroupMount mount, std::string parent_rel, std::string name);
  OwnedCgroup(const OwnedCgroup&) = delete;
  OwnedCgroup& operator=(const OwnedCgroup&) = delete;
  OwnedCgroup(OwnedCgroup&&) = default;
  OwnedCgroup& operator=(OwnedCgroup&&) = default;

  // mkdir(2); throws "<context>: mkdir(<dir>) failed: <errno text> (errno N)". With a
  // run state the directory is recorded there first, and released by remove().
  void create(const std::string& context, RunState* state = nullptr);
  bool exists() const;
  const std::filesystem::path& dir() const { return dir_; }
  const std::filesystem::path& parent_dir() const { return parent_dir_; }
  const CgroupMount& mount() const { return mount_; }
  const std::string& name() const { return name_; }
  // Path relative to the hierarchy root, as /proc/PID/cgroup and the kernel log show it.
  std::string rel_path() const;

  // Writes `value` to <dir>/<file> with one write(2); throws with the file and errno.
  void write(const std::string& file, const std::string& value, const std::string& context) const;
  // The contents of <dir>/<file>, or nullopt when unreadable.
  std::optional<std::string> read(const std::string& file) const;
  // Moves a whole process (all of its threads) into the group: cgroup.procs, and on v1
  // kernels that refuse it, every TID of /proc/PID/task into `tasks`. Throws.
  void add_process(pid_t pid, const std::string& context) const;

  // Moves every task still inside back to the parent group (where the processes came
  // from: the group is always made directly under their origin), then removes the
  // directory, retrying while the kernel still counts exiting tasks. Idempotent.
  // Returns "" on success, else what is left and why.
  std::string remove(double timeout_s = 3.0);

 private:
  CgroupMount mount_;
  std::string parent_rel_;
  std::string name_;
  std::filesystem::path parent_dir_;
  std::filesystem::path dir_;
  RunState* state_ = nullptr;
  int state_id_ = 0;
};

}  // namespace hanglab
