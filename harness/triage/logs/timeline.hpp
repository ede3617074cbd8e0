// The plain-log timeline (internal to hanglab_triage): a LogCorpus (logs/reader.hpp) read
// into per-rank state -- the world and its size, which line belongs to which rank (pids,
// hosts, local ranks), each rank's failures with what its line means (root, echo, exit,
// teardown; category, cause, strength), the collective each rank reported being stuck in.
// No verdict: the reasoning over this state is reason/log_analyzer.hpp (LogAnalyzer derives
// from LogTimeline). Member functions by theme:
//   timeline.cpp   the world, attribution of lines to ranks, per-rank failures, collectives
//   meaning.cpp    what one event means for its rank (describe_kind, exit statuses)
//   anon.cpp       the unattributed lines: when they speak, a plain exit they explain, srun's agents
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "triage/logs/reader.hpp"
#include "signal_name.hpp"
#include "util.hpp"

namespace hanglab::plainlog {


using hanglab::Role;  // model/observations.hpp: one role vocabulary for both reasoners

using hanglab::signal_name;  // signal_name.hpp: the one signal naming
using hanglab::is_crash_signal;

inline std::string pg_key(const LogEvent& e) {
  if (e.pg.empty() || e.pg_default) return "default";
  return e.pg;
}

struct Fail;

// -- meaning.cpp: what one event means, whatever rank it is attributed to.
// Role and meaning of an event; kInfo for what is not a failure. The catalogue's role and what the
// pattern table (or the catalogue) says the line proves override the kind's default.
void describe_event(const LogEvent& e, Fail& f);
// The kind's default meaning alone.
void describe_kind(const LogEvent& e, Fail& f);
bool describe_exit(const LogEvent& e, const std::string& txt, Fail& f);
// Exit statuses: a signal death is a root candidate; a plain non-zero code is an exit
// (root only when nothing else explains it).
void exit_meaning(int signal, int code, Fail& f);
std::string short_text(const std::string& s, size_t n = 160);

// A failure attributed to a rank.
struct Fail : Observation {
  const LogEvent* ev = nullptr;  // the line (null for torchrun summary entries)
  bool launcher_root = false;    // torchrun's summary entry under "Root Cause (first observed failure)"
};

struct RankState {
  int rank = -1;
  const RankLog* log = nullptr;
  std::vector<const LogEvent*> evs;
  std::vector<Fail> fails;  // time order
  bool clean_end = false;
  bool exit_warning = false;  // clean_end from a warning printed only at a normal exit (no "done" line)
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

class LogTimeline {
 public:
  LogTimeline(const LogCorpus& c, const TriageOptions& o) : c_(c), opts_(o) {}

 protected:
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
  // Lines that mark_outside_teardown() found to be the teardown's doing: not reports of the
  // collective the ranks were in when the job was stopped.
  std::set<const LogEvent*> teardown_evs_;
  bool use_anon_ = false;
  bool single_node_ = false;  // no two hosts named in the logs: local ranks are global
  // torchrun's local rank as a global rank: through its agent's layout where the logs give one
  // (LogCorpus::agent), the rank itself on one node; -1 otherwise.
  int global_of_local(int local) const {
    if (local < 0 || local >= 4096) return -1;
    const auto& map = c_.agent.local_to_global;
    if (!map.empty()) {
      const auto it = map.find(local);
      return it == map.end() ? -1 : it->second;
    }
    return single_node_ ? local : -1;
  }
  // The paste shows torch's launcher or its elastic agent (decide_srun_agents()): srun's "task N" is an
  // agent, not rank N.
  bool srun_agents_ = false;
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
  std::set<int> dropped_;  // "[host:N]" numbers taken for pids
  bool training_started_ = false;
  bool init_done_ = false;  // an init-done line: every rank of a group or communicator joined
  bool init_seen_ = false;
  double t0_ = 0;
  bool have_t0_ = false;
  std::string ref(uint32_t file, uint32_t line) const { return log_ref(c_, file, line); }
  std::string ref(const LogEvent& e) const { return ref(e.file, e.line); }

  // -- timeline.cpp
  std::string at(bool has_t, double t) const;

