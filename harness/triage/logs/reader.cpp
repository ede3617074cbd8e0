// Reading plain logs into a LogCorpus (see reader.hpp; the entry points triage_logs() and
// triage_paths() are in triage/triage.cpp). The per-line work is parse_log_line(); what is done
// here is the state that spans lines: the clock of clock-less lines (inherited from the
// last stamped line of the same file, marked inexact), the rank of continuation lines,
// torchrun's failure summary and Open MPI's exit block, and the bounded per-rank step
// history.
#include "triage/logs/reader.hpp"

#include "triage/logs/catalogue.hpp"
#include "triage/logs/progress.hpp"
#include "triage/logs/frames.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/records/run_dir.hpp"  // is_run_dir: --logs-only on a run directory

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace hanglab {

namespace fs = std::filesystem;

namespace {

constexpr size_t kChunk = 1 << 20;         // read(2) size
constexpr size_t kMaxLine = 64 * 1024;      // longer lines are cut (progress bars, dumps)
constexpr size_t kMaxEventText = 320;
constexpr size_t kMaxWorldHintsPerFile = 4;
constexpr uint32_t kMaxUnattributedPerKind = 4096;

bool ends_with(const std::string& s, const char* suf) {
  const size_t n = std::strlen(suf);
  return s.size() >= n && s.compare(s.size() - n, n, suf) == 0;
}

// Files that are not logs: hanglab's own records, configs, binaries, sources.
bool skip_file_name(const std::string& name) {
  if (name.empty() || name[0] == '.') return true;
  if (name == "expected.json") return true;
  static const char* kSkip[] = {".json", ".jsonl", ".toml", ".html", ".xml",  ".sqlite", ".pt", ".png", ".jpg",
                                ".gz",   ".zip",   ".tar",  ".so",   ".py",   ".sh",     ".md", ".svg", ".pdf"};
  for (const char* ext : kSkip) {
    if (ends_with(name, ext)) return true;
  }
  return false;
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

bool looks_binary(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n < 0) return true;
  return std::memchr(buf, '\0', static_cast<size_t>(n)) != nullptr;
}

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
  std::vector<WorldHint> world;
  uint64_t unattributed_steps = 0;
  uint64_t progress_lines = 0;
  LogKind unattributed_phase = LogKind::kNone;
  uint32_t unattributed_phase_line = 0;
  std::string unattributed_phase_text;
  bool unattributed_phase_stepped = false;  // a step line (any writer) followed it in this file
  BarSeen unattributed_bar;
};

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

class FileScanner {
 public:
  FileScanner(const LogInput& in, uint32_t index, int file_rank, const LogLineContext& ctx)
      : in_(in), index_(index), ctx_(ctx) {
    out_.info.name = in.name;
    out_.info.path = in.path;
    out_.info.file_rank = file_rank;
  }

  FileScan run() {
    const int fd = ::open(in_.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open: {}", in_.path.string(), std::strerror(errno)));
    // One read buffer per thread, reused across files (16k files x 1 MiB of memset otherwise).
    thread_local std::string buf;
    if (buf.size() != kChunk) buf.assign(kChunk, '\0');
    std::string carry;
    bool skipping = false;  // inside an over-long line
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::close(fd);
        throw std::runtime_error(fmt::format("{}: read: {}", in_.path.string(), std::strerror(err)));
      }
      if (n == 0) break;
      out_.info.bytes += static_cast<uint64_t>(n);
      const char* p = buf.data();
      const char* end = p + n;
      while (p < end) {
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
        if (!nl) {
          if (!skipping) {
            const size_t room = kMaxLine > carry.size() ? kMaxLine - carry.size() : 0;
            carry.append(p, std::min(room, static_cast<size_t>(end - p)));
            if (carry.size() >= kMaxLine) skipping = true;
          }
          break;
        }
        if (carry.empty() && !skipping) {
          line(std::string_view(p, static_cast<size_t>(nl - p)), false);
        } else {
          if (!skipping) carry.append(p, std::min(kMaxLine - std::min(kMaxLine, carry.size()), static_cast<size_t>(nl - p)));
          line(carry, false);
          carry.clear();
          skipping = false;
        }
        p = nl + 1;
      }
    }
    ::close(fd);
    if (!carry.empty()) {
      out_.info.ends_mid_line = true;
      line(carry, true);
    }
    flush_summary();
    for (auto& [rank, acc] : out_.ranks) finish_ring(acc);
    return std::move(out_);
  }

 private:
  const LogInput& in_;
  uint32_t index_;
  LogLineContext ctx_;
  FileScan out_;
  LogLine l_;
  uint32_t line_no_ = 0;
  std::unordered_map<int, std::pair<double, double>> clocks_;  // writer (rank, -1) -> last clock, resolution
  int clock_rank_ = -2;  // the last stamped line's writer, kept out of the map (the common case)
  bool clock_valid_ = false;
  double clock_t_ = 0, clock_res_ = 0;
  int prev_rank_ = -1;
  RankSource prev_src_ = RankSource::kNone;
  RankAcc* cache_ = nullptr;
  int cache_rank_ = -2;
  std::unordered_map<uint64_t, uint32_t> kind_counts_;
  // Exception chains, by writer: its last exception event, and the one a "During handling of
  // the above exception" line marked as handled once the next failure is seen.
  std::unordered_map<int, size_t> last_exception_, chained_;
  std::unordered_set<long long> pids_seen_;
  // torchrun summary
  bool sum_active_ = false;
  bool sum_root_ = false;
  bool sum_in_entry_ = false;
  bool sum_seen_entry_ = false;
  LaunchFailure sum_cur_;
  // A SIGBUS whose backtrace (the next lines) runs through libnccl: NCCL's /dev/shm segment
  // could not be backed (a full /dev/shm), not a bug of the program.
  size_t bus_ev_ = SIZE_MAX;
  uint32_t bus_line_ = 0;
  // Open MPI "Process name: [[j,1],r]" ... "Exit code: c"
  int mpi_rank_ = -1;
  uint32_t mpi_line_ = 0;

  FrameMarkers frame_markers_;  // an innermost-first dump's outer frames say nothing more

  // A tqdm bar redraw: the writer's bar counts further, or a new bar (another description) begins.
  // A line that holds several redraws ('\r') shows the bar advancing within it.
  void note_bar(std::string_view text, BarSeen& bar, bool has_t, double t) {
    TqdmBar b;
    if (!parse_tqdm_bar(l_.msg, b)) return;
    TqdmBar first;
    const size_t cr = text.find('\r');
    const bool within = cr != std::string_view::npos && parse_tqdm_bar(text.substr(0, cr), first) && first.n >= 0 &&
                        first.n < b.n;
    const std::string_view desc = b.desc.substr(0, 120);
    if (!bar.seen() || bar.desc != desc) {
      bar = BarSeen{};
      bar.desc = std::string(desc);
      bar.phase = std::string(bar_phase(b.desc, b.unit));
      bar.first_n = within ? first.n : b.n;
    } else if (b.n > bar.last_n) {
      ++bar.advances;
    }
    if (within) ++bar.advances;
    bar.last_n = b.n;
    bar.total = b.total;
    bar.elapsed_s = b.elapsed_s;
    bar.file = index_;
    bar.line = line_no_;
    bar.has_t = has_t;
    bar.t = t;
  }

  RankAcc& acc(int rank) {
    if (rank == cache_rank_) return *cache_;
    auto [it, fresh] = out_.ranks.try_emplace(rank);
    if (fresh) {
      it->second.log.rank = rank;
      it->second.ring.reserve(kRecentSteps);
    }
    cache_rank_ = rank;
    cache_ = &it->second;
    return it->second;
  }

  static void finish_ring(RankAcc& a) {
    // Unroll the circular buffer, oldest first.
    auto& r = a.ring;
    if (r.size() == kRecentSteps && a.ring_pos != 0) std::rotate(r.begin(), r.begin() + a.ring_pos, r.end());
    a.log.recent = std::move(r);
  }

  void line(std::string_view text, bool partial) {
    ++line_no_;
    ++out_.info.lines;
    parse_log_line(text, ctx_, l_);
    if (!frame_markers_.keep(l_.msg, l_.kind)) l_.kind = LogKind::kNone;
    if (bus_ev_ != SIZE_MAX) {
      if (line_no_ - bus_line_ > 24) {
        bus_ev_ = SIZE_MAX;
      } else if (text.find("nccl") != std::string_view::npos && bus_ev_ < out_.events.size()) {
        out_.events[bus_ev_].category = "resource_limit";
        out_.events[bus_ev_].cause = "nccl_shm";
        bus_ev_ = SIZE_MAX;
      }
    }
    // Attribution.
    int rank = l_.rank;
    RankSource src = l_.rank_src;
    const bool launcher = launcher_kind(l_.kind);
    if (rank < 0 && !launcher) {
      const bool continuation = !text.empty() && (text[0] == ' ' || text[0] == '\t' ||
                                                  text.rfind("frame #", 0) == 0 ||
                                                  text.rfind("Exception raised from", 0) == 0);
      if (continuation && prev_rank_ >= 0) {
        rank = prev_rank_;
        src = prev_src_;
      } else if (out_.info.file_rank >= 0) {
        rank = out_.info.file_rank;
        src = RankSource::kFile;
      }
    } else if ((src == RankSource::kMessage || src == RankSource::kLocal) && out_.info.file_rank >= 0 &&
               !l_.pg_default) {
      // In a per-rank file an in-message "[Rank N]" may be PG-local: the file decides.
      rank = out_.info.file_rank;
      src = RankSource::kFile;
    }
    if (l_.rank >= 0 || (rank >= 0 && src == RankSource::kFile)) {
      prev_rank_ = rank;
      prev_src_ = src;
    }
    // Clock. A line without one gets the last clock of the same writer in this file: in a
    // combined log the previous line may be another process's, whose time says nothing.
    const bool exact = l_.has_t;
    bool have_t = false;
    double cur_t = 0, cur_res = 0;
    if (exact) {
      have_t = true;
      cur_t = l_.t;
      cur_res = l_.t_res;
      // The previous writer's clock goes to the map only when the writer changes: a
      // per-rank file never touches it.
      if (rank != clock_rank_ && clock_valid_) clocks_[clock_rank_] = {clock_t_, clock_res_};
      clock_rank_ = rank;
      clock_valid_ = true;
      clock_t_ = cur_t;
      clock_res_ = cur_res;
      out_.info.any_clock = true;
      if (l_.no_year) out_.info.no_year_clock = true;
    } else if (rank == clock_rank_ && clock_valid_) {
      have_t = true;
      cur_t = clock_t_;
      cur_res = clock_res_;
    } else if (!clocks_.empty()) {
      auto it = clocks_.find(rank);
      if (it != clocks_.end()) {
        have_t = true;
        cur_t = it->second.first;
        cur_res = it->second.second;
      }
    }
    if (l_.pid >= 0 && rank >= 0 && !pid_is_other(l_.kind) && src != RankSource::kNone &&
        pids_seen_.insert(l_.pid).second) {
      out_.pid_rank.emplace_back(l_.pid, rank);
    }

    if (src == RankSource::kLocal) ++out_.info.local_rank_lines;
    if (l_.msg.find("%|") != std::string_view::npos) {
      BarSeen& bar = rank >= 0 ? acc(rank).log.bar : out_.unattributed_bar;
      note_bar(text, bar, have_t, cur_t);
      // A training loop's bar (HF Trainer's, an epoch's) is progress of training, as a step line is.
      if (l_.kind == LogKind::kNone && bar.seen() && bar.line == line_no_ && bar.phase == "training")
        ++out_.progress_lines;
    }
    if (l_.kind == LogKind::kStep && out_.unattributed_phase != LogKind::kNone) out_.unattributed_phase_stepped = true;
    if (rank >= 0) {
      RankAcc& a = acc(rank);
      RankLog& g = a.log;
      if (g.lines == 0) {
        g.first_file = index_;
        g.first_line = line_no_;
        g.has_first_t = have_t;
        g.first_t = cur_t;
      }
      ++g.lines;
      if (src == RankSource::kHostTag) ++g.host_tag_lines;
      g.last_file = index_;
      g.last_line = line_no_;
      g.has_last_t = have_t;
      g.last_t = cur_t;
      if (!l_.host.empty() && g.host.empty() && !pid_is_other(l_.kind)) g.host = std::string(l_.host);
      if (l_.kind == LogKind::kStep) {
        ++g.n_steps;
        g.last_step = l_.step;
        g.max_step = std::max(g.max_step, l_.step);
        if (l_.total_steps > 0) g.total_steps = l_.total_steps;
        StepRec s{l_.step, cur_t, have_t, l_.dur_ms, index_, line_no_};
        if (a.ring.size() < kRecentSteps) {
          a.ring.push_back(s);
        } else {
          a.ring[a.ring_pos] = s;
          a.ring_pos = (a.ring_pos + 1) % kRecentSteps;
        }
        return;
      }
      switch (l_.kind) {
        case LogKind::kCheckpointBegin:
        case LogKind::kCheckpointEnd:
        case LogKind::kEvalBegin:
        case LogKind::kEvalEnd:
        case LogKind::kDataWait:
        case LogKind::kShutdown:
        case LogKind::kInitBegin:
        case LogKind::kTrainBegin:
          g.phase = l_.kind;
          g.phase_file = index_;
          g.phase_line = line_no_;
          g.phase_t = cur_t;
          g.phase_has_t = have_t;
          g.phase_text = std::string(l_.msg.substr(0, kMaxEventText));
          break;
        case LogKind::kCollStart:
          g.started = {l_.seq,  std::string(l_.op.substr(0, 64)), l_.numel_in, index_, line_no_, have_t, cur_t,
                       g.started.mixed || l_.seq < g.started.seq};
          break;
        default:
          break;
      }
    }
    // One line per collective on every rank: only each rank's last is kept (above), never an event.
    if (l_.kind == LogKind::kCollStart) return;
    if (l_.kind == LogKind::kStep && rank < 0) ++out_.unattributed_steps;
    // A line that names its epoch ("check_rank and exit epoch=1 batch=0") was written inside the
    // training loop, whatever else it says: evidence of training, like a progress line.
    if (l_.kind != LogKind::kNone && l_.kind != LogKind::kProgress && l_.kind != LogKind::kStep &&
        (names_epoch(l_.msg) || quoted_progress(l_.msg, ctx_)))
      ++out_.progress_lines;
    if (l_.kind == LogKind::kProgress) {  // evidence of training only; never an event
      ++out_.progress_lines;
      return;
    }
    if (rank < 0 && (l_.kind == LogKind::kCheckpointBegin || l_.kind == LogKind::kCheckpointEnd ||
                     l_.kind == LogKind::kEvalBegin || l_.kind == LogKind::kEvalEnd ||
                     l_.kind == LogKind::kDataWait || l_.kind == LogKind::kShutdown ||
                     l_.kind == LogKind::kInitBegin || l_.kind == LogKind::kTrainBegin)) {
      out_.unattributed_phase = l_.kind;
      out_.unattributed_phase_line = line_no_;
      out_.unattributed_phase_text = std::string(l_.msg.substr(0, kMaxEventText));
      out_.unattributed_phase_stepped = false;
    }
    if (l_.kind == LogKind::kNone &&
        l_.msg.find("During handling of the above exception, another exception occurred") != std::string_view::npos) {
      // Python's implicit chaining: this writer's last exception was handled; the next one is raised.
      if (auto it = last_exception_.find(rank); it != last_exception_.end()) chained_[rank] = it->second;
      return;
    }
    if (l_.kind == LogKind::kNone || l_.kind == LogKind::kStep) return;

    if (l_.world > 0 && (l_.kind == LogKind::kWorldSize || l_.kind == LogKind::kInitDone ||
                         l_.kind == LogKind::kStoreTimeout) &&
        out_.world.size() < kMaxWorldHintsPerFile) {
      out_.world.push_back({l_.world, rank, index_, line_no_, std::string(l_.msg.substr(0, kMaxEventText))});
    }
    if (summary(rank)) return;
    if (l_.kind == LogKind::kWorldSize) return;
    if (l_.kind == LogKind::kMpiProcessName) {
      mpi_rank_ = l_.other_rank;
      mpi_line_ = line_no_;
      return;
    }
    LogKind kind = l_.kind;
    int other = l_.other_rank;
    if (kind == LogKind::kExitStatus && mpi_rank_ >= 0 && line_no_ - mpi_line_ <= 6) {
      kind = LogKind::kMpiExit;  // "Exit code: 1" of the process named just above
      other = mpi_rank_;
      mpi_rank_ = -1;
    }
    // Launcher notices name other processes (one per rank at most): never capped.
    // Unattributed lines get a larger allowance than a rank's own floods.
    if (!launcher && kind != LogKind::kMpiExit) {
      const uint64_t key =
          (static_cast<uint64_t>(static_cast<uint32_t>(rank + 1)) << 8) | static_cast<uint8_t>(kind);
      if (++kind_counts_[key] > (rank < 0 ? kMaxUnattributedPerKind : kMaxEventsPerRankKind)) return;
    }

    LogEvent e;
    e.kind = kind;
    e.rank = launcher ? -1 : rank;
    e.rank_src = launcher ? RankSource::kNone : src;
    e.file = index_;
    e.line = line_no_;
    e.has_t = have_t;
    e.t_exact = exact;
    e.t = cur_t;
    e.t_res = exact ? l_.t_res : cur_res;
    e.partial = partial;
    e.seq = l_.seq;
    e.numel_in = l_.numel_in;
    e.numel_out = l_.numel_out;
    e.timeout_ms = l_.timeout_ms;
    e.ran_ms = l_.ran_ms;
    e.last_enqueued = l_.last_enqueued;
    e.pending = l_.pending;
    e.last_completed = l_.last_completed;
    e.pid = l_.pid;
    e.nccl_dev = l_.nccl_dev;
    e.pg_rank = l_.pg_rank;
    e.local_rank = l_.local_rank;
    e.other_rank = other;
    e.world = l_.world;
    e.joined = l_.joined;
    e.step = l_.step;
    e.total_steps = l_.total_steps;
    e.code = l_.code;
    e.signal = l_.signal;
    e.pg_default = l_.pg_default;
    e.op = std::string(l_.op);
    e.pg = std::string(l_.pg);
    e.host = std::string(l_.host);
    e.word = std::string(l_.word.substr(0, 200));
    e.where = std::string(l_.where.substr(0, 200));
    std::string_view msg = l_.msg;
    while (!msg.empty() && (msg.back() == ' ' || msg.back() == '\t')) msg.remove_suffix(1);
    e.text = std::string(msg.substr(0, kMaxEventText));
    e.category = std::string(l_.category);
    e.cause = std::string(l_.cause);
    e.role = std::string(l_.role);
    e.phase = std::string(l_.phase);
    if (l_.catalogue) e.origin = l_.catalogue->origin();
    e.peer_closed = l_.peer_closed;
    e.torch_rendezvous = l_.torch_rendezvous;
    e.ranks = l_.ranks;
    if (e.kind == LogKind::kCrash && e.signal == 7) {
      bus_ev_ = out_.events.size();
      bus_line_ = line_no_;
    }
    if (!launcher) {
      if (auto it = chained_.find(e.rank); it != chained_.end()) {
        if (it->second < out_.events.size()) out_.events[it->second].handled = true;
        chained_.erase(it);
      }
      if (e.kind == LogKind::kException) last_exception_[e.rank] = out_.events.size();
    }
    out_.events.push_back(std::move(e));
  }

  // torchrun's "ChildFailedError" block; true when the line belonged to it.
  bool summary(int /*rank*/) {
    switch (l_.kind) {
      case LogKind::kChildFailed:
        sum_active_ = true;
        return false;  // also kept as an event
      case LogKind::kSummaryHeader:
        flush_summary();
        sum_active_ = true;
        sum_root_ = l_.word == "root";
        return true;
      case LogKind::kSummaryEntry:
        // A bare "[i]:" line is an entry even when the paste starts below the block's header.
        flush_summary();
        sum_active_ = true;
        sum_in_entry_ = true;
        sum_seen_entry_ = true;
        sum_cur_ = LaunchFailure{};
        sum_cur_.root_claim = sum_root_;
        sum_cur_.file = index_;
        sum_cur_.line = line_no_;
        return true;
      case LogKind::kSummaryField: {
        if (!sum_in_entry_ && l_.word == "rank") {
          // A paste that starts inside an entry (its "[i]:" header cut off): the rank field opens it.
          sum_active_ = sum_in_entry_ = sum_seen_entry_ = true;
          sum_cur_ = LaunchFailure{};
          sum_cur_.root_claim = sum_root_;
          sum_cur_.file = index_;
          sum_cur_.line = line_no_;
        }
        if (!sum_active_ || !sum_in_entry_) return false;
        const std::string_view v = l_.where;
        long long x = 0;
        if (l_.word == "time") {
          double t = 0, res = 0;
          if (parse_iso_time(v, &t, &res)) {
            sum_cur_.has_t = true;
            sum_cur_.t = t;
          }
        } else if (l_.word == "host") {
          sum_cur_.host = std::string(v);
        } else if (l_.word == "rank") {
          if (std::sscanf(std::string(v).c_str(), "%lld", &x) == 1) sum_cur_.rank = bounded_rank(x);
          const size_t k = v.find("local_rank:");
          if (k != std::string_view::npos && std::sscanf(std::string(v.substr(k + 11)).c_str(), "%lld", &x) == 1)
            sum_cur_.local_rank = bounded_rank(x);
        } else if (l_.word == "exitcode") {
          if (std::sscanf(std::string(v).c_str(), "%lld", &x) == 1) {
            if (x < 0) {
              sum_cur_.signal = static_cast<int>(-x);
            } else {
              sum_cur_.code = static_cast<int>(x);
            }
          }
          const size_t k = v.find("pid:");
          if (k != std::string_view::npos && std::sscanf(std::string(v.substr(k + 4)).c_str(), "%lld", &x) == 1)
            sum_cur_.pid = x;
          sum_cur_.line = line_no_;
        } else if (l_.word == "error_file") {
          sum_cur_.error_file = std::string(v);
        } else if (l_.word == "traceback") {
          sum_cur_.traceback = std::string(v.substr(0, kMaxEventText));
        }
        return true;
      }
      case LogKind::kSignalReceived:
        if (sum_active_ && sum_in_entry_) {  // "traceback : Signal 9 (SIGKILL) received by PID 1234"
          sum_cur_.traceback = std::string(l_.msg.substr(0, kMaxEventText));
          const size_t k = sum_cur_.traceback.find(": ");
          if (k != std::string::npos && sum_cur_.traceback.rfind("traceback", 0) == 0)
            sum_cur_.traceback = sum_cur_.traceback.substr(k + 2);
          return true;
        }
        return false;
      case LogKind::kSummaryEnd:
        flush_summary();
        // The "=====" after the last entry closes the block; the one right after
        // "ChildFailedError:" opens it.
        if (sum_seen_entry_ && l_.msg.find('=') != std::string_view::npos) {
          sum_active_ = false;
          sum_seen_entry_ = false;
        }
        return true;
      default:
        return false;
    }
  }

  void flush_summary() {
    if (sum_in_entry_ && sum_cur_.rank >= 0) out_.launch.push_back(sum_cur_);
    sum_in_entry_ = false;
  }
};

