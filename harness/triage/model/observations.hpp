// Triage model, run directories: the observations in one run directory, parsed but not yet
// judged. records/run_dir.cpp (load_run_observations) reads harness.jsonl and every ranks/<r>/
// folder (events.jsonl, stdout.log, stderr.log, stack.txt, oom.txt) into these plain structs,
// which keep the file:line of each fact so the reasoner (reason/run_*.cpp) can cite its
// evidence. Internal to hanglab_triage.
//
// Harness `fault` events are the injected ground truth: they are kept (HarnessFault) but
// never used by the reasoner; triage reaches its answer from observations only.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hanglab {

// ---- One failure, whatever the evidence ---------------------------------------------------------
// Both reasoners argue root vs echo over the same observation: a trace's error event or the
// supervisor's exit record (records/, reason/run_*.cpp) and a log line or a launcher's summary
// entry (logs/, reason/log_*.cpp) become an Observation with its role in the story.

// root: a failure of the rank's own (a death by signal, an exception, a resource fault) | echo: the
// rank failed waiting for a peer (a timeout, a closed connection) | teardown: the launcher or the
// harness stopped it | exit: how a process ended, a root only when nothing else explains it |
// info: not a failure.
enum class Role { kInfo, kRoot, kEcho, kTeardown, kExit };

constexpr int kNoCode = std::numeric_limits<int>::min();  // no exit code known

struct Observation {
  int rank = -1;
  Role role = Role::kInfo;
  bool has_t = false;
  double t = 0;
  double res = 0;          // the clock's resolution (1 for whole-second stamps)
  bool exact = true;       // the clock is the evidence's own (else inherited: a lower bound)
  uint32_t file = 0;       // plain logs: the file and line, to order clock-less lines by position
  uint32_t line = 0;
  std::string what;
  std::string ref;         // file:line cited
  std::string category;    // what it proves (roots), "" = nothing beyond its role
  std::string cause;
  std::string cls;         // run records: the workload's error class (signal | vanished | timeout | comm |
                           // rendezvous | data | usage | other | exit | teardown)
  int strength = 0;        // among simultaneous roots: OOM/CUDA/crash 3, signal death 2, exception 1
  bool aftermath = false;  // a launcher's notice of a rank that had already failed waiting
  int signal = 0;          // 0 = none
  int code = kNoCode;
  std::string host;
};

struct CollRecord {
  long long seq = 0;
  std::string op;
  long long numel = -1;
  int step = 0;
  double begin_t = 0;
  int begin_line = 0;
  std::optional<double> end_t;  // absent: still inside, or the collective threw
  int end_line = 0;
  std::string phase;  // innermost phase open when the rank entered it
};

struct StepRecord {
  int step = 0;
  double t = 0;
  double dur_ms = 0;
  double coll_ms = 0;  // time inside collectives of this step (waiting for peers included)
  int line = 0;
  bool loss_nonfinite = false;  // "loss": null / "nan" / "inf" (NaN is not JSON)
  bool had_backward = false;    // a backward phase began in this step
};

// The plain-log classifier's kinds of line (logs/parse.hpp defines them): opaque here, so that a
// message's reading can be kept by value; reason/ compares them with logs/parse.hpp included.
enum class LogKind : uint8_t;

// How the plain-log classifier reads one message (logs/parse.hpp parse_log_line with its pattern table
// and message catalogue, then logs/meaning.cpp line_meaning for its role and what it proves): the one
// reading of a line, whichever reasoner uses it.
struct LineReading {
  LogKind kind{};           // LogKind::kNone when the classifier reads nothing in it
  Role role = Role::kInfo;  // root | echo | exit | teardown | info (not a failure)
  std::string category;     // what it proves: the pattern table's or catalogue's, else the kind's default
  std::string cause;        // ("" = nothing beyond its role)
  int signal = 0;           // the signal it names (a crash, a killed DataLoader worker), 0 = none
};

