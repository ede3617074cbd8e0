// ProcessGroupNCCL's desync report (TORCH_NCCL_DESYNC_DEBUG=1; NCCL_DESYNC_DEBUG before torch 2.2), read
// from the message catalogue's torch-desync-2.15.0 emitter (logs/catalogue: the lines retrieveDesyncReport,
// analyzeMissingRanks, analyzeLaggingRanks and dumpSnapshot build in torch/csrc/distributed/c10d/TraceUtils.h,
// the same words at pytorch 3f8ce0f9, 009798fd and v2.15.0). The report is one string of several lines that
// the watchdog of the process group whose collective timed out logs at once:
//   - torch 1.10-1.13: appended to the watchdog's own "[Rank R] Watchdog caught collective operation
//     timeout: WorkNCCL(...) ran for N milliseconds before timing out." (exceptionMsg +=
//     retrieveDesyncReport(store_, "NCCL", rank_, size_), ProcessGroupNCCL.cpp's workCleanupLoop);
//   - torch 2.0-2.2: its own LOG(ERROR) << desyncMsg after that line;
//   - torch 2.3 on: DesyncDebugger::run()'s LOG(ERROR) << "Rank " << rank_ << desyncMsg, right before the
//     same watchdog iteration's "<logPrefix> failure detected by watchdog at work sequence id: ..."
//     (Watchdog::runLoop, stored ProcessGroupNCCL.cpp library id 23264163), whose prefix names the group.
// Its lines, after "- [R] Timeout at collective: OP, #S" (R: the reporting rank's rank in the group):
//   - "ranks [a, b] are the lagging ranks ... never joined any collectives": those ranks never started any
//     collective of the group (no start key in the store); nothing else follows;
//   - else the ranks at the lowest seq of the group ("[..] joined but didn't finish collective #S",
//     "[..] finished collective #S, but didn't join collective #S+1"), then the snapshot: every rank of the
//     group once, under the seq of its last started collective, by op ("#S started ranks:", "[..] started OP").
// What it proves, read here:
//   - the ranks are the group's (rank_, size_ of the ProcessGroupNCCL): global ranks only when the group is
//     the default one, which a line of the same writer next to the report says ("[PG ID 0 PG GUID
//     0(default_pg) Rank 0]", "[PG 0 Rank 0]"); otherwise no rank is claimed;
//   - never joined: those ranks are missing;
//   - lowest seq: those ranks are missing from the collective their peers are in, when the snapshot is whole
//     (the report ended on a line of another message), holds more than one seq (ranks at one seq only are all
//     in one collective: none is missing) and no point-to-point op: from torch 2.4 a work's seq_ counts
//     collectives and p2p calls apart (seqCollective_, seqP2P_; "Record the sequential number of collective
//     or p2p", ProcessGroupNCCL.hpp:448-449@v2.15.0), so a SEND's #3 says nothing against an ALLREDUCE's #300;
//   - the world: a whole snapshot lists every rank 0..size-1 of the group once; of the default group that
//     is the world size (a world hint);
//   - a mismatch: two different collectives at the same seq of a whole snapshot are ranks that called
//     different collectives at the same count (the count is the same per group on every rank: seqCollective_
//     increments once per collective call); the smaller side is the odd one when it is strictly smaller.
// parse.cpp calls read_desync() per line; reader.cpp folds the report's lines into its first line's event
// with DesyncReport. Internal to hanglab_triage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "triage/logs/parse.hpp"
#include "triage/logs/reader.hpp"

namespace hanglab {

// The report's word (LogLine::word, LogEvent::word) on every line of it.
inline constexpr std::string_view kDesyncWord = "desync";

// One line read as a line of the desync report (the catalogue's torch TraceUtils.h entry; a snapshot entry
// "[0, 1] started ALLREDUCE" only inside a report: LogLineContext::desync_report, its literal text being too
// short to be matched alone). Sets word "desync", the kind the entry means (kNone for the snapshot's
// lines), ranks (a rank list's numbers), seq, op, other_rank (the reporting rank's group rank) and returns
// true; false for any other line.
bool read_desync(std::string_view body, const LogLineContext& ctx, LogLine& o);

// The report's lines, folded into its first line's event ("Timeout at collective"), which becomes a
// kDesyncMissing (never joined), kDesyncLagging (lowest seq) or kCollMismatch (two collectives at one
// seq) event with the ranks it proves (global ranks of the default group only), the group's size
// (LogEvent::world) and the group (pg, pg_default) once a line next to it names it.
class DesyncReport {
 public:
  // The next line may continue the report (for LogLineContext::desync_report).
  bool active() const { return open_; }
  // Each parsed line of the file, before it becomes an event (`rank`: the writer the reader attributed it
  // to, a continuation line's being the line's before; `line_no`: its line in the file). True when the line
  // was the report's own and is folded into events[header] (the first line's event, once note_event kept
  // it). A world size the report proves goes to `world`.
  bool line(const LogLine& l, int rank, uint32_t line_no, std::vector<LogEvent>& events, std::vector<WorldHint>& world);
  // At the end of the file: a report still open is cut (no snapshot is whole).
  void close(std::vector<LogEvent>& events, std::vector<WorldHint>& world);

 private:
  void fold(const LogLine& l);
  void finish(bool whole, std::vector<LogEvent>& events);
  void decide(const LogLine* named, std::vector<LogEvent>& events, std::vector<WorldHint>& world);
  bool open_ = false;
  size_t header_ = SIZE_MAX;  // index the first line's event got
  uint32_t header_line_ = 0;
  int writer_ = -1;    // the first line's global rank (-1: none)
  int reporter_ = -1;  // the reporting rank's rank in the group ("[R] Timeout at collective")
  bool never_joined_ = false;
  std::vector<int> listed_;  // the never-joined or lowest-seq ranks
  long long lag_seq_ = -1;
  long long snap_seq_ = -1;                                            // the snapshot's seq being listed
  std::map<long long, std::map<std::string, std::vector<int>>> snap_;  // seq -> op -> ranks
  bool snap_bad_ = false;                                              // an entry that could not be read whole
  // After the report: its group is named by a line of the same writer within a few lines.
  size_t pending_ = SIZE_MAX;
  uint32_t pending_line_ = 0;
  int pending_left_ = 0;
  // What the report proves, waiting for its group.
  std::vector<int> proven_;
  LogKind proven_kind_ = LogKind::kNone;
  int group_size_ = -1;
  long long mismatch_seq_ = -1;
  std::string mismatch_;  // what the snapshot shows at that seq (the event's text)
};

}  // namespace hanglab
