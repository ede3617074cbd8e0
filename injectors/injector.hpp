// The injector interface: one fault kind per file in injectors/, one line per kind in
// registry.cpp. The harness owns *when* (the trigger of the [[fault]] table: at_step,
// at_s, or from launch) and *which ranks*; an injector owns *what* happens.
//
// Lifecycle, all called by the runner on the supervisor's thread:
//   configure(spec, file)       while loading the scenario, before anything runs; reads the
//                               injector's own keys of the [[fault]] table and throws
//                               ConfigError (file:line:col, key) for unknown or bad ones.
//   adapt(ctx)                  right after configure, still before anything runs: the
//                               injector states what it needs of the workload (loader
//                               workers, a checkpoint, a step to trigger at, the built-in
//                               training loop's hooks) and either arranges it (a default
//                               [workload.args] value, a default trigger) or refuses with a
//                               ConfigError naming why the fault could not do what its
//                               name says. Returns one line per arrangement, for the record.
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
//   manifested(run)             after revert, on every run that launched: was the fault
//                               *exercised* — did it fire AND was its effect observed (the
//                               rank died of the signal, a write was refused, the rank's
//                               trace reports the skipped collective...)? Judged from the
//                               run's facts and the injector's own counters; never throws.
//                               A fault that did not manifest fails the run's verdict
//                               unless the scenario says `[expect] fault_manifests = false`.
// In-process injectors (hooks read by workloads/common) have no fire(): the rank reports
// the moment the hook acted as a trace `fault` event, which the supervisor records.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario/run_facts.hpp"
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
  // A fault sent `signo` to the rank (kill_rank, kill_node): its death by that signal is
  // the fault's, never a launcher's teardown reacting to an earlier failure.
  virtual void fault_signalled(int /*rank*/, int /*signo*/) {}
};

// The nodes of a [topology] nodes > 1 run (run/nodes.hpp implements it): one network
// namespace per node, eth0 on a bridge hanglab created, the store on node 0's address.
// What network and node faults act on; injectors never create or remove the nodes.
class NodeNetView {
 public:
  virtual ~NodeNetView() = default;
  virtual int nodes() const = 0;
  virtual int node_of(int rank) const = 0;
  virtual std::vector<int> ranks_of(int node) const = 0;
  virtual std::string ns(int node) const = 0;         // the node's network namespace (ip netns)
  virtual std::string name(int node) const = 0;       // node0, node1, ... (its host name in records)
  // The argv prefix that runs a command in the node: `ip netns exec NS`.
  virtual std::vector<std::string> wrapper(int node) const = 0;
  virtual std::string addr(int node) const = 0;       // its eth0 address (no prefix length)
  virtual std::string subnet() const = 0;             // the bridge's subnet, CIDR
  virtual std::string host_link(int node) const = 0;  // the bridge side of its eth0 (this namespace)
  virtual int master_port() const = 0;                // the store's port (on node 0's address)
  virtual bool netem() const = 0;                     // the kernel has sch_netem
  // Runs argv inside the node's namespace (ip netns exec); node < 0: in this namespace.
  // Throws std::runtime_error with the command and its output when it fails.
  virtual std::string run(int node, const std::vector<std::string>& argv) const = 0;
};

struct KeyDoc {
  std::string key;
  std::string type;          // int | float | bool | string | [int] | signal name
  // The default, parsed per `type`; "(...)" describes a default the injector derives
  // (from the workload, another key); "" only together with required_reason.
  std::string default_value;
  std::string doc;           // one line, with the unit
  std::string required_reason = {};  // non-empty: no sensible default exists, because...
};

// What adapt() sees of the scenario and of its workload.
struct AdaptContext {
  Scenario& scenario;        // adapt may add [workload.args] (set_default_arg)
  const FaultSpec& spec;     // this fault's table, for error positions
  std::string file;
  bool builtin = false;      // a built-in workload (not a bring-your-own command)
  bool training_loop = false;  // its training loop honours HANGLAB_HOOKS (workloads/common)
  // The built-in workload's [workload.args] with their defaults (empty for bring-your-own).
  std::map<std::string, std::string> arg_defaults;
  bool has_arg(const std::string& name) const { return arg_defaults.count(name) > 0; }
  // The scenario's value of a [workload.args] key, else the workload's default, else "".
  std::string arg(const std::string& name) const;
  bool arg_given(const std::string& name) const;
  // Adds `name = value` when the scenario does not set it; returns the record line.
  std::string set_default_arg(const std::string& name, const std::string& value, const std::string& why);
  // The scenario opted out of the manifestation check (`[expect] fault_manifests = false`):
  // it deliberately runs a fault that cannot show, so adapt refuses nothing for that.
  bool expects_no_effect() const;
  // A ConfigError at this fault's table (or its `key` node when present).
  ConfigError refuse(const std::string& key, const std::string& msg) const;
};

