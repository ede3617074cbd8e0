// What `hanglab preflight` checks against: its options (what the environment does not say) and
// the job as its environment describes it. resolve_job() reads the environment the way the job's
// own launch would: MASTER_ADDR/MASTER_PORT, WORLD_SIZE, the node's rank and the node count from
// whichever launcher started this process (NODE_RANK/NNODES in a job script, torchrun's worker or
// PET_* variables, Slurm's SLURM_PROCID/SLURM_NTASKS under `srun --ntasks-per-node=1`, Open MPI's
// OMPI_COMM_WORLD_* under `mpirun -npernode 1`, a Kubernetes Indexed Job's JOB_COMPLETION_INDEX),
// and the socket interface variables. A malformed value is a UsageError: one line naming the
// variable, exit 2, nothing checked.
//
// Under torchrun (TORCHELASTIC_RUN_ID set: this process is a torchrun worker) the agent on node 0
// already holds MASTER_PORT for its store; preflight then runs on LOCAL_RANK 0 only, reports the
// port as held by the agent, and rendezvous on --port, which it needs (UsageError without it).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace hanglab::preflight {

// Bad input: printed as one line "hanglab preflight: <what>", exit 2, nothing run.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string ckpt_dir;          // --ckpt-dir: the job's checkpoint directory ("" = not checked)
  long long ckpt_bytes = 0;      // --ckpt-bytes: one checkpoint as this node writes it (0 = the probe size)
  double ckpt_budget_s = 300;    // --ckpt-budget-s: a save longer than this stalls the job's peers
  long long ckpt_probe_bytes = 16ll << 20;  // --ckpt-probe-bytes: written + fsynced to measure
  double ckpt_stall_s = 5;       // --ckpt-stall-s: one write or fsync longer than this is a stall
  int ranks_per_node = 0;        // --ranks-per-node (0 = from the environment)
  int loader_workers = -1;       // --loader-workers per rank (-1 = not given)
  long long batch_bytes = -1;    // --batch-bytes: one batch as a worker hands it over (-1 = not given)
  int prefetch = 2;              // --prefetch: batches in flight per worker (torch's prefetch_factor)
  long long mem_per_rank = 512ll << 20;  // --mem-per-rank: resident memory one rank needs
  std::string backend;           // --backend gloo|nccl ("" = gloo)
  int port = 0;                  // --port: rendezvous port when MASTER_PORT is not ours (torchrun)
  double deadline_s = 30;        // --deadline-s: every path ends within it
  int loss_probes = 50;          // --loss-probes per peer (0 = no loss measurement)
  double bandwidth_s = 0;        // --bandwidth-s per peer in a ring (0 = not measured)
  double min_mbps = 0;           // --min-mbps: bandwidth floor (with --bandwidth-s)
  bool smoke = false;            // --smoke: a collective with the job's backend through torch
  std::string python = "python3";  // --python: the job's interpreter (versions, --smoke)
  std::string format = "text";   // --format text|json|junit
  std::string out;               // --out FILE ("{node}" is replaced by the node rank)
};

struct JobEnv {
  std::map<std::string, std::string> env;  // the whole environment, as read
  std::string master_addr;
  int master_port = 0;
  bool master_defaulted = false;  // one node, no MASTER_ADDR/PORT: torch's defaults 127.0.0.1:29500
  int rdzv_port = 0;              // where preflight rendezvous: MASTER_PORT, or --port under torchrun
  int world_size = 1;
  int nnodes = 1;
  int node_rank = 0;
  int ranks_per_node = 1;
  int local_rank = 0;             // under torchrun: this worker's LOCAL_RANK
  bool under_torchrun = false;
  std::string launcher;           // torchrun | torchrun-env | slurm | mpirun | k8s-indexed | env | standalone
  std::string backend = "gloo";
  std::vector<std::string> notes; // how each value was found, for the report's detail lines
};

// The environment of this process as a map.
std::map<std::string, std::string> current_env();

// Throws UsageError for malformed or contradictory values.
JobEnv resolve_job(const std::map<std::string, std::string>& env, const Options& o);

// Parses a byte count with an optional binary unit: "4096", "64MiB", "1.5GiB", "512k". Throws
// UsageError naming `what` on anything else.
long long parse_bytes(const std::string& text, const std::string& what);

// The interfaces a socket-interface variable selects, as its reader does: Gloo takes a comma-separated
// list of exact names; NCCL (and hence NCCL_SOCKET_IFNAME) takes prefixes, "=" for exact names and
// "^" to exclude. `available` are the host's interfaces in their order; returns the matches.
std::vector<std::string> gloo_ifnames(const std::string& value);
std::vector<std::string> nccl_ifname_matches(const std::string& value, const std::vector<std::string>& available);

}  // namespace hanglab::preflight
