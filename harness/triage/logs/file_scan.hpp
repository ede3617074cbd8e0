// One plain log file's scan (logs/reader.cpp), merged into the corpus by logs/corpus.cpp (internal to
// logs/): what a file says about each rank, its notable lines, the launcher's summary entries, the
// world-size statements and the lines no rank can be named for.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "triage/logs/reader.hpp"

namespace hanglab {

// Everything a file's scan produces; merged into the corpus in file order.
struct RankAcc {
  RankLog log;
  std::vector<StepRec> ring;  // circular, kRecentSteps
  size_t ring_pos = 0;
};

struct FileScan {
  LogFileInfo info;
  std::unordered_map<int, RankAcc> ranks;
  std::vector<LogEvent> events;
  std::vector<LaunchFailure> launch;
  std::vector<std::pair<long long, int>> pid_rank;
  // Lines whose only rank is srun's task label (RankSource::kSrunLabel): kept apart until the corpus
  // knows whether srun started the ranks or torch's agents (LogCorpus::srun_agents).
  std::unordered_map<int, RankAcc> label_ranks;
  std::vector<std::pair<long long, int>> label_pid_rank;
  // Lines whose only rank is torchrun's tee prefix "[default3]:" (RankSource::kLocal): a local rank, kept
  // apart until the corpus knows the agent's layout (LogCorpus::agent).
  std::unordered_map<int, RankAcc> local_ranks;
  std::vector<std::pair<long long, int>> local_pid_rank;
  uint64_t srun_label_lines = 0;
  std::vector<WorldHint> world;
  std::vector<NcclProc> nccl_procs;
  uint64_t unattributed_steps = 0;
  uint64_t progress_lines = 0;
  LogKind unattributed_phase = LogKind::kNone;
  uint32_t unattributed_phase_line = 0;
  std::string unattributed_phase_text;
  bool unattributed_phase_stepped = false;  // a step line (any writer) followed it in this file
  BarSeen unattributed_bar;
  bool torch_launcher = false;  // names_torch_launcher() held for a line
};

// reader_lines.cpp
// "epoch=1", "epoch 3", "Epoch=2": an epoch number stated in the line.
bool names_epoch(std::string_view m);
// Where a tqdm bar's closing "[elapsed<remaining, rate]" runs into another writer's text: the offset of that
// text, npos when the line is not such a join.
size_t after_progress_bar(std::string_view text);
bool what_nccl_error(std::string_view m);
// A message a terminal or a paste wrapped onto two lines: `next` has no writer of its own (it begins with a
// lower-case word, or a number and one, as a cut sentence goes on) and the two together are a catalogue format
// more specific than either line alone ("... [Rank 2] Watchdog caught " + "collective operation timeout:
// WorkNCCL(...) ran for 600888 milliseconds before timing out.").
bool wrapped_message(std::string_view line, std::string_view next);
// A platform's quoted copy of a process's last output (newlines escaped) holding a step or progress line.
bool quoted_progress(std::string_view m, const LogLineContext& ctx);
// A line only torch's launchers (torchrun, torch.distributed.run/.launch) or their elastic agent write,
// or a traceback frame of theirs.
bool names_torch_launcher(std::string_view m);
// A launcher's or job runner's line (its signals, exits, summary, MPI and srun task lines).
bool launcher_kind(LogKind k);
// Kinds whose pid is another process (the killed one), not the writer of the line.
bool pid_is_other(LogKind k);

// Scans one file (index: its position among the inputs; file_rank: the rank its name says, -1 none).
// Throws std::runtime_error when it cannot be opened or read.
FileScan scan_log_file(const LogInput& in, uint32_t index, int file_rank, const LogLineContext& ctx);

}  // namespace hanglab
