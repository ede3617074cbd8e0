// analyze_fr_dumps(): see fr.hpp.
//
// One process group at a time, the default one (the largest) first; another group is looked at
// only when the default one shows nothing. In a group:
//   1. the first sequence number where the ranks recorded different calls (op, sizes, dtypes):
//      a mismatch; the odd rank(s) are those outside a strict majority, and where the odd rank's
//      later calls equal its peers' calls one position on (or back), it skipped (or added) one;
//   2. else ranks behind the furthest: they never entered the collective the others recorded;
//      a rank that dumped was alive when it dumped (alive but absent), a member with no dump at
//      all is dead or wedged (the dump cannot tell which);
//   3. else every rank recorded the same calls: all waiting in the last one when it is not
//      completed, healthy when every rank completed it (Gloo records no completion: unknown).
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "triage/reason/fr.hpp"
#include "triage/reason/next_steps.hpp"
#include "triage/reason/phrases.hpp"
#include "util.hpp"

namespace hanglab {

namespace {

using fr::FrDump;
using fr::FrEntry;

std::string sig(const FrEntry& e) { return e.op + " " + e.sizes + " " + e.dtypes; }

struct Member {
  int rank = -1;
  const FrDump* dump = nullptr;               // null: no dump from this rank
  std::map<long long, const FrEntry*> colls;  // this group's collectives by seq (the last record wins)
  long long last = 0;                         // highest seq it entered (0: none)
  bool last_completed = false;                // its last one is recorded completed
};

struct Finding {
  std::string kind;  // mismatch | behind | no_dump | all_waiting | same | empty
  std::string pg;
  long long seq = 0;  // the collective it is about
  std::string op;
  std::vector<int> waiting, absent, culprits;
  std::string cause;
  const FrEntry* at = nullptr;  // the waiting ranks' record of `seq`
  const Member* culprit = nullptr;
  std::vector<Evidence> evidence;
};

std::string entry_ref(const Member& m, const FrEntry& e) { return fmt::format("{}:entries[{}]", m.dump->file, e.index); }

std::string call_text(const FrEntry& e) {
  return fmt::format("{} seq {} ({}{})", e.op, e.seq, e.sizes, e.dtypes.empty() ? "" : " " + e.dtypes);
}

class FrAnalyzer {
 public:
  FrAnalyzer(const std::vector<FrDump>& dumps, const TriageOptions& opts) : dumps_(dumps), opts_(opts) {}

  TriageResult run() {
    r_.source = "flight_recorder";
    for (const auto& d : dumps_) by_rank_[d.rank] = &d;
    groups();
    world();
    // The first group that shows something, else the default group's "nothing".
    Finding f;
    for (const auto& g : order_) {
      f = analyze_group(g);
      if (f.kind != "same" && f.kind != "empty") break;
    }
    if ((f.kind == "same" || f.kind == "empty") && order_.size() > 1) f = analyze_group(order_.front());
    if (f.kind.empty()) f.kind = "empty";
    answer(f);
    return r_;
  }

 private:
  // Group name -> members. pg_config names the members; Gloo dumps key it by "" while their
  // entries say "0": a group with entries and no config of its own takes the config that is the
  // only one, or the default group's.
  void groups() {
    std::map<std::string, size_t> entries_of;
    for (const auto& d : dumps_) {
      for (const auto& e : d.entries)
        if (!e.p2p) ++entries_of[e.pg];
      for (const auto& [name, ranks] : d.pg_ranks)
        if (ranks.size() > members_[name].size()) members_[name] = ranks;
    }
    for (const auto& [name, n] : entries_of) {
      if (members_.count(name) && !members_[name].empty()) continue;
      std::vector<int> best;
      for (const auto& [cname, ranks] : members_)
        if (!entries_of.count(cname) && ranks.size() > best.size()) best = ranks;
      if (best.empty())
        for (const auto& d : dumps_)
          if (d.rank >= 0) best.push_back(d.rank);
      members_[name] = best;
    }
    for (const auto& [name, n] : entries_of) order_.push_back(name);
    std::sort(order_.begin(), order_.end(), [&](const std::string& a, const std::string& b) {
      if (members_[a].size() != members_[b].size()) return members_[a].size() > members_[b].size();
      return a < b;
    });
  }