// What a message's text says, read once by the layer that reads text (records/message_facts.cpp,
// through the plain-log classifier of logs/), when the run directory is loaded: reason/ reads these
// fields, never the text itself.
struct TextFacts {
  LineReading read;          // the classifier's reading of the message
  std::string cause;         // cuda_oom | oom (host memory) | shm_exhausted (/dev/shm full) | "" (none of these)
  bool timeout = false;      // the message says something timed out
  bool no_interface = false; // the socket interface it names does not exist (wrong GLOO/NCCL_SOCKET_IFNAME)
  bool unreachable = false;  // the kernel has no route to the peer it connected to
  std::string remote;        // Gloo's peer address "remote=[ADDR]:PORT" -> ADDR
  std::vector<int> missing_ranks;  // a rendezvous timeout's "missing ranks: 1,3"
  std::string master;        // the store host it names: "connect to (HOST, PORT)", "master HOST:PORT"
};

struct ErrorRecord {
  double t = 0;
  int line = 0;
  std::string msg;
  std::string where;
  std::string cls;  // timeout | comm | rendezvous | data | other (workload's classification)
  int step = 0;
  long long seq = 0;
  TextFacts says;   // what msg says
};

struct FaultRecord {  // a rank's own `fault` trace event: citable, never decisive
  double t = 0;
  int line = 0;
  std::string kind;
  std::string detail;
};

// A stdout/stderr line worth citing: one the plain-log classifier reads as a failure (a root, an
// echo, an exit or a teardown), a traceback's header or the program's word that its data ran out
// (records/run_dir.cpp read_log); the reasoner reads it by says.read, never by its text.
struct LogHit {
  std::string file;  // stdout.log | stderr.log | oom.txt
  int line = 0;
  double t = 0;      // from the harness' timestamp prefix; 0 when absent
  std::string text;  // the line without its timestamp prefix
  TextFacts says;    // what text says
};

struct StackFrameInfo {
  std::string tool;   // gdb | py-spy | unknown
  std::string frame;  // innermost interesting frame of the main thread
  int line = 0;       // line of that frame in stack.txt
  // The main thread's frames, innermost first (py-spy: "save (torch/serialization.py:850)";
  // gdb: the function name, "from lib" / "at file:line" kept after a tab).
  std::vector<std::string> frames;
  std::optional<bool> idle;  // py-spy's "(idle)" / "(active)" mark of the main thread
  // The process state just before the capture (the harness writes "# state: S wchan: x"):
  // R running, S sleeping, D uninterruptible (I/O), T/t stopped. Empty when not recorded.
  std::string state;
  std::string wchan;
  std::optional<double> t;  // when the capture began (the "at <iso>" of its header)
  // What the stack shows the rank doing (records/stack_class.hpp): collective | io | data |
  // init | compute | stopped | unknown, the frame that decided it and a short phrase.
  std::string klass;
  std::string klass_frame;
  std::string klass_what;
  bool torch_save = false;  // the frame that decided is torch.save's own (torch/serialization.py)
  // The phase the frames name, innermost first (logs/frames.cpp's table): checkpoint | eval |
  // training | init, "" when none does.
  std::string phase;
};

// Progress lines a program printed (logs/progress.hpp), with the harness' timestamps.
struct ProgressSeen {
  int lines = 0;            // progress lines seen
  double first_t = 0;       // clock of the first one
  double last_t = 0;        // clock of the last one
  std::string last_ref;     // stdout.log:<line> of the last one
  std::string last_text;    // the last one, without its timestamp
  std::string last_what;    // "epoch 12, step 22" (ProgressMatch::describe)
  std::string pattern;      // the table entry of the last one
  double median_gap_s = 0;  // median interval between consecutive progress lines
  // Training steps completed as of the last line that counts them (ProgressMatch::steps_done):
  // a run-wide step, or epoch x steps-per-epoch + step for per-epoch counters; none when no
  // line gave a countable step.
  std::optional<long long> steps_done;
};

