// Reading one plain log file (see reader.hpp and logs/file_scan.hpp; the corpus of files is
// logs/corpus.cpp, the entry points triage_logs() and triage_paths() are in triage/triage.cpp). The
// per-line work is parse_log_line(); what is done here is the state that spans lines: the clock of
// clock-less lines (inherited from the last stamped line of the same file, marked inexact), the rank
// of continuation lines, torchrun's failure summary and Open MPI's exit block, the bounded per-rank
// step history and the writers' progress bars.
#include "triage/logs/file_scan.hpp"
#include "triage/logs/scan.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "triage/logs/catalogue.hpp"
#include "triage/logs/coordination.hpp"
#include "triage/logs/desync.hpp"
#include "triage/logs/frames.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/logs/progress.hpp"

namespace hanglab {

namespace {


constexpr size_t kChunk = 1 << 20;         // read(2) size
constexpr size_t kMaxLine = 64 * 1024;      // longer lines are cut (progress bars, dumps)
constexpr size_t kMaxWorldHintsPerFile = 4;
constexpr uint32_t kMaxUnattributedPerKind = 4096;

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
    flush_held();
    flush_summary();
    coord_.close(out_.events);
    desync_.close(out_.events, out_.world);
    for (auto* m : {&out_.ranks, &out_.label_ranks, &out_.local_ranks})
      for (auto& [rank, acc] : *m) finish_ring(acc);
    return std::move(out_);
  }

 private:
  const LogInput& in_;
  uint32_t index_;
  LogLineContext ctx_;
  FileScan out_;
  LogLine l_;
  CoordinationList coord_;
  DesyncReport desync_;
  uint32_t line_no_ = 0;
  std::string held_;  // the line before, not read yet (line())
  bool held_valid_ = false;
  std::unordered_map<int, std::pair<double, double>> clocks_;  // writer (rank, -1) -> last clock, resolution
  int clock_rank_ = -2;  // the last stamped line's writer, kept out of the map (the common case)
  bool clock_valid_ = false;
  double clock_t_ = 0, clock_res_ = 0;
  int prev_rank_ = -1;
  RankSource prev_src_ = RankSource::kNone;
  RankAcc* cache_ = nullptr;
  int cache_rank_ = -2;
  int cache_label_ = 0;  // cache_'s bucket(): 0 ranks, 1 label_ranks, 2 local_ranks
  std::unordered_map<uint64_t, uint32_t> kind_counts_;
  // Exception chains, by writer: its last exception event, and the one a "During handling of
  // the above exception" line marked as handled once the next failure is seen.
  std::unordered_map<int, size_t> last_exception_, chained_;
  std::unordered_set<long long> pids_seen_, label_pids_seen_, local_pids_seen_;  // srun's label, tee prefix
  std::set<std::pair<std::string, long long>> nccl_seen_;
  // torchrun summary
  bool sum_active_ = false;
  bool sum_root_ = false;
  bool sum_in_entry_ = false;
  bool sum_seen_entry_ = false;
  LaunchFailure sum_cur_;
  // A SIGBUS whose backtrace (the next lines) runs through libnccl: NCCL's /dev/shm segment
  // could not be backed (a full /dev/shm), not a bug of the program.
  char prev_msg_[384];       // the last unread message (logger.exception's text before its traceback)
  size_t prev_len_ = 0;
  uint32_t prev_line_ = 0;
  bool logged_tb_ = false;   // in a traceback logged under a message the catalogue reads as no root
  size_t py_frame_indent_ = std::string_view::npos;  // the last line was a traceback frame, this indented
  size_t bus_ev_ = SIZE_MAX;
  uint32_t bus_line_ = 0;
  // NCCL's last socket failure and its process: the error trace that follows names the code it unwinds.
  size_t sock_ev_ = SIZE_MAX;
  uint32_t sock_line_ = 0;
  long long sock_pid_ = -1;
  MpiReport mpi_;  // Open MPI's / horovodrun's "Process name: ..." ... "Exit code: c"

