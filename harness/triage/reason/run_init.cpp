// Run-record reasoning: a duplicate RANK, and failures before every rank finished init
// (interface, store, rendezvous timeouts, the late joiner, another MASTER_ADDR).
#include "triage/reason/run_analyzer.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "exit_codes.hpp"

namespace hanglab::reason {

// ---- duplicate RANK ----------------------------------------------------------------

// A launched slot whose trace starts as another rank (a copy-pasted launch line, two
// nodes with the same node_rank): that RANK exists twice and some other not at all.
// The store only counts arrivals, so rendezvous "completes" and breaks later, in a way
// that depends on a race; the duplicate is what to report, not the symptom.
bool Analyzer::try_duplicate() {
  std::map<int, std::vector<int>> claims;  // claimed rank -> slots
  std::vector<int> odd;
  for (const auto& f : f_) {
    if (!f.o->claimed_rank) continue;
    claims[*f.o->claimed_rank].push_back(f.rank);
    if (*f.o->claimed_rank != f.rank) odd.push_back(f.rank);
  }
  if (odd.empty()) return false;
  std::vector<int> unclaimed;
  for (int rank = 0; rank < world_; ++rank) {
    if (!claims.count(rank)) unclaimed.push_back(rank);
  }
  const auto& s = f_[odd.front()];
  const int as = *s.o->claimed_rank;
  const bool init = std::any_of(f_.begin(), f_.end(), [](const RankFacts& f) { return !f.o->init_ended; });
  r_.category = "rendezvous";
  r_.cause = "duplicate_rank";
  r_.phase = init ? "init" : answer_phase(s.o->last_phase);
  r_.missing_ranks = unclaimed;
  r_.confidence = "high";
  Obs x;
  x.rank = s.rank;
  x.t = s.o->start_t.value_or(r_.t0);
  x.ref = ev_ref(s.rank, s.o->start_line);
  x.what = fmt::format("launched as slot {} but started as RANK {}, which slot{} {} also claim{}", s.rank, as,
                       claims[as].size() > 2 ? "s" : "", join_ranks(claims[as]), claims[as].size() > 2 ? "" : "s");
  set_first(x);
  for (int slot : claims[as]) {
    add_evidence(ev_ref(slot, f_[slot].o->start_line),
                 fmt::format("slot {}'s trace starts as rank {} (pid {})", slot, as, f_[slot].o->pid.value_or(0)));
  }
  if (!unclaimed.empty()) {
    add_evidence(ev_ref(s.rank, s.o->start_line),
                 fmt::format("no process started as {}", ranks_phrase(unclaimed)));
  }
  if (const Obs* e = first_echo()) add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, e->what));
  r_.summary = fmt::format("rendezvous (duplicate_rank): RANK {} was started twice (slots {}); {} never started",
                           as, join_ranks(claims[as]), unclaimed.empty() ? "no rank" : ranks_phrase(unclaimed));
  return true;
}

// ---- init ------------------------------------------------------------------------

// Ranks whose own text says the interface does not exist (not the peers' echoes).
std::vector<int> Analyzer::ifname_ranks() const {
  std::vector<int> out;
  for (const auto& f : f_) {
    bool hit = false;
    for (const auto& e : f.o->errors) hit = hit || e.says.no_interface;
    for (const auto& h : f.o->log_hits) hit = hit || h.says.no_interface;
    if (hit) out.push_back(f.rank);
  }
  return out;
}

bool Analyzer::unreachable_ifname(std::vector<int>& ranks, std::string& addr, std::string& node) const {
  if (in_.harness.nodes.size() < 2) return false;
  // A peer's connect that found no route to the address it was given (Gloo's "remote=[ADDR]").
  for (const auto& f : f_) {
    for (const auto& e : f.o->errors) {
      if (!e.says.unreachable || e.says.remote.empty()) continue;
      const std::string& a = e.says.remote;
      for (const auto& n : in_.harness.nodes) {
        if (n.addr2.empty() || n.addr2 != a) continue;
        ranks = n.ranks;
        addr = a;
        node = n.name;
        return !ranks.empty() && static_cast<int>(ranks.size()) < world_;
      }
    }
  }
  return false;
}

// The ranks any rank's rendezvous timeout names as missing ("missing ranks: 1,3").
std::vector<int> Analyzer::verdict_missing() const {
  std::set<int> out;
  for (const auto& f : f_)
    for (const auto& e : f.o->errors)
      for (int v : e.says.missing_ranks)
        if (v >= 0 && v < world_) out.insert(v);
  return {out.begin(), out.end()};
}

std::vector<int> Analyzer::init_culprits(const std::string& cause) const {
  std::vector<int> c;
  if (cause == "wrong_ifname") {
    c = ifname_ranks();
  } else if (cause == "dns_failure") {
    // The ranks whose own log says the name did not resolve; the others waited for them.
    for (const auto& f : f_)
      if (rank_has_hit(f.rank, hit_dns)) c.push_back(f.rank);
  } else if (cause == "rendezvous_timeout" || cause == "rendezvous_error") {
    c = verdict_missing();
  }
  if (c.empty() || static_cast<int>(c.size()) >= world_) return {};
  return c;
}

