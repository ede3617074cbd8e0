// Run-record reasoning, slow vs stuck: a rank that arrived late, one absent from the
// collective while alive, a slow rank, every rank stuck together, a healthy run, unknown.
#include "triage/reason/run_analyzer.hpp"

#include "triage/model/causes.hpp"

#include <algorithm>
#include <cmath>

#include "triage/reason/net_probe.hpp"
#include "util.hpp"

namespace hanglab::reason {

// ---- late arrival ----------------------------------------------------------------

double Analyzer::step_start_t(int rank, int step) const {
  if (const StepRecord* prev = step_record(rank, step - 1)) return prev->t;
  return f_[rank].o->init_end_t;
}

// Peers timed out in the stuck collective before this rank even entered it: it was
// late (a throttled CPU, a slow step), not gone. Its own later error is an echo of
// theirs, which is why "everybody was inside" must be judged at the first timeout.
bool Analyzer::try_late_arrival() {
  if (!r_.stuck_collective) return false;
  const auto& sc = *r_.stuck_collective;
  const ErrorRecord* first = nullptr;
  int first_rank = -1;
  for (int rank : sc.waiting_ranks) {
    for (const auto& e : f_[rank].o->errors) {
      if (e.cls == "timeout" && (e.seq == sc.seq || e.seq == 0) && (!first || e.t < first->t)) {
        first = &e;
        first_rank = rank;
      }
    }
  }
  if (!first) return false;
  std::vector<int> late;
  std::vector<int> punctual;
  for (int rank : sc.waiting_ranks) {
    (stuck_record(rank)->begin_t > first->t ? late : punctual).push_back(rank);
  }
  if (late.empty() || punctual.empty()) return false;
  const int m = late.front();
  const CollRecord& c = *stuck_record(m);
  std::vector<double> peers_s;
  for (int rank : punctual) peers_s.push_back(stuck_record(rank)->begin_t - step_start_t(rank, c.step));
  const double mine_s = c.begin_t - step_start_t(m, c.step);
  const double med = median(peers_s);
  slow_.insert(late.begin(), late.end());
  slow_detail_ = fmt::format("took {:.2f} s to reach {} seq {} in step {} vs {:.2f} s median of the others{}", mine_s,
                             sc.op, sc.seq, c.step, med, med > 0 ? fmt::format(" ({:.1f}x)", mine_s / med) : "");
  r_.category = "straggler";
  r_.cause = "slow_rank";
  r_.missing_ranks = late;
  r_.confidence = "medium";
  r_.phase = answer_phase(c.phase);
  Obs x;
  x.rank = m;
  x.t = first->t;
  x.ref = ev_ref(m, c.begin_line);
  x.what = fmt::format("reached {} seq {} only at {:+.3f} s, after rank {} had timed out waiting for it ({:+.3f} s)",
                       sc.op, sc.seq, rel(c.begin_t), first_rank, rel(first->t));
  set_first(x);
  add_evidence(x.ref, fmt::format("rank {} entered {} seq {} at {:+.3f} s: {}", m, sc.op, sc.seq, rel(c.begin_t),
                                  slow_detail_));
  add_evidence(ev_ref(first_rank, first->line),
               fmt::format("rank {} timed out in seq {} at {:+.3f} s, before rank {} arrived: {}", first_rank, sc.seq,
                           rel(first->t), m, first->msg));
  if (const CollRecord* pc = stuck_record(punctual.front())) {
    add_evidence(ev_ref(punctual.front(), pc->begin_line),
                 fmt::format("{} entered it by {:+.3f} s", ranks_phrase(punctual), rel(pc->begin_t)));
  }
  r_.summary = fmt::format("straggler (slow_rank): {} {}; its peers timed out waiting for it", ranks_phrase(late),
                           slow_detail_);
  return true;
}

// ---- absent but alive ----------------------------------------------------------------

bool Analyzer::try_absent_alive() {
  if (!r_.stuck_collective || r_.stuck_collective->absent_ranks.empty()) return false;
  std::vector<int> absent;
  for (int rank : r_.stuck_collective->absent_ranks) {
    const auto& f = f_[rank];
    if (f.alive_at_end() && f.o->has_trace) absent.push_back(rank);
  }
  if (absent.empty() || absent.size() != r_.stuck_collective->absent_ranks.size()) return false;
  const auto& f = f_[absent.front()];
  const std::string phase = f.o->last_phase;
  detect_slow();
  if (phase == "data") {
    r_.category = "data_loading";
    r_.cause = rank_has_hit(f.rank, hit_shm) ? "shm_exhausted" : "data_loader_stall";
  } else if (slow_.count(f.rank)) {
    r_.category = "straggler";
    r_.cause = "slow_rank";
  } else if (rank_has_hit(f.rank, hit_disk_full)) {
    // ENOSPC writing a /dev/shm segment is a too-small /dev/shm, not a full disk.
    const bool shm = has_shm_evidence(f.rank);
    r_.category = shm ? "data_loading" : "resource_limit";
    r_.cause = shm ? "shm_exhausted" : "disk_full";
  } else {
    r_.category = "straggler";
    r_.cause = std::string(stuck_in_cause(phase));
  }
  r_.missing_ranks = absent;
  r_.confidence = "medium";
  r_.phase = answer_phase(phase);
  Obs x;
  x.rank = f.rank;
  x.t = f.o->last_progress_t;
  x.ref = ev_ref(f.rank, f.o->last_progress_line);
  x.what = fmt::format("alive (heartbeating) but stuck in {}; never entered {} seq {}", phase_phrase(*f.o),
                       r_.stuck_collective->op, r_.stuck_collective->seq);
  set_first(x);
  add_evidence(x.ref, fmt::format("rank {}'s last progress at {:+.3f} s: {}", f.rank, rel(f.o->last_progress_t),
                                  phase_phrase(*f.o)));
  if (f.has_hb) {
    add_evidence(ev_ref(f.rank, f.last_hb_line),
                 fmt::format("rank {} still heartbeating at {:+.3f} s", f.rank, rel(f.last_hb)));
  }
  cite_stuck("");
  if (f.o->stack) {
    add_evidence(fmt::format("ranks/{}/stack.txt:{}", f.rank, f.o->stack->line),
                 fmt::format("rank {}'s main thread: {}", f.rank, f.o->stack->frame));
  }
  cite_log_hits(f.rank, hit_resource);
  r_.summary = fmt::format("{} ({}): {} alive but stuck in {}; {} waited in {} seq {}", r_.category, r_.cause,
                           ranks_phrase(absent), phase_phrase(*f.o), ranks_phrase(r_.stuck_collective->waiting_ranks),
                           r_.stuck_collective->op, r_.stuck_collective->seq);
  return true;
}

// ---- slow --------------------------------------------------------------------------

void Analyzer::detect_slow() {
  if (!slow_.empty() || !slow_detail_.empty()) return;
  std::vector<std::pair<int, double>> busy;
  for (const auto& f : f_) {
    if (f.o->steps.size() >= 2 && !frozen_.count(f.rank)) busy.emplace_back(f.rank, f.busy_ms);
  }
  if (busy.size() < 2) return;
  std::vector<std::pair<int, double>> ratio;  // candidates: rank -> compute / median of the others
  for (const auto& [rank, ms] : busy) {
    std::vector<double> others;
    for (const auto& [r2, ms2] : busy) {
      if (r2 != rank) others.push_back(ms2);
    }
    const double med = median(others);
    if (med > 0 && ms >= kSlowRatio * med) ratio.emplace_back(rank, ms / med);
  }
  // The ranks that pace the job are those comparable to the slowest one. On a shared
  // host a rank that merely clears kSlowRatio while another is several times slower
  // (rank 3 at 2.1x beside a storage-starved rank 1 at 6.4x, from CPU contention with
  // it) is not a second straggler: keep only ranks within kSlowRatio of the worst.
  double worst = 0;
  for (const auto& [rank, x] : ratio) worst = std::max(worst, x);
  for (const auto& [rank, x] : ratio) {
    if (x * kSlowRatio < worst) continue;
    slow_.insert(rank);
    if (slow_detail_.empty()) {
      double ms = 0, med = 0;
      for (const auto& [r2, ms2] : busy)
        if (r2 == rank) ms = ms2;
      med = ms / x;
      slow_detail_ = fmt::format("{:.1f}x: {:.0f} ms of compute per step vs {:.0f} ms median of the others", x, ms,
                                 med);
    }
  }
  if (slow_detail_.empty()) slow_detail_ = "-";
}

bool Analyzer::try_slow() {
  detect_slow();
  if (slow_.empty()) return false;
  // A slow rank that already left (crash) is handled above; here every slow rank
  // still progressed or completed.
  std::vector<int> slow(slow_.begin(), slow_.end());
  const auto& f = f_[slow.front()];
  r_.category = "straggler";
  r_.cause = "slow_rank";
  r_.missing_ranks = slow;
  r_.confidence = f.o->steps.size() >= 3 ? "high" : "medium";
  r_.phase = answer_phase(f.clean_exit() ? "training" : f.o->last_phase);
  std::vector<double> waits;
  for (const auto& g : f_) {
    if (slow_.count(g.rank)) continue;
    for (const auto& s : g.o->steps) waits.push_back(s.coll_ms);
  }
  const double wait = median(waits);
  if (!f.o->steps.empty()) {
    const auto& s0 = f.o->steps.front();
    const auto& sn = f.o->steps.back();
    add_evidence(ev_ref(f.rank, s0.line),
                 fmt::format("rank {} step {}: {:.0f} ms, of which {:.0f} ms inside collectives", f.rank, s0.step,
                             s0.dur_ms, s0.coll_ms));
    add_evidence(ev_ref(f.rank, sn.line),
                 fmt::format("rank {} step {}: {:.0f} ms, of which {:.0f} ms inside collectives", f.rank, sn.step,
                             sn.dur_ms, sn.coll_ms));
  }
  for (const auto& g : f_) {
    if (slow_.count(g.rank) || g.o->steps.empty()) continue;
    const auto& s = g.o->steps.back();
    add_evidence(ev_ref(g.rank, s.line),
                 fmt::format("rank {} step {}: {:.0f} ms, of which {:.0f} ms waiting inside collectives", g.rank,
                             s.step, s.dur_ms, s.coll_ms));
    break;
  }
  r_.summary = fmt::format(
      "straggler (slow_rank): {} computes {}; the others wait ~{:.0f} ms per step for it in "
      "their collectives",
      ranks_phrase(slow), slow_detail_, wait);
  return true;
}

// ---- everybody stuck ---------------------------------------------------------------

bool Analyzer::try_all_stuck() {
  const auto echoes = all_obs(false);
  const bool nobody_missing = !r_.stuck_collective || r_.stuck_collective->absent_ranks.empty();
  const bool all_waiting = r_.stuck_collective && r_.stuck_collective->absent_ranks.empty() &&
                           static_cast<int>(r_.stuck_collective->waiting_ranks.size()) == world_;
  const bool echo_first = !echoes.empty() && echoes.front()->role == ObsKind::kEcho;
  if (!all_waiting && !(echo_first && nobody_missing)) return false;
  // Link errors that no death explains are what makes it provably "network": a comm
  // error after a peer already gave up (its exit closed the sockets) is an echo.
  bool link_errors = false;
  for (const Obs* x : echoes) {
    if (x->cls != "comm") continue;
    bool peer_gone = false;
    for (const auto& g : f_) {
      if (g.rank != x->rank && g.exited && g.exit_t <= x->t + kExitReportSlackS) peer_gone = true;
      if (const Obs* gx = g.failure(); g.rank != x->rank && gx && gx->t < x->t) peer_gone = true;
    }
    link_errors |= !peer_gone;
  }
  for (const auto& f : f_) {
    link_errors |= rank_has_hit(f.rank, hit_link_error);
  }
  // Several nodes ([topology] nodes > 1), every rank of every node stuck waiting (here:
  // nobody dead or missing, every failure a wait or a lost peer that did not die): what all ranks share and a single host lacks is
  // the network between the nodes.
  const bool between_nodes = in_.harness.nodes.size() > 1;
  r_.category = link_errors || between_nodes ? "network" : "unknown";
  r_.cause = link_errors ? "comm_error"
             : between_nodes ? "internode_timeout"
                             : (echo_first ? "collective_timeout" : "all_ranks_waiting");
  r_.missing_ranks.clear();
  r_.confidence = link_errors || between_nodes ? "medium" : "low";
  // The probe of the nodes after the hang says what kind of fault, and which node, where it can.
  const ProbeVerdict probe = between_nodes ? judge_probe(in_.harness.probe, in_.harness.nodes) : ProbeVerdict{};
  std::vector<int> cut_ranks;
  if (!probe.kind.empty()) {
    r_.cause = probe.kind;
    r_.confidence = "high";
    for (int k : probe.nodes)
      for (const auto& n : in_.harness.nodes)
        if (n.node == k) cut_ranks.insert(cut_ranks.end(), n.ranks.begin(), n.ranks.end());
    std::sort(cut_ranks.begin(), cut_ranks.end());
    // The ranks behind the failing link are the ones the collective is missing.
    if (!cut_ranks.empty() && static_cast<int>(cut_ranks.size()) < world_) r_.missing_ranks = cut_ranks;
  }
  std::string phase;
  if (r_.stuck_collective) {
    if (const CollRecord* c = stuck_record(r_.stuck_collective->waiting_ranks.front())) phase = c->phase;
  }
  r_.phase = answer_phase(phase);
  if (echo_first) set_first(*echoes.front());
  cite_stuck("");
  for (const auto& f : f_) {
    if (f.has_hb) {
      add_evidence(ev_ref(f.rank, f.last_hb_line),
                   fmt::format("rank {} heartbeating until {:+.3f} s: alive, not frozen", f.rank, rel(f.last_hb)));
      break;
    }
  }
  for (const auto& f : f_) {
    if (f.o->stack) {
      add_evidence(fmt::format("ranks/{}/stack.txt:{}", f.rank, f.o->stack->line),
                   fmt::format("rank {}'s main thread: {}", f.rank, f.o->stack->frame));
      break;
    }
  }
  if (echo_first)
    add_evidence(echoes.front()->ref, fmt::format("rank {}: {}", echoes.front()->rank, echoes.front()->what));
  std::string nodes_said;
  if (!probe.kind.empty()) add_evidence(h_ref(in_.harness.probe.line), probe.text);
  if (between_nodes && !probe.kind.empty()) {
    for (const auto& n : in_.harness.nodes)
      nodes_said += fmt::format("{}{} (ranks {})", nodes_said.empty() ? "" : ", ", n.name, rank_ranges(n.ranks));
    r_.notes.push_back(probe.text);
  } else if (between_nodes) {
    for (const auto& n : in_.harness.nodes)
      nodes_said += fmt::format("{}{} (ranks {})", nodes_said.empty() ? "" : ", ", n.name, rank_ranges(n.ranks));
    r_.notes.push_back(fmt::format(
        "every rank of {} stopped in the same collective while alive: a fault between the nodes (a partition, packet "
        "loss, an MTU black hole, a link down). Which node's link failed is not in these records when every node waits "
        "alike; its switch port, its nft/iptables rules and `ip -s link` counters are where to look",
        nodes_said));
  }
  std::string cut_said;
  for (int k : probe.nodes)
    for (const auto& n : in_.harness.nodes)
      if (n.node == k) cut_said += fmt::format("{}{} ({})", cut_said.empty() ? "" : ", ", n.name, ranks_phrase(n.ranks));
  static const std::map<std::string, const char*> kProbeSaid = {
      {"partition", "cut off from the other nodes"},
      {"mtu_mismatch", "dropping every packet that fills the MTU (an MTU mismatch on the path)"},
      {"packet_loss", "losing packets"}};
  r_.summary =
      between_nodes && r_.stuck_collective && !probe.kind.empty()
          ? fmt::format("network ({}): every rank waits in {} seq {} (step {}) and none died; {}",
                        r_.cause, r_.stuck_collective->op, r_.stuck_collective->seq, r_.last_good_step + 1,
                        cut_said.empty()
                            ? fmt::format("the network between {} {}", nodes_said,
                                          probe.kind == "partition"      ? "carries nothing (no ping reply either way)"
                                          : probe.kind == "mtu_mismatch" ? "drops every packet that fills the MTU"
                                                                         : "loses packets")
                            : fmt::format("{} {} {}", cut_said, probe.nodes.size() > 1 ? "are" : "is", kProbeSaid.at(probe.kind)))
      : between_nodes && r_.stuck_collective
          ? fmt::format("network ({}): every rank of {} waits in {} seq {} (step {}) and none is missing or dead: the "
                        "network between the nodes stopped carrying that collective",
                        r_.cause, nodes_said, r_.stuck_collective->op, r_.stuck_collective->seq, r_.last_good_step + 1)
      : r_.stuck_collective
          ? fmt::format("{} ({}): all {} ranks wait in {} seq {} (step {}); no rank is missing, none exited first",
                        r_.category, r_.cause, world_, r_.stuck_collective->op, r_.stuck_collective->seq,
                        r_.last_good_step + 1)
          : fmt::format("{} ({}): every rank failed waiting; none is missing", r_.category, r_.cause);
  return true;
}

bool Analyzer::try_healthy() {
  if (f_.empty()) return false;
  for (const auto& f : f_) {
    if (!f.clean_exit() || f.last_step != f_.front().last_step) return false;
  }
  r_.category = "none";
  r_.cause = "none";
  r_.confidence = "high";
  r_.phase = "training";
  r_.missing_ranks.clear();
  for (const auto& f : f_) {
    if (f.o->trace_exit_code) {
      add_evidence(ev_ref(f.rank, f.o->trace_exit_line),
                   fmt::format("rank {} exited 0 after {} steps", f.rank, f.last_step));
    } else {
      add_evidence(f.exit_ref, fmt::format("rank {} exited 0 after {} steps", f.rank, f.last_step));
    }
  }
  r_.summary = fmt::format("none: all {} ranks completed {} steps and exited 0", world_, r_.last_good_step);
  return true;
}

void Analyzer::set_unknown() {
  r_.category = "unknown";
  r_.cause = "unknown";
  r_.confidence = "low";
  r_.phase = "training";
  const auto v = all_obs(false);
  if (!v.empty()) {
    set_first(*v.front());
    add_evidence(v.front()->ref, fmt::format("rank {}: {}", v.front()->rank, v.front()->what));
  }
  if (r_.stuck_collective) r_.missing_ranks = r_.stuck_collective->absent_ranks;
  cite_stuck("");
  r_.summary = "unknown: no rule explains these observations; see the per-rank timeline";
}

}  // namespace hanglab::reason
