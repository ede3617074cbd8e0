// The injector interface: one fault kind per file in injectors/, one line per kind in
// registry.cpp. The harness owns *when* (the trigger of the [[fault]] table: at_step,
// at_s, or from launch) and *which ranks*; an injector owns *what* happens.
//
// Lifecycle, all called by the runner on the supervisor's thread:
//   configure(spec, file)       while loading the scenario, before anything runs; reads the
//                               injector's own keys of the [[fault]] table and throws
//                               ConfigError (file:line:col, key) for unknown or bad ones.
//   unsupported_reason(host)    before launch; non-empty = the scenario is reported skipped.
//   prepare_rank(rank, spec)    before each targeted rank is exec'd: env, argv wrapper,
//                               in-process hooks. Exceptions abort the run before launch.
//   fire(job)                   when the trigger is due (runtime injectors only); returns a
//                               one-line detail for harness.jsonl.
//   tick(job, since_fire_s)     on every supervisor tick after fire(), while ranks run: for
//                               faults with a duration or a duty cycle (SIGCONT after N s).
//   revert(job)                 always, exactly once per run, on every path (normal end,
//                               harness error, Ctrl-C), even if fire never ran; must be
//                               idempotent and must only undo what this injector created.
// In-process injectors (hooks read by workloads/common) have no fire(): the rank reports
// the moment the hook acted as a trace `fault` event, which the supervisor records.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario/scenario.hpp"

namespace hanglab {

class RunState;  // run/state.hpp

// Facts about this host that decide whether a fault can be injected here.
struct HostInfo {
  bool is_root = false;
  bool cgroup_v2 = false;          // unified hierarchy mounted at /sys/fs/cgroup
  bool cgroup_v1_cpu = false;      // writable /sys/fs/cgroup/cpu
  bool cgroup_v1_memory = false;   // writable /sys/fs/cgroup/memory
  bool mount_namespaces = false;   // unshare(CLONE_NEWNS) works
  bool fuse = false;               // /dev/fuse exists
  bool gpu = false;                // an NVIDIA GPU device node exists
};
HostInfo detect_host();

// How one rank will be started; prepare_rank may change any of it.
struct LaunchSpec {
  int rank = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to / overriding the inherited environment
  nlohmann::json hooks = nlohmann::json::array();  // in-process hooks -> HANGLAB_HOOKS
  std::vector<std::string> wrapper;        // prepended to argv (e.g. a namespace helper)
};

// What a firing injector can see and touch of the running job.
class Job {
 public:
  virtual ~Job() = default;
  virtual int world_size() const = 0;
  virtual pid_t pid_of(int rank) const = 0;   // 0 when not launched
  virtual bool alive(int rank) const = 0;     // launched and not yet reaped
  virtual std::string run_dir() const = 0;
};

struct KeyDoc {
  std::string key;
  std::string type;          // int | float | bool | string | [int] | signal name
  std::string default_value; // "" = required
  std::string doc;           // one line, with the unit
};

class Injector {
 public:
  virtual ~Injector() = default;
  virtual void configure(const FaultSpec& spec, const std::string& file) = 0;
  virtual std::string unsupported_reason(const HostInfo&) const { return {}; }
  virtual void prepare_rank(int /*rank*/, LaunchSpec& /*spec*/) {}
  virtual bool in_process() const { return false; }
  // For in-process injectors: the hook kind the rank reports in its trace `fault` events.
  virtual std::string hook_kind() const { return {}; }
  virtual std::string fire(Job& /*job*/) { return {}; }
  // Returns a non-empty detail when it acted (logged to harness.jsonl as `fault_tick`).
  virtual std::string tick(Job& /*job*/, double /*since_fire_s*/) { return {}; }
  virtual void revert(Job& /*job*/) {}

  // The run's state file (run/state.hpp), set by the runner before prepare_rank; null
  // where no run owns the injector (unit tests). Whatever an injector creates outside the
  // ranks' own processes (a cgroup, a mount, a helper process) is written there *before*
  // it is created and marked released by revert(), so that the next hanglab can undo it
  // when this one is killed with SIGKILL.
  void attach_state(RunState* state) { state_ = state; }
  RunState* state() const { return state_; }

 private:
  RunState* state_ = nullptr;
};

struct InjectorInfo {
  std::string kind;
  std::string summary;      // one line for `hanglab list`
  std::string mechanism;    // how it acts, for `hanglab describe`
  std::vector<KeyDoc> keys; // kind-specific keys (kind/ranks/at_step/at_s are common)
  std::function<std::unique_ptr<Injector>()> make;
};

// The explicit registry list (registry.cpp). Order = order in `hanglab list`.
const std::vector<InjectorInfo>& injector_registry();
const InjectorInfo* find_injector(const std::string& kind);

// Helper processes an injector forks (a FUSE daemon, a port holder) belong to it: the
// supervisor's sweep of stray children leaves them to the injector's revert().
void register_helper_process(pid_t pid);
bool is_helper_process(pid_t pid);

// Helper for configure(): rejects keys of the [[fault]] table that are neither common
// (kind, ranks, at_step, at_s) nor listed in `keys`.
void reject_unknown_keys(const FaultSpec& spec, const std::string& file, const std::vector<KeyDoc>& keys);

}  // namespace hanglab
