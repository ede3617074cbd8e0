// analyze_log_corpus(): the rank timeline and the verdict from plain logs alone. The
// rules argue in the playbook's order, and each one needs positive evidence with a
// file:line; where the logs cannot decide, the answer is "unknown" plus what is provable.
//   one rank's start-up line in two files while another rank never logs -> duplicate RANK;
//   init never finished (no step, no collective) and rendezvous/interface errors -> rendezvous/network;
//   ranks report the same SeqNum with a different OpType or Numel -> collective_mismatch
//     (definite: one rank is in another collective, e.g. validation while others train);
//     so do the backend's own checks (DETAIL-mode fingerprints, Gloo's size check);
//   a rank completed the step its peers are stuck in, or left the loop early -> mismatch;
//   the earliest real failure (OOM, CUDA error, crash, kill, exception) precedes every
//     peer's timeout/comm error -> rank_exit (or data_loading/resource_limit/network by
//     kind); the later errors, the launcher's SIGTERMs and torchrun's summary are echoes;
//   a rank's log stops before its peers report its connections closed -> it died;
//   ranks absent from the collective every other rank reports -> missing by absence;
//     alive (still logging, answering the dump signal, TCP peers timing out rather than
//     seeing a closed socket) -> straggler; in a checkpoint/data phase -> that phase;
//     otherwise dead-or-hung is unknown, and the report says so;
//   every rank reports the same collective -> a rank that got there only after its peers
//     had timed out was late (straggler); else network (with link errors) or unknown;
//   no error anywhere -> none when every rank finished; a job that slowed down as a whole
//     is a straggler whose rank the logs cannot name; else unknown.
// Timestamps are compared with their resolution (whole-second stamps from dmesg -T or
// torchrun's summary are intervals), and across hosts with a skew allowance.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "triage/logs/reader.hpp"
#include "triage/reason/next_steps.hpp"  // upward until LogAnalyzer moves to reason/
#include "util.hpp"

