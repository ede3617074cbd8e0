// torch_ddp: a small but real data-parallel training program on LibTorch c10d (Gloo),
// the built-in rank program of hanglab. It does what a DDP training script does, in the
// same order and with the same collectives, so that faults injected around it (signals,
// cgroups, network and storage faults, and the in-process hooks of workloads/common)
// produce the logs, traces and exit codes of a real job:
//   rendezvous (TCPStore + ProcessGroupGloo) -> broadcast of the initial parameters ->
//   per step: read batch from shard files (in the rank, or from data-loader worker
//   processes through /dev/shm), forward, backward + bucketed gradient allreduces, SGD
//   step -> periodic eval (allreduce of the loss) and checkpoint (save + barrier) ->
//   after_loop (exit | final barrier | linger).
// Step compute is slept or burned on the CPU (`compute`): burned time is what a CPU
// limit stretches, slept time is not.
// The contract (environment, arguments, trace events, exit codes) is DESIGN.md's
// workload contract; `--describe` prints it as one JSON line.
#include <CLI/CLI.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <fcntl.h>
#include <time.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "data.hpp"
#include "exit_codes.hpp"
#include "hooks.hpp"
#include "loader.hpp"
#include "signals.hpp"
#include "trace.hpp"
#include "workload_args.hpp"