// The rank's first event comes after a peer had already failed: it was late, not stuck.
bool Analyzer::joined_late(int rank) const {
  const auto& o = *f_[rank].o;
  if (!o.has_trace) return false;
  double peer_fail = 0;
  for (const auto& f : f_) {
    if (f.rank == rank) continue;
    for (const auto& e : f.o->errors) {
      if (!peer_fail || e.t < peer_fail) peer_fail = e.t;
    }
  }
  return peer_fail && o.first_t > peer_fail;
}

// The rank's error or start line names a master address that differs from its peers'.
bool Analyzer::other_master_addr(int rank) const {
  std::string mine;
  for (const auto& e : f_[rank].o->errors) {
    if (mine.empty()) mine = e.says.master;
  }
  if (mine.empty()) mine = f_[rank].o->start_master;
  if (mine.empty()) return false;
  bool other = false;
  for (const auto& f : f_) {
    if (f.rank == rank) continue;
    const std::string& a = f.o->start_master;
    if (!a.empty() && a != mine) other = true;
  }
  return other;
}

// Evidence of an init failure: who never started, who waited in init, what they said.
void Analyzer::cite_init(const std::vector<int>& never_started, const std::vector<int>& not_init,
                         const std::string& evidence_cause,
                         std::map<std::string, std::pair<int, const LogHit*>>& cause_hits) {
  for (int rank : never_started) {
    const auto& h = in_.harness;
    if (auto it = h.launches.find(rank); it != h.launches.end()) {
      add_evidence(h_ref(it->second.line),
                   fmt::format("rank {} was launched (pid {}) at {:+.3f} s but ranks/{}/events.jsonl has no "
                               "event: it never reached rendezvous",
                               rank, it->second.pid, rel(it->second.t), rank));
    } else {
      add_evidence(fmt::format("ranks/{}/events.jsonl", rank), fmt::format("rank {} wrote no trace event", rank));
    }
  }
  for (int rank : not_init) {
    const auto& o = *f_[rank].o;
    if (!o.start_t) continue;
    add_evidence(ev_ref(rank, o.start_line),
                 fmt::format("rank {} started at {:+.3f} s and never ended phase init", rank, rel(*o.start_t)));
    break;
  }
  for (const Obs* x : all_obs(false)) {
    add_evidence(x->ref, fmt::format("rank {}: {}", x->rank, x->what));
    break;
  }
  if (!evidence_cause.empty()) {
    const auto& [rank, hit] = cause_hits[evidence_cause];
    add_evidence(fmt::format("ranks/{}/{}:{}", rank, hit->file, hit->line), hit->text);
  }
}

// The summary of an init failure: who never started, the culprits, who waited, and why.
void Analyzer::init_summary(const std::vector<int>& never_started, const std::vector<int>& culprits,
                            const std::vector<int>& not_init, const std::string& cause, bool rdzv_errors) {
  std::vector<int> waited;
  for (int rank : not_init) {
    if (f_[rank].o->start_t && std::find(culprits.begin(), culprits.end(), rank) == culprits.end())
      waited.push_back(rank);
  }
  std::vector<std::string> parts;
  if (!never_started.empty()) parts.push_back(fmt::format("{} never started", ranks_phrase(never_started)));
  if (!culprits.empty()) {
    parts.push_back(fmt::format("{} {}", ranks_phrase(culprits),
                                cause == "late_joiner"         ? "started after its peers had already given up"
                                : cause == "wrong_master_addr" ? "tried another MASTER_ADDR than its peers"
                                : cause == "wrong_ifname"      ? "failed first: its socket interface does not exist"
                                : cause == "dns_failure"       ? "could not resolve MASTER_ADDR"
                                                               : "never joined rendezvous"));
  }
  if (!waited.empty()) {
    parts.push_back(fmt::format("{} {}", ranks_phrase(waited),
                                !culprits.empty() ? "waited for it in rendezvous and failed"
                                : cause == "rendezvous_timeout" ? "timed out waiting in rendezvous"
                                : rdzv_errors                 ? "failed in rendezvous"
                                                              : "waited in rendezvous"));
  }
  static const std::map<std::string, const char*> kWhy = {
      {"wrong_ifname", "no usable socket interface (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME)"},
      {"connection_refused", "the rendezvous store refused the connection"},
      {"dns_failure", "a host name did not resolve"},
      {"address_in_use", "the rendezvous port is already in use"}};
  if (auto it = kWhy.find(cause); it != kWhy.end()) parts.push_back(it->second);
  r_.summary = fmt::format("{} ({}): {}", r_.category, r_.cause, fmt::join(parts, "; "));
}