namespace hanglab {

namespace {

// Clocks of different hosts disagree by this much without anyone noticing (NTP).
constexpr double kSkewS = 1.0;
// Roots this close to the first one died together (a node going down, an OOM sweep).
constexpr double kTogetherS = 1.0;
// A step interval this many times the rank's usual one is a jump.
constexpr double kJumpRatio = 3.0;
constexpr size_t kMaxEchoes = 64;
// A rank number a stall report may widen the world to (16k-rank jobs and more; not garbage).
constexpr int kMaxStallRank = 1 << 17;
constexpr const char* kSnapshotNote =
    "no rank logged an error: this assumes the logs are complete (collected after the job stopped); a snapshot of "
    "a running job can show one rank a step ahead of the others";

enum class Role { kInfo, kRoot, kEcho, kTeardown, kExit };

std::string signal_name(int sig) {
  static const std::map<int, const char*> kNames = {
      {1, "SIGHUP"},  {2, "SIGINT"},   {4, "SIGILL"},   {6, "SIGABRT"},  {7, "SIGBUS"},   {8, "SIGFPE"},
      {9, "SIGKILL"}, {11, "SIGSEGV"}, {13, "SIGPIPE"}, {15, "SIGTERM"}, {24, "SIGXCPU"}};
  auto it = kNames.find(sig);
  return it != kNames.end() ? it->second : fmt::format("signal {}", sig);
}

// "rank 3" / "ranks 0,2,3" / "ranks 0-1022,1024-16383 (16383 ranks)"
std::string ranks_phrase(const std::vector<int>& v) {
  if (v.size() == 1) return fmt::format("rank {}", v[0]);
  std::string s = "ranks " + rank_ranges(v);
  if (v.size() > 8) s += fmt::format(" ({} ranks)", v.size());
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string pg_key(const LogEvent& e) {
  if (e.pg.empty() || e.pg_default) return "default";
  return e.pg;
}

// A failure attributed to a rank.
struct Fail {
  const LogEvent* ev = nullptr;  // null for torchrun summary entries
  int rank = -1;
  Role role = Role::kInfo;
  bool has_t = false;
  double t = 0;
  double res = 0;
  uint32_t file = 0;
  uint32_t line = 0;
  std::string what;
  std::string ref;
  std::string category;  // for roots
  std::string cause;
  int strength = 0;  // among simultaneous roots: OOM/CUDA/crash 3, signal death 2, exception 1
  bool exact = true;       // the clock is the line's own (else inherited: a lower bound)
  bool aftermath = false;  // a launcher's notice of a rank that had already failed waiting
  int signal = 0;
  int code = kNoCode;
  std::string host;
};

struct RankState {
  int rank = -1;
  const RankLog* log = nullptr;
  std::vector<const LogEvent*> evs;
  std::vector<Fail> fails;  // time order
  bool clean_end = false;
  bool left_loop = false;  // alive after leaving the training loop
  int end_step = -1;
  int end_total = -1;
  std::string end_ref;
  double end_t = 0;
  bool end_has_t = false;
  std::optional<int> exit_code;
  std::optional<int> exit_signal;
  std::string exit_ref;
  std::string host;
  std::set<long long> pids;
  std::string liveness;
  // The rank's own first failure; a launcher's exit notice only when it logged nothing else
  // (the notice is written after the fact, often with whole-second times).
  const Fail* first_fail() const {
    for (const auto& f : fails) {
      if (f.role != Role::kExit) return &f;
    }
    return fails.empty() ? nullptr : &fails.front();
  }
  bool seen() const { return log && log->lines > 0; }
};

// One rank's report of the collective it was stuck in.
struct CollReport {
  int rank = -1;
  std::string pg;
  long long seq = -1;
  std::string op;
  long long numel_in = -1;
  long long numel_out = -1;
  bool fields_complete = true;
  const LogEvent* ev = nullptr;
  int step = -1;
};

class LogAnalyzer {
 public:
  LogAnalyzer(const LogCorpus& c, const TriageOptions& o) : c_(c), opts_(o) {}

  TriageResult run() {
    r_.source = "logs";
    setup_world();
    attach();
    derive();
    find_collectives();
    classify();
    assign_liveness();
    finish();
    return std::move(r_);
  }

 private:
  const LogCorpus& c_;
  const TriageOptions& opts_;
  TriageResult r_;
  int world_ = 0;
  bool world_stated_ = false;
  std::vector<RankState> rs_;
  // Lines no rank can be named for (a paste from one process: a traceback, an NCCL WARN,
  // a bus error, without a rank prefix or a rank in the file name). They still count:
  // when no rank-attributed line explains the failure, their meaning is the answer and the
  // rank stays unknown (-1).
  RankState anon_;
  bool use_anon_ = false;
  bool single_node_ = false;  // no two hosts named in the logs: local ranks are global
  std::unordered_map<long long, int> pid_rank_;
  std::vector<const LogEvent*> host_events_;  // unattributed host-level events (kernel OOM by pid unknown, storage)
  std::vector<CollReport> reports_;           // first per rank and PG
  std::multimap<int, size_t> report_index_;   // rank -> index in reports_
  std::map<std::string, std::set<int>> pg_members_;
  std::set<int> reporters_;                   // ranks that reported any collective timeout/failure inside one
  std::string main_pg_;
  long long stuck_seq_ = -1;
  std::vector<int> waiting_;
  std::vector<int> absent_;
  std::set<int> slow_;
  std::set<int> alive_;
  std::set<int> dropped_;  // "[host:N]" numbers taken for pids
  std::string first_key_;
  bool training_started_ = false;
  bool init_seen_ = false;
  bool every_rank_reported_ = false;  // the same failure line from every rank of a world of 2+
  bool partial_join_ = false;         // a store/barrier count of fewer ranks than the world
  bool partial_wait_ = false;         // only some ranks of the world report the stuck collective  // a line proves the job was in init (store, interface, communicator setup)
  double t0_ = 0;
  bool have_t0_ = false;

  // ---- helpers ------------------------------------------------------------------------

  std::string ref(uint32_t file, uint32_t line) const { return log_ref(c_, file, line); }
  std::string ref(const LogEvent& e) const { return ref(e.file, e.line); }

  std::string at(bool has_t, double t) const {
    if (!has_t) return "(no clock)";
    return fmt::format("{:+.3f} s", t - t0_);
  }

  // Wall-clock time of day, for evidence text: "08:26:59.412".
  // Whole-second stamps are shown as such ("08:26:40"), finer ones with milliseconds.
  static std::string clock(double t, double res) { return res >= 1.0 ? clock(t).substr(0, 8) : clock(t); }
  static std::string clock(double t) {
    const long long day = static_cast<long long>(std::floor(t / 86400.0));
    double s = t - static_cast<double>(day) * 86400.0;
    const int h = static_cast<int>(s / 3600);
    s -= h * 3600;
    const int m = static_cast<int>(s / 60);
    s -= m * 60;
    return fmt::format("{:02d}:{:02d}:{:06.3f}", h, m, s);
  }

  void add_evidence(const std::string& where, const std::string& text) {
    for (const auto& e : r_.evidence) {
      if (e.ref == where && e.text == text) return;
    }
    r_.evidence.push_back({where, text});
  }

  void note(const std::string& s) {
    if (std::find(r_.notes.begin(), r_.notes.end(), s) == r_.notes.end()) r_.notes.push_back(s);
  }

  // a ended before b started, taking the stamps' resolution into account; same-file
  // clock-less lines by position; otherwise not provable.
  // An inherited clock is a lower bound only ("at or after"): it can show that b came
  // late, never that a came early.
  static bool before(const Fail& a, const Fail& b, double slack = 0) {
    if (a.has_t && a.exact && b.has_t) return a.t + a.res + slack <= b.t;
    if (a.file == b.file) return a.line < b.line;
    return false;
  }

  // ---- world ----------------------------------------------------------------------------

  // "[host:N]" names a rank for some launchers and a pid in Open MPI's crash handler: a
  // number named by nothing else and far outside the world is a pid.
  bool dropped(int rank) const { return dropped_.count(rank) > 0; }

  void setup_world() {
    int strong_max = -1;
    for (const auto& [rank, g] : c_.ranks) {
      if (g.host_tag_lines < g.lines) strong_max = std::max(strong_max, rank);
    }
    int max_rank = strong_max;
    for (const auto& e : c_.events) {
      if (e.rank_src == RankSource::kHostTag) continue;
      max_rank = std::max(max_rank, e.other_rank >= 0 && e.kind != LogKind::kDumpSignal &&
                                            e.kind != LogKind::kSummaryEntry && e.kind != LogKind::kPgInit &&
                                            e.kind != LogKind::kInitDone
                                        ? std::max(e.rank, e.other_rank)
                                        : e.rank);
    }
    for (const auto& l : c_.launch_failures) max_rank = std::max(max_rank, l.rank);
    // Horovod's stall check names ranks of the job (bounded: a garbled number is no world).
    for (const auto& e : c_.events) {
      if (e.kind != LogKind::kDesyncMissing || e.word != "stall") continue;
      for (int r : e.ranks)
        if (r >= 0 && r < kMaxStallRank) max_rank = std::max(max_rank, r);
    }
    // One node (at most one host named anywhere): torchrun's "local_rank: N" is rank N.
    {
      std::set<std::string> hosts;
      for (const auto& [rank, g] : c_.ranks)
        if (!g.host.empty()) hosts.insert(g.host);
      for (const auto& e : c_.events)
        if (!e.host.empty() && e.kind != LogKind::kOomKill) hosts.insert(e.host);
      for (const auto& l : c_.launch_failures)
        if (!l.host.empty()) hosts.insert(l.host);
      single_node_ = hosts.size() <= 1;
    }
    if (single_node_) {
      for (const auto& e : c_.events)
        if (e.kind == LogKind::kLauncherExit && e.local_rank >= 0 && e.local_rank < 4096)
          max_rank = std::max(max_rank, e.local_rank);
    }
    int stated = 0;
    const WorldHint* hint = nullptr;
    std::set<int> values;
    for (const auto& h : c_.world_hints) {
      values.insert(h.world);
      if (h.world > stated) {
        stated = h.world;
        hint = &h;
      }
    }
    if (opts_.world_size) {
      world_ = *opts_.world_size;
      world_stated_ = true;
      add_evidence("--world-size", fmt::format("world size {} given on the command line", world_));
      if (stated && stated != world_) {
        note(fmt::format("the logs state world size {} ({}) but --world-size says {}; using {}", stated,
                         ref(hint->file, hint->line), world_, world_));
      }
    } else if (stated) {
      world_ = stated;
      world_stated_ = true;
      add_evidence(ref(hint->file, hint->line), fmt::format("world size {}: {}", stated, hint->text));
      if (values.size() > 1) {
        note(fmt::format("the logs state several world sizes ({}); the largest, {}, is used (smaller ones are "
                         "usually sub-communicators or an earlier attempt)",
                         fmt::join(values, ", "), stated));
      }
    }
    // Ranks that only "[host:N]" names: kept when they fit the world, else taken for pids.
    const int fit = world_stated_ ? world_ : 2 * (max_rank + 1) + 8;
    for (const auto& [rank, g] : c_.ranks) {
      if (g.host_tag_lines < g.lines) continue;
      if (rank < fit) {
        max_rank = std::max(max_rank, rank);
      } else {
        dropped_.insert(rank);
      }
    }
    if (!dropped_.empty()) {
      note(fmt::format("\"[host:N]\" tags with N = {} do not fit the world: taken as process ids (Open MPI's crash "
                       "handler prints \"[host:pid]\"), not ranks",
                       fmt::join(std::vector<int>(dropped_.begin(), dropped_.end()), ", ")));
    }
    // A launcher that kills every process it started when one fails lists them all (DeepSpeed's
    // "Killing subprocess PID"): on one node, with no rank above the list, that is the world.
    if (!world_stated_ && single_node_) {
      std::set<long long> killed;
      const LogEvent* first = nullptr;
      for (const auto& e : c_.events) {
        if (e.kind == LogKind::kLauncherSignal && e.cause == "launcher_kill_all" && e.pid >= 0) {
          killed.insert(e.pid);
          if (!first) first = &e;
        }
      }
      if (first && static_cast<int>(killed.size()) >= max_rank + 1) {
        world_ = static_cast<int>(killed.size());
        world_stated_ = true;
        add_evidence(ref(*first), fmt::format("world size {}: the launcher killed its {} subprocess{} on one node",
                                              world_, world_, world_ == 1 ? "" : "es"));
      }
    }
    if (!world_stated_) {
      world_ = max_rank + 1;
      if (world_ > 0) {
        note(fmt::format("world size not stated in the logs (world_size=, WORLD_SIZE, nranks): taken as the highest "
                         "rank seen + 1 = {}. Ranks above {} would be invisible: if the job had more, rerun with "
                         "--world-size N to find them missing",
                         world_, max_rank));
      }
    }
    if (max_rank + 1 > world_) {
      note(fmt::format("rank {} appears in the logs although the world size is {}: the world is widened to {}",
                       max_rank, world_, max_rank + 1));
      world_ = max_rank + 1;
    }
    r_.world_size = world_;
    rs_.resize(static_cast<size_t>(std::max(0, world_)));
    for (int i = 0; i < world_; ++i) {
      rs_[i].rank = i;
      auto it = c_.ranks.find(i);
      if (it != c_.ranks.end()) {
        rs_[i].log = &it->second;
        rs_[i].host = it->second.host;
      }
    }
    // Report times are relative to the earliest clock in the logs.
    for (const auto& [rank, g] : c_.ranks) {
      if (g.has_first_t && (!have_t0_ || g.first_t < t0_)) {
        t0_ = g.first_t;
        have_t0_ = true;
      }
    }
    for (const auto& e : c_.events) {
      if (e.has_t && (!have_t0_ || e.t < t0_)) {
        t0_ = e.t;
        have_t0_ = true;
      }
    }
    r_.t0 = t0_;
  }

  bool valid_rank(int r) const { return r >= 0 && r < world_; }

  // Ranks without a single line are evidence only when the logs are the job's: several
  // ranks logged and the silent ones are a minority. One rank's log (or an excerpt of two
  // ranks out of eight) says nothing about the ranks whose logs were not pasted.
  bool silence_proves(size_t n_silent) const {
    size_t seen = 0;
    for (const auto& s : rs_) seen += s.seen() ? 1 : 0;
    return n_silent > 0 && seen >= 2 && n_silent * 2 < static_cast<size_t>(std::max(world_, 1));
  }
  // The rank's own statement that its data ran out ("data exhausted", a data service with
  // no tasks left for it).
  static const LogEvent* exhausted_data(const RankState& s) {
    for (const LogEvent* e : s.evs) {
      if (e->kind == LogKind::kDataExhausted) return e;
    }
    return nullptr;
  }
  // Ranks that do not report the stuck collective are provably elsewhere: some of them
  // logged other lines, or the silent ones are few among the ranks that logged.
  bool others_elsewhere() const {
    size_t other_seen = 0, silent = 0;
    for (const auto& s : rs_) {
      if (std::binary_search(waiting_.begin(), waiting_.end(), s.rank)) continue;
      (s.seen() ? other_seen : silent) += 1;
    }
    return other_seen > 0 || silence_proves(silent);
  }
  // "rank 3", or what a line without a rank is: a process the logs do not name.
  static std::string who(int rank) {
    return rank >= 0 ? fmt::format("rank {}", rank) : std::string("a process (rank not in the logs)");
  }

  // ---- attribution ------------------------------------------------------------------------

  void attach() {
    for (const auto& [pid, rank] : c_.pid_rank) pid_rank_.emplace(pid, rank);
    for (const auto& l : c_.launch_failures) {
      if (l.pid >= 0 && l.rank >= 0) pid_rank_.emplace(l.pid, l.rank);
    }
    for (const auto& e : c_.events) {
      if ((e.kind == LogKind::kMpiExit) && e.pid > 0 && e.other_rank >= 0) pid_rank_.emplace(e.pid, e.other_rank);
    }
    bool any_seen = false;
    for (const auto& s : rs_) any_seen |= s.seen();
    for (const auto& e : c_.events) {
      int rank = dropped(e.rank) ? -1 : e.rank;
      switch (e.kind) {
        case LogKind::kMpiExit:
        case LogKind::kSrunTask:
          rank = e.other_rank;
          break;
        case LogKind::kLauncherExit:
        case LogKind::kLauncherSignal:
        case LogKind::kSignalReceived:
        case LogKind::kOomKill:
        case LogKind::kDataLoaderKilled:
          if (e.pid >= 0) {
            auto it = pid_rank_.find(e.pid);
            if (it != pid_rank_.end()) rank = it->second;
            // A DataLoader worker's pid is not the rank's: it stays on the line's rank.
          }
          if (e.kind == LogKind::kLauncherExit && rank < 0 && single_node_ && e.local_rank >= 0) rank = e.local_rank;
          break;
        default:
          break;
      }
      if (e.kind == LogKind::kDataLoaderKilled && e.rank >= 0 && !dropped(e.rank)) rank = e.rank;
      if (valid_rank(rank)) {
        rs_[rank].evs.push_back(&e);
        if (!e.host.empty() && rs_[rank].host.empty() && e.kind != LogKind::kOomKill) rs_[rank].host = e.host;
      } else if (!dropped(e.rank) || !any_seen) {
        // A "[host:pid]" line (Open MPI's crash handler) is a writer's only when no rank
        // of the world logged: next to healthy ranks it is the launcher's own.
        anon_.evs.push_back(&e);
      }
      if (valid_rank(rank)) {
      } else if (e.kind == LogKind::kOomKill || e.kind == LogKind::kStorageError || e.kind == LogKind::kIbError ||
                 e.kind == LogKind::kShmError || e.kind == LogKind::kWrongIfname || e.kind == LogKind::kChildFailed ||
                 e.kind == LogKind::kLauncherSignal || e.kind == LogKind::kNcclError ||
                 e.kind == LogKind::kSocketError) {
        host_events_.push_back(&e);
      }
      if (!e.pg.empty() && valid_rank(e.rank) && !e.pg_default) pg_members_[e.pg].insert(e.rank);
      if (e.kind == LogKind::kPgInit && e.other_rank >= 0 && !e.pg.empty() && !e.pg_default)
        pg_members_[e.pg].insert(e.other_rank);
    }
    for (const auto& l : c_.launch_failures) {
      if (valid_rank(l.rank) && !l.host.empty() && rs_[l.rank].host.empty()) rs_[l.rank].host = l.host;
    }
    for (const auto& [pid, rank] : pid_rank_) {
      if (valid_rank(rank)) rs_[rank].pids.insert(pid);
    }
  }

  // ---- per-rank failures --------------------------------------------------------------------

  Fail make_fail(const LogEvent& e, int rank) const {
    Fail f;
    f.ev = &e;
    f.rank = rank;
    f.has_t = e.has_t;
    f.exact = e.t_exact;
    f.t = e.t;
    f.res = e.t_res;
    f.file = e.file;
    f.line = e.line;
    f.ref = ref(e);
    f.host = e.host.empty() && valid_rank(rank) ? rs_[rank].host : e.host;
    f.signal = e.signal;
    f.code = e.code;
    return f;
  }

  static std::string short_text(const std::string& s, size_t n = 160) {
    if (s.size() <= n) return s;
    return s.substr(0, n) + "...";
  }

  // Role and meaning of an event on a rank; kInfo for what is not a failure. What the
  // pattern table says the line proves overrides the kind's default category and cause.
  void describe(const LogEvent& e, Fail& f) const {
    describe_kind(e, f);
    if (f.role == Role::kInfo) return;
    if (!e.cause.empty()) f.cause = e.cause;
    if (!e.category.empty()) f.category = e.category;
  }

  void describe_kind(const LogEvent& e, Fail& f) const {
    const std::string txt = short_text(e.text);
    switch (e.kind) {
      case LogKind::kCudaOom:
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = "cuda_oom";
        f.strength = 3;
        f.what = "CUDA out of memory: " + txt;
        return;
      case LogKind::kOomKill:
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = "oom";
        f.strength = 3;
        f.signal = 9;
        f.what = e.pid >= 0 ? fmt::format("OOM-killed by the kernel (pid {}{})", e.pid,
                                          e.word.empty() ? "" : ", " + e.word)
                            : "OOM-killed: " + txt;
        return;
      case LogKind::kCudaError:
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = "cuda_error";
        f.strength = 3;
        f.what = "CUDA error: " + txt;
        return;
      case LogKind::kCrash:
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = e.signal == 11 ? "segfault" : "crashed";
        f.strength = 3;
        f.what = fmt::format("crashed ({}): {}", signal_name(e.signal), txt);
        return;
      case LogKind::kTerminate:
        // A communication exception nobody caught is the collective's failure, not a crash.
        if (e.word.find("DistBackendError") != std::string::npos || e.word.find("IoException") != std::string::npos ||
            e.word.find("DistNetworkError") != std::string::npos || e.word.find("DistStoreError") != std::string::npos) {
          f.role = Role::kEcho;
          f.what = "aborted after a collective error: " + txt;
        } else {
          f.role = Role::kRoot;
          f.category = "rank_exit";
          f.cause = "crashed";
          f.strength = 2;
          f.what = "std::terminate: " + txt;
        }
        return;
      case LogKind::kException:
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = "exception";
        f.strength = 1;
        f.what = "exception: " + txt;
        return;
      case LogKind::kDataError:
        f.role = Role::kRoot;
        f.category = "data_loading";
        f.cause = "data_error";
        f.strength = 1;
        f.what = txt;
        return;
      case LogKind::kUsageError:
        f.role = Role::kRoot;
        f.category = "rank_exit";
        f.cause = "usage_error";
        f.strength = 1;
        f.what = txt;
        return;
      case LogKind::kDataLoaderKilled:
        f.role = Role::kRoot;
        f.category = "data_loading";
        f.cause = e.signal == 7 ? "shm_exhausted" : e.signal == 9 ? "oom" : "data_loader_crash";
        f.strength = 2;
        f.what = "DataLoader worker died: " + txt;
        return;
      case LogKind::kShmBusError:
        f.role = Role::kRoot;
        f.category = "data_loading";
        f.cause = "shm_exhausted";
        f.strength = 2;
        f.what = "DataLoader worker bus error (insufficient /dev/shm): " + txt;
        return;
      case LogKind::kResourceLimit:
        f.role = Role::kRoot;
        f.category = "resource_limit";
        f.cause = "resource_limit";
        f.strength = 2;
        f.what = "a resource limit ended the job: " + txt;
        return;
      case LogKind::kDiskFull:
        f.role = Role::kRoot;
        f.category = "resource_limit";
        f.cause = "disk_full";
        f.strength = 2;
        f.what = "disk full: " + txt;
        return;
      case LogKind::kShmError:
        f.role = Role::kRoot;
        f.category = "resource_limit";
        f.cause = "nccl_shm";
        f.strength = 2;
        f.what = "NCCL could not create its shared-memory segment: " + txt;
        return;
      case LogKind::kWrongIfname:
        f.role = Role::kRoot;
        f.category = "network";
        f.cause = "wrong_ifname";
        f.strength = 2;
        f.what = "no usable network interface: " + txt;
        return;
      case LogKind::kIbError:
        f.role = Role::kRoot;
        f.category = "network";
        f.cause = "ib_error";
        f.strength = 1;
        f.what = "InfiniBand/RoCE transport error: " + txt;
        return;
      case LogKind::kAddressInUse:
        f.role = Role::kRoot;
        f.category = "rendezvous";
        f.cause = "address_in_use";
        f.strength = 1;
        f.what = txt;
        return;
      case LogKind::kDnsFailure:
        f.role = Role::kRoot;
        f.category = "rendezvous";
        f.cause = "dns_failure";
        f.strength = 1;
        f.what = txt;
        return;
      case LogKind::kStoreRefused:
        f.role = Role::kEcho;
        f.category = "rendezvous";
        f.cause = "connection_refused";
        f.what = txt;
        return;
      case LogKind::kStoreTimeout:
        f.role = Role::kEcho;
        f.category = "rendezvous";
        f.cause = "rendezvous_timeout";
        f.what = txt;
        return;
      case LogKind::kRendezvousError:
        f.role = Role::kEcho;
        f.category = "rendezvous";
        f.cause = "rendezvous_error";
        f.what = txt;
        return;
      case LogKind::kWatchdogTimeout:
        f.role = Role::kEcho;
        f.what = e.seq >= 0 ? fmt::format("watchdog timeout in {} SeqNum={}{} after {} ms",
                                          e.op.empty() ? "?" : e.op, e.seq,
                                          e.numel_in >= 0 ? fmt::format(" NumelIn={}", e.numel_in) : "",
                                          e.ran_ms >= 0 ? e.ran_ms : e.timeout_ms)
                            : "watchdog timeout: " + txt;
        return;
      case LogKind::kGlooTimeout:
        f.role = Role::kEcho;
        f.what = txt;
        return;
      case LogKind::kCommClosed:
      case LogKind::kNcclRemoteError:
      case LogKind::kNcclSystemError:
      case LogKind::kNcclError:
      case LogKind::kSocketError:
      case LogKind::kCommException:
      case LogKind::kCommAborted:
      case LogKind::kNcclAsyncFailed:
      case LogKind::kHeartbeatMonitor:
      case LogKind::kWatchdogRepeat:
      case LogKind::kChildFailed:
        f.role = Role::kEcho;
        f.what = txt;
        return;
      case LogKind::kSignalException:
        f.role = Role::kTeardown;
        f.what = fmt::format("received {} ({})", signal_name(e.signal), txt);
        return;
      case LogKind::kLauncherSignal:
        f.role = Role::kTeardown;
        f.what = fmt::format("the launcher sent {} (pid {}): teardown", e.word.empty() ? "a signal" : e.word, e.pid);
        return;
      case LogKind::kLauncherExit:
      case LogKind::kSignalReceived:
      case LogKind::kMpiExit:
      case LogKind::kSrunTask:
      case LogKind::kExitStatus:
        f.role = Role::kExit;
        exit_meaning(e.signal, e.code, f);
        f.what += fmt::format(" ({})", txt);
        return;
      default:
        f.role = Role::kInfo;
        return;
    }
  }

  // Exit statuses: a signal death is a root candidate; a plain non-zero code is an exit
  // (root only when nothing else explains it).
  static void exit_meaning(int signal, int code, Fail& f) {
    if (!signal && code != kNoCode && code > 128 && code < 160) signal = code - 128;  // 137 = 128+9
    f.signal = signal;
    f.code = code;
    if (signal) {
      f.category = "rank_exit";
      f.cause = signal == 9 ? "killed" : (signal == 15 || signal == 2 || signal == 1) ? "killed" : signal == 11 ? "segfault" : "crashed";
      f.strength = 2;
      f.what = fmt::format("exited by {}{}", signal_name(signal),
                           code != kNoCode && code > 0 ? fmt::format(" (exit code {})", code) : "");
    } else {
      f.category = "rank_exit";
      f.cause = "nonzero_exit";
      f.what = fmt::format("exited with code {}", code == kNoCode ? -1 : code);
    }
  }

  void derive() {
    // Launcher summary entries become exits of their rank.
    for (const auto& l : c_.launch_failures) {
      if (!valid_rank(l.rank)) continue;
      Fail f;
      f.rank = l.rank;
      f.role = Role::kExit;
      f.has_t = l.has_t;
      f.t = l.t;
      f.res = 1.0;  // torchrun prints whole seconds
      f.file = l.file;
      f.line = l.line;
      f.ref = ref(l.file, l.line);
      f.host = l.host;
      exit_meaning(l.signal, l.code, f);
      f.what += " (torchrun failure summary" + (l.traceback.empty() ? std::string(")") : ": " + l.traceback + ")");
      auto& s = rs_[l.rank];
      if (!s.exit_code && !s.exit_signal) {
        if (f.signal) {
          s.exit_signal = f.signal;
        } else {
          s.exit_code = f.code;
        }
        s.exit_ref = f.ref;
      }
      s.fails.push_back(std::move(f));
    }
    std::set<long long> sigtermed;  // pids the launcher sent SIGTERM to
    for (const auto& e : c_.events) {
      if (e.kind == LogKind::kLauncherSignal && e.pid >= 0) sigtermed.insert(e.pid);
    }
    anon_.rank = -1;
    std::vector<RankState*> states;
    for (auto& s : rs_) states.push_back(&s);
    states.push_back(&anon_);
    for (RankState* sp : states) {
      RankState& s = *sp;
      // The unattributed lines may be several processes' (NCCL's "host:pid:tid" prefix):
      // an echo makes what follows an aftermath only in its own process.
      const bool anon = sp == &anon_;
      const auto writer = [anon](const LogEvent* ev) { return anon && ev ? ev->pid : -1LL; };
      std::set<long long> echoed_by;
      for (const LogEvent* e : s.evs) {
        const bool echoed = echoed_by.count(writer(e)) > 0;
        switch (e->kind) {
          case LogKind::kDone:
            s.clean_end = true;
            s.end_step = e->step;
            s.end_total = e->total_steps;
            s.end_ref = ref(*e);
            s.end_t = e->t;
            s.end_has_t = e->has_t;
            continue;
          case LogKind::kLeftLoop:
            if (!s.left_loop) {
              s.left_loop = true;
              s.end_ref = ref(*e);
              s.end_t = e->t;
              s.end_has_t = e->has_t;
            }
            continue;
          default:
            break;
        }
        Fail f = make_fail(*e, s.rank);
        describe(*e, f);
        if (f.role == Role::kInfo) continue;
        if (f.role == Role::kExit) {
          // A death by signal after the launcher's SIGTERM to the same pid is the teardown.
          if (e->pid >= 0 && sigtermed.count(e->pid) && (f.signal == 15 || f.signal == 9)) f.role = Role::kTeardown;
          if (!s.exit_code && !s.exit_signal) {
            if (f.signal) {
              s.exit_signal = f.signal;
            } else if (f.code != kNoCode) {
              s.exit_code = f.code;
            }
            s.exit_ref = f.ref;
          }
        }
        // A rank that already failed while waiting: what follows on it is the echo's
        // aftermath (SIGABRT from the watchdog, exit 1, "terminate called").
        if (echoed && (f.role == Role::kRoot || f.role == Role::kExit)) f.role = Role::kEcho;
        if (f.role == Role::kEcho) echoed_by.insert(writer(e));
        if ((e->kind == LogKind::kGlooTimeout || e->kind == LogKind::kCommClosed || e->kind == LogKind::kStoreTimeout ||
             e->kind == LogKind::kRendezvousError || e->kind == LogKind::kException ||
             e->kind == LogKind::kDataError || e->kind == LogKind::kUsageError || e->kind == LogKind::kCudaError ||
             e->kind == LogKind::kCudaOom) &&
            e->code != kNoCode && !s.exit_code && !s.exit_signal) {
          s.exit_code = e->code;  // the hanglab workloads exit right after their ERROR line
          s.exit_ref = ref(*e);
        }
        s.fails.push_back(std::move(f));
      }
      std::stable_sort(s.fails.begin(), s.fails.end(), [](const Fail& a, const Fail& b) {
        if (a.has_t && b.has_t && a.t != b.t) return a.t < b.t;
        if (a.has_t != b.has_t) return a.has_t;
        return std::tie(a.file, a.line) < std::tie(b.file, b.line);
      });
      // Re-apply "after an echo" in time order (summary entries were appended first); a
      // launcher's exit notice of a rank that failed waiting is that failure's aftermath
      // whatever its (whole-second) time says.
      std::set<long long> seen_echo;
      std::set<long long> any_echo;
      for (const auto& f : s.fails)
        if (f.role == Role::kEcho) any_echo.insert(writer(f.ev));
      for (auto& f : s.fails) {
        const long long w = writer(f.ev);
        if (seen_echo.count(w) && (f.role == Role::kRoot || f.role == Role::kExit) && f.strength < 3)
          f.role = Role::kEcho;
        if (any_echo.count(w) && f.role == Role::kExit) f.aftermath = true;
        if (f.role == Role::kEcho) seen_echo.insert(w);
      }
    }
    for (const RankState* sp : states) {
      const RankState& s = *sp;
      if (s.log && s.log->n_steps > 0) training_started_ = true;
      for (const LogEvent* e : s.evs) {
        if (e->kind == LogKind::kInitDone || e->kind == LogKind::kWatchdogTimeout ||
            (e->seq >= 0 && (e->kind == LogKind::kGlooTimeout || e->kind == LogKind::kCommClosed)) ||
            e->kind == LogKind::kDone || e->kind == LogKind::kPgInit || e->kind == LogKind::kCollMismatch)
          training_started_ = true;
      }
    }
    if (c_.unattributed_steps > 0 || c_.progress_lines > 0) training_started_ = true;
    // "last completed NCCL work: 136" (a dump signal, a watchdog's status): collectives ran.
    for (const auto& e : c_.events) {
      if ((e.kind == LogKind::kDumpSignal || e.kind == LogKind::kWorkStatus) && e.last_completed >= 1)
        training_started_ = true;
      // The heartbeat monitor's "workMetaList_.size()=103": that many collectives in flight.
      // One can be the job's first (the init barrier); several mean it was issuing them.
      if (e.kind == LogKind::kHeartbeatMonitor && e.pending >= 2) training_started_ = true;
    }
    for (const auto& e : c_.events) {
      if (init_event(e)) {
        init_seen_ = true;
        break;
      }
    }
    // The unattributed lines speak when no rank's own lines explain the failure.
    const auto rootish = [](const Fail& f) {
      return f.role == Role::kRoot || (f.role == Role::kExit && (f.signal || (f.code != kNoCode && f.code != 0)));
    };
    const auto failing = [](const Fail& f) { return f.role != Role::kInfo && f.role != Role::kTeardown; };
    bool ranked_fail = false, ranked_root = false;
    for (const auto& s : rs_) {
      for (const auto& f : s.fails) {
        ranked_fail |= failing(f);
        ranked_root |= rootish(f) && !f.aftermath;
      }
    }
    const bool anon_fail = std::any_of(anon_.fails.begin(), anon_.fails.end(), failing);
    // A SIGABRT next to ranks' own timeouts is the watchdog taking the process down: their
    // echo's aftermath, not a root of its own (srun's "Aborted (core dumped)").
    const bool anon_root = std::any_of(anon_.fails.begin(), anon_.fails.end(), [&](const Fail& f) {
      return rootish(f) && !f.aftermath && !(ranked_fail && f.signal == 6);
    });
    use_anon_ = anon_fail && (!ranked_fail || (!ranked_root && anon_root));
  }

  // A line that only init writes: the store, the interface, the communicator's setup.
  static bool init_event(const LogEvent& e) {
    switch (e.kind) {
      case LogKind::kStoreTimeout:
      case LogKind::kStoreRefused:
      case LogKind::kRendezvousError:
      case LogKind::kWrongIfname:
      case LogKind::kShmError:
      case LogKind::kAddressInUse:
      case LogKind::kDnsFailure:
      case LogKind::kInitStep:
        return true;
      default:
        break;
    }
    for (const char* w : {"init_process_group", "ncclCommInitRank", "setting up NCCL communicator", "ncclUniqueId",
                          "connectFullMesh", "Bootstrap"}) {
      if (e.text.find(w) != std::string::npos) return true;
    }
    return false;
  }

  // ---- collectives --------------------------------------------------------------------------

  void find_collectives() {
    std::map<std::pair<int, std::string>, size_t> have;  // (rank, PG) -> its report
    for (const auto& s : rs_) {
      for (const LogEvent* e : s.evs) {
        bool coll = ((e->kind == LogKind::kWatchdogTimeout || e->kind == LogKind::kWatchdogRepeat) && e->seq >= 0) ||
                    (e->seq >= 0 && !e->op.empty() &&
                     (e->kind == LogKind::kGlooTimeout || e->kind == LogKind::kCommClosed ||
                      e->kind == LogKind::kCommException || e->kind == LogKind::kException)) ||
                    (e->kind == LogKind::kWorkStatus && e->seq >= 0);
        // Gloo's own errors carry no sequence number: one unnamed collective (seq 0).
        const bool seqless = !coll && e->seq < 0 &&
                             (e->kind == LogKind::kGlooTimeout || e->kind == LogKind::kCommClosed ||
                              (e->kind == LogKind::kCommException &&
                               (e->text.find("Timed out waiting") != std::string::npos ||
                                e->text.find("Connection closed") != std::string::npos ||
                                e->text.find("Connection reset") != std::string::npos)));
        // A dump signal's "last enqueued NCCL work: N, last completed: N-1": inside collective N.
        const bool inside = !coll && !seqless && e->kind == LogKind::kDumpSignal && e->last_enqueued >= 0 &&
                            e->last_completed >= 0 && e->last_enqueued > e->last_completed;
        if (!coll && !seqless && !inside) continue;
        if (seqless && s.fails.empty()) continue;
        const std::string pg = pg_key(*e);
        if (auto it = have.find({s.rank, pg}); it != have.end()) {
          // A later line may complete what a truncated one left out.
          CollReport& rep = reports_[it->second];
          if (rep.seq == e->seq && rep.op.empty() && !e->op.empty()) {
            rep.op = e->op;
            rep.numel_in = e->numel_in;
            rep.numel_out = e->numel_out;
            rep.fields_complete = !e->partial;
          }
          continue;
        }
        have.emplace(std::make_pair(s.rank, pg), reports_.size());
        CollReport rep;
        rep.rank = s.rank;
        rep.pg = pg;
        rep.seq = seqless ? 0 : inside ? e->last_enqueued : e->seq;
        rep.op = e->op;
        rep.numel_in = e->numel_in;
        rep.numel_out = e->numel_out;
        rep.fields_complete = !e->partial && !e->op.empty();
        rep.ev = e;
        rep.step = e->step;
        reports_.push_back(rep);
        reporters_.insert(s.rank);
      }
    }
    for (size_t i = 0; i < reports_.size(); ++i) report_index_.emplace(reports_[i].rank, i);
    if (reports_.empty()) return;
    // The main PG: the default one when reported, else the one most ranks report.
    std::map<std::string, int> count;
    for (const auto& rep : reports_) ++count[rep.pg];
    main_pg_ = count.count("default") ? "default" : std::max_element(count.begin(), count.end(), [](auto& a, auto& b) {
                                                      return a.second < b.second;
                                                    })->first;
    std::map<long long, int> by_seq;
    for (const auto& rep : reports_) {
      if (rep.pg == main_pg_) ++by_seq[rep.seq];
    }
    stuck_seq_ = std::max_element(by_seq.begin(), by_seq.end(), [](auto& a, auto& b) {
                   return a.second < b.second;
                 })->first;
    for (const auto& rep : reports_) {
      if (rep.pg == main_pg_ && rep.seq == stuck_seq_) waiting_.push_back(rep.rank);
    }
    std::sort(waiting_.begin(), waiting_.end());
    // Missing by absence: members of a reporting PG that reported no collective failure
    // anywhere (a rank stuck in another PG's collective is waiting, not missing) and did
    // not leave the loop.
    std::set<int> candidates;
    for (const auto& [pg, n] : count) {
      if (pg == "default") {
        for (int i = 0; i < world_; ++i) candidates.insert(i);
      } else if (auto it = pg_members_.find(pg); it != pg_members_.end()) {
        candidates.insert(it->second.begin(), it->second.end());
      }
    }
    for (int rank : candidates) {
      if (!valid_rank(rank) || reporters_.count(rank)) continue;
      absent_.push_back(rank);
    }
  }

  // "ALLREDUCE SeqNum 1423", "BARRIER SeqNum 7 of PG 1", "a collective (no SeqNum in the logs)"
  std::string stuck_name() const {
    if (stuck_seq_ < 0) return "no collective";
    const std::string op = r_.stuck_collective ? r_.stuck_collective->op : "";
    if (stuck_seq_ == 0) return op.empty() ? "a collective (no SeqNum in the logs)" : op + " (no SeqNum in the logs)";
    return fmt::format("{} SeqNum {}{}", op.empty() ? "the collective" : op, stuck_seq_,
                       main_pg_ == "default" ? "" : " of PG " + main_pg_);
  }

  // A rank's reports (one per PG); indexed, since 16k ranks x 16k reports would not do.
  std::vector<const CollReport*> reports_of(int rank) const {
    std::vector<const CollReport*> v;
    auto [b, e] = report_index_.equal_range(rank);
    for (auto it = b; it != e; ++it) v.push_back(&reports_[it->second]);
    return v;
  }

  const CollReport* report_of(int rank, const std::string& pg) const {
    auto [b, e] = report_index_.equal_range(rank);
    for (auto it = b; it != e; ++it) {
      if (reports_[it->second].pg == pg) return &reports_[it->second];
    }
    return nullptr;
  }

  void set_stuck() {
    if (stuck_seq_ < 0) return;
    StuckCollective sc;
    sc.seq = stuck_seq_;
    const CollReport* first = report_of(waiting_.front(), main_pg_);
    sc.op = first ? first->op : "";
    for (int rank : waiting_) {
      const CollReport* rep = report_of(rank, main_pg_);
      if (rep && !rep->op.empty()) {
        sc.op = rep->op;
        break;
      }
    }
    sc.waiting_ranks = waiting_;
    sc.absent_ranks = absent_;
    r_.stuck_collective = sc;
  }

  // ---- classification -----------------------------------------------------------------------

  void classify() {
    set_stuck();
    if (try_duplicate()) return;
    if (!training_started_ && try_init()) return;
    if (try_mismatch()) return;
    if (try_ahead()) return;
    const Fail* root = first_root();
    if (root && aborted_together(*root)) return set_aborted_together(*root);
    if (root && root_precedes_echoes(*root)) return set_root(*root, true);
    if (try_vanished()) return;
    if (try_absent()) return;
    if (try_all_waiting()) return;
    if (try_stall_check()) return;
    if (try_no_failure()) return;
    if (root) return set_root(*root, false);
    set_unknown();
  }

  // Ranks whose only trace is the launcher's "exitcode -6" (SIGABRT), several at the same
  // second: ProcessGroupNCCL's watchdog aborts every rank after a collective timeout. They
  // died together of one cause that is not among them.
  std::vector<int> together_;
  bool aborted_together(const Fail& root) {
    if (root.ev || root.role != Role::kExit || root.signal != 6 || !root.has_t) return false;
    together_.clear();
    for (const auto& l : c_.launch_failures) {
      if (l.signal == 6 && l.has_t && std::fabs(l.t - root.t) <= 1.0 && valid_rank(l.rank) &&
          std::find(together_.begin(), together_.end(), l.rank) == together_.end())
        together_.push_back(l.rank);
    }
    if (together_.size() < 2) return false;
    for (int r : together_) {
      for (const auto& f : rs_[r].fails) {
        if (f.ev) return false;  // a rank with its own error line: the ordinary rules decide
      }
    }
    std::sort(together_.begin(), together_.end());
    return true;
  }

  void set_aborted_together(const Fail& root) {
    r_.category = "unknown";
    r_.cause = "unknown";
    r_.confidence = "low";
    // The watchdog aborts after a collective timed out: collectives were running, which is
    // training by the same rule as a WorkNCCL timeout line (unless init lines say otherwise).
    r_.phase = training_started_ || init_seen_ ? default_phase() : "training";
    every_rank_reported_ = true;  // the watchdog aborts every rank it finds stuck
    set_first_unblamed(root);
    add_evidence(root.ref, fmt::format("{} exited by SIGABRT at the same second ({}), none with an error of its own",
                                       ranks_phrase(together_), clock(root.t, 1.0)));
    note("SIGABRT on several ranks at once is ProcessGroupNCCL's watchdog taking each process down after a "
         "collective timeout: an echo; torchrun's \"Root Cause\" is only the first it noticed. The rank that "
         "caused the timeout is not in these logs");
    r_.summary = fmt::format("unknown: {} aborted together (the watchdog's SIGABRT after a collective timeout); the "
                             "cause is not in these logs",
                             ranks_phrase(together_));
  }

  std::vector<const Fail*> all_fails() const {
    std::vector<const Fail*> v;
    for (const auto& s : rs_) {
      for (const auto& f : s.fails) v.push_back(&f);
    }
    if (use_anon_) {
      for (const auto& f : anon_.fails) v.push_back(&f);
    }
    std::stable_sort(v.begin(), v.end(), [](const Fail* a, const Fail* b) {
      if (a->has_t && b->has_t && a->t != b->t) return a->t < b->t;
      if (a->has_t != b->has_t) return a->has_t;
      if (a->file != b->file) return a->file < b->file;
      return a->line < b->line;
    });
    return v;
  }

  // The earliest root candidate: real failures first (OOM, CUDA, crash, kill, exception);
  // a plain non-zero exit only when no rank logged anything stronger.
  const Fail* first_root() const {
    const Fail* best = nullptr;
    for (const Fail* f : all_fails()) {
      if (f->aftermath) continue;
      if (f->role != Role::kRoot && !(f->role == Role::kExit && f->signal && f->signal != 15 && f->signal != 2)) continue;
      if (!best) {
        best = f;
        continue;
      }
      // Among roots that overlap in time, the stronger kind is the cause (the kernel's
      // OOM kill over the exit status the launcher noticed later).
      if (!before(*best, *f) && f->strength > best->strength && f->rank == best->rank) best = f;
      // An exception exits with a code, never by SIGKILL. The shell's own "Killed" after it (in
      // the process's stream) means the process was SIGKILLed while its shell lived: the OOM
      // killer or a deliberate kill, not a job teardown (which takes the shell too, and which
      // srun/torchrun/Kubernetes report instead): it died of the kill.
      else if (best->strength == 1 && best->role == Role::kRoot && f->rank == best->rank && f->signal == 9 &&
               f->ev && f->ev->kind == LogKind::kExitStatus && f->ev->code == kNoCode)
        best = f;
      // A SIGKILL and the kernel's (or cgroup's) OOM kill of the same process are one death,
      // whichever line was written first: the OOM kill names why.
      else if (best->signal == 9 && best->role == Role::kExit && f->rank == best->rank && f->ev &&
               f->ev->kind == LogKind::kOomKill)
        best = f;
    }
    if (best) return best;
    for (const Fail* f : all_fails()) {
      if (f->role == Role::kExit && !f->aftermath && f->code != kNoCode && f->code != 0) return f;
    }
    return nullptr;
  }

  // No other rank had failed on its own well before the root. A launcher's notice of a
  // death ("exited on signal 9", torchrun's summary) is written after the fact: the death
  // is bounded by the rank's last own line instead.
  bool root_precedes_echoes(const Fail& root) const {
    Fail bound = root;
    if (root.role == Role::kExit && valid_rank(root.rank) && rs_[root.rank].seen()) {
      const RankLog& g = *rs_[root.rank].log;
      bound.has_t = g.has_last_t;
      bound.t = g.last_t;
      bound.res = 0;
      bound.file = g.last_file;
      bound.line = g.last_line;
    }
    for (const Fail* f : all_fails()) {
      if (f->rank == root.rank || f->role != Role::kEcho) continue;
      const bool cross_host = f->host.empty() || root.host.empty() || f->host != root.host;
      if (before(*f, bound, cross_host ? kSkewS : 0.05)) return false;
    }
    return true;
  }

  // The phase when no rank's state says more: training once a step or collective is seen,
  // init only when a line proves it, else unknown.
  std::string default_phase() const {
    if (use_anon_) {
      switch (c_.unattributed_phase) {
        case LogKind::kCheckpointBegin: return "checkpoint";
        case LogKind::kEvalBegin: return "eval";
        case LogKind::kShutdown: return "shutdown";
        default: break;
      }
    }
    return training_started_ ? "training" : init_seen_ ? "init" : "unknown";
  }

  std::string phase_of_rank(const RankState& s) const {
    if (!s.log) return default_phase();
    switch (s.log->phase) {
      case LogKind::kCheckpointBegin: return "checkpoint";
      case LogKind::kEvalBegin: return "eval";
      case LogKind::kDataWait: return "data";
      case LogKind::kShutdown: return "shutdown";
      default: break;
    }
    if (s.log->n_steps == 0 && !training_started_) return default_phase();
    return "training";
  }

  // The last phase marker before a hang: a waiting rank's own, or the paste's unattributed
  // one, when no step line followed it (the save, then the collective that never completed).
  struct Marker {
    LogKind kind = LogKind::kNone;
    int rank = -1;
    std::string ref;
    std::string text;
  };
  static bool step_after(const RankLog& g) {
    for (const auto& st : g.recent) {
      if (st.file == g.phase_file ? st.line > g.phase_line : (st.has_t && g.phase_has_t && st.t > g.phase_t))
        return true;
    }
    return false;
  }
  std::optional<Marker> stuck_marker() const {
    for (const auto& s : rs_) {
      if (!s.log || s.log->phase == LogKind::kNone || step_after(*s.log)) continue;
      if (marker_phase(s.log->phase) == "training") continue;
      return Marker{s.log->phase, s.rank, ref(s.log->phase_file, s.log->phase_line), s.log->phase_text};
    }
    if (c_.unattributed_phase != LogKind::kNone && !c_.unattributed_phase_stepped &&
        marker_phase(c_.unattributed_phase) != "training")
      return Marker{c_.unattributed_phase, -1, ref(c_.unattributed_phase_file, c_.unattributed_phase_line),
                    c_.unattributed_phase_text};
    return std::nullopt;
  }
  // A checkpoint's end with nothing after it still names the save: its closing barrier, or
  // the first collective after it, is what hung.
  static std::string marker_phase(LogKind k) {
    switch (k) {
      case LogKind::kCheckpointBegin:
      case LogKind::kCheckpointEnd: return "checkpoint";
      case LogKind::kEvalBegin: return "eval";
      case LogKind::kDataWait: return "data";
      case LogKind::kShutdown: return "shutdown";
      default: return "training";
    }
  }

  void set_first(const Fail& f) {
    r_.first_failure = Failure{f.rank, f.has_t ? f.t : 0, f.what, f.ref, !f.has_t || f.exact};
    first_key_ = fmt::format("{}/{}", f.rank, f.ref);
  }

  int last_good_step() const {
    int lg = -1;
    int loggers = 0;
    for (const auto& s : rs_) {
      if (!s.log || s.log->n_steps == 0) continue;
      ++loggers;
      lg = lg < 0 ? s.log->last_step : std::min(lg, s.log->last_step);
    }
    return std::max(lg, 0);
  }

  // ---- duplicate RANK ----------------------------------------------------------------------

  // The same rank's start-up line in two files while some rank of the world never logged:
  // two processes were started with one RANK (a copy-pasted launch line or node_rank).
  bool try_duplicate() {
    std::map<int, std::vector<const WorldHint*>> starts;
    for (const auto& h : c_.world_hints) {
      if (!valid_rank(h.rank)) continue;
      auto& v = starts[h.rank];
      if (std::none_of(v.begin(), v.end(), [&](const WorldHint* x) { return x->file == h.file; })) v.push_back(&h);
    }
    const WorldHint* a = nullptr;
    const WorldHint* b = nullptr;
    int dup = -1;
    for (const auto& [rank, v] : starts) {
      if (v.size() >= 2) {
        dup = rank;
        a = v[0];
        b = v[1];
        break;
      }
    }
    if (dup < 0 || !world_stated_) return false;
    std::vector<int> silent;
    for (const auto& s : rs_) {
      if (!s.seen()) silent.push_back(s.rank);
    }
    if (silent.empty() || !silence_proves(silent.size())) return false;
    r_.category = "rendezvous";
    r_.cause = "duplicate_rank";
    r_.phase = training_started_ ? "training" : "init";
    r_.missing_ranks = silent;
    r_.confidence = "high";
    Fail f;
    f.rank = dup;
    f.has_t = false;
    f.ref = ref(b->file, b->line);
    f.what = fmt::format("started twice: {} and {} both start as rank {}", c_.files[a->file].name,
                         c_.files[b->file].name, dup);
    set_first(f);
    add_evidence(ref(a->file, a->line), fmt::format("rank {} starts here: {}", dup, short_text(a->text)));
    add_evidence(ref(b->file, b->line), fmt::format("and again here: {}", short_text(b->text)));
    add_evidence(fmt::format("(no log of rank {})", silent.front()),
                 fmt::format("{} never logged a line in a world of {}", ranks_phrase(silent), world_));
    for (const Fail* e : all_fails()) {
      if (e->role == Role::kEcho || e->role == Role::kRoot) {
        add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, short_text(e->what)));
        break;
      }
    }
    r_.summary = fmt::format("rendezvous (duplicate_rank): rank {} was started twice; {} never started", dup,
                             ranks_phrase(silent));
    return true;
  }