  void world() {
    int w = 0;
    for (const auto& g : order_)
      for (int r : members_[g]) w = std::max(w, r + 1);
    for (const auto& d : dumps_) w = std::max(w, d.rank + 1);
    if (opts_.world_size) {
      if (*opts_.world_size < w)
        r_.notes.push_back(fmt::format("--world-size {} is below the ranks the dumps name; using {}", *opts_.world_size, w));
      w = std::max(w, *opts_.world_size);
    }
    world_ = std::min(w, kMaxWorld);
    r_.world_size = world_;
    if (!order_.empty() && !members_[order_.front()].empty()) {
      const auto& m = members_[order_.front()];
      r_.evidence.push_back({by_rank_.empty() ? "" : by_rank_.begin()->second->file,
                             fmt::format("process group {} has {} ranks ({}): world size {}", order_.front(), m.size(),
                                         rank_ranges(m), world_)});
    }
  }

  std::vector<Member> members(const std::string& g) const {
    std::vector<Member> out;
    for (int r : members_.at(g)) {
      Member m;
      m.rank = r;
      auto it = by_rank_.find(r);
      if (it != by_rank_.end()) {
        m.dump = it->second;
        for (const auto& e : m.dump->entries)
          if (!e.p2p && e.pg == g && e.seq >= 0) m.colls[e.seq] = &e;
        if (!m.colls.empty()) {
          m.last = m.colls.rbegin()->first;
          const FrEntry& l = *m.colls.rbegin()->second;
          m.last_completed = l.state == "completed" || l.completed_s > 0;
        }
        auto st = m.dump->pg_status.find(g);
        if (st != m.dump->pg_status.end() && st->second.last_enqueued > m.last) m.last = st->second.last_enqueued;
      }
      out.push_back(std::move(m));
    }
    return out;
  }

  Finding analyze_group(const std::string& g) {
    Finding f;
    f.pg = g;
    groups_seen_[g] = members(g);
    std::vector<const Member*> dumped;
    std::vector<int> nodump;
    for (const auto& m : groups_seen_[g]) {
      if (m.dump) {
        dumped.push_back(&m);
      } else {
        nodump.push_back(m.rank);
      }
    }
    if (dumped.empty()) {
      f.kind = "empty";
      return f;
    }
    // 1. The first seq where the recorded calls differ (inside the window every rank still holds).
    long long lo = 0, hi = -1;
    bool first = true;
    for (const Member* m : dumped) {
      if (m->colls.empty()) continue;
      lo = first ? m->colls.begin()->first : std::max(lo, m->colls.begin()->first);
      hi = first ? m->colls.rbegin()->first : std::min(hi, m->colls.rbegin()->first);
      first = false;
    }
    for (long long s = lo; s <= hi && !first; ++s) {
      std::map<std::string, std::vector<const Member*>> by_sig;
      for (const Member* m : dumped) {
        auto it = m->colls.find(s);
        if (it != m->colls.end()) by_sig[sig(*it->second)].push_back(m);
      }
      if (by_sig.size() <= 1) continue;
      mismatch(f, s, by_sig, dumped);
      return f;
    }
    // 2. Ranks behind the furthest one, and members with no dump.
    long long furthest = 0;
    for (const Member* m : dumped) furthest = std::max(furthest, m->last);
    long long lowest = furthest;
    for (const Member* m : dumped) lowest = std::min(lowest, m->last);
    if (lowest < furthest || !nodump.empty()) {
      f.kind = lowest < furthest ? "behind" : "no_dump";
      f.seq = lowest < furthest ? lowest + 1 : furthest;
      for (const Member* m : dumped) {
        if (m->last >= f.seq) {
          f.waiting.push_back(m->rank);
          if (!f.at) f.at = m->colls.count(f.seq) ? m->colls.at(f.seq) : nullptr;
        } else if (m->last == lowest) {
          f.absent.push_back(m->rank);
          f.culprits.push_back(m->rank);
          if (!f.culprit) f.culprit = m;
        } else {
          f.absent.push_back(m->rank);  // behind too, but not the first to stop
        }
      }
      for (int r : nodump) {
        f.absent.push_back(r);
        if (f.kind == "no_dump") f.culprits.push_back(r);
      }
      std::sort(f.absent.begin(), f.absent.end());
      f.op = f.at ? f.at->op : "";
      return f;
    }
    // 3. Every rank recorded the same calls.
    f.kind = "same";
    f.seq = furthest;
    for (const Member* m : dumped) {
      f.waiting.push_back(m->rank);
      if (!f.at && m->colls.count(furthest)) f.at = m->colls.at(furthest);
    }
    f.op = f.at ? f.at->op : "";
    return f;
  }

