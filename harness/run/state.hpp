// The run state file: what a run created outside its run directory, written down before
// it is created, so that what a harness killed with SIGKILL (or crashed) left behind can
// be reverted by the next hanglab. The runner owns one RunState per run; the supervisor
// records the rank processes it forks, injectors record their cgroups, mounts and helper
// processes (Injector::state()).
//
// Format: <state dir>/<owner pid>-<owner start time>-<seq>.jsonl, one JSON object per line,
// each appended with a single write(2) on an O_APPEND fd (no fsync: the owner being
// SIGKILLed loses nothing already written; only a machine crash could, and a reboot
// clears cgroups, mounts and processes anyway). Lines:
//   {"op":"begin", "pid", "start", "scenario", "run_dir", "t"}
//   {"op":"cgroup", "id", "path"}                       before mkdir(2)
//   {"op":"mount", "id", "path", "fstype"}              before the mount is made
//   {"op":"process", "id", "pid", "start", "pgid", "what"}  right after fork(2)
//   {"op":"env", "id", "key", "value"}                  processes whose environment holds key=value
//   {"op":"netns", "id", "name"}                        before `ip netns add NAME` (a [topology] node)
//   {"op":"netdev", "id", "name"}                       before a bridge or veth is created in this namespace
//   {"op":"released", "id"}                             the normal revert undid entry id
// While the owner lives it holds a POSIX write lock (fcntl F_SETLK) on the file; such a
// lock is not inherited by fork and dies with the process, so a surviving helper cannot
// make a dead run look alive. At the end of a normal run the file is removed when every
// cgroup and mount was released (the supervisor guarantees no process outlives a run);
// otherwise it stays for the sweep.
//
// The directory: $HANGLAB_STATE_DIR, else /run/hanglab for root, else
// $XDG_RUNTIME_DIR/hanglab, else /tmp/hanglab-<uid>.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <sys/types.h>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

std::filesystem::path state_dir();

class RunState {
 public:
  // Creates and locks a new state file for one run. Throws std::runtime_error (with the
  // syscall and errno) when the state directory cannot be created or written.
  static std::unique_ptr<RunState> create(const std::string& scenario, const std::filesystem::path& run_dir);
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  // Each returns the entry's id, for released(). Called BEFORE the resource exists
  // (processes: right after fork, before anything waits on the child; a child forked
  // with PR_SET_PDEATHSIG cannot outlive a harness killed in between).
  int cgroup(const std::filesystem::path& dir);
  int mount(const std::string& mount_point, const std::string& fs_type);
  // `pid` (with its start time from /proc/PID/stat, so a reused pid is never killed);
  // when it leads its process group the sweep kills the whole group.
  int process(pid_t pid, const std::string& what);
  // Every process whose environment holds key=value (a rank's descendants inherit it).
  int env_marker(const std::string& key, const std::string& value);
  // A named network namespace (hanglab-*) and an interface of this namespace (hl*): the
  // sweep deletes them after the processes (deleting a node's namespace removes its veths).
  int netns(const std::string& name);
  int netdev(const std::string& name);
  void released(int id);

  // The run ended normally and was reverted: remove the file if nothing but processes is
  // left unreleased, else keep it (with the lock released at exit) for the next sweep.
  void close();
  const std::filesystem::path& path() const { return path_; }

 private:
  RunState() = default;
  int append(nlohmann::json entry);

  std::filesystem::path path_;
  int fd_ = -1;
  int next_id_ = 1;
  std::vector<int> open_ids_;  // cgroup and mount entries not yet released
};

// What the sweep did with one dead run's state file.
struct SweepResult {
  std::filesystem::path file;
  pid_t owner = 0;
  std::string scenario;
  double last_write = 0;              // Unix time of the owner's last entry
  int processes = 0, cgroups = 0, mounts = 0, netns = 0, netdevs = 0;
  std::vector<std::string> problems;  // what could not be reverted (the file is kept)
  std::string line() const;           // the one line printed for it
};

// Reverts what every dead hanglab left (each state file whose owner is gone and whose
// lock can be taken), in reverse order: processes (by pid + start time, their process
// groups, and processes carrying the run's environment marker), then mounts (lazily),
// then cgroups (their remaining tasks killed, then rmdir), then network namespaces and
// interfaces (`ip netns delete`, `ip link delete`). A live run's file is never
// touched. Prints SweepResult::line() to `out` for each swept run when `out` is given.
std::vector<SweepResult> sweep_dead_runs(std::ostream* out);

}  // namespace hanglab