  // ---- init ------------------------------------------------------------------------------

  bool try_init() {
    std::vector<const Fail*> init_fails;
    for (const Fail* f : all_fails()) {
      if (f->category == "rendezvous" || f->cause == "wrong_ifname" || f->cause == "nccl_shm" ||
          (f->ev && (f->ev->kind == LogKind::kStoreTimeout || f->ev->kind == LogKind::kRendezvousError)))
        init_fails.push_back(f);
    }
    // Also host-level interface/shm lines that could not be attributed.
    const LogEvent* host_env = nullptr;
    for (const LogEvent* e : host_events_) {
      if (e->kind == LogKind::kWrongIfname || e->kind == LogKind::kShmError) {
        host_env = e;
        break;
      }
    }
    if (init_fails.empty() && !host_env) return false;
    r_.phase = "init";
    static const std::vector<std::string> kOrder = {"wrong_ifname",       "address_in_use", "dns_failure",
                                                    "connection_refused", "nccl_shm",       "unique_id_exchange",
                                                    "rendezvous_timeout", "store_timeout",  "rendezvous_error"};
    const Fail* pick = nullptr;
    for (const auto& cause : kOrder) {
      for (const Fail* f : init_fails) {
        if (f->cause == cause) {
          pick = f;
          break;
        }
      }
      if (pick) break;
    }
    if (!pick && !init_fails.empty()) pick = init_fails.front();  // a cause the order does not list
    Fail host_fail;
    if (!pick && host_env) {
      host_fail = make_fail(*host_env, -1);
      describe(*host_env, host_fail);
      pick = &host_fail;
    }
    r_.cause = pick->cause;
    // A bus error in NCCL's threads may come at any time, not only while a communicator is set up.
    if (pick->ev && pick->ev->kind == LogKind::kCrash) r_.phase = default_phase();
    // The store torchrun's c10d rendezvous connects to is the rendezvous itself.
    if (r_.cause == "store_timeout") {
      for (const Fail* f : init_fails) {
        if (f->ev && f->ev->kind == LogKind::kRendezvousError && f->ev->text.find("Rendezvous") != std::string::npos)
          r_.cause = "rendezvous_timeout";
      }
    }
    r_.category = !pick->category.empty()          ? pick->category
                  : pick->cause == "wrong_ifname" ? "network"
                  : pick->cause == "nccl_shm"     ? "resource_limit"
                                                  : "rendezvous";
    // Who never showed up: ranks of a stated world without a single line; a store's
    // "N/M clients joined" says how many.
    std::vector<int> silent;
    for (const auto& s : rs_) {
      if (!s.seen()) silent.push_back(s.rank);
    }
    int joined = -1, of = -1;
    const LogEvent* joined_ev = nullptr;
    for (const Fail* f : init_fails) {
      if (f->ev && f->ev->joined >= 0) {
        joined = f->ev->joined;
        of = f->ev->world;
        joined_ev = f->ev;
        break;
      }
    }
    std::vector<int> failed_ranks;
    for (const Fail* f : init_fails) {
      if (f->rank >= 0 && std::find(failed_ranks.begin(), failed_ranks.end(), f->rank) == failed_ranks.end())
        failed_ranks.push_back(f->rank);
    }
    std::sort(failed_ranks.begin(), failed_ranks.end());
    if (joined_ev && of > joined && joined >= 0) partial_join_ = true;
    if (joined_ev) {
      add_evidence(ref(*joined_ev), fmt::format("{} of {} ranks joined the store: {}", joined, of,
                                                short_text(joined_ev->text)));
    }
    if (world_stated_ && silence_proves(silent.size()) &&
        (joined < 0 || of - joined == static_cast<int>(silent.size()))) {
      r_.missing_ranks = silent;
      r_.confidence = "high";
      add_evidence(fmt::format("(no log of rank {})", silent.front()),
                   fmt::format("{} wrote no line at all in a world of {}: never started or never reached "
                               "rendezvous",
                               ranks_phrase(silent), world_));
      Fail f;
      f.rank = silent.front();
      f.what = "never started: no log line at all";
      f.ref = fmt::format("(no log of rank {})", silent.front());
      set_first(f);
    } else {
      if (joined >= 0 && of > joined) {
        note(fmt::format("the store counted {} of {} clients, but which rank is missing is not in these logs", joined,
                         of));
      }
      r_.confidence = pick->ev && pick->ev->kind != LogKind::kStoreTimeout ? "high" : "medium";
      set_first(*pick);
    }
    add_evidence(pick->ref, (pick->rank >= 0 ? fmt::format("rank {}: ", pick->rank) : std::string()) + pick->what);
    if (!r_.missing_ranks.empty() && pick->cause != "rendezvous_timeout" && pick->cause != "rendezvous_error") {
      // An explicit cause (interface, port) with silent ranks: both are reported.
      note(fmt::format("{} also never logged", ranks_phrase(r_.missing_ranks)));
    }
    static const std::map<std::string, const char*> kWhy = {
        {"wrong_ifname", "no usable socket interface (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME)"},
        {"address_in_use", "the rendezvous port is already in use"},
        {"dns_failure", "a host name did not resolve"},
        {"connection_refused", "the rendezvous store refused the connection"},
        {"nccl_shm", "NCCL could not create its /dev/shm segment"},
        {"unique_id_exchange", "a rank timed out fetching the NCCL unique id from rank 0 through the store (rank 0 "
                               "never published it: it failed or was late)"},
        {"rendezvous_timeout", "ranks timed out waiting for each other in rendezvous"},
        {"store_timeout", "a client timed out connecting to the TCPStore: nothing listened at MASTER_ADDR:MASTER_PORT"},
        {"rendezvous_error", "process-group creation failed"}};
    std::vector<std::string> parts;
    if (!r_.missing_ranks.empty()) parts.push_back(fmt::format("{} never logged", ranks_phrase(r_.missing_ranks)));
    if (!failed_ranks.empty()) parts.push_back(fmt::format("{} failed in init", ranks_phrase(failed_ranks)));
    if (auto w = kWhy.find(r_.cause); w != kWhy.end()) parts.push_back(w->second);
    r_.summary = fmt::format("{} ({}): {}", r_.category, r_.cause, fmt::join(parts, "; "));
    return true;
  }