struct RankObservations {
  int rank = -1;
  bool has_trace = false;      // at least one parseable event
  std::vector<int> bad_lines;  // unparsable trace lines (a kill mid-write), skipped
  std::optional<double> start_t;
  int start_line = 0;
  std::optional<long long> pid;
  std::optional<int> claimed_rank;  // the `rank` its start event reports (differs from the folder: a duplicate RANK)
  bool init_ended = false;
  int init_end_line = 0;
  double init_end_t = 0;
  // Phases in begin order that have not ended yet (innermost last).
  std::vector<std::string> open_phases;
  std::string last_phase;         // innermost open phase, else the last one seen
  bool last_phase_ended = false;  // no phase open: last_phase is the last one that ended
  int last_phase_line = 0;
  double last_phase_t = 0;
  int last_phase_step = 0;
  std::vector<StepRecord> steps;  // in trace order
  std::set<int> backward_steps;   // steps in which a backward phase began
  std::map<long long, CollRecord> colls;
  std::vector<double> hb_t;
  int last_hb_line = 0;
  std::vector<FaultRecord> faults;
  std::vector<ErrorRecord> errors;
  std::optional<int> trace_exit_code;
  double trace_exit_t = 0;
  int trace_exit_line = 0;
  double first_t = 0;
  double last_t = 0;  // any event incl. hb
  int last_line = 0;
  double last_progress_t = 0;  // any event but hb
  int last_progress_line = 0;
  std::vector<LogHit> log_hits;
  // The store address the workload's own start line names ("<workload> starting: world_size N, ...,
  // master HOST:PORT", workloads/loop/trainer.cpp), "" when none: the MASTER_ADDR this rank was given.
  std::string start_master;
  // Memory-cgroup / kernel evidence of an OOM kill (ranks/<r>/oom.txt: memory.events
  // counters and the kernel's oom-kill lines, collected like `dmesg` on a real node).
  std::optional<LogHit> oom_evidence;
  std::optional<StackFrameInfo> stack;
  std::optional<ProgressSeen> progress;  // from stdout.log / stderr.log
};

struct HarnessLaunch {
  double t = 0;
  int line = 0;
  long long pid = 0;
};

struct HarnessExit {
  double t = 0;
  int line = 0;
  std::optional<int> code;
  std::optional<int> signal;
  std::optional<bool> by_teardown;  // the supervisor's own word, when it wrote one
};

struct HarnessDetect {
  double t = 0;
  int line = 0;
  std::string detector;
  int rank = -1;
  std::string detail;
  TextFacts says;  // what detail says
};

// The harness' own record of a fault it injected (harness.jsonl `fault`). Neither the
// verdict nor the answer uses it (triage answers from observations, as on a real incident:
// triage_test checks the answer is the same without these lines); it is read so that the
// run's evidence model is whole for the report layers that compare verdict and fault.
struct HarnessFault {
  double t = 0;
  int line = 0;
  std::string kind;
  std::vector<int> ranks;
};

// A node of a [topology] nodes > 1 run (harness.jsonl `nodes`): which ranks ran there.
// That is a fact of the deployment, like a hostname in a real job's logs, not of the fault.
struct HarnessNode {
  int node = 0;
  std::string name;  // node0, node1, ...
  std::string addr;
  std::string addr2;  // its second interface's address ([topology] second_nic), "" when none
  std::vector<int> ranks;
};

// The reachability probe of a multi-node run (harness.jsonl `net_probe`): replies to
// `pings` pings per ordered pair of nodes, small and at the MTU with don't-fragment.
struct HarnessProbePair {
  int from = 0, to = 0, small = 0, large = 0;
};
struct HarnessProbe {
  int pings = 0, mtu = 0;
  std::vector<HarnessProbePair> pairs;
  int line = 0;  // harness.jsonl line
};

struct HarnessObservations {
  bool present = false;
  std::vector<HarnessNode> nodes;  // empty: one host
  int nodes_line = 0;              // harness.jsonl line of the `nodes` event
  HarnessProbe probe;              // `net_probe`, when the run had nodes and something fired
  std::optional<double> start_t;
  std::optional<int> world_size;
  std::optional<double> heartbeat_s;
  std::optional<double> collective_s;
  std::optional<double> init_s;
  std::map<int, HarnessLaunch> launches;
  std::map<int, HarnessExit> exits;  // first exit per rank
  std::vector<HarnessDetect> detections;
  std::optional<double> teardown_t;
  std::string teardown_reason;
  // When the harness began capturing stacks (gdb/py-spy stop every rank they attach to).
  std::optional<double> stacks_t;
  int teardown_line = 0;
  std::optional<double> end_t;  // run_end
  std::optional<double> progress_s;  // the harness watchdog's limit
  std::vector<HarnessFault> faults;  // context only, see HarnessFault
};

struct RunObservations {
  HarnessObservations harness;
  std::map<int, RankObservations> ranks;  // every ranks/<r>/ folder, plus launched ranks
};

}  // namespace hanglab