namespace hanglab {
namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

constexpr const char* kWorkloadName = "torch_ddp";

// ---------------------------------------------------------------------------------------
// Process-wide state the fatal-error path needs: it runs from a catch at the top and must
// say where the rank was (phase, step, collective) when the exception was thrown.

struct Progress {
  std::string phase = "startup";
  int step = 0;
  bool in_collective = false;
  int64_t seq = 0;
  std::string op;
  int64_t numel = 0;
};

int g_rank = -1;
Progress g_progress;
const Trace* g_trace = nullptr;
Heartbeat* g_heartbeat = nullptr;
// The data-loader workers must be gone (and their /dev/shm segments unlinked) before
// the rank leaves with _exit, on the error path as on the clean one.
ShmLoader* g_loader = nullptr;

void vlog(FILE* stream, const char* fmt, va_list args) {
  // One formatted line, one fputs: stdout and stderr are read by the harness line by
  // line and time-stamped on arrival, so every line is flushed at once.
  char body[2048];
  std::vsnprintf(body, sizeof body, fmt, args);
  char line[2100];
  if (g_rank >= 0) {
    std::snprintf(line, sizeof line, "[rank %d] %s\n", g_rank, body);
  } else {
    std::snprintf(line, sizeof line, "[rank ?] %s\n", body);
  }
  std::fputs(line, stream);
  std::fflush(stream);
}

__attribute__((format(printf, 1, 2))) void log_info(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog(stdout, fmt, args);
  va_end(args);
}

__attribute__((format(printf, 1, 2))) void log_error(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog(stderr, fmt, args);
  va_end(args);
}

void emit(std::string_view ev, const TraceFields& fields = TraceFields::object()) {
  if (g_trace != nullptr) g_trace->emit(ev, fields);
}

// c10::Error::what() carries a C++ backtrace; logs and traces want the message only.
std::string exception_text(const std::exception& e) {
  std::string text;
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    text = c10_error->what_without_backtrace();
  } else {
    text = e.what();
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

// Writes the error and exit events and the stderr line, then leaves with _exit: normal
// exit would run the ProcessGroupGloo destructor, which can block forever waiting on
// peers that are gone, and a hanging exit path is exactly what must not be injected here.
[[noreturn]] void fail(ErrorClass cls, const std::string& what) {
  const int code = exit_code_for(cls);
  if (g_heartbeat != nullptr) g_heartbeat->stop();  // keep `exit` the last line of the trace
  if (g_loader != nullptr) g_loader->shutdown();
  TraceFields fields{{"msg", what},
                     {"where", g_progress.phase},
                     {"class", error_class_name(cls)},
                     {"step", g_progress.step}};
  std::string coll;
  if (g_progress.in_collective) {
    fields["seq"] = g_progress.seq;
    fields["op"] = g_progress.op;
    fields["numel"] = g_progress.numel;
    coll = " (in " + g_progress.op + " seq " + std::to_string(g_progress.seq) + ", numel " +
           std::to_string(g_progress.numel) + ")";
  }
  emit("error", fields);
  emit("exit", {{"code", code}});
  log_error("ERROR (%s) in %s at step %d: %s%s", error_class_name(cls), g_progress.phase.c_str(), g_progress.step,
            what.c_str(), coll.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);
}

void sleep_ms(int64_t ms) {
  if (ms > 0) std::this_thread::sleep_for(Ms(ms));
}

double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Spends `ms` of CPU time of the calling thread. Measured on the thread's own CPU clock,
// not the wall clock, so the step costs the same work whatever the machine does, and a
// CPU quota or contention stretches its wall time exactly as it would a real forward
// pass.
void burn_cpu_ms(int64_t ms) {
  if (ms <= 0) return;
  const double end = thread_cpu_ms() + static_cast<double>(ms);
  volatile double sink = 0;
  double x = 1.0;
  while (thread_cpu_ms() < end) {
    for (int i = 0; i < 4000; ++i) x = x * 1.0000001 + 1e-9;
    sink = x;
  }
  (void)sink;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Traces a phase's begin now and its end when the scope closes normally. When an
// exception unwinds through it there is no end edge: the phase the rank died in stays
// open in the trace, and stays in g_progress for the error event.
class PhaseScope {
 public:
  PhaseScope(const char* name, int step) : name_(name), step_(step), uncaught_(std::uncaught_exceptions()) {
    g_progress.phase = name;
    g_progress.step = step;
    emit("phase", {{"name", name_}, {"edge", "begin"}, {"step", step_}});
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;
  ~PhaseScope() {
    if (std::uncaught_exceptions() > uncaught_) return;
    emit("phase", {{"name", name_}, {"edge", "end"}, {"step", step_}});
  }

 private:
  const char* name_;
  int step_;
  int uncaught_;
};

void report_fault(HookKind kind, int step, const std::string& detail) {
  emit("fault", {{"kind", hook_kind_name(kind)}, {"detail", detail}, {"step", step}});
  log_info("hanglab hook %s at step %d: %s", hook_kind_name(kind), step, detail.c_str());
}

// ---------------------------------------------------------------------------------------
// Command line and environment.

struct Options {
  int steps = 10;
  std::string backend = "gloo";
  int input_dim = 16;
  int hidden = 64;
  int layers = 2;
  int batch_size = 8;
  int64_t dataset_size = 1024;
  int shards = 8;
  int64_t seed = 1;
  bool drop_last = false;
  int bucket_kb = 16;
  double lr = 0.05;
  int step_ms = 100;
  std::string compute = "sleep";
  int step_jitter_ms = 0;
  int first_collective_delay_ms = 0;
  int checkpoint_every = 0;
  std::string checkpoint_ranks = "rank0";
  int checkpoint_delay_ms = 0;
  int num_workers = 0;
  int prefetch = 2;
  std::string shm_alloc = "mmap";
  int eval_every = 0;
  int eval_batches = 4;
  std::string after_loop = "exit";
};

std::vector<std::string> backends_built() {
  std::vector<std::string> b{"gloo"};
#ifdef USE_C10D_NCCL
  b.push_back("nccl");
#endif
  return b;
}

int64_t to_int(const std::string& name, const std::string& text, int64_t min_value) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw UsageError("--" + name + "=" + text + ": expected an integer");
  if (v < min_value || v > std::numeric_limits<int>::max()) {
    throw UsageError("--" + name + "=" + text + ": must be in [" + std::to_string(min_value) + ", " +
                     std::to_string(std::numeric_limits<int>::max()) + "]");
  }
  return v;
}

double to_float(const std::string& name, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    throw UsageError("--" + name + "=" + text + ": expected a number");
  }
  return v;
}

bool to_bool(const std::string& name, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  throw UsageError("--" + name + "=" + text + ": expected true or false");
}

std::string one_of(const std::string& name, const std::string& text, std::initializer_list<const char*> allowed) {
  std::string names;
  for (const char* a : allowed) {
    if (text == a) return text;
    names += names.empty() ? "" : " | ";
    names += a;
  }
  throw UsageError("--" + name + "=" + text + ": must be one of " + names);
}

Options options_from(const std::map<std::string, std::string>& v) {
  Options o;
  o.steps = static_cast<int>(to_int("steps", v.at("steps"), 1));
  o.backend = v.at("backend");
  o.input_dim = static_cast<int>(to_int("input_dim", v.at("input_dim"), 1));
  o.hidden = static_cast<int>(to_int("hidden", v.at("hidden"), 1));
  o.layers = static_cast<int>(to_int("layers", v.at("layers"), 0));
  o.batch_size = static_cast<int>(to_int("batch_size", v.at("batch_size"), 1));
  o.dataset_size = to_int("dataset_size", v.at("dataset_size"), 1);
  o.shards = static_cast<int>(to_int("shards", v.at("shards"), 1));
  o.seed = to_int("seed", v.at("seed"), 0);
  o.drop_last = to_bool("drop_last", v.at("drop_last"));
  o.bucket_kb = static_cast<int>(to_int("bucket_kb", v.at("bucket_kb"), 1));
  o.lr = to_float("lr", v.at("lr"));
  o.step_ms = static_cast<int>(to_int("step_ms", v.at("step_ms"), 0));
  o.compute = one_of("compute", v.at("compute"), {"sleep", "burn"});
  o.step_jitter_ms = static_cast<int>(to_int("step_jitter_ms", v.at("step_jitter_ms"), 0));
  o.first_collective_delay_ms =
      static_cast<int>(to_int("first_collective_delay_ms", v.at("first_collective_delay_ms"), 0));
  o.checkpoint_every = static_cast<int>(to_int("checkpoint_every", v.at("checkpoint_every"), 0));
  o.checkpoint_ranks = one_of("checkpoint_ranks", v.at("checkpoint_ranks"), {"rank0", "all"});
  o.checkpoint_delay_ms = static_cast<int>(to_int("checkpoint_delay_ms", v.at("checkpoint_delay_ms"), 0));
  o.num_workers = static_cast<int>(to_int("num_workers", v.at("num_workers"), 0));
  o.prefetch = static_cast<int>(to_int("prefetch", v.at("prefetch"), 1));
  if (o.prefetch > 64) throw UsageError("--prefetch=" + v.at("prefetch") + ": must be in [1, 64]");
  o.shm_alloc = one_of("shm_alloc", v.at("shm_alloc"), {"mmap", "fallocate"});
  o.eval_every = static_cast<int>(to_int("eval_every", v.at("eval_every"), 0));
  o.eval_batches = static_cast<int>(to_int("eval_batches", v.at("eval_batches"), 1));
  o.after_loop = one_of("after_loop", v.at("after_loop"), {"exit", "barrier", "linger"});
  if (o.lr <= 0) throw UsageError("--lr must be > 0");
  if (o.shards > o.dataset_size) throw UsageError("--shards must not exceed --dataset_size");
  return o;
}

std::string describe_json() {
  nlohmann::ordered_json d;
  d["name"] = kWorkloadName;
  d["backends"] = backends_built();
  nlohmann::ordered_json kinds = nlohmann::ordered_json::array();
  nlohmann::ordered_json hook_keys = nlohmann::ordered_json::object();
  for (const auto& spec : hook_specs()) {
    kinds.push_back(spec.kind);
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const auto& k : spec.keys) {
      keys.push_back({{"name", k.name}, {"type", k.type}, {"default", k.default_value}, {"doc", k.doc}});
    }
    hook_keys[spec.kind] = {{"doc", spec.doc}, {"keys", keys}};
  }
  d["hooks"] = kinds;
  d["hook_keys"] = hook_keys;
  nlohmann::ordered_json args = nlohmann::ordered_json::array();
  for (const auto& a : torch_ddp_args()) {
    args.push_back({{"name", a.name}, {"type", a.type}, {"default", a.default_value}, {"doc", a.doc}});
  }
  d["args"] = args;
  d["options"] = nlohmann::ordered_json::array(
      {{{"name", "steps"}, {"type", "int"}, {"default", "10"}, {"doc", "total training steps across epochs"}},
       {{"name", "backend"}, {"type", "string"}, {"default", "gloo"}, {"doc", "process-group backend"}}});
  d["env"] = {"RANK",
              "WORLD_SIZE",
              "LOCAL_RANK",
              "LOCAL_WORLD_SIZE",
              "MASTER_ADDR",
              "MASTER_PORT",
              "GLOO_SOCKET_IFNAME",
              "HANGLAB_RUN_DIR",
              "HANGLAB_TRACE",
              "HANGLAB_HEARTBEAT_MS",
              "HANGLAB_INIT_TIMEOUT_MS",
              "HANGLAB_COLLECTIVE_TIMEOUT_MS",
              "HANGLAB_DATA_DIR",
              "HANGLAB_CKPT_DIR",
              "HANGLAB_HOOKS"};
  nlohmann::ordered_json codes = nlohmann::ordered_json::array();
  for (const auto& c : exit_code_table()) {
    codes.push_back({{"code", c.code}, {"name", c.name}, {"meaning", c.meaning}});
  }
  d["exit_codes"] = codes;
  return d.dump();
}

// Parses argv; exits 0 after --describe/--help, exits 2 on any usage error.
Options parse_command_line(int argc, char** argv) {
  CLI::App app{"torch_ddp: hanglab's LibTorch c10d data-parallel training workload", kWorkloadName};
  std::map<std::string, std::string> values = {{"steps", "10"}, {"backend", "gloo"}};
  for (const auto& a : torch_ddp_args()) values[a.name] = a.default_value;
  bool describe = false;
  app.add_flag("--describe", describe, "print the workload description as one JSON line and exit");
  app.add_option("--steps", values["steps"], "total training steps across epochs")->capture_default_str();
  app.add_option("--backend", values["backend"], "process-group backend: gloo (nccl only in NCCL builds)")
      ->capture_default_str();
  for (const auto& a : torch_ddp_args()) {
    app.add_option(std::string("--") + a.name, values[a.name], std::string(a.doc) + " [" + a.type + "]")
        ->capture_default_str();
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "[rank ?] ERROR (usage) in startup at step 0: %s (see --help)\n", e.what());
    std::exit(kExitUsage);
  }
  if (describe) {
    std::printf("%s\n", describe_json().c_str());
    std::exit(kExitOk);
  }
  try {
    Options o = options_from(values);
    const auto built = backends_built();
    if (std::find(built.begin(), built.end(), o.backend) == built.end()) {
      throw UsageError("--backend=" + o.backend + ": this build supports only gloo" +
                       std::string(o.backend == "nccl" ? " (nccl needs a build with USE_C10D_NCCL)" : ""));
    }
    return o;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "[rank ?] ERROR (usage) in startup at step 0: %s\n", e.what());
    std::exit(kExitUsage);
  }
}

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr;
  int master_port = 0;
  std::string run_dir;
  std::string data_dir;
  std::string ckpt_dir;
  Ms heartbeat{1000};
  Ms init_timeout{30000};
  Ms collective_timeout{5000};
};

