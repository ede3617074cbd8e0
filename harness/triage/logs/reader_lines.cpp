// What one line says beyond its kind, for the file scanner (reader.cpp; declared in file_scan.hpp): an
// epoch it states, a platform's quoted copy of a program's output, a launcher's line, a pid of another
// process.
#include <algorithm>
#include <string>
#include <string_view>

#include "triage/logs/catalogue.hpp"
#include "triage/logs/file_scan.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/logs/scan.hpp"

namespace hanglab {

// A progress bar that never ended its line (tqdm ends it only when the bar closes) runs into the
// next writer's line: "  2%|##  | 13/620 [01:17<58:26,  5.78s/it][rank1]:[E1123 ...] Watchdog caught
// ...". Where a tqdm bar's closing "[elapsed<remaining, rate]" is followed by more text, that text is
// a line of its own (the same line number in the file).
size_t after_progress_bar(std::string_view text) {
  const size_t cr = text.rfind('\r');
  const size_t from = cr == std::string_view::npos ? 0 : cr + 1;
  const size_t bar = text.find("%|", from);
  if (bar == std::string_view::npos) return std::string_view::npos;
  const size_t open = text.find(" [", bar + 2);
  if (open == std::string_view::npos || open - bar > 400) return std::string_view::npos;
  const size_t close = text.find(']', open + 2);
  if (close == std::string_view::npos || close - open > 200) return std::string_view::npos;
  const std::string_view inside = text.substr(open + 2, close - open - 2);
  // tqdm's "{elapsed}<{remaining}, {rate}{unit}/s" (or "s/{unit}"): the unit is the program's ("it" by default;
  // datasets' map counts "examples", a download "B").
  const size_t comma = inside.find(", ");
  if (inside.find('<') == std::string_view::npos || comma == std::string_view::npos ||
      (inside.find("/s", comma) == std::string_view::npos && inside.find("s/", comma) == std::string_view::npos))
    return std::string_view::npos;
  const size_t rest = text.find_first_not_of(" \t", close + 1);
  return rest == std::string_view::npos ? std::string_view::npos : close + 1;
}

bool wrapped_message(std::string_view line, std::string_view next) {
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0;
  while (i < next.size() && digit(next[i])) ++i;
  if (i > 0 && !(i + 1 < next.size() && next[i] == ' ' && lower(next[i + 1]))) return false;
  if (i == 0 && (next.empty() || !lower(next[0]))) return false;
  if (line.empty() || line.size() + next.size() > 8192) return false;
  const Catalogue& cat = builtin_catalogue();
  std::string joined;
  joined.reserve(line.size() + next.size());
  joined.append(line).append(next);
  const auto both = cat.match(joined);
  if (!both) return false;
  size_t alone = 0;
  for (std::string_view part : {line, next})
    if (const auto hit = cat.match(part)) alone = std::max(alone, hit->entry->literal_chars);
  return both->entry->literal_chars > alone;
}

// std::terminate's "  what():  " line quoting ProcessGroupNCCL's C10D_NCCL_CHECK text, "NCCL error in:
// <file>:<line>, <reason>, NCCL version <v>" (1.7: "NCCL error: <reason>, NCCL version <v>"): a failed NCCL
// call took the process down.
bool what_nccl_error(std::string_view m) {
  while (!m.empty() && (m.front() == ' ' || m.front() == '\t')) m.remove_prefix(1);
  if (m.rfind("what():", 0) != 0) return false;
  m.remove_prefix(7);
  while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
  return m.rfind("NCCL error", 0) == 0;
}

// What a line says, copied into its event: the one copy both the file scanner and line_meaning() (meaning.cpp)
// make. Where and when (rank, file, line, clock) is the scanner's own.
void event_fields(const LogLine& l, LogEvent& e) {
  e.kind = l.kind;
  e.seq = l.seq;
  e.numel_in = l.numel_in;
  e.numel_out = l.numel_out;
  e.timeout_ms = l.timeout_ms;
  e.ran_ms = l.ran_ms;
  e.last_enqueued = l.last_enqueued;
  e.pending = l.pending;
  e.last_completed = l.last_completed;
  e.pid = l.pid;
  e.nccl_dev = l.nccl_dev;
  e.pg_rank = l.pg_rank;
  e.local_rank = l.local_rank;
  e.other_rank = l.other_rank;
  e.world = l.world;
  e.joined = l.joined;
  if (l.joined >= 0) e.barrier_key = logparse::store_barrier_key(l.msg);
  e.step = l.step;
  e.total_steps = l.total_steps;
  e.code = l.code;
  e.signal = l.signal;
  e.pg_default = l.pg_default;
  e.op = std::string(l.op);
  e.pg = std::string(l.pg);
  e.host = std::string(l.host);
  e.word = std::string(l.word.substr(0, 200));
  e.where = std::string(l.where.substr(0, 200));
  std::string_view msg = l.msg;
  while (!msg.empty() && (msg.back() == ' ' || msg.back() == '\t')) msg.remove_suffix(1);
  e.text = std::string(msg.substr(0, kMaxEventText));
  e.category = std::string(l.category);
  e.cause = std::string(l.cause);
  e.catalogue = l.catalogue;
  e.role = l.role;
  e.phase = l.phase;
  e.peer_closed = l.peer_closed;
  e.torch_rendezvous = l.torch_rendezvous;
  e.report_entry = l.report_entry;
  e.ranks = l.ranks;
}

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

// torch's launchers run an elastic agent per node (torch.distributed.run, behind the torchrun console
// script; torch.distributed.launch since 1.9), which starts the node's workers itself: a scheduler's
// task (srun's "task N") is then an agent, and the ranks are the agent's workers. The agent's own lines
// (torch 2.15, git d0f2af8b): torch/distributed/elastic/agent/server/api.py:706 "[%s] Rendezvous'ing
// worker group", :714 "Starting worker group", :732 "Stopping worker group", :752 "Received %s death
// signal, shutting down workers", :942 "[%s] Worker group %s. ..."; elastic/multiprocessing/api.py:388
// "Setting worker%s reply file to: %s", :1003 "failed (exitcode: %s) local_rank: %s (pid: %s) of
// binary: %s", :1029 "Sending process %s closing signal %s"; its modules in a traceback or a logger name,
// and the launchers' own (bin/torchrun, torch/distributed/run.py, launch.py, launcher/api.py, whose
// ChildFailedError carries the workers' failure summary). A worker's own traceback names none of these
// (its rendezvous is torch/distributed/rendezvous.py; the @record wrapper is elastic/multiprocessing/errors).
bool names_torch_launcher(std::string_view m) {
  constexpr auto npos = std::string_view::npos;
  if (m.find("torch") != npos) {
    for (std::string_view k :
         {std::string_view("torchrun"), std::string_view("torchelastic"), std::string_view("torch.distributed.run"),
          std::string_view("torch/distributed/run.py"), std::string_view("torch.distributed.launch"),
          std::string_view("torch/distributed/launch"), std::string_view("elastic.agent"),
          std::string_view("elastic/agent/"), std::string_view("elastic.rendezvous"),
          std::string_view("elastic/rendezvous/"), std::string_view("elastic.multiprocessing.api"),
          std::string_view("elastic/multiprocessing/api.py")})
      if (m.find(k) != npos) return true;
  }
  if (m.find("orker group") != npos &&
      (m.find("Rendezvous'ing worker group") != npos || m.find("Starting worker group") != npos ||
       m.find("Stopping worker group") != npos || m.find("] Worker group ") != npos))
    return true;
  return m.find("death signal, shutting down workers") != npos || m.find("failed (exitcode: ") != npos ||
         (m.find("Sending process ") != npos && m.find(" closing signal ") != npos) ||
         m.find(" reply file to: ") != npos || m.find("ChildFailedError") != npos;
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
