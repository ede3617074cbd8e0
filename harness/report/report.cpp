#include "report/report.hpp"

#include <csignal>
#include <map>
#include <cstring>
#include <map>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "history/history.hpp"
#include "signal_name.hpp"
#include "util.hpp"

namespace hanglab {

using nlohmann::json;

namespace {

// "rank 2" / "ranks 0,2-63"
std::string rank_word(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_ranges(ranks);
}

}  // namespace

std::string verdict_line(const RunResult& res) {
  const Verdict& v = res.verdict;
  std::string status = v.status;
  for (auto& c : status) c = static_cast<char>(toupper(c));
  if (v.status == "skipped") return fmt::format("{:<8} {:<28} {}", status, res.scenario, v.skip_reason);
  std::string det;
  for (const auto& [d, s] : v.first_detection_s) det += fmt::format("{}{}@{:+.1f}s", det.empty() ? "" : " ", d, s);
  std::string failed;
  for (const auto& c : v.checks)
    if (c.status != "pass" && c.status != "observed") failed += fmt::format("; {} {}: want {}, got {}", c.status, c.name, c.expected, c.actual);
  return fmt::format("{:<8} {:<28} outcome={:<9} triage={}/{} {:5.1f}s  {}{}", status, res.scenario,
                     res.facts.outcome.empty() ? "-" : res.facts.outcome, res.triage.category.empty() ? "-" : res.triage.category,
                     res.triage.cause.empty() ? "-" : res.triage.cause, res.duration_s, det.empty() ? "no detections" : det,
                     failed);
}

std::string summary_table(const std::vector<RunResult>& results) {
  std::string out = fmt::format("{:<28} {:<8} {:<10} {:<36} {:>8}\n", "scenario", "verdict", "outcome", "triage", "time_s");
  int pass = 0, fail = 0, unknown = 0, skipped = 0, observed = 0;
  for (const auto& r : results) {
    out += fmt::format("{:<28} {:<8} {:<10} {:<36} {:>8.1f}\n", r.scenario, r.verdict.status,
                       r.facts.outcome.empty() ? "-" : r.facts.outcome,
                       r.triage.category.empty() ? "-" : r.triage.category + "/" + r.triage.cause, r.duration_s);
    if (r.verdict.status == "pass") ++pass;
    else if (r.verdict.status == "observed") ++observed;
    else if (r.verdict.status == "fail") ++fail;
    else if (r.verdict.status == "skipped") ++skipped;
    else ++unknown;
  }
  out += fmt::format("{} passed, {} failed, {} unknown, {} skipped{}\n", pass, fail, unknown, skipped,
                     observed ? fmt::format(", {} observed (no [expect])", observed) : "");
  return out;
}

std::string pass_rate_table(const std::vector<RunResult>& results) {
  struct Rate {
    int runs = 0, passed = 0, skipped = 0;
    std::map<std::string, int> other;  // fail / unknown -> count
  };
  std::vector<std::string> order;
  std::map<std::string, Rate> rates;
  for (const auto& r : results) {
    if (!rates.count(r.scenario)) order.push_back(r.scenario);
    Rate& x = rates[r.scenario];
    const std::string& st = r.verdict.status;
    if (st == "skipped") {
      ++x.skipped;
      continue;
    }
    ++x.runs;
    if (st == "pass" || st == "observed") ++x.passed;
    else ++x.other[st.empty() ? "unknown" : st];
  }
  std::string out = fmt::format("{:<28} {:>9} {:>7}  {}\n", "scenario", "pass rate", "", "not passed");
  int runs = 0, passed = 0;
  for (const auto& name : order) {
    const Rate& x = rates[name];
    runs += x.runs;
    passed += x.passed;
    std::string others;
    for (const auto& [st, n] : x.other) others += fmt::format("{}{} {}", others.empty() ? "" : ", ", n, st);
    if (x.runs == 0) {
      out += fmt::format("{:<28} {:>9} {:>7}  skipped {}x\n", name, "-", "", x.skipped);
      continue;
    }
    out += fmt::format("{:<28} {:>9} {:>6.0f}%  {}{}\n", name, fmt::format("{}/{}", x.passed, x.runs),
                       100.0 * x.passed / x.runs, others.empty() ? "-" : others,
                       x.skipped ? fmt::format(" (+{} skipped)", x.skipped) : "");
  }
  out += fmt::format("pass rate: {}/{} runs = {:.1f}%\n", passed, runs, runs ? 100.0 * passed / runs : 0.0);
  return out;
}

namespace {

// Per node: its exit and every check that failed, warned or was skipped.
std::string render_preflight_section(const nlohmann::json& record) {
  std::string out = "\nPreflight (instead of the job; no triage):\n";
  const auto pf = record.find("preflight");
  if (pf == record.end() || !pf->is_object()) return out + "  no preflight record\n";
  for (const auto& n : preflight_nodes(*pf)) {
    out += fmt::format("  node {}: {}, {} check(s) passed{}\n", n.node, n.exit, n.passed,
                       n.not_passed.empty() ? "" : fmt::format(", {} not", n.not_passed.size()));
    for (const auto& c : n.not_passed)
      out += fmt::format("    [{:<4}] {:<16} {} (rule: {}){}\n", c.value("status", ""), c.value("name", ""),
                         c.value("measured", ""), c.value("rule", ""),
                         c.value("detail", "").empty() ? "" : "; " + c.value("detail", ""));
  }
  std::vector<std::string> caught;
  for (const auto& c : pf->value("failed_checks", nlohmann::json::array()))
    if (c.is_object())
      caught.push_back(fmt::format("{} on node {}", c.value("check", ""),
                                   c.contains("node") && c["node"].is_number() ? c["node"].get<int>() : -1));
  if (!caught.empty()) out += fmt::format("  failed: {}\n", fmt::join(caught, ", "));
  return out;
}

}  // namespace

std::vector<PreflightNodeView> preflight_nodes(const nlohmann::json& preflight) {
  std::vector<PreflightNodeView> out;
  for (const auto& n : preflight.value("nodes", nlohmann::json::array())) {
    if (!n.is_object()) continue;
    PreflightNodeView v;
    v.node = n.value("node", -1);
    v.exit = n.contains("exit_code") && n["exit_code"].is_number() ? fmt::format("exit {}", n["exit_code"].get<int>())
                                                                   : std::string("did not finish");
    const auto rep = n.find("report");
    if (rep != n.end() && rep->is_object())
      for (const auto& c : rep->value("checks", nlohmann::json::array())) {
        if (!c.is_object() || (c.contains("node") && n.contains("node") && c["node"] != n["node"])) continue;
        if (c.value("status", "") == "pass")
          ++v.passed;
        else
          v.not_passed.push_back(c);
      }
    out.push_back(std::move(v));
  }
  return out;
}

std::string render_run_report(const Scenario& sc, const RunResult& res) {
  const RunFacts& f = res.facts;
  std::string out = fmt::format("hanglab run report: {}\n", sc.name);
  if (!sc.reproduces.empty()) out += "Reproduces: " + sc.reproduces + "\n";
  if (!sc.expected_note.empty()) out += "Expected:   " + sc.expected_note + "\n";
  out += fmt::format("Run dir:    {}\nVerdict:    {}\n", res.run_dir.string(), res.verdict.status);
  if (res.verdict.status == "skipped") return out + "Skipped:    " + res.verdict.skip_reason + "\n";
  out += fmt::format("Outcome:    {} (teardown: {}), {:.1f} s\n\n", f.outcome.empty() ? "-" : f.outcome,
                     f.teardown_reason, res.duration_s);
  out += "Expectations:\n";
  for (const auto& c : res.verdict.checks)
    out += fmt::format("  [{:<7}] {:<28} expected {:<24} got {}{}\n", c.status, c.name, c.expected, c.actual,
                       c.reason.empty() ? "" : "  (" + c.reason + ")");
  if (!f.manifests.empty()) {
    out += "\nFaults:\n";
    for (const auto& m : f.manifests) {
      out += fmt::format("  [{}] {:<22} {}: {}\n", m.index, m.kind,
                         m.exercised ? "EXERCISED" : m.fired ? "FIRED, NO EFFECT SEEN" : "NEVER FIRED", m.evidence);
      for (const auto& a : m.adapted) out += fmt::format("      arranged: {}\n", a);
    }
  }
  out += "\nTimeline (seconds after launch):\n";
  // The same detector firing on several ranks, and ranks ending the same way, are one line
  // at the first time, with the ranks compressed ("ranks 0-36,38-63") and the last time: a
  // 64-rank hang is a handful of lines, not 63 copies of the same timeout.
  struct Line {
    double t;
    std::string group;  // lines of one group are merged; empty: never merged
    std::vector<int> ranks;
    std::string text;   // after "ranks ..."
    double last_t = 0;
  };
  std::vector<Line> lines;
  for (const auto& x : f.faults)
    lines.push_back({x.t, "", {}, fmt::format("fault     {}{} -> {}", x.kind,
                                              x.ranks.empty() ? "" : " on " + rank_word(x.ranks), x.detail)});
  for (const auto& d : f.detections) {
    if (d.rank < 0)
      lines.push_back({d.t, "", {}, fmt::format("detect    {}: {}", d.detector, d.detail)});
    else
      lines.push_back({d.t, "detect " + d.detector, {d.rank}, d.detail});
  }
  for (const auto& e : f.exits) {
    const std::string how = e.signal ? "signal " + signal_name(*e.signal) : "code " + std::to_string(e.code.value_or(-1));
    lines.push_back({e.t, "exit " + how, {e.rank}, how});
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.t < b.t; });
  std::map<std::string, size_t> first_of;
  std::vector<Line> merged;
  for (auto& l : lines) {
    if (!l.group.empty()) {
      auto it = first_of.find(l.group);
      if (it != first_of.end()) {
        Line& m = merged[it->second];
        m.ranks.push_back(l.ranks.front());
        m.last_t = l.t;
        continue;
      }
      first_of[l.group] = merged.size();
    }
    l.last_t = l.t;
    merged.push_back(std::move(l));
  }
  for (const auto& l : merged) {
    std::string text = l.text;
    if (!l.group.empty()) {
      const std::string span = l.ranks.size() > 1 ? fmt::format(" (to {:+.3f})", l.last_t - f.start_t) : "";
      if (l.group.rfind("exit ", 0) == 0)
        // A preflight run's processes are its nodes' `hanglab preflight`, numbered by node.
        text = fmt::format("exit      {} {}{}",
                           sc.preflight ? (l.ranks.size() == 1 ? "node " : "nodes ") + rank_ranges(l.ranks)
                                        : rank_word(l.ranks),
                           l.text, span);
      else  // the first rank's detail stands for the group
        text = fmt::format("detect    {} {}{}: {}{}", l.group.substr(7), rank_word(l.ranks), span,
                           l.ranks.size() > 1 ? fmt::format("rank {}: ", l.ranks.front()) : "", l.text);
    }
    out += fmt::format("  {:+8.3f}  {}\n", l.t - f.start_t, text);
  }
  if (f.torchrun) {
    const TorchrunFacts& t = *f.torchrun;
    out += fmt::format("\nTorchrun: restarted {}, tore down {} ({} closing signal(s)), hung in teardown {}, exit {}\n",
                       t.restarts, t.tore_down ? "yes" : "no", t.closing_signals, t.hung_in_teardown ? "yes" : "no",
                       t.exit_code ? std::to_string(*t.exit_code)
                       : t.exit_signal ? "signal " + signal_name(*t.exit_signal)
                                       : std::string("-"));
    auto entry = [](const TorchrunFailure& x) {
      return fmt::format("rank {} exitcode {} (pid {}) at {}: {}", x.rank, x.exitcode, x.pid, x.time, x.traceback);
    };
    if (t.root_cause) out += "  Root Cause (first observed failure): " + entry(*t.root_cause) + "\n";
    for (const auto& x : t.failures) out += "  also failed: " + entry(x) + "\n";
  }
  if (res.flight_recorder) {  // [detect] flight_recorder: run/torchfrtrace.hpp
    const auto& j = *res.flight_recorder;
    const auto ranks = [&](const char* k) {
      return j.contains(k) && j[k].is_array() ? rank_ranges(j[k].get<std::vector<int>>()) : std::string("-");
    };
    out += fmt::format("\nFlight Recorder: dumps from rank(s) {} (ranks/<r>/flight_recorder.pkl){}\n", ranks("dumped_ranks"),
                       j.value("undumped_ranks", nlohmann::json::array()).empty()
                           ? std::string()
                           : fmt::format("; none from rank(s) {}", ranks("undumped_ranks")));
    if (j.contains("torchfrtrace") && j["torchfrtrace"].is_object()) {
      const auto& t = j["torchfrtrace"];
      out += fmt::format("  torchfrtrace: {}: {}{}\n", t.value("status", ""), t.value("detail", ""),
                         t.value("output", "").empty() ? "" : "  (" + t.value("output", "") + ")");
    }
  }
  if (!f.error_files.empty()) {
    out += "\nError files (TORCHELASTIC_ERROR_FILE):\n";
    for (const auto& e : f.error_files)
      out += fmt::format("  rank {}{}: {}  ({})\n", e.rank, e.attempt ? fmt::format(" attempt {}", e.attempt) : "",
                         e.message, e.path);
  }
  // A [preflight] scenario ran `hanglab preflight` on each node instead of the job: no rank
  // trained, so there is nothing to triage; what it found are the checks that did not pass.
  if (sc.preflight) return out + render_preflight_section(res.record);
  out += "\n" + render_text(res.triage);
  return out;
}

JunitSuite junit_suite(const Scenario& sc, const RunResult& res) {
  JunitSuite s;
  s.name = sc.name;
  s.time_s = res.duration_s;
  s.verdict = res.verdict;
  s.run_dir = res.run_dir.string();
  return s;
}

}  // namespace hanglab
