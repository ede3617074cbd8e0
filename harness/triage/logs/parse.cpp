// parse_log_line(): one plain log line -> clock, attribution, meaning. See the header
// for the formats. The order of the checks matters in two ways: prefixes are peeled
// outermost first (the collector's clock before the process' own), and message kinds
// are tested most specific first (a DistBackendError whose text is a watchdog timeout
// is an echo, not a generic exception).
#include "triage/logs/parse.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "triage/logs/catalogue.hpp"
#include "triage/logs/desync.hpp"
#include "triage/logs/coordination.hpp"
#include "triage/logs/progress.hpp"
#include "triage/logs/parse_parts.hpp"
#include "triage/logs/frames.hpp"
#include "triage/logs/patterns.hpp"

namespace hanglab {

using namespace logparse;

const char* log_kind_name(LogKind k) {
  switch (k) {
    case LogKind::kNone: return "none";
    case LogKind::kStep: return "step";
    case LogKind::kDone: return "done";
    case LogKind::kLeftLoop: return "left_loop";
    case LogKind::kDataExhausted: return "data_exhausted";
    case LogKind::kInitDone: return "init_done";
    case LogKind::kWorldSize: return "world_size";
    case LogKind::kPgInit: return "pg_init";
    case LogKind::kCheckpointBegin: return "checkpoint_begin";
    case LogKind::kCheckpointEnd: return "checkpoint_end";
    case LogKind::kEvalBegin: return "eval_begin";
    case LogKind::kShutdown: return "shutdown";
    case LogKind::kInitStep: return "init_step";
    case LogKind::kProgress: return "progress";
    case LogKind::kEvalEnd: return "eval_end";
    case LogKind::kDataWait: return "data_wait";
    case LogKind::kDataPrep: return "data_prep";
    case LogKind::kInitBegin: return "init_begin";
    case LogKind::kTrainBegin: return "train_begin";
    case LogKind::kWatchdogTimeout: return "watchdog_timeout";
    case LogKind::kWatchdogRepeat: return "watchdog_repeat";
    case LogKind::kWorkStatus: return "work_status";
    case LogKind::kDumpSignal: return "dump_signal";
    case LogKind::kHeartbeatMonitor: return "heartbeat_monitor";
    case LogKind::kDesyncMissing: return "desync_missing";
    case LogKind::kDesyncLagging: return "desync_lagging";
    case LogKind::kCollMismatch: return "coll_mismatch";
    case LogKind::kCollStart: return "coll_start";
    case LogKind::kCollInFlight: return "coll_in_flight";
    case LogKind::kCommAborted: return "comm_aborted";
    case LogKind::kNcclAsyncFailed: return "nccl_async_failed";
    case LogKind::kNcclRemoteError: return "nccl_remote_error";
    case LogKind::kNcclSystemError: return "nccl_system_error";
    case LogKind::kNcclError: return "nccl_error";
    case LogKind::kWrongIfname: return "wrong_ifname";
    case LogKind::kShmError: return "shm_error";
    case LogKind::kIbError: return "ib_error";
    case LogKind::kSocketError: return "socket_error";
    case LogKind::kGlooTimeout: return "gloo_timeout";
    case LogKind::kCommClosed: return "comm_closed";
    case LogKind::kLocalPeerClosed: return "local_peer_closed";
    case LogKind::kStoreTimeout: return "store_timeout";
    case LogKind::kStoreRefused: return "store_refused";
    case LogKind::kAddressInUse: return "address_in_use";
    case LogKind::kDnsFailure: return "dns_failure";
    case LogKind::kRendezvousError: return "rendezvous_error";
    case LogKind::kTraceback: return "traceback";
    case LogKind::kException: return "exception";
    case LogKind::kCommException: return "comm_exception";
    case LogKind::kCudaOom: return "cuda_oom";
    case LogKind::kCudaError: return "cuda_error";
    case LogKind::kTerminate: return "terminate";
    case LogKind::kCrash: return "crash";
    case LogKind::kDataLoaderKilled: return "dataloader_killed";
    case LogKind::kShmBusError: return "shm_bus_error";
    case LogKind::kOomKill: return "oom_kill";
    case LogKind::kHostOom: return "host_oom";
    case LogKind::kDiskFull: return "disk_full";
    case LogKind::kFdExhausted: return "fd_exhausted";
    case LogKind::kInvalidDevice: return "invalid_device";
    case LogKind::kResourceLimit: return "resource_limit";
    case LogKind::kStorageError: return "storage_error";
    case LogKind::kDataError: return "data_error";
    case LogKind::kUsageError: return "usage_error";
    case LogKind::kExitStatus: return "exit_status";
    case LogKind::kSignalReceived: return "signal_received";
    case LogKind::kSignalException: return "signal_exception";
    case LogKind::kLauncherSignal: return "launcher_signal";
    case LogKind::kStopSignal: return "stop_signal";
    case LogKind::kLauncherExit: return "launcher_exit";
    case LogKind::kChildFailed: return "child_failed";
    case LogKind::kMpiExit: return "mpi_exit";
    case LogKind::kMpiProcessName: return "mpi_process_name";
    case LogKind::kSrunTask: return "srun_task";
    case LogKind::kSummaryHeader: return "summary_header";
    case LogKind::kSummaryEntry: return "summary_entry";
    case LogKind::kSummaryField: return "summary_field";
    case LogKind::kSummaryEnd: return "summary_end";
    case LogKind::kAgentLayout: return "agent_layout";
  }
  return "?";
}

LogKind log_kind_from_name(std::string_view name) {
  // The enumerators' own names without their k: the message catalogue's meanings name kinds so.
  static const std::pair<std::string_view, LogKind> kNames[] = {
      {"None", LogKind::kNone},
      {"Step", LogKind::kStep},
      {"Done", LogKind::kDone},
      {"LeftLoop", LogKind::kLeftLoop},
      {"DataExhausted", LogKind::kDataExhausted},
      {"InitDone", LogKind::kInitDone},
      {"InitStep", LogKind::kInitStep},
      {"WorldSize", LogKind::kWorldSize},
      {"PgInit", LogKind::kPgInit},
      {"CheckpointBegin", LogKind::kCheckpointBegin},
      {"CheckpointEnd", LogKind::kCheckpointEnd},
      {"EvalBegin", LogKind::kEvalBegin},
      {"EvalEnd", LogKind::kEvalEnd},
      {"Progress", LogKind::kProgress},
      {"Shutdown", LogKind::kShutdown},
      {"DataWait", LogKind::kDataWait},
      {"DataPrep", LogKind::kDataPrep},
      {"InitBegin", LogKind::kInitBegin},
      {"TrainBegin", LogKind::kTrainBegin},
      {"WatchdogTimeout", LogKind::kWatchdogTimeout},
      {"WatchdogRepeat", LogKind::kWatchdogRepeat},
      {"WorkStatus", LogKind::kWorkStatus},
      {"DumpSignal", LogKind::kDumpSignal},
      {"HeartbeatMonitor", LogKind::kHeartbeatMonitor},
      {"DesyncMissing", LogKind::kDesyncMissing},
      {"DesyncLagging", LogKind::kDesyncLagging},
      {"CollMismatch", LogKind::kCollMismatch},
      {"CollStart", LogKind::kCollStart},
      {"CollInFlight", LogKind::kCollInFlight},
      {"CommAborted", LogKind::kCommAborted},
      {"NcclAsyncFailed", LogKind::kNcclAsyncFailed},
      {"NcclRemoteError", LogKind::kNcclRemoteError},
      {"NcclSystemError", LogKind::kNcclSystemError},
      {"NcclError", LogKind::kNcclError},
      {"WrongIfname", LogKind::kWrongIfname},
      {"ShmError", LogKind::kShmError},
      {"IbError", LogKind::kIbError},
      {"SocketError", LogKind::kSocketError},
      {"GlooTimeout", LogKind::kGlooTimeout},
      {"CommClosed", LogKind::kCommClosed},
      {"LocalPeerClosed", LogKind::kLocalPeerClosed},
      {"StoreTimeout", LogKind::kStoreTimeout},
      {"StoreRefused", LogKind::kStoreRefused},
      {"AddressInUse", LogKind::kAddressInUse},
      {"DnsFailure", LogKind::kDnsFailure},
      {"RendezvousError", LogKind::kRendezvousError},
      {"Traceback", LogKind::kTraceback},
      {"Exception", LogKind::kException},
      {"CommException", LogKind::kCommException},
      {"CudaOom", LogKind::kCudaOom},
      {"CudaError", LogKind::kCudaError},
      {"Terminate", LogKind::kTerminate},
      {"Crash", LogKind::kCrash},
      {"DataLoaderKilled", LogKind::kDataLoaderKilled},
      {"ShmBusError", LogKind::kShmBusError},
      {"OomKill", LogKind::kOomKill},
      {"HostOom", LogKind::kHostOom},
      {"DiskFull", LogKind::kDiskFull},
      {"FdExhausted", LogKind::kFdExhausted},
      {"InvalidDevice", LogKind::kInvalidDevice},
      {"ResourceLimit", LogKind::kResourceLimit},
      {"StorageError", LogKind::kStorageError},
      {"DataError", LogKind::kDataError},
      {"UsageError", LogKind::kUsageError},
      {"ExitStatus", LogKind::kExitStatus},
      {"SignalReceived", LogKind::kSignalReceived},
      {"SignalException", LogKind::kSignalException},
      {"LauncherSignal", LogKind::kLauncherSignal},
      {"StopSignal", LogKind::kStopSignal},
      {"LauncherExit", LogKind::kLauncherExit},
      {"ChildFailed", LogKind::kChildFailed},
      {"MpiExit", LogKind::kMpiExit},
      {"MpiProcessName", LogKind::kMpiProcessName},
      {"SrunTask", LogKind::kSrunTask},
      {"SummaryHeader", LogKind::kSummaryHeader},
      {"SummaryEntry", LogKind::kSummaryEntry},
      {"SummaryField", LogKind::kSummaryField},
      {"SummaryEnd", LogKind::kSummaryEnd},
      {"AgentLayout", LogKind::kAgentLayout},
  };
  for (const auto& [n, k] : kNames)
    if (n == name) return k;
  return LogKind::kNone;
}

// The message catalogue's meaning (logs/catalogue.hpp) for a line the hand-written checks left
// unread. First pass of issue 24: the catalogue fills what the pattern table and classify_text do
// not know (they keep precedence where they read a line, so that the corpus answers stay theirs);
// the migration pass moves their knowledge into catalogue meanings and reverses the order.
// `inside`: the emitter whose message the line is known to be (Catalogue::match). True when a
// meaning was applied.
static bool apply_catalogue(std::string_view line, LogLine& o, std::string_view inside = {}) {
  if (o.kind != LogKind::kNone || !o.category.empty()) return false;
  const auto hit = builtin_catalogue().match(line, true, inside);
  if (!hit) return false;
  const CatalogueMeaning& m = *hit->entry->meaning;
  // A failure of the line's own process (root) or how it ended (exit). Echo and context meanings
  // wait for the migration pass: the reasoner's echo is a peer's failure seen from a rank, and the
  // emitters' "echo" lines also include launchers' teardown notices, whose order against the root
  // would then decide the answer; a context kind (init step, shutdown) would move the phase.
  // One context exception: a phase marker of the work after init (the training loop begun, a
  // save, an evaluation), whose emitter prints it only there. It places the writer in that phase
  // as a marker line of the hand-written table does, and no failure's order depends on it.
  const LogKind kind = m.kind == "Info" ? LogKind::kNone : log_kind_from_name(m.kind);
  // A second: a collective in flight (NCCL's proxy progress thread failing on a posted op), a fact
  // of the phase rule ("collectives ran") like a WorkNCCL timeout, neither a failure nor a marker.
  // A third: start-up under way (kInitBegin) where the meaning says its emitter prints the line only
  // then (`marker`: JAX's TPU start-up timer, TF's wait for its cluster), read as a traceback frame of
  // start-up is: init while no step line follows. Other start-up facts (NCCL's "Init START", the
  // elastic agent's "Starting worker group") are printed again by a communicator created lazily in
  // the training loop or a restart: no marker.
  // A fourth: a training loop's step line whose emitter names the step (MaxText's "completed step: N").
  const bool marker =
      m.role == "context" &&
      (kind == LogKind::kTrainBegin || kind == LogKind::kCheckpointBegin || kind == LogKind::kCheckpointEnd ||
       kind == LogKind::kEvalBegin || kind == LogKind::kCollInFlight || (kind == LogKind::kInitBegin && m.marker) ||
       (kind == LogKind::kStep && hit->named_int("step").value_or(-1) >= 0));
  if (m.role != "root" && m.role != "exit" && !marker) {
    // A fifth: a launcher's report naming the process that failed first (horovodrun's "Process name: N",
    // the line after "The first process to do so was:"), the rank of the report's exit (logs/reader.cpp).
    // Only a bare number is a rank: launch_gloo names a slot by its index in host_alloc_plan, which
    // get_host_assignments lists in rank order (gloo_run.py:272-287, common/util/hosts.py:116-150@v0.28.1);
    // the elastic driver names it "host[local_rank]" (elastic/driver.py:318@v0.28.1), no global rank.
    if (m.role != "context" || kind != LogKind::kMpiProcessName) return false;
    const auto h = hit->named("rank");
    const sv v = h ? trim(*h) : sv{};
    if (v.empty() || v.size() > 7 || v.find_first_not_of("0123456789") != npos) return false;
    const int named = bounded_rank(std::stoll(std::string(v)));
    if (named < 0) return false;
    o.kind = kind;
    o.catalogue = hit->entry;
    o.role = m.role;
    o.other_rank = named;
    return true;
  }
  o.catalogue = hit->entry;
  o.role = m.role;
  o.phase = m.phase;
  if (kind != LogKind::kNone) o.kind = kind;
  o.category = m.category;
  o.cause = m.cause;
  // What the holes name, where the line's own prefixes did not already say it.
  const auto num = [&](const char* name, auto& field, auto unset) {
    if (field != unset) return;
    if (const auto v = hit->named_int(name); v && *v >= 0 && *v < (1LL << 31)) field = static_cast<std::decay_t<decltype(field)>>(*v);
  };
  if (o.rank < 0) {
    if (const auto v = hit->named_int("rank"); v && *v >= 0 && *v < kMaxWorld) {
      o.rank = static_cast<int>(*v);
      o.rank_src = RankSource::kMessage;
    }
  }
  num("peer_rank", o.other_rank, -1);
  num("local_rank", o.local_rank, -1);
  num("device", o.nccl_dev, -1);
  num("pid", o.pid, -1LL);
  num("signal", o.signal, 0);
  num("code", o.code, kNoCode);
  num("seq", o.seq, -1LL);
  num("timeout_ms", o.timeout_ms, -1LL);
  num("joined", o.joined, -1);
  num("step", o.step, -1);
  num("total_steps", o.total_steps, -1);
  // A CUDA status the emitter printed as a number (torch_memory_saver's "CUresult error  result=2"): what it
  // means is cuda.h's CUresult enum, whose values driver_types.h's cudaError_t shares for these: 2
  // CUDA_ERROR_OUT_OF_MEMORY / cudaErrorMemoryAllocation (the device has no memory left for the allocation),
  // 214 CUDA_ERROR_ECC_UNCORRECTABLE (the GPU's memory failed), 700 CUDA_ERROR_ILLEGAL_ADDRESS and 719
  // CUDA_ERROR_LAUNCH_FAILED (a kernel faulted). Any other value keeps the meaning's own reading.
  if (const auto v = hit->named_int("cuda_result"); v && m.role == "root") {
    if (*v == 2) {
      o.kind = LogKind::kCudaOom;
      o.category = "resource_limit";
      o.cause = "cuda_oom";
    } else if (*v == 214) {
      o.cause = "hardware_error";
    } else if (*v == 700 || *v == 719) {
      o.cause = "cuda_error";
    }
  }
  if (o.host.empty()) {
    if (const auto h = hit->named("host")) {
      sv v = trim(*h);
      if (const size_t sp = v.find_first_of(" \t,;()[]"); sp != npos) v = v.substr(0, sp);
      o.host = v;
    }
  }
  return true;
}

// A line of MPICH Hydra's shape ("[mpiexec@HOST] FUNC (FILE:LINE): msg", hydra.cpp): the catalogue's Hydra
// entry decides what it means, whatever its role (an echo of the error chain, HYDU_ERR_POP, stays unread), so
// that the generic tables do not read a word of it ("exit code 256" of a launcher's child is no rank's exit).
// Intel MPI's proxy launch failure has no public source, hence a hand-written check (hydra_proxy_not_run).
static bool read_hydra_line(std::string_view body, LogLine& o) {
  if (hydra_message(body).empty()) return false;
  if (const auto hit = builtin_catalogue().match(body); hit && hit->entry->emitter == "mpich-hydra") {
    apply_catalogue(body, o);
    return true;
  }
  return hydra_proxy_not_run(body, o);
}

// The catalogue's most specific entry for the line says its emitter prints it where nothing failed.
static bool catalogue_benign(std::string_view line) {
  const auto hit = builtin_catalogue().match(line);
  return hit && hit->entry->meaning && hit->entry->meaning->role == "benign";
}

// A line the hand-written tables read only as "an exception was raised" (any "XError: text") whose
// text the catalogue knows from the code that raises it as a failure of a specific class (FSDP's
// cross-rank order check, a DataLoader timeout, a DCP save that failed on some ranks): that meaning.
// Generic readings of other kinds stay (migration pass of issue 24). `not_of`: an emitter whose own
// entries do not override (the tables already read that emitter's lines their way).
static void catalogue_over_generic(std::string_view line, LogLine& o, std::string_view not_of = {}) {
  const auto hit = builtin_catalogue().match(line);
  if (!hit || !hit->entry->meaning || (!not_of.empty() && hit->entry->emitter == not_of)) return;
  const CatalogueMeaning& m = *hit->entry->meaning;
  // A launcher's verdict on another process raised as its own exception (horovodrun's "RuntimeError: Horovod
  // detected that one or more processes exited with non-zero status ...", gloo_run.py:284@v0.28.1) is that
  // process's exit, not the launcher's exception.
  if ((m.role != "root" && m.role != "exit") || m.category.empty() || (m.category == "rank_exit" && m.kind != "MpiExit"))
    return;
  const LogLine keep = o;
  o.kind = LogKind::kNone;
  o.category = {};
  if (!apply_catalogue(line, o)) o = keep;
}

// NCCL 2.3 printed its proxy thread's error trace at WARN level ("transport.cu:153 -> 2 [Proxy thread
// error]", transport.cu:153@v2.3.7-1), which the tables read as an NCCL error: the catalogue's
// collective-in-flight fact instead, no failure of its own (the WARN before it is).
static void nccl_warn_in_flight(std::string_view line, LogLine& o) {
  const auto hit = builtin_catalogue().match(line);
  if (!hit || hit->entry->emitter != "nccl" || !hit->entry->meaning || hit->entry->meaning->kind != "CollInFlight")
    return;
  o.kind = LogKind::kNone;
  if (!apply_catalogue(line, o)) o.kind = LogKind::kNcclError;
}

// NCCL's CUDACHECK ("Cuda failure %d '%s'", cudawrap.h/checks.h in every 2.x): a CUDA call of the
// line's own process failed, which the tables read as a generic NCCL error (most NCCL WARNs are a
// peer's failure seen from here): the catalogue's meaning, a CUDA error (or OOM) of that process.
static void nccl_cuda_failure(std::string_view line, LogLine& o) {
  const auto hit = builtin_catalogue().match(line);
  if (!hit || hit->entry->emitter != "nccl" || !hit->entry->meaning || hit->entry->meaning->role != "root" ||
      (hit->entry->meaning->kind != "CudaError" && hit->entry->meaning->kind != "CudaOom"))
    return;
  const LogLine keep = o;
  o.kind = LogKind::kNone;
  if (!apply_catalogue(line, o)) o = keep;
}

// An entry of Horovod's stall report after "Missing ranks:" (horovod/common/stall_inspector.cc@2626dc8,
// 0.20 on): "<global rank>[!]: [<tensor>, <tensor> ...]", '!' where the rank is past the shutdown time.
// The rank never submitted those tensors while its peers wait on them (word "stall", as the one-line
// "<op> [missing ranks: N]" of earlier releases); `op` keeps the first tensor's name.
static bool parse_hvd_missing_entry(std::string_view m, LogLine& o) {
  long long v = 0;
  size_t e = read_int(m, 0, &v);
  if (e == npos || v < 0) return false;
  if (e < m.size() && m[e] == '!') ++e;
  if (m.compare(e, 3, ": [") != 0 || m.back() != ']') return false;
  o.kind = LogKind::kDesyncMissing;
  o.word = "stall";
  o.report_entry = true;
  o.ranks.push_back(bounded_rank(v));
  const sv names = m.substr(e + 3, m.size() - e - 4);
  o.op = names.substr(0, std::min(names.find(','), names.size()));
  return true;
}

// Whether a line no table read is a progress line of logs/progress.cpp's table. Its regexes are
// run only on lines with a word every one of its shapes has ("step", "iter", "epoch", "loss",
// "batch", a tqdm bar's "%|"): most lines of a long log have none, and this is the hot path.
// A line that names an evaluation ("[eval] global_step = 0", "eval_loss", "validation") reports on one
// and is no training progress, whatever counter it carries.
// "eval"/"valid" as the start of a word ("[eval]", "eval_loss", "Validation"), not inside an identifier:
// PaddlePaddle's "classification_error_evaluator" is a metric of the training batches.
static bool names_evaluation(std::string_view m) {
  for (sv w : {sv("eval"), sv("valid")}) {
    for (size_t k = ifind(m, w); k != npos; k = ifind(m, w, k + 1)) {
      const char b = k ? m[k - 1] : ' ';
      if (!std::isalnum(static_cast<unsigned char>(b)) && b != '_') return true;
    }
  }
  return false;
}

static bool progress_shape(std::string_view m) {
  if (m.size() < 8 || m.size() > 4096) return false;
  bool hint = m.find("%|") != npos;
  for (sv w : {sv("step"), sv("iter"), sv("epoch"), sv("loss"), sv("batch")})
    hint = hint || ifind(m, w) != npos;
  if (!hint || names_evaluation(m)) return false;
  return match_progress(m).has_value();
}

static bool parse_line_fields(std::string_view line, const LogLineContext& ctx, LogLine& o) {
  o.has_t = o.no_year = false;
  o.t = o.t_res = 0;
  o.rank = o.local_rank = o.pg_rank = -1;
  o.rank_src = RankSource::kNone;
  o.pg = o.host = o.host_tagged = o.msg = o.op = o.word = o.where = {};
  o.pg_default = o.peer_closed = o.torch_rendezvous = o.report_entry = false;
  o.pid = -1;
  o.nccl_dev = -1;
  o.kind = LogKind::kNone;
  o.seq = o.numel_in = o.numel_out = o.timeout_ms = o.ran_ms = o.last_enqueued = o.last_completed = -1;
  o.step = o.total_steps = o.other_rank = o.world = o.joined = -1;
  o.dur_ms = -1;
  o.code = kNoCode;
  o.signal = 0;
  o.ranks.clear();
  o.category = o.cause = {};
  o.catalogue = nullptr;
  o.role = o.phase = {};

  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  // A progress bar rewrites its line with '\r': what the terminal showed is the last part.
  if (std::memchr(line.data(), '\r', line.size())) line = line.substr(line.rfind('\r') + 1);

  size_t p = 0;
  for (int i = 0; i < 10 && p < line.size(); ++i) {
    const size_t q = peel_prefix(line, i == 0 ? p : p, ctx, o, i == 0);
    if (q == npos || q <= p) break;
    p = q;
    // Separators between prefixes: spaces, "| ", "- " after a clock.
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
  }
  sv m = line.substr(p);
  o.msg = m;

  // In-message attribution.
  if (starts(m, "[Rank ")) {
    long long v = 0;
    size_t e = read_int(m, 6, &v);
    if (e != npos && e < m.size() && m[e] == ']') {
      if (o.rank_src < RankSource::kMessage) {
        o.rank = bounded_rank(v);
        o.rank_src = RankSource::kMessage;
      }
      m = m.substr(skip_sp(m, e + 1));
    }
  } else if (starts(m, "Rank ")) {
    long long v = 0;
    size_t e = read_int(m, 5, &v);
    if (e != npos && e < m.size() && m[e] == ':' && o.rank_src < RankSource::kMessage) {
      o.rank = bounded_rank(v);
      o.rank_src = RankSource::kMessage;
    }
  }
  if (!m.empty() && m[0] == '[' && starts(m, "[PG ")) {
    parse_pg_tag(m, o);
    const size_t close = m.find(']');
    if (close != npos) m = m.substr(skip_sp(m, close + 1));
  } else {
    // "[PG 1 Rank 2]" or "[Rank 3]" later in the message: one pass over its '['.
    const size_t lim = std::min<size_t>(m.size(), 200);
    for (size_t k = 0; k < lim;) {
      const void* hit = std::memchr(m.data() + k, '[', lim - k);
      if (!hit) break;
      k = static_cast<size_t>(static_cast<const char*>(hit) - m.data());
      if (m.compare(k, 4, "[PG ") == 0) {
        parse_pg_tag(m.substr(k), o);
      } else if (o.rank_src < RankSource::kMessage && m.compare(k, 6, "[Rank ") == 0) {
        long long v = 0;
        const size_t e = read_int(m, k + 6, &v);
        if (e != npos && e < m.size() && m[e] == ']') {
          o.rank = bounded_rank(v);
          o.rank_src = RankSource::kMessage;
        }
      }
      ++k;
    }
  }

  // The common case first: a step line.
  const sv body = strip_level(m);
  if (parse_data_prep(body, o) || parse_eval_progress(body, o) || parse_mmengine(body, o) || parse_step(body, o))
    return true;

  // NCCL's own prefix "host:pid:tid [dev] NCCL ..."
  if (const size_t nk = body.find(" NCCL "); nk != npos && nk < 120) {
    const sv head = body.substr(0, nk);
    const size_t c1 = head.find(':');
    // The host is the line's first token: "[E207 19:37:09.98 ProcessGroupNCCL.cpp:681] ... NCCL" is a clock.
    if (c1 != npos && c1 > 0 && head.substr(0, c1).find_first_of(" \t[]") == npos) {
      long long pid = 0;
      const size_t e = read_int(head, c1 + 1, &pid);
      if (e != npos && e < head.size() && head[e] == ':') {
        o.host = head.substr(0, c1);
        o.pid = pid;
        // ":tid [dev]": the CUDA device the process drives (not its rank).
        long long tid = 0, dev = 0;
        const size_t te = read_int(head, e + 1, &tid);
        if (te != npos && te + 1 < head.size() && head[te] == ' ' && head[te + 1] == '[') {
          const size_t de = read_int(head, te + 2, &dev);
          if (de != npos && dev >= 0 && de < head.size() && head[de] == ']' && de - (te + 2) <= 3)
            o.nccl_dev = static_cast<int>(dev);
        }
      }
    }
  }
  const long long pid_before = o.pid;
  const sv host_before = o.host;
  // A traceback frame means only the phase its function names (frames.cpp).
  LogKind fk = frame_phase(o.msg);  // py-spy's frames are known by their indentation: the message's own
  if (fk == LogKind::kNone) fk = frame_phase(body);
  bool read = true;
  if (fk != LogKind::kNone) {
    o.kind = fk;
  } else if (ctx.hvd_missing_ranks && (parse_hvd_missing_entry(body, o) || parse_hvd_missing_entry(trim(line), o))) {
    // One entry of Horovod's stall report (the line before was its header or another entry).
  } else if (ctx.nccl_last_error && apply_catalogue(body, o, "nccl")) {
    // NCCL's own words for the failure the line before reported: its catalogue meaning first.
  } else if (read_desync(body, ctx, o)) {
    // ProcessGroupNCCL's desync report (logs/desync.cpp).
  } else if (read_coordination(body, ctx, o)) {
    // The JAX/TSL coordination service's verdicts and XLA's rendezvous (logs/coordination.cpp).
  } else if (read_hydra_line(body, o)) {
    // MPICH Hydra's / Intel MPI's launcher and proxy lines (logs/hydra.cpp, the catalogue's mpich-hydra).
  } else if (catalogue_benign(body)) {
    // A format its emitter prints where nothing failed (a shutdown path's warning, advice): the
    // words it shares with failures ("RendezvousConnectionError") do not make it one.
  } else if (!match_line_pattern(body, o)) {
    read = classify_text(body, o);
  }
  if (o.kind == LogKind::kNone) read = match_line_pattern(body, o, true) || read;
  // A failed connect to a peer's loopback address is its interface choice, whatever the
  // exception around it is called (peer_connect.cpp).
  if (o.kind != LogKind::kCrash && loopback_peer_connect(body, o)) read = true;
  if (!read) read = apply_catalogue(body, o);
  if (!read && !o.host_tagged.empty()) read = apply_catalogue(o.host_tagged, o);
  if (!read && progress_shape(body)) {
    // A training loop's progress line the tables above do not know: the supervisor's progress table
    // (logs/progress.cpp: DCGAN's "[1/5][20/469] Loss_D", DeepSpeed's "steps: 20 loss:", a JSON or
    // key=value log) is the one knowledge of them. Training had begun (no step: a table's step may
    // count the batches of an epoch).
    o.kind = LogKind::kProgress;
    read = true;
  } else if (o.kind == LogKind::kException && o.category.empty()) catalogue_over_generic(body, o);
  // A net plugin's WARN printed through NCCL's logger reads as a generic NCCL error; its own
  // emitter's catalogue entry says what failed (NCCL's own words keep the tables' reading).
  else if (o.kind == LogKind::kNcclError && o.category.empty()) {
    catalogue_over_generic(body, o, /*not_of=*/"nccl");
    if (o.kind == LogKind::kNcclError && o.category.empty()) nccl_warn_in_flight(body, o);
    if (o.kind == LogKind::kNcclError && o.category.empty()) nccl_cuda_failure(body, o);
  }
  if (o.kind == LogKind::kStoreTimeout || o.kind == LogKind::kException || o.kind == LogKind::kCommException) {
    if (o.word.empty()) o.word = exception_class(body);
  }
  // Facts the reasoning asks of a line's text, set here so that it never matches text itself.
  if (o.kind == LogKind::kCommException) o.peer_closed = has(o.msg, "onnection closed");
  if (o.kind == LogKind::kRendezvousError) o.torch_rendezvous = has(o.msg, "Rendezvous");
  // NCCL prefix pid/host stay unless the event named its own (OOM kill, launcher).
  if (o.pid < 0) o.pid = pid_before;
  if (o.host.empty()) o.host = host_before;
  return o.kind != LogKind::kNone;
}

// " [repeated 3x across cluster]" and what Ray appends after its first one ("(Ray deduplicates logs by
// default. Set RAY_DEDUP_LOGS=0 ...)"): the count, and the line cut before it; 0 when the line has none.
static int ray_dedup_suffix(std::string_view& line) {
  const size_t k = line.rfind(" [repeated ");
  if (k == npos) return 0;
  long long n = 0;
  const size_t e = read_int(line, k + 11, &n);
  constexpr std::string_view kTail = "x across cluster]";
  if (e == npos || n <= 0 || line.compare(e, kTail.size(), kTail) != 0) return 0;
  line = line.substr(0, k);
  return n > 1000000000 ? 1000000000 : static_cast<int>(n);
}

bool parse_log_line(std::string_view line, const LogLineContext& ctx, LogLine& o) {
  const int repeats = ray_dedup_suffix(line);
  const bool hit = parse_line_fields(line, ctx, o);
  o.ray_repeats = repeats;
  // Numbers no job has are no rank and no world (kMaxWorld).
  for (int* r : {&o.rank, &o.local_rank, &o.pg_rank, &o.other_rank}) *r = bounded_rank(*r);
  if (o.rank < 0) o.rank_src = RankSource::kNone;
  if (o.world > kMaxWorld) o.world = -1;
  if (!o.ranks.empty())
    o.ranks.erase(std::remove_if(o.ranks.begin(), o.ranks.end(), [](int r) { return bounded_rank(r) < 0; }),
                  o.ranks.end());
  return hit;
}

}  // namespace hanglab