  // Wall-clock time of day, for evidence text: "08:26:59.412".
  // Whole-second stamps are shown as such ("08:26:40"), finer ones with milliseconds.
  static std::string clock(double t, double res) { return res >= 1.0 ? clock(t).substr(0, 8) : clock(t); }

  // -- timeline.cpp
  static std::string clock(double t);
  void add_evidence(const std::string& where, const std::string& text);
  void note(const std::string& s);
  // a ended before b started, taking the stamps' resolution into account; same-file
  // clock-less lines by position; otherwise not provable.
  // An inherited clock is a lower bound only ("at or after"): it can show that b came
  // late, never that a came early.
  static bool before(const Fail& a, const Fail& b, double slack = 0);

  // "[host:N]" names a rank for some launchers and a pid in Open MPI's crash handler: a
  // number named by nothing else and far outside the world is a pid.
  bool dropped(int rank) const { return dropped_.count(rank) > 0; }

  // -- anon.cpp
  // srun_agents_: srun's task lines and torch's launcher or its elastic agent, whose workers are the ranks.
  void decide_srun_agents();
  // A plain exit with status 1 just after an unattributed root of the same process or host: that
  // root is why it exited (explain_plain_exits).
  void explain_plain_exits();
  bool same_host(const Fail& a, const Fail& f) const;
  bool same_process(const Fail& a, const Fail& f) const;

  // -- timeline.cpp
  void setup_world();
  void world_at_least(int max_rank);

  bool valid_rank(int r) const { return r >= 0 && r < world_; }

  // -- timeline.cpp
  // Ranks without a single line are evidence only when the logs are the job's: several
  // ranks logged and the silent ones are a minority. One rank's log (or an excerpt of two
  // ranks out of eight) says nothing about the ranks whose logs were not pasted.
  bool silence_proves(size_t n_silent) const;
  // The rank's own statement that its data ran out ("data exhausted", a data service with
  // no tasks left for it).
  static const LogEvent* exhausted_data(const RankState& s);
  // Ranks of a stated world that never printed a line while two or more others printed their own
  // join line (membership statements, world hints with a rank), in a one-host paste: they never
  // joined. Empty when the logs do not prove it (also when a store counted more arrivals than the
  // paste shows ranks).
  std::vector<int> never_joined() const;
  // Ranks that do not report the stuck collective are provably elsewhere: some of them
  // logged other lines, or the silent ones are few among the ranks that logged.
  bool others_elsewhere() const;
  // "rank 3", or what a line without a rank is: a process the logs do not name.
  static std::string who(int rank);
  void attach();

  // -- meaning.cpp
  Fail make_fail(const LogEvent& e, int rank) const;
  static void describe(const LogEvent& e, Fail& f) { describe_event(e, f); }

  // -- timeline.cpp
  void derive();
  // A launcher that begins to stop the job while no line of it shows a failure ("Sending
  // process N closing signal SIGTERM": torchrun's words, and hanglab's supervisor.log when it
  // tears down a hung job) stops it from outside: a hang found by a watchdog, a cancel, a
  // time limit. An echo the ranks log after that notice -- a peer's connection closed because
  // the launcher killed that peer first -- is the teardown's
  // doing, not a failure of the job: Role::kTeardown. Without this a frozen rank that the
  // teardown kills a few ms before its peers reads as a rank that died, or not, by the
  // order of two kill(2) calls.
  void mark_outside_teardown(const std::vector<RankState*>& states);
  void note_phase_facts(const std::vector<RankState*>& states);
  // -- anon.cpp
  void decide_anon();

  // -- meaning.cpp
  // A line that only init writes: the store, the interface, the communicator's setup.
  static bool init_event(const LogEvent& e);

  // -- timeline.cpp
  void find_collectives();
  // "ALLREDUCE SeqNum 1423", "BARRIER SeqNum 7 of PG 1", "a collective (no SeqNum in the logs)"
  std::string stuck_name() const;
  // A rank's reports (one per PG); indexed, since 16k ranks x 16k reports would not do.
  std::vector<const CollReport*> reports_of(int rank) const;
  const CollReport* report_of(int rank, const std::string& pg) const;
  void set_stuck();
};

}  // namespace hanglab::plainlog
