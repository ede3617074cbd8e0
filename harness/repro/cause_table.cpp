// The cause table (cause_table.hpp). Each recipe's fault keys, workload and timeouts are those of
// the shipped scenario that was run to find what the fault does (named in `why`), so the
// reproduction inherits an effect that is a fact of the design, not a timing guess. The
// detector is the one that scenario's [expect] names first.
#include "repro/cause_table.hpp"

#include <fmt/format.h>

namespace hanglab::repro {

namespace {

Recipe kill(std::string id, std::string signal, std::string cause, std::string why) {
  Recipe r;
  r.id = std::move(id);
  r.fault = "kill_rank";
  r.keys = "signal = \"" + signal + "\"";
  r.every_rank = true;
  r.incident_signal = true;
  r.outcome = "crash";
  r.detector = "exit_monitor";
  r.category = "rank_exit";
  r.cause = std::move(cause);
  r.phase = "training";
  r.why = std::move(why);
  return r;
}

// Faults of program logic: the built-in loop's in-process hooks (scenarios/<fault>.toml).
Recipe hook(std::string id, std::string fault, std::string cause, int at, std::string detector, std::string why) {
  Recipe r;
  r.id = std::move(id);
  r.fault = std::move(fault);
  r.fault_step = at;
  r.min_world = 2;
  r.outcome = "crash";
  r.detector = std::move(detector);
  r.category = "collective_mismatch";
  r.cause = std::move(cause);
  r.phase = "training";
  r.why = std::move(why);
  return r;
}

std::vector<CauseRow> build_table() {
  std::vector<CauseRow> t;
  const std::string no_gpu_cuda = "a CUDA GPU (the allocation that fails is device memory; this host has none)";

  Recipe killed = kill("kill", "SIGKILL", "killed",
                       "SIGKILL from outside, as the OOM killer or an eviction sends it (scenarios/kill_rank.toml): "
                       "the rank vanishes without a line and its peers see the connection closed");

  Recipe oom;
  oom.id = "oom";
  oom.fault = "oom_rank";
  oom.fault_step = 4;
  oom.keys = "limit_mb = 300\nmb_per_step = 64";
  oom.every_rank = true;
  oom.tags = {"cgroup"};
  // Run in a node: "cannot create /sys/fs/cgroup/memory/.../cgroup.procs: Directory nonexistent".
  oom.outcome = "crash";
  oom.detector = "exit_monitor";
  oom.category = "rank_exit";
  oom.cause = "oom";
  oom.phase = "training";
  oom.why = "a memory cgroup limit and a growing host allocation: the kernel's OOM killer kills the rank for real "
            "and leaves its oom_kill count and \"Killed process\" line (scenarios/oom_rank.toml)";
  t.push_back({"rank_exit", "oom", {oom}, "", ""});
  // A SIGKILL whose sender the logs do not show is most often the OOM killer's; the incident
  // lacks its line, so the real OOM kill comes second (its triage will say oom where the
  // incident could only say killed: the comparison shows that difference).
  Recipe oom_alt = oom;
  oom_alt.ranked = "the kernel's OOM killer sends the same SIGKILL; second, as the incident's logs show no OOM line";
  t.push_back({"rank_exit", "killed", {killed, oom_alt}, "", ""});

  t.push_back({"rank_exit", "segfault",
               {kill("segv", "SIGSEGV", "crashed",
                     "the rank dies of SIGSEGV (status 139), what a segfault is to its launcher and peers; the run's "
                     "trace reader calls a crash signal \"crashed\" and records the signal (11)")},
               "", ""});
  t.push_back({"rank_exit", "crashed",
               {kill("crash", "SIGABRT", "crashed",
                     "the rank dies of SIGABRT (status 134), as after glibc's heap-corruption check or an abort() in "
                     "a library; peers see the connection closed")},
               "", ""});

  Recipe exc = hook("exception", "exception_on_rank", "exception", 5, "exit_monitor",
                    "an unhandled exception in forward ends the rank (exit 1) with a traceback-like error line "
                    "(scenarios/exception_on_rank.toml)");
  exc.category = "rank_exit";
  exc.min_world = 1;
  t.push_back({"rank_exit", "exception", {exc}, "", ""});

  Recipe node;
  node.id = "kill_node";
  node.fault = "kill_node";
  node.targets = "node";
  node.default_role = "last";
  node.fault_step = 5;
  node.nodes = 2;
  node.tags = {"net"};
  node.outcome = "crash";
  node.detector = "exit_monitor";
  node.category = "rank_exit";
  node.cause = "node_failure";
  node.phase = "training";
  node.why = "every process of a node's namespace SIGKILLed at once, as in a host crash (scenarios/net_kill_node.toml)";
  t.push_back({"rank_exit", "node_failure", {node}, "", ""});

  t.push_back({"rank_exit", "cuda_oom", {}, no_gpu_cuda, "cuda_oom"});
  t.push_back({"resource_limit", "cuda_oom", {}, no_gpu_cuda, "cuda_oom"});
  t.push_back({"rank_exit", "peer_closed", {},
               "a rank that returns with a point-to-point send still in flight (the built-in loop has no "
               "send/recv, only collectives)",
               "early_exit"});

  t.push_back({"collective_mismatch", "mismatched_collective",
               {[] {
                 Recipe r = hook("mismatch", "mismatched_collective", "mismatched_collective", 5, "exit_monitor",
                                 "the rank's first gradient collective of a step differs in size from its peers' at "
                                 "the same sequence number (scenarios/mismatched_collective.toml)");
                 r.init_s = 20;
                 r.collective_s = 3;
                 r.progress_s = 6;
                 r.deadline_s = 60;
                 return r;
               }()},
               "", ""});
  t.push_back({"collective_mismatch", "skipped_collective",
               {hook("skip", "skip_collective", "skipped_collective", 5, "backend_error",
                     "a data-dependent branch skips the step's gradient allreduces on one rank "
                     "(scenarios/skip_collective.toml)")},
               "", ""});
  t.push_back({"collective_mismatch", "uneven_batches",
               {[] {
                 Recipe r = hook("uneven", "uneven_batches", "uneven_batches", 8, "backend_error",
                                 "the rank's sampler runs out of batches early, it leaves the loop while its peers "
                                 "wait in the next allreduce (scenarios/uneven_batches.toml)");
                 r.default_role = "last";
                 return r;
               }()},
               "", ""});
  t.push_back({"collective_mismatch", "extra_collective",
               {hook("extra", "extra_collective", "extra_collective", 5, "backend_error",
                     "one rank issues a collective its peers do not (scenarios/extra_collective.toml)")},
               "", ""});
  t.push_back({"collective_mismatch", "nan_skip",
               {hook("nan_skip", "nan_skip", "nan_skip", 5, "backend_error",
                     "one rank sees a NaN loss and skips backward and its allreduces (scenarios/nan_skip.toml)")},
               "", ""});

  Recipe frozen;
  frozen.id = "freeze";
  frozen.fault = "freeze_rank";
  frozen.fault_step = 5;
  frozen.outcome = "hang";
  frozen.detector = "heartbeat_loss";
  frozen.category = "straggler";
  frozen.cause = "frozen";
  frozen.phase = "training";
  frozen.why = "SIGSTOP: the rank is alive but silent (a paused container, a debugger, a D-state wait); its peers "
               "time out in the step's allreduce (scenarios/freeze_rank.toml)";
  t.push_back({"straggler", "frozen", {frozen}, "", ""});

  Recipe slow;
  slow.id = "throttle";
  slow.fault = "throttle_cpu";
  slow.fault_step = 3;
  slow.steps = 10;
  slow.keys = "cpu_percent = 2";
  slow.args = "compute = \"burn\"\nstep_ms = 50";
  slow.tags = {"cgroup"};
  slow.collective_s = 30;
  slow.progress_s = 30;
  slow.deadline_s = 120;
  slow.outcome = "slow";
  slow.detector = "triage";
  slow.category = "straggler";
  slow.cause = "slow_rank";
  slow.phase = "training";
  slow.why = "a CFS quota of 2 % of a CPU on one rank: it computes its step 50x slower and paces every peer "
             "(scenarios/throttle_cpu_straggler.toml)";
  t.push_back({"straggler", "slow_rank", {slow}, "", ""});

  Recipe ckpt;
  ckpt.id = "slow_save";
  ckpt.fault = "slow_storage";
  ckpt.default_role = "first";
  ckpt.keys = "dirs = \"ckpt\"\nops = \"write\"\ndelay_ms = 0\nstall_s = 12";
  ckpt.args = "checkpoint_every = 6";
  ckpt.tags = {"fuse"};
  ckpt.deadline_s = 120;
  ckpt.outcome = "hang";
  ckpt.detector = "backend_timeout";
  ckpt.category = "straggler";
  ckpt.cause = "slow_rank";
  ckpt.phase = "checkpoint";
  ckpt.why = "the saving rank's checkpoint writes stall 12 s on a FUSE file system while its peers wait in the "
             "post-save barrier and time out (scenarios/slow_checkpoint.toml)";
  t.push_back({"straggler", "checkpoint_stall", {ckpt}, "", ""});
  t.push_back({"straggler", "slow_storage", {ckpt}, "", ""});

  Recipe shm;
  shm.id = "tiny_shm";
  shm.fault = "tiny_shm";
  shm.at_step = false;
  shm.steps = 8;
  shm.keys = "size_mb = 1";
  shm.args = "num_workers = 2\nprefetch = 2\ninput_dim = 512\nbatch_size = 1024\ndataset_size = 8192\nshards = 8";
  shm.tags = {"namespace"};
  shm.deadline_s = 120;
  shm.outcome = "crash";
  shm.detector = "exit_monitor";
  shm.category = "data_loading";
  shm.cause = "shm_exhausted";
  shm.phase = "data";
  shm.why = "a 1 MiB /dev/shm under DataLoader workers that pass 2 MiB batches through it: they die of SIGBUS "
            "(scenarios/tiny_shm.toml)";
  t.push_back({"data_loading", "shm_exhausted", {shm}, "", ""});
  // Same mechanism; the reproduction's triage names the data loader, where a launcher-only log
  // can say no more than "resource limit": the comparison says so.
  t.push_back({"resource_limit", "shm_exhausted", {shm}, "", ""});
  t.push_back({"resource_limit", "nccl_shm", {},
               "NCCL's shared-memory transport between the GPUs of one host (NCCL needs a CUDA GPU; Gloo on CPU "
               "makes no /dev/shm segments); on a GPU runner tiny_shm with backend = \"nccl\"",
               "nccl_shm"});

  Recipe disk;
  disk.id = "disk_full";
  disk.fault = "disk_full";
  disk.default_role = "first";
  disk.fault_step = 5;
  disk.keys = "size_mb = 1";
  disk.args = "checkpoint_every = 3";
  disk.tags = {"namespace"};
  disk.deadline_s = 120;
  disk.outcome = "crash";
  disk.detector = "exit_monitor";
  disk.category = "resource_limit";
  disk.cause = "disk_full";
  disk.phase = "checkpoint";
  disk.why = "the saving rank's checkpoint directory is a full tmpfs: torch.save fails with ENOSPC "
             "(scenarios/disk_full.toml)";
  t.push_back({"resource_limit", "disk_full", {disk}, "", ""});
  Recipe limit;
  limit.id = "time_limit";
  limit.fault = "freeze_rank";
  limit.launcher = "srun";
  limit.time_limit_min = 1;  // Slurm's granularity: the job runs 60-90 s (the limit + slurmctld's 30 s check)
  limit.min_world = 2;
  limit.tags = {"srun"};
  limit.steps = 2000;
  limit.fault_step = 3;
  limit.args = "step_ms = 200";
  limit.collective_s = 300;  // the backend timeout and the watchdog outlast the limit: Slurm ends the job
  limit.progress_s = 120;
  limit.deadline_s = 150;
  limit.outcome = "crash";
  limit.detector = "heartbeat_loss";
  limit.category = "straggler";  // the run record names the rank that kept the job from finishing
  limit.cause = "frozen";
  limit.phase = "training";
  limit.why = "a job that does not finish inside its Slurm time limit (srun --time 1; here because one rank is "
              "frozen): slurmstepd cancels the step \"DUE TO TIME LIMIT\" and SIGTERMs every task "
              "(scenarios/srun_time_limit.toml). Its logs, read as the incident's were, say resource_limit/"
              "time_limit; its run record also names the frozen rank. Needs slurmctld/slurmd (a private cluster "
              "hanglab starts); about 90 s";
  t.push_back({"resource_limit", "time_limit", {limit}, "", ""});

  Recipe ifname;
  ifname.id = "ifname";
  ifname.fault = "wrong_socket_ifname";
  ifname.targets = "all";
  ifname.default_role = "all";
  ifname.at_step = false;
  ifname.init_s = 10;
  ifname.collective_s = 3;
  ifname.progress_s = 6;
  ifname.deadline_s = 60;
  ifname.outcome = "crash";
  ifname.detector = "exit_monitor";
  ifname.category = "network";
  ifname.cause = "wrong_ifname";
  ifname.phase = "init";
  ifname.why = "GLOO_SOCKET_IFNAME names an interface the host lacks: every rank fails to build its Gloo device "
               "at init (scenarios/wrong_socket_ifname_all.toml)";
  t.push_back({"network", "wrong_ifname", {ifname}, "", ""});

  const std::string verbs = "InfiniBand/RoCE or EFA verbs hardware under NCCL (a GPU cluster's RDMA NICs)";
  t.push_back({"network", "ib_error", {}, verbs, "ib_error"});
  t.push_back({"network", "efa_error", {}, verbs, "efa_error"});

  Recipe part;
  part.id = "partition";
  part.fault = "partition";
  part.targets = "node";
  part.default_role = "last";
  part.fault_step = 5;
  part.nodes = 2;
  part.tags = {"net"};
  part.outcome = "hang";
  part.detector = "backend_timeout";
  part.category = "network";
  part.cause = "partition";
  part.phase = "training";
  part.why = "node 1 cut off mid-training: every socket to it stops (scenarios/net_partition.toml); a run's probe "
             "names the cut (partition) where one side's log sees only a timed-out socket (connection_timeout)";
  t.push_back({"network", "partition", {part}, "", ""});
  t.push_back({"network", "connection_timeout", {part}, "", ""});

  Recipe store;
  store.id = "store_unreachable";
  store.fault = "store_unreachable";
  store.targets = "node";
  store.default_role = "last";
  store.at_step = false;
  store.nodes = 2;
  store.store_node = false;  // the fault refuses node 0, where the store is
  store.tags = {"net"};
  store.init_s = 5;
  store.progress_s = 20;
  store.outcome = "crash";
  store.detector = "exit_monitor";
  store.category = "rendezvous";
  store.cause = "rendezvous_timeout";
  store.phase = "init";
  store.why = "one node cannot reach the store's port: the store host waits for the world until init_s "
              "(scenarios/net_store_unreachable.toml)";
  t.push_back({"rendezvous", "rendezvous_timeout", {store}, "", ""});
  // A store port that no packet reaches from one node: its ranks' connects are refused or time out.
  t.push_back({"rendezvous", "store_unreachable", {store}, "", ""});
  t.push_back({"rendezvous", "connection_refused", {store}, "", ""});

  Recipe addr;
  addr.id = "wrong_addr";
  addr.fault = "wrong_master_addr";
  addr.at_step = false;
  addr.min_world = 2;  // the culprit is a client of a store another rank hosts
  addr.init_s = 4;
  addr.collective_s = 3;
  addr.progress_s = 20;
  addr.deadline_s = 60;
  addr.outcome = "crash";
  addr.detector = "exit_monitor";
  addr.category = "rendezvous";
  addr.cause = "wrong_master_addr";
  addr.phase = "init";
  addr.why = "the rank's MASTER_ADDR is an address where no store listens: its client connect times out "
             "(scenarios/wrong_master_addr.toml); its log reads as a store timeout, its record names the address";
  t.push_back({"rendezvous", "store_timeout", {addr}, "", ""});
  t.push_back({"rendezvous", "wrong_master_addr", {addr}, "", ""});
  // -- Causes triage names (model/causes.hpp) whose mechanism a shipped scenario shows.
  Recipe dup;
  dup.id = "duplicate_rank";
  dup.fault = "duplicate_rank";
  dup.default_role = "last";
  dup.at_step = false;
  dup.min_world = 2;  // the culprit's slot is started as another rank (as_rank: the rank below it)
  dup.init_s = 4;
  dup.collective_s = 3;
  dup.progress_s = 6;
  dup.deadline_s = 60;
  dup.detector = "exit_monitor";  // the outcome (crash or hang) is a race of the two processes' connects
  dup.category = "rendezvous";
  dup.cause = "duplicate_rank";
  dup.phase = "init";
  dup.why = "the culprit's slot is launched with another rank's RANK: that rank exists twice, the culprit not at all; "
            "Gloo's full-mesh connect breaks in init (scenarios/duplicate_rank.toml)";
  t.push_back({"rendezvous", "duplicate_rank", {dup}, "", ""});

  Recipe port;
  port.id = "port_in_use";
  port.fault = "port_in_use";
  port.default_role = "first";  // the store's host: rank 0
  port.at_step = false;
  port.init_s = 4;
  port.collective_s = 3;
  port.progress_s = 6;
  port.deadline_s = 60;
  port.outcome = "hang";
  port.detector = "exit_monitor";
  port.category = "rendezvous";
  port.cause = "address_in_use";
  port.phase = "init";
  port.why = "another process holds MASTER_PORT when the job starts: rank 0 cannot bind the store (\"Address already "
             "in use\"), the other ranks connect to the holder and block in init (scenarios/port_in_use.toml)";
  t.push_back({"rendezvous", "address_in_use", {port}, "", ""});
  Recipe quiet = port;
  quiet.ranked = "a store that accepts connections and never answers leaves every rank in init without an error; "
                 "the reproduction's logs also show rank 0's bind error (address_in_use)";
  t.push_back({"rendezvous", "stuck_in_rendezvous", {quiet}, "", ""});

  Recipe dns;
  dns.id = "dns_failure";
  dns.fault = "dns_failure";
  dns.targets = "node";
  dns.default_role = "last";
  dns.at_step = false;
  dns.nodes = 2;
  dns.store_node = false;  // the other node hosts the store under the name's real address
  dns.tags = {"net"};
  dns.init_s = 10;
  dns.progress_s = 60;
  dns.outcome = "crash";
  dns.detector = "exit_monitor";
  dns.category = "rendezvous";
  dns.cause = "dns_failure";
  dns.phase = "init";
  dns.why = "a node's ranks get MASTER_ADDR as a host name their resolver cannot resolve: c10d's \"Temporary failure "
            "in name resolution\" in init (scenarios/net_dns_failure.toml)";
  t.push_back({"rendezvous", "dns_failure", {dns}, "", ""});

  Recipe late;
  late.id = "late_joiner";
  late.fault = "late_joiner";
  late.default_role = "middle";
  late.at_step = false;
  late.min_world = 2;
  late.keys = "delay_s = 8";
  late.init_s = 4;
  late.collective_s = 3;
  late.progress_s = 15;
  late.deadline_s = 60;
  late.outcome = "crash";
  late.detector = "exit_monitor";
  late.category = "rendezvous";
  late.cause = "late_joiner";
  late.phase = "init";
  late.why = "the rank starts 8 s after its peers, twice the rendezvous timeout: the store's verdict names it missing "
             "and it finds no store when it comes (scenarios/late_joiner.toml)";
  t.push_back({"rendezvous", "late_joiner", {late}, "", ""});
  Recipe never = late;
  never.ranked = "a rank that never joined is one whose start outlasted its peers' rendezvous: the reproduction's "
                 "record sees it start late and names it late_joiner";
  t.push_back({"rendezvous", "rank_never_started", {never}, "", ""});
  t.push_back({"rendezvous", "stale_rendezvous", {},
               "a second incarnation of the job (a restart or requeue) that finds the earlier run's store and arrival "
               "count at the same address; hanglab starts every run with a fresh store",
               "stale_store"});
  t.push_back({"rendezvous", "rendezvous_error", {},
               "a process-group creation that the backend itself rejects (a bad init_method URL, an unsupported "
               "device); no fault makes the backend refuse its arguments",
               "pg_init_error"});

  Recipe mtu;
  mtu.id = "mtu_mismatch";
  mtu.fault = "mtu_mismatch";
  mtu.targets = "node";
  mtu.default_role = "last";
  mtu.at_step = false;
  mtu.nodes = 2;
  mtu.tags = {"net"};
  mtu.init_s = 15;
  mtu.outcome = "hang";
  mtu.detector = "backend_timeout";
  mtu.category = "network";
  mtu.cause = "mtu_mismatch";
  mtu.phase = "training";
  mtu.why = "every node set to MTU 9000 while one node's port carries 1500: small packets pass, the first large "
            "transfer never arrives (scenarios/net_mtu_mismatch.toml)";
  t.push_back({"network", "mtu_mismatch", {mtu}, "", ""});

  Recipe loss;
  loss.id = "packet_loss";
  loss.fault = "packet_loss";
  loss.targets = "node";
  loss.default_role = "last";
  loss.fault_step = 3;
  loss.nodes = 2;
  loss.keys = "percent = 60";
  loss.tags = {"net"};
  loss.init_s = 15;
  loss.outcome = "hang";
  loss.detector = "backend_timeout";
  loss.category = "network";
  loss.cause = "packet_loss";
  loss.phase = "training";
  loss.why = "60 % of a node's packets lost each way: TCP's retransmissions back off past the collective timeout "
             "(scenarios/net_packet_loss.toml)";
  t.push_back({"network", "packet_loss", {loss}, "", ""});
  Recipe links = loss;
  links.ranked = "link errors that no death explains: a lossy link between the nodes; the reproduction's probe names it "
                 "packet_loss";
  t.push_back({"network", "comm_error", {links}, "", ""});
  Recipe cut = part;
  cut.ranked = "every rank of every node waiting is what a cut between the nodes leaves; the reproduction's probe "
               "names the partition";
  t.push_back({"network", "internode_timeout", {cut}, "", ""});

  // A peer's advertised address that has no route: scenarios/net_wrong_ifname_exists.toml runs it with
  // [topology] second_nic = true, which a recipe cannot set yet.
  t.push_back({"network", "host_unreachable", {},
               "two nodes with a second interface each ([topology] second_nic = true) and the ranks of one "
               "advertising it (wrong_socket_ifname ifname = \"eth1\"): scenarios/net_wrong_ifname_exists.toml; "
               "a recipe cannot set second_nic",
               "recipe_second_nic"});

  // A non-zero exit whose reason the logs lack: an exception is the usual one.
  Recipe nonzero = exc;
  nonzero.ranked = "a non-zero exit with no reason in the logs is most often an unhandled exception";
  t.push_back({"rank_exit", "nonzero_exit", {nonzero}, "", ""});
  t.push_back({"rank_exit", "cuda_error", {}, "a CUDA GPU (the error is the device's: an illegal access, an Xid)",
               "cuda_error"});
  t.push_back({"rank_exit", "usage_error", {},
               "a rank given bad arguments or environment by its launch (a per-rank config typo); no fault passes a "
               "rank bad arguments",
               "bad_rank_args"});

  // Alive outside the collective its peers wait in.
  Recipe sleepy = frozen;
  sleepy.ranked = "alive but never entering the collective: a stopped rank is the fault that leaves it so";
  t.push_back({"straggler", "unresponsive", {sleepy}, "", ""});
  Recipe ckpt_stuck = ckpt;
  ckpt_stuck.ranked = "a rank alive in its checkpoint save while its peers wait: the save's writes stall on slow storage";
  t.push_back({"straggler", "stuck_in_checkpoint", {ckpt_stuck}, "", ""});
  Recipe busy;
  busy.id = "throttle_hang";
  busy.fault = "throttle_cpu";
  busy.fault_step = 3;
  busy.steps = 10;
  busy.keys = "cpu_percent = 2";
  busy.args = "compute = \"burn\"\nstep_ms = 150";
  busy.tags = {"cgroup"};
  busy.progress_s = 15;
  busy.deadline_s = 120;
  busy.outcome = "hang";
  busy.detector = "backend_timeout";
  busy.category = "straggler";
  busy.cause = "slow_rank";  // or stuck_in_backward, when it has not reached the allreduce when its peers time out
  busy.phase = "training";
  busy.why = "2 % of a CPU for a rank that burns 150 ms a step: its compute outlasts its peers' collective timeout "
             "(scenarios/throttle_cpu_hang.toml)";
  for (const char* c : {"stuck_in_forward", "stuck_in_backward", "stuck_in_optimizer"})
    t.push_back({"straggler", c, {busy}, "", ""});
  for (const char* c : {"stuck_in_init", "stuck_in_eval", "stuck_in_shutdown", "stuck_in_unknown"}) {
    Recipe r = frozen;
    r.ranked = "alive outside the collective in a phase the built-in loop cannot hold one rank in: a stopped rank in "
               "training is the nearest mechanism";
    t.push_back({"straggler", c, {r}, "", ""});
  }
  Recipe job_slow = slow;
  job_slow.ranked = "the whole job slowed: one throttled rank paces every peer in synchronous training";
  t.push_back({"straggler", "slowdown", {job_slow}, "", ""});

  t.push_back({"data_loading", "data_error", {},
               "input data that is unreadable or malformed on one rank; no fault corrupts the workload's data",
               "corrupt_data"});
  // One rank's data loading stalled alone: slow_storage's data directory is the workload's, shared by
  // the ranks of a host, so a stall there holds them all (run: a 12 s read stall on rank 1's data
  // directory held ranks 0-2, rank 3 timed out, triage said straggler/slow_rank for ranks 0-2).
  t.push_back({"data_loading", "data_loader_stall", {},
               "a stall of one rank's own input pipeline (a per-rank data directory or a DataLoader worker that "
               "blocks); slow_storage on the shared data directory holds every rank of the host",
               "data_loader_stall"});
  t.push_back({"data_loading", "data_loader_crash", {},
               "a DataLoader worker that dies on its own (a crash in a dataset's __getitem__); no fault kills one "
               "worker",
               "kill_dataloader_worker"});
  t.push_back({"data_loading", "oom", {},
               "a DataLoader worker OOM-killed while its rank lives (oom_rank limits the rank's own memory)",
               "oom_dataloader_worker"});

  t.push_back({"resource_limit", "preemption", {},
               "a Slurm partition with preemption configured (a higher-priority job taking the nodes)", "preempt_job"});
  t.push_back({"resource_limit", "resource_limit", {},
               "the limit itself, which the answer does not name (resource_limit with no finer cause)",
               "unnamed_limit"});
  Recipe stop = limit;
  stop.ranked = "a job stopped from outside by a signal to its launcher: Slurm's time limit sends it, and the "
                "reproduction's logs name the limit (time_limit)";
  t.push_back({"rank_exit", "external_signal", {stop}, "", ""});
  // Causes the message catalogue names from its emitters' sources, whose mechanism is inside the library
  // or hardware that prints them: not reproducible with hanglab's CPU faults.
  struct Missing {
    const char *category, *cause, *needs, *fault;
  };
  static const Missing kNotHere[] = {
      {"rendezvous", "duplicate_gpu", "two ranks on one CUDA GPU under NCCL (a CUDA GPU)", "duplicate_gpu"},
      {"rendezvous", "invalid_device", "more ranks on a node than it has CUDA GPUs (a CUDA GPU)", "invalid_device"},
      {"rendezvous", "launch_error", "a launcher that cannot start processes (its daemons, a bad binary path)",
       "launch_failure"},
      {"rendezvous", "pmi_error", "a PMI/PMIx server of the launcher that fails (Slurm's or Open MPI's)", "pmi_failure"},
      {"rendezvous", "mpi_init_error", "an MPI_Init that fails (a broken MPI installation or fabric)", "mpi_init_failure"},
      {"rendezvous", "bootstrap_error", "NCCL's socket bootstrap (a CUDA GPU)", "nccl_bootstrap_failure"},
      {"rendezvous", "socket_error", "a socket call of the store or bootstrap that fails by itself (fd limits, kernel)",
       "socket_failure"},
      {"rendezvous", "nccl_init_hang", "NCCL's communicator set-up (a CUDA GPU)", "nccl_init_stall"},
      {"network", "socket_error", "a transport socket call that fails by itself", "socket_failure"},
      {"network", "connection_failed", "a transport (UCX, NCCL, Open MPI's TCP BTL) that cannot connect to a peer",
       "connect_failure"},
      {"network", "ib_config", "InfiniBand/RoCE hardware (device, port, GID)", "ib_misconfig"},
      {"network", "slurm_rpc_error", "Slurm's daemons on several hosts with a network between them", "slurm_rpc_cut"},
      {"network", "ucx_error", "UCX as the transport (Open MPI's UCX PML, a GPU cluster's fabric)", "ucx_failure"},
      {"network", "ucx_no_transport", "UCX with no usable transport between two peers", "ucx_no_transport"},
      {"network", "net_plugin_error", "an NCCL network plugin (a CUDA GPU and its NIC)", "nccl_net_plugin_failure"},
      {"network", "net_device_mismatch", "NCCL choosing different NICs per rank (a CUDA GPU)", "nic_mismatch"},
      {"network", "message_truncated", "a transport receiving more than it posted (a library bug)", "truncate_message"},
      {"network", "tls_error", "Gloo's TLS transport with certificates", "tls_failure"},
      {"network", "address_in_use", "a transport's own port in use (UCX, Open MPI's TCP BTL)", "transport_port_in_use"},
      {"network", "dns_failure", "a transport resolving a peer by name", "transport_dns_failure"},
      {"rank_exit", "nccl_internal_error", "NCCL's internal checks (a CUDA GPU)", "nccl_internal_failure"},
      {"rank_exit", "internal_error", "a library's internal check failing (a bug)", "library_bug"},
      {"rank_exit", "ucx_error", "UCX as the transport", "ucx_failure"},
      {"rank_exit", "launch_error", "a launcher failing to set a rank up (slurmstepd's task set-up)", "launch_failure"},
      {"rank_exit", "topology_error", "NCCL's topology detection (GPUs, PCI, NVLink)", "topology_failure"},
      {"rank_exit", "io_forwarding_error", "a launcher's I/O forwarding failing (srun, mpirun)", "io_forwarding_failure"},
      {"rank_exit", "driver_error", "a CUDA or NIC driver", "driver_failure"},
      {"rank_exit", "system_error", "a system call failing by itself (fd or memory limits of the kernel)",
       "syscall_failure"},
      {"rank_exit", "exited_without_finalize", "an MPI program that exits without MPI_Finalize (the built-in loop "
                                               "always finalizes)",
       "skip_finalize"},
      {"rank_exit", "auth_error", "Slurm's munge authentication", "munge_failure"},
      {"rank_exit", "mpi_error", "an MPI call failing (a broken fabric or a bug)", "mpi_failure"},
      {"rank_exit", "mpi_abort", "a program that calls MPI_Abort (the built-in loop never does)", "mpi_abort"},
      {"rank_exit", "nvls_error", "NVLink SHARP (a multi-GPU NVSwitch system)", "nvls_failure"},
      {"rank_exit", "nccl_version_mismatch", "two NCCL versions in one job (a CUDA GPU)", "nccl_version_mix"},
      {"rank_exit", "hardware_error", "the hardware reporting an error (ECC, a NIC)", "hardware_fault"},
      {"resource_limit", "allocation_failed", "a library's own allocator failing (pinned memory, a pool)",
       "pinned_memory_limit"},
      {"resource_limit", "fd_exhausted", "a process at its open-file limit (ulimit -n): no fault lowers it",
       "fd_limit"},
  };
  for (const auto& m : kNotHere) t.push_back({m.category, m.cause, {}, m.needs, m.fault});
  t.push_back({"resource_limit", "oom", {oom}, "", ""});

  t.push_back({"rendezvous", "unique_id_exchange", {},
               "ProcessGroupNCCL (a CUDA GPU): the ncclUniqueId exchange through the store exists only there; on a "
               "GPU runner store_unreachable with backend = \"nccl\"",
               "nccl_unique_id_stall"});
  return t;
}

}  // namespace

const std::vector<CauseRow>& cause_table() {
  static const std::vector<CauseRow> t = build_table();
  return t;
}

std::string no_recipe_reason(const std::string& category, const std::string& cause) {
  if (category == "unknown")
    return fmt::format("unknown/{} names no mechanism to reproduce: what it proves is in the answer's notes; an answer "
                       "that names absent ranks is reproduced by absence (absence_recipes)",
                       cause);
  if (category == "none") return "none/none: nothing failed, there is nothing to reproduce";
  return "";
}

const CauseRow* find_cause(const std::string& category, const std::string& cause) {
  for (const auto& r : cause_table())
    if (r.category == category && r.cause == cause) return &r;
  return nullptr;
}

const std::vector<Recipe>& absence_recipes() {
  static const std::vector<Recipe> v = [] {
    std::vector<Recipe> a;
    a.push_back(kill("absent_killed", "SIGKILL", "killed",
                     "dead: killed from outside (OOM killer, eviction); its peers see its sockets close"));
    Recipe f = find_cause("straggler", "frozen")->recipes.front();
    f.id = "absent_frozen";
    f.why = "frozen: alive but never reaching the collective; its peers time out waiting for it";
    a.push_back(f);
    Recipe s = find_cause("collective_mismatch", "skipped_collective")->recipes.front();
    s.id = "absent_skipped";
    s.why = "diverged: it skipped the collective its peers wait in and went on";
    a.push_back(s);
    return a;
  }();
  return v;
}

const std::vector<PhaseTrigger>& phase_triggers() {
  static const std::vector<PhaseTrigger> v = {
      {"shutdown",
       {"kill_rank"},
       "after_loop = \"linger\"",
       "lingering after the training loop",
       "hang",  // the peers linger in their shutdown until the harness watchdog ends the run
       "after its last step each rank enters its shutdown phase and stays there (after_loop = \"linger\"); the "
       "signal is sent once the culprit has printed that it is there, as a teardown crash after training finished"},
  };
  return v;
}

const PhaseTrigger* find_phase_trigger(const std::string& phase, const std::string& fault) {
  for (const auto& t : phase_triggers())
    if (t.phase == phase)
      for (const auto& f : t.faults)
        if (f == fault) return &t;
  return nullptr;
}

const std::vector<Refinement>& refinements() {
  static const std::vector<Refinement> v = {
      {"segfault", "crashed", 11, "",
       "the log reader names a segfault from \"Segmentation fault\"/\"signal 11\" lines; the run record has the "
       "signal itself"},
      {"checkpoint_stall", "slow_rank", 0, "checkpoint",
       "the log reader calls a save that some ranks wait for a checkpoint stall because it cannot see the saving "
       "rank; the run record names that rank, slow in its checkpoint phase"},
      {"stuck_in_checkpoint", "slow_rank", 0, "checkpoint",
       "the log reader sees the saving rank stuck in its save (no end line) while its peers wait; the run record "
       "measures it, slow in its checkpoint phase"},
  };
  return v;
}

}  // namespace hanglab::repro
