// to_json(): triage.json, the machine-readable answer; the fields a plain-log answer adds
// (host, last_line, failure_ref, ...) appear only when its source is logs.
#include "triage/answer/answer.hpp"

namespace hanglab {

namespace {

// A rank nothing in the evidence speaks of: no line, exit, stack, step or collective. Such ranks
// are listed as ranges in "unseen_ranks" instead of a row each, so that the answer's size follows
// the evidence, not the world size one line states.
bool unseen(const RankTimeline& t) {
  return t.liveness == "unknown" && t.failure.empty() && t.last_line.empty() && t.host.empty() &&
         t.last_step == 0 && t.last_coll_seq == 0 && !t.exit_code && !t.signal && t.last_event_t == 0 &&
         t.progress_lines == 0 && t.proc_state.empty() && t.top_frames.empty() && t.stuck_in.empty();
}

}  // namespace

nlohmann::json to_json(const TriageResult& r) {
  using nlohmann::json;
  const auto opt = [](const auto& v) -> json { return v ? json(*v) : json(nullptr); };
  json j;
  j["category"] = r.category;
  j["cause"] = r.cause;
  j["confidence"] = r.confidence;
  j["summary"] = r.summary;
  j["phase"] = r.phase;
  j["scope"] = r.scope;
  j["world_size"] = r.world_size;
  j["last_good_step"] = r.last_good_step;
  j["missing_ranks"] = r.missing_ranks;
  json live = json::object();
  json per = json::array();
  json unseen_ranks = json::array();
  for (const auto& t : r.per_rank) {
    if (unseen(t)) {
      if (!unseen_ranks.empty() && unseen_ranks.back()[1].get<int>() + 1 == t.rank) {
        unseen_ranks.back()[1] = t.rank;
      } else {
        unseen_ranks.push_back({t.rank, t.rank});
      }
      continue;
    }
    live[std::to_string(t.rank)] = t.liveness;
    json p;
    p["rank"] = t.rank;
    p["liveness"] = t.liveness;
    p["last_step"] = t.last_step;
    p["last_phase"] = t.last_phase;
    p["last_coll"] = t.last_coll_seq
                         ? json{{"seq", t.last_coll_seq}, {"op", t.last_coll_op}, {"edge", t.last_coll_edge}}
                         : json(nullptr);
    p["exit_code"] = opt(t.exit_code);
    p["signal"] = opt(t.signal);
    p["mean_step_ms"] = t.mean_step_ms;
    p["busy_step_ms"] = t.busy_step_ms;
    p["last_event_t"] = t.last_event_t;
    p["last_progress_t"] = t.last_progress_t;
    p["last_hb_t"] = t.last_hb_t;
    p["stuck_in"] = t.stuck_in;
    p["failure"] = t.failure;
    p["exit_t"] = t.exit_t > 0 ? json(t.exit_t) : json(nullptr);
    p["exit_by_harness"] = t.exit_by_harness;
    p["proc_state"] = t.proc_state;
    p["stack_class"] = t.stack_class;
    p["top_frames"] = t.top_frames;
    p["progress"] = t.progress_lines > 0 ? json{{"last", t.progress},
                                                {"t", t.progress_t},
                                                {"lines", t.progress_lines},
                                                {"every_s", t.progress_every_s}}
                                         : json(nullptr);
    // A run's rank has a host only on [topology] nodes > 1 (its node); logs name theirs.
    if (!t.host.empty() || r.source == "logs") p["host"] = t.host;
    if (r.source == "logs" || r.source == "flight_recorder") {
      if (t.last_coll_seq && t.last_coll_numel >= 0) p["last_coll"]["numel"] = t.last_coll_numel;
      p["last_step_t"] = t.last_step_t;
      p["last_line"] = t.last_line;
      p["failure_ref"] = t.failure_ref;
    }
    per.push_back(std::move(p));
  }
  j["liveness"] = std::move(live);
  j["per_rank"] = std::move(per);
  j["unseen_ranks"] = std::move(unseen_ranks);  // [[first, last], ...]: liveness unknown, no row
  j["detector_context"] = r.detector_context;
  if (r.stuck_collective) {
    const auto& s = *r.stuck_collective;
    j["stuck_collective"] = {
        {"op", s.op}, {"seq", s.seq}, {"waiting_ranks", s.waiting_ranks}, {"absent_ranks", s.absent_ranks}};
  } else {
    j["stuck_collective"] = nullptr;
  }
  const auto failure = [](const Failure& f) {
    json j{{"rank", f.rank}, {"t", f.t}, {"what", f.what}, {"evidence", f.evidence}};
    if (!f.t_exact) j["t_exact"] = false;
    return j;
  };
  j["first_failure"] = r.first_failure ? failure(*r.first_failure) : json(nullptr);
  j["echoes"] = json::array();
  for (const auto& e : r.echoes) j["echoes"].push_back(failure(e));
  j["divergence_seq"] = opt(r.divergence_seq);
  j["divergence_step"] = opt(r.divergence_step);
  j["answers"] = r.answers;
  j["evidence"] = json::array();
  for (const auto& e : r.evidence) j["evidence"].push_back({{"ref", e.ref}, {"text", e.text}});
  j["next_steps"] = r.next_steps;
  j["t0"] = r.t0;
  j["source"] = r.source;
  j["notes"] = r.notes;
  return j;
}

}  // namespace hanglab
