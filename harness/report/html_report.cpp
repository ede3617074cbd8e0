// HTML reports (report.html, matrix.html); see html_report.hpp.
// Over 800 lines: the run page and the matrix page share the page frame, styles and
// timeline helpers here; the matrix page is the part to move to a file of its own next.
#include "report/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "detect/registry.hpp"
#include "report/report.hpp"
#include "run/run_record.hpp"
#include "triage/triage.hpp"
#include "signal_name.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// ---- shared look -------------------------------------------------------------------------

const char* kCss = R"css(
:root{--fg:#1d2430;--muted:#5f6b7a;--line:#d9dee5;--bg:#ffffff;--panel:#f6f8fa;
--pass:#1a7f37;--fail:#cf222e;--unknown:#8250df;--skipped:#9a6700;}
*{box-sizing:border-box}
body{margin:0;font:13px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:14px 20px 10px;border-bottom:1px solid var(--line)}
h1{font-size:19px;margin:0 0 4px}
h2{font-size:14px;margin:18px 0 6px}
.muted{color:var(--muted)}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px;color:#fff;vertical-align:1px}
.b-pass{background:var(--pass)}.b-fail{background:var(--fail)}.b-unknown{background:var(--unknown)}.b-skipped{background:var(--skipped)}.b-observed{background:#3b6ea8}
.chip{display:inline-block;padding:0 6px;border:1px solid var(--line);border-radius:8px;background:var(--panel);font-size:12px;margin:0 4px 2px 0}
main{display:flex;gap:16px;padding:12px 20px;align-items:flex-start}
#timeline-col{flex:1 1 auto;min-width:0}
#triage{flex:0 0 360px;max-width:360px;min-width:0;overflow-wrap:anywhere;background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:10px 14px}
@media (max-width:1100px){main{flex-direction:column}#triage{flex-basis:auto;width:100%;max-width:none}}
#triage h2:first-child{margin-top:0}
#triage ol,#triage ul{padding-left:18px;margin:4px 0}
#triage li{margin-bottom:3px}
.tl-wrap{display:flex;border:1px solid var(--line);border-radius:6px;background:#fff}
.tl-labels{flex:0 0 auto;border-right:1px solid var(--line);background:#fbfcfd}
.tl-scroll{flex:1 1 auto;overflow-x:auto;position:relative}
.tl-scroll svg{display:block}
.controls{margin:6px 0;font-size:12px;color:var(--muted)}
.controls label{margin-right:12px;cursor:pointer}
#cursor-readout{font-variant-numeric:tabular-nums;margin-left:8px}
svg text{font-family:inherit}
.hide-steps .l-steps,.hide-phases .l-phases,.hide-colls .l-colls,.hide-hb .l-hb{display:none}
.row-bg.hl{fill:#fff4c2}
button{font:inherit;font-size:12px;padding:0 6px;border:1px solid var(--line);border-radius:4px;background:#fff;cursor:pointer}
.rank-label{cursor:pointer}
table{border-collapse:collapse;margin:4px 0 8px;font-size:12px}
th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
td:first-child{white-space:nowrap}
th{background:var(--panel);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.st-pass{color:var(--pass);font-weight:600}.st-fail{color:var(--fail);font-weight:600}
.st-unknown{color:var(--unknown);font-weight:600}.st-skipped{color:var(--skipped);font-weight:600}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:-1px;border-radius:2px}
code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px}
a{color:#0969da}
)css";

std::string badge(const std::string& status) {
  std::string s = status.empty() ? "unknown" : status;
  std::string up = s;
  for (auto& c : up) c = static_cast<char>(toupper(c));
  return fmt::format("<span class=\"badge b-{}\">{}</span>", html_escape(s), html_escape(up));
}

// The registry's colour (detect/registry.hpp), the same in every report.
std::string detector_color(const std::string& d) { return detector_colour(d); }

std::string phase_color(const std::string& p) {
  if (p == "checkpoint") return "#f0a030";
  if (p == "eval") return "#9d6fd6";
  if (p == "data") return "#2fa39a";
  if (p == "init") return "#7f93ad";
  if (p == "shutdown") return "#a9b1bb";
  return "#bbb";
}

std::string fmt_s(double s) { return fmt::format("{:.2f}", s); }

// ---- the run's data, from its files ----------------------------------------------------

struct Bar {
  double a = 0, b = 0;
  std::string kind;  // step | phase name | collective op
  std::string title;
  bool open = false;  // never ended: the rank was inside it when it died or was torn down
};

struct Mark {
  double t = 0;
  std::string kind;  // error | fault
  std::string title;
};

struct RankExitView {
  double t = 0;
  std::optional<int> code, signal;
  bool by_teardown = false;
};

struct RankView {
  int rank = 0;
  double first_t = NAN, last_t = NAN;
  std::vector<Bar> steps, phases, colls;
  std::vector<double> hbs;
  std::vector<Mark> marks;
  std::optional<RankExitView> exit;
};

struct GlobalMark {
  double t = 0;
  std::string kind;  // fault | detect | teardown | deadline
  std::string label, title, color;
  int rank = -1;
  std::vector<int> ranks;
};

struct RunView {
  std::string scenario, description, reproduces, expected;
  double t0 = 0, t_end = 0;
  std::vector<RankView> ranks;
  std::vector<GlobalMark> marks;
  json run, triage, harness_start;
  std::optional<double> fault_t;
};

RunView load_view(const fs::path& dir) {
  RunView v;
  v.run = read_run_json(dir);
  const auto harness = read_jsonl(dir / "harness.jsonl");
  if (v.run.empty() && harness.empty() && !fs::exists(dir / "ranks"))
    throw std::runtime_error(dir.string() + ": not a hanglab run directory");
  {
    std::ifstream in(dir / "triage.json");
    if (in) v.triage = json::parse(in, nullptr, false);
    if (!v.triage.is_object() && fs::exists(dir / "ranks")) {
      // An interrupted or older run without triage.json: the analyzer is pure, ask it.
      try {
        v.triage = to_json(triage_run_dir(dir));
      } catch (const std::exception&) {
        v.triage = json::object();
      }
    }
    if (!v.triage.is_object()) v.triage = json::object();
  }
  v.scenario = v.run.value("scenario", "");
  v.description = v.run.value("description", "");
  {
    std::ifstream in(dir / "scenario.toml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    header_notes(text, v.reproduces, v.expected);
  }

  double t_min = INFINITY, t_max = 0;
  auto see = [&](double t) {
    if (t <= 0) return;
    t_min = std::min(t_min, t);
    t_max = std::max(t_max, t);
  };

  // Ranks, from their traces.
  std::map<int, RankView> ranks;
  int world = v.run.contains("settings") ? v.run["settings"].value("world_size", 0) : 0;
  for (const auto& e : harness) {
    if (e.value("ev", "") == "run_start") {
      v.harness_start = e;
      world = std::max(world, e.value("world_size", 0));
    }
  }
  for (int r = 0; r < world; ++r) ranks[r].rank = r;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(dir / "ranks", ec)) {
    const std::string name = d.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    RankView& rv = ranks[std::stoi(name)];
    rv.rank = std::stoi(name);
    std::map<std::string, std::pair<double, int>> open_phase;
    std::map<long long, std::pair<double, std::string>> open_coll;
    for (const auto& e : read_jsonl(d.path() / "events.jsonl")) {
      const double t = e.value("t", 0.0);
      const std::string ev = e.value("ev", "");
      see(t);
      if (std::isnan(rv.first_t)) rv.first_t = t;
      rv.last_t = t;
      if (ev == "hb") {
        rv.hbs.push_back(t);
      } else if (ev == "step") {
        const double dur = e.value("dur_ms", 0.0) / 1000.0;
        const int step = e.value("step", 0);
        rv.steps.push_back({t - dur, t, "step",
                            fmt::format("rank {} step {}: {:.0f} ms, loss {}", rv.rank, step, dur * 1000,
                                        e.contains("loss") ? e["loss"].dump() : "-")});
      } else if (ev == "phase") {
        const std::string pname = e.value("name", ""), edge = e.value("edge", "");
        if (pname != "checkpoint" && pname != "eval" && pname != "data" && pname != "init" && pname != "shutdown")
          continue;  // forward/backward/optimizer: the step bar covers them
        if (edge == "begin") {
          open_phase[pname] = {t, e.value("step", 0)};
        } else if (auto it = open_phase.find(pname); it != open_phase.end()) {
          rv.phases.push_back({it->second.first, t, pname,
                               fmt::format("rank {} {} (step {}): {:.0f} ms", rv.rank, pname, it->second.second,
                                           (t - it->second.first) * 1000)});
          open_phase.erase(it);
        }
      } else if (ev == "coll") {
        const long long seq = e.value("seq", 0LL);
        const std::string op = e.value("op", "?"), edge = e.value("edge", "");
        if (edge == "begin") {
          open_coll[seq] = {t, op};
        } else if (auto it = open_coll.find(seq); it != open_coll.end()) {
          rv.colls.push_back({it->second.first, t, op,
                              fmt::format("rank {} {} seq {} (step {}, numel {}): {:.1f} ms", rv.rank, op, seq,
                                          e.value("step", 0), e.value("numel", 0LL), (t - it->second.first) * 1000)});
          open_coll.erase(it);
        }
      } else if (ev == "error") {
        rv.marks.push_back({t, "error",
                            fmt::format("rank {} error ({}) in {}: {}", rv.rank, e.value("class", "?"),
                                        e.value("where", "?"), e.value("msg", ""))});
      } else if (ev == "fault") {
        rv.marks.push_back({t, "fault", fmt::format("rank {} fault hook {}: {}", rv.rank, e.value("kind", ""),
                                                     e.value("detail", ""))});
      }
    }
    // What was still open when the trace ends: the rank is stuck (or died) in it.
    for (const auto& [pname, b] : open_phase)
      rv.phases.push_back({b.first, NAN, pname,
                           fmt::format("rank {} inside {} (step {}) from here to its end", rv.rank, pname, b.second),
                           true});
    for (const auto& [seq, b] : open_coll)
      rv.colls.push_back({b.first, NAN, b.second,
                          fmt::format("rank {} STUCK in {} seq {}: entered, never left", rv.rank, b.second, seq),
                          true});
  }

  // Supervisor events.
  for (const auto& e : harness) {
    const std::string ev = e.value("ev", "");
    const double t = e.value("t", 0.0);
    if (ev == "fault") {
      see(t);
      GlobalMark m{t, "fault", "fault: " + e.value("kind", ""), "", "#d1242f"};
      if (e.contains("ranks") && e["ranks"].is_array())
        for (const auto& r : e["ranks"])
          if (r.is_number_integer()) m.ranks.push_back(r.get<int>());
      m.title = fmt::format("fault {} fired on rank(s) {}: {}", e.value("kind", ""), rank_ranges(m.ranks),
                            e.value("detail", ""));
      if (!v.fault_t || t < *v.fault_t) v.fault_t = t;
      v.marks.push_back(m);
    } else if (ev == "detect") {
      see(t);
      const std::string d = e.value("detector", "");
      const int rank = e.value("rank", -1);
      v.marks.push_back({t, "detect", d + (rank >= 0 ? fmt::format(" r{}", rank) : ""),
                         fmt::format("{} fired{}: {}", d, rank >= 0 ? fmt::format(" on rank {}", rank) : " (job-wide)",
                                     e.value("detail", "")),
                         detector_color(d), rank, {}});
    } else if (ev == "exit") {
      see(t);
      const int r = e.value("rank", -1);
      if (r < 0) continue;
      RankExitView x;
      x.t = t;
      if (e.contains("code") && e["code"].is_number_integer()) x.code = e["code"].get<int>();
      if (e.contains("signal") && e["signal"].is_number_integer()) x.signal = e["signal"].get<int>();
      x.by_teardown = e.value("by_teardown", false);
      ranks[r].rank = r;
      ranks[r].exit = x;
    } else if (ev == "teardown") {
      see(t);
      const std::string reason = e.value("reason", "");
      v.marks.push_back({t, "teardown", "teardown (" + reason + ")",
                         "hanglab tore the job down: " + reason + " (SIGTERM, grace, then SIGKILL)", "#6e7781"});
    } else if (ev == "deadline") {
      v.marks.push_back({t, "deadline", "deadline", fmt::format("deadline_s = {} reached", e.value("deadline_s", 0.0)),
                         "#6e7781"});
    } else if (ev == "launch") {
      see(t);
    } else if (ev == "run_end") {
      see(t);
    }
  }
  v.t0 = v.run.contains("start_t") && v.run["start_t"].is_number() ? v.run["start_t"].get<double>() : t_min;
  if (!std::isfinite(v.t0)) v.t0 = 0;
  v.t_end = std::max(t_max, v.run.value("end_t", 0.0));
  if (v.t_end <= v.t0) v.t_end = v.t0 + 1;
  for (auto& [r, rv] : ranks) {
    const double end = rv.exit ? rv.exit->t : (std::isnan(rv.last_t) ? v.t_end : std::max(rv.last_t, v.t_end));
    for (auto* bars : {&rv.phases, &rv.colls})
      for (auto& b : *bars)
        if (b.open) b.b = std::max(b.a, end);
    v.ranks.push_back(std::move(rv));
  }
  std::stable_sort(v.marks.begin(), v.marks.end(), [](const GlobalMark& a, const GlobalMark& b) { return a.t < b.t; });
  return v;
}

// ---- the timeline SVG --------------------------------------------------------------------

struct Geometry {
  double t0 = 0, pps = 80;  // pixels per second at zoom 1
  double pad = 10;
  double x(double t) const { return pad + (t - t0) * pps; }
};

double nice_tick(double seconds_per_70px) {
  for (double s : {0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0})
    if (s >= seconds_per_70px) return s;
  return 1200;
}

// Every element placed in time carries its times (seconds after launch) as data-*
// attributes, so the zoom script only recomputes x positions: `.z` bars (data-a, data-b),
// `.zt` groups translated to data-t (markers are drawn around x = 0 inside them, so they
// never stretch), `.zl` vertical lines at data-t, `path.hb` heartbeat ticks (data-ts).
std::string timeline_html(const RunView& v) {
  const int n = static_cast<int>(v.ranks.size());
  // Row height: roomy for a handful of ranks, still a readable 10 px strip at 64.
  const double rh = n <= 8 ? 30 : n <= 16 ? 22 : n <= 32 ? 15 : n <= 64 ? 10 : 7;
  // The view starts at the first trace event when process start-up (loading LibTorch
  // takes seconds on a busy host) would otherwise fill much of the width; the axis still
  // counts seconds after launch.
  double first = INFINITY;
  for (const auto& r : v.ranks)
    if (!std::isnan(r.first_t)) first = std::min(first, r.first_t);
  for (const auto& m : v.marks) first = std::min(first, m.t);
  double view_start = v.t0;
  if (std::isfinite(first) && first - v.t0 > 0.15 * (v.t_end - v.t0))
    view_start = std::max(v.t0, first - 0.04 * (v.t_end - first));
  const double offset = view_start - v.t0;  // seconds after launch at the left edge
  const double duration = v.t_end - view_start;
  Geometry g;
  g.t0 = view_start;
  // Fit about 860 px (the timeline column of a 1400 px window); the page's zoom buttons
  // and its fit-to-window on load take it from there.
  g.pps = std::clamp(860.0 / duration, 8.0, 200.0);
  // Right margin: room for the exit labels of ranks that end with the run.
  const double width = g.x(v.t_end) + 64;
  auto rel = [&](double t) { return fmt::format("{:.4f}", t - view_start); };

  // Vertical lines and lane labels: the fault, each detector's first firing (its later
  // firings on other ranks are dots on their rows), teardown and deadline.
  struct Lane {
    const GlobalMark* m;
    std::string label;
    int level = 0;
    bool left = false;  // drawn to the left of its line (near the end of the run)
  };
  std::vector<Lane> lane_marks;
  std::map<std::string, size_t> first_of;
  for (const auto& m : v.marks) {
    if (m.kind == "detect") {
      const std::string det = m.title.substr(0, m.title.find(' '));
      if (auto it = first_of.find(det); it != first_of.end()) {
        Lane& l = lane_marks[it->second];
        const size_t more = l.label.find(" +") == std::string::npos ? 1 : std::stoul(l.label.substr(l.label.find(" +") + 2)) + 1;
        l.label = l.label.substr(0, l.label.find(" +")) + fmt::format(" +{}", more);
        continue;
      }
      first_of[det] = lane_marks.size();
    }
    lane_marks.push_back({&m, m.label, 0});
  }
  // Stacked in levels so labels never overlap; a label near the end of the run hangs to
  // the left of its line so it is not cut off. Both hold at any zoom >= 1.
  std::vector<std::vector<std::pair<double, double>>> levels;
  for (auto& l : lane_marks) {
    const double x = g.x(l.m->t);
    const double w = 6.6 * static_cast<double>(l.label.size()) + 12;
    l.left = l.m->t - view_start > 0.7 * duration;
    const double a = l.left ? x - w : x, b = l.left ? x : x + w;
    size_t level = 0;
    for (; level < levels.size(); ++level) {
      bool free = true;
      for (const auto& [u, w2] : levels[level]) free = free && (b <= u || a >= w2);
      if (free) break;
    }
    if (level == levels.size()) levels.emplace_back();
    levels[level].push_back({a, b});
    l.level = static_cast<int>(level);
  }
  const double lane_h = 6 + 15 * static_cast<double>(std::max<size_t>(1, levels.size()));
  const double axis_h = 18;
  const double rows_y = lane_h + axis_h;
  const double rows_h = rh * n;
  const double height = rows_y + rows_h + axis_h + 4;

  std::set<int> missing;
  if (v.triage.contains("missing_ranks") && v.triage["missing_ranks"].is_array())
    for (const auto& r : v.triage["missing_ranks"])
      if (r.is_number_integer()) missing.insert(r.get<int>());
  std::map<int, std::string> liveness;
  if (v.triage.contains("liveness") && v.triage["liveness"].is_object())
    for (const auto& [k, val] : v.triage["liveness"].items())
      if (val.is_string()) liveness[std::atoi(k.c_str())] = val.get<std::string>();

  // Left column: rank labels, in their own SVG so they stay put while the timeline scrolls.
  std::string labels = fmt::format("<svg class=\"tl-labels-svg\" width=\"132\" height=\"{:.0f}\">", height);
  labels += fmt::format("<text x=\"8\" y=\"{:.1f}\" font-size=\"11\" fill=\"#5f6b7a\">events</text>", lane_h - 6);
  const double fs = std::min(12.0, std::max(8.0, rh - 2));
  for (int i = 0; i < n; ++i) {
    const RankView& r = v.ranks[i];
    const double y = rows_y + rh * i;
    const bool miss = missing.count(r.rank) > 0;
    const std::string live = liveness.count(r.rank) ? liveness[r.rank] : "";
    const std::string live_span =
        live.empty() ? ""
                     : fmt::format("<tspan fill=\"{}\" font-size=\"{:.0f}\"> {}</tspan>",
                                   live == "completed" ? "#5f6b7a" : "#cf222e", std::max(8.0, fs - 1), html_escape(live));
    labels += fmt::format(
        "<g class=\"rank-label\" data-rank=\"{0}\"><rect x=\"0\" y=\"{1:.1f}\" width=\"132\" height=\"{2:.1f}\" "
        "fill=\"{3}\"/><text x=\"8\" y=\"{4:.1f}\" font-size=\"{5:.0f}\" fill=\"{6}\" font-weight=\"{7}\">{8}{9}{10}"
        "</text></g>",
        r.rank, y, rh, i % 2 ? "#f5f7f9" : "#fbfcfd", y + rh / 2 + fs * 0.36, fs, miss ? "#cf222e" : "#1d2430",
        miss ? "700" : "400", rh >= 14 ? "rank " : "r", r.rank, live_span);
  }
  labels += "</svg>";

  std::string s = fmt::format(
      "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "data-pps=\"{:.4f}\" data-pad=\"{:.1f}\" data-dur=\"{:.4f}\" data-off=\"{:.4f}\" data-fault=\"{}\" data-rows-y=\"{:.1f}\" "
      "data-rows-h=\"{:.1f}\" role=\"img\" aria-label=\"per-rank timeline\">",
      width, height, g.pps, g.pad, duration, offset, v.fault_t ? rel(*v.fault_t) : "", rows_y, rows_h);
  s += "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fde2e1\"/><line x1=\"0\" y1=\"0\" "
       "x2=\"0\" y2=\"6\" stroke=\"#cf222e\" stroke-width=\"2\"/></pattern></defs>";

  // Row backgrounds first, then the grid over them, then the bars.
  std::string bgs;
  for (int i = 0; i < n; ++i)
    bgs += fmt::format("<rect class=\"row-bg\" data-rank=\"{}\" x=\"0\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.1f}\" fill=\"{}\"/>",
                       v.ranks[i].rank, rows_y + rh * i, width, rh, i % 2 ? "#f5f7f9" : "#ffffff");
  // Axis with grid lines, above the rows and again below them (re-drawn by the zoom).
  const double tick = nice_tick(70 / g.pps);
  std::string grid = "<g id=\"grid\">";
  for (double t = std::ceil(offset / tick - 1e-9) * tick; t <= offset + duration + 1e-9; t += tick) {
    const double x = g.x(v.t0 + t);
    const std::string label = tick < 1 ? fmt::format("{:.1f}s", t) : fmt::format("{:.0f}s", t);
    grid += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#e6eaef\"/>", x, rows_y,
                        rows_y + rows_h);
    for (double ty : {rows_y - 5, rows_y + rows_h + 13})
      grid += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#5f6b7a\" text-anchor=\"middle\">{}</text>",
                          x, ty, label);
  }
  grid += "</g>";

  std::string rows;
  const double mr = std::max(2.5, std::min(5.0, rh / 3));
  auto bar = [&](const Bar& b, const std::string& cls, double y, double h, const std::string& fill,
                 const std::string& extra) {
    return fmt::format(
        "<rect class=\"z {}\" data-a=\"{}\" data-b=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" "
        "fill=\"{}\"{}><title>{}</title></rect>",
        cls, rel(b.a), rel(b.b), g.x(b.a), y, std::max(1.0, (b.b - b.a) * g.pps), h, fill, extra, html_escape(b.title));
  };
  auto at = [&](double t, const std::string& cls, const std::string& body) {
    return fmt::format("<g class=\"zt {}\" data-t=\"{}\" transform=\"translate({:.2f} 0)\">{}</g>", cls, rel(t), g.x(t), body);
  };
  for (int i = 0; i < n; ++i) {
    const RankView& r = v.ranks[i];
    const double y = rows_y + rh * i, cy = y + rh / 2;
    rows += fmt::format("<g class=\"rank-row\" data-rank=\"{}\">", r.rank);
    // Lifeline: from the first trace line to the exit (or the end of the run).
    if (!std::isnan(r.first_t)) {
      const double end = r.exit ? r.exit->t : v.t_end;
      rows += fmt::format(
          "<line class=\"z\" data-a=\"{}\" data-b=\"{}\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" "
          "stroke=\"#c3cad3\" stroke-width=\"1\"/>",
          rel(r.first_t), rel(end), g.x(r.first_t), g.x(end), cy, cy);
    }
    rows += "<g class=\"l-steps\">";
    for (size_t k = 0; k < r.steps.size(); ++k)
      rows += bar(r.steps[k], "step", y + 1, rh - 2, k % 2 ? "#c5d3e6" : "#dde6f1", "");
    rows += "</g><g class=\"l-phases\">";
    for (const Bar& b : r.phases)
      rows += bar(b, "phase phase-" + b.kind, y + 1, rh * 0.42, phase_color(b.kind),
                  b.open ? " stroke=\"#cf222e\" stroke-dasharray=\"3 2\" fill-opacity=\"0.55\"" : "");
    rows += "</g><g class=\"l-colls\">";
    for (const Bar& b : r.colls)
      rows += bar(b, b.open ? "coll stuck" : "coll", y + rh * 0.5, rh * 0.36,
                  b.open ? "url(#hatch)" : (b.kind == "barrier" ? "#6b7fd7" : "#2f6fd0"),
                  b.open ? " stroke=\"#cf222e\" stroke-width=\"1\"" : "");
    rows += "</g><g class=\"l-hb\">";
    if (!r.hbs.empty()) {
      std::string ts, d;
      for (double t : r.hbs) {
        ts += (ts.empty() ? "" : " ") + rel(t);
        d += fmt::format("M{:.1f} {:.1f}v3", g.x(t), y + rh - 4);
      }
      rows += fmt::format(
          "<path class=\"hb\" data-ts=\"{}\" data-y=\"{:.1f}\" d=\"{}\" stroke=\"#2da44e\" stroke-width=\"1\">"
          "<title>rank {} heartbeats ({})</title></path>",
          ts, y + rh - 4, d, r.rank, r.hbs.size());
    }
    rows += "</g>";
    for (const Mark& m : r.marks) {
      if (m.kind == "error")
        rows += at(m.t, "err-marker",
                   fmt::format("<path d=\"M0 {0:.1f}l{1:.1f} {1:.1f}l-{1:.1f} {1:.1f}l-{1:.1f} -{1:.1f}z\" fill=\"#cf222e\" "
                               "stroke=\"#fff\" stroke-width=\"0.8\"><title>{2}</title></path>",
                               cy - mr, mr, html_escape(m.title)));
      else
        rows += at(m.t, "fault-hook",
                   fmt::format("<path d=\"M0 {:.1f}l{:.1f} {:.1f}h-{:.1f}z\" fill=\"#d1242f\"><title>{}</title></path>",
                               cy - mr, mr, 2 * mr, 2 * mr, html_escape(m.title)));
    }
    for (const auto& m : v.marks) {
      if (m.kind == "detect" && m.rank == r.rank)
        rows += at(m.t, "detect-dot",
                   fmt::format("<circle cx=\"0\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"1\">"
                               "<title>{}</title></circle>",
                               cy, mr, m.color, html_escape(m.title)));
      if (m.kind == "fault" && std::find(m.ranks.begin(), m.ranks.end(), r.rank) != m.ranks.end())
        rows += at(m.t, "fault-target",
                   fmt::format("<path d=\"M0 {:.1f}l{:.1f} {:.1f}h-{:.1f}z\" fill=\"#d1242f\" stroke=\"#fff\" "
                               "stroke-width=\"0.8\"><title>{}</title></path>",
                               y + 1, mr, 1.6 * mr, 2 * mr, html_escape(m.title)));
    }
    if (r.exit) {
      const RankExitView& x = *r.exit;
      std::string what =
          x.signal ? "killed by " + signal_name(*x.signal) : fmt::format("exit code {}", x.code.value_or(-1));
      if (x.by_teardown) what += " (hanglab teardown)";
      const std::string color = x.by_teardown             ? "#8c959f"
                                : x.signal                ? "#cf222e"
                                : x.code.value_or(0) == 0 ? "#1a7f37"
                                                          : "#d9730d";
      const std::string title = html_escape(fmt::format("rank {} {} at +{:.2f} s", r.rank, what, x.t - v.t0));
      std::string body =
          x.signal ? fmt::format("<path d=\"M-{0:.1f} {1:.1f}l{2:.1f} {2:.1f}M-{0:.1f} {3:.1f}l{2:.1f} -{2:.1f}\" "
                                 "stroke=\"{4}\" stroke-width=\"2.2\"/>",
                                 mr, cy - mr, 2 * mr, cy + mr, color)
                   : fmt::format("<rect x=\"-{0:.1f}\" y=\"{1:.1f}\" width=\"{2:.1f}\" height=\"{2:.1f}\" rx=\"{3:.1f}\" "
                                 "fill=\"{4}\"/>",
                                 mr, cy - mr, 2 * mr, x.code.value_or(0) == 0 && !x.by_teardown ? mr : 1.0, color);
      if (rh >= 14)
        body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"{}\">{}</text>", mr + 3, cy + 3.5, color,
                            html_escape(x.signal ? signal_name(*x.signal) : fmt::format("exit {}", x.code.value_or(-1))));
      rows += at(x.t, "exit-marker", body + "<title>" + title + "</title>");
    }
    rows += "</g>";
  }

  std::string lines, lane;
  int fault_i = 0;
  for (const auto& l : lane_marks) {
    const GlobalMark& m = *l.m;
    const double ly = 4 + 15 * l.level + 11;
    const bool fault = m.kind == "fault";
    const std::string dash =
        m.kind == "detect" ? " stroke-dasharray=\"5 3\"" : fault ? "" : " stroke-dasharray=\"2 3\"";
    const std::string id = fault ? fmt::format(" id=\"fault-{}\"", fault_i++) : "";
    std::string when = fmt::format("+{:.2f} s after launch", m.t - v.t0);
    if (v.fault_t && m.kind == "detect") when = fmt::format("{:+.2f} s after the fault", m.t - *v.fault_t);
    lines += fmt::format(
        "<line class=\"zl {}-marker\"{} data-t=\"{}\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"{}\" stroke-width=\"{}\"{}><title>{}</title></line>",
        m.kind, id, rel(m.t), g.x(m.t), g.x(m.t), ly + 3, rows_y + rows_h, m.color, fault ? "2" : "1.5", dash,
        html_escape(m.title + " (" + when + ")"));
    const double lw = 6.6 * static_cast<double>(l.label.size()) + 8;
    lane += at(m.t, "lane-label " + m.kind + "-label",
               fmt::format("<title>{}</title><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"13\" rx=\"3\" "
                           "fill=\"{}\"/><text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10.5\" fill=\"#fff\">{}</text>",
                           html_escape(m.title + " (" + when + ")"), l.left ? 1 - lw : -1.0, ly - 10, lw, m.color,
                           l.left ? 5 - lw : 3.0, ly, html_escape(l.label)));
  }
  s += bgs + grid + rows + lines + lane;
  s += fmt::format(
      "<line id=\"cursor\" x1=\"0\" x2=\"0\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#57606a\" stroke-width=\"1\" "
      "visibility=\"hidden\" pointer-events=\"none\"/>",
      lane_h, rows_y + rows_h);
  s += "</svg>";

  std::string html = "<div class=\"controls\">show: "
                     "<label><input type=\"checkbox\" data-layer=\"steps\" checked> steps</label>"
                     "<label><input type=\"checkbox\" data-layer=\"phases\" checked> phases</label>"
                     "<label><input type=\"checkbox\" data-layer=\"colls\" checked> collectives</label>"
                     "<label><input type=\"checkbox\" data-layer=\"hb\" checked> heartbeats</label>"
                     " &nbsp; zoom: <button type=\"button\" data-zoom=\"fit\">fit</button> "
                     "<button type=\"button\" data-zoom=\"2\">2&times;</button> "
                     "<button type=\"button\" data-zoom=\"4\">4&times;</button> "
                     "<button type=\"button\" data-zoom=\"8\">8&times;</button> "
                     "<button type=\"button\" data-zoom=\"fault\">at the fault</button>"
                     "<span id=\"cursor-readout\"></span>" +
                     (offset > 0 ? fmt::format("<span class=\"muted\" title=\"process start-up before the first trace event is "
                                               "left out\"> &nbsp; from +{:.1f} s</span>",
                                               offset)
                                 : std::string()) +
                     "</div>";
  html += "<div class=\"tl-wrap\"><div class=\"tl-labels\">" + labels + "</div><div class=\"tl-scroll\">" + s +
          "</div></div>";
  html += "<div class=\"legend muted\" style=\"margin-top:6px\">"
          "<span><i style=\"background:#dde6f1;border:1px solid #c5d3e6\"></i>step</span>"
          "<span><i style=\"background:#2f6fd0\"></i>collective</span>"
          "<span><i style=\"background:repeating-linear-gradient(45deg,#fde2e1 0 3px,#cf222e 3px 5px)\"></i>stuck in a collective</span>"
          "<span><i style=\"background:#f0a030\"></i>checkpoint</span>"
          "<span><i style=\"background:#9d6fd6\"></i>eval</span>"
          "<span><i style=\"background:#2fa39a\"></i>data</span>"
          "<span><i style=\"background:#7f93ad\"></i>init</span>"
          "<span><i style=\"background:#2da44e;width:2px\"></i>heartbeat</span>"
          "<span><i style=\"background:#d1242f\"></i>fault</span>"
          "<span>&#9670; error &nbsp; &#10005; killed by a signal &nbsp; &#9632; exit code &nbsp; &#9679; detector on a rank "
          "&nbsp; dashed line: a detector's first firing</span>"
          "</div>";
  return html;
}

const char* kRunScript = R"js(
(function(){
  var svg=document.getElementById('timeline');
  if(!svg){document.documentElement.setAttribute('data-js','ok');return;}
  var NS='http://www.w3.org/2000/svg';
  var base=parseFloat(svg.dataset.pps),pad=parseFloat(svg.dataset.pad),dur=parseFloat(svg.dataset.dur),off=parseFloat(svg.dataset.off);
  var rowsY=parseFloat(svg.dataset.rowsY),rowsH=parseFloat(svg.dataset.rowsH);
  var fault=svg.dataset.fault===''?null:parseFloat(svg.dataset.fault);
  var scroller=svg.parentNode,pps=base;
  function X(t){return pad+t*pps;}
  function all(sel){return Array.prototype.slice.call(svg.querySelectorAll(sel));}
  function el(tag,attrs,text){var e=document.createElementNS(NS,tag);for(var k in attrs)e.setAttribute(k,attrs[k]);if(text)e.textContent=text;return e;}
  function nice(s){var c=[0.1,0.2,0.5,1,2,5,10,15,30,60,120,300,600];for(var i=0;i<c.length;i++)if(c[i]>=s)return c[i];return 1200;}
  // Re-places everything at a new scale; markers keep their size, only positions move.
  function layout(newPps){
    pps=newPps;var W=X(dur)+64;svg.setAttribute('width',W.toFixed(0));
    all('.row-bg').forEach(function(e){e.setAttribute('width',W.toFixed(0));});
    all('.z').forEach(function(e){var a=parseFloat(e.dataset.a),b=parseFloat(e.dataset.b);
      if(e.tagName==='line'){e.setAttribute('x1',X(a).toFixed(2));e.setAttribute('x2',X(b).toFixed(2));}
      else{e.setAttribute('x',X(a).toFixed(2));e.setAttribute('width',Math.max(1,(b-a)*pps).toFixed(2));}});
    all('.zt').forEach(function(e){e.setAttribute('transform','translate('+X(parseFloat(e.dataset.t)).toFixed(2)+' 0)');});
    all('.zl').forEach(function(e){var x=X(parseFloat(e.dataset.t)).toFixed(2);e.setAttribute('x1',x);e.setAttribute('x2',x);});
    all('path.hb').forEach(function(p){var y=p.dataset.y,d='';p.dataset.ts.split(' ').forEach(function(t){d+='M'+X(parseFloat(t)).toFixed(1)+' '+y+'v3';});p.setAttribute('d',d);});
    var grid=document.getElementById('grid');while(grid.firstChild)grid.removeChild(grid.firstChild);
    var tick=nice(70/pps);
    for(var t=Math.ceil(off/tick-1e-9)*tick;t<=off+dur+1e-9;t+=tick){var x=X(t-off),lab=tick<1?t.toFixed(1)+'s':t.toFixed(0)+'s';
      grid.appendChild(el('line',{x1:x,x2:x,y1:rowsY,y2:rowsY+rowsH,stroke:'#e6eaef'}));
      [rowsY-5,rowsY+rowsH+13].forEach(function(ty){grid.appendChild(el('text',{x:x,y:ty,'font-size':10,fill:'#5f6b7a','text-anchor':'middle'},lab));});}
  }
  function fit(){var w=scroller.clientWidth-pad-68;if(w>100&&dur>0)layout(Math.max(2,w/dur));}
  document.querySelectorAll('button[data-zoom]').forEach(function(b){b.addEventListener('click',function(){
    var z=b.dataset.zoom;
    if(z==='fit'){fit();return;}
    if(z==='fault'){if(fault===null)return;layout(Math.max(pps,300));scroller.scrollLeft=X(fault)-scroller.clientWidth*0.25;return;}
    fit();layout(pps*parseFloat(z));});});
  document.querySelectorAll('input[data-layer]').forEach(function(cb){
    cb.addEventListener('change',function(){svg.classList.toggle('hide-'+cb.dataset.layer,!cb.checked);});});
  var cur=document.getElementById('cursor'),out=document.getElementById('cursor-readout');
  svg.addEventListener('mousemove',function(ev){
    var r=svg.getBoundingClientRect(),x=ev.clientX-r.left,t=(x-pad)/pps;
    cur.setAttribute('x1',x);cur.setAttribute('x2',x);cur.setAttribute('visibility','visible');
    out.textContent='t = +'+(t+off).toFixed(2)+' s after launch'+(fault===null?'':' ('+(t-fault>=0?'+':'')+(t-fault).toFixed(2)+' s from the fault)');});
  svg.addEventListener('mouseleave',function(){cur.setAttribute('visibility','hidden');out.textContent='';});
  document.querySelectorAll('.rank-label').forEach(function(l){l.addEventListener('click',function(){
    var row=svg.querySelector('.rank-row[data-rank="'+l.dataset.rank+'"]');if(row)row.classList.toggle('hl');
    var bg=svg.querySelector('.row-bg[data-rank="'+l.dataset.rank+'"]');if(bg)bg.classList.toggle('hl');});});
  fit();
  document.documentElement.setAttribute('data-js','ok');
})();
)js";

// A [preflight] run ran `hanglab preflight` on each node instead of the job: no triage; per node,
// the checks that did not pass (run.json "preflight": run/preflight_run.cpp).
std::string preflight_panel(const json& pf) {
  std::string h = "<aside id=\"triage\"><h2>Preflight</h2><p class=\"muted\">preflight ran instead of the job: "
                  "nothing to triage</p>";
  for (const auto& n : preflight_nodes(pf)) {
    h += fmt::format("<p>node {}: {}, {} check(s) passed</p>", n.node, n.exit, n.passed);
    if (n.not_passed.empty()) continue;
    h += "<ul>";
    for (const auto& c : n.not_passed)
      h += fmt::format("<li><b>{}</b> {}: {} <span class=\"muted\">(rule: {})</span></li>",
                       html_escape(c.value("status", "")), html_escape(c.value("name", "")),
                       html_escape(c.value("measured", "")), html_escape(c.value("rule", "")));
    h += "</ul>";
  }
  return h + "</aside>";
}

std::string triage_panel(const json& tr) {
  std::string h = "<aside id=\"triage\"><h2>Triage</h2>";
  if (tr.empty()) return h + "<p class=\"muted\">no triage.json in this run directory</p></aside>";
  h += fmt::format("<p><b>{}</b></p>", html_escape(tr.value("summary", "")));
  h += fmt::format("<p><span class=\"chip\">category <b>{}</b></span><span class=\"chip\">cause <b>{}</b></span>"
                   "<span class=\"chip\">phase <b>{}</b></span><span class=\"chip\">scope <b>{}</b></span>"
                   "<span class=\"chip\">confidence <b>{}</b></span><span class=\"chip\">last good step <b>{}</b></span></p>",
                   html_escape(tr.value("category", "-")), html_escape(tr.value("cause", "-")),
                   html_escape(tr.value("phase", "-")), html_escape(tr.value("scope", "-")),
                   html_escape(tr.value("confidence", "-")), tr.value("last_good_step", 0));
  if (tr.contains("missing_ranks") && tr["missing_ranks"].is_array() && !tr["missing_ranks"].empty())
    h += fmt::format("<p>missing ranks: <b style=\"color:#cf222e\">{}</b></p>",
                     html_escape(rank_ranges(tr["missing_ranks"].get<std::vector<int>>())));
  if (tr.contains("stuck_collective") && tr["stuck_collective"].is_object()) {
    const json& s = tr["stuck_collective"];
    const auto ranks = [&](const char* key) {
      const json& v = s.value(key, json::array());
      std::vector<int> out;
      for (const auto& x : v)
        if (x.is_number_integer()) out.push_back(x.get<int>());
      return out.empty() ? std::string("none") : rank_ranges(out);
    };
    h += fmt::format("<p>stuck collective: <code>{} seq {}</code>, waiting ranks {}, absent ranks {}</p>",
                     html_escape(s.value("op", "")), s.value("seq", 0LL), html_escape(ranks("waiting_ranks")),
                     html_escape(ranks("absent_ranks")));
  }
  if (tr.contains("first_failure") && tr["first_failure"].is_object()) {
    const json& f = tr["first_failure"];
    h += fmt::format("<p>first failure: rank {} &mdash; {} <span class=\"muted\">({})</span></p>", f.value("rank", -1),
                     html_escape(f.value("what", "")), html_escape(f.value("evidence", "")));
  }
  if (tr.contains("answers") && tr["answers"].is_array() && !tr["answers"].empty()) {
    h += "<h2>The four questions</h2><ol>";
    for (const auto& a : tr["answers"])
      if (a.is_string()) h += "<li>" + html_escape(a.get<std::string>()) + "</li>";
    h += "</ol>";
  }
  if (tr.contains("echoes") && tr["echoes"].is_array() && !tr["echoes"].empty()) {
    h += fmt::format("<h2>Echoes ({})</h2><ul>", tr["echoes"].size());
    size_t k = 0;
    for (const auto& e : tr["echoes"]) {
      if (++k > 8) {
        h += fmt::format("<li class=\"muted\">&hellip; {} more</li>", tr["echoes"].size() - 8);
        break;
      }
      h += fmt::format("<li>rank {}: {}</li>", e.value("rank", -1), html_escape(e.value("what", "")));
    }
    h += "</ul>";
  }
  if (tr.contains("next_steps") && tr["next_steps"].is_array() && !tr["next_steps"].empty()) {
    h += "<h2>Next steps</h2><ul>";
    for (const auto& a : tr["next_steps"])
      if (a.is_string()) h += "<li>" + html_escape(a.get<std::string>()) + "</li>";
    h += "</ul>";
  }
  if (tr.contains("evidence") && tr["evidence"].is_array() && !tr["evidence"].empty()) {
    h += "<h2>Evidence</h2><ul>";
    size_t k = 0;
    for (const auto& e : tr["evidence"]) {
      if (++k > 12) break;
      std::string ref = e.value("ref", "");
      std::string file = ref.substr(0, ref.find(':'));
      h += fmt::format("<li><a href=\"{}\"><code>{}</code></a> {}</li>", html_escape(file), html_escape(ref),
                       html_escape(e.value("text", "")));
    }
    h += "</ul>";
  }
  return h + "</aside>";
}

}  // namespace

std::string render_run_html(const fs::path& dir) {
  const RunView v = load_view(dir);
  const json& run = v.run;
  const json verdict = run.value("verdict", json::object());
  const std::string status = verdict.value("status", run.empty() ? "unknown" : "unknown");
  const std::string title = v.scenario.empty() ? dir.filename().string() : v.scenario;

  std::string h = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">";
  h += "<title>hanglab: " + html_escape(title) + " &mdash; " + html_escape(status) + "</title><style>" + kCss +
       "</style></head><body>";
  h += "<header><h1>" + html_escape(title) + " " + badge(status) + "</h1>";
  if (!v.description.empty()) h += "<div>" + html_escape(v.description) + "</div>";
  std::string facts;
  if (run.contains("outcome")) facts += fmt::format("outcome <b>{}</b>", html_escape(run.value("outcome", "-")));
  if (run.contains("teardown_reason"))
    facts += fmt::format(" &middot; teardown {}", html_escape(run.value("teardown_reason", "-")));
  facts += fmt::format(" &middot; {:.1f} s", run.value("duration_s", v.t_end - v.t0));
  if (run.contains("settings")) {
    const json& st = run["settings"];
    facts += fmt::format(" &middot; {} ranks, {}, {} steps", st.value("world_size", 0), html_escape(st.value("backend", "")),
                         st.value("steps", 0));
    if (st.contains("timeouts")) {
      std::string to;
      for (const auto& [k, val] : st["timeouts"].items())
        if (val.is_number()) to += fmt::format("{}{}={:g}", to.empty() ? "" : " ", k, val.get<double>());
      facts += " &middot; timeouts <code>" + html_escape(to) + "</code>";
    }
  }
  if (v.t0 > 0) facts += " &middot; started " + html_escape(iso_time(v.t0).substr(0, 19)) + "Z";
  h += "<div class=\"muted\">" + facts + "</div>";
  if (!v.reproduces.empty()) h += "<div><b>Reproduces:</b> " + html_escape(v.reproduces) + "</div>";
  if (!v.expected.empty()) h += "<div><b>Expected:</b> " + html_escape(v.expected) + "</div>";
  h += "</header><main><section id=\"timeline-col\"><h2 style=\"margin-top:0\">Rank timeline "
       "<span class=\"muted\" style=\"font-weight:400\">(seconds after launch; hover for details)</span></h2>";
  h += timeline_html(v);

  // Detections, relative to the fault.
  h += "<h2>Detections</h2>";
  bool any_detect = false;
  std::string dt = "<table><tr><th>detector</th><th>rank</th><th>after launch</th><th>after the fault</th><th>detail</th></tr>";
  for (const auto& m : v.marks) {
    if (m.kind != "detect") continue;
    any_detect = true;
    const std::string name = m.label.substr(0, m.label.find(' '));
    dt += fmt::format(
        "<tr><td><span style=\"color:{}\">&#9679;</span> {}</td><td>{}</td><td class=\"num\">+{:.2f} s</td>"
        "<td class=\"num\">{}</td><td>{}</td></tr>",
        m.color, html_escape(name), m.rank >= 0 ? std::to_string(m.rank) : "job", m.t - v.t0,
        v.fault_t ? fmt::format("{:+.2f} s", m.t - *v.fault_t) : "-", html_escape(m.title));
  }
  h += any_detect ? dt + "</table>" : "<p class=\"muted\">no detector fired</p>";

  if (verdict.contains("checks") && verdict["checks"].is_array()) {
    h += "<h2>Expectations</h2><table><tr><th>check</th><th>status</th><th>expected</th><th>actual</th><th>reason</th></tr>";
    for (const auto& c : verdict["checks"])
      h += fmt::format("<tr><td>{}</td><td class=\"st-{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                       html_escape(c.value("name", "")), html_escape(c.value("status", "")),
                       html_escape(c.value("status", "")), html_escape(c.value("expected", "")),
                       html_escape(c.value("actual", "")), html_escape(c.value("reason", "")));
    h += "</table>";
  }
  if (!verdict.value("skip_reason", "").empty())
    h += "<p>skipped: " + html_escape(verdict.value("skip_reason", "")) + "</p>";

  std::map<int, json> per_rank;
  bool nodes = false;  // [topology] nodes > 1: each rank's node in a column of its own
  if (v.triage.contains("per_rank") && v.triage["per_rank"].is_array())
    for (const auto& p : v.triage["per_rank"]) {
      per_rank[p.value("rank", -1)] = p;
      nodes |= p.contains("host") && p["host"].is_string() && !p["host"].get<std::string>().empty();
    }
  h += std::string("<h2>Ranks</h2><table><tr><th>rank</th>") + (nodes ? "<th>node</th>" : "") +
       "<th>liveness</th><th>last step</th><th>last phase</th><th>last collective</th><th>end</th><th>files</th></tr>";
  for (const auto& r : v.ranks) {
    const json p = per_rank.count(r.rank) ? per_rank[r.rank] : json::object();
    std::string end = "-";
    if (r.exit)
      end = (r.exit->signal ? signal_name(*r.exit->signal) : fmt::format("exit {}", r.exit->code.value_or(-1))) +
            fmt::format(" at +{:.2f} s", r.exit->t - v.t0) + (r.exit->by_teardown ? " (teardown)" : "");
    std::string coll = "-";
    if (p.contains("last_coll") && p["last_coll"].is_object())
      coll = fmt::format("{} seq {} ({})", p["last_coll"].value("op", ""), p["last_coll"].value("seq", 0LL),
                         p["last_coll"].value("edge", "") == "begin" ? "inside" : "left");
    std::string files = fmt::format("<a href=\"ranks/{0}/events.jsonl\">trace</a> <a href=\"ranks/{0}/stderr.log\">stderr</a>",
                                    r.rank);
    if (fs::exists(dir / "ranks" / std::to_string(r.rank) / "stack.txt"))
      files += fmt::format(" <a href=\"ranks/{}/stack.txt\">stack</a>", r.rank);
    const std::string node_cell =
        nodes ? "<td>" + html_escape(p.contains("host") && p["host"].is_string() ? p["host"].get<std::string>() : "-") + "</td>"
              : "";
    h += fmt::format("<tr><td>{}</td>{}<td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                     r.rank, node_cell, html_escape(p.value("liveness", "-")), p.value("last_step", 0),
                     html_escape(p.value("last_phase", "-")), html_escape(coll), html_escape(end), files);
  }
  h += "</table><p class=\"muted\">Files: <a href=\"report.txt\">report.txt</a> &middot; <a href=\"run.json\">run.json</a> "
       "&middot; <a href=\"triage.json\">triage.json</a> &middot; <a href=\"harness.jsonl\">harness.jsonl</a> &middot; "
       "<a href=\"junit.xml\">junit.xml</a> &middot; <a href=\"scenario.toml\">scenario.toml</a></p>";
  h += "</section>" +
       (run.contains("preflight") && run["preflight"].is_object() ? preflight_panel(run["preflight"])
                                                                    : triage_panel(v.triage)) +
       "</main>";
  h += std::string("<script>") + kRunScript + "</script></body></html>\n";
  return h;
}

// ---- matrix ----------------------------------------------------------------------------------

MatrixEntry matrix_entry(const fs::path& run_dir, const fs::path& page_dir) {
  MatrixEntry e;
  const json run = read_run_json(run_dir);
  e.scenario = run.value("scenario", run_dir.parent_path().filename().string());
  const json verdict = run.value("verdict", json::object());
  e.status = verdict.value("status", "unknown");
  e.skip_reason = verdict.value("skip_reason", "");
  e.outcome = run.value("outcome", "");
  const json tr = run.value("triage", json::object());
  if (!tr.value("category", "").empty()) e.triage = tr.value("category", "") + "/" + tr.value("cause", "");
  std::error_code ec;
  fs::path rel = fs::relative(fs::absolute(run_dir) / "report.html", fs::absolute(page_dir), ec);
  e.link = ec ? (run_dir / "report.html").string() : rel.string();
  e.duration_s = run.value("duration_s", 0.0);
  const double t0 = run.value("start_t", 0.0);
  if (run.contains("faults") && run["faults"].is_array() && !run["faults"].empty())
    e.fault_at_s = run["faults"][0].value("t", t0) - t0;
  if (run.contains("detections") && run["detections"].is_array())
    for (const auto& d : run["detections"]) {
      const std::string name = d.value("detector", "");
      const double at = d.value("t", t0) - t0;
      if (!e.detections_at_s.count(name) || at < e.detections_at_s[name]) e.detections_at_s[name] = at;
    }
  if (verdict.contains("first_detection_s") && verdict["first_detection_s"].is_object())
    for (const auto& [k, val] : verdict["first_detection_s"].items())
      if (val.is_number()) e.first_detection_s[k] = val.get<double>();
  if (verdict.contains("checks") && verdict["checks"].is_array())
    for (const auto& c : verdict["checks"])
      if (c.value("status", "") != "pass")
        e.failed_checks.push_back(fmt::format("{} {}: want {}, got {}", c.value("status", ""), c.value("name", ""),
                                              c.value("expected", ""), c.value("actual", "")));
  return e;
}

std::string render_matrix_html(const std::vector<MatrixEntry>& entries, const std::string& title) {
  std::map<std::string, int> counts;
  double longest = 1;
  for (const auto& e : entries) {
    ++counts[e.status];
    longest = std::max(longest, e.duration_s);
  }
  std::string h = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>" +
                  html_escape(title) + "</title><style>" + kCss +
                  "td.spark{padding:2px 8px}</style></head><body><header><h1>" + html_escape(title) + "</h1>";
  h += fmt::format("<div>{} scenario{}: ", entries.size(), entries.size() == 1 ? "" : "s");
  for (const char* s : {"pass", "observed", "fail", "unknown", "skipped"})
    if (counts[s]) h += fmt::format("{} {} &nbsp;", badge(s), counts[s]);
  h += "</div><div class=\"muted\">generated " + html_escape(iso_time(unix_now()).substr(0, 19)) +
       "Z &middot; each row links to the run's report.html</div></header><main><section id=\"timeline-col\">";
  h += "<table><tr><th>verdict</th><th>scenario</th><th>outcome</th><th>triage</th><th>detections (after the fault)</th>"
       "<th>run (fault &#9650;, detectors &#9679;)</th><th>time</th><th>failed checks</th></tr>";
  for (const auto& e : entries) {
    std::string det;
    std::vector<std::pair<std::string, double>> by_time(e.first_detection_s.begin(), e.first_detection_s.end());
    std::stable_sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    for (const auto& [d, s] : by_time)
      det += fmt::format("<span class=\"chip\"><span style=\"color:{}\">&#9679;</span> {} {:+.2f}s</span>",
                         detector_color(d), html_escape(d), s);
    // A small strip per run: where the fault and each detector fell in its duration.
    const double w = 180, scale = w / longest;
    std::string spark = fmt::format(
        "<svg width=\"{:.0f}\" height=\"14\" class=\"spark\"><rect x=\"0\" y=\"5\" width=\"{:.1f}\" height=\"4\" "
        "fill=\"#d0d7de\"/>",
        w + 6, std::max(1.0, e.duration_s * scale));
    if (e.fault_at_s >= 0)
      spark += fmt::format("<path d=\"M{0:.1f} 1l4 7h-8z\" fill=\"#d1242f\"><title>fault at +{1:.2f} s</title></path>",
                           e.fault_at_s * scale + 3, e.fault_at_s);
    for (const auto& [d, at] : e.detections_at_s)
      spark += fmt::format("<circle cx=\"{:.1f}\" cy=\"7\" r=\"3.2\" fill=\"{}\"><title>{} at +{:.2f} s</title></circle>",
                           at * scale + 3, detector_color(d), html_escape(d), at);
    spark += "</svg>";
    std::string failed;
    for (const auto& f : e.failed_checks) failed += html_escape(f) + "<br>";
    if (!e.skip_reason.empty()) failed += html_escape(e.skip_reason);
    h += fmt::format(
        "<tr class=\"scenario-row\"><td>{}</td><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"spark\">{}</td><td class=\"num\">{:.1f} s</td><td>{}</td></tr>",
        badge(e.status), html_escape(e.link), html_escape(e.scenario), html_escape(e.outcome.empty() ? "-" : e.outcome),
        html_escape(e.triage.empty() ? "-" : e.triage), det.empty() ? "<span class=\"muted\">none</span>" : det, spark,
        e.duration_s, failed);
  }
  h += "</table></section></main><script>document.documentElement.setAttribute('data-js','ok');</script></body></html>\n";
  return h;
}

}  // namespace hanglab