  void mismatch(Finding& f, long long s, const std::map<std::string, std::vector<const Member*>>& by_sig,
                const std::vector<const Member*>& dumped) {
    f.kind = "mismatch";
    f.seq = s;
    const std::vector<const Member*>* maj = nullptr;
    bool strict = true;
    for (const auto& [k, v] : by_sig) {
      if (!maj || v.size() > maj->size()) {
        maj = &v;
        strict = true;
      } else if (v.size() == maj->size()) {
        strict = false;
      }
    }
    f.cause = "mismatched_collective";
    for (const auto& [k, v] : by_sig)
      for (const Member* m : v) {
        if (strict && &v == maj) {
          f.waiting.push_back(m->rank);
          if (!f.at) f.at = m->colls.at(s);
        } else if (strict) {
          f.culprits.push_back(m->rank);
          f.absent.push_back(m->rank);
          if (!f.culprit) f.culprit = m;
        }
      }
    (void)dumped;
    std::sort(f.waiting.begin(), f.waiting.end());
    std::sort(f.culprits.begin(), f.culprits.end());
    std::sort(f.absent.begin(), f.absent.end());
    for (const auto& [k, v] : by_sig) {
      std::vector<int> rs;
      for (const Member* m : v) rs.push_back(m->rank);
      const FrEntry& e = *v.front()->colls.at(s);
      f.evidence.push_back({entry_ref(*v.front(), e), fmt::format("rank{} {} recorded {}", rs.size() == 1 ? "" : "s",
                                                                   rank_ranges(rs), call_text(e))});
    }
    if (!strict || !f.culprit) return;
    const Member& odd = *f.culprit;
    const Member& peer = *maj->front();
    f.op = peer.colls.at(s)->op;
    // Realignment: the odd rank's calls from s on against its peers' one position on (a skip:
    // it never made their call s) or its calls one on against theirs from s (an extra call).
    auto aligned = [&](long long odd_from, long long peer_from) {
      int compared = 0;
      for (long long k = 0; k < 16; ++k) {
        auto a = odd.colls.find(odd_from + k);
        auto b = peer.colls.find(peer_from + k);
        if (a == odd.colls.end() || b == peer.colls.end()) break;
        if (sig(*a->second) != sig(*b->second)) return false;
        ++compared;
      }
      return compared > 0;
    };
    if (aligned(s, s + 1)) {
      f.cause = "skipped_collective";
    } else if (aligned(s + 1, s)) {
      f.cause = "extra_collective";
    }
  }

  // The phase the waiting ranks' frames name (fr/dump.cpp read them), else init for the first
  // collectives and training after.
  std::string phase_of(const Finding& f) const {
    if (f.at && !f.at->phase.empty()) return f.at->phase;
    if (f.seq <= 1) return "init";
    return "training";
  }

