// The line pattern table (see triage_log_patterns.hpp). Each entry was written for a line
// of a real incident log; the case that shows it is named in the comment above it.
#include "triage/logs/patterns.hpp"

#include <string>

namespace hanglab {

namespace {

using sv = std::string_view;
constexpr size_t npos = sv::npos;

long long int_after(sv s, sv key) {
  const size_t k = s.find(key);
  if (k == npos) return -1;
  size_t p = k + key.size();
  while (p < s.size() && s[p] == ' ') ++p;
  long long v = 0;
  bool any = false;
  while (p < s.size() && s[p] >= '0' && s[p] <= '9' && v < 1000000000) {
    v = v * 10 + (s[p] - '0');
    ++p;
    any = true;
  }
  return any ? v : -1;
}

int signal_named(sv m) {
  struct Name {
    sv n;
    int sig;
  };
  static const Name kNames[] = {{"Segmentation fault", 11}, {"Bus error", 7},  {"Aborted", 6},
                                {"Floating point", 8},      {"Illegal instruction", 4}, {"Killed", 9}};
  for (const auto& n : kNames) {
    if (m.find(n.n) != npos) return n.sig;
  }
  return 0;
}

// "Epoch 3", "Epoch: [0]", "epoch 12/40" at the start of the message or after a clock-like
// prefix word: a progress line, not the word inside prose or a path.
bool epoch_number(sv m) {
  for (sv key : {sv("Epoch "), sv("Epoch: "), sv("epoch "), sv("epoch:"), sv("Starting epoch ")}) {
    const size_t k = m.find(key);
    if (k == npos || k > 40) continue;
    size_t p = k + key.size();
    while (p < m.size() && p < k + key.size() + 4 && m[p] == ' ') ++p;  // "<epoch:  0, iter: 400>"
    if (p < m.size() && ((m[p] >= '0' && m[p] <= '9') || m[p] == '[')) return true;
  }
  return false;
}

// The number written right before `needle` ("3 Workers ...") is above zero: a summary line that
// counts events says something happened only when its count does.
bool count_before(sv m, sv needle) {
  const size_t k = m.find(needle);
  if (k == npos) return false;
  size_t b = k;
  while (b > 0 && m[b - 1] == ' ') --b;
  size_t e = b;
  while (b > 0 && m[b - 1] >= '0' && m[b - 1] <= '9') --b;
  if (b == e) return false;
  for (size_t i = b; i < e; ++i)
    if (m[i] != '0') return true;
  return false;
}

// The signal a launcher says it received or passes on, and which launcher: by the SIG name or
// Python's Signals.SIGx, by strsignal's word ("Terminated", "Hangup"), else the number after the
// word that introduces it. srun's own notices name none: its handler takes SIGTERM, SIGHUP and
// SIGQUIT alike to "forcing job termination" (SIGTERM is the scheduler's), a Ctrl-C as SIGINT.
void read_stop_signal(sv m, LogLine& o) {
  if (m.find("srun: ") != npos) {
    o.word = "srun";
    o.signal = m.find("Ctrl-C") != npos || m.find("interrupt (one more") != npos ? 2 : 15;
    return;
  }
  static const std::pair<sv, int> kNames[] = {
      {"SIGHUP", 1},  {"SIGINT", 2},  {"SIGQUIT", 3},  {"SIGKILL", 9},   {"SIGUSR1", 10}, {"SIGUSR2", 12},
      {"SIGTERM", 15}, {"SIGCONT", 18}, {"SIGTSTP", 20}, {"SIGXCPU", 24}, {"Hangup", 1},   {"Interrupt", 2},
      {"Quit", 3},     {"Killed", 9},   {"Terminated", 15}, {"CPU time limit", 24}};
  for (const auto& [n, sig] : kNames)
    if (m.find(n) != npos) o.signal = sig;
  if (!o.signal) {
    for (sv key : {sv("Received "), sv("Forwarding signal "), sv("SIGNAL ")}) {
      const long long v = int_after(m, key);
      if (v > 0 && v < 65) {
        o.signal = static_cast<int>(v);
        break;
      }
    }
  }
  if (m.find("death signal") != npos) {
    o.word = "torchrun";
  } else if (m.find("slurmstepd") != npos || m.find("CANCELLED AT") != npos) {
    o.word = "slurmstepd";
  } else if (const size_t k = m.find(": Forwarding signal "); k != npos) {
    size_t b = k;
    while (b > 0 && m[b - 1] != ' ' && m[b - 1] != ']') --b;
    o.word = m.substr(b, k - b);
  }
}

}  // namespace

// The table, part: the store, the interfaces, the fabric.
static std::vector<LinePattern> store_and_network_patterns() {
  return {
      // NCCL's AWS OFI plugin cannot register a buffer with the EFA device (gh-awsome-distributed-ai-203).
      {{"NET/OFI", "Unable to register memory"}, {}, LogKind::kIbError, "network", "efa_error", PatternFields::kNone,
       "register_rail_mr_buffer:617 NCCL WARN NET/OFI Unable to register memory (type = 2) for device 4. RC: -22, "
       "Error: Invalid argument"},
      // An IB work completion with an error status (status=12: retry counter exceeded; error 4: local
      // protection) in NCCL's proxy thread (gh-nccl-1405, gh-nccl-1698, gh-nccl-928).
      {{"NET/IB", "Got completion"}, {"status=", "error ", "vendor err"}, LogKind::kIbError, "network", "ib_error",
       PatternFields::kNone,
       "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
       "10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)"},
      // c10d's store-based barrier at init: worker_count of world_size arrived (gh-megatron-deepspeed-338,
      // gh-metaseq-52).
      {{"Timed out initializing process group in store based barrier"}, {}, LogKind::kStoreTimeout, "rendezvous",
       "rendezvous_timeout", PatternFields::kStoreBarrier,
       "RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for key: "
       "store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)"},
      // ...and its progress notice while it waits (torch 1.x distributed_c10d.py _store_based_barrier,
      // logger.info("Waiting in store based barrier to initialize process group for rank: {}, key: {}
      // (world_size={}, worker_count={}, timeout={})")): the waiting rank's own line, and how many
      // ranks the store has counted so far.
      {{"Waiting in store based barrier to initialize process group for rank: ", "worker_count="}, {},
       LogKind::kWorldSize, "", "", PatternFields::kStoreBarrier,
       "Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
       "(world_size=8, worker_count=1, timeout=0:30:00)"},
      // A rank fetching the NCCL unique id from rank 0 through the store timed out: rank 0 never
      // published it (gh-llamafactory-3698, gh-internevo-285, gh-pytorch-82091).
      {{"ncclUniqueId", "store"}, {}, LogKind::kStoreTimeout, "rendezvous", "unique_id_exchange", PatternFields::kNone,
       "torch.distributed.DistBackendError: [4] is setting up NCCL communicator and retrieving ncclUniqueId from [0] "
       "via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout"},
      // A client could not reach the TCPStore at all: nothing listens at MASTER_ADDR:PORT
      // (gh-yolo-world-163, gh-ray-63803; under torchrun's c10d rendezvous: gh-pytorch-79388).
      {{"client socket has timed out after"}, {}, LogKind::kStoreTimeout, "rendezvous", "store_timeout",
       PatternFields::kNone,
       "[E socket.cpp:957] [c10d] The client socket has timed out after 600s while trying to connect to (127.0.0.1, "
       "3333)."},
      // c10d's TCPStore client could not connect, by the errno it reports ("The client socket has failed
      // to connect to [h]:p (errno: 110 - Connection timed out)", torch 2.x socket.cpp; the same text
      // inside DistNetworkError). c10d retries a refused connect until its deadline (then "has timed
      // out after"), so a failed connect names another errno: a timeout is an address that never
      // answered (a wrong MASTER_ADDR, a filtered port), no route is an address the host cannot reach
      // (gh-open-sora-667; the no-route line is from a public Kubernetes job's log). Without an errno
      // ("... to any network address of (h, p).") the store was unreachable at every address it
      // resolved to. The errno lines come first: the exception's text carries both.
      {{"client socket has failed to connect to"}, {"Connection timed out"}, LogKind::kStoreTimeout, "rendezvous",
       "store_timeout", PatternFields::kNone,
       "[W socket.cpp:697] [c10d] The client socket has failed to connect to [::ffff:0.104.99.143]:47389 (errno: 110 "
       "- Connection timed out)."},
      {{"client socket has failed to connect to"}, {"No route to host", "Network is unreachable"},
       LogKind::kStoreRefused, "rendezvous", "store_unreachable", PatternFields::kNone,
       "torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of "
       "(llama2-70b-n2-testys-master-0, 23456). The client socket has failed to connect to "
       "172-16-100-89.llama2-70b-n2-testys-master-0.default.svc.cluster.local:23456 (errno: 113 - No route to host)."},
      {{"client socket has failed to connect to any network address of"}, {}, LogKind::kStoreRefused, "rendezvous",
       "store_unreachable", PatternFields::kNone,
       "[E socket.cpp:753] [c10d] The client socket has failed to connect to any network address of (6841231, "
       "47389)."},
      // One address of the store's name that this host cannot use at all (EADDRNOTAVAIL: an IPv6
      // loopback the container lacks; EAFNOSUPPORT; EINVAL from a name mapped to no usable address).
      // socket.cpp's SocketConnectOp::tryConnect records it as a warning ("has failed to connect to
      // {addr} {err}.", torch 2.x) and goes on to the name's next address; only "... to any network
      // address of (h, p)." (above, which carries these texts too) says that none worked. Alone, the
      // line proves nothing failed: read as nothing (kNone), so no generic "failed to connect" reading
      // takes it for a refused store.
      {{"client socket has failed to connect to", "(errno: "},
       {"Cannot assign requested address", "Address family not supported", "Invalid argument"}, LogKind::kNone, "",
       "", PatternFields::kNone,
       "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot "
       "assign requested address)."},
      // Gloo fell back to the loopback address: peers cannot reach it (gh-aws-do-eks-50).
      {{"Unable to resolve hostname to a (local) address"}, {}, LogKind::kWrongIfname, "network", "wrong_ifname",
       PatternFields::kNone,
       "[rank8] Warning: Unable to resolve hostname to a (local) address. Using the loopback"},
      // NCCL picked an interface of a family it cannot use (gh-nccl-210).
      {{"Socket creation failed", "Address family not supported"}, {}, LogKind::kWrongIfname, "network",
       "wrong_ifname", PatternFields::kNone,
       "include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol"},
  };
}

// The table, part: launchers' and schedulers' notices, the tools' own verdicts.
static std::vector<LinePattern> launcher_patterns() {
  return {
      // The DeepSpeed launcher's notice of a worker's exit (gh-deepspeed-3232).
      {{"exits with return code = "}, {"--local_rank="}, LogKind::kLauncherExit, "", "", PatternFields::kLauncherCode,
       "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', "
       "'--local_rank=0', '--data_path', 'Dahoas/rm-static'] exits with return code = -9"},
      // torch.distributed.launch (PyTorch <= 1.8) raises CalledProcessError for the first worker that
      // failed, with its command line: the local rank, and the signal it died of (Python prints
      // signal.Signals: "<Signals.SIGKILL: 9>") or its exit status (pytorch#61839). Only with a
      // --local_rank argument: a CalledProcessError of a build step (ninja) is no worker's death.
      {{"CalledProcessError", "--local_rank="}, {"died with <Signals.", "returned non-zero exit status"},
       LogKind::kLauncherExit, "", "", PatternFields::kCalledProcess,
       "subprocess.CalledProcessError: Command '['/opt/tiger/conda/bin/python3', '-u', 'train_imagenet.py', "
       "'--local_rank=7', '--save-dir', './fixArch_model/fixArch_model_0718_1817', '--epochs', '180', "
       "'--warmup-epoch', '5', '--total-batch-size', '1024', '--lr-strategy', 'warmup_cosine', '--weight-decay', "
       "'1e-5', '--dropout_rate', '0.0001', '--lr', '0.4', '--arch', 'nnflow_model_v2_woSE', '--image-size', '224', "
       "'--flops', '27.3', '--mix-prob', '0.0', '--mixup', '0.2', '--model-ema', '--data', '/opt/tiger', "
       "'--distill_type', 'KdPixelWise', '--teacher', 'resnet152d', '--teacher_checkpoint', 'resnet152d.pth', "
       "'--resume', './fixArch_model/fixArch_model_0718_1817/model.pth.tar']' died with <Signals.SIGSEGV: 11>."},
      // Any other child that died by a signal ("Command 'XXXXX' died with <Signals.SIGSEGV: 11>.", the
      // command redacted, pytorch#29889): the signal is the story, the worker is not named.
      {{"CalledProcessError", "died with <Signals."}, {}, LogKind::kLauncherExit, "", "", PatternFields::kCalledProcess,
       "subprocess.CalledProcessError: Command XXXXX (my script params) died with <Signals.SIGSEGV: 11>."},
      // The DeepSpeed launcher's sigkill_handler kills every subprocess it started, the failed one
      // included, one line each: on one node the list is the world (gh-deepspeed-3232,
      // gh-deepspeed-4000). torchrun's "closing signal" lines name only the survivors.
      {{"Killing subprocess "}, {}, LogKind::kLauncherSignal, "", "launcher_kill_all", PatternFields::kKilledProcess,
       "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266"},
      // Slurm preempted the job (a job of higher priority, or the nodes' owner, took its nodes): every
      // task is cancelled alike, like the time limit (the line is from a public cluster's user guide,
      // "Freecycle Partition", of a job terminated by the node owner's jobs).
      {{"DUE TO PREEMPTION"}, {"CANCELLED"}, LogKind::kResourceLimit, "resource_limit", "preemption",
       PatternFields::kNone,
       "slurmstepd: error: *** STEP 557341.0 ON c4-n12 CANCELLED AT 2025-03-11T13:26:25 DUE TO PREEMPTION ***"},
      // slurmstepd's own memory enforcement (accounting-based, without the cgroup OOM handler) killed
      // the step over its --mem: an OOM kill of the job's processes (a public cluster's job-error
      // example: "slurmstepd: Exceeded job memory limit" follows it).
      {{"slurmstepd", "exceeded memory limit", "being killed"}, {}, LogKind::kOomKill, "", "", PatternFields::kNone,
       "slurmstepd: Job 6398 exceeded memory limit (50385312 > 49152000), being killed"},
      // c10d's monitored_barrier: rank 0 waits for every other rank's ack and names the ones that
      // never arrived within the timeout (one rank, or all of them with wait_all_ranks=True). Only
      // rank 0 prints this verdict; another rank's "received errors while waiting for send/recv
      // from rank 0" is no verdict on rank 0 (it also fires when rank 0 aborts after finding someone
      // else: pytorch#83289's "circular blame") and is not read as one (NVIDIA/nccl#849's title).
      {{" failed to pass monitoredBarrier in "}, {}, LogKind::kDesyncMissing, "", "", PatternFields::kFailedRanks,
       "RuntimeError: [Rank 0]: Ranks 4, 5, 6, 7 failed to pass monitoredBarrier in 2000000 ms"},
      // The other side of the monitored_barrier: a non-zero rank reached it and then failed in its
      // exchange with rank 0 (rank 0 timed out on another rank and aborted, or died): an echo of a
      // failure elsewhere, which rank 0's own lines name (pytorch#121606's title).
      {{"successfully reached monitoredBarrier, but received errors"}, {}, LogKind::kCommException, "", "",
       PatternFields::kNone,
       "RuntimeError: Rank 2 successfully reached monitoredBarrier, but received errors while waiting for send/recv "
       "from rank 0. Please check rank 0 logs for faulty rank."},
      // Horovod's SHUT_DOWN_ERROR, raised on every rank once Horovod's background loop stopped: its own
      // text says the cause is elsewhere (an exception on some rank, printed before it, or a rank that
      // finished while its peers still submitted collectives). An echo, never the rank's own failure
      // (the line is from a public TensorFlow + Horovod traceback; Horovod before 0.13.9 said "This has
      // been caused by an exception on one of the rank", horovod#243).
      {{"Horovod has been shut down"}, {}, LogKind::kCommException, "", "", PatternFields::kNone,
       "tensorflow.python.framework.errors_impl.UnknownError:  Horovod has been shut down. This was caused by an "
       "exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the "
       "ranks finished execution. If the shutdown was caused by an exception, you should see the exception in the log "
       "before the first shutdown message."},
      // Open MPI's notice that a process called MPI_Abort (mpi4py's and most MPI programs' way out of an
      // uncaught error): that rank of MPI_COMM_WORLD gave up first and Open MPI kills the others. Its
      // exit, as mpirun's "process rank N ... exited" lines are; a rank of another communicator is no
      // global rank, so only MPI_COMM_WORLD's is read (an Open MPI users' list post).
      {{"MPI_ABORT was invoked on rank ", " in communicator MPI_COMM_WORLD"}, {}, LogKind::kMpiExit, "", "",
       PatternFields::kMpiAbort, "MPI_ABORT was invoked on rank 52 in communicator MPI_COMM_WORLD"},
      // The kubelet evicted the pod under node memory pressure (kubectl describe pod's Message, its
      // events): a kill for memory like the OOM killer's, one step earlier (aws/aws-k8s-tester's
      // changelog quotes this line for an evicted prometheus-server).
      {{"The node was low on resource: memory."}, {}, LogKind::kOomKill, "", "", PatternFields::kNone,
       "The node was low on resource: memory. Container prometheus-server was using 3885112Ki, which exceeds its "
       "request of 0. Container prometheus-server-configmap-reload was using 2100Ki, which exceeds its request of 0."},
      // ... and under node disk pressure: the kubelet names the resource it reclaims (pkg/kubelet/eviction/
      // helpers.go:42,84-91@v1.22.6, nodeLowMessageFmt with signalToResource): nodefs/imagefs.available map to
      // "ephemeral-storage", their inodesFree signals to "inodes". The node's disk (or its inodes) ran out
      // and the pod using it was evicted: a full disk, not memory (the examples: a Kubernetes pod-status
      // tool's tests quoting evicted pods' messages).
      {{"The node was low on resource: ephemeral-storage."}, {}, LogKind::kDiskFull, "", "", PatternFields::kNone,
       "The node was low on resource: ephemeral-storage. Threshold quantity: 10%. "},
      {{"The node was low on resource: inodes."}, {}, LogKind::kDiskFull, "", "", PatternFields::kNone,
       "Pod is in Failed phase due to Evicted: The node was low on resource: inodes."},
      // Ray's memory monitor (the raylet, src/ray/raylet/node_manager.cc, Ray 2.x; the line number moves
      // between releases: 3007-3096) kills a task or actor process when the node's memory use passes
      // RAY_memory_usage_threshold, and prints this summary to the driver (doc/source/ray-core/scheduling/
      // ray-oom-prevention.rst: "Ray memory monitor also periodically prints the aggregated out-of-memory
      // killer summary"). With a count above zero, a worker was killed for host memory: an OOM kill, one
      // step before the kernel's.
      {{" Workers (tasks / actors) killed due to memory pressure (OOM)"}, {}, LogKind::kOomKill, "", "",
       PatternFields::kCountBefore,
       "(raylet) [2023-04-09 07:23:59,445 E 395 395] (raylet) node_manager.cc:3049: 10 Workers (tasks / actors) "
       "killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
       "e5d953ef03e55e26f13973ea1b5a0fd0ecc729cd820bc89e4aa50451, IP: 10.0.62.231) over the last time period."},
  };
}

// The table, part: membership and signals passed on.
static std::vector<LinePattern> membership_and_stop_patterns() {
  return {
      // Membership: a process's own statement that it joins a world of N (issue 24: read against the
      // world size, the ranks that never stated it never joined). Lightning prints one per process
      // before init_process_group (lightning/fabric/utilities/distributed.py _init_dist_connection:
      // f"Initializing distributed: GLOBAL_RANK: {global_rank}, MEMBER: {global_rank + 1}/{world_size}";
      // its DeepSpeed strategy "initializing deepspeed distributed: GLOBAL_RANK: ..., MEMBER: ...").
      {{"GLOBAL_RANK: ", "MEMBER: "}, {}, LogKind::kWorldSize, "", "", PatternFields::kMember,
       "Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/4"},
      // ...and rank 0's once every process registered (rank_zero_info after init_process_group
      // returned): init is complete, the world is N.
      {{"All distributed processes registered. Starting with "}, {}, LogKind::kInitDone, "", "",
       PatternFields::kMember, "All distributed processes registered. Starting with 4 processes"},
      // c10d's store-based barrier at the end of init_process_group (torch/distributed/
      // distributed_c10d.py _store_based_barrier: "Rank %s: Completed store-based barrier for key:%s
      // with %s nodes."): that rank finished init, in a world of N.
      {{"Completed store-based barrier for key:", " nodes."}, {}, LogKind::kInitDone, "", "", PatternFields::kMember,
       "Rank 3: Completed store-based barrier for key:store_based_barrier_key:1 with 4 nodes."},
      // A launcher or agent that received a signal and passes it on to the job stops it from outside
      // (issue 24). torchrun's elastic agent turns SIGTERM/SIGINT/SIGHUP/SIGQUIT into a
      // SignalException and shuts its workers down with the same signal
      // (torch/distributed/elastic/agent/server/api.py: logger.warning("Received %s death signal,
      // shutting down workers", e.sigval); Signals.SIGTERM since torch 2.x, the number before; the
      // line is gh-pytorch-114097's).
      {{"death signal, shutting down workers"}, {}, LogKind::kStopSignal, "", "", PatternFields::kStopSignal,
       "W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/agent/server/api.py:688] Received "
       "Signals.SIGTERM death signal, shutting down workers"},
      // srun received SIGTERM, SIGHUP or SIGQUIT and kills its tasks (Slurm src/srun/signals.c,
      // _forward_signal: info("forcing job termination")); a Ctrl-C it passes on as SIGINT
      // (_handle_intr: "sending Ctrl-C to %ps", "interrupt (one more within 1 sec to abort)").
      {{"srun: forcing job termination"}, {}, LogKind::kStopSignal, "", "", PatternFields::kStopSignal,
       "srun: forcing job termination"},
      {{"srun: sending Ctrl-C to "}, {}, LogKind::kStopSignal, "", "", PatternFields::kStopSignal,
       "srun: sending Ctrl-C to StepId=6053.0"},
      {{"srun: interrupt (one more within 1 sec to abort)"}, {}, LogKind::kStopSignal, "", "",
       PatternFields::kStopSignal, "srun: interrupt (one more within 1 sec to abort)"},
      // slurmstepd's notice of a step or job cancelled by a signal (scancel, a requeue), its name from
      // strsignal (src/slurmd/slurmstepd/req.c: "*** %s ON %s CANCELLED AT %s DUE to SIGNAL %s ***").
      {{"DUE to SIGNAL "}, {"CANCELLED AT"}, LogKind::kStopSignal, "", "", PatternFields::kStopSignal,
       "slurmstepd: error: *** STEP 6053.0 ON node-017 CANCELLED AT 2024-04-23T12:18:08 DUE to SIGNAL Terminated ***"},
      // mpirun (orterun's HNP) passing a signal it received on to every process of the job
      // (orte/mca/ess/hnp/ess_hnp_module.c: "%s: Forwarding signal %d to job"); SIGCONT, SIGTSTP and
      // the USR signals are passed on too and stop nothing: the rule reads the signal.
      {{": Forwarding signal ", " to job"}, {}, LogKind::kStopSignal, "", "", PatternFields::kStopSignal,
       "mpirun: Forwarding signal 15 to job"},
  };
}

// The table, part: limits, storage, crashes.
static std::vector<LinePattern> limit_patterns() {
  return {
      // NCCL's SYSCHECK on bind (src/include/checks.h SYSCHECK: WARN("Call to " name " failed : %s",
      // strerror(errno)); ncclSocketListen's bind in socket.cc, 2.12 on) with EADDRINUSE: the bootstrap's or a
      // transport's listening socket found its address taken (a fixed NCCL port range, a port another process
      // holds): the transport could not bind, not a generic system error (gh-nccl-293).
      {{"Call to bind failed", "Address already in use"}, {}, LogKind::kAddressInUse, "network", "address_in_use",
       PatternFields::kNone,
       "42692884fcba:140:140 [0] include/socket.h:333 NCCL WARN Call to bind failed : Address already in use"},
      // Slurm cancelled the job at its time limit (gh-zetta_utils-671).
      {{"DUE TO TIME LIMIT"}, {"CANCELLED"}, LogKind::kResourceLimit, "resource_limit", "time_limit",
       PatternFields::kNone,
       "slurmstepd: error: *** JOB 494583 ON ... CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***"},
      // torch.save could not write (a full volume or quota) (gh-h2o-llmstudio-214).
      {{"PytorchStreamWriter failed writing file"}, {}, LogKind::kDiskFull, "resource_limit", "disk_full",
       PatternFields::kNone,
       "RuntimeError: [enforce fail at inline_container.cc:471] . PytorchStreamWriter failed writing file data/228: "
       "file write failed"},
      // Gloo's TCP transport timing out on a peer's socket: a collective's wait, an echo (gh-sentiment-discovery-43).
      {{"gloo/transport/tcp/"}, {"] Read timeout", "] Write timeout"}, LogKind::kGlooTimeout, "", "",
       PatternFields::kNone,
       "RuntimeError: [/opt/conda/conda-bld/pytorch_1532579245307/work/third_party/gloo/gloo/transport/tcp/"
       "buffer.cc:76] Read timeout [127.0.0.1]:32444"},
      // A TCP-level timeout on one of NCCL's sockets (ETIMEDOUT): the peer's host never answered. A dead
      // peer process closes or resets its connections (its kernel answers); only a broken path or a
      // host gone altogether leaves them unanswered: the network, not a dead rank (gh-nccl-706). The
      // family, as NCCL prints strerror(ETIMEDOUT): "Call to recv from X failed : ...", "Connect to X
      // failed : ..." (2.4-2.18), "socketPollConnect: Connect to X returned 110(Connection timed out)"
      // (2.19-2.2x), "connect to X returned Connection timed out, exceeded error retry count" (2.27+),
      // "socketStartConnect: exceeded timeouts (N)". INFO "..., retrying" lines are not failures. NCCL
      // up to 2.2 printed "WARN" without "NCCL" ("include/socket.h:360 WARN Call to connect failed :
      // Connection timed out", NVIDIA/nccl-tests#15).
      {{" WARN "},
       {"failed : Connection timed out", "(Connection timed out)", "returned Connection timed out",
        "exceeded timeouts"},
       LogKind::kSocketError, "network", "connection_timeout", PatternFields::kNone,
       "[15]worker-23:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from 100.96.188.199<41468> failed "
       ": Connection timed out"},
      // No route to the peer's address (EHOSTUNREACH, ENETUNREACH) on an NCCL socket: the path or the
      // address NCCL chose, not a rank (the same message family as the timeout above; sglang#3820).
      {{" WARN "},
       {"failed : No route to host", "(No route to host)", "returned No route to host", "failed : Network is unreachable",
        "(Network is unreachable)", "returned Network is unreachable"},
       LogKind::kSocketError, "network", "host_unreachable", PatternFields::kNone,
       "node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No "
       "route to host) errno 115(Operation now in progress)"},
      // Gloo's connect to a peer's advertised address failed with no route to it (torch 2.15 Gloo
      // pair.cc): the address a peer listens on is one this host cannot reach (a peer's
      // GLOO_SOCKET_IFNAME naming an interface on another network; hanglab's
      // net_wrong_ifname_exists prints this line).
      {{"SO_ERROR: "}, {"SO_ERROR: No route to host", "SO_ERROR: Network is unreachable"}, LogKind::kSocketError,
       "network", "host_unreachable", PatternFields::kNone,
       "[E1203 12:46:23.308483410 ProcessGroupGloo.cpp:69] Gloo connectFullMesh failed with "
       "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: No route "
       "to host, remote=[10.230.196.102]:33193"},
      // The EFA provider's completion errors that mean the peer's endpoint is gone: its queue pair no
      // longer exists, or it aborted the connection. libfabric's own text: "This error is typically caused
      // by a crashed peer". A dead peer's echo, what NCCL calls ncclRemoteError ("remote process exited or
      // there was a network error"), not an EFA fault (gh-awsome-distributed-ai-312).
      {{"NET/OFI"}, {"Invalid receiver queue pair number", "Receiver connection aborted"}, LogKind::kNcclRemoteError,
       "", "", PatternFields::kNone,
       "[1,2]<stdout>:test-nccl-worker-0:199:263 [2] process_err_completion:1562 NCCL WARN NET/OFI Request "
       "0x7f08c0001d30 completed with error. RC: 5. Error: Invalid receiver queue pair number (QPN) My EFA addr: "
       "fi_addr_efa://[fe80::30:43ff:fe60:456b]:0:657145598"},
      // NCCL could not allocate GPU memory for its buffers (gh-nccl-1235). Its CUDACHECK prints
      // "Cuda failure '%s'" and, since NCCL 2.19, "Cuda failure %d '%s'" (2 = cudaErrorMemoryAllocation:
      // gh-spatialvla-12).
      {{"NCCL WARN"}, {"Cuda failure 'out of memory'", "Cuda failure 2 'out of memory'", "Failed to CUDA calloc",
                       "Failed to CUDA malloc"},
       LogKind::kCudaOom, "resource_limit", "cuda_oom", PatternFields::kNone,
       "ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'"},
      // NCCL's SHM transport could not size its /dev/shm segment: ENOSPC from posix_fallocate is a
      // full /dev/shm (a container's 64 MB default), not a full disk (gh-nccl-290, gh-xgboost-5963).
      {{"NCCL WARN", "posix_fallocate"}, {}, LogKind::kShmError, "resource_limit", "nccl_shm", PatternFields::kNone,
       "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device"},
      // NCCL's proxy service thread lost a local process's connection: that process left, after an
      // abort or at its normal exit. Not a failure; it shows which processes a failure reached
      // (gh-nccl-tests-252).
      {{"[Service thread] Connection closed by localRank"}, {}, LogKind::kLocalPeerClosed, "", "",
       PatternFields::kNone, "kolyoz2:25172:25848 [1] NCCL INFO [Service thread] Connection closed by localRank 0"},
      // Open MPI's crash handler names the signal (gh-horovod-4020, gh-horovod-585).
      {{"Signal: "},
       {"Aborted (6)", "Bus error (7)", "Segmentation fault (11)", "Floating point exception (8)",
        "Illegal instruction (4)"},
       LogKind::kCrash, "", "", PatternFields::kSignalName, "[node-0:391803] Signal: Aborted (6)"},
      // The kernel's report of a process it killed with SIGSEGV (dmesg, syslog, journalctl -k):
      // "comm[pid]: segfault at ADDR ip IP sp SP error N in lib[...]" (x86-64; "eip"/"esp" on 32-bit).
      // The pid ties it to its rank where a launcher named that pid.
      {{"]: segfault at "}, {" ip ", " eip "}, LogKind::kCrash, "", "", PatternFields::kKernelTask,
       "Apr  5 12:01:23 serverwuss kernel: [ 4754.368566] pan[7253]: segfault at 8 ip 000000000048120f sp "
       "00007fff0fb361d0 error 4 in pan[400000+1fb000]"},
      // NCCL could not bring an IB/RoCE queue pair to its connected state (the remote GID or route
      // does not resolve: "failed with error Connection timed out"): the fabric, not a rank
      // (NVIDIA/nccl-tests#227). The fabric's or NCCL's IB set-up, not a transfer that failed: NCCL's
      // own hint after this WARN (src/misc/ibvwrap.cc printIbModifyQpHint@v2.30.7-1) blames ETIMEDOUT on
      // NICs that are not cross-rail connected (NCCL_CROSS_NIC=0) and EINVAL on a wrong
      // NCCL_IB_GID_INDEX; older NCCL prints the same call's failure as "failed with error <strerror>".
      {{"NCCL WARN", "Call to ibv_modify_qp failed"}, {}, LogKind::kIbError, "network", "ib_config",
       PatternFields::kNone,
       "ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out."},
      // Ray's raylet: a worker process it started died before it registered (src/ray/raylet/worker_pool.cc,
      // MonitorStartingWorkerProcess: "Some workers of the worker process(<pid>) have not registered within
      // the timeout. The process is dead, probably it crashed during start."); a Ray Train worker, so a
      // rank's process, died in its start-up (the pid is Ray's worker process, no rank). Its sibling "The
      // process is still alive, probably it's hanging during start." is no death (gh-rlinf-227).
      {{"have not registered within the timeout", "The process is dead, probably it crashed during start"}, {},
       LogKind::kCrash, "rank_exit", "crashed", PatternFields::kNone,
       "(raylet) [2025-10-31 17:08:05,490 E 24507 24507] (raylet) worker_pool.cc:586: Some workers of the worker "
       "process(26154) have not registered within the timeout. The process is dead, probably it crashed during "
       "start."},
      // UCX's signal handler (gh-pipedream-76).
      {{"Caught signal "}, {"(Bus error", "(Segmentation fault", "(Aborted", "(Illegal instruction"}, LogKind::kCrash,
       "", "", PatternFields::kSignalName,
       "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)"},
  };
}

// The table, part: phase markers, progress and the program's end.
static std::vector<LinePattern> phase_patterns() {
  return {
      // NCCL's INFO lines that only a communicator's set-up prints (NCCL_DEBUG=INFO; the INIT and BOOTSTRAP
      // subsystems): ncclCommInitRank's "... - Init START" (src/init.cc, 2.19+), the bootstrap's "Bootstrap : Using
      // <if>" (src/bootstrap.cc bootstrapNetInit), initTransportsRank's "Connected all rings/trees" (src/init.cc) and
      // the RAS client's "RAS client listening socket at" (src/ras/client_support.cc, from rasInit in the
      // bootstrap, v2.24+). Where no step, progress or completed collective follows, the job was setting up.
      {{"NCCL INFO"},
       {" - Init START", "Bootstrap : Using", "Bootstrap: Using", "Connected all rings", "Connected all trees", "RAS client listening socket at"},
       LogKind::kInitStep, "", "", PatternFields::kNone,
       "rtptest1620:935572:937467 [0] NCCL INFO RAS client listening socket at ::1<28028>"},
      // NCCL's error propagating up through init.cc: the failure hit communicator setup (gh-nccl-1235).
      {{"NCCL INFO init.cc:", " -> "}, {}, LogKind::kInitStep, "", "", PatternFields::kNone,
       "ng30903:3063025:3066048 [0] NCCL INFO init.cc:1079 -> 3"},
      // NCCL's own collective check (2.4: opCount) saw ranks issue different collectives (gh-nccl-296).
      // ... and its warning form (ncclCommGetAsyncError, src/init.cc:1254-1258@v2.4.8-1): the device-side check
      // (checkMismatch, src/collectives/device/primitives.h:365-373@v2.4.8-1; prims_ll.h:47@v2.7.6-1, gone in
      // 2.7.8) saw a peer's opCount run ahead of this rank's current collective: the ranks are in different
      // collectives. "around rank N" is the printing rank itself, no culprit (gh-pytorch-lightning-8214).
      {{"NCCL WARN Your program may be hanging, this may be caused by a collective mismatch"}, {},
       LogKind::kCollMismatch, "collective_mismatch", "mismatched_collective", PatternFields::kNone,
       "[0] init.cc:1256 NCCL WARN Your program may be hanging, this may be caused by a collective mismatch around "
       "rank 1. Please check your collective calls at and around this rank. You can use NCCL_DEBUG=INFO and "
       "NCCL_DEBUG_SUBSYS=COLL to see the collective logs"},
      {{"NCCL WARN Mismatched collective detected"}, {}, LogKind::kCollMismatch, "collective_mismatch",
       "mismatched_collective", PatternFields::kNone,
       "init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective calls at and around rank "
       "39. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs"},
      // Ultralytics' trainer sets up before its first epoch (ultralytics/engine/trainer.py _setup_train:
      // LOGGER.info(f"Freezing layer '{k}'") for its always-frozen ".dfl" layers, then check_amp on rank 0,
      // "AMP: running Automatic Mixed Precision (AMP) checks...", and dist.broadcast(self.amp, src=0): the job's
      // first collective); BaseModel.load prints "Transferred %d/%d items from pretrained weights"
      // (ultralytics/nn/tasks.py). Start-up lines (gh-ultralytics-15683).
      {{"Freezing layer '"}, {}, LogKind::kInitBegin, "", "", PatternFields::kNone,
       "Freezing layer 'model.22.dfl.conv.weight'"},
      {{"AMP: running Automatic Mixed Precision (AMP) checks"}, {}, LogKind::kInitBegin, "", "", PatternFields::kNone,
       "AMP: running Automatic Mixed Precision (AMP) checks..."},
      {{"Transferred ", " items from pretrained weights"}, {}, LogKind::kInitBegin, "", "", PatternFields::kNone,
       "Transferred 319/355 items from pretrained weights"},
      // A traceback frame inside torch.save: the failure hit a checkpoint save (gh-dolly-139).
      {{"File \"", "serialization.py\""}, {", in save", ", in _save"}, LogKind::kCheckpointBegin, "", "",
       PatternFields::kNone,
       "  File \"/opt/conda/lib/python3.7/site-packages/torch/serialization.py\", line 379, in save"},
      // torchtune gathers the full state dict to save a checkpoint (gh-torchtune-2093).
      {{"full model state dict"}, {}, LogKind::kCheckpointBegin, "", "", PatternFields::kNone,
       "INFO:torchtune.utils._logging:Getting full model state dict took 114.73 secs"},
      // DeepSpeed's checkpoint engine committed a save: the collective after it is the save's
      // closing barrier or the first one after the save (gh-onebit-8).
      {{"Checkpoint ", " is ready now!"}, {}, LogKind::kCheckpointEnd, "", "", PatternFields::kNone,
       "[torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step5000 is ready now!"},
      // ElasticDL's data service has no task (data shard) left for this worker: it has run out
      // of data while its peers may still hold batches (gh-elasticdl-1895).
      {{"No tasks for now"}, {}, LogKind::kDataExhausted, "", "", PatternFields::kNone,
       "[2020-07-15 06:29:15,255] [INFO] [task_data_service.py:220:_gen] No tasks for now, maybe more later"},
      // ProcessGroupNCCL's exit-time warning as torch 2.4-2.6 words it (~ProcessGroupNCCL, TORCH_WARN_ONCE
      // "WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. ...", printed
      // with TORCH_WARN's " (function operator())" suffix; 2.7 on: the entry below). The destructor of a
      // group still alive runs at interpreter exit, after the program's work (gh-dmlcloud-61). A process
      // killed by a signal (a launcher's SIGTERM, the OOM killer) runs no destructor and prints neither.
      {{"process group has NOT been destroyed before we destruct ProcessGroupNCCL"}, {}, LogKind::kShutdown, "", "",
       PatternFields::kProcessExit,
       "[rank0]:[W227 10:54:51.986111855 ProcessGroupNCCL.cpp:1374] Warning: WARNING: process group has NOT been "
       "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
       "destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare "
       "cases this process can exit before this point and block the progress of another member of the process "
       "group. This constraint has always been present,  but this warning has only been added since PyTorch 2.4 "
       "(function operator())"},
      // PyTorch's exit-time warning: the program is past its work and exiting (gh-megatron-lm-1874).
      {{"destroy_process_group() was not called before program exit"}, {}, LogKind::kShutdown, "", "",
       PatternFields::kProcessExit,
       "[rank0]:[W1019 08:16:22.397556647 ProcessGroupNCCL.cpp:1477] Warning: WARNING: destroy_process_group() was "
       "not called before program exit, which can leak resources."},
      // Epoch progress (Keras "Epoch 1/1", "Epoch: [0][415/1736]", "Starting epoch 1: ..."): training
      // had begun (gh-horovod-469, gh-arjunausers-52, gh-storage-172).
      {{"poch"}, {"Epoch ", "Epoch: ", "epoch ", "epoch:"}, LogKind::kProgress, "", "", PatternFields::kEpoch,
       "Epoch 1/1", true},
      // HF Trainer's log line: ProgressCallback.on_log writes the logs dict as Python prints it
      // (transformers/trainer_callback.py), a loss and the fractional epoch of the training loop.
      {{"'loss': ", "'epoch': "}, {}, LogKind::kProgress, "", "", PatternFields::kNone,
       "{'loss': 1.4208, 'grad_norm': 2.910400629043579, 'learning_rate': 9.892529034494714e-06, 'epoch': 0.05}", true},
      // The program's own word that its training loop begins (OpenPCDet's banner, HF Trainer's
      // "***** Running training *****"): training had begun (gh-pai-5464).
      {{}, {"Start training", "Starting training", "start training", "starting training", "***** Running training *****"},
       LogKind::kProgress, "", "", PatternFields::kNone,
       "2021-04-30 07:10:43,386 INFO **********************Start training waymo_models/pv_rcnn(default)"
       "**********************",
       true},
      // ProcessGroupNCCL's heartbeat monitor: the watchdog thread itself stopped making progress
      // (gh-deim-105, gh-llamafactory-6953, gh-xdit-147).
      {{"Heartbeat monitor timed out"}, {}, LogKind::kHeartbeatMonitor, "", "heartbeat_timeout", PatternFields::kPendingWork,
       "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated "
       "after dumping debug info. workMetaList_.size()=103"},
      {{"watchdog got stuck for"}, {}, LogKind::kHeartbeatMonitor, "", "heartbeat_timeout", PatternFields::kNone,
       "[rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 1] [PG 0 Rank 1] ProcessGroupNCCL's watchdog got stuck for "
       "600 seconds without making progress in monitoring enqueued collectives."},
  };
}

const std::vector<LinePattern>& line_patterns() {
  // The parts in order: the first entry that matches decides.
  static const std::vector<LinePattern> kTable = [] {
    std::vector<LinePattern> t;
    for (auto part : {store_and_network_patterns, launcher_patterns, membership_and_stop_patterns, limit_patterns,
                      phase_patterns})
      for (auto& p : part()) t.push_back(std::move(p));
    return t;
  }();
  return kTable;
}

// The local rank a launcher's failure notice names in the command it quotes. The DeepSpeed launcher's
// "{cmd} exits with return code = {code}" (deepspeed/launcher/launch.py sigkill_handler, :320@v0.9.3,
// :321@v0.10.0, :324@v0.8.3) and torch.distributed.launch's CalledProcessError(returncode, cmd=cmd) (PyTorch
// <= 1.8) both quote `cmd` as the spawning loop left it: the LAST process's command, "--local_rank=<nproc - 1>",
// whichever process failed (the code is the failed one's). Only "--local_rank=0" (one process per node)
// names the process that failed; any other number names no one.
static int launcher_cmd_local_rank(sv m) {
  const int l = bounded_rank(int_after(m, "--local_rank="));
  return l == 0 ? 0 : -1;
}

bool match_line_pattern(std::string_view m, LogLine& o, bool fallback) {
  for (const auto& p : line_patterns()) {
    if (p.fallback != fallback) continue;
    bool ok = true;
    for (sv n : p.all) {
      if (m.find(n) == npos) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    if (!p.any.empty()) {
      ok = false;
      for (sv n : p.any) {
        if (m.find(n) != npos) {
          ok = true;
          break;
        }
      }
      if (!ok) continue;
    }
    if (p.fields == PatternFields::kEpoch && !epoch_number(m)) continue;
    if (p.fields == PatternFields::kCountBefore && !count_before(m, p.all.front())) continue;
    o.kind = p.kind;
    o.category = p.category;
    o.cause = p.cause;
    switch (p.fields) {
      case PatternFields::kSignalName:
        o.signal = signal_named(m);
        if (!o.signal) o.signal = 6;
        break;
      case PatternFields::kStoreBarrier: {
        const long long w = int_after(m, "world_size=");
        const long long j = int_after(m, "worker_count=");
        if (w > 0) o.world = bounded_world(w);
        if (j >= 0 && w > 0) o.joined = static_cast<int>(j);
        // Both lines name the rank that waits, the one that writes them ("for rank: 0", "on rank: 7";
        // the catalogue's meaning of the timeout names the same hole as its rank), below any prefix's.
        if (const size_t k = m.find("rank: "); k != npos && o.rank_src < RankSource::kMessage) {
          const long long r = int_after(m.substr(k), "rank: ");
          if (r >= 0) {
            o.rank = bounded_rank(r);
            o.rank_src = RankSource::kMessage;
          }
        }
        break;
      }
      case PatternFields::kLauncherCode: {
        const size_t k = m.find("return code = ");
        size_t p = k + 14;
        const bool neg = p < m.size() && m[p] == '-';
        const long long c = int_after(m.substr(neg ? p + 1 : p), "");
        if (c >= 0) {
          o.code = static_cast<int>(neg ? -c : c);
          if (neg && c < 65) o.signal = static_cast<int>(c);
        }
        o.local_rank = launcher_cmd_local_rank(m);
        break;
      }
      case PatternFields::kKilledProcess:
        o.pid = int_after(m, "Killing subprocess ");
        o.word = "SIGKILL";
        o.signal = 9;
        break;
      case PatternFields::kPendingWork:
        o.pending = int_after(m, "workMetaList_.size()=");
        break;
      case PatternFields::kKernelTask: {
        const size_t k = m.find("]: segfault at ");
        const size_t open = m.rfind('[', k);
        if (open != npos) {
          const long long pid = int_after(m.substr(open, k - open), "[");
          if (pid > 0) o.pid = pid;
          size_t b = open;
          while (b > 0 && m[b - 1] != ' ') --b;
          o.word = m.substr(b, open - b);
        }
        o.signal = 11;
        break;
      }
      case PatternFields::kCalledProcess: {
        const size_t k = m.find("died with <Signals.");
        if (k != npos) {
          const size_t colon = m.find(": ", k);
          const long long sig = colon == npos ? -1 : int_after(m.substr(colon), ": ");
          if (sig > 0 && sig < 65) o.signal = static_cast<int>(sig);
        } else {
          const long long c = int_after(m, "non-zero exit status ");
          if (c >= 0) o.code = static_cast<int>(c);
        }
        o.local_rank = launcher_cmd_local_rank(m);
        break;
      }
      case PatternFields::kMpiAbort:
        o.other_rank = bounded_rank(int_after(m, "invoked on rank "));
        o.word = "MPI_ABORT";
        break;
      case PatternFields::kFailedRanks: {
        // "... Rank 1 failed to pass" / "... Ranks 4, 5, 6, 7 failed to pass": the list between the
        // last "Rank"/"Ranks" and " failed"; anything but digits, commas and spaces there: no list.
        o.word = "monitored_barrier";
        const size_t f = m.find(" failed to pass monitoredBarrier in ");
        const size_t r = m.rfind("Rank", f);
        if (r == npos) break;
        size_t p = r + 4;
        if (p < m.size() && m[p] == 's') ++p;
        std::vector<int> ranks;
        bool ok = p < f && m[p] == ' ';
        while (ok && p < f) {
          while (p < f && (m[p] == ' ' || m[p] == ',')) ++p;
          if (p >= f) break;
          long long v = 0;
          bool any = false;
          while (p < f && m[p] >= '0' && m[p] <= '9' && v < 1000000000) {
            v = v * 10 + (m[p] - '0');
            ++p;
            any = true;
          }
          if (!any || bounded_rank(v) < 0) ok = false;
          else ranks.push_back(static_cast<int>(v));
        }
        if (ok) o.ranks = std::move(ranks);
        break;
      }
      case PatternFields::kStopSignal:
        read_stop_signal(m, o);
        break;
      case PatternFields::kMember: {
        long long w = -1;
        if (const size_t k = m.find("MEMBER: "); k != npos) {
          const size_t slash = m.find('/', k);
          if (slash != npos && slash - k < 20) w = int_after(m.substr(slash), "/");
          const long long r = int_after(m, "GLOBAL_RANK: ");
          if (r >= 0 && o.rank_src < RankSource::kMessage) {
            o.rank = bounded_rank(r);
            o.rank_src = RankSource::kMessage;
          }
        } else if (m.find("Starting with ") != npos) {
          w = int_after(m, "Starting with ");
        } else {
          const size_t k = m.rfind(" with ");
          if (k != npos) w = int_after(m.substr(k), " with ");
        }
        if (w > 0) o.world = bounded_world(w);
        break;
      }
      case PatternFields::kProcessExit:
        o.word = "process_exit";
        break;
      case PatternFields::kNone:
      case PatternFields::kEpoch:
      case PatternFields::kCountBefore:
        break;
    }
    return true;
  }
  return false;
}

}  // namespace hanglab
