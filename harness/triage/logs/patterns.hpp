// What a plain log line means, as data: one table of line patterns (every needle that
// must occur, one of which must occur, the event it is, the category/cause it proves,
// and a real line it was written for). parse_log_line() consults the table before its
// hand-written checks, so a newcomer adds a shape by adding one entry here, its example
// line (from a case under harness/testdata/reallogs/) and one corpus case; the unit test
// checks that every entry's example parses to its entry. The reasoning (root vs echo,
// missing by absence) stays in reason/log_*.cpp. Internal to hanglab_triage.
#pragma once

#include <string_view>
#include <vector>

#include "triage/logs/parse.hpp"

namespace hanglab {

// Fields a pattern reads out of its line, beyond kind/cause/signal.
enum class PatternFields : uint8_t {
  kNone,
  kSignalName,    // the signal from its name ("Aborted", "Bus error", "Segmentation fault")
  kStoreBarrier,  // "(world_size=8, worker_count=4, ...)" -> world, joined
  kLauncherCode,  // DeepSpeed's "[... '--local_rank=0' ...] exits with return code = -9" -> code/signal, local rank
  kEpoch,         // only when "Epoch"/"epoch" is followed by a number or "[": not the word in prose
  kKilledProcess, // "Killing subprocess 13266" -> pid, signal SIGKILL
  kPendingWork,   // "workMetaList_.size()=103" -> pending
  kKernelTask,    // the kernel's "python3[1220]: segfault at 8 ip ..." -> pid, process name, SIGSEGV
  kCalledProcess, // "... '--local_rank=7' ...]' died with <Signals.SIGSEGV: 11>." / "returned non-zero exit
                  // status 1." -> signal or code, local rank
  kMpiAbort,      // "MPI_ABORT was invoked on rank 52 in communicator MPI_COMM_WORLD" -> the rank (other_rank)
  kFailedRanks,   // "[Rank 0]: Ranks 4, 5, 6, 7 failed to pass monitoredBarrier in 2000000 ms" -> the ranks named
                  // before "failed" (word "monitored_barrier")
  kMember,        // "GLOBAL_RANK: 3, MEMBER: 4/8" -> rank 3 (the writer) of world 8; "Starting with 8 processes"
                  // / "with 8 nodes" -> world 8 (rank from "Rank N:" when the line has it)
  kCountBefore,   // only when the number just before the entry's first needle is > 0 (Ray's kill summary
                  // "1 Workers (tasks / actors) killed due to memory pressure (OOM), ...": 0 kills is no kill)
  kStopSignal,    // a signal a launcher received and passes on, by name (SIGTERM, Signals.SIGHUP, "Terminated")
                  // or number, after the entry's first needle's "Received " / "SIGNAL " / "signal "; word =
                  // the launcher (its name before ": " or the entry's)
  kProcessExit,   // printed only while the process exits normally (a destructor at interpreter exit, after the
                  // program's work): word "process_exit", the writer's normal end when nothing failed on it
};

struct LinePattern {
  std::vector<std::string_view> all;  // each must occur (case-sensitive)
  std::vector<std::string_view> any;  // when not empty, one of them must occur
  LogKind kind;
  std::string_view category;  // what the line proves, or empty for the kind's default
  std::string_view cause;
  PatternFields fields;
  std::string_view example;  // a real line it was written for (corpus case in the comment)
  bool fallback = false;     // tried only when no other check gave the line a meaning (generic shapes)
};

const std::vector<LinePattern>& line_patterns();

// Matches `m` (a message without its prefixes) against the table; on a hit sets o.kind,
// o.category, o.cause and the pattern's fields and returns true.
// fallback: the generic entries, tried after the hand-written checks found nothing.
bool match_line_pattern(std::string_view m, LogLine& o, bool fallback = false);

}  // namespace hanglab