  // ---- mismatch ----------------------------------------------------------------------------

  bool try_mismatch() {
    // Same PG and SeqNum, different OpType or Numel: definite (and it names the rank that
    // ran the odd collective, where Gloo's size check may name its neighbour).
    std::map<std::pair<std::string, long long>, std::vector<const CollReport*>> at;
    for (const auto& rep : reports_) at[{rep.pg, rep.seq}].push_back(&rep);
    for (const auto& [key, reps] : at) {
      std::map<std::tuple<std::string, long long, long long>, std::vector<const CollReport*>> groups;
      for (const CollReport* rep : reps) {
        if (!rep->fields_complete || rep->op.empty()) continue;
        groups[{rep->op, rep->numel_in, rep->numel_out}].push_back(rep);
      }
      if (groups.size() < 2) continue;
      auto maj = groups.begin();
      for (auto it = groups.begin(); it != groups.end(); ++it) {
        if (it->second.size() > maj->second.size()) maj = it;
      }
      const bool tie = std::count_if(groups.begin(), groups.end(),
                                     [&](auto& g) { return g.second.size() == maj->second.size(); }) > 1;
      std::vector<int> minority, majority;
      const CollReport* odd = nullptr;
      for (auto& [k, g] : groups) {
        for (const CollReport* rep : g) (&g == &maj->second ? majority : minority).push_back(rep->rank);
        if (&g != &maj->second && !odd) odd = g.front();
      }
      std::sort(minority.begin(), minority.end());
      std::sort(majority.begin(), majority.end());
      const CollReport* norm = maj->second.front();
      const bool op_differs = odd->op != norm->op;
      r_.category = "collective_mismatch";
      r_.cause = "mismatched_collective";
      if (!majority_proven(key.first, majority.size(), minority.size(), reps.size()) || tie) {
        unnamed_mismatch(*odd, *norm, key.second, minority, majority);
        return true;
      }
      // A rank that ran out of data and went to its final barrier pairs that barrier with
      // its peers' next gradient collective: uneven batches, not a code-path branch.
      for (const LogEvent* e : rs_[minority.front()].evs) {
        if (e->kind == LogKind::kDataExhausted) {
          r_.cause = "uneven_batches";
          add_evidence(ref(*e), fmt::format("rank {}: {}", minority.front(), short_text(e->text)));
        }
      }
      r_.missing_ranks = minority;
      r_.divergence_seq = key.second;
      r_.confidence = tie ? "medium" : "high";
      const std::string pg = key.first == "default" ? "" : fmt::format(" of PG {}", key.first);
      const std::string detail =
          op_differs ? fmt::format("at SeqNum {}{} {} ran {} while {} ran {}", key.second, pg, ranks_phrase(minority),
                                   odd->op, ranks_phrase(majority), norm->op)
                     : fmt::format("at SeqNum {}{} {} ran {} with NumelIn={} while {} ran it with NumelIn={}",
                                   key.second, pg, ranks_phrase(minority), odd->op, odd->numel_in,
                                   ranks_phrase(majority), norm->numel_in);
      // What the odd rank was doing says the phase (validation while others train).
      const RankState& m = rs_[minority.front()];
      r_.phase = phase_of_rank(m);
      Fail f = make_fail(*odd->ev, odd->rank);
      f.what = fmt::format("entered a different collective than its peers: {} SeqNum={} NumelIn={} (peers: {} "
                           "NumelIn={})",
                           odd->op, key.second, odd->numel_in, norm->op, norm->numel_in);
      set_first(f);
      add_evidence(ref(*odd->ev), fmt::format("rank {}: {} SeqNum={} NumelIn={} NumelOut={}", odd->rank, odd->op,
                                              key.second, odd->numel_in, odd->numel_out));
      add_evidence(ref(*norm->ev), fmt::format("rank {} (as {}): {} SeqNum={} NumelIn={} NumelOut={}", norm->rank,
                                               ranks_phrase(majority), norm->op, key.second, norm->numel_in,
                                               norm->numel_out));
      if (m.log && m.log->phase != LogKind::kNone) {
        add_evidence(ref(m.log->phase_file, m.log->phase_line),
                     fmt::format("rank {} before it: {}", m.rank, short_text(m.log->phase_text)));
      }
      if (tie) note("the groups are the same size: which side is the odd one out is not decidable from the counts");
      r_.summary = fmt::format("collective_mismatch ({}): {}", r_.cause, detail);
      return true;
    }
    // Same PG, different SeqNum among the ranks that report: their collective counts differ.
    std::map<std::string, std::map<long long, std::vector<int>>> seqs;
    for (const auto& rep : reports_) {
      if (rep.ev && rep.ev->kind == LogKind::kWatchdogTimeout) seqs[rep.pg][rep.seq].push_back(rep.rank);
    }
    for (const auto& [pg, by] : seqs) {
      if (by.size() < 2) continue;
      auto maj = by.begin();
      for (auto it = by.begin(); it != by.end(); ++it) {
        if (it->second.size() > maj->second.size()) maj = it;
      }
      std::vector<int> minority;
      long long odd_seq = -1;
      for (const auto& [seq, ranks] : by) {
        if (seq == maj->first) continue;
        minority.insert(minority.end(), ranks.begin(), ranks.end());
        if (odd_seq < 0) odd_seq = seq;
      }
      std::sort(minority.begin(), minority.end());
      const CollReport* odd0 = report_of(minority.front(), pg);
      const CollReport* norm0 = report_of(maj->second.front(), pg);
      // Different sizes or ops as well: the ranks run different collectives, not the same
      // ones shifted by a skipped or extra call.
      const bool differs = odd0 && norm0 && !odd0->op.empty() && !norm0->op.empty() &&
                           (odd0->op != norm0->op ||
                            (odd0->numel_in >= 0 && norm0->numel_in >= 0 && odd0->numel_in != norm0->numel_in));
      size_t reporting = 0;
      for (const auto& [sq, rk] : by) reporting += rk.size();
      if (!majority_proven(pg, maj->second.size(), minority.size(), reporting)) {
        if (!differs) continue;  // one rank a few collectives behind another, sides unknown: no rule decides
        r_.category = "collective_mismatch";
        r_.cause = "mismatched_collective";
        unnamed_mismatch(*odd0, *norm0, std::min(odd_seq, maj->first), minority, maj->second);
        return true;
      }
      r_.category = "collective_mismatch";
      r_.cause = differs ? "mismatched_collective"
                 : odd_seq < maj->first ? "skipped_collective" : "extra_collective";
      r_.missing_ranks = minority;
      r_.divergence_seq = std::min(odd_seq, maj->first);
      r_.confidence = "medium";
      r_.phase = phase_of_rank(rs_[minority.front()]);
      const CollReport* odd = report_of(minority.front(), pg);
      const CollReport* norm = report_of(maj->second.front(), pg);
      Fail f = make_fail(*odd->ev, odd->rank);
      f.what = fmt::format("timed out at SeqNum {} while {} timed out at SeqNum {}: the ranks issued different "
                           "numbers of collectives on this process group",
                           odd_seq, ranks_phrase(maj->second), maj->first);
      set_first(f);
      add_evidence(ref(*odd->ev), fmt::format("rank {}: SeqNum={} {}", odd->rank, odd->seq, odd->op));
      add_evidence(ref(*norm->ev), fmt::format("rank {} (as {}): SeqNum={} {}", norm->rank,
                                               ranks_phrase(maj->second), norm->seq, norm->op));
      note("SeqNum counts collectives per process group on each rank: ranks stuck at different SeqNums did not issue "
           "the same sequence; which side skipped and which added one needs the code path (TORCH_DISTRIBUTED_DEBUG="
           "DETAIL)");
      r_.summary = fmt::format("collective_mismatch ({}): {} timed out at SeqNum {}, {} at SeqNum {}", r_.cause,
                               ranks_phrase(minority), odd_seq, ranks_phrase(maj->second), maj->first);
      return true;
    }
    return try_reported_mismatch();
  }

