// Node-local checks: what one node can tell about itself against the job, without the network,
// each in well under a second (the storage check, which can hang on a dead mount, is
// storage.hpp's and runs in a child). Every check is one function returning CheckResult(s); the
// parsing of kernel and config files is split out into pure functions over text or over a
// filesystem root, so the unit tests feed them made-up hosts.
//
//   shm.capacity    /dev/shm free space against what this job's loaders and NCCL put there
//   shm.removeipc   systemd-logind's RemoveIPC, which deletes a user's shm segments at logout
//   net.ifname      every interface GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME names exists, is up,
//                   has carrier and an address (Gloo and NCCL syntax each as its reader parses it)
//   host.bind       what Gloo binds without GLOO_SOCKET_IFNAME: the host name's address, which
//                   must not be loopback when there is more than one node
//   cpu.quota       CPUs this process may use (affinity, then every cgroup's CFS quota up the tree)
//                   against the ranks (and loader workers) the node will run
//   mem.headroom    MemAvailable and the cgroup memory limit's headroom against the ranks' need
//   limits.nofile   RLIMIT_NOFILE against the sockets and files of the job (Gloo's full mesh)
//   limits.memlock  RLIMIT_MEMLOCK where RDMA devices exist (NCCL pins its buffers)
//   gpu.devices     (backend nccl) NVIDIA device nodes against the ranks per node
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "preflight/job.hpp"
#include "preflight/net_util.hpp"
#include "preflight/result.hpp"

namespace hanglab::preflight {

struct NodeCtx {
  const JobEnv& job;
  const Options& opt;
  std::string host;      // this node's host name
  double t0 = 0;         // monotonic start of this preflight
  std::string root;      // prefix for /proc, /sys, /etc, /dev reads ("" on a real host; tests)
  CheckResult result(const std::string& name) const;  // node, host and at_s filled in
};

// The interface and address the job's backend will use on this node, as Gloo (GLOO_SOCKET_IFNAME,
// else the host name's address) or NCCL (NCCL_SOCKET_IFNAME, else its default: the first
// interface that is not lo or docker*) would pick it. `problem` is set when there is none.
struct ChosenIface {
  std::string var;       // the variable it came from, or "" for the backend's default
  std::string name;      // interface name ("" when none)
  std::string addr;      // numeric address on it ("" when none)
  int mtu = 0;
  std::string problem;
};
ChosenIface choose_interface(const JobEnv& job, const std::vector<Interface>& ifaces, const Resolved& hostname);

// /dev/shm need of the job on one node, in bytes, and the formula as text.
struct ShmNeed {
  double bytes = 0;
  std::string formula;
  bool known = false;  // loader settings given, or NCCL's own share computable
};
ShmNeed shm_need(const JobEnv& job, const Options& opt);

// CPUs this process may use: the affinity count `affinity`, lowered by the CFS quota of every
// cgroup from the process's own up to its hierarchy's root (v1 cpu.cfs_quota_us/cfs_period_us,
// v2 cpu.max), read under `root`. `how` says which limit won.
double effective_cpus(const std::string& root, int affinity, std::string& how);
// Memory headroom under the cgroup limits (v1 memory.limit_in_bytes - usage_in_bytes, v2
// memory.max - memory.current, the tightest up the tree); nullopt without a limit.
std::optional<double> cgroup_memory_headroom(const std::string& root, std::string& how);
// MemAvailable from <root>/proc/meminfo, bytes; nullopt when absent.
std::optional<double> mem_available(const std::string& root);
// RemoveIPC as logind reads it: logind.conf, then drop-ins in lexical order (later wins);
// default yes (systemd >= 212).
bool logind_remove_ipc(const std::string& root, std::string& where);

// All node-local checks but storage, in report order.
std::vector<CheckResult> node_local_checks(const NodeCtx& ctx, const std::vector<Interface>& ifaces,
                                           const Resolved& hostname, const ChosenIface& chosen);

}  // namespace hanglab::preflight
