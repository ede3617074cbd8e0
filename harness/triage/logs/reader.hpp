// Triage of plain logs, the corpus half: load_log_corpus() reads any mix of log files and
// directories (per-rank files, per-pod kubectl logs, one combined launcher log, dmesg)
// with parse_log_line(), attributes every line to a global rank (line prefix, launcher
// label, in-message rank, file name), assembles the multi-line constructs (torchrun's
// failure summary, Open MPI's exit block, continuation lines) and keeps only what the
// analyzer needs: per rank a bounded step history and its first/last lines, and the
// notable events (failures, exits, phase markers, world-size statements), each with its
// file:line. logs/timeline.hpp reads that into per-rank state and analyze_log_corpus()
// (reason/log.hpp, reason/log_*.cpp) turns it into a TriageResult. Internal to hanglab_triage; exposed for unit tests and the benchmark.
//
// Files are read as streams in fixed-size chunks (memory does not grow with file size)
// and several files are scanned in parallel; results are merged in file order, so the
// answer does not depend on thread timing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "triage/model/result.hpp"
#include "triage/logs/parse.hpp"

namespace hanglab {

struct LogFileInfo {
  std::string name;       // as cited in evidence: relative to the directory given, else the path given
  std::filesystem::path path;
  int file_rank = -1;     // rank from the file's name, -1 when none
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t last_text_line = 0;  // the last line with any text (pastes end in blank lines)
  bool ends_mid_line = false;  // the last line has no newline: truncated (or still being written)
  bool any_clock = false;
  bool no_year_clock = false;  // glog/syslog stamps dated with the corpus year
  uint64_t local_rank_lines = 0;  // lines attributed by torchrun's local-rank prefix only
  // Lines Ray's driver left out of the paste: the sum of its "[repeated Nx across cluster]" counts (LogLine::
  // ray_repeats). Each stands for another process's line, whatever rank or numbers it held.
  uint64_t ray_hidden_lines = 0;
};

struct StepRec {
  int step = 0;
  double t = 0;
  bool has_t = false;
  double dur_ms = -1;
  uint32_t file = 0;
  uint32_t line = 0;
};

// One notable line, copied out of the read buffer.
struct LogEvent {
  LogKind kind = LogKind::kNone;
  int rank = -1;  // global rank, -1 = not attributed
  RankSource rank_src = RankSource::kNone;
  uint32_t file = 0;
  uint32_t line = 0;
  bool has_t = false;
  bool t_exact = false;  // the line carried its own clock (else inherited from an earlier line)
  double t = 0;
  double t_res = 0;
  bool partial = false;  // the truncated last line of its file
  long long seq = -1, numel_in = -1, numel_out = -1, timeout_ms = -1, ran_ms = -1, last_enqueued = -1,
            last_completed = -1;
  long long pending = -1;  // works in flight (heartbeat monitor)
  long long pid = -1;
  int nccl_dev = -1;  // LogLine::nccl_dev
  int pg_rank = -1, local_rank = -1, other_rank = -1, world = -1, joined = -1, step = -1, total_steps = -1;
  // c10d's store-based barrier names its key ("store_based_barrier_key:37", torch 1.x distributed_c10d.py
  // _store_based_barrier): on a line that counts arrivals (joined >= 0), the key's number, else -1.
  long long barrier_key = -1;
  int code = kNoCode;
  int signal = 0;
  bool pg_default = false;
  std::string op, pg, host, word, where, text;
  std::string category, cause;  // what the line proves (pattern table), empty = the kind's default
  // The catalogue's entry and meaning when it gave the line its meaning (LogLine::catalogue, role,
  // phase): views of the built-in catalogue, which lives as long as the program.
  const CatalogueEntry* catalogue = nullptr;
  std::string_view role, phase;
  bool peer_closed = false;       // LogLine::peer_closed
  bool torch_rendezvous = false;  // LogLine::torch_rendezvous
  bool report_entry = false;      // LogLine::report_entry
  // An exception the program handled: its traceback goes on "During handling of the above
  // exception, another exception occurred" to the one the process raised (Python's implicit
  // chaining), so it is context, not the failure.
  bool handled = false;
  // A "terminate called after throwing ..." whose next line, the exception's "what():", is a
  // collective's failure (ProcessGroupNCCL's watchdog throws from its thread: the abort of a rank
  // that timed out waiting, not a crash of its own). Its rank: the what() line's, when it had none.
  bool comm_what = false;
  // ... whose "what():" line is a failure of another kind the reader knows (a CUDA error, an OOM):
  // that line speaks for it.
  bool read_what = false;
  // A launcher's report names this process as the first to exit non-zero ("... The first process to do so
  // was: Process name: N", mpirun's and horovodrun's): the launcher's claim of the root, as torchrun's "Root Cause".
  bool first_failed = false;
  std::vector<int> ranks;
};

// A launcher's report of the first process to exit non-zero: its head ("... exited with non-zero status ... The
// first process to do so was:", mpirun's help text and horovodrun's RuntimeError, gloo_run.py:284@v0.28.1), then
// "Process name: N" and "Exit code: C", one message; the head names no process itself. A paste may keep the lines
// out of order (a log viewer sorting lines of one timestamp): a name within kSpan lines of the head, before or
// after it, is the head's.
struct MpiReport {
  static constexpr uint32_t kSpan = 3;
  int rank = -1;  // the last "Process name:"'s rank, until an "Exit code:" takes it
  uint32_t line = 0;
  size_t head_ev = SIZE_MAX;  // a head event no name has followed yet
  uint32_t head_line = 0;
  void name(int r, uint32_t at, std::vector<LogEvent>& events) {
    rank = r;
    line = at;
    if (head_ev < events.size() && at - head_line <= kSpan && events[head_ev].other_rank < 0) {
      events[head_ev].other_rank = r;
      events[head_ev].first_failed = true;
    }
    head_ev = SIZE_MAX;
  }
  // A head about to become event `index` at line `at`: the rank a name just before gives it, else -1 (and it
  // waits for the name).
  int head(uint32_t at, size_t index) {
    if (rank >= 0 && at - line <= kSpan) return rank;
    head_ev = index;
    head_line = at;
    return -1;
  }
};

// torchrun's failure summary, one "[i]:" entry.
struct LaunchFailure {
  bool root_claim = false;  // listed under "Root Cause (first observed failure)"
  int rank = -1;
  int local_rank = -1;
  std::string host;
  long long pid = -1;
  int code = kNoCode;  // exitcode >= 0
  int signal = 0;      // exitcode < 0
  bool has_t = false;
  double t = 0;  // whole seconds
  std::string traceback;
  std::string error_file;
  uint32_t file = 0;
  uint32_t line = 0;  // of the "exitcode" field (the "[i]:" line when absent)
};

// The last tqdm bar a writer drew (logs/progress.hpp): what it counts, how far, for how long.
struct BarSeen {
  std::string desc;             // its description ("Preparing test set...", "" for none)
  std::string phase;            // bar_phase(): data | checkpoint | init | eval | training | ""
  long long first_n = -1, last_n = -1, total = -1;
  int advances = 0;             // redraws that counted further (its lines, and the \r redraws inside one)
  double elapsed_s = -1;        // at the last redraw (its own "[27:15<...")
  uint32_t file = 0, line = 0;  // the last redraw's line
  bool has_t = false;
  double t = 0;
  bool seen() const { return last_n >= 0; }
};

struct RankLog {
  int rank = -1;
  uint64_t lines = 0;
  uint64_t host_tag_lines = 0;         // lines attributed by a "[host:N]" tag only (N may be a pid)
  uint32_t first_file = 0, first_line = 0, last_file = 0, last_line = 0;
  bool has_first_t = false, has_last_t = false;
  double first_t = 0, last_t = 0;      // clock of the first/last line (inherited when the line had none)
  uint64_t n_steps = 0;
  int last_step = -1;                  // step of the last step line (in log order)
  int max_step = -1;
  int total_steps = -1;
  std::vector<StepRec> recent;         // the last kRecentSteps step lines, oldest first
  std::string host;
  BarSeen bar;                         // its last progress bar
  LogKind phase = LogKind::kNone;      // last phase marker (checkpoint/eval/data begin or end)
  uint32_t phase_file = 0, phase_line = 0;
  double phase_t = 0;
  bool phase_has_t = false;
  std::string phase_text;
  // DETAIL mode: the last collective the rank logged entering ("Running collective:
  // CollectiveFingerPrint(SequenceNumber=3, OpType=BROADCAST, TensorShape=[1], ...)"); seq -1 when none.
  struct Started {
    long long seq = -1;
    std::string op;
    long long numel = -1;
    uint32_t file = 0, line = 0;
    bool has_t = false;
    double t = 0;
    // A SequenceNumber lower than the one before: lines of several process groups (each counts its
    // own, and a subgroup's "[Rank N]" is its local rank): the last one says nothing alone.
    bool mixed = false;
  } started;
};

// A process NCCL's own prefix names ("host:pid:tid [dev] NCCL INFO ..."): one per distinct host:pid.
struct NcclProc {
  std::string host;
  long long pid = -1;
  int dev = -1;  // the CUDA device it drives (not its rank)
  uint32_t file = 0, line = 0;
};

struct WorldHint {
  int world = 0;
  int rank = -1;  // the rank of the line that states it (a start-up line: two files with the same rank's = a duplicate)
  int joined = -1;  // a store barrier's count of the ranks that arrived ("worker_count=1"), -1 = not a count
  int settled = 0;  // later lines of the same waiter that stated the same count (the waiter repeats every 10 s)
  long long key = -1;  // a store barrier's key number (the process groups created so far), -1 = unknown
  uint32_t file = 0;
  uint32_t line = 0;
  std::string text;
};

// Where torchrun's elastic agent placed its node's workers, from its own lines (LogKind::kAgentLayout):
// the rendezvous result ("[default] Rendezvous complete for workers. Result:" then "  group_rank=1",
// "  group_world_size=2", "  local_ranks=[0, 1]", "  global_ranks=[2, 3]", ...,
// torch/distributed/elastic/agent/server/api.py:552@2.15.0, the same keys since torch 1.9) and the
// launcher's banner ("Starting elastic_operator with launch configs:" then "  min_nodes : 2",
// launcher/api.py:257@2.15.0). A worker's global rank is its agent's base plus its local rank (api.py:683).
struct AgentLayout {
  // More than one node: a group world size or a minimum node count above 1. torchrun's local ranks
  // ("local_rank: 1" in its exit lines, "[default1]:") are then not global ranks.
  bool multi_node = false;
  // local rank -> global rank, where every result in the logs agrees (one node's paste, or one agent
  // that rendezvoused again into the same place); empty where two disagree (several agents' lines).
  std::map<int, int> local_to_global;
  uint32_t file = 0, line = 0;  // the line that proved multi_node or gave the map
};
AgentLayout read_agent_layout(const std::vector<LogEvent>& events);
// An event's text is kept to this many bytes.
constexpr size_t kMaxEventText = 320;
// What a line says, copied into an event (reader_lines.cpp); the caller sets where and when.
void event_fields(const LogLine& l, LogEvent& e);

struct LogCorpus {
  std::vector<LogFileInfo> files;
  std::map<int, RankLog> ranks;
  std::vector<LogEvent> events;  // in time order (clock-less ones by position, after the timed ones)
  std::vector<LaunchFailure> launch_failures;
  std::vector<std::pair<long long, int>> pid_rank;  // pid -> global rank, from lines that name both
  std::vector<WorldHint> world_hints;
  std::vector<NcclProc> nccl_procs;  // distinct host:pid, first line each (at most kMaxWorld)
  int year = 2000;       // the year given to glog/syslog stamps
  bool year_known = false;
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t unattributed_steps = 0;  // step lines no rank could be named for (a one-process paste)
  LogKind unattributed_phase = LogKind::kNone;  // the last phase marker among them
  uint32_t unattributed_phase_file = 0, unattributed_phase_line = 0;
  std::string unattributed_phase_text;
  bool unattributed_phase_stepped = false;  // a step line followed it in its file: training went on after it
  uint64_t progress_lines = 0;  // "Epoch 1/1"-style progress without a step number (any writer)
  BarSeen unattributed_bar;     // the last progress bar no rank could be named for
  // A line of torch's launchers or their elastic agent (reader_lines.cpp names_torch_launcher): the
  // processes a scheduler started (srun's tasks) may be agents whose workers are the ranks.
  bool torch_launcher = false;
  // srun (its "task N" lines or its "N: " labels) started torch's launcher, one elastic agent per node
  // (corpus.cpp srun_started_agents): srun's task N is agent N, not rank N. Events whose rank came only
  // from srun's label have none then, and the lines of such a label are no rank's (label_ranks).
  bool srun_agents = false;
  // torchrun's elastic agent said where its node's workers sit (agent_layout.cpp).
  AgentLayout agent;
};

constexpr size_t kRecentSteps = 48;
// Per rank and kind, events beyond this many are counted, not kept: a 16k-rank job's
// watchdog and stack-frame floods must not grow memory.
constexpr size_t kMaxEventsPerRankKind = 4;

// One input file and how to name it.
struct LogInput {
  std::filesystem::path path;
  std::string name;
};

// Lists the log files under `paths` (files as given; directories recursively, skipping
// hidden entries, hanglab's own JSON/TOML/HTML records, binaries and `expected.json`).
// With logs_only and a hanglab run directory: only ranks/<r>/stdout.log and stderr.log.
std::vector<LogInput> list_log_inputs(const std::vector<std::filesystem::path>& paths, bool logs_only);

// Reads and parses the inputs (threads: 0 = hardware concurrency, at most 8).
LogCorpus load_log_corpus(const std::vector<LogInput>& inputs, unsigned threads = 0);

// "name:line" of an event or a file line.
std::string log_ref(const LogCorpus& c, uint32_t file, uint32_t line);

}  // namespace hanglab