  // The odd side of a mismatch is proven only when the majority would stay one if every
  // rank that did not report had joined the minority.
  bool majority_proven(const std::string& pg, size_t maj, size_t min, size_t reporting) const {
    size_t members = static_cast<size_t>(std::max(world_, 0));
    if (pg != "default") {
      auto it = pg_members_.find(pg);
      members = it != pg_members_.end() ? it->second.size() : reporting;
    }
    const size_t unreported = members > reporting ? members - reporting : 0;
    return maj > min + unreported;
  }

  // A mismatch the logs prove without proving which side is odd: no rank is named.
  void unnamed_mismatch(const CollReport& a, const CollReport& b, long long seq, const std::vector<int>& side_a,
                        const std::vector<int>& side_b) {
    r_.missing_ranks.clear();
    r_.divergence_seq = seq;
    r_.confidence = "low";
    r_.phase = phase_of_rank(rs_[a.rank]);
    Fail f = make_fail(*a.ev, a.rank);
    f.what = fmt::format("{} ran {} SeqNum={} NumelIn={} while {} ran {} SeqNum={} NumelIn={}", ranks_phrase(side_a),
                         a.op.empty() ? "?" : a.op, a.seq, a.numel_in, ranks_phrase(side_b), b.op.empty() ? "?" : b.op,
                         b.seq, b.numel_in);
    set_first_unblamed(f);
    add_evidence(ref(*a.ev), fmt::format("rank {}: {} SeqNum={} NumelIn={}", a.rank, a.op, a.seq, a.numel_in));
    add_evidence(ref(*b.ev), fmt::format("rank {}: {} SeqNum={} NumelIn={}", b.rank, b.op, b.seq, b.numel_in));
    note("the ranks ran different collectives, but which side is the odd one is undecidable from these logs: the "
         "sides are the same size, or ranks that did not report could be on either side");
    r_.summary = fmt::format("collective_mismatch ({}): {}; which side diverged is not in these logs", r_.cause,
                             f.what);
  }