// What manifested() can see of a finished run.
struct RunFactsView {
  const RunFacts& facts;
  std::filesystem::path run_dir;  // empty in unit tests without one
  int world_size = 0;
  // ranks/<r>/events.jsonl, parsed; empty for a rank without a trace.
  std::vector<std::vector<nlohmann::json>> traces;

  const RankExit* exit_of(int rank) const;
  // The rank's trace events of type `ev` (e.g. "fault", "error", "start").
  std::vector<const nlohmann::json*> events(int rank, const std::string& ev) const;
  // Whether the rank's trace has a `phase` event `name` with `edge`.
  bool has_phase(int rank, const std::string& name, const std::string& edge) const;
  // The first line of ranks/<r>/stdout.log or stderr.log (or a trace `error` msg)
  // containing `needle`, or "".
  std::string log_line(int rank, const std::string& needle) const;
  // Time of the rank's first trace event relative to launch, or nullopt.
  std::optional<double> first_event_after_launch_s(int rank) const;
  // Reads ranks/<r>/events.jsonl of every rank under run_dir.
  static std::vector<std::vector<nlohmann::json>> read_traces(const std::filesystem::path& run_dir, int world_size);
};

// The judgment of one fault: exercised = it fired and its effect was observed.
struct Manifest {
  bool exercised = false;
  std::string evidence;  // what showed the effect, or why the fault left no trace
};

class Injector {
 public:
  virtual ~Injector() = default;
  virtual void configure(const FaultSpec& spec, const std::string& file) = 0;
  // See the lifecycle above. The default needs nothing of the workload.
  virtual std::vector<std::string> adapt(AdaptContext& /*ctx*/) { return {}; }
  virtual std::string unsupported_reason(const HostInfo&) const { return {}; }
  virtual void prepare_rank(int /*rank*/, LaunchSpec& /*spec*/) {}
  virtual bool in_process() const { return false; }
  // For in-process injectors: the hook kind the rank reports in its trace `fault` events.
  virtual std::string hook_kind() const { return {}; }
  // [topology] nodes > 1 only: called once the nodes exist, before any rank is prepared,
  // for what must hold before the first packet (an MTU, a filter in force from launch).
  virtual void prepare_nodes(const NodeNetView& /*net*/) {}
  virtual std::string fire(Job& /*job*/) { return {}; }
  // Returns a non-empty detail when it acted (logged to harness.jsonl as `fault_tick`).
  virtual std::string tick(Job& /*job*/, double /*since_fire_s*/) { return {}; }
  virtual void revert(Job& /*job*/) {}
  // See the lifecycle above. Every injector judges its own effect (no default: a fault
  // that cannot say whether it did anything is the bug this exists to prevent).
  virtual Manifest manifested(const RunFactsView& run) const = 0;

  // The run's state file (run/state.hpp), set by the runner before prepare_rank; null
  // where no run owns the injector (unit tests). Whatever an injector creates outside the
  // ranks' own processes (a cgroup, a mount, a helper process) is written there *before*
  // it is created and marked released by revert(), so that the next hanglab can undo it
  // when this one is killed with SIGKILL.
  void attach_state(RunState* state) { state_ = state; }
  RunState* state() const { return state_; }
  // The run's nodes ([topology] nodes > 1), set by the runner before prepare_nodes; null otherwise.
  void attach_nodes(const NodeNetView* net) { nodes_ = net; }
  const NodeNetView* nodes() const { return nodes_; }

 private:
  RunState* state_ = nullptr;
  const NodeNetView* nodes_ = nullptr;
};

struct InjectorInfo {
  std::string kind;
  std::string summary;      // one line for `hanglab list`
  std::string mechanism;    // how it acts, for `hanglab describe`
  std::vector<KeyDoc> keys; // kind-specific keys (kind/ranks/at_step/at_s are common)
  std::function<std::unique_ptr<Injector>()> make;
  // When it acts without at_step/at_s, for `hanglab describe`.
  std::string default_trigger = "from launch";
};

// The explicit registry list (registry.cpp). Order = order in `hanglab list`.
const std::vector<InjectorInfo>& injector_registry();
const InjectorInfo* find_injector(const std::string& kind);

// Helper processes an injector forks (a FUSE daemon, a port holder) belong to it: the
// supervisor's sweep of stray children leaves them to the injector's revert().
void register_helper_process(pid_t pid);
bool is_helper_process(pid_t pid);

// The checks every fault gets before adapt(): a trigger that can come (at_s before
// deadline_s; at_step within steps, which load_scenario checks too, kept here for
// scenarios assembled in code). Throws ConfigError.
void check_trigger_reachable(const AdaptContext& ctx);

// Helper for configure(): rejects keys of the [[fault]] table that are neither common
// (kind, ranks, at_step, at_s) nor listed in `keys`.
void reject_unknown_keys(const FaultSpec& spec, const std::string& file, const std::vector<KeyDoc>& keys);

}  // namespace hanglab