  // The last plain line (no event, no bar): what a description-less bar that follows counts.
  std::string said_;
  // The last "terminate called" event and its line (LogEvent::comm_what).
  size_t terminate_ev_ = SIZE_MAX;
  uint32_t terminate_line_ = 0;
  // The line before ended with "Last error:" (LogLineContext::nccl_last_error).
  bool after_last_error_ = false;
  bool in_hvd_missing_ = false;  // LogLineContext::hvd_missing_ranks
  FrameMarkers frame_markers_;  // an innermost-first dump's outer frames say nothing more

  // A tqdm bar redraw: the writer's bar counts further, or a new bar (another description) begins.
  // A line that holds several redraws ('\r') shows the bar advancing within it.
  // NCCL unwinds a failure with one "file.cc:line -> code" INFO line per function (NCCLCHECK's
  // trace, src/include/checks.h). A socket failure of a process whose trace then passes bootstrap.cc
  // failed in NCCL's bootstrap: its own rendezvous over sockets, at communicator init (ncclCommInitRank
  // -> bootstrapInit/bootstrapAllGather), not a link of the running job.
  void note_nccl_trace(std::string_view text) {
    if (line_no_ - sock_line_ > 24 || sock_ev_ >= out_.events.size()) {
      sock_ev_ = SIZE_MAX;
      return;
    }
    if (l_.pid != sock_pid_) return;
    const size_t b = text.find(" NCCL INFO bootstrap.cc:");
    if (b == std::string_view::npos || text.find(" -> ", b) == std::string_view::npos) return;
    LogEvent& e = out_.events[sock_ev_];
    sock_ev_ = SIZE_MAX;
    // Refused: the address answered and nothing listened there (the root's bootstrap socket gone, or an
    // address that is not the root's). An unreachable host or a timeout stays the network's.
    if (e.text.find("Connection refused") == std::string::npos) return;
    e.category = "rendezvous";
    e.cause = "bootstrap_error";
    e.role = "root";
    e.phase = "init";
  }