  void answer(const Finding& f) {
    const std::set<int> culprits(f.culprits.begin(), f.culprits.end());
    const std::set<int> waiting(f.waiting.begin(), f.waiting.end());
    const auto& ms = groups_seen_.count(f.pg) ? groups_seen_.at(f.pg) : std::vector<Member>{};
    std::map<int, const Member*> mem;
    for (const auto& m : ms) mem[m.rank] = &m;
    double t0 = 0;
    for (const auto& d : dumps_)
      for (const auto& e : d.entries)
        if (e.created_s > 0 && (t0 == 0 || e.created_s < t0)) t0 = e.created_s;
    r_.t0 = t0;
    r_.phase = f.kind == "empty" ? "unknown" : phase_of(f);
    const bool gloo = f.at && f.at->backend == "gloo";
    const std::string where = fmt::format("{} (process group {})", f.at ? call_text(*f.at) : fmt::format("seq {}", f.seq), f.pg);

    if (f.kind == "mismatch") {
      r_.category = "collective_mismatch";
      r_.cause = f.culprits.empty() ? "mismatched_collective" : f.cause;
      r_.confidence = f.culprits.empty() ? "medium" : "high";
      r_.scope = "subset";
      r_.missing_ranks = f.culprits;
      r_.divergence_seq = f.seq;
      const std::string odd = f.culprit ? call_text(*f.culprit->colls.at(f.seq)) : "";
      if (f.culprit) {
        const std::string what = r_.cause == "skipped_collective"
                                     ? fmt::format("skipped {} that its peers entered: its later calls match theirs one "
                                                   "position on (it recorded {} there)",
                                                   where, odd)
                                 : r_.cause == "extra_collective"
                                     ? fmt::format("called an extra {} where its peers entered {}; its later calls match "
                                                   "theirs one position back",
                                                   odd, where)
                                     : fmt::format("recorded {} where its peers recorded {}", odd, where);
        set_first(*f.culprit, *f.culprit->colls.at(f.seq), what);
        r_.summary = fmt::format("collective_mismatch ({}): {} {}", r_.cause, reason::ranks_phrase(f.culprits), what);
      } else {
        r_.summary = fmt::format("collective_mismatch: the ranks recorded different calls at seq {} of process group "
                                 "{} and no majority names the odd one",
                                 f.seq, f.pg);
        r_.notes.push_back("two equal-sized groups of ranks disagree: the dumps cannot tell which side took the wrong "
                           "path; the frames of each side's record show where each called from");
      }
    } else if (f.kind == "behind" || f.kind == "no_dump") {
      r_.missing_ranks = f.culprits;
      r_.scope = "subset";
      r_.stuck_collective = StuckCollective{f.op, f.seq, f.waiting, f.absent};
      if (f.kind == "behind") {
        // It dumped, so it lived when it dumped; but a rank dumps on its way out too (an exception
        // handler, torchrun's SIGTERM), and one that skipped the call dumps from further on: the
        // dumps prove the absence, not why.
        r_.category = "unknown";
        r_.cause = "rank_absent";
        r_.confidence = "medium";
        const FrEntry* last = f.culprit && !f.culprit->colls.empty() ? f.culprit->colls.rbegin()->second : nullptr;
        const std::string what = fmt::format("never entered {} that {} entered; its last record is {}", where,
                                             reason::ranks_phrase_counted(f.waiting),
                                             last ? call_text(*last) : "none");
        if (last) set_first(*f.culprit, *last, what);
        r_.summary = fmt::format("unknown (rank_absent): {} missing from {} that {} entered",
                                 reason::ranks_phrase_counted(f.culprits), where,
                                 reason::ranks_phrase_counted(f.waiting));
        r_.notes.push_back(fmt::format(
            "provable: {} recorded no call at seq {} while {} did, and it dumped its recorder. Not provable from the "
            "dumps: whether it is busy elsewhere (data, I/O, compute), deadlocked, skipped the call (a skip with the "
            "same op and size pairs with the next call and shows only as a rank one call behind), or raised and "
            "dumped on its way out; its stack, exit status or log tells",
            reason::ranks_phrase(f.culprits), f.seq, reason::ranks_phrase_counted(f.waiting)));
        std::vector<int> nd;
        for (int r : f.absent)
          if (!by_rank_.count(r)) nd.push_back(r);
        if (!nd.empty())
          r_.notes.push_back(fmt::format("{} left no dump at all (dead, wedged, or its dump was not collected)",
                                         reason::ranks_phrase(nd)));
      } else {
        r_.category = "unknown";
        r_.cause = "rank_absent";
        r_.confidence = "medium";
        r_.summary = fmt::format("unknown (rank_absent): no Flight Recorder dump from {}; {} recorded the same calls "
                                 "up to {}",
                                 reason::ranks_phrase_counted(f.culprits), reason::ranks_phrase_counted(f.waiting),
                                 where);
        Failure fl;
        fl.rank = f.culprits.front();
        fl.what = fmt::format("left no Flight Recorder dump while {} dumped theirs", reason::ranks_phrase_counted(f.waiting));
        fl.evidence = fmt::format("(no dump of rank {})", fl.rank);
        fl.t_exact = false;
        r_.first_failure = fl;
        r_.notes.push_back(fmt::format(
            "provable: {} left no dump while its peers did. Not provable from the dumps: whether it died (a kill, an "
            "OOM, a crash), is wedged so hard that it could not dump, or its dump was not collected: its exit status "
            "(the launcher's summary, dmesg) tells",
            reason::ranks_phrase(f.culprits)));
      }
    } else if (f.kind == "same") {
      r_.scope = "all";
      bool all_done = !gloo;
      for (int r : f.waiting)
        if (!mem.count(r) || !mem.at(r)->last_completed) all_done = false;
      if (all_done) {
        r_.category = "none";
        r_.cause = "none";
        r_.scope = "none";
        r_.confidence = "high";
        r_.summary = fmt::format("none: every rank recorded the same {} collectives and completed them", f.seq);
      } else {
        r_.category = "unknown";
        r_.cause = gloo ? "unknown" : "all_ranks_waiting";
        r_.confidence = "low";
        r_.stuck_collective = StuckCollective{f.op, f.seq, f.waiting, {}};
        r_.summary = gloo ? fmt::format("unknown: every rank recorded the same calls up to {}; Gloo records no "
                                        "completion, so whether they finished it is not in the dumps",
                                        where)
                          : fmt::format("unknown (all_ranks_waiting): every rank entered {} and none completed it",
                                        where);
        if (!gloo)
          r_.notes.push_back("every rank waits in the same collective: the cause is outside what they recorded (a "
                             "link, the network, a rank of another group, the GPU); NCCL_DEBUG=INFO and the "
                             "watchdog's messages tell more");
      }
    } else {
      r_.category = "unknown";
      r_.cause = "unknown";
      r_.confidence = "low";
      r_.scope = "unknown";
      r_.summary = "unknown: the dumps recorded no collective";
    }
    for (const auto& e : f.evidence) r_.evidence.push_back(e);
    if (f.at && !f.waiting.empty() && mem.count(f.waiting.front()) && mem.at(f.waiting.front())->dump) {
      const Member& w = *mem.at(f.waiting.front());
      r_.evidence.push_back({entry_ref(w, *f.at), fmt::format("{} entered {}{}", reason::ranks_phrase_counted(f.waiting),
                                                              call_text(*f.at),
                                                              f.at->frames.empty() ? "" : " from " + f.at->call_site)});
    }
    rows(f, mem, culprits, waiting);
    answers(f);
    r_.next_steps = playbook_next_steps(r_);
  }

