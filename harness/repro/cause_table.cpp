// The cause table (cause_table.hpp). Each recipe's fault keys, workload and timeouts are those of
// the shipped scenario that was run to find what the fault does (named in `why`), so the
// reproduction inherits an effect that is a fact of the design, not a timing guess. The
// detector is the one that scenario's [expect] names first.
#include "repro/cause_table.hpp"

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
  };
  return v;
}

}  // namespace hanglab::repro
