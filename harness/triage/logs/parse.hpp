// Plain-log line parser for triage of real incident logs. parse_log_line() takes one
// line of whatever a cluster left behind (kubectl logs --timestamps, torchrun/Slurm/
// Open MPI launcher output, glog-style c10d lines, Python logging, dmesg, the hanglab
// workloads' own lines) and returns its clock, who wrote it (global rank, PG-local rank,
// local rank, host, pid) and what it says (a step, a watchdog timeout with SeqNum/OpType/
// Numel, a peer that closed its socket, an OOM kill, an exit status...), as a LogLine of
// views into the line. It keeps no state across lines: multi-line constructs (torchrun's
// failure summary, Open MPI's exit block, continuation lines) are assembled by the
// scanner in triage_logs.cpp. Internal to hanglab_triage; exposed for unit tests.
//
// Speed matters (16k ranks x thousands of step lines): the common step line is
// recognised by its first word before any keyword search, and nothing allocates except
// the rank list of a desync report.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "triage/model/observations.hpp"
#include "triage/model/result.hpp"

namespace hanglab {

struct CatalogueEntry;

enum class LogKind : uint8_t {
  kNone,
  // progress and shape of the job
  kStep,             // step/iteration N (step, total, dur_ms; the loss is not kept)
  kDone,             // the program says it finished ("done: 12/12 steps", "Training completed")
  kLeftLoop,         // left the training loop but stays alive (final barrier, lingering)
  kDataExhausted,    // "data exhausted after 7 of 12 steps"
  kInitDone,         // process group / communicator ready
  kInitStep,         // a line of communicator setup (NCCL's "NCCL INFO init.cc:1079 -> 3" error trace)
  kWorldSize,        // a statement of the world size only
  kPgInit,           // "[PG 1 Rank 2] ProcessGroupNCCL initialization options: size: 4, global rank: 6"
  kCheckpointBegin,  // saving a checkpoint
  kCheckpointEnd,
  kEvalBegin,        // validation / evaluation started
  kEvalEnd,
  kProgress,         // training progress without a step number ("Epoch 1/1", "Starting epoch 1")
  kShutdown,         // the program is exiting ("destroy_process_group() was not called before program exit")
  kDataWait,         // waiting for / loading data
  kDataPrep,         // a process's own data preparation under way, from the preparing library's progress
                     // output (faiss k-means over the training vectors, classify_text.cpp data_prep_line)
  kInitBegin,        // inside start-up: a traceback frame of init_process_group, initialize, init_* (frames.cpp)
  kTrainBegin,       // inside the training loop: a traceback frame of train, training_step, fit (frames.cpp)
  // PyTorch c10d ProcessGroupNCCL
  kWatchdogTimeout,   // "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=...)"
  kWatchdogRepeat,    // the same timeout repeated ("watchdog thread terminated with exception", what())
  kWorkStatus,        // "last enqueued NCCL work: A, last completed NCCL work: B"
  kDumpSignal,        // "Received a dump signal ... from rank N" / "from this local rank"
  kHeartbeatMonitor,  // "Heartbeat monitor timed out! Process will be terminated after dumping debug info."
  kDesyncMissing,     // desync report: "ranks [5] are the lagging ranks ... never joined any collectives"
  kDesyncLagging,     // desync report: "[5] joined but didn't finish collective #N"
  kCollMismatch,      // "Detected mismatch between collectives on ranks. Rank 0 is running ... but Rank 2 ..."
                      // (TORCH_DISTRIBUTED_DEBUG=DETAIL), Gloo's "op.preamble.length <= op.nbytes. 2116 vs 4"
  kCollStart,         // DETAIL mode's ProcessGroupWrapper INFO line, one per collective a rank enters:
                      // "[Rank 1] Running collective: CollectiveFingerPrint(SequenceNumber=3, OpType=BROADCAST,
                      // TensorShape=[1], ...)" (seq, op, numel_in = the shape's element count); not an event:
                      // the reader keeps each rank's last one (RankLog::started)
  kCollInFlight,      // NCCL's proxy progress thread failed while moving a collective's data (its error trace
                      // "proxy.cc:878 -> 6 [Progress Thread]", "[Proxy Thread]", 2.3's "[Proxy thread error]"):
                      // a collective or p2p op was running; the failure is the WARN before it (catalogue)
  kCommAborted,       // "NCCL communicator was aborted"
  kNcclAsyncFailed,   // "Some NCCL operations have failed or timed out", "taking the entire process down"
  kNcclRemoteError,   // "remote process exited or there was a network error"
  kNcclSystemError,   // "unhandled system error"
  kNcclError,         // other "NCCL error"
  kWrongIfname,       // "Bootstrap : no socket interface found", "Unable to find address for: eth9"
  kShmError,          // NCCL "Error while creating shared memory segment /dev/shm/nccl-... (size N)"
  kIbError,           // NCCL NET/IB completion / QP errors
  kSocketError,       // NCCL NET/Socket errors
  // Gloo / TCP
  kGlooTimeout,  // "Timed out waiting 5000ms for recv operation to complete"
  kCommClosed,   // "Connection closed by peer", "Connection reset by peer", "Read error", "Broken pipe"
  kLocalPeerClosed,  // NCCL INFO "[Service thread] Connection closed by localRank 2": that local process left
                     // (an abort or its normal exit); not a failure by itself
  // TCPStore / rendezvous / c10d init
  kStoreTimeout,      // "client socket has timed out", "Socket Timeout", "waiting for clients. 3/4 clients joined"
  kStoreRefused,      // store connect refused / failed to connect
  kAddressInUse,      // "Address already in use"
  kDnsFailure,        // "Name or service not known", "Temporary failure in name resolution"
  kRendezvousError,   // RendezvousError and friends, c10d init failures
  // process failures
  kTraceback,         // "Traceback (most recent call last):"
  kException,         // a Python exception line "RuntimeError: ..." (not comm, OOM or CUDA)
  kCommException,     // an exception whose text is a timeout / comm error (DistBackendError, ...)
  kCudaOom,           // "torch.cuda.OutOfMemoryError: CUDA out of memory."
  kCudaError,         // "CUDA error: an illegal memory access was encountered", Xid
  kTerminate,         // "terminate called after throwing an instance of 'X'"
  kCrash,             // "Segmentation fault (core dumped)", "Bus error", "Aborted (core dumped)" (signal set)
  kDataLoaderKilled,  // "DataLoader worker (pid 123) is killed by signal: Bus error."
  kShmBusError,       // "Unexpected bus error encountered in worker ... insufficient shared memory (shm)",
                      // "unable to allocate shared memory(shm) ...: No space left on device": /dev/shm full
  kOomKill,           // kernel/cgroup/Kubernetes OOM kill ("Out of memory: Killed process 1234 (python)")
  kHostOom,           // the process's own host-memory allocation failed ("std::bad_alloc", Python's MemoryError,
                      // ATen's "DefaultCPUAllocator: can't allocate memory"; classify_host.cpp host_alloc_failed)
  kDiskFull,          // "No space left on device"
  kFdExhausted,       // strerror(EMFILE/ENFILE) "Too many open files", Python's "[Errno 24]"/"[Errno 23]"
  kInvalidDevice,     // the CUDA runtime's cudaErrorInvalidDevice text "invalid device ordinal"
  kResourceLimit,     // another limit that ended the job (Slurm's time limit); cause from the pattern table
  kStorageError,      // "Stale file handle", "nfs: server x not responding", "Input/output error"
  kDataError,         // hanglab workload: data error class
  kUsageError,        // hanglab workload: usage error class
  kExitStatus,        // "exit code 137", "Exit Code: 139", "exited with code 1" (code or signal set)
  kSignalReceived,    // "Signal 9 (SIGKILL) received by PID 1234"
  kSignalException,   // torchelastic "SignalException: Process 1234 got signal: 15"
  kLauncherSignal,    // "Sending process 1234 closing signal SIGTERM"
  kStopSignal,        // a launcher or agent received a signal and passes it on to the job (torchrun's "Received
                      // Signals.SIGTERM death signal, shutting down workers", srun's "forcing job termination",
                      // slurmstepd's "CANCELLED ... DUE to SIGNAL Terminated", mpirun's "Forwarding signal 15
                      // to job"): signal set, word = the launcher
  kLauncherExit,      // "failed (exitcode: -9) local_rank: 3 (pid: 1234) of binary: ..."
  kChildFailed,       // "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
  kMpiExit,           // "mpirun noticed that process rank 2 with PID 1234 on node x exited on signal 9 (Killed)."
  kMpiProcessName,    // "Process name: [[12345,1],2]" (the rank of the next "Exit code:")
  kSrunTask,          // "srun: error: node-3: task 5: Killed"
  kSummaryHeader,     // torchrun summary: "Root Cause (first observed failure):" (word=root) / "Failures:"
  kSummaryEntry,      // torchrun summary: "[0]:"
  kSummaryField,      // torchrun summary: "  rank      : 5 (local_rank: 1)" (word = key, text = value)
  kSummaryEnd,        // "=====" / "-----" rule
  kAgentLayout,       // torchrun's elastic agent: where its node's workers sit ("  global_ranks=[8, 9]",
                      // "  group_world_size=2", "  min_nodes : 2"; word = key, ranks = the values)
};

const char* log_kind_name(LogKind k);
// The kind whose enumerator is k<name> ("NcclError" -> kNcclError); kNone for any other name.
LogKind log_kind_from_name(std::string_view name);

// Where the global rank of a line came from, weakest first.
enum class RankSource : uint8_t {
  kNone,
  kLocal,     // torchrun's "[default3]:" tee prefix: a local rank, global only on a single node
  kHostTag,   // "[host:3]": a rank tag of some launchers, but also Open MPI's "[host:pid]" crash output
  kFile,      // the file's name (rank-3.log, train-worker-3)
  kMessage,   // "[Rank 3]" or a default-PG "[PG ID 0 ... Rank 3]" inside the message
  // "3: " / "  3: " (srun -l): the id of the task srun started (SLURM_PROCID; slurm
  // src/common/write_labelled_message.c:143 "%*d: " @284c3b95f0). A rank only where srun started the
  // ranks themselves: under torch's launcher the task is an elastic agent, a node (LogCorpus::srun_agents).
  // Below kLauncher, so every "< kLauncher" test keeps its meaning for the other sources.
  kSrunLabel,
  kLauncher,  // "[1,3]<stderr>:" (Open MPI), "[3]<stderr>:" (horovodrun)
  kPrefix,    // "[rank3]:" (PyTorch), "[rank 3]" (hanglab workloads)
};


// Ranks and world sizes as the parser keeps them: out of [0, kMaxWorld) is no rank (-1).
inline int bounded_rank(long long v) { return v >= 0 && v < kMaxWorld ? static_cast<int>(v) : -1; }
inline int bounded_world(long long v) { return v > 0 && v <= kMaxWorld ? static_cast<int>(v) : -1; }

struct LogLine {
  // Clock. `t` is Unix seconds (UTC when the stamp says so; zone-less stamps are
  // taken as UTC). no_year: glog/syslog stamps, dated with LogLineContext::year.
  bool has_t = false;
  bool no_year = false;
  double t = 0;
  double t_res = 0;  // resolution of the stamp in seconds (1 for whole-second stamps)
  // Attribution.
  int rank = -1;  // global rank
  RankSource rank_src = RankSource::kNone;
  int local_rank = -1;       // torchrun [defaultN]:, "local_rank: N"
  int pg_rank = -1;          // rank inside a process group ("[PG 1 Rank 2]")
  std::string_view pg;       // process group id/name as printed ("1", "0(default_pg)")
  bool pg_default = false;   // the PG is the default one: pg_rank is the global rank
  std::string_view host;     // "[host:3]", NCCL "host:pid:tid" prefix, syslog host, mpirun node
  // From a "[host:N]" tag on: Open MPI's opal_output prefix ("[%s:%d] " host and pid) is part of its
  // messages' formats in the catalogue (opal/util/stacktrace.c "[{}:{}] *** Process received signal ***").
  std::string_view host_tagged;
  long long pid = -1;        // NCCL prefix pid, "pid N" of the event
  int nccl_dev = -1;         // NCCL prefix "host:pid:tid [dev]": the CUDA device index (not a rank)
  std::string_view msg;      // the line without its clock and attribution prefixes
  // What it says.
  LogKind kind = LogKind::kNone;
  long long seq = -1;
  std::string_view op;
  long long numel_in = -1;
  long long numel_out = -1;
  long long timeout_ms = -1;
  long long ran_ms = -1;
  long long last_enqueued = -1;
  long long last_completed = -1;
  long long pending = -1;  // works the watchdog still monitors (heartbeat monitor's "workMetaList_.size()=103")
  int step = -1;
  int total_steps = -1;
  double dur_ms = -1;
  int other_rank = -1;  // the rank an event names (dump signal source, mpirun/srun task, torchrun field)
  int world = -1;       // a stated world size (or PG size for kPgInit)
  int joined = -1;      // "3/4 clients joined"
  int code = kNoCode;   // exit code
  int signal = 0;       // signal number
  std::string_view word;   // exception class, workload error class, summary key, signal name
  std::string_view where;  // workload phase ("backward"), store address
  std::vector<int> ranks;  // rank lists of desync reports
  // What the line proves, from the pattern table (triage_log_patterns.cpp); empty = the kind's default.
  std::string_view category;
  std::string_view cause;
  // A comm exception whose text says the connection was closed ("Connection closed by peer"):
  // the peer is gone, not slow.
  bool peer_closed = false;
  // A rendezvous error of torchrun's rendezvous ("RendezvousTimeoutError", "Rendezvous ... failed"),
  // not only of the store under it.
  bool torch_rendezvous = false;
  // One entry of a stall report that lists a missing rank per line (Horovod 0.20 on: "1: [tensor, ...]"):
  // the report is the run of such lines.
  bool report_entry = false;
  // The message catalogue's entry for the line (logs/catalogue.hpp), when its meaning was applied:
  // role (root | echo | exit | benign | context) and phase are the entry's, and category/cause too
  // unless the pattern table proved them. Null: the hand-written checks alone read the line.
  const CatalogueEntry* catalogue = nullptr;
  std::string_view role;
  std::string_view phase;
  // Ray's log deduplication (python/ray/_private/ray_logging/__init__.py@ray-2.x: LogDeduplicator canonicalises
  // a line by dropping every word that holds a digit, prints the first of a pattern and counts the rest, then
  // DedupState.formatted() prints the latest one + " [repeated {count}x across cluster]"): the count of other
  // processes' lines this one stands for, whose ranks, pids and numbers are not in the paste. The suffix is
  // cut from the line before it is read.
  int ray_repeats = 0;
};

struct LogLineContext {
  int year = 2000;  // for stamps without a year (glog "I1129 08:26:59.1", syslog "Nov 29 08:26:59")
  // The line before ended with c10d's "Last error:": this one is the text of NCCL's last WARN
  // (ncclGetLastError(), quoted by ProcessGroupNCCL's exception without NCCL's line prefix).
  bool nccl_last_error = false;
  // Inside Horovod's stall report after its "Missing ranks:" line (stall_inspector.cc, 0.20 on):
  // this line may be one entry "<rank>[!]: [<tensor>, ...]".
  bool hvd_missing_ranks = false;
  // Inside the JAX/TSL coordination service's task list after a verdict's header (logs/coordination.hpp):
  // this line may be one task name.
  bool coord_list = false;
  // Inside ProcessGroupNCCL's desync report after its first line (logs/desync.hpp): this line may be one
  // entry of its snapshot.
  bool desync_report = false;
};

// Parses one line (without its newline). Always fills msg; returns kind != kNone.
bool parse_log_line(std::string_view line, const LogLineContext& ctx, LogLine& out);

// What a parsed line means on its own (logs/meaning.cpp describe_event: the catalogue's role, the
// pattern table's or catalogue's category/cause, else the kind's default), as a record keeps it: the
// run-directory reader reads its stdout/stderr lines and messages by this, the plain-log reasoner
// its events by the same rules. Without the lines around it: a "terminate called ..." is a crash even
// where its what() line would say more, a Python exception is not known to be handled.
LineReading line_meaning(const LogLine& l);

// Timestamp parsers, each at the start of `s`; on success return the characters used.
// ISO-8601 / RFC 3339 ("2026-11-29T08:26:59.123456789Z", "+02:00" offsets) and the
// Python logging form ("2026-11-29 08:26:59,123").
size_t parse_iso_time(std::string_view s, double* t, double* res);
// glog "I1129 08:26:59.123456" (severity letter, month, day, time), dated in `year`.
size_t parse_glog_time(std::string_view s, int year, double* t, double* res);

// Global rank from a log file's path: "rank-3.log", "rank3/stdout", "ranks/3/stderr.log",
// "train-worker-3.log" (pod index; with kubeflow_master, worker-N is rank N+1 and
// master-0 is rank 0). -1 when the name says nothing.
int rank_from_path(std::string_view rel_path, bool kubeflow_master);

}  // namespace hanglab