  void set_first(const Member& m, const FrEntry& e, const std::string& what) {
    Failure fl;
    fl.rank = m.rank;
    fl.t = e.created_s;
    fl.what = what;
    fl.evidence = entry_ref(m, e);
    r_.first_failure = fl;
  }

  void rows(const Finding& f, const std::map<int, const Member*>& mem, const std::set<int>& culprits,
            const std::set<int>& waiting) {
    for (int r = 0; r < world_; ++r) {
      RankTimeline t;
      t.rank = r;
      auto it = mem.find(r);
      const Member* m = it == mem.end() ? nullptr : it->second;
      const FrDump* d = by_rank_.count(r) ? by_rank_.at(r) : nullptr;
      if (d) t.last_line = d->file;
      if (m && !m->colls.empty()) {
        const FrEntry& l = *m->colls.rbegin()->second;
        t.last_coll_seq = l.seq;
        t.last_coll_op = l.op;
        // Gloo records neither start nor completion (its state stays "scheduled").
        t.last_coll_edge = l.backend == "gloo" && !m->last_completed ? "" : m->last_completed ? "end" : "begin";
        t.last_event_t = l.created_s;
        if (!l.frames.empty()) t.top_frames = {l.call_site};
      }
      if (!d) {
        t.liveness = "unknown";
        if (culprits.count(r)) t.failure = "no Flight Recorder dump";
      } else if (r_.category == "none") {
        t.liveness = "completed";
      } else if (culprits.count(r) && f.kind == "behind") {
        t.liveness = "unknown";  // it dumped, but possibly on its way out
        t.stuck_in = "outside collectives";
      } else if (waiting.count(r) || culprits.count(r)) {
        t.liveness = "hung";
        if (m && m->colls.count(f.seq)) t.stuck_in = call_text(*m->colls.at(f.seq));
      } else {
        t.liveness = "unknown";
      }
      if (r_.first_failure && r_.first_failure->rank == r) {
        t.failure = r_.first_failure->what;
        t.failure_ref = r_.first_failure->evidence;
      }
      r_.per_rank.push_back(std::move(t));
    }
  }