std::string env_str(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

int64_t env_int(const char* name, std::optional<int64_t> fallback, int64_t min_value, int64_t max_value) {
  const std::string text = env_str(name);
  if (text.empty()) {
    if (!fallback) throw UsageError(std::string("environment variable ") + name + " is not set");
    return *fallback;
  }
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || used == 0 || v < min_value || v > max_value) {
    throw UsageError(std::string(name) + "=" + text + ": expected an integer in [" + std::to_string(min_value) + ", " +
                     std::to_string(max_value) + "]");
  }
  return v;
}

RankEnv read_env() {
  RankEnv e;
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  e.world_size = static_cast<int>(env_int("WORLD_SIZE", std::nullopt, 1, kMaxInt));
  e.rank = static_cast<int>(env_int("RANK", std::nullopt, 0, e.world_size - 1));
  e.local_rank = static_cast<int>(env_int("LOCAL_RANK", e.rank, 0, kMaxInt));
  e.local_world_size = static_cast<int>(env_int("LOCAL_WORLD_SIZE", e.world_size, 1, kMaxInt));
  e.master_addr = env_str("MASTER_ADDR");
  if (e.master_addr.empty()) throw UsageError("environment variable MASTER_ADDR is not set");
  e.master_port = static_cast<int>(env_int("MASTER_PORT", std::nullopt, 1, 65535));
  e.run_dir = env_str("HANGLAB_RUN_DIR");
  e.data_dir = env_str("HANGLAB_DATA_DIR", e.run_dir.empty() ? "./hanglab-data" : e.run_dir + "/data");
  e.ckpt_dir = env_str("HANGLAB_CKPT_DIR", e.run_dir.empty() ? "./hanglab-ckpt" : e.run_dir + "/ckpt");
  e.heartbeat = Ms(env_int("HANGLAB_HEARTBEAT_MS", 1000, 1, kMaxInt));
  e.init_timeout = Ms(env_int("HANGLAB_INIT_TIMEOUT_MS", 30000, 1, kMaxInt));
  e.collective_timeout = Ms(env_int("HANGLAB_COLLECTIVE_TIMEOUT_MS", 5000, 1, kMaxInt));
  return e;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// ---------------------------------------------------------------------------------------
// Collectives: every one is traced with a per-process-group sequence number, counted at
// issue, so ranks that diverge (a skipped or extra collective) show different seqs for
// the same step in their traces.

class Comm {
 public:
  explicit Comm(c10::intrusive_ptr<c10d::ProcessGroup> pg) : pg_(std::move(pg)) {}

  // The seq the next collective will get (for fault details).
  int64_t next_seq() const { return seq_ + 1; }

  void allreduce(at::Tensor& t, int step) {
    std::vector<at::Tensor> ts{t};
    run("allreduce", t.numel(), step, [&] { return pg_->allreduce(ts); });
  }

  void broadcast(at::Tensor& t, int root, int step) {
    std::vector<at::Tensor> ts{t};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    run("broadcast", t.numel(), step, [&] { return pg_->broadcast(ts, opts); });
  }

  void barrier(int step) {
    run("barrier", 0, step, [&] { return pg_->barrier(); });
  }

 private:
  template <class Issue>
  void run(const char* op, int64_t numel, int step, Issue issue) {
    const int64_t seq = ++seq_;
    g_progress.in_collective = true;
    g_progress.seq = seq;
    g_progress.op = op;
    g_progress.numel = numel;
    emit("coll", {{"edge", "begin"}, {"seq", seq}, {"op", op}, {"numel", numel}, {"step", step}});
    issue()->wait();
    emit("coll", {{"edge", "end"}, {"seq", seq}, {"op", op}, {"numel", numel}, {"step", step}});
    g_progress.in_collective = false;
  }

  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  int64_t seq_ = 0;
};

// Store-based barrier before the process group is built. TCPStore's own waitWorkers
// gives up silently after the timeout, and Gloo's full-mesh connect then fails later
// with a bare "Socket Timeout" after a mix of both timeouts; this bounds rendezvous by
// HANGLAB_INIT_TIMEOUT_MS and names the ranks that never arrived. Rank 0 hosts the store
// and decides: when its deadline passes it publishes the verdict, so every waiting rank
// fails at the same moment with the same message instead of "Broken pipe" once rank 0
// is gone.
void wait_for_all_ranks(c10d::Store& store, const RankEnv& env) {
  const std::string prefix = "hanglab/rendezvous/";
  const std::string failed_key = prefix + "failed";
  const auto deadline = Clock::now() + env.init_timeout;
  try {
    store.set(prefix + std::to_string(env.rank), std::vector<uint8_t>{'1'});
    store.add(prefix + "count", 1);
    while (store.add(prefix + "count", 0) < env.world_size) {
      if (store.check({failed_key})) {
        const auto verdict = store.get(failed_key);
        throw std::runtime_error(std::string(verdict.begin(), verdict.end()) + " (reported by rank 0)");
      }
      if (env.rank == 0 && Clock::now() >= deadline) {
        std::string missing;
        int joined = 0;
        for (int r = 0; r < env.world_size; ++r) {
          if (store.check({prefix + std::to_string(r)})) {
            ++joined;
          } else {
            missing += (missing.empty() ? "" : ",") + std::to_string(r);
          }
        }
        const std::string verdict = "rendezvous timed out after " + std::to_string(env.init_timeout.count()) +
                                    " ms: " + std::to_string(joined) + "/" + std::to_string(env.world_size) +
                                    " ranks joined (missing ranks: " + missing + ")";
        store.set(failed_key, std::vector<uint8_t>(verdict.begin(), verdict.end()));
        // Keep the store up for a few polls so the waiting ranks read the verdict.
        std::this_thread::sleep_for(Ms(200));
        throw std::runtime_error(verdict);
      }
      std::this_thread::sleep_for(Ms(20));
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error("rendezvous failed: lost the store at " + env.master_addr + ":" +
                             std::to_string(env.master_port) + " (rank 0 gone?): " + e.what_without_backtrace());
  } catch (const std::system_error& e) {
    throw std::runtime_error("rendezvous failed: lost the store at " + env.master_addr + ":" +
                             std::to_string(env.master_port) + " (rank 0 gone?): " + e.what());
  }
}

// Rendezvous the way init_process_group(env://) does: a TCPStore served by rank 0, a
// store barrier bounded by the init timeout, then a Gloo process group whose timeout is
// the collective timeout.
c10::intrusive_ptr<c10d::ProcessGroup> init_process_group(const RankEnv& env) {
  c10d::TCPStoreOptions store_opts;
  store_opts.port = static_cast<uint16_t>(env.master_port);
  store_opts.isServer = env.rank == 0;
  store_opts.numWorkers = env.world_size;
  store_opts.waitWorkers = false;  // wait_for_all_ranks() does it, bounded and with names
  store_opts.timeout = env.init_timeout;
  auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_opts);
  wait_for_all_ranks(*store, env);

  auto opts = c10d::ProcessGroupGloo::Options::create(env.collective_timeout);
  const std::string ifnames = env_str("GLOO_SOCKET_IFNAME");
  if (!ifnames.empty()) {
    // Like torch: one Gloo device per listed interface.
    size_t start = 0;
    while (start <= ifnames.size()) {
      const size_t comma = ifnames.find(',', start);
      const std::string name = ifnames.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!name.empty()) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (env.master_addr == "localhost" || env.master_addr.rfind("127.", 0) == 0 || env.master_addr == "::1") {
    // Single host: bind where the master is, which is loopback.
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(env.master_addr));
  } else {
    // Multi-host: binding to the master's address would fail on other nodes; torch's
    // default resolves this host's own name (falling back to loopback).
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, opts);
}

// ---------------------------------------------------------------------------------------
// Training.

struct Bucket {
  std::vector<size_t> params;  // indices into the parameter list
  int64_t numel = 0;
};

// DDP's bucketing: parameters in reverse registration order (gradients become ready
// roughly back to front), a bucket closes once it reaches the byte cap.
std::vector<Bucket> make_buckets(const std::vector<torch::Tensor>& params, int64_t cap_bytes) {
  std::vector<Bucket> buckets;
  Bucket cur;
  for (size_t k = params.size(); k-- > 0;) {
    cur.params.push_back(k);
    cur.numel += params[k].numel();
    if (cur.numel * static_cast<int64_t>(sizeof(float)) >= cap_bytes) {
      buckets.push_back(std::move(cur));
      cur = Bucket{};
    }
  }
  if (!cur.params.empty()) buckets.push_back(std::move(cur));
  return buckets;
}

class Trainer {
 public:
  Trainer(const Options& o, const RankEnv& env, Hooks& hooks)
      : o_(o), env_(env), hooks_(hooks), jitter_rng_(static_cast<uint32_t>(o.seed * 7919 + env.rank)) {}

  void run() {
    const auto t_start = Clock::now();
    log_info("torch_ddp starting: world_size %d, backend %s, steps %d, master %s:%d, hooks %zu", env_.world_size,
             o_.backend.c_str(), o_.steps, env_.master_addr.c_str(), env_.master_port, hooks_.hooks().size());
    {
      PhaseScope phase("init", 0);
      const auto t0 = Clock::now();
      pg_ = init_process_group(env_);
      log_info("process group ready in %.0f ms (gloo, world_size %d, collective timeout %lld ms)", ms_since(t0),
               env_.world_size, static_cast<long long>(env_.collective_timeout.count()));
    }
    comm_ = std::make_unique<Comm>(pg_);
    build_model();
    prepare_data();
    train_loop();
    if (g_trace != nullptr) g_trace->pause(false);
    step_times_.end();
    step_times_.write();  // HANGLAB_STEP_TIMES (trace.hpp), for `hanglab bench`
    stop_loader();  // the epoch iterator is done: its workers exit, as PyTorch's do
    after_loop();
    // The parameter checksum is equal on every rank exactly when gradient sync kept the
    // replicas identical; a silently mis-paired collective shows up here.
    double checksum = 0;
    for (const auto& p : params_) checksum += p.detach().to(torch::kFloat64).abs().sum().item<double>();
    log_info("done: %d/%d steps in %.1f s, last loss %.4f, parameter checksum %.9g", last_step_, o_.steps,
             ms_since(t_start) / 1000.0, last_loss_, checksum);
  }

 private:
  void build_model() {
    // Ranks start from different weights on purpose: the broadcast below is what makes
    // them equal, as in DDP's constructor.
    torch::manual_seed(static_cast<uint64_t>(o_.seed) * 1000003ULL + static_cast<uint64_t>(env_.rank));
    int in = o_.input_dim;
    for (int l = 0; l < o_.layers; ++l) {
      model_->push_back(torch::nn::Linear(in, o_.hidden));
      model_->push_back(torch::nn::ReLU());
      in = o_.hidden;
    }
    model_->push_back(torch::nn::Linear(in, 1));
    params_ = model_->parameters();
    buckets_ = make_buckets(params_, static_cast<int64_t>(o_.bucket_kb) * 1024);
    optimizer_ = std::make_unique<torch::optim::SGD>(params_, torch::optim::SGDOptions(o_.lr));

    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> flat_parts;
    for (const auto& p : params_) flat_parts.push_back(p.detach().reshape({-1}));
    torch::Tensor flat = torch::cat(flat_parts);
    comm_->broadcast(flat, 0, 0);
    int64_t offset = 0;
    for (auto& p : params_) {
      p.copy_(flat.narrow(0, offset, p.numel()).view_as(p));
      offset += p.numel();
    }
    std::string sizes;
    for (const auto& b : buckets_) sizes += (sizes.empty() ? "" : ",") + std::to_string(b.numel);
    log_info("model: MLP %d->%dx%d->1, %lld parameters, %zu gradient buckets [%s], initial parameters broadcast from "
             "rank 0",
             o_.input_dim, o_.hidden, o_.layers, static_cast<long long>(flat.numel()), buckets_.size(),
             sizes.c_str());
  }

  void prepare_data() {
    PhaseScope phase("data", 0);
    dataset_ = std::make_unique<ShardedDataset>(
        DatasetSpec{env_.data_dir, o_.input_dim, o_.dataset_size, o_.shards, static_cast<uint64_t>(o_.seed)});
    dataset_->ensure_files();
    const bool drop_last = o_.drop_last != hooks_.flip_drop_last();
    sampler_ = std::make_unique<DistributedSampler>(o_.dataset_size, env_.world_size, env_.rank,
                                                    static_cast<uint64_t>(o_.seed), drop_last);
    // Epochs come from the configured sampler, which every healthy rank shares; a rank
    // whose own sampler is shorter runs out of batches before `steps`, as in a real
    // `for epoch ...: for batch in loader:` script.
    const DistributedSampler configured(o_.dataset_size, env_.world_size, env_.rank, static_cast<uint64_t>(o_.seed),
                                        o_.drop_last);
    const int64_t per_epoch = configured.batches_per_epoch(o_.batch_size);
    if (per_epoch == 0) {
      throw UsageError("--batch_size=" + std::to_string(o_.batch_size) + " exceeds the " +
                       std::to_string(configured.num_samples()) + " samples per rank with drop_last: no batches");
    }
    epochs_ = static_cast<int>((o_.steps + per_epoch - 1) / per_epoch);
    if (hooks_.flip_drop_last()) {
      report_fault(HookKind::kUnevenBatches, 0,
                   std::string("drop_last_mismatch: this rank uses drop_last=") + (drop_last ? "true" : "false") +
                       " (configured " + (o_.drop_last ? "true" : "false") + "): " +
                       std::to_string(sampler_->num_samples()) + " samples, " +
                       std::to_string(sampler_->batches_per_epoch(o_.batch_size)) + " batches/epoch vs " +
                       std::to_string(configured.num_samples()) + " samples, " + std::to_string(per_epoch) +
                       " batches/epoch on peers");
    }
    log_info("dataset ready: %s (%lld samples in %d shards), %lld samples/rank, %lld batches/epoch, %d epoch(s)",
             dataset_->dir().c_str(), static_cast<long long>(o_.dataset_size), o_.shards,
             static_cast<long long>(sampler_->num_samples()),
             static_cast<long long>(sampler_->batches_per_epoch(o_.batch_size)), epochs_);
    if (o_.num_workers > 0) start_loader();
  }

  // Forked after the process group exists, as a DataLoader iterator is created after
  // init_process_group: the workers inherit nothing they use but the dataset layout.
  void start_loader() {
    LoaderOptions lo;
    lo.num_workers = o_.num_workers;
    lo.prefetch = o_.prefetch;
    lo.shm_alloc = o_.shm_alloc;
    lo.log_prefix = "[rank " + std::to_string(env_.rank) + "] ";
    loader_ = std::make_unique<ShmLoader>(*dataset_, lo);
    g_loader = loader_.get();
    std::string pids;
    for (pid_t p : loader_->worker_pids()) pids += (pids.empty() ? "" : ",") + std::to_string(p);
    const double batch_kib = static_cast<double>(o_.batch_size) * (o_.input_dim + 1) * sizeof(float) / 1024.0;
    char size[32];
    if (batch_kib >= 1024) {
      std::snprintf(size, sizeof size, "%.2f MiB", batch_kib / 1024.0);
    } else {
      std::snprintf(size, sizeof size, "%.1f KiB", batch_kib);
    }
    log_info("data loader: %d worker process(es) (pids %s), prefetch %d per worker, batches of %s through /dev/shm "
             "(%s)",
             o_.num_workers, pids.c_str(), o_.prefetch, size, o_.shm_alloc.c_str());
  }

  void stop_loader() {
    if (!loader_) return;
    loader_->shutdown();
    g_loader = nullptr;
  }

  void train_loop() {
    for (int epoch = 0; epoch < epochs_ && last_step_ < o_.steps; ++epoch) {
      const auto batches = sampler_->batches(epoch, o_.batch_size);
      if (loader_) loader_->start_epoch(batches);
      for (const auto& batch : batches) {
        if (last_step_ == o_.steps) break;
        const int step = last_step_ + 1;
        const bool traced = !trace_ab_ || trace_step_traced(step);
        if (trace_ab_ && g_trace != nullptr) g_trace->pause(!traced);  // HANGLAB_TRACE_OFF=ab
        step_times_.begin_step(step, traced);
        hooks_.begin_step(step, unix_time_now());
        if (hooks_.sampler_exhausted(step)) {
          report_fault(HookKind::kUnevenBatches, step,
                       "fewer: sampler exhausted after " + std::to_string(step - 1) +
                           " batches; leaving the training loop before step " + std::to_string(step));
          return;
        }
        train_step(step, batch);
        last_step_ = step;
        if (o_.eval_every > 0 && step % o_.eval_every == 0) run_eval(step);
        if (o_.checkpoint_every > 0 && step % o_.checkpoint_every == 0) run_checkpoint(step);
      }
    }
    if (last_step_ < o_.steps) {
      log_info("data exhausted after %d of %d steps (%d epoch(s))", last_step_, o_.steps, epochs_);
    }
  }

  void train_step(int step, const std::vector<int64_t>& indices) {
    const auto t0 = Clock::now();
    const int64_t compute_ms =
        o_.step_ms + (o_.step_jitter_ms > 0
                          ? std::uniform_int_distribution<int>(0, o_.step_jitter_ms)(jitter_rng_)
                          : 0);
    torch::Tensor x, y;
    {
      PhaseScope phase("data", step);
      const Batch b = loader_ ? loader_->next() : dataset_->read_train(indices);
      x = torch::from_blob(const_cast<float*>(b.x.data()), {b.rows(), o_.input_dim}, torch::kFloat32).clone();
      y = torch::from_blob(const_cast<float*>(b.y.data()), {b.rows(), 1}, torch::kFloat32).clone();
    }
    torch::Tensor loss;
    {
      PhaseScope phase("forward", step);
      grow_memory(step);
      spend(compute_ms / 3);  // forward is about a third of a step
      if (const Hook* h = hooks_.exception_at(step)) {
        report_fault(HookKind::kException, step, "throwing std::runtime_error(\"" + h->message + "\") in forward");
        throw std::runtime_error(h->message);
      }
      loss = torch::mse_loss(model_->forward(x), y);
      if (hooks_.nan_loss_at(step) != nullptr) {
        loss = loss * std::numeric_limits<float>::quiet_NaN();
        report_fault(HookKind::kNanSkip, step,
                     "loss forced to NaN; skipping backward, " + std::to_string(buckets_.size()) +
                         " gradient allreduce(s) (next seq " + std::to_string(comm_->next_seq()) +
                         ") and the optimizer step");
      }
    }
    const double loss_value = loss.item<double>();
    if (!std::isfinite(loss_value)) {
      // What training scripts do on a non-finite loss: skip the update. Under DDP this is
      // the classic hang, because the peers do enter this step's allreduces.
      log_info("WARNING: non-finite loss (%f) at step %d; skipping backward and the optimizer step", loss_value,
               step);
      optimizer_->zero_grad();
    } else {
      {
        PhaseScope phase("backward", step);
        optimizer_->zero_grad();
        loss.backward();
        spend(compute_ms - compute_ms / 3);
        sync_gradients(step);
      }
      {
        PhaseScope phase("optimizer", step);
        optimizer_->step();
      }
    }
    last_loss_ = loss_value;
    const double dur_ms = ms_since(t0);
    emit("step", {{"step", step}, {"dur_ms", std::round(dur_ms * 10) / 10}, {"loss", loss_value}});
    log_info("step %d/%d loss %.4f dur_ms %.0f", step, o_.steps, loss_value, dur_ms);
  }

  void spend(int64_t ms) const {
    if (o_.compute == "burn") {
      burn_cpu_ms(ms);
    } else {
      sleep_ms(ms);
    }
  }

  void grow_memory(int step) {
    const int64_t mb = hooks_.alloc_growth_mb(step);
    if (mb <= 0) return;
    const size_t bytes = static_cast<size_t>(mb) << 20;
    std::unique_ptr<char[]> block(new char[bytes]);
    // Touch every page so the memory is resident and counts against a cgroup limit.
    for (size_t off = 0; off < bytes; off += 4096) block[off] = static_cast<char>(off);
    ballast_.push_back(std::move(block));
    ballast_mb_ += mb;
    report_fault(HookKind::kAllocGrowth, step,
                 "allocated and touched " + std::to_string(mb) + " MiB (holding " + std::to_string(ballast_mb_) +
                     " MiB)");
  }

  // DDP's reducer, done by hand: one allreduce (sum) per bucket, then divide by the world
  // size and copy back into the .grad tensors.
  void sync_gradients(int step) {
    const bool skip = hooks_.should_skip_grad_allreduce(step);
    const Hook* mismatch = hooks_.mismatched_collective_at(step);
    int64_t skipped = 0;  // a skipped collective takes no seq here, but does on the peers
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const Bucket& bucket = buckets_[b];
      if (first_grad_collective_) {
        first_grad_collective_ = false;
        if (o_.first_collective_delay_ms > 0) {
          log_info("first gradient allreduce: warming up for %d ms", o_.first_collective_delay_ms);
          sleep_ms(o_.first_collective_delay_ms);
        }
      }
      if (skip) {
        report_fault(HookKind::kSkipCollective, step,
                     "skipped gradient allreduce of bucket " + std::to_string(b) + "/" +
                         std::to_string(buckets_.size()) + " (numel " + std::to_string(bucket.numel) +
                         "); peers enter it as seq " + std::to_string(comm_->next_seq() + skipped));
        ++skipped;
        continue;
      }
      std::vector<torch::Tensor> grads;
      for (size_t k : bucket.params) grads.push_back(params_[k].grad().reshape({-1}));
      torch::Tensor flat = torch::cat(grads);
      if (mismatch != nullptr && b == 0) {
        mismatched_collective(step, *mismatch, flat);
      } else {
        comm_->allreduce(flat, step);
        flat.div_(env_.world_size);
      }
      int64_t offset = 0;
      for (size_t k : bucket.params) {
        auto& g = params_[k].mutable_grad();
        g.copy_(flat.narrow(0, offset, g.numel()).view_as(g));
        offset += g.numel();
      }
    }
    if (const Hook* extra = hooks_.extra_collective_at(step)) {
      report_fault(HookKind::kExtraCollective, step,
                   "extra allreduce of numel " + std::to_string(*extra->numel) + " as seq " +
                       std::to_string(comm_->next_seq()) + " (peers do not issue it)");
      torch::Tensor t = torch::ones({*extra->numel});
      comm_->allreduce(t, step);
    }
  }

  void mismatched_collective(int step, const Hook& h, torch::Tensor& flat) {
    if (h.op == "broadcast") {
      report_fault(HookKind::kMismatchedCollective, step,
                   "bucket 0 (numel " + std::to_string(flat.numel()) + ") as broadcast from rank 0 instead of allreduce, seq " +
                       std::to_string(comm_->next_seq()));
      comm_->broadcast(flat, 0, step);
      return;
    }
    const int64_t numel = h.numel.value_or(flat.numel() + 1);
    report_fault(HookKind::kMismatchedCollective, step,
                 "bucket 0 allreduce with numel " + std::to_string(numel) + " instead of " +
                     std::to_string(flat.numel()) + ", seq " + std::to_string(comm_->next_seq()));
    torch::Tensor t = torch::zeros({numel});
    const int64_t common = std::min(numel, flat.numel());
    t.narrow(0, 0, common).copy_(flat.narrow(0, 0, common));
    comm_->allreduce(t, step);
    flat.narrow(0, 0, common).copy_(t.narrow(0, 0, common)).div_(env_.world_size);
  }

  void run_eval(int step) {
    PhaseScope phase("eval", step);
    const auto t0 = Clock::now();
    torch::NoGradGuard no_grad;
    double sum = 0;
    int64_t count = 0;
    for (int b = 0; b < o_.eval_batches; ++b) {
      std::vector<int64_t> idx;
      for (int j = 0; j < o_.batch_size; ++j) {
        idx.push_back((static_cast<int64_t>(b) * env_.world_size + env_.rank) * o_.batch_size + j);
      }
      const Batch batch = dataset_->read_held_out(idx);
      const auto x = torch::from_blob(const_cast<float*>(batch.x.data()), {batch.rows(), o_.input_dim}).clone();
      const auto y = torch::from_blob(const_cast<float*>(batch.y.data()), {batch.rows(), 1}).clone();
      sum += (model_->forward(x) - y).pow(2).sum().item<double>();
      count += batch.rows();
    }
    torch::Tensor totals = torch::tensor({sum, static_cast<double>(count)}, torch::kFloat64);
    comm_->allreduce(totals, step);
    const double global_loss = totals[0].item<double>() / std::max(1.0, totals[1].item<double>());
    log_info("eval at step %d: loss %.4f over %.0f held-out samples (%.0f ms)", step, global_loss,
             totals[1].item<double>(), ms_since(t0));
  }

  void run_checkpoint(int step) {
    PhaseScope phase("checkpoint", step);
    const auto t0 = Clock::now();
    if (env_.rank == 0 || o_.checkpoint_ranks == "all") {
      make_dirs(env_.ckpt_dir);
      char name[64];
      if (o_.checkpoint_ranks == "all") {
        std::snprintf(name, sizeof name, "/step-%06d-rank%d.pt", step, env_.rank);
      } else {
        std::snprintf(name, sizeof name, "/step-%06d.pt", step);
      }
      const std::string path = env_.ckpt_dir + name;
      const std::string tmp = path + ".tmp." + std::to_string(::getpid());
      std::ostringstream bytes;
      try {
        torch::save(model_, bytes);
      } catch (const std::exception& e) {
        throw DataError("checkpoint serialization failed: " + exception_text(e));
      }
      write_checkpoint_file(tmp, bytes.str());
      sleep_ms(o_.checkpoint_delay_ms);  // slow storage stand-in, inside the save
      if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw DataError("checkpoint publish failed: rename " + tmp + " -> " + path + ": " + std::strerror(err));
      }
      log_info("checkpoint at step %d saved to %s (%.0f ms)", step, path.c_str(), ms_since(t0));
    }
    if (hooks_.take_skip_checkpoint_barrier(step)) {
      report_fault(HookKind::kSkipCollective, step,
                   "skipped the checkpoint barrier; peers enter it as seq " + std::to_string(comm_->next_seq()));
      return;
    }
    comm_->barrier(step);
  }

  // The serialized checkpoint goes to disk with plain open/write/close, as Python's file
  // object does under torch.save: every write(2) is an I/O the storage can delay or fail,
  // and a failure names the syscall and errno (ENOSPC reads "No space left on device").
  static void write_checkpoint_file(const std::string& path, const std::string& bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw DataError("checkpoint write failed: " + path + ": open: " + std::strerror(errno));
    }
    constexpr size_t kChunk = 256 * 1024;
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, std::min(kChunk, bytes.size() - done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        ::unlink(path.c_str());
        throw DataError("checkpoint write failed: " + path + ": write: " + std::strerror(err) + " (wrote " +
                        std::to_string(done) + " of " + std::to_string(bytes.size()) + " bytes)");
      }
      done += static_cast<size_t>(n);
    }
    // close(2) reports errors of network and FUSE file systems (their flush).
    if (::close(fd) != 0) {
      const int err = errno;
      ::unlink(path.c_str());
      throw DataError("checkpoint write failed: " + path + ": close: " + std::strerror(err));
    }
  }

  void after_loop() {
    PhaseScope phase("shutdown", last_step_);
    if (o_.after_loop == "barrier") {
      log_info("final barrier");
      comm_->barrier(last_step_);
    } else if (o_.after_loop == "linger") {
      log_info("lingering after the training loop until killed");
      for (;;) ::pause();
    }
  }

  const Options& o_;
  const RankEnv& env_;
  Hooks& hooks_;
  std::mt19937 jitter_rng_;
  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  std::unique_ptr<Comm> comm_;
  torch::nn::Sequential model_;
  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<ShardedDataset> dataset_;
  std::unique_ptr<DistributedSampler> sampler_;
  std::unique_ptr<ShmLoader> loader_;
  int epochs_ = 1;
  int last_step_ = 0;
  StepTimes step_times_ = StepTimes::from_env(env_.rank);
  const bool trace_ab_ = trace_alternating();
  double last_loss_ = std::nan("");
  bool first_grad_collective_ = true;
  std::vector<std::unique_ptr<char[]>> ballast_;
  int64_t ballast_mb_ = 0;
};

