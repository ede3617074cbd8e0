// playbook_next_steps(): the playbook's advice for a verdict, by category and cause (see
// next_steps.hpp). Used by both reasoners: the run-record one (run_answers.cpp) and the
// plain-log one (reason/log_*.cpp).
#include "triage/reason/next_steps.hpp"

#include <fmt/format.h>

#include "triage/reason/phrases.hpp"

namespace hanglab {

using reason::ranks_phrase;
namespace {

// One family of verdicts each; true when the advice is complete (the caller returns it).
// Rendezvous and interfaces: the job never formed.
bool start_up_steps(const TriageResult& r_, const std::string& c, const std::string& k, const std::string& who,
                  std::vector<std::string>& n) {
  if (c == "rendezvous" || (c == "network" && r_.phase == "init")) {
    if (k == "wrong_ifname") {
      n.push_back(
          "Set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to the data-plane interface present on every node "
          "(check `ip -br addr` on each); NCCL_DEBUG=INFO shows which interface was picked.");
    }
    if (k == "wrong_master_addr") {
      n.push_back(fmt::format(
          "{} was launched with another MASTER_ADDR than its peers: fix that node's launch script / env "
          "(echo $MASTER_ADDR on each node, the torchrun --master_addr / --rdzv_endpoint) so every rank "
          "points at rank 0's host.",
          who));
    }
    if (k == "late_joiner") {
      n.push_back(fmt::format(
          "{} started after its peers had already given up on rendezvous: find why it was late (image pull, "
          "slow node boot, scheduler delay) or raise the rendezvous timeout (torchrun --rdzv_conf "
          "join_timeout=..., init_process_group timeout).",
          who));
    }
    if (k == "stale_rendezvous") {
      n.push_back(
          "The store counted arrivals of an earlier run: give each (re)start a fresh rendezvous (a new "
          "MASTER_PORT or --rdzv_id per attempt, delete a file:// init file before restarting, make sure the old "
          "job's processes are gone) so a requeued or restarted job does not reuse its predecessor's store.");
    }
    if (!r_.missing_ranks.empty() && k != "wrong_master_addr" && k != "late_joiner") {
      n.push_back(
          fmt::format("Find out why {} never joined: its launcher/pod events, its stderr, whether the "
                      "process started at all (kubectl describe pod, scheduler logs).",
                      who));
    }
    n.push_back(
        "Check MASTER_ADDR/MASTER_PORT are reachable from every node (nc -vz), the port is free and not "
        "firewalled, and the host name resolves the same everywhere.");
    n.push_back(
        "Check node_rank/RANK are unique and WORLD_SIZE matches the launched ranks; clear stale elastic "
        "rendezvous state.");
    n.push_back(
        "Reproduce with the smallest setup first (torchrun --standalone on one node), then grow to "
        "multi-node.");
    return true;
  }
  return false;
}

// Collective mismatches.
bool mismatch_steps(const TriageResult& r_, const std::string& c, const std::string& k, const std::string& who,
                  std::vector<std::string>& n) {
  if (c == "collective_mismatch") {
    if (k == "uneven_batches") {
      n.push_back(
          fmt::format("Compare the number of batches per rank: {} ran out first. Check DistributedSampler "
                      "drop_last vs padding, per-rank sample/token counts and variable-length batching.",
                      who));
      n.push_back(
          "Make every rank run the same number of steps (pad or drop the remainder, or use a join "
          "context), so no rank leaves while its peers are inside a collective.");
    } else if (k == "nan_skip") {
      n.push_back(fmt::format(
          "{} skipped backward after a non-finite loss at step {}: never skip a step on one rank only. Agree "
          "across ranks first (all_reduce an is-finite flag and skip on every rank together), or let "
          "torch.cuda.amp.GradScaler skip the optimizer step after backward.",
          who, r_.divergence_step.value_or(r_.last_good_step + 1)));
      n.push_back(
          "Find why the loss went NaN/inf on that rank: that step's batch (bad sample, inf input), the "
          "learning rate / loss scale, torch.autograd.set_detect_anomaly(True) on a re-run.");
    } else {
      n.push_back(
          fmt::format("Look for rank-dependent branches around {} in {}: a NaN/inf check that skips "
                      "backward, a caught exception, an early continue, rank-specific logging/metrics "
                      "collectives.",
                      r_.divergence_step || !r_.divergence_seq
                          ? fmt::format("step {}", r_.divergence_step.value_or(r_.last_good_step + 1))
                          : fmt::format("collective seq {}", *r_.divergence_seq),
                      who));
      n.push_back(
          "Compare per-rank collective sequences with TORCH_DISTRIBUTED_DEBUG=DETAIL (it checks op, shape "
          "and order across ranks at each collective).");
      n.push_back(
          "Check find_unused_parameters and dynamic-graph paths (DDP bucket count must be the same on "
          "every rank), and drop_last/padding so every rank runs the same steps.");
    }
    n.push_back("Do not raise the timeout: a mismatch never completes; fix the call sequence.");
    return true;
  }
  return false;
}

// A rank's exit and the limits that end one.
bool exit_steps(const TriageResult& r_, const std::string& c, const std::string& k, const std::string& who,
              std::vector<std::string>& n) {
  if (c == "data_loading" && k == "shm_exhausted" && r_.category == "data_loading") {
    n.push_back(fmt::format(
        "{}'s DataLoader workers ran out of shared memory (/dev/shm): check df -h /dev/shm on its node and "
        "raise it (docker --shm-size=8g or --ipc=host; Kubernetes: mount an emptyDir with medium: Memory "
        "and a sizeLimit at /dev/shm).",
        who));
    n.push_back(
        "Or need less of it: fewer DataLoader workers (num_workers), a smaller prefetch_factor or batch; "
        "num_workers=0 confirms it.");
    n.push_back(
        "Ignore the peers' errors (listed as echoes): they are 'Connection closed' echoes of the rank that "
        "exited.");
    return true;
  }
  if (c == "rank_exit" || c == "resource_limit" || (c == "data_loading" && k == "data_error")) {
    const bool gpu_oom = k == "oom" && r_.first_failure && r_.first_failure->cause == "cuda_oom";
    if (gpu_oom) {
      n.push_back(fmt::format("{} ran out of GPU memory (CUDA OOM): check its batch/sequence length at that step, "
                              "activation memory, fragmentation (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) "
                              "and anything else on that GPU (nvidia-smi).",
                              who));
    } else if (k == "killed" || k == "oom") {
      n.push_back(
          fmt::format("Find who killed {}: dmesg -T | grep -i -E 'oom|nvrm|xid', kubectl describe pod / "
                      "get events (OOMKilled, eviction, preemption, drain); exit status 137 = SIGKILL "
                      "(often the OOM killer).",
                      who));
    }
    if (k == "oom") {
      n.push_back(
          "Reduce the rank's memory (batch, activation checkpointing) or raise its memory limit; check "
          "for growth over steps.");
    }
    if (k == "crashed" && r_.first_failure && r_.first_failure->signal == 7) {  // SIGBUS
      n.push_back(fmt::format(
          "{} died of SIGBUS: in a container that is most often a full /dev/shm (DataLoader workers' shared "
          "memory, NCCL's SHM transport; docker's default is 64 MB): check df -h /dev/shm on its node and raise it "
          "(docker --shm-size / --ipc=host, a Kubernetes emptyDir with medium: Memory at /dev/shm).",
          who));
    }
    if (k == "preemption") {
      n.push_back(
          "The scheduler preempted the job (its nodes went to a job of higher priority): run it where it "
          "cannot be preempted, or make it resumable: checkpoint on the warning signal (sbatch --signal=USR1@120, "
          "torchrun forwards SIGTERM) and requeue (--requeue) from the last checkpoint with a fresh rendezvous.");
    }
    if (k == "cuda_error") {
      n.push_back(
          fmt::format("{} hit a CUDA error: check dmesg -T | grep -i -E 'xid|nvrm' on its node, nvidia-smi -q "
                      "(ECC, retired pages, clocks), and re-run with CUDA_LAUNCH_BLOCKING=1 to find the kernel.",
                      who));
    }
    if (k == "crashed") {
      n.push_back(
          fmt::format("{} crashed (a fatal signal; 139 = SIGSEGV, 135 = SIGBUS, 134 = SIGABRT): get the core dump "
                      "/ full backtrace; check CUDA/NCCL errors and GPU Xid in dmesg, driver and library versions on "
                      "that node.",
                      who));
    }
    if (k == "exception" || k == "usage_error" || k == "nonzero_exit") {
      n.push_back(
          fmt::format("Read the full traceback in {}'s stderr.log; the peers' timeouts and "
                      "'Connection closed' errors are echoes of it.",
                      who));
    }
    if (k == "shm_exhausted") {
      n.push_back(
          "/dev/shm is too small for NCCL's shared-memory transport: raise it (docker --shm-size, a Kubernetes "
          "emptyDir with medium: Memory mounted at /dev/shm) and check df -h /dev/shm on the node; "
          "NCCL_SHM_DISABLE=1 only to confirm.");
    }
    if (k == "data_error" || k == "disk_full") {
      n.push_back(
          "Check the data path of that rank: missing/short shards, disk space (df -h), permissions of "
          "the checkpoint directory.");
    }
    n.push_back(
        "Ignore the peers' errors (listed as echoes): find the first rank that exited and fix that one; "
        "cordon the node if it repeats.");
    return true;
  }
  return false;
}

// Stragglers, data loading, the network.
bool late_steps(const TriageResult& r_, const std::string& c, const std::string& k, const std::string& who,
              std::vector<std::string>& n) {
  if (c == "straggler") {
    if (k == "frozen") {
      n.push_back(
          fmt::format("{} exists but does nothing: check its state (grep State /proc/<pid>/status: T = "
                      "stopped, D = uninterruptible I/O), cgroup freezer, swap storms, node health.",
                      who));
      n.push_back(
          "Capture every rank's stack at once (py-spy dump --pid, gdb -p ... 'thread apply all bt') to "
          "see where the frozen one sits.");
    } else if (k == "slow_rank") {
      n.push_back(
          fmt::format("Profile {} against a peer: data loading vs compute time, CPU contention and "
                      "throttling (cpu.stat nr_throttled), NUMA placement, GPU clocks/ECC, slow shard "
                      "storage (nsys timeline).",
                      who));
      n.push_back(
          "Fix placement or the node rather than raising timeouts; compare step times to the baseline "
          "after the change.");
    } else if (k == "slow_storage") {
      n.push_back(
          fmt::format("Storage stalled {}: check the mount (nfsstat, mount options, server health), write "
                      "latency of the checkpoint path, and kernel 'blocked for more than' / 'not responding' lines.",
                      who));
    } else {
      n.push_back(
          fmt::format("Dump the stack of {} (py-spy dump / gdb) to see what it waits on while its peers "
                      "sit in the collective; check storage latency for checkpoint/eval phases.",
                      who));
    }
    n.push_back("A larger timeout only tells slow from dead; it is not the fix.");
    return true;
  }
  if (c == "data_loading") {
    n.push_back(
        fmt::format("Check {}'s data loader: /dev/shm size (df -h /dev/shm), num_workers, a slow or "
                    "missing shard, a worker deadlock (py-spy dump the loader workers).",
                    who));
    n.push_back("Check per-rank sample counts and DistributedSampler drop_last/padding.");
    return true;
  }
  if (c == "network") {
    if (k == "ib_error") {
      n.push_back(
          "An InfiniBand/RoCE transport error: check ibstat / ibv_devinfo (port state, link errors), the switch "
          "port and cable of the host that logged it, and the GID/MTU settings.");
    }
    n.push_back(
        "Check the links: ibstat / ibv_devinfo, end-to-end MTU, NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME; "
        "run nccl-tests on one node and across nodes.");
    n.push_back(
        "Re-run with NCCL_DEBUG=INFO (reproduction only) and isolate one variable at a time: fewer "
        "ranks, other nodes, TCP instead of RDMA.");
    return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> playbook_next_steps(const TriageResult& r_) {
  std::vector<std::string> n;
    const std::string& c = r_.category;
    const std::string& k = r_.cause;
    const std::string who = r_.missing_ranks.empty() ? std::string("every rank") : ranks_phrase(r_.missing_ranks);
    if (c == "none") {
      n.push_back("Nothing to fix: keep this run's step times as the baseline for straggler checks.");
      return n;
    }
    if (c == "rendezvous" && k == "duplicate_rank") {
      n.push_back(
          "Two processes were started with the same RANK: check the launch lines (node_rank / --node_rank, "
          "RANK, the Slurm/torchrun/MPI rank mapping) for a copy-pasted value; every rank 0..WORLD_SIZE-1 must be "
          "started exactly once.");
      n.push_back(fmt::format("Find which node should have run {}: it was never started.", who));
      return n;
    }
    for (const auto part : {start_up_steps, mismatch_steps, exit_steps, late_steps})
      if (part(r_, c, k, who, n)) return n;
    if (!r_.missing_ranks.empty()) {
      n.push_back(
          fmt::format("Find out what {} was doing: the last lines of its own log, kubectl describe pod / get events "
                      "(OOMKilled, eviction), dmesg -T on its node; if it is still alive, py-spy dump --pid it.",
                      who));
      n.push_back(
          "Re-run with TORCH_NCCL_DESYNC_DEBUG=1 (and TORCH_NCCL_TRACE_BUFFER_SIZE) so the timeout report names "
          "the lagging ranks and whether they joined the collective.");
      return n;
    }
    n.push_back(
        "Capture every rank's stack at the same moment (py-spy dump / gdb thread apply all bt) to see "
        "whether all sit in the same collective.");
    n.push_back(
        "Re-run with TORCH_DISTRIBUTED_DEBUG=DETAIL and NCCL_DEBUG=INFO to compare the collective "
        "sequences and the transport.");
    n.push_back("Check the shared dependencies: network links (nccl-tests), the rendezvous store, shared storage.");
    return n;
}

}  // namespace hanglab