int find_year(const std::vector<LogInput>& inputs) {
  // The first full date in the first few files dates the year-less stamps.
  size_t n = 0;
  for (const auto& in : inputs) {
    if (++n > 64) break;
    const int fd = ::open(in.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[8192];
    const ssize_t got = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (got <= 0) continue;
    const std::string_view s(buf, static_cast<size_t>(got));
    for (size_t i = 0; i + 19 <= s.size(); ++i) {
      if ((s[i] != '1' && s[i] != '2') || (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')) continue;
      double t = 0, res = 0;
      if (parse_iso_time(s.substr(i), &t, &res)) {
        return (s[i] - '0') * 1000 + (s[i + 1] - '0') * 100 + (s[i + 2] - '0') * 10 + (s[i + 3] - '0');
      }
    }
  }
  return 0;
}

}  // namespace

std::string log_ref(const LogCorpus& c, uint32_t file, uint32_t line) {
  if (file >= c.files.size()) return fmt::format("?:{}", line);
  return fmt::format("{}:{}", c.files[file].name, line);
}

std::vector<LogInput> list_log_inputs(const std::vector<fs::path>& paths, bool logs_only) {
  std::vector<LogInput> out;
  const bool single = paths.size() == 1;
  for (const auto& p : paths) {
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) throw std::runtime_error(fmt::format("{}: no such file or directory", p.string()));
    if (fs::is_regular_file(st)) {
      out.push_back({p, p.string()});
      continue;
    }
    if (!fs::is_directory(st)) throw std::runtime_error(fmt::format("{}: not a file or directory", p.string()));
    std::vector<LogInput> found;
    if (logs_only && is_run_dir(p)) {
      // The ranks' stdout/stderr and the launcher's console (mpirun's notices go there).
      // supervisor.log: the closing signals hanglab sent when it tore the job down.
      for (const char* f : {"launcher.stdout.log", "launcher.stderr.log", "supervisor.log"}) {
        if (fs::is_regular_file(p / f, ec)) found.push_back({p / f, f});
      }
      for (fs::directory_iterator it(p / "ranks", ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_directory()) continue;
        for (const char* f : {"stdout.log", "stderr.log"}) {
          const fs::path file = it->path() / f;
          if (fs::is_regular_file(file, ec)) found.push_back({file, fs::relative(file, p).generic_string()});
        }
      }
    } else {
      fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (it->is_directory()) {
          if (!name.empty() && name[0] == '.') it.disable_recursion_pending();
          continue;
        }
        if (!it->is_regular_file() || skip_file_name(name)) continue;
        if (looks_binary(it->path())) continue;
        found.push_back({it->path(), fs::relative(it->path(), p).generic_string()});
      }
    }
    if (ec) throw std::runtime_error(fmt::format("{}: cannot list: {}", p.string(), ec.message()));
    std::sort(found.begin(), found.end(), [](const LogInput& a, const LogInput& b) { return a.name < b.name; });
    if (!single) {
      for (auto& f : found) f.name = (p.filename().empty() ? p.parent_path().filename() : p.filename()).string() + "/" + f.name;
    }
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// A writer's bar over several files (file order): the later one; the same bar's advances add up.
static void merge_bar(BarSeen& into, const BarSeen& x) {
  if (!x.seen()) return;
  const bool later = !into.seen() || (x.has_t && into.has_t && x.t != into.t ? x.t > into.t
                                                                             : std::tie(x.file, x.line) > std::tie(into.file, into.line));
  if (!later) return;
  if (into.seen() && into.desc == x.desc) {
    BarSeen m = x;
    m.advances += into.advances + (x.first_n > into.last_n ? 1 : 0);
    m.first_n = std::min(into.first_n, x.first_n);
    into = m;
  } else {
    into = x;
  }
}

LogCorpus load_log_corpus(const std::vector<LogInput>& inputs, unsigned threads) {
  LogCorpus c;
  bool kubeflow = false;
  for (const auto& in : inputs) {
    std::string low = in.name;
    std::transform(low.begin(), low.end(), low.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (low.find("master-0") != std::string::npos || low.find("master_0") != std::string::npos) kubeflow = true;
  }
  LogLineContext ctx;
  if (const int y = find_year(inputs)) {
    ctx.year = y;
    c.year_known = true;
  }
  c.year = ctx.year;

  std::vector<FileScan> scans(inputs.size());
  std::vector<std::string> errors(inputs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < inputs.size();) {
      try {
        FileScanner s(inputs[i], static_cast<uint32_t>(i), rank_from_path(inputs[i].name, kubeflow), ctx);
        scans[i] = s.run();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  n = std::min<unsigned>({n, 8u, static_cast<unsigned>(std::max<size_t>(1, inputs.size()))});
  if (n <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < n; ++i) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  for (const auto& e : errors) {
    if (!e.empty()) throw std::runtime_error(e);
  }

  // Merge in file order.
  std::unordered_set<long long> pid_seen;
  for (auto& s : scans) {
    c.bytes += s.info.bytes;
    c.lines += s.info.lines;
    c.unattributed_steps += s.unattributed_steps;
    c.progress_lines += s.progress_lines;
    merge_bar(c.unattributed_bar, s.unattributed_bar);
    if (s.unattributed_phase != LogKind::kNone) {
      c.unattributed_phase = s.unattributed_phase;
      c.unattributed_phase_file = static_cast<uint32_t>(c.files.size());
      c.unattributed_phase_line = s.unattributed_phase_line;
      c.unattributed_phase_text = std::move(s.unattributed_phase_text);
      c.unattributed_phase_stepped = s.unattributed_phase_stepped;
    }
    c.files.push_back(std::move(s.info));
    for (auto& [rank, a] : s.ranks) {
      RankLog& g = c.ranks[rank];
      RankLog& x = a.log;
      if (g.lines == 0) {
        g = std::move(x);
        continue;
      }
      // A rank spread over several files (stdout + stderr, pod log + dmesg).
      const auto later = [](bool ha, double ta, uint32_t fa, uint32_t la, bool hb, double tb, uint32_t fb,
                            uint32_t lb) {
        if (ha && hb && ta != tb) return ta > tb;
        return std::tie(fa, la) > std::tie(fb, lb);
      };
      if (later(g.has_first_t, g.first_t, g.first_file, g.first_line, x.has_first_t, x.first_t, x.first_file,
                x.first_line)) {
        g.first_file = x.first_file;
        g.first_line = x.first_line;
        g.has_first_t = x.has_first_t;
        g.first_t = x.first_t;
      }
      if (later(x.has_last_t, x.last_t, x.last_file, x.last_line, g.has_last_t, g.last_t, g.last_file, g.last_line)) {
        g.last_file = x.last_file;
        g.last_line = x.last_line;
        g.has_last_t = x.has_last_t;
        g.last_t = x.last_t;
      }
      g.lines += x.lines;
      g.host_tag_lines += x.host_tag_lines;
      g.n_steps += x.n_steps;
      g.max_step = std::max(g.max_step, x.max_step);
      g.total_steps = std::max(g.total_steps, x.total_steps);
      if (g.host.empty()) g.host = x.host;
      merge_bar(g.bar, x.bar);
      if (x.phase != LogKind::kNone &&
          (g.phase == LogKind::kNone ||
           later(x.phase_has_t, x.phase_t, x.phase_file, x.phase_line, g.phase_has_t, g.phase_t, g.phase_file,
                 g.phase_line))) {
        g.phase = x.phase;
        g.phase_file = x.phase_file;
        g.phase_line = x.phase_line;
        g.phase_t = x.phase_t;
        g.phase_has_t = x.phase_has_t;
        g.phase_text = x.phase_text;
      }
      if (x.started.seq >= 0 && g.started.seq >= 0) {
        // The later of two files' last lines; counting down from the other's is several groups too.
        const bool x_later = later(x.started.has_t, x.started.t, x.started.file, x.started.line, g.started.has_t,
                                   g.started.t, g.started.file, g.started.line);
        const bool mixed = x.started.mixed || g.started.mixed ||
                           (x_later ? x.started.seq < g.started.seq : g.started.seq < x.started.seq);
        if (x_later) g.started = x.started;
        g.started.mixed = mixed;
      } else if (x.started.seq >= 0) {
        g.started = x.started;
      }
      if (!x.recent.empty()) {
        g.recent.insert(g.recent.end(), x.recent.begin(), x.recent.end());
        std::stable_sort(g.recent.begin(), g.recent.end(), [](const StepRec& a2, const StepRec& b2) {
          if (a2.has_t && b2.has_t && a2.t != b2.t) return a2.t < b2.t;
          return std::tie(a2.file, a2.line) < std::tie(b2.file, b2.line);
        });
        if (g.recent.size() > kRecentSteps) g.recent.erase(g.recent.begin(), g.recent.end() - kRecentSteps);
        g.last_step = g.recent.back().step;
      }
    }
    for (auto& e : s.events) c.events.push_back(std::move(e));
    for (auto& l : s.launch) c.launch_failures.push_back(std::move(l));
    for (auto& pr : s.pid_rank) {
      if (pid_seen.insert(pr.first).second) c.pid_rank.push_back(pr);
    }
    for (auto& w : s.world) c.world_hints.push_back(std::move(w));
    s = FileScan{};
  }
  // Time order; clock-less events keep their file position, after the timed ones.
  std::stable_sort(c.events.begin(), c.events.end(), [](const LogEvent& a, const LogEvent& b) {
    if (a.has_t != b.has_t) return a.has_t;
    if (a.has_t && a.t != b.t) return a.t < b.t;
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  return c;
}

}  // namespace hanglab