int run(int argc, char** argv) {
  const Options options = parse_command_line(argc, argv);
  RankEnv env;
  try {
    env = read_env();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "[rank ?] ERROR (usage) in startup at step 0: %s\n", e.what());
    return kExitUsage;
  }
  g_rank = env.rank;
  Trace trace;
  try {
    trace = Trace::from_env(env.rank);
  } catch (const std::exception& e) {
    log_error("ERROR (usage) in startup at step 0: cannot open HANGLAB_TRACE: %s", e.what());
    return kExitUsage;
  }
  g_trace = &trace;
  emit("start", {{"pid", ::getpid()},
                 {"host", host_name()},
                 {"world_size", env.world_size},
                 {"backend", options.backend},
                 {"workload", kWorkloadName}});
  Heartbeat heartbeat(trace, env.heartbeat);
  g_heartbeat = &heartbeat;

  try {
    Hooks hooks = Hooks::from_env();
    if (std::getenv("OMP_NUM_THREADS") == nullptr) {
      at::set_num_threads(1);  // torchrun's default; N ranks per host must not oversubscribe
    }
    Trainer trainer(options, env, hooks);
    trainer.run();
    // Leave from inside this scope so the Trainer (and its process group) is never
    // destroyed: see fail().
    heartbeat.stop();
    emit("exit", {{"code", kExitOk}});
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(kExitOk);
  } catch (const UsageError& e) {
    fail(ErrorClass::kUsage, e.what());
  } catch (const DataError& e) {
    fail(ErrorClass::kData, e.what());
  } catch (const std::exception& e) {
    const std::string what = exception_text(e);
    if (g_progress.in_collective) fail(classify_collective_error(what), what);
    if (g_progress.phase == "init") fail(ErrorClass::kRendezvous, what);
    fail(ErrorClass::kOther, what);
  } catch (...) {
    fail(ErrorClass::kOther, "unknown exception");
  }
}  // every path above ends in _exit

}  // namespace
}  // namespace hanglab

int main(int argc, char** argv) {
  hanglab::init_rank_signals();
  return hanglab::run(argc, argv);
}