  void note_bar(std::string_view text, BarSeen& bar, bool has_t, double t) {
    TqdmBar b;
    if (!parse_tqdm_bar(l_.msg, b)) return;
    TqdmBar first;
    const size_t cr = text.find('\r');
    const bool within = cr != std::string_view::npos && parse_tqdm_bar(text.substr(0, cr), first) && first.n >= 0 &&
                        first.n < b.n;
    const std::string_view desc = b.desc.substr(0, 120);
    // The same bar drawn again from a lower count and a shorter elapsed time is another process's
    // (each rank of a combined log runs the same data preparation): the one further along stays.
    if (bar.seen() && bar.desc == desc && b.n < bar.last_n && b.elapsed_s >= 0 && b.elapsed_s < bar.elapsed_s &&
        !within)
      return;
    // A count that went back is a new bar (the same description, or none, over again).
    if (!bar.seen() || bar.desc != desc || (b.n < bar.last_n && !within)) {
      bar = BarSeen{};
      bar.desc = std::string(desc);
      bar.phase = std::string(bar_phase(b.desc, b.unit));
      // A bar without a description counts what the writer announced just before it ("caching
      // latents..." then a bare tqdm bar).
      if (desc.empty() && !said_.empty()) bar.phase = std::string(bar_phase(said_, b.unit));
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

  // The record of the writer a line is attributed to: srun's label alone names a task, torchrun's tee
  // prefix alone a local rank; both are kept apart until the corpus knows what they name.
  static int bucket(RankSource src) { return src == RankSource::kSrunLabel ? 1 : src == RankSource::kLocal ? 2 : 0; }
  std::unordered_map<int, RankAcc>& records(int b) {
    return b == 1 ? out_.label_ranks : b == 2 ? out_.local_ranks : out_.ranks;
  }
  RankAcc& acc(int rank, RankSource src = RankSource::kNone) {
    const int label = bucket(src);
    if (rank == cache_rank_ && label == cache_label_) return *cache_;
    auto [it, fresh] = records(label).try_emplace(rank);
    if (fresh) {
      it->second.log.rank = rank;
      it->second.ring.reserve(kRecentSteps);
    }
    cache_rank_ = rank;
    cache_label_ = label;
    cache_ = &it->second;
    return it->second;
  }

  static void finish_ring(RankAcc& a) {
    // Unroll the circular buffer, oldest first.
    auto& r = a.ring;
    if (r.size() == kRecentSteps && a.ring_pos != 0) std::rotate(r.begin(), r.begin() + a.ring_pos, r.end());
    a.log.recent = std::move(r);
  }

  // Which rank wrote the line: its own prefix or message, else (a continuation line) the rank of
  // the line before it, else the file's rank; in a per-rank file an in-message rank may be PG-local.
  void attribute(std::string_view text, int& rank, RankSource& src) {
    rank = l_.rank;
    src = l_.rank_src;
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
  }

  struct Clock {
    bool exact = false, have = false;
    double t = 0, res = 0;
  };

  Clock clock_of(int rank) {
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
    } else if (auto it = clocks_.find(rank); it != clocks_.end()) {
      have_t = true;
      cur_t = it->second.first;
      cur_res = it->second.second;
    }
    return Clock{exact, have_t, cur_t, cur_res};
  }

  // The writer's own record: its first and last line, steps, phase markers, its last collective.
  // True for a step line, which is nothing more.
  bool note_rank_line(int rank, RankSource src, bool have_t, double cur_t) {
      RankAcc& a = acc(rank, src);
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
        return true;
      }
      switch (l_.kind) {
        case LogKind::kCheckpointBegin:
        case LogKind::kCheckpointEnd:
        case LogKind::kEvalBegin:
        case LogKind::kEvalEnd:
        case LogKind::kDataWait:
        case LogKind::kDataPrep:
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
    return false;
  }

  // A notable line: a failure, an exit, a launcher's notice, a world-size statement.
  void note_event(int rank, RankSource src, bool launcher, bool have_t, bool exact, double cur_t, double cur_res,
                  bool partial, std::string_view text) {
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
                     l_.kind == LogKind::kDataWait || l_.kind == LogKind::kDataPrep ||
                     l_.kind == LogKind::kShutdown || l_.kind == LogKind::kDone ||
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
    if (l_.kind == LogKind::kNone && terminate_ev_ < out_.events.size() && line_no_ == terminate_line_ + 1 &&
        what_nccl_error(l_.msg)) {
      out_.events[terminate_ev_].comm_what = true;  // a failed NCCL call, not a crash (reader_lines.cpp)
      terminate_ev_ = SIZE_MAX;
    }
    if (l_.kind == LogKind::kNone || l_.kind == LogKind::kStep) return;

    if (l_.world > 0 && (l_.kind == LogKind::kWorldSize || l_.kind == LogKind::kInitDone ||
                         l_.kind == LogKind::kStoreTimeout))
      world_hint(rank);
    if (summary(rank)) return;
    if (l_.kind == LogKind::kWorldSize) return;
    if (l_.kind == LogKind::kMpiProcessName) {
      mpi_.name(l_.other_rank, line_no_, out_.events);
      return;
    }
    LogKind kind = l_.kind;
    int other = l_.other_rank;
    bool first_failed = false;
    if (kind == LogKind::kExitStatus && mpi_.rank >= 0 && line_no_ - mpi_.line <= 6) {
      kind = LogKind::kMpiExit;  // "Exit code: 1" of the process named just above
      other = std::exchange(mpi_.rank, -1);
      first_failed = true;
    } else if (kind == LogKind::kMpiExit && other < 0) {
      first_failed = (other = mpi_.head(line_no_, out_.events.size())) >= 0;
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
    event_fields(l_, e);  // what the line says (reader_lines.cpp)
    e.kind = kind;
    e.other_rank = other;
    e.first_failed = first_failed;
    if (e.kind == LogKind::kCrash && e.signal == 7) {
      bus_ev_ = out_.events.size();
      bus_line_ = line_no_;
    }
    if ((e.kind == LogKind::kSocketError || e.kind == LogKind::kStoreRefused) && e.nccl_dev >= 0 && e.pid > 0) {
      sock_ev_ = out_.events.size();
      sock_line_ = line_no_;
      sock_pid_ = e.pid;
    }
    // Python's logger.exception(msg) writes msg, then the traceback of the exception it handled: a
    // message the catalogue knows as no root (torchrun's "Error waiting on exit barrier", api.py
    // _exit_barrier, after the local workers succeeded) says what that exception was.
    if (e.kind == LogKind::kException && logged_tb_) {
      e.handled = true;
      logged_tb_ = false;
    }
    if (!launcher) {
      if (auto it = chained_.find(e.rank); it != chained_.end()) {
        if (it->second < out_.events.size()) out_.events[it->second].handled = true;
        chained_.erase(it);
      }
      if (e.kind == LogKind::kException) last_exception_[e.rank] = out_.events.size();
    }
    // std::terminate's two lines are one process's: "terminate called after throwing an instance of
    // 'X'" and then "  what():  <the exception's message>".
    if (e.kind == LogKind::kTerminate) {
      terminate_ev_ = out_.events.size();
      terminate_line_ = line_no_;
    } else if (terminate_ev_ < out_.events.size() && line_no_ == terminate_line_ + 1) {
      std::string_view m = l_.msg;
      while (!m.empty() && (m.front() == ' ' || m.front() == '\t')) m.remove_prefix(1);
      const bool comm = e.kind == LogKind::kWatchdogRepeat || e.kind == LogKind::kWatchdogTimeout ||
                        e.kind == LogKind::kCommException || e.kind == LogKind::kCommClosed ||
                        e.kind == LogKind::kGlooTimeout || e.kind == LogKind::kStoreTimeout ||
                        e.kind == LogKind::kNcclError;
      if (m.rfind("what():", 0) == 0) {
        LogEvent& t = out_.events[terminate_ev_];
        // A generic exception text says no more than "terminate called" did: it stays a crash.
        if (comm) t.comm_what = true;
        else if (e.kind != LogKind::kException) t.read_what = true;
        if (t.rank < 0 && e.rank >= 0) {
          t.rank = e.rank;
          t.rank_src = e.rank_src;
        }
      }
      terminate_ev_ = SIZE_MAX;
    }
    out_.events.push_back(std::move(e));
  }

  // Each line is held until the next one is seen: a terminal or a paste may have wrapped one message
  // onto two lines (wrapped_message, reader_lines.cpp), which are then read as the one line they were.
  void line(std::string_view text, bool partial) {
    if (held_valid_) {
      held_valid_ = false;
      if (wrapped_message(held_, text) && !reads_alone(text)) {
        held_.append(text);
        split_line(held_, partial, 2);
        return;
      }
      split_line(held_, false, 1);
    }
    if (partial) {
      split_line(text, true, 1);
      return;
    }
    held_.assign(text);
    held_valid_ = true;
  }

  // A line that says something by itself (the inner message of a wrapped one, "exception: [Rank 1] Watchdog
  // caught ...") is not the rest of the line before: joined, the outer format would hide what it says.
  bool reads_alone(std::string_view text) {
    LogLine alone;
    parse_log_line(text, ctx_, alone);
    return alone.kind != LogKind::kNone;
  }

  void flush_held() {
    if (held_valid_) split_line(held_, false, 1);
    held_valid_ = false;
  }

  // `lines`: how many lines of the file the text is.
  void split_line(std::string_view text, bool partial, uint32_t lines) {
    if (const size_t cut = after_progress_bar(text); cut != std::string_view::npos) {
      one_line(text.substr(0, cut), false, lines);
      one_line(text.substr(cut), partial, 0);
      line_no_ += lines > 1 ? lines - 1 : 0;
      return;
    }
    one_line(text, partial, lines);
    line_no_ += lines > 1 ? lines - 1 : 0;
  }

  // `lines`: how many lines of the file the text is (0 for the second part of a line split above);
  // its events carry the number of the first.
  void one_line(std::string_view text, bool partial, uint32_t lines) {
    if (lines > 0) {
      ++line_no_;
      out_.info.lines += lines;
    }
    ctx_.nccl_last_error = after_last_error_;
    ctx_.hvd_missing_ranks = in_hvd_missing_;
    ctx_.coord_list = coord_.active();
    ctx_.desync_report = desync_.active();
    parse_log_line(text, ctx_, l_);
    ctx_.nccl_last_error = false;
    {
      std::string_view t = text;
      while (!t.empty() && (t.back() == ' ' || t.back() == '\r' || t.back() == '\t')) t.remove_suffix(1);
      if (!t.empty()) out_.info.last_text_line = line_no_;
      after_last_error_ = t.size() >= 11 && t.substr(t.size() - 11) == "Last error:";
      // Horovod's report lists one missing rank per line after its header, until another line.
      const bool entry = in_hvd_missing_ && l_.kind == LogKind::kDesyncMissing && l_.word == "stall";
      in_hvd_missing_ = entry || (t.size() >= 14 && t.substr(t.size() - 14) == "Missing ranks:");
    }
    if (!frame_markers_.keep(l_.msg, l_.kind)) l_.kind = LogKind::kNone;
    {
      // A Python traceback prints each frame's source line under it, indented deeper ('  File "...",
      // line 885, in _try_get_data' then "    raise RuntimeError('DataLoader worker ... exited
      // unexpectedly'...)", traceback.py's StackSummary.format): the program's code, not its output.
      const size_t indent = l_.msg.find_first_not_of(" \t");
      if (py_frame_indent_ != std::string_view::npos && indent != std::string_view::npos && indent > py_frame_indent_)
        l_.kind = LogKind::kNone;
      py_frame_indent_ = frame_shape(l_.msg, nullptr, nullptr) == FrameShape::kOutermostFirst ? indent
                                                                                              : std::string_view::npos;
    }
    {
      std::string_view m = l_.msg;
      while (!m.empty() && (m.front() == ' ' || m.front() == '\t')) m.remove_prefix(1);
      if (m.rfind("Traceback (most recent call last):", 0) == 0) {
        logged_tb_ = false;
        if (prev_len_ > 0 && line_no_ == prev_line_ + 1) {
          const auto hit = builtin_catalogue().match(std::string_view(prev_msg_, prev_len_));
          logged_tb_ = hit && hit->entry->meaning && hit->entry->meaning->role != "root" &&
                       hit->entry->meaning->role != "exit";
        }
      }
      // The line a logger.exception traceback would follow: an unread message, kept for that lookup.
      prev_len_ = 0;
      if (l_.kind == LogKind::kNone && !m.empty() && m.size() <= sizeof(prev_msg_)) {
        std::memcpy(prev_msg_, m.data(), m.size());
        prev_len_ = m.size();
        prev_line_ = line_no_;
      }
    }
    if (!out_.torch_launcher && names_torch_launcher(text)) out_.torch_launcher = true;
    if (coord_.line(l_, line_no_, out_.events)) return;  // a task list's line, folded into its verdict
    if (bus_ev_ != SIZE_MAX) {
      if (line_no_ - bus_line_ > 24) {
        bus_ev_ = SIZE_MAX;
      } else if (text.find("nccl") != std::string_view::npos && bus_ev_ < out_.events.size()) {
        out_.events[bus_ev_].category = "resource_limit";
        out_.events[bus_ev_].cause = "nccl_shm";
        bus_ev_ = SIZE_MAX;
      }
    }
    if (sock_ev_ != SIZE_MAX) note_nccl_trace(text);
    int rank = -1;
    RankSource src = RankSource::kNone;
    attribute(text, rank, src);
    if (desync_.line(l_, rank, line_no_, out_.events, out_.world)) return;  // a desync report's line, folded
    const bool launcher = launcher_kind(l_.kind);
    const Clock clk = clock_of(rank);
    const bool exact = clk.exact, have_t = clk.have;
    const double cur_t = clk.t, cur_res = clk.res;
    if (l_.pid >= 0 && rank >= 0 && !pid_is_other(l_.kind) && src != RankSource::kNone) {
      const int label = bucket(src);  // kept apart, as its records are
      if ((label == 1 ? label_pids_seen_ : label == 2 ? local_pids_seen_ : pids_seen_).insert(l_.pid).second)
        (label == 1 ? out_.label_pid_rank : label == 2 ? out_.local_pid_rank : out_.pid_rank).emplace_back(l_.pid, rank);
    }
    if (src == RankSource::kSrunLabel) ++out_.srun_label_lines;
    // NCCL's prefix names the process and its device on every line it prints.
    if (l_.nccl_dev >= 0 && l_.pid > 0 && !l_.host.empty() && nccl_seen_.size() < static_cast<size_t>(kMaxWorld) &&
        nccl_seen_.emplace(std::string(l_.host), l_.pid).second) {
      out_.nccl_procs.push_back(NcclProc{std::string(l_.host), l_.pid, l_.nccl_dev, index_, line_no_});
    }

    if (src == RankSource::kLocal) ++out_.info.local_rank_lines;
    out_.info.ray_hidden_lines += static_cast<uint64_t>(l_.ray_repeats);
    if (l_.msg.find("%|") != std::string_view::npos || l_.msg.find("/s]") != std::string_view::npos ||
        l_.msg.find("/it]") != std::string_view::npos) {
      // A bar redraw ends without a newline (tqdm's '\r'): another process's message written next
      // joins its line, and the rank that message names ("[Rank 1] Watchdog caught ...") is not the
      // bar's writer.
      const bool joined = src == RankSource::kMessage && l_.kind != LogKind::kNone;
      BarSeen& bar = rank >= 0 && !joined ? acc(rank, src).log.bar : out_.unattributed_bar;
      note_bar(text, bar, have_t, cur_t);
      // A training loop's bar (HF Trainer's, an epoch's) is progress of training, as a step line is.
      if (l_.kind == LogKind::kNone && bar.seen() && bar.line == line_no_ && bar.phase == "training")
        ++out_.progress_lines;
      // A bar redraw after the training loop's end (kDone) is work after it, unless it is that
      // loop's bar closing at its total (tqdm's close: "100%| 9771/9771 [...]").
      if (out_.unattributed_phase == LogKind::kDone &&
          !(bar.line == line_no_ && bar.total > 0 && bar.last_n >= bar.total))
        out_.unattributed_phase_stepped = true;
    }
    if (l_.kind == LogKind::kNone && !l_.msg.empty() && l_.msg.size() <= 200 && l_.msg.find('|') == std::string_view::npos)
      said_.assign(l_.msg);
    // A step line after a marker is work after it; after the training loop's end (kDone), the bar's
    // closing redraw at its total ("100%| 9771/9771 [...]", tqdm's close) is that same end.
    if (l_.kind == LogKind::kStep && out_.unattributed_phase != LogKind::kNone &&
        !(out_.unattributed_phase == LogKind::kDone && l_.total_steps > 0 && l_.step >= l_.total_steps))
      out_.unattributed_phase_stepped = true;
    if (rank >= 0 && note_rank_line(rank, src, have_t, cur_t)) return;
    note_event(rank, src, launcher, have_t, exact, cur_t, cur_res, partial, text);
  }

  // A statement of the world size, kept for the reasoner: a few per file (a start-up line is written
  // once per process), and apart from them a store barrier's count of arrivals per rank that waits
  // (the waiter repeats it every few seconds; the latest count is the one that holds).
  void world_hint(int rank) {
    if (l_.joined >= 0) {
      size_t counts = 0;
      for (auto& h : out_.world) {
        if (h.joined < 0) continue;
        ++counts;
        if (h.rank == rank) {
          if (l_.joined == h.joined) ++h.settled;
          else if (l_.joined > h.joined) h.settled = 0;
          h.joined = std::max(h.joined, l_.joined);
          return;
        }
      }
      if (counts >= kMaxWorldHintsPerFile) return;
    } else if (static_cast<size_t>(std::count_if(out_.world.begin(), out_.world.end(),
                                                 [](const WorldHint& h) { return h.joined < 0; })) >=
               kMaxWorldHintsPerFile) {
      return;
    }
    // A store barrier's key counts the process groups created so far (torch 1.x distributed_c10d.py:
    // "store_based_barrier_key:{_group_count}"): key 1 is the default group's, a later key a new_group()'s,
    // whose ranks all passed the default group's barrier.
    const long long key = l_.joined >= 0 ? logparse::store_barrier_key(l_.msg) : -1;
    out_.world.push_back({l_.world, rank, l_.joined, 0, key, index_, line_no_, std::string(l_.msg.substr(0, kMaxEventText))});
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

}  // namespace

FileScan scan_log_file(const LogInput& in, uint32_t index, int file_rank, const LogLineContext& ctx) {
  FileScanner s(in, index, file_rank, ctx);
  return s.run();
}

}  // namespace hanglab
