// What one line says beyond its kind, for the file scanner (reader.cpp; declared in file_scan.hpp): an
// epoch it states, a platform's quoted copy of a program's output, a launcher's line, a pid of another
// process.
#include <string_view>

#include "triage/logs/file_scan.hpp"
#include "triage/logs/patterns.hpp"

namespace hanglab {

// "epoch=1", "epoch 3", "Epoch=2": an epoch number stated in the line.
bool names_epoch(std::string_view m) {
  for (std::string_view key : {std::string_view("epoch="), std::string_view("Epoch="), std::string_view("epoch "),
                               std::string_view("Epoch ")}) {
    for (size_t k = m.find(key); k != std::string_view::npos; k = m.find(key, k + 1)) {
      const size_t p = k + key.size();
      if (p < m.size() && m[p] >= '0' && m[p] <= '9') return true;
    }
  }
  return false;
}

// A platform's quoted copy of a process's last output, one line with its newlines escaped
// (Kubernetes' termination message: 'reason: OOMKilled message: "...\n2021-04-30 07:10:43 INFO
// Start training ...\n..." code: 137'): its segments are the program's own lines. True when
// one of them is a step or progress line: training had begun before the line's event.
bool quoted_progress(std::string_view m, const LogLineContext& ctx) {
  constexpr std::string_view kEsc = "\\n";
  size_t first = m.find(kEsc);
  if (first == std::string_view::npos || m.find(kEsc, first + 2) == std::string_view::npos) return false;
  if (m.size() > (1u << 16)) m = m.substr(0, 1u << 16);
  size_t from = 0;
  for (int n = 0; n < 256 && from <= m.size(); ++n) {
    const size_t k = m.find(kEsc, from);
    const std::string_view seg = m.substr(from, k == std::string_view::npos ? std::string_view::npos : k - from);
    if (!seg.empty()) {
      LogLine l;
      parse_log_line(seg, ctx, l);
      if (l.kind == LogKind::kStep || l.kind == LogKind::kProgress) return true;
      // The tail may join two writers' lines in one segment (the program's banner without its
      // newline, then the runtime's "Killed"): a progress shape in it still counts.
      LogLine p;
      if (match_line_pattern(l.msg, p, /*fallback=*/true) && p.kind == LogKind::kProgress) return true;
    }
    if (k == std::string_view::npos) break;
    from = k + kEsc.size();
  }
  return false;
}

bool launcher_kind(LogKind k) {
  switch (k) {
    case LogKind::kLauncherSignal:
    case LogKind::kStopSignal:
    case LogKind::kLauncherExit:
    case LogKind::kSignalReceived:
    case LogKind::kChildFailed:
    case LogKind::kSummaryHeader:
    case LogKind::kSummaryEntry:
    case LogKind::kSummaryField:
    case LogKind::kSummaryEnd:
    case LogKind::kMpiExit:
    case LogKind::kMpiProcessName:
    case LogKind::kSrunTask:
      return true;
    default:
      return false;
  }
}

// Kinds whose pid is another process (the killed one), not the writer of the line.
bool pid_is_other(LogKind k) {
  return launcher_kind(k) || k == LogKind::kOomKill || k == LogKind::kDataLoaderKilled;
}

}  // namespace hanglab