  // The backend said so itself: PyTorch's DETAIL-mode fingerprint check names the ranks;
  // Gloo's size check fires on the rank whose buffer did not match its peer's message.
  bool try_reported_mismatch() {
    std::map<int, int> named;  // rank -> times named in fingerprint mismatches
    std::vector<const LogEvent*> sized;
    const LogEvent* first = nullptr;
    for (const auto& e : c_.events) {
      if (e.kind != LogKind::kCollMismatch) continue;
      if (!first) first = &e;
      if (e.word == "fingerprint") {
        // A fingerprint line may name ranks beyond the world this corpus shows (a subgroup,
        // a truncated or garbled paste): only ranks of the timeline can be culprits here.
        for (int r : e.ranks)
          if (valid_rank(r)) ++named[r];
      } else if (valid_rank(e.rank)) {
        sized.push_back(&e);
      }
    }
    if (!first) return false;
    std::vector<int> odd;
    if (!named.empty()) {
      // The rank named in every report is the odd one; with a single pair, the other side of rank 0.
      int best = -1, count = 0;
      bool unique = false;
      for (const auto& [r, n] : named) {
        if (n > count) {
          best = r;
          count = n;
          unique = true;
        } else if (n == count) {
          unique = false;
        }
      }
      // One pair ("Rank 1 is running X, but Rank 0 is running Y") does not say which of the
      // two is the odd one: only a rank named against several peers is.
      if (unique && count >= 2) odd.push_back(best);
    } else {
      std::set<int> reporters;
      for (const LogEvent* e : sized) reporters.insert(e->rank);
      if (!reporters.empty() && reporters.size() * 2 < static_cast<size_t>(std::max(world_, 1)))
        odd.assign(reporters.begin(), reporters.end());
    }
    odd.erase(std::remove_if(odd.begin(), odd.end(), [&](int r) { return !valid_rank(r); }), odd.end());
    if (odd.empty()) {
      // The backend proved the mismatch; the logs do not prove the side.
      r_.category = "collective_mismatch";
      r_.cause = "mismatched_collective";
      r_.missing_ranks.clear();
      r_.confidence = "medium";
      if (first->seq >= 0) r_.divergence_seq = first->seq;
      r_.phase = default_phase();
      Fail f = make_fail(*first, valid_rank(first->rank) ? first->rank : -1);
      f.what = "the backend detected ranks running different collectives: " + short_text(first->text, 200);
      set_first_unblamed(f);
      add_evidence(ref(*first), short_text(first->text));
      note("the backend's check proves the ranks ran different collectives; which side is the odd one needs every "
           "rank's fingerprint (one pair, or a check that names no rank, does not tell)");
      r_.summary = "collective_mismatch (mismatched_collective): the backend detected a collective mismatch; which "
                   "rank diverged is not in these logs";
      return true;
    }
    r_.category = "collective_mismatch";
    r_.cause = "mismatched_collective";
    r_.missing_ranks = odd;
    r_.confidence = "high";
    if (first->seq >= 0) r_.divergence_seq = first->seq;
    const RankState& m = rs_[odd.front()];
    r_.phase = phase_of_rank(m);
    const LogEvent* ev = first;
    for (const LogEvent* e : sized) {
      if (e->rank == odd.front()) ev = e;
    }
    Fail f = make_fail(*ev, odd.front());
    f.what = ev->word == "size"
                 ? fmt::format("received a message of another size than the collective it posted ({}): it and its "
                               "peers ran different collectives",
                               short_text(ev->text, 120))
                 : fmt::format("named by the collective fingerprint check: {}", short_text(ev->text, 200));
    set_first(f);
    add_evidence(ref(*ev), fmt::format("{}: {}", ev->rank >= 0 ? fmt::format("rank {}", ev->rank) : "backend",
                                       short_text(ev->text)));
    if (m.log && !m.log->recent.empty()) {
      const auto& st = m.log->recent.back();
      add_evidence(ref(st.file, st.line), fmt::format("rank {}'s last step: {}", m.rank, st.step));
    }
    for (const Fail* e : all_fails()) {
      if (e->role == Role::kEcho && e->rank != odd.front()) {
        add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, short_text(e->what)));
        break;
      }
    }
    if (ev->word == "size") {
      note("Gloo's size check fires on the rank that received a message of the wrong size: usually the rank that "
           "ran the odd collective, but it can be its ring neighbour; the per-rank Numel at the same SeqNum "
           "(TORCH_DISTRIBUTED_DEBUG=DETAIL) names the culprit for sure");
    }
    r_.summary = fmt::format("collective_mismatch (mismatched_collective): {} ran a different collective than its "
                             "peers ({})",
                             ranks_phrase(odd), ev->word == "size" ? "message size mismatch" : "fingerprint mismatch");
    return true;
  }

  // The step a stuck rank was in: the failing line names it, else one past its last step.
  int failing_step(const RankState& s) const {
    for (const auto& f : s.fails) {
      if (f.ev && f.ev->step >= 0 && (f.role == Role::kEcho)) return f.ev->step;
    }
    if (s.log && s.log->n_steps > 0) return s.log->last_step + cadence(s);
    return -1;
  }

  static int cadence(const RankState& s) {
    if (!s.log || s.log->recent.size() < 2) return 1;
    std::vector<double> inc;
    for (size_t i = 1; i < s.log->recent.size(); ++i) {
      const int d = s.log->recent[i].step - s.log->recent[i - 1].step;
      if (d > 0) inc.push_back(d);
    }
    return inc.empty() ? 1 : std::max(1, static_cast<int>(median(inc)));
  }

  const StepRec* step_rec(const RankState& s, int step) const {
    if (!s.log) return nullptr;
    for (auto it = s.log->recent.rbegin(); it != s.log->recent.rend(); ++it) {
      if (it->step == step) return &*it;
    }
    return nullptr;
  }

  // A rank that completed the step its peers are stuck in (it skipped their collective),
  // or left the loop with fewer steps while they went on (uneven batches).
  bool try_ahead() {
    std::vector<int> stuck;  // ranks that failed waiting
    for (const auto& s : rs_) {
      const Fail* f = s.first_fail();
      if (f && f->role == Role::kEcho && s.log && s.log->n_steps > 0) stuck.push_back(s.rank);
    }
    // Without any error (MPI has no collective timeout): a rank that ended normally while
    // the others' logs just stop is measured against where they stopped.
    bool silent_stop = false;
    if (stuck.empty()) {
      const bool someone_ended =
          std::any_of(rs_.begin(), rs_.end(), [](const RankState& s) { return s.clean_end || s.left_loop; });
      if (!someone_ended) return false;
      for (const auto& s : rs_) {
        if (s.seen() && s.fails.empty() && !s.clean_end && !s.left_loop && s.log->n_steps > 0) stuck.push_back(s.rank);
      }
      if (stuck.empty()) return false;
      silent_stop = true;
    }
    std::map<int, int> fail_steps;
    for (int rank : stuck) ++fail_steps[failing_step(rs_[rank])];
    const int fail_step =
        std::max_element(fail_steps.begin(), fail_steps.end(), [](auto& a, auto& b) { return a.second < b.second; })
            ->first;
    if (fail_step < 0) return false;
    // Skipped: completed fail_step without failing first.
    std::vector<int> ahead;
    for (const auto& s : rs_) {
      if (!s.log || s.log->n_steps == 0 || std::find(stuck.begin(), stuck.end(), s.rank) != stuck.end()) continue;
      const Fail* f = s.first_fail();
      if (f && (f->role == Role::kRoot)) continue;
      if (s.log->max_step >= fail_step) ahead.push_back(s.rank);
    }
    if (!ahead.empty() && ahead.size() < stuck.size()) {
      const RankState& a = rs_[ahead.front()];
      const StepRec* sr = step_rec(a, fail_step);
      if (!sr && !a.log->recent.empty()) sr = &a.log->recent.back();
      r_.category = "collective_mismatch";
      r_.cause = "skipped_collective";
      r_.missing_ranks = ahead;
      r_.divergence_step = fail_step;
      r_.confidence = silent_stop ? "medium" : "high";
      if (silent_stop) note(kSnapshotNote);
      r_.phase = "training";
      r_.last_good_step = fail_step - 1;
      Fail f;
      f.rank = a.rank;
      f.has_t = sr && sr->has_t;
      f.t = sr ? sr->t : 0;
      f.ref = sr ? ref(sr->file, sr->line) : ref(a.log->last_file, a.log->last_line);
      f.what = fmt::format("completed step {} while {} were stuck in it: it did not take part in their collective "
                           "(a skipped collective pairs its later calls with its peers' earlier ones)",
                           fail_step, ranks_phrase(stuck));
      set_first(f);
      add_evidence(f.ref, fmt::format("rank {} logged step {}", a.rank, sr ? sr->step : a.log->last_step));
      const RankState& p = rs_[stuck.front()];
      if (const Fail* pf = p.first_fail()) {
        add_evidence(pf->ref, fmt::format("rank {} failed inside step {}: {}", p.rank, fail_step, short_text(pf->what)));
      }
      if (!a.end_ref.empty()) {
        add_evidence(a.end_ref, fmt::format("rank {} then {}", a.rank,
                                            a.clean_end ? "finished and exited normally" : "left the training loop"));
      }
      r_.summary = fmt::format("collective_mismatch (skipped_collective): {} completed step {} that {} never "
                               "completed; its collectives no longer matched theirs",
                               ranks_phrase(ahead), fail_step, ranks_phrase(stuck));
      return true;
    }
    // Uneven: left the loop (finished) after fewer steps than its peers went on to.
    std::vector<int> early;
    int early_step = -1;
    for (const auto& s : rs_) {
      if (!(s.clean_end || s.left_loop) || !s.log) continue;
      const Fail* f = s.first_fail();
      if (f && f->role == Role::kRoot) continue;
      const int last = s.end_step >= 0 ? s.end_step : s.log->last_step;
      if (last < fail_step) {
        early.push_back(s.rank);
        early_step = last;
      }
    }
    if (!early.empty() && early.size() < stuck.size()) {
      const RankState& a = rs_[early.front()];
      r_.category = "collective_mismatch";
      r_.cause = "uneven_batches";
      r_.missing_ranks = early;
      r_.divergence_step = early_step + 1;
      r_.confidence = silent_stop ? "medium" : "high";
      if (silent_stop) note(kSnapshotNote);
      r_.phase = "training";
      Fail f;
      f.rank = a.rank;
      f.has_t = a.end_has_t;
      f.t = a.end_t;
      f.ref = a.end_ref;
      f.what = fmt::format("left the training loop after step {}{} while {} went on to step {}", early_step,
                           a.end_total > 0 ? fmt::format(" of {}", a.end_total) : "", ranks_phrase(stuck), fail_step);
      set_first(f);
      add_evidence(a.end_ref, fmt::format("rank {} finished after {} steps", a.rank, early_step));
      for (const LogEvent* e : a.evs) {
        if (e->kind == LogKind::kDataExhausted) {
          add_evidence(ref(*e), fmt::format("rank {}: {}", a.rank, short_text(e->text)));
          break;
        }
      }
      const RankState& p = rs_[stuck.front()];
      if (const Fail* pf = p.first_fail()) {
        add_evidence(pf->ref, fmt::format("rank {} failed inside step {}: {}", p.rank, fail_step, short_text(pf->what)));
      }
      r_.summary = fmt::format("collective_mismatch (uneven_batches): {} ran out of batches after step {}; {} waited "
                               "for it in step {}",
                               ranks_phrase(early), early_step, ranks_phrase(stuck), fail_step);
      return true;
    }
    return false;
  }

  // ---- root failure -------------------------------------------------------------------------

  bool has_oom_evidence(const RankState& s) const {
    for (const auto& f : s.fails) {
      if (f.cause == "oom") return true;
    }
    for (const LogEvent* e : host_events_) {
      if (e->kind == LogKind::kOomKill && e->pid >= 0 && s.pids.count(e->pid)) return true;
    }
    return false;
  }

  void set_root(const Fail& root, bool ordered) {
    const RankState& s = valid_rank(root.rank) ? rs_[root.rank] : anon_;
    r_.category = root.category.empty() ? "rank_exit" : root.category;
    r_.cause = root.cause.empty() ? "nonzero_exit" : root.cause;
    if ((r_.cause == "killed" || r_.cause == "nonzero_exit") && has_oom_evidence(s)) r_.cause = "oom";
    // Ranks that died with it.
    std::vector<int> missing;
    for (const Fail* f : all_fails()) {
      if (f->rank < 0) continue;
      const bool rootish =
          !f->aftermath && (f->role == Role::kRoot || (f->role == Role::kExit && f->signal && f->signal != 15));
      if (!rootish) continue;
      // Died together: only provable with the lines' own clocks, not inherited ones.
      const bool exact = f->ev && f->ev->t_exact && root.ev && root.ev->t_exact;
      // Ranks that failed the same way (the same message, e.g. a bad argument on every
      // rank) or at the same moment (a node going down) are all missing.
      const bool same_text = f->ev && root.ev && f->ev->text == root.ev->text && f->category == root.category;
      // A crash signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE) is the process's own, never an
      // echo of another's death: every rank that died of it is missing.
      const bool own_crash = root.signal == f->signal && (f->signal == 11 || f->signal == 7 || f->signal == 4 ||
                                                          f->signal == 8);
      if (f->rank == root.rank || same_text || own_crash ||
          (exact && f->t <= root.t + root.res + kTogetherS && f->category == root.category)) {
        const Fail* ff = rs_[f->rank].first_fail();
        if (ff && ff->role == Role::kEcho) continue;
        missing.push_back(f->rank);
      }
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    // A link or interface fault: the rank that logged it is a witness, not missing.
    if (r_.category == "network") {
      if (!missing.empty()) {
        note(fmt::format("{} logged the link/interface error; a network fault leaves no rank missing: every rank "
                         "waits",
                         ranks_phrase(missing)));
      }
      missing.clear();
    }
    r_.missing_ranks = missing;
    r_.phase = phase_of_rank(s);
    // A crash while exiting, after the work was done: no rank is missing from the work.
    if (r_.phase == "shutdown") r_.missing_ranks.clear();
    // DataLoader workers feed the training loop: their deaths are in training.
    if (r_.phase == "unknown" && root.ev &&
        (root.ev->kind == LogKind::kDataLoaderKilled || root.ev->kind == LogKind::kShmBusError))
      r_.phase = "training";
    r_.confidence = !ordered ? "low" : root.has_t && root.ev && root.ev->t_exact ? "high" : "medium";
    set_first(root);
    add_evidence(root.ref, fmt::format("{}: {}", who(root.rank), root.what));
    // The rank's own exit, and its last step.
    if (!s.exit_ref.empty() && s.exit_ref != root.ref) {
      add_evidence(s.exit_ref, fmt::format("rank {} {}", root.rank,
                                           s.exit_signal ? "exited by " + signal_name(*s.exit_signal)
                                                         : fmt::format("exited with code {}", s.exit_code.value_or(-1))));
    }
    if (s.log && s.log->n_steps > 0 && !s.log->recent.empty()) {
      const auto& st = s.log->recent.back();
      add_evidence(ref(st.file, st.line), fmt::format("rank {}'s last step: {}", root.rank, st.step));
    }
    if (root.cause == "oom" || r_.cause == "oom") {
      for (const LogEvent* e : host_events_) {
        if (e->kind == LogKind::kOomKill && e->pid >= 0 && s.pids.count(e->pid))
          add_evidence(ref(*e), fmt::format("kernel: {}", short_text(e->text)));
      }
    }
    // The first echo, and torchrun's own claim when it names someone else.
    for (const Fail* f : all_fails()) {
      if (f->role == Role::kEcho && f->rank != root.rank) {
        add_evidence(f->ref, fmt::format("first echo: rank {} {} ({})", f->rank, short_text(f->what, 120),
                                         !f->has_t ? "no clock" : (f->exact ? "" : "at or after ") + clock(f->t)));
        break;
      }
    }
    check_launcher_claim(root);
    if (!ordered) {
      note("a peer had already failed before this death: the order does not prove it is the root cause");
    } else if (root.has_t) {
      // Say how much the order rests on: a different host's clock, whole-second stamps.
      for (const Fail* f : all_fails()) {
        if (f->role != Role::kEcho || f->rank == root.rank || !f->has_t) continue;
        const double gap = f->t - (root.t + root.res);
        if (gap < kSkewS && (f->host.empty() || root.host.empty() || f->host != root.host)) {
          note(fmt::format("the first echo (rank {}, {}) is only {:.3f} s after the root and the two were logged by "
                           "{}: the order relies on their clocks agreeing to within that; the kinds agree with it (a "
                           "{} causes peers' errors, not the reverse)",
                           f->rank, f->ref, std::max(0.0, gap),
                           f->host.empty() || root.host.empty() ? "hosts not named in the logs" : "different hosts",
                           root.cause));
        }
        break;
      }
    }
    const std::string when = root.has_t ? fmt::format(" at {}", clock(root.t, root.res)) : "";
    r_.summary = fmt::format("{} ({}): {} {}{}", r_.category, r_.cause, who(root.rank), short_text(root.what, 140), when);
    if (r_.stuck_collective && !waiting_.empty()) {
      r_.summary += fmt::format("; {} then failed in {}", ranks_phrase(waiting_), stuck_name());
    }
  }

  // torchrun names a "Root Cause" by whole-second timestamps: when it disagrees with the
  // order of the ranks' own lines, say so with both references.
  void check_launcher_claim(const Fail& root) {
    for (const auto& l : c_.launch_failures) {
      if (!l.root_claim) continue;
      if (l.rank == root.rank) {
        add_evidence(ref(l.file, l.line), fmt::format("torchrun's summary names rank {} as the root cause too", l.rank));
        return;
      }
      std::string why;
      if (valid_rank(l.rank)) {
        const Fail* ff = rs_[l.rank].first_fail();
        if (ff && ff->role == Role::kEcho) {
          why = fmt::format("; rank {}'s own first error is an echo ({}: {})", l.rank, ff->ref, short_text(ff->what, 100));
        }
      }
      add_evidence(ref(l.file, l.line),
                   fmt::format("torchrun's summary names rank {} as \"Root Cause (first observed failure)\"{}, but "
                               "rank {} failed first{}{}",
                               l.rank, l.has_t ? " at " + clock(l.t).substr(0, 8) + " (whole seconds)" : "",
                               root.rank, root.has_t ? " at " + clock(root.t, root.res) : "", why));
      note(fmt::format("torchrun's \"Root Cause\" (rank {}) is not the first failure: torchrun orders failures by "
                       "whole-second timestamps of when it noticed them (a SIGKILLed rank writes no error file), so "
                       "an echo can be named first",
                       l.rank));
      return;
    }
  }

  // ---- a rank that vanished -----------------------------------------------------------------

  // The first dead-peer echo (a closed or reset connection, NCCL's "remote process
  // exited") that only a death explains. A closed connection proves that *some* peer went
  // away; when another rank had already failed on its own before it (a Gloo rank that
  // times out closes all its connections, then exits), that rank closed it, and it says
  // nothing of a silent rank, which may be frozen, not dead. Which peers time out and
  // which see the closed connection is a race of a few ms between their deadlines, so the
  // answer must not depend on it: null then.
  const Fail* dead_peer_echo() const {
    const Fail* dead_peer = nullptr;
    for (const Fail* f : all_fails()) {
      if (f->role == Role::kEcho && f->ev &&
          (f->ev->kind == LogKind::kCommClosed || f->ev->kind == LogKind::kNcclRemoteError ||
           (f->ev->kind == LogKind::kCommException && f->ev->text.find("onnection closed") != std::string::npos))) {
        dead_peer = f;
        break;
      }
    }
    if (!dead_peer) return nullptr;
    for (const Fail* f : all_fails()) {
      if (f == dead_peer) break;
      if (f->rank != dead_peer->rank && f->role != Role::kInfo && f->role != Role::kTeardown) return nullptr;
    }
    // The rank that times out closes its connections the moment its deadline passes, but
    // logs its timeout only once the exception has reached the program: that line can
    // come after the echo it caused (24 ms seen under load). A death brings no peer's
    // collective timeout with it: the peers in the same collective see the closed
    // connection, and any timeout comes a whole collective timeout later.
    if (dead_peer->has_t) {
      for (const Fail* f : all_fails()) {
        if (f->rank == dead_peer->rank || !f->ev || !f->has_t) continue;
        const bool timeout = f->ev->kind == LogKind::kGlooTimeout || f->ev->kind == LogKind::kWatchdogTimeout;
        if (timeout && f->t >= dead_peer->t && f->t <= dead_peer->t + kSkewS) return nullptr;
      }
    }
    return dead_peer;
  }

  bool try_vanished() {
    const Fail* dead_peer = dead_peer_echo();
    if (!dead_peer) return false;
    std::vector<int> gone;
    for (const auto& s : rs_) {
      if (!s.seen() || !s.fails.empty() || s.clean_end || s.left_loop) continue;
      if (s.log->has_last_t && dead_peer->has_t && s.log->last_t > dead_peer->t + dead_peer->res) continue;
      gone.push_back(s.rank);
    }
    if (gone.empty()) return false;
    const RankState& s = rs_[gone.front()];
    r_.category = "rank_exit";
    r_.cause = has_oom_evidence(s) ? "oom" : "killed";
    r_.missing_ranks = gone;
    r_.confidence = gone.size() == 1 ? "medium" : "low";
    r_.phase = phase_of_rank(s);
    Fail f;
    f.rank = s.rank;
    f.has_t = s.log->has_last_t;
    f.t = s.log->last_t;
    f.ref = ref(s.log->last_file, s.log->last_line);
    f.what = fmt::format("its log stops{} without an error or exit line; {} then reported a peer's connection closed "
                         "({}): the process died",
                         f.has_t ? " at " + clock(f.t) : "", fmt::format("rank {}", dead_peer->rank), dead_peer->ref);
    set_first(f);
    add_evidence(f.ref, fmt::format("rank {}'s last line{}", s.rank, f.has_t ? " at " + clock(f.t) : ""));
    add_evidence(dead_peer->ref, fmt::format("rank {}: {}", dead_peer->rank, short_text(dead_peer->what)));
    note(fmt::format("how {} died is not in these logs (no exit status, no kernel line): SIGKILL/OOM kill, a "
                     "node failure or an eviction look the same from its peers; check dmesg and the pod's events",
                     ranks_phrase(gone)));
    r_.summary = fmt::format("rank_exit ({}): {} stopped logging and its peers then lost their connections to it",
                             r_.cause, ranks_phrase(gone));
    return true;
  }

  // ---- missing by absence -------------------------------------------------------------------

  // Evidence that a rank was alive after `t`: a line after it.
  bool lines_after(const RankState& s, double t, std::string* where) const {
    if (!s.log || !s.log->has_last_t) return false;
    if (s.log->last_t > t) {
      if (where) *where = ref(s.log->last_file, s.log->last_line);
      return true;
    }
    return false;
  }

  bool steps_after(const RankState& s, double t, const StepRec** rec) const {
    if (!s.log) return false;
    for (const auto& st : s.log->recent) {
      if (st.has_t && st.t > t) {
        *rec = &st;
        return true;
      }
    }
    return false;
  }

  // The last interval between step lines against the rank's usual one.
  bool step_jump(const RankState& s, double* usual, double* last, const StepRec** at) const {
    if (!s.log || s.log->recent.size() < 4) return false;
    const auto& rec = s.log->recent;
    std::vector<double> per;
    for (size_t i = 1; i + 1 < rec.size(); ++i) {
      if (!rec[i].has_t || !rec[i - 1].has_t || rec[i].step <= rec[i - 1].step) continue;
      per.push_back((rec[i].t - rec[i - 1].t) / (rec[i].step - rec[i - 1].step));
    }
    const auto& a = rec[rec.size() - 2];
    const auto& b = rec.back();
    if (per.size() < 2 || !a.has_t || !b.has_t || b.step <= a.step) return false;
    *usual = median(per);
    *last = (b.t - a.t) / (b.step - a.step);
    *at = &b;
    return *usual > 0 && *last >= kJumpRatio * *usual && *last - *usual >= 0.5;
  }

  bool try_absent() {
    if (absent_.empty() || waiting_.empty()) return false;
    // Ranks that left the loop are handled above; without logs they are not provably absent
    // unless the world size is stated.
    std::vector<int> absent;
    for (int rank : absent_) {
      const auto& s = rs_[rank];
      if (s.clean_end || s.left_loop) continue;
      if (!s.seen() && !world_stated_) continue;
      absent.push_back(rank);
    }
    {
      size_t unseen = 0;
      for (int rank : absent) unseen += rs_[rank].seen() ? 0 : 1;
      if (unseen > 0 && !silence_proves(unseen)) {
        note(fmt::format("{} rank(s) of the world have no line in these logs: an excerpt of some ranks' logs says "
                         "nothing about the others, so they are not named missing",
                         unseen));
        absent.erase(std::remove_if(absent.begin(), absent.end(), [&](int r) { return !rs_[r].seen(); }), absent.end());
      }
    }
    if (absent.empty()) return false;
    // The first timeout report of the peers.
    const CollReport* first = nullptr;
    for (const auto& rep : reports_) {
      if (rep.pg != main_pg_ || rep.seq != stuck_seq_ || !rep.ev) continue;
      if (!first || (rep.ev->has_t && (!first->ev->has_t || rep.ev->t < first->ev->t))) first = &rep;
    }
    const double t_first = first && first->ev->has_t ? first->ev->t : 0;
    // Gloo's timeout among the reports (not necessarily the first line: the closed
    // connections a timing-out rank causes may be logged before its own timeout).
    bool gloo = false;
    for (const auto& rep : reports_)
      gloo = gloo || (rep.pg == main_pg_ && rep.seq == stuck_seq_ && rep.ev && rep.ev->kind == LogKind::kGlooTimeout);
    const bool dead_peer_seen = dead_peer_echo() != nullptr;
    // Desync reports name lagging ranks.
    std::set<int> desync;
    const LogEvent* desync_ev = nullptr;
    for (const auto& e : c_.events) {
      if (e.kind == LogKind::kDesyncMissing || e.kind == LogKind::kDesyncLagging) {
        desync.insert(e.ranks.begin(), e.ranks.end());
        if (!desync_ev) desync_ev = &e;
      }
    }
    const RankState& a = rs_[absent.front()];
    r_.missing_ranks = absent;
    const std::string coll = stuck_name();
    add_evidence(ref(*first->ev), fmt::format("{} reported a timeout in {} (first at {}); {} never did",
                                              ranks_phrase(waiting_), coll, first->ev->has_t ? clock(t_first) : "?",
                                              ranks_phrase(absent)));
    if (!a.seen()) {
      add_evidence(fmt::format("(no log of rank {})", a.rank),
                   fmt::format("rank {} has no line at all in these logs (world size {} {})", a.rank, world_,
                               opts_.world_size ? "given by --world-size" : "stated in the logs"));
    } else {
      add_evidence(ref(a.log->last_file, a.log->last_line),
                   fmt::format("rank {}'s last line{}{}", a.rank,
                               a.log->has_last_t ? " at " + clock(a.log->last_t) : "",
                               a.log->n_steps ? fmt::format(" (last step {})", a.log->last_step) : ""));
    }
    if (desync_ev) {
      add_evidence(ref(*desync_ev), fmt::format("desync report: {}", short_text(desync_ev->text)));
    }
    // Alive after the peers' timeout?
    std::string alive_ref;
    const StepRec* later = nullptr;
    const bool alive = first && first->ev->has_t && lines_after(a, t_first, &alive_ref);
    const bool progressed = first && first->ev->has_t && steps_after(a, t_first, &later);
    const LogEvent* answered = nullptr;  // answered the dump signal: alive
    for (const LogEvent* e : a.evs) {
      if (e->kind == LogKind::kDumpSignal || e->kind == LogKind::kHeartbeatMonitor) {
        answered = e;
        break;
      }
    }
    double usual = 0, last = 0;
    const StepRec* jump_at = nullptr;
    const bool jumped = step_jump(a, &usual, &last, &jump_at);
    bool storage = false;
    const LogEvent* storage_ev = nullptr;
    for (const LogEvent* e : host_events_) {
      if (e->kind == LogKind::kStorageError && (e->host.empty() || a.host.empty() || e->host == a.host)) {
        storage = true;
        storage_ev = e;
        break;
      }
    }
    for (const LogEvent* e : a.evs) {
      if (e->kind == LogKind::kStorageError) {
        storage = true;
        storage_ev = e;
        break;
      }
    }
    const std::string phase = phase_of_rank(a);
    r_.phase = phase;
    Fail f;
    f.rank = a.rank;
    if (a.seen()) {
      f.has_t = a.log->has_last_t;
      f.t = a.log->last_t;
      f.ref = ref(a.log->last_file, a.log->last_line);
    } else {
      f.ref = fmt::format("(no log of rank {})", a.rank);
    }
    if (progressed || (jumped && alive)) {
      slow_.insert(absent.begin(), absent.end());
      r_.category = "straggler";
      r_.cause = "slow_rank";
      r_.confidence = "high";
      if (progressed) {
        add_evidence(ref(later->file, later->line),
                     fmt::format("rank {} still logged step {} at {}, after its peers timed out at {}: slow, not dead",
                                 a.rank, later->step, clock(later->t), clock(t_first)));
      }
      if (jumped) {
        add_evidence(ref(jump_at->file, jump_at->line),
                     fmt::format("rank {}'s step interval jumped from {:.2f} s to {:.2f} s per step before the "
                                 "failure",
                                 a.rank, usual, last));
      }
      f.what = progressed ? fmt::format("kept progressing (step {} at {}) after its peers had timed out in {}",
                                        later->step, clock(later->t), coll)
                          : fmt::format("slowed down ({:.1f} s per step vs {:.1f} s usual) and missed {}", last, usual,
                                        coll);
    } else if (phase == "checkpoint" && a.seen()) {
      r_.category = "straggler";
      r_.cause = storage ? "slow_storage" : "stuck_in_checkpoint";
      r_.confidence = "medium";
      add_evidence(ref(a.log->phase_file, a.log->phase_line),
                   fmt::format("rank {} began a checkpoint save and never logged its end: {}", a.rank,
                               short_text(a.log->phase_text)));
      if (storage_ev) add_evidence(ref(*storage_ev), fmt::format("storage: {}", short_text(storage_ev->text)));
      f.what = fmt::format("stuck in a checkpoint save ({}) while its peers waited in {}", short_text(a.log->phase_text, 80),
                           coll);
    } else if (phase == "data" && a.seen()) {
      r_.category = "data_loading";
      r_.cause = "data_loader_stall";
      r_.confidence = "medium";
      add_evidence(ref(a.log->phase_file, a.log->phase_line),
                   fmt::format("rank {} was loading data: {}", a.rank, short_text(a.log->phase_text)));
      f.what = fmt::format("stuck loading data ({}) while its peers waited in {}", short_text(a.log->phase_text, 80),
                           coll);
    } else if (const LogEvent* dx = exhausted_data(a)) {
      // It said it had no data left while its peers waited in a collective: it left the
      // loop (or idles for more) with fewer batches than they had: uneven data.
      r_.category = "collective_mismatch";
      r_.cause = "uneven_batches";
      r_.confidence = "medium";
      r_.phase = "training";
      add_evidence(ref(*dx), fmt::format("rank {} ran out of data: {}", a.rank, short_text(dx->text)));
      f.what = fmt::format("ran out of data ({}) and never entered {} that its peers waited in",
                           short_text(dx->text, 80), coll);
    } else if (answered || (alive && a.fails.empty())) {
      alive_.insert(a.rank);
      r_.category = "straggler";
      r_.cause = "unresponsive";
      r_.confidence = "medium";
      if (answered) {
        add_evidence(ref(*answered), fmt::format("rank {} answered after the timeout (alive): {}", a.rank,
                                                 short_text(answered->text)));
      } else {
        add_evidence(alive_ref, fmt::format("rank {} still logged after its peers' timeout (alive)", a.rank));
      }
      f.what = fmt::format("alive but never entered {} (its last progress line is {})", coll, f.ref);
    } else if (gloo && !dead_peer_seen && a.seen()) {
      // Gloo over TCP: a dead peer closes its sockets at once ("Connection closed by
      // peer"); a timeout with no closed connection means its process still held them.
      alive_.insert(a.rank);
      r_.category = "straggler";
      r_.cause = "unresponsive";
      r_.confidence = "medium";
      f.what = fmt::format("silent since {} but alive: its peers' Gloo {} timed out instead of seeing its "
                           "connections close",
                           f.has_t ? clock(f.t) : "its last line", coll);
      note(fmt::format("{} is taken as alive because Gloo peers time out on a live but silent process and see "
                       "\"Connection closed by peer\" at once when it dies; what it was doing (frozen, a deadlock, a "
                       "long compute) is not in the logs: dump its stack (py-spy dump) if it still exists",
                       ranks_phrase(absent)));
    } else {
      r_.category = "unknown";
      r_.cause = "rank_absent";
      r_.confidence = desync.count(a.rank) ? "medium" : "low";
      f.what = a.seen() ? fmt::format("never reported the timeout of {} that {} reported; its last line is {}", coll,
                                      ranks_phrase(waiting_), f.ref)
                        : fmt::format("never reported the timeout of {} and has no log line at all", coll);
      note(fmt::format("provable: {} did not report {} while {} did{}. Not provable from these logs: whether it died "
                       "(no exit status, kernel or launcher line names it), hangs elsewhere, or is slow",
                       ranks_phrase(absent), coll, ranks_phrase(waiting_),
                       desync.count(a.rank) ? " (the desync report names it too)" : ""));
    }
    set_first(f);
    if (jumped && r_.cause != "slow_rank") {
      add_evidence(ref(jump_at->file, jump_at->line),
                   fmt::format("rank {}'s step interval jumped from {:.2f} s to {:.2f} s per step before it went "
                               "silent",
                               a.rank, usual, last));
    }
    r_.summary = fmt::format("{} ({}): {} missing from {} that {} reported", r_.category, r_.cause,
                             ranks_phrase(absent), coll, ranks_phrase(waiting_));
    if (r_.cause == "unresponsive") r_.summary += "; alive but silent";
    return true;
  }

  // ---- everybody waits ----------------------------------------------------------------------

  // Every rank reported the stuck collective, but some only found their peers' sockets
  // closed, after those peers had already timed out waiting for them: they arrived late.
  bool try_late_arrival() {
    const CollReport* first_timeout = nullptr;
    for (const auto& rep : reports_) {
      if (rep.pg != main_pg_ || rep.seq != stuck_seq_ || !rep.ev || !rep.ev->has_t) continue;
      if (rep.ev->kind != LogKind::kGlooTimeout && rep.ev->kind != LogKind::kWatchdogTimeout) continue;
      if (!first_timeout || rep.ev->t < first_timeout->ev->t) first_timeout = &rep;
    }
    if (!first_timeout) return false;
    double last_timeout_t = first_timeout->ev->t;
    for (const auto& rep : reports_) {
      if (rep.pg == main_pg_ && rep.seq == stuck_seq_ && rep.ev && rep.ev->has_t &&
          (rep.ev->kind == LogKind::kGlooTimeout || rep.ev->kind == LogKind::kWatchdogTimeout))
        last_timeout_t = std::max(last_timeout_t, rep.ev->t);
    }
    std::vector<int> late;
    const CollReport* late_rep = nullptr;
    for (const auto& rep : reports_) {
      if (rep.pg != main_pg_ || rep.seq != stuck_seq_ || !rep.ev || !rep.ev->has_t) continue;
      const bool dead_peer = rep.ev->kind == LogKind::kCommClosed || rep.ev->kind == LogKind::kNcclRemoteError ||
                             rep.ev->kind == LogKind::kCommException;
      // A peer that left right after its own timeout closes sockets: its waiting peers see
      // "closed" within moments. Late is well after that.
      if (dead_peer && rep.ev->t > last_timeout_t + 1.0) {
        late.push_back(rep.rank);
        if (!late_rep) late_rep = &rep;
      }
    }
    if (late.empty() || late.size() * 2 >= waiting_.size()) return false;
    std::sort(late.begin(), late.end());
    slow_.insert(late.begin(), late.end());
    const RankState& a = rs_[late.front()];
    r_.category = "straggler";
    r_.cause = "slow_rank";
    r_.missing_ranks = late;
    r_.confidence = "medium";
    r_.phase = phase_of_rank(a);
    Fail f = make_fail(*late_rep->ev, a.rank);
    f.what = fmt::format("reached {} only after rank {} had timed out waiting for it ({}): it found its peers' "
                         "connections closed",
                         stuck_name(), first_timeout->rank, clock(first_timeout->ev->t));
    set_first(f);
    add_evidence(ref(*first_timeout->ev), fmt::format("rank {} timed out in SeqNum {} at {}", first_timeout->rank,
                                                      stuck_seq_, clock(first_timeout->ev->t)));
    add_evidence(ref(*late_rep->ev), fmt::format("rank {} got there at {}: {}", a.rank, clock(late_rep->ev->t),
                                                 short_text(late_rep->ev->text)));
    if (a.log && !a.log->recent.empty()) {
      const auto& st = a.log->recent.back();
      add_evidence(ref(st.file, st.line), fmt::format("rank {}'s last step before it: {}", a.rank, st.step));
    }
    r_.summary = fmt::format("straggler (slow_rank): {} arrived in {} after its peers had timed out waiting for it",
                             ranks_phrase(late), stuck_name());
    return true;
  }

  bool try_all_waiting() {
    if (waiting_.empty()) return false;
    if (try_late_arrival()) return true;
    const auto fails = all_fails();
    const Fail* first = nullptr;
    for (const Fail* f : fails) {
      if (f->role == Role::kEcho || f->role == Role::kRoot) {
        first = f;
        break;
      }
    }
    // Link errors that no death explains make it the network.
    const LogEvent* link = nullptr;
    for (const auto& e : c_.events) {
      if (e.kind == LogKind::kIbError || e.kind == LogKind::kSocketError || e.kind == LogKind::kNcclSystemError) {
        link = &e;
        break;
      }
    }
    r_.missing_ranks.clear();
    const std::optional<Marker> mark = stuck_marker();
    r_.phase = mark ? marker_phase(mark->kind) : "training";
    const bool partial = waiting_.size() < 2 || static_cast<int>(waiting_.size()) < world_;
    if (!link && mark && mark->kind == LogKind::kCheckpointBegin && partial) return set_checkpoint_stall(*mark, first);
    if (link) {
      r_.category = "network";
      r_.cause = link->kind == LogKind::kIbError ? "ib_error" : "comm_error";
      r_.confidence = "medium";
      Fail f = make_fail(*link, link->rank);
      describe(*link, f);
      set_first(f);
      add_evidence(ref(*link), fmt::format("{}{}", link->rank >= 0 ? fmt::format("rank {}: ", link->rank) : "",
                                           short_text(link->text)));
    } else {
      r_.category = "unknown";
      r_.cause = "all_ranks_waiting";
      r_.confidence = "low";
      if (first) set_first_unblamed(*first);
      if (partial) {
        // Only some ranks of the world report the collective: the others are elsewhere (or
        // not in these logs): not "all ranks waiting", and not provably one of them.
        r_.cause = "unknown";
        partial_wait_ = true;
        note(fmt::format("only {} of the {} ranks report {}; the others' logs do not show it (absent, elsewhere, "
                         "or not in these logs): which rank holds the job is undecidable here",
                         ranks_phrase(waiting_), world_, stuck_name()));
      }
      note("every rank reports the same collective and none is missing: a shared dependency (network, the store, "
           "storage) or a hang inside the collective itself; the logs do not say which");
    }
    if (first) add_evidence(first->ref, fmt::format("rank {}: {}", first->rank, short_text(first->what)));
    r_.summary = partial_wait_ ? fmt::format("unknown: {} report a failure in {}; the rest of the world of {} does "
                                             "not, and these logs do not say why",
                                             ranks_phrase(waiting_), stuck_name(), world_)
                               : fmt::format("{} ({}): all {} ranks report a failure in {}; no rank is missing",
                                             r_.category, r_.cause, waiting_.size(), stuck_name());
    return true;
  }

  // Horovod's stall check ("allreduce.avg_loss [missing ranks: 1]") names the ranks that
  // never submitted a tensor their peers wait on: they are missing, proven by the backend;
  // why (dead, slow, another code path) only other lines could say, and none did.
  bool try_stall_check() {
    const LogEvent* last = nullptr;
    for (const auto& e : c_.events) {
      if (e.kind == LogKind::kDesyncMissing && e.word == "stall" && !e.ranks.empty()) last = &e;
    }
    if (!last) return false;
    std::vector<int> missing;
    for (int r : last->ranks)
      if (valid_rank(r) && std::find(missing.begin(), missing.end(), r) == missing.end()) missing.push_back(r);
    if (missing.empty()) return false;
    std::sort(missing.begin(), missing.end());
    r_.category = "unknown";
    r_.cause = "unknown";
    r_.confidence = "low";
    r_.missing_ranks = missing;
    r_.phase = default_phase();
    add_evidence(ref(*last), fmt::format("Horovod's stall check: {}", short_text(last->text)));
    note(fmt::format("Horovod reports {} as never submitting the collective its peers wait on; whether it died, "
                     "is slow or took another code path is not in these logs",
                     ranks_phrase(missing)));
    r_.summary = fmt::format("unknown: {} missing from a collective (Horovod's stall check); the cause is not in "
                             "these logs",
                             ranks_phrase(missing));
    return true;
  }

  // A save that began and never reported its end, while the ranks that report wait in a
  // collective and the rest of the world does not: the saving rank is still writing (one
  // rank serialises the state dict or writes to slow storage) and its peers' next
  // collective times out. Which rank saves is named only when its own line says so (a rank
  // whose own save line is its last and that misses the collective is found earlier, by
  // absence: stuck_in_checkpoint / slow_storage); checkpoint_stall is the save whose rank
  // the logs do not name.
  bool set_checkpoint_stall(const Marker& mark, const Fail* first) {
    r_.category = "straggler";
    r_.cause = "checkpoint_stall";
    r_.confidence = "low";
    r_.phase = "checkpoint";
    partial_wait_ = true;
    if (mark.rank >= 0 && !std::binary_search(waiting_.begin(), waiting_.end(), mark.rank)) {
      r_.missing_ranks = {mark.rank};
      slow_.insert(mark.rank);
    }
    if (first) set_first_unblamed(*first);
    add_evidence(mark.ref, fmt::format("{}: {}", who(mark.rank), short_text(mark.text)));
    if (first) add_evidence(first->ref, fmt::format("rank {}: {}", first->rank, short_text(first->what)));
    note(fmt::format("a checkpoint save began and no line reports it finished; {} then timed out in {} while the "
                     "rest of the world did not report it: a rank still saving (longer than the collective timeout) "
                     "holds its peers",
                     ranks_phrase(waiting_), stuck_name()));
    r_.summary = fmt::format("straggler (checkpoint_stall): a checkpoint save was under way when {} timed out in {}; "
                             "{}",
                             ranks_phrase(waiting_), stuck_name(),
                             r_.missing_ranks.empty() ? std::string("the saving rank is not named in these logs")
                                                      : fmt::format("rank {} was saving", mark.rank));
    return true;
  }

  // ---- no failure at all --------------------------------------------------------------------

  bool try_no_failure() {
    for (const auto& s : rs_) {
      for (const auto& f : s.fails) {
        if (f.role != Role::kInfo && f.role != Role::kTeardown) return false;
      }
    }
    if (use_anon_) return false;
    // "no error logged" is a statement about every rank's log. A dump signal "due to a
    // collective timeout" is a peer's timeout, relayed: an error was logged, only not here.
    // Lines no rank can be named for (a paste from one process) say nothing of the others.
    for (const auto& e : c_.events) {
      if (e.kind == LogKind::kDumpSignal) return false;
    }
    size_t attributed = 0;
    for (const auto& s : rs_) attributed += s.seen() ? 1 : 0;
    if (attributed == 0) return false;
    std::vector<int> done, running, silent;
    for (const auto& s : rs_) {
      if (s.clean_end) {
        done.push_back(s.rank);
      } else if (s.seen()) {
        running.push_back(s.rank);
      } else {
        silent.push_back(s.rank);
      }
    }
    if (try_slowdown()) return true;
    if (!done.empty() && running.empty() && silent.empty()) {
      r_.category = "none";
      r_.cause = "none";
      r_.confidence = "high";
      r_.phase = "training";
      const auto& s = rs_[done.front()];
      add_evidence(s.end_ref, fmt::format("every rank logged its normal end (rank {}: step {})", s.rank, s.end_step));
      r_.summary = fmt::format("none: all {} ranks finished normally", world_);
      return true;
    }
    // A rank whose steps fall behind while everyone still runs.
    double usual = 0, last = 0;
    const StepRec* at = nullptr;
    for (int rank : running) {
      if (step_jump(rs_[rank], &usual, &last, &at)) {
        slow_.insert(rank);
        r_.category = "straggler";
        r_.cause = "slow_rank";
        r_.missing_ranks = {rank};
        r_.confidence = "medium";
        r_.phase = phase_of_rank(rs_[rank]);
        add_evidence(ref(at->file, at->line),
                     fmt::format("rank {}'s step interval jumped from {:.2f} s to {:.2f} s per step", rank, usual, last));
        r_.summary = fmt::format("straggler (slow_rank): rank {} slowed down; no rank reported an error", rank);
        return true;
      }
    }
    r_.category = "unknown";
    r_.cause = "no_error_logged";
    r_.confidence = "low";
    r_.phase = default_phase();
    if (silence_proves(silent.size())) r_.missing_ranks = silent;
    note("no rank logged an error, a timeout or an exit: the job may still be running, or hang with timeouts longer "
         "than the logs cover (a blocked collective reports nothing until its timeout, MPI's never); which rank is "
         "missing is undecidable from these logs -- a stack dump of every rank (py-spy dump, gdb) or the run's "
         "trace would tell");
    if (!silent.empty()) note(fmt::format("{} wrote no line at all", ranks_phrase(silent)));
    r_.summary = "unknown (no_error_logged): the logs stop without an error on any rank";
    return true;
  }

  // Per-step times of a rank, oldest first: its own dur_ms when it logs them, else the
  // intervals between its step lines' own clocks.
  static std::vector<double> step_times(const RankState& s) {
    std::vector<double> v;
    if (!s.log) return v;
    const auto& rec = s.log->recent;
    const bool dur = std::all_of(rec.begin(), rec.end(), [](const StepRec& r) { return r.dur_ms >= 0; });
    for (size_t i = dur ? 0 : 1; i < rec.size(); ++i) {
      if (dur) {
        v.push_back(rec[i].dur_ms / 1000.0);
      } else if (rec[i].has_t && rec[i - 1].has_t && rec[i].step > rec[i - 1].step) {
        v.push_back((rec[i].t - rec[i - 1].t) / (rec[i].step - rec[i - 1].step));
      }
    }
    return v;
  }

  // No failure, but the steps became several times slower and stayed so. Synchronous
  // training runs at the pace of its slowest rank: when every rank slowed alike, which
  // one is the straggler is not in the logs (it needs per-rank compute or wait time).
  bool try_slowdown() {
    std::vector<int> slowed, steady;
    double before = 0, after = 0;
    int at_step = -1;
    for (const auto& s : rs_) {
      const auto v = step_times(s);
      if (v.size() < 6) continue;
      // A regime change, not noise on a busy machine: the last half is uniformly slower
      // than the first steps (its fastest step 1.5x their slowest, its median 2x theirs).
      const std::vector<double> head(v.begin(), v.begin() + static_cast<long>(std::max<size_t>(2, v.size() / 6)));
      const std::vector<double> tail(v.end() - static_cast<long>(v.size() / 2), v.end());
      const double early = median(head);
      const double late = median(tail);
      const bool uniform = *std::min_element(tail.begin(), tail.end()) >= 1.5 * *std::max_element(head.begin(), head.end());
      if (early > 0 && uniform && late >= 2.0 * early && late - early >= 0.2) {
        slowed.push_back(s.rank);
        before = early;
        after = late;
        if (at_step < 0) {
          const auto& rec = s.log->recent;
          for (size_t i = 0; i < v.size(); ++i) {
            if (v[i] >= 2 * early) {
              at_step = rec[rec.size() - v.size() + i].step;
              break;
            }
          }
        }
      } else {
        steady.push_back(s.rank);
      }
    }
    if (slowed.empty()) return false;
    r_.category = "straggler";
    r_.phase = "training";
    const RankState& a = rs_[slowed.front()];
    const auto& last = a.log->recent.back();
    add_evidence(ref(last.file, last.line),
                 fmt::format("{}'s steps went from {:.0f} ms to {:.0f} ms{}", ranks_phrase(slowed), before * 1000,
                             after * 1000, at_step >= 0 ? fmt::format(" from step {} on", at_step) : ""));
    if (steady.empty()) {
      r_.cause = "slowdown";
      r_.missing_ranks.clear();
      r_.confidence = "low";
      note(fmt::format("every rank's step time grew {:.1f}x{}: synchronous training runs at the pace of its slowest "
                       "rank, so which rank is the straggler is undecidable from these logs (they carry no per-rank "
                       "compute or wait time); the run's trace, nsys, or per-rank data/compute timing would tell",
                       after / before, at_step >= 0 ? fmt::format(" from step {}", at_step) : ""));
      r_.summary = fmt::format("straggler (slowdown): the whole job slowed {:.1f}x{} with no error; the straggler "
                               "cannot be named from these logs",
                               after / before, at_step >= 0 ? fmt::format(" at step {}", at_step) : "");
    } else {
      slow_.insert(slowed.begin(), slowed.end());
      r_.cause = "slow_rank";
      r_.missing_ranks = slowed;
      r_.confidence = "medium";
      r_.summary = fmt::format("straggler (slow_rank): {} slowed {:.1f}x while {} did not", ranks_phrase(slowed),
                               after / before, ranks_phrase(steady));
    }
    return true;
  }

  // The first failure of an answer that blames no rank: its line, without its rank as a
  // culprit (the first rank to report a timeout is a witness, not the cause).
  void set_first_unblamed(const Fail& f) {
    Fail g = f;
    g.what = fmt::format("{} (logged by {}: a witness, not a proven cause)", f.what, who(f.rank));
    g.rank = -1;
    set_first(g);
  }

  void set_unknown() {
    r_.category = "unknown";
    r_.cause = "unknown";
    r_.confidence = "low";
    r_.phase = default_phase();
    const auto v = all_fails();
    // Only heartbeat-monitor lines: the watchdog itself hung (a stuck CUDA/NCCL call); which
    // rank caused it is not in them.
    std::set<int> beat;
    bool only_beats = false;
    for (const Fail* f : v) {
      if (f->role == Role::kInfo || f->role == Role::kTeardown) continue;
      if (!f->ev || f->ev->kind != LogKind::kHeartbeatMonitor) {
        only_beats = false;
        break;
      }
      only_beats = true;
      beat.insert(f->rank);
    }
    if (only_beats) {
      r_.cause = "heartbeat_timeout";
      every_rank_reported_ = world_ >= 2 && static_cast<int>(beat.size()) == world_ && !beat.count(-1);
      note("ProcessGroupNCCL's heartbeat monitor fired: its watchdog thread made no progress (a CUDA or NCCL call "
           "that never returned); the stuck call and the rank behind it are not in these lines -- the flight "
           "recorder dump (TORCH_NCCL_DUMP_ON_TIMEOUT) or a stack dump would tell");
    }
    for (const Fail* f : v) {
      if (f->role != Role::kInfo) {
        set_first_unblamed(*f);
        add_evidence(f->ref, fmt::format("rank {}: {}", f->rank, short_text(f->what)));
        break;
      }
    }
    note("no rule explains these logs; the per-rank timeline shows what each rank did last");
    r_.summary = "unknown: no rule explains these logs; see the per-rank timeline";
  }

  // ---- per-rank rows, echoes, answers -------------------------------------------------------

  void assign_liveness() {
    const std::set<int> missing(r_.missing_ranks.begin(), r_.missing_ranks.end());
    for (auto& s : rs_) {
      const Fail* f = s.first_fail();
      std::string l;
      if (slow_.count(s.rank)) {
        l = "slow";
      } else if (s.clean_end) {
        l = "completed";
      } else if (f && (f->role == Role::kRoot || (f->role == Role::kExit && (f->signal || f->code != 0)))) {
        l = "dead";
      } else if (missing.count(s.rank) && r_.category == "rank_exit") {
        l = "dead";
      } else if (alive_.count(s.rank) || s.left_loop) {
        l = "hung";
      } else if (f && (f->role == Role::kEcho || f->role == Role::kTeardown)) {
        l = "hung";
      } else if (missing.count(s.rank) && (r_.category == "straggler" || r_.category == "data_loading")) {
        l = "hung";
      } else if (!s.seen()) {
        l = "unknown";
      } else if (missing.count(s.rank)) {
        l = "unknown";
      } else {
        l = r_.category == "none" ? "completed" : "hung";
      }
      s.liveness = l;
    }
  }

  void finish() {
    if (r_.last_good_step == 0) r_.last_good_step = last_good_step();
    if (r_.category == "collective_mismatch" && r_.divergence_step) {
      r_.last_good_step = std::min(r_.last_good_step, *r_.divergence_step - 1);
    }
    if (r_.category == "none") {
      r_.scope = "none";
    } else if (!r_.missing_ranks.empty()) {
      // "all" needs the world: a lone rank in a paste is one of an unknown number.
      r_.scope = static_cast<int>(r_.missing_ranks.size()) >= world_ && (world_stated_ || world_ >= 2) ? "all" : "subset";
    } else if (r_.category == "collective_mismatch" || (r_.category == "rank_exit" && !use_anon_)) {
      r_.scope = "subset";  // some ranks took another path / a process died, even where the logs cannot say which
    } else if (r_.category == "unknown" && r_.cause != "all_ranks_waiting" && !every_rank_reported_ &&
               (!partial_wait_ || !others_elsewhere())) {
      // Nothing proves that every rank, or which ones, are affected: an excerpt of some
      // ranks' timeouts says nothing of the ranks whose logs were not pasted.
      r_.scope = "unknown";
    } else if (partial_join_ || partial_wait_) {
      r_.scope = "subset";  // fewer ranks arrived (store count) or report the collective than the world has
    } else if (use_anon_ && (!r_.first_failure || r_.first_failure->rank < 0)) {
      r_.scope = anon_scope();
    } else {
      r_.scope = "all";
    }
    // Per-rank rows.
    for (const auto& s : rs_) {
      RankTimeline t;
      t.rank = s.rank;
      t.liveness = s.liveness;
      t.host = s.host;
      if (s.log) {
        t.last_step = std::max(0, s.log->last_step);
        if (!s.log->recent.empty() && s.log->recent.back().has_t) t.last_step_t = s.log->recent.back().t;
        t.last_event_t = s.log->has_last_t ? s.log->last_t : 0;
        t.last_progress_t = t.last_step_t;
        t.last_line = ref(s.log->last_file, s.log->last_line);
        t.last_phase = phase_of_rank(s);
        // Mean step interval over the recent step lines (the logs carry no compute time).
        const auto& rec = s.log->recent;
        std::vector<double> per;
        for (size_t i = 1; i < rec.size(); ++i) {
          if (rec[i].has_t && rec[i - 1].has_t && rec[i].step > rec[i - 1].step)
            per.push_back((rec[i].t - rec[i - 1].t) * 1000.0 / (rec[i].step - rec[i - 1].step));
        }
        if (!per.empty()) t.mean_step_ms = median(per);
        std::vector<double> dur;
        for (const auto& st : rec) {
          if (st.dur_ms >= 0) dur.push_back(st.dur_ms);
        }
        if (!dur.empty()) t.busy_step_ms = median(dur);
      }
      for (const CollReport* rep : reports_of(s.rank)) {
        if (rep->pg == main_pg_ || t.last_coll_seq == 0) {
          t.last_coll_seq = rep->seq;
          t.last_coll_op = rep->op;
          t.last_coll_numel = rep->numel_in;
          t.last_coll_edge = "begin";
        }
      }
      if (s.exit_signal) {
        t.signal = s.exit_signal;
      } else if (s.exit_code) {
        t.exit_code = s.exit_code;
      } else if (s.clean_end) {
        t.exit_code = 0;
      }
      if (const Fail* f = s.first_fail()) {
        t.failure = short_text(f->what, 120);
        t.failure_ref = f->ref;
      }
      r_.per_rank.push_back(std::move(t));
    }
    // Echoes: every other rank's first failure, and the launcher's teardown, in time order.
    std::vector<const Fail*> echoes;
    const int root_rank = r_.first_failure ? r_.first_failure->rank : -1;
    for (const auto& s : rs_) {
      if (s.rank == root_rank && r_.category != "collective_mismatch") continue;  // its own aftermath
      const Fail* f = s.first_fail();
      if (f && f->role == Role::kInfo) f = nullptr;
      if (f && fmt::format("{}/{}", f->rank, f->ref) == first_key_) {
        f = nullptr;  // the first failure itself: its rank's next one, if any
        for (const auto& g : s.fails) {
          if (&g != s.first_fail() && g.role != Role::kInfo && g.role != Role::kExit) {
            f = &g;
            break;
          }
        }
      }
      if (f) echoes.push_back(f);
    }
    std::stable_sort(echoes.begin(), echoes.end(), [](const Fail* a, const Fail* b) {
      if (a->has_t && b->has_t && a->t != b->t) return a->t < b->t;
      if (a->has_t != b->has_t) return a->has_t;
      return a->rank < b->rank;
    });
    size_t teardown = 0;
    for (const LogEvent* e : host_events_) {
      if (e->kind == LogKind::kLauncherSignal) ++teardown;
    }
    for (const auto& s : rs_) {
      for (const auto& f : s.fails) teardown += f.role == Role::kTeardown && f.ev && f.ev->kind == LogKind::kLauncherSignal;
    }
    for (const Fail* f : echoes) {
      if (r_.echoes.size() >= kMaxEchoes) break;
      r_.echoes.push_back({f->rank, f->has_t ? f->t : 0, short_text(f->what, 140), f->ref, !f->has_t || f->exact});
    }
    if (echoes.size() > kMaxEchoes) {
      note(fmt::format("{} more ranks failed after the first failure; the first {} echoes are listed",
                       echoes.size() - kMaxEchoes, kMaxEchoes));
    }
    if (teardown) {
      note(fmt::format("the launcher sent {} closing signal(s) (SIGTERM, SIGKILL) during teardown: echoes, not causes",
                       teardown));
    }
    input_notes();
    build_answers();
    r_.next_steps = playbook_next_steps(r_);
  }

  // The scope of a failure in lines no rank can be named for (a paste from some of the
  // processes), after the playbook's question "all ranks stuck (links, rendezvous, a shared
  // dependency) or a subset missing (a rank exited, took another path, stalls)":
  //   a death, a mismatch, a straggler is one process of the job: subset;
  //   a wrong interface or the job's time limit fails every rank alike: all;
  //   otherwise it depends on what the paste shows of the other processes (writers told
  //   apart by NCCL's "host:pid" prefix). When it shows the process(es) where the root
  //   fired AND other processes that only echo it (a closed connection, an abort), the
  //   failure spread: a process's own resource (its GPU memory, its /dev/shm segment) is a
  //   subset, a broken link took the job down with it: all. When only one process is shown,
  //   or every process shown hit the root itself, the paste cannot tell: unknown.
  std::string anon_scope() const {
    if (r_.category == "rank_exit" || r_.category == "collective_mismatch" || r_.category == "straggler")
      return "subset";
    if (r_.cause == "wrong_ifname" || r_.cause == "time_limit" || r_.cause == "store_timeout" ||
        r_.cause == "rendezvous_timeout")
      return "all";
    std::set<std::string> root_w, echo_w;
    for (const auto& f : anon_.fails) {
      if (!f.ev || f.ev->pid < 0) continue;
      const std::string w = fmt::format("{}:{}", f.ev->host, f.ev->pid);
      if (f.role == Role::kRoot && !f.aftermath) {
        root_w.insert(w);
      } else if (f.role == Role::kEcho) {
        echo_w.insert(w);
      }
    }
    for (const LogEvent* e : anon_.evs) {  // a process whose local peer left: reached by the failure
      if (e->kind == LogKind::kLocalPeerClosed && e->pid >= 0) echo_w.insert(fmt::format("{}:{}", e->host, e->pid));
    }
    bool echo_only = false;  // a process that only echoed the root
    for (const auto& w : echo_w) echo_only |= !root_w.count(w);
    if (root_w.empty() || !echo_only) return "unknown";
    if (r_.category == "network") return "all";
    if (r_.category == "resource_limit" || r_.category == "data_loading") return "subset";
    return "unknown";
  }

  void input_notes() {
    std::vector<std::string> trunc, clockless, noyear, local;
    for (const auto& f : c_.files) {
      if (f.local_rank_lines > 0) local.push_back(f.name);
      if (f.ends_mid_line) trunc.push_back(f.name);
      if (!f.any_clock && f.lines > 0) clockless.push_back(f.name);
      if (f.no_year_clock) noyear.push_back(f.name);
    }
    const auto list = [](const std::vector<std::string>& v) {
      std::vector<std::string> head(v.begin(), v.begin() + static_cast<long>(std::min<size_t>(v.size(), 4)));
      return fmt::format("{}{}", fmt::join(head, ", "), v.size() > 4 ? fmt::format(" and {} more", v.size() - 4) : "");
    };
    if (!trunc.empty()) {
      note(fmt::format("{} end(s) mid-line (truncated or still being written): fields cut off at the end are not "
                       "used",
                       list(trunc)));
    }
    if (!clockless.empty()) {
      note(fmt::format("{} carr{} no timestamps: their lines are ordered by position only, and against other files "
                       "by what they say",
                       list(clockless), clockless.size() == 1 ? "ies" : "y"));
    }
    if (!noyear.empty()) {
      note(fmt::format("{} use{} stamps without a year (glog/syslog): dated {}{}", list(noyear),
                       noyear.size() == 1 ? "s" : "", c_.year, c_.year_known ? " from the other stamps" : " (assumed)"));
    }
    if (!local.empty()) {
      note(fmt::format("in {}, ranks were read from torchrun's \"[defaultN]:\" prefixes, which are local ranks: "
                       "right for a single-node job, not across nodes",
                       list(local)));
    }
    note(fmt::format("read {} file(s), {} lines, {} bytes", c_.files.size(), c_.lines, c_.bytes));
  }

  void build_answers() {
    auto& a = r_.answers;
    std::vector<int> loggers;
    for (const auto& s : rs_) {
      if (s.log && s.log->n_steps > 0) loggers.push_back(s.rank);
    }
    if (r_.phase == "init") {
      a.push_back(fmt::format("Init or training: init — no rank logged a training step or a completed process-group "
                              "setup; {}",
                              r_.summary));
    } else if (training_started_) {
      a.push_back(fmt::format("Init or training: training — {}",
                              loggers.empty() ? std::string("ranks reported collectives (no step lines in the logs)")
                                              : fmt::format("{} logged steps (up to step {})", ranks_phrase(loggers),
                                                            max_step())));
    } else {
      a.push_back("Init or training: unknown — the logs show neither steps nor collectives nor init errors");
    }
    if (r_.scope == "none") {
      a.push_back("All or subset: none — no rank is missing or stuck");
    } else if (r_.scope == "unknown") {
      a.push_back("All or subset: unknown — these lines show one process, or only processes that hit the failure "
                  "themselves: whether the others are stuck too is not in them");
    } else if (r_.scope == "all") {
      a.push_back(fmt::format("All or subset: all — no single rank is missing{}",
                              r_.stuck_collective ? fmt::format("; {} report {}", ranks_phrase(waiting_), stuck_name())
                                                  : ""));
    } else {
      std::vector<int> others;  // the waiting ranks that are not themselves the missing ones
      for (int rank : waiting_) {
        if (std::find(r_.missing_ranks.begin(), r_.missing_ranks.end(), rank) == r_.missing_ranks.end())
          others.push_back(rank);
      }
      a.push_back(fmt::format("All or subset: subset — {} missing ({}){}", ranks_phrase(r_.missing_ranks), r_.cause,
                              r_.stuck_collective && !others.empty()
                                  ? fmt::format("; {} waited in {}", ranks_phrase(others), stuck_name())
                                  : ""));
    }
    if (loggers.empty()) {
      a.push_back(fmt::format("Last completed step: unknown — no rank logged step lines; phase {}", r_.phase));
    } else {
      std::string what = r_.phase == "checkpoint" ? "the failure hit a checkpoint save"
                         : r_.phase == "eval"     ? "the failure hit evaluation/validation"
                         : r_.phase == "data"     ? "the failure hit data loading"
                         : r_.phase == "init"     ? "the job never finished init"
                                                  : fmt::format("step {} was a plain training step{}", r_.last_good_step + 1,
                                                                r_.last_good_step == 0 ? " (the first collective)" : "");
      a.push_back(fmt::format("Last completed step: {} (lowest last step over {} that log steps); {}",
                              r_.last_good_step, loggers.size() == rs_.size() ? "all ranks" : ranks_phrase(loggers),
                              what));
    }
    std::map<std::string, std::vector<int>> by;
    for (const auto& t : r_.per_rank) by[t.liveness].push_back(t.rank);
    std::vector<std::string> parts;
    for (const char* l : {"dead", "slow", "hung", "unknown", "completed"}) {
      if (by.count(l)) parts.push_back(fmt::format("{} {}", l, ranks_phrase(by[l])));
    }
    std::string verdict;
    if (r_.category == "none") {
      verdict = "neither";
    } else if (!slow_.empty()) {
      verdict = "slow";
    } else if (r_.category == "rank_exit" || by.count("dead")) {
      verdict = "dead";
    } else if (r_.category == "collective_mismatch") {
      verdict = "dead (deadlock by mismatch)";
    } else if (r_.cause == "unresponsive") {
      verdict = "hung (alive but not progressing)";
    } else {
      verdict = "unknown";
    }
    a.push_back(fmt::format("Slow or dead: {} — {}", verdict, fmt::join(parts, "; ")));
  }

  int max_step() const {
    int m = 0;
    for (const auto& s : rs_) {
      if (s.log) m = std::max(m, s.log->max_step);
    }
    return m;
  }
};

}  // namespace

TriageResult analyze_log_corpus(const LogCorpus& corpus, const TriageOptions& opts) {
  return LogAnalyzer(corpus, opts).run();
}

}  // namespace hanglab