bool Analyzer::try_init() {
  const auto not_init = ranks_where([](const RankFacts& f) { return !f.o->init_ended; });
  if (not_init.empty()) return false;
  r_.phase = "init";
  const auto never_started = ranks_where([](const RankFacts& f) { return !f.o->start_t; });

  // A rank that died during init before anybody timed out is a rank_exit in init.
  if (const Obs* d = first_root_death(); d && root_precedes_echoes(*d)) {
    set_rank_exit(*d);
    r_.phase = "init";
    return true;
  }

  // The messages say which part of rendezvous failed.
  std::map<std::string, std::pair<int, const LogHit*>> cause_hits;  // first hit per cause it proves
  for (const auto& f : f_) {
    for (const auto& hit : f.o->log_hits) {
      const std::string c = init_cause_of(hit);
      if (!c.empty() && !cause_hits.count(c)) cause_hits[c] = {f.rank, &hit};
    }
  }
  bool rdzv_errors = false;
  bool rdzv_timeouts = false;
  for (const auto& f : f_) {
    for (const auto& e : f.o->errors) {
      if (e.cls == "rendezvous" || e.cls == "timeout") rdzv_errors = true;
      if (e.cls == "timeout" || (e.cls == "rendezvous" && e.says.timeout)) rdzv_timeouts = true;
    }
  }
  const auto has = [&](const char* cause) { return cause_hits.count(cause) > 0; };
  std::string cause;
  std::string evidence_cause;
  // An interface that exists but reaches no peer: the peers name its address as unroutable.
  if (std::vector<int> culprits; never_started.empty() && !has("wrong_ifname")) {
    std::string addr, node;
    if (unreachable_ifname(culprits, addr, node)) {
      r_.category = "network";
      r_.cause = "wrong_ifname";
      r_.missing_ranks = culprits;
      r_.confidence = "high";
      const Obs* pick = nullptr;
      for (const Obs* x : all_obs(false))
        if (x->says.remote == addr) {
          pick = x;
          break;
        }
      if (pick) {
        add_evidence(pick->ref, fmt::format("rank {}: {}", pick->rank, pick->what));
        set_first(*pick);
      }
      add_evidence(h_ref(in_.harness.nodes_line), fmt::format("{} is {}'s second interface (eth1), not the address its peers reach it by",
                                         addr, node));
      r_.summary = fmt::format(
          "network (wrong_ifname): {} ({}) listened on {}, an interface that exists but that its peers have no route "
          "to: its GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME names the wrong NIC; the peers timed out connecting to it "
          "in init",
          ranks_phrase(culprits), node, addr);
      return true;
    }
  }
  for (const char* c : {"wrong_ifname", "connection_refused", "dns_failure", "address_in_use"}) {
    if (has(c)) {
      cause = c;
      evidence_cause = c;
      break;
    }
  }
  if (cause.empty()) {
    if (has("rendezvous_timeout") || rdzv_timeouts) {
      cause = "rendezvous_timeout";
      evidence_cause = has("rendezvous_timeout") ? "rendezvous_timeout" : "";
    } else if (rdzv_errors) {
      cause = "rendezvous_error";
    } else if (!never_started.empty()) {
      cause = "rank_never_started";
    } else {
      cause = "stuck_in_rendezvous";
    }
  }
  // Which rank the init failure is about, when only some ranks carry the cause: the one
  // whose own error names a missing interface, or the ranks the store's verdict names
  // ("missing ranks: N"); the peers' timeouts are echoes of it.
  std::vector<int> culprits;
  if (never_started.empty()) culprits = init_culprits(cause);
  if (!culprits.empty() && (cause == "rendezvous_timeout" || cause == "rendezvous_error") && culprits.size() == 1) {
    const int m = culprits.front();
    if (joined_late(m)) {
      cause = "late_joiner";
    } else if (other_master_addr(m)) {
      cause = "wrong_master_addr";
    }
  }
  r_.category = cause == "wrong_ifname" ? "network" : "rendezvous";
  r_.cause = cause;
  r_.missing_ranks = culprits.empty() ? never_started : culprits;
  r_.confidence = (!never_started.empty() && rdzv_errors) || !evidence_cause.empty() ? "high" : "medium";

  cite_init(never_started, not_init, evidence_cause, cause_hits);

  if (!never_started.empty()) {
    const int rank = never_started.front();
    const auto& h = in_.harness;
    Obs x;
    x.rank = rank;
    if (auto it = h.launches.find(rank); it != h.launches.end()) {
      x.t = it->second.t;
      x.ref = h_ref(it->second.line);
      x.what = fmt::format("never started: launched (pid {}) but wrote no trace event", it->second.pid);
    } else {
      x.t = r_.t0;
      x.ref = fmt::format("ranks/{}/events.jsonl", rank);
      x.what = "never started: no trace event";
    }
    set_first(x);
  } else if (auto v = all_obs(false); !v.empty()) {
    const Obs* pick = v.front();
    if (!culprits.empty()) {
      for (const Obs* x : v) {
        if (x->rank == culprits.front()) {
          pick = x;
          break;
        }
      }
      add_evidence(pick->ref, fmt::format("rank {}: {}", pick->rank, pick->what));
    }
    set_first(*pick);
  }
  init_summary(never_started, culprits, not_init, cause, rdzv_errors);
  return true;
}

}  // namespace hanglab::reason
