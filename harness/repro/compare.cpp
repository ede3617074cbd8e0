// Repro comparison (compare.hpp).
#include "repro/compare.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace hanglab::repro {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool known(const std::string& v) { return !v.empty() && v != "unknown" && v != "none"; }

// A stuck call's op without the backend's spelling: "_ALLGATHER_BASE", "allgather" -> "allgather".
std::string op_key(std::string op) {
  op = lower(op);
  op.erase(std::remove(op.begin(), op.end(), '_'), op.end());
  if (op.size() > 4 && op.substr(op.size() - 4) == "base") op.resize(op.size() - 4);
  return op;
}

// Phases a log reader names more coarsely than a run record: a step's data loading is part of
// training to a log without a data-loading marker.
bool phase_matches(const std::string& incident, const std::string& repro) {
  return incident == repro || (incident == "training" && repro == "data");
}

std::optional<int> culprit_signal(const TriageResult& r, const std::vector<int>& culprits) {
  for (const auto& pr : r.per_rank)
    if (!culprits.empty() && pr.rank == culprits.front()) return pr.signal;
  return std::nullopt;
}

// "last (whole node)": a node split's culprit node, as compared.
std::string node_role_text(const NodeSplit& s) {
  return s.node_role.empty() ? "" : s.node_role + (s.whole_node ? " (whole node)" : " (one rank of a node)");
}

// The reproduction's node split: from its triage's hosts, else from the candidate's [topology]
// (rank r runs on node r / ranks_per_node).
NodeSplit repro_split(const Candidate& c, TriageResult rep, const std::vector<int>& culprits) {
  NodeSplit s = node_split(rep, culprits);
  if (s.nodes >= 2 || c.nodes < 2) return s;
  const int per = c.ranks_per_node > 0 ? c.ranks_per_node : std::max(1, c.world / c.nodes);
  rep.per_rank.clear();
  for (int r = 0; r < c.world; ++r) {
    RankTimeline t;
    t.rank = r;
    t.host = "node" + std::to_string(r / per);
    rep.per_rank.push_back(t);
  }
  rep.world_size = c.world;
  return node_split(rep, culprits);
}

}  // namespace