  void answers(const Finding& f) {
    const std::string init = r_.phase == "init" ? "init" : r_.phase;
    r_.answers.push_back(fmt::format("Init or training: {} — {}", init,
                                     f.at ? fmt::format("the collective in question is {} (seq {}){}", f.at->op, f.seq,
                                                        f.at->frames.empty() ? "" : ", called from " + f.at->call_site)
                                          : "no collective recorded"));
    r_.answers.push_back(fmt::format("All or subset: {} — {}", r_.scope,
                                     r_.missing_ranks.empty() ? "no rank apart from its peers"
                                                              : reason::ranks_phrase(r_.missing_ranks) + " apart"));
    r_.answers.push_back(fmt::format("Last completed step: not in Flight Recorder dumps (they record collectives, "
                                     "not steps); the last collective every rank that dumped recorded is seq {}",
                                     f.kind == "same" ? f.seq : std::max(0LL, f.seq - 1)));
    std::string slow = r_.category == "none" ? "neither" : f.kind == "behind" ? "unknown: it dumped its recorder (alive then) but never entered the call"
                                                        : f.kind == "no_dump" ? "dead or wedged (no dump)"
                                                                              : "dead (deadlock): the calls never pair";
    if (f.kind == "same" && r_.category != "none") slow = "unknown from the dumps";
    r_.answers.push_back("Slow or dead: " + slow);
  }

  const std::vector<FrDump>& dumps_;
  TriageOptions opts_;
  TriageResult r_;
  std::map<int, const FrDump*> by_rank_;
  std::map<std::string, std::vector<int>> members_;
  std::vector<std::string> order_;
  std::map<std::string, std::vector<Member>> groups_seen_;
  int world_ = 0;
};

}  // namespace

TriageResult analyze_fr_dumps(const std::vector<fr::FrDump>& dumps, const TriageOptions& opts) {
  return FrAnalyzer(dumps, opts).run();
}

}  // namespace hanglab
