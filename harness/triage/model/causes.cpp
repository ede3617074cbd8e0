// The answers triage can give (causes.hpp). Grouped by category; each line says what the answer
// claims, in the words the reasoners' summaries use.
#include "triage/model/causes.hpp"

#include <algorithm>

namespace hanglab {

const std::vector<TriageCause>& triage_causes() {
  static const std::vector<TriageCause> kList = {
      // -- rendezvous: the job never formed (store, addresses, ports, names, who joined)
      {"rendezvous", "duplicate_rank", "two processes were started with one RANK; another rank never started"},
      {"rendezvous", "rendezvous_timeout", "ranks timed out waiting for each other in rendezvous"},
      {"rendezvous", "stale_rendezvous", "the store counted more arrivals than the world: an earlier run's store"},
      {"rendezvous", "store_timeout", "a client timed out connecting to the TCPStore (nothing listened there)"},
      {"rendezvous", "store_unreachable", "no address of the TCPStore's host could be reached"},
      {"rendezvous", "connection_refused", "the rendezvous store refused the connection"},
      {"rendezvous", "address_in_use", "the rendezvous port was already in use"},
      {"rendezvous", "dns_failure", "a host name (MASTER_ADDR) did not resolve"},
      {"rendezvous", "unique_id_exchange", "a rank timed out fetching the NCCL unique id through the store"},
      {"rendezvous", "rendezvous_error", "process-group creation failed"},
      {"rendezvous", "rank_never_started", "a rank was launched (or belongs to the world) but never joined"},
      {"rendezvous", "stuck_in_rendezvous", "every rank is still in init with no error"},
      {"rendezvous", "late_joiner", "a rank arrived after its peers had given up on it"},
      {"rendezvous", "wrong_master_addr", "a rank was given a MASTER_ADDR where no store listens"},
      {"rendezvous", "duplicate_gpu",
       "two ranks of one communicator on one GPU (a LOCAL_RANK / CUDA_VISIBLE_DEVICES mix-up)"},
      {"rendezvous", "invalid_device", "a rank asked for a GPU the node does not have (more processes than GPUs)"},
      {"rendezvous", "launch_error", "the launcher could not start the job's processes"},
      {"rendezvous", "pmi_error", "the process-management interface (PMI/PMIx) between launcher and ranks failed"},
      {"rendezvous", "mpi_init_error", "MPI_Init failed"},
      {"rendezvous", "bootstrap_error", "NCCL's bootstrap (its own rendezvous over sockets) failed"},
      {"rendezvous", "socket_error", "a socket of the rendezvous failed"},
      {"rendezvous", "nccl_init_hang", "NCCL's communicator set-up never completed"},
      // -- network: links, interfaces, transports
      {"network", "wrong_ifname", "no usable, or the wrong, socket interface (NCCL/GLOO_SOCKET_IFNAME)"},
      {"network", "ib_error", "an InfiniBand/RoCE transport error"},
      {"network", "efa_error", "an AWS EFA (libfabric) transport error"},
      {"network", "connection_timeout", "a socket to a peer timed out (the peer never answered)"},
      {"network", "host_unreachable", "a peer's address has no route"},
      {"network", "comm_error", "link errors that no rank's death explains"},
      {"network", "internode_timeout", "every rank of every node waits: the network between the nodes"},
      {"network", "partition", "a node was cut off (the probe after the hang)"},
      {"network", "mtu_mismatch", "small packets pass, large ones do not (the probe after the hang)"},
      {"network", "packet_loss", "a share of the packets between the nodes is lost (the probe after the hang)"},
      {"network", "socket_error", "a socket call of the transport failed"},
      {"network", "connection_failed", "a connection to a peer could not be made"},
      {"network", "ib_config", "the InfiniBand/RoCE set-up is wrong (device, port, GID, MTU, limits)"},
      {"network", "slurm_rpc_error", "Slurm's daemons could not reach each other"},
      {"network", "ucx_error", "a UCX transport error"},
      {"network", "ucx_no_transport", "UCX found no transport between two peers"},
      {"network", "net_plugin_error", "NCCL's network plugin failed"},
      {"network", "net_device_mismatch", "the ranks chose different network devices"},
      {"network", "message_truncated", "a message arrived larger than the buffer posted for it"},
      {"network", "tls_error", "a TLS connection failed"},
      {"network", "address_in_use", "a transport could not bind its address (in use)"},
      {"network", "dns_failure", "a transport could not resolve a host name"},
      // -- rank_exit: a rank's process ended and its peers' errors are echoes
      {"rank_exit", "killed", "killed by a signal from outside (SIGKILL, SIGTERM)"},
      {"rank_exit", "crashed", "died of a crash signal (SIGABRT, SIGBUS, SIGILL, SIGFPE) or std::terminate"},
      {"rank_exit", "segfault", "died of SIGSEGV"},
      {"rank_exit", "oom",
       "out of host memory: killed by the kernel's or the cgroup's OOM killer, or its own allocation failed "
       "(std::bad_alloc, MemoryError)"},
      {"rank_exit", "cuda_oom", "CUDA out of memory"},
      {"rank_exit", "cuda_error", "a CUDA error (illegal access, Xid, ...)"},
      {"rank_exit", "exception", "an exception ended the rank"},
      {"rank_exit", "usage_error", "the rank rejected its arguments or environment"},
      {"rank_exit", "nonzero_exit", "the rank exited non-zero and nothing says why"},
      {"rank_exit", "node_failure", "every rank of one node died at once"},
      {"rank_exit", "external_signal",
       "a launcher or agent received a signal and stopped the job's processes: "
       "the job was stopped from outside"},
      {"rank_exit", "peer_closed", "a rank found its peer's connection closed at the end of the job"},
      {"rank_exit", "nccl_internal_error", "an internal check of NCCL failed on the rank"},
      {"rank_exit", "internal_error", "an internal check of a library failed on the rank"},
      {"rank_exit", "ucx_error", "UCX failed on the rank"},
      {"rank_exit", "launch_error", "the rank's process could not be set up by its launcher"},
      {"rank_exit", "topology_error", "NCCL could not build its topology (devices, PCI, NVLink)"},
      {"rank_exit", "io_forwarding_error", "the launcher's forwarding of the rank's I/O failed"},
      {"rank_exit", "driver_error", "a driver call failed (CUDA, the NIC's)"},
      {"rank_exit", "system_error", "a system call failed on the rank"},
      {"rank_exit", "exited_without_finalize", "an MPI process exited without MPI_Finalize"},
      {"rank_exit", "auth_error", "authentication between launcher and daemons failed (munge)"},
      {"rank_exit", "mpi_error", "an MPI call failed on the rank"},
      {"rank_exit", "mpi_abort", "the rank called MPI_Abort"},
      {"rank_exit", "nvls_error", "NCCL's NVLink SHARP set-up failed"},
      {"rank_exit", "nccl_version_mismatch", "the ranks run different NCCL versions"},
      {"rank_exit", "hardware_error", "the hardware reported an error"},
      // -- straggler: a rank alive but late
      {"straggler", "frozen", "a rank is alive but silent (stopped, no heartbeats)"},
      {"straggler", "slow_rank", "a rank computes or progresses much slower than its peers"},
      {"straggler", "slowdown", "the whole job slowed down; which rank paces it is not in the logs"},
      {"straggler", "checkpoint_stall", "a save began and never ended while the others waited"},
      {"straggler", "slow_storage", "a rank stuck in I/O on slow storage while its peers waited"},
      {"straggler", "unresponsive", "a rank alive but absent from the collective its peers wait in"},
      {"straggler", "stuck_in_init", "a rank alive in init while its peers wait in a collective"},
      {"straggler", "stuck_in_forward", "a rank alive in its forward pass while its peers wait in a collective"},
      {"straggler", "stuck_in_backward", "a rank alive in backward while its peers wait in a collective"},
      {"straggler", "stuck_in_optimizer", "a rank alive in its optimizer step while its peers wait in a collective"},
      {"straggler", "stuck_in_checkpoint", "a rank alive in a checkpoint save while its peers wait in a collective"},
      {"straggler", "stuck_in_eval", "a rank alive in an evaluation while its peers wait in a collective"},
      {"straggler", "stuck_in_shutdown", "a rank alive in its shutdown while its peers wait in a collective"},
      {"straggler", "stuck_in_unknown", "a rank alive outside the collective its peers wait in, phase unknown"},
      // -- data_loading: the input pipeline
      {"data_loading", "data_error", "the input data was unreadable or malformed"},
      {"data_loading", "shm_exhausted", "DataLoader workers ran out of shared memory (/dev/shm)"},
      {"data_loading", "data_loader_stall", "a rank stuck loading data while its peers waited"},
      {"data_loading", "data_loader_crash", "a DataLoader worker died"},
      {"data_loading", "oom", "a DataLoader worker was OOM-killed"},
      // -- resource_limit: a limit of the host or the scheduler ended the job
      {"resource_limit", "disk_full", "no space left on the device"},
      {"resource_limit", "nccl_shm", "NCCL could not create its shared-memory segment"},
      {"resource_limit", "cuda_oom", "CUDA out of memory"},
      {"resource_limit", "shm_exhausted", "shared memory exhausted"},
      {"resource_limit", "time_limit", "the scheduler's time limit ended the job"},
      {"resource_limit", "preemption", "the scheduler preempted the job"},
      {"resource_limit", "resource_limit", "another limit ended the job"},
      {"resource_limit", "oom", "host memory exhausted (an allocation failed or the OOM killer acted)"},
      {"resource_limit", "allocation_failed", "an allocation of a library's own (pinned memory, a pool) failed"},
      {"resource_limit", "fd_exhausted", "the process ran out of file descriptors (ulimit -n)"},
      // -- collective_mismatch: the ranks' collective sequences diverged
      {"collective_mismatch", "mismatched_collective", "ranks are in different collectives at one sequence number"},
      {"collective_mismatch", "skipped_collective", "a rank skipped a collective its peers entered"},
      {"collective_mismatch", "extra_collective", "a rank issued a collective its peers did not"},
      {"collective_mismatch", "uneven_batches", "a rank ran out of data and left the loop early"},
      {"collective_mismatch", "nan_skip", "a rank skipped backward (a NaN loss) and its collectives"},
      // -- unknown: what the input proves is in the notes; no mechanism is named
      {"unknown", "unknown", "the input does not decide"},
      {"unknown", "all_ranks_waiting", "every rank waits in the same collective and nothing says why"},
      {"unknown", "collective_timeout", "every rank timed out in the same collective and nothing says why"},
      {"unknown", "rank_absent", "ranks never reported what their peers report: dead, hung or slow is not provable"},
      {"unknown", "no_error_logged", "no error in the logs and the job did not finish"},
      {"unknown", "heartbeat_timeout", "ProcessGroupNCCL's heartbeat monitor fired; the stuck call is not in the logs"},
      // -- none
      {"none", "none", "nothing failed"},
  };
  return kList;
}

bool listed_cause(std::string_view category, std::string_view cause) {
  const auto& l = triage_causes();
  return std::any_of(l.begin(), l.end(),
                     [&](const TriageCause& c) { return c.category == category && c.cause == cause; });
}

bool listed_category(std::string_view category) {
  for (std::string_view c : {"rendezvous", "collective_mismatch", "rank_exit", "straggler", "data_loading", "network",
                             "resource_limit", "none", "unknown"})
    if (c == category) return true;
  return false;
}

bool listed_phase(std::string_view phase) {
  for (std::string_view p : {"init", "training", "checkpoint", "eval", "data", "shutdown", "unknown"})
    if (p == phase) return true;
  return false;
}

std::string_view stuck_in_cause(std::string_view trace_phase) {
  static constexpr std::string_view kKnown[] = {"stuck_in_init",      "stuck_in_forward",    "stuck_in_backward",
                                                "stuck_in_optimizer", "stuck_in_checkpoint", "stuck_in_eval",
                                                "stuck_in_shutdown"};
  for (std::string_view c : kKnown)
    if (c.substr(9) == trace_phase) return c;
  return "stuck_in_unknown";
}

}  // namespace hanglab