std::vector<std::string> detectors_from_run_json(const nlohmann::json& j) {
  std::vector<std::pair<double, std::string>> d;
  if (j.contains("detections") && j["detections"].is_array())
    for (const auto& x : j["detections"])
      if (x.is_object() && x.contains("detector") && x["detector"].is_string())
        d.push_back({x.value("t", 0.0), x["detector"].get<std::string>()});
  std::stable_sort(d.begin(), d.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [t, name] : d)
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

std::string incident_detector(const TriageResult& r) {
  if (!r.first_failure) return "";
  const std::string w = lower(r.first_failure->what);
  if (w.find("timed out") != std::string::npos || w.find("timeout") != std::string::npos)
    return r.phase == "init" ? "exit_monitor" : "backend_timeout";
  if (w.find("closed") != std::string::npos || w.find("reset") != std::string::npos) return "backend_error";
  return "exit_monitor";
}

Comparison compare_one(const Plan& plan, const Candidate& c, const Observed& obs) {
  Comparison cmp;
  cmp.reader = obs.reader;
  const TriageResult& inc = plan.answer;
  const TriageResult& rep = obs.answer;
  const bool cause_known = known(inc.category);
  cmp.consistent_only = !cause_known;
  const auto field = [&](const std::string& name, const std::string& a, const std::string& b, bool same) {
    if (same)
      cmp.matched.push_back(a == b ? name + " " + a : fmt::format("{} {} (reproduction: {})", name, a, b));
    else {
      cmp.differs.push_back(fmt::format("{} (incident {}, reproduction {})", name, a.empty() ? "-" : a,
                                        b.empty() ? "-" : b));
      cmp.differ_fields.push_back(name);
    }
  };
  const std::vector<int> rep_culprits = culprits_of(rep);
  if (cause_known) {
    field("category", inc.category, rep.category, inc.category == rep.category);
    bool same = inc.cause == rep.cause;
    if (!same) {
      for (const auto& rf : refinements()) {
        if (rf.incident_cause != inc.cause || rf.repro_cause != rep.cause) continue;
        if (rf.signal && culprit_signal(rep, rep_culprits) != rf.signal) continue;
        if (!rf.phase.empty() && rep.phase != rf.phase) continue;
        same = true;
        cmp.notes.push_back(fmt::format("cause {} read as {}: {}", inc.cause, rep.cause, rf.reason));
      }
    }
    field("cause", inc.cause, rep.cause, same);
  } else {
    cmp.notes.push_back(fmt::format("the incident states no cause ({}/{}): only the facts it states are compared",
                                    inc.category.empty() ? "unknown" : inc.category,
                                    inc.cause.empty() ? "unknown" : inc.cause));
  }
  const std::string rep_role = role_of_culprits(rep, rep_culprits);
  if (plan.role == "unnamed" || plan.role == "unknown")
    cmp.notes.push_back("culprit role not compared: the incident's logs name no culprit rank" +
                        std::string(plan.role == "unknown" ? " whose place in the job they show" : ""));
  else if (plan.role == "only" && c.world == 1)
    field("culprit role", plan.role, rep_role, rep_role == "only");
  else
    field("culprit role", plan.role, rep_role, rep_role == plan.role || (plan.role == "only" && rep_role == "first"));
  // The culprit's node: where the incident shows hosts and the reproduction kept its split.
  if (plan.split.known() && !c.node_role.empty()) {
    const NodeSplit rs = repro_split(c, rep, rep_culprits);
    // Whether the culprits are their whole node is compared only where the incident shows every
    // rank's host; with some unknown, only the node's role is a fact of the incident.
    const bool whole = plan.split.whole_known;
    const std::string a = whole ? node_role_text(plan.split) : plan.split.node_role,
                      b = whole ? node_role_text(rs) : rs.node_role;
    field("culprit node", a, b, a == b);
  }
  if (known(inc.phase))
    field("phase", inc.phase, rep.phase, phase_matches(inc.phase, rep.phase));
  else
    cmp.notes.push_back("phase not compared: the incident's logs do not show it");
  if (inc.scope == "all" || inc.scope == "subset")
    field("scope", inc.scope, rep.scope, inc.scope == rep.scope || (c.world == 1 && plan.role == "only"));
  // Shown, not deciding.
  const std::string inc_op = inc.stuck_collective ? inc.stuck_collective->op : "";
  const std::string rep_op = rep.stuck_collective ? rep.stuck_collective->op : "";
  if (!inc_op.empty() || !rep_op.empty())
    cmp.notes.push_back(fmt::format("stuck call: incident {}, reproduction {}{}", inc_op.empty() ? "-" : inc_op,
                                    rep_op.empty() ? "-" : rep_op,
                                    !inc_op.empty() && op_key(inc_op) == op_key(rep_op) ? " (same)" : ""));
  const std::string inc_det = incident_detector(inc);
  if (!obs.detectors.empty()) {
    const bool fired = std::find(obs.detectors.begin(), obs.detectors.end(), inc_det) != obs.detectors.end();
    cmp.notes.push_back(fmt::format("detector: the reproduction's first was {}{}", obs.detectors.front(),
                                    inc_det.empty() ? ""
                                                    : fmt::format("; the incident's logs show {} ({})", inc_det,
                                                                  fired ? "fired here too" : "did not fire here")));
  }
  cmp.reproduced = cmp.differs.empty();
  return cmp;
}

Comparison compare(const Plan& plan, const Candidate& c, const std::vector<Observed>& readings) {
  Comparison first;
  for (size_t i = 0; i < readings.size(); ++i) {
    Comparison cmp = compare_one(plan, c, readings[i]);
    if (cmp.reproduced) return cmp;
    if (i == 0) first = std::move(cmp);
  }
  return first;
}

std::string Comparison::line() const {
  std::string head = reproduced ? (consistent_only ? "consistent with the incident" : "reproduced") : "not reproduced";
  std::string s = head;
  if (reproduced)
    s += fmt::format(" ({}; read from the {})", fmt::join(matched, ", "), reader);
  else
    s += fmt::format(": differs in {}", fmt::join(differs, "; "));
  return s;
}

}  // namespace hanglab::repro
