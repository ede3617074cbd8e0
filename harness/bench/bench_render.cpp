// `hanglab bench`: bench.txt (what it prints) and bench.html (inline SVG plots, the look of
// report.html: same palette and detector colours), both pure functions of bench.json.
#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "detect/registry.hpp"
#include "bench/fr_bench.hpp"
#include "report/html_report.hpp"

namespace hanglab {

using nlohmann::json;

namespace {

double num(const json& j, const char* key, double dflt = 0) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : dflt;
}

const json& arr(const json& j, const char* key) {
  static const json kEmpty = json::array();
  return j.contains(key) && j[key].is_array() ? j[key] : kEmpty;
}

// "5.012 s" / "31 ms"
std::string secs(double s) { return s < 1 ? fmt::format("{:.0f} ms", s * 1000) : fmt::format("{:.2f} s", s); }

// "1.004x [1.001-1.009]" over n samples
std::string spread(const json& st, const char* unit_fmt) {
  if (!st.is_object()) return "-";
  const auto f = [&](double v) { return fmt::format(fmt::runtime(unit_fmt), v); };
  if (st.value("n", 0) <= 1) return f(num(st, "median"));
  return fmt::format("{} [{}-{}]", f(num(st, "median")), f(num(st, "min")), f(num(st, "max")));
}

std::string spread_s(const json& st) {
  if (!st.is_object()) return "-";
  if (st.value("n", 0) <= 1) return secs(num(st, "median"));
  return fmt::format("{} [{}-{}]", secs(num(st, "median")), secs(num(st, "min")), secs(num(st, "max")));
}

std::string bound_text(const json& d) {
  if (d["bound_s"].is_null()) return "none";
  return fmt::format("{} {}", d.value("bound", ""), secs(num(d, "bound_s")));
}

}  // namespace

std::string render_bench_text(const json& j) {
  std::string o;
  const json& host = j.value("host", json::object());
  o += fmt::format("hanglab bench  {}  ({} CPUs, load {:.1f} -> {:.1f}, {}, {} repeat(s), {:.0f} s)\n",
                   j.value("generated", ""), host.value("cpus", 0), num(host, "loadavg_1m_at_start"),
                   num(host, "loadavg_1m_at_end"), j.value("quick", false) ? "quick: indicative only" : "full",
                   j.value("repeat", 0), num(j, "duration_s"));

  o += "\nDetection latency vs the configured bound (from the detector's trigger; median [min-max])\n";
  o += fmt::format("  {:<17} {:<23} {:<20} {:<26} {:<24} {}\n", "detector", "scenario", "bound", "latency/bound",
                   "after trigger", "after the fault");
  for (const auto& d : arr(j, "detectors"))
    o += fmt::format("  {:<17} {:<23} {:<20} {:<26} {:<24} {}\n", d.value("detector", ""), d.value("scenario", ""),
                     bound_text(d), d["bound_s"].is_null() ? "-" : spread(d.value("ratio", json()), "{:.3f}x"),
                     d["bound_s"].is_null() ? "-" : spread_s(d.value("after_trigger_s", json())),
                     spread_s(d.value("after_fault_s", json())));
  o += "  triggers: exit_monitor the kill (the bound is the 20 ms polling tick); backend_timeout the rank entering the\n"
       "  collective; heartbeat_loss the rank's last trace line; harness_watchdog the last progress of any rank, or\n"
       "  the stop of the rank it names (stopped by a signal); backend_error: no bound.\n";

  o += "\nVerdict latency (after the fault; median [min-max])\n";
  o += fmt::format("  {:<23} {:<8} {:<24} {:<24} {}\n", "scenario", "outcome", "first detection", "all ranks gone",
                   "verdict known");
  for (const auto& v : arr(j, "verdicts"))
    o += fmt::format("  {:<23} {:<8} {:<24} {:<24} {}\n", v.value("scenario", ""), v.value("outcome", ""),
                     spread_s(v.value("to_detection_s", json())), spread_s(v.value("to_all_gone_s", json())),
                     spread_s(v.value("to_verdict_s", json())));

  const json& t = j.value("trace_overhead", json::object());
  o += fmt::format("\nTrace overhead, tracing on vs off ({}; {} run(s); {})\n", t.value("workload", "-"),
                   arr(t, "runs").size(), t.value("design", "-"));
  if (t.contains("ratio")) {
    o += fmt::format("  median step: traced {:.3f} ms ({} steps), untraced {:.3f} ms ({} steps): {:+.0f} us per step\n",
                     num(t, "median_on_ms"), t.value("steps_on", 0), num(t, "median_off_ms"), t.value("steps_off", 0),
                     num(t, "overhead_us_per_step"));
    o += fmt::format("  ratio {:.4f} ({:+.2f} %), 90 % interval {:.4f}-{:.4f}; goal < {:.0f} %: {}\n", num(t, "ratio"),
                     num(t, "overhead_pct"), t["ci90"][0].get<double>(), t["ci90"][1].get<double>(),
                     100 * num(t, "goal_fraction", 0.01), t.value("goal", "-"));
    o += fmt::format("  trace writer alone: {:.1f} us per event (emit() timed in-process) x {:.1f} events per traced step = "
                     "{:.3f} % of an untraced step\n",
                     num(t, "emit_us"), num(t, "events_per_step"), num(t, "writer_pct"));
    std::string pairs;
    for (const auto& p : arr(t, "runs")) pairs += fmt::format(" {:.4f}", num(p, "ratio"));
    o += "  per run (traced/untraced median):" + pairs + "\n";
  } else {
    o += "  not measured\n";
  }

  o += "\nHarness CPU, healthy torch_ddp runs (hanglab's own CPU while supervising vs the ranks')\n";
  o += fmt::format("  {:>6} {:>8} {:>14} {:>12} {:>15} {:>17} {:>12}\n", "ranks", "wall s", "hanglab CPU s",
                   "ranks CPU s", "hanglab share", "% of one core", "triage CPU s");
  for (const auto& c : arr(j, "cpu_share"))
    o += fmt::format("  {:>6} {:>8.1f} {:>14.2f} {:>12.1f} {:>14.2f}% {:>16.1f}% {:>12.2f}\n", c.value("ranks", 0),
                     num(c, "wall_s"), num(c, "harness_cpu_s"), num(c, "ranks_cpu_s"), 100 * num(c, "harness_share"),
                     num(c, "harness_core_pct"), num(c, "triage_cpu_s"));

  o += "\nTriage of plain logs (synthetic incident, one file per rank; `hanglab triage` in a child process)\n";
  o += fmt::format("  {:>6} {:>11} {:>9} {:>9} {:>13}  {}\n", "ranks", "lines", "MB", "time s", "peak RSS MB", "answer");
  for (const auto& x : arr(j, "triage"))
    o += fmt::format("  {:>6} {:>11} {:>9.1f} {:>9.2f} {:>13.1f}  {}{}\n", x.value("ranks", 0), x.value("lines", 0ULL),
                     num(x, "bytes") / 1e6, num(x, "wall_s"), num(x, "peak_rss_mb"), x.value("ok", false) ? "" : "WRONG: ",
                     x.value("answer", ""));

  if (j.contains("flight_recorder")) o += "\n" + render_fr_bench_text(j["flight_recorder"]);

  const json& errors = arr(j, "errors");
  if (!errors.empty()) {
    o += "\nNot measured / problems:\n";
    for (const auto& e : errors) o += "  - " + e.get<std::string>() + "\n";
  }
  return o;
}

// ---- HTML ----------------------------------------------------------------------------------

namespace {

const char* kCss = R"css(
:root{--fg:#1d2430;--muted:#5f6b7a;--line:#d9dee5;--panel:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:13px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",Helvetica,Arial,sans-serif;color:var(--fg)}
header{padding:14px 20px 10px;border-bottom:1px solid var(--line)}
h1{font-size:19px;margin:0 0 4px}
h2{font-size:14px;margin:22px 0 6px}
main{padding:4px 20px 20px;max-width:1100px}
.muted{color:var(--muted)}
.chip{display:inline-block;padding:0 6px;border:1px solid var(--line);border-radius:8px;background:var(--panel);font-size:12px;margin:0 4px 2px 0}
table{border-collapse:collapse;margin:4px 0 8px;font-size:12px}
th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
svg{display:block;margin:6px 0;background:#fff;border:1px solid var(--line);border-radius:6px}
svg text{font-family:inherit;font-size:11px}
.goal-met{color:#1a7f37;font-weight:600}.goal-missed{color:#cf222e;font-weight:600}.goal-not{color:#9a6700;font-weight:600}
code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px}
)css";

// The registry's colour (detect/registry.hpp), as in the HTML report.
std::string color_of(const std::string& d) { return detector_colour(d); }

struct Bar {
  std::string label;
  double value = 0;
  std::vector<double> points;  // individual samples, drawn as dots
  std::string color = "#4a6fa5";
  std::string text;            // printed right of the bar
  double lo = NAN, hi = NAN;   // a whisker
};

// Horizontal bars from 0, one row each (x0 > 0, a zoomed axis: a marker at the value instead
// of a bar, whose length would mean nothing); refs: vertical lines with a label.
std::string hbars(const std::vector<Bar>& bars, double x0, double x1,
                  const std::vector<std::pair<double, std::string>>& refs, const std::string& axis) {
  const int label_w = 300, plot_w = 480, text_w = 330, row = 22, top = 18, bottom = 30;
  const int h = top + row * static_cast<int>(bars.size()) + bottom;
  const int w = label_w + plot_w + text_w;
  if (x1 <= x0) x1 = x0 + 1;
  const auto X = [&](double v) { return label_w + plot_w * (std::clamp(v, x0, x1) - x0) / (x1 - x0); };
  std::string s = fmt::format("<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">", w, h, w, h);
  // Ticks: 5 intervals.
  for (int i = 0; i <= 5; ++i) {
    const double v = x0 + (x1 - x0) * i / 5;
    s += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eef1f4\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" fill=\"#5f6b7a\">{4:.3g}</text>",
                     X(v), top - 4, h - bottom + 4, h - bottom + 16, v);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#5f6b7a\">{}</text>", label_w + plot_w / 2,
                   h - 3, html_escape(axis));
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = top + row * static_cast<int>(i);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label_w - 8, y + 15, html_escape(b.label));
    if (x0 > 0)
      s += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"6\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>",
                       X(b.value) - 3, y + 4, row - 8, b.color, html_escape(b.label), html_escape(b.text));
    else
      s += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" opacity=\"0.75\"><title>{}: "
                       "{}</title></rect>",
                       X(x0), y + 4, std::max(1.0, X(b.value) - X(x0)), row - 8, b.color, html_escape(b.label),
                       html_escape(b.text));
    if (!std::isnan(b.lo) && !std::isnan(b.hi))
      s += fmt::format("<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#1d2430\" stroke-width=\"1.5\"/>"
                       "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{3}\" y2=\"{4}\" stroke=\"#1d2430\"/>"
                       "<line x1=\"{1:.1f}\" x2=\"{1:.1f}\" y1=\"{3}\" y2=\"{4}\" stroke=\"#1d2430\"/>",
                       X(b.lo), X(b.hi), y + row / 2, y + 6, y + row - 6);
    for (double p : b.points)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{}\" r=\"2.5\" fill=\"#1d2430\"><title>{:.4g}</title></circle>", X(p),
                       y + row / 2, p);
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", label_w + plot_w + 8, y + 15, html_escape(b.text));
  }
  for (const auto& [v, label] : refs)
    s += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#cf222e\" stroke-dasharray=\"4 3\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" fill=\"#cf222e\">{4}</text>",
                     X(v), top - 2, h - bottom, top - 6, html_escape(label));
  return s + "</svg>";
}

double max_of(const std::vector<Bar>& bars, double floor_v) {
  double m = floor_v;
  for (const auto& b : bars) {
    m = std::max(m, b.value);
    for (double p : b.points) m = std::max(m, p);
    if (!std::isnan(b.hi)) m = std::max(m, b.hi);
  }
  return m;
}

std::string table_row(const std::vector<std::string>& cells, bool header = false) {
  std::string r = "<tr>";
  for (const auto& c : cells) r += header ? "<th>" + c + "</th>" : "<td>" + c + "</td>";
  return r + "</tr>";
}

}  // namespace

std::string render_bench_html(const json& j) {
  const json& host = j.value("host", json::object());
  std::string h = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>hanglab bench</title><style>";
  h += kCss;
  h += "</style></head><body><header><h1>hanglab bench</h1><div class=\"muted\">";
  h += fmt::format("{} &middot; {} CPUs &middot; {} &middot; load {:.1f} &rarr; {:.1f} &middot; {} &middot; {} repeat(s) "
                   "&middot; {:.0f} s &middot; <code>{}</code>",
                   html_escape(j.value("generated", "")), host.value("cpus", 0), html_escape(host.value("kernel", "")),
                   num(host, "loadavg_1m_at_start"), num(host, "loadavg_1m_at_end"),
                   j.value("quick", false) ? "<b>quick: indicative only</b>" : "full", j.value("repeat", 0),
                   num(j, "duration_s"), html_escape(j.value("command", "")));
  h += "</div></header><main>";

  // Detectors.
  h += "<h2>Detection latency / configured bound</h2><p class=\"muted\">Latency from the detector's own trigger "
       "divided by its bound: 1.0 = fires exactly at its setting (dashed line); below 1 would be early (a bug), far "
       "above 1 slow. exit_monitor's bound is the supervisor's 20 ms polling tick: it is due within a few ticks. "
       "Bars: median; dots: each run.</p>";
  std::vector<Bar> bars;
  for (const auto& d : arr(j, "detectors")) {
    if (d["bound_s"].is_null() || !d.contains("ratio") || !d["ratio"].is_object()) continue;
    Bar b;
    b.label = d.value("detector", "") + " (" + d.value("scenario", "") + ")";
    b.value = num(d["ratio"], "median");
    b.points = d.value("ratios", std::vector<double>{});
    b.color = color_of(d.value("detector", ""));
    b.text = fmt::format("{:.3f}x of {}", b.value, bound_text(d));
    bars.push_back(b);
  }
  h += hbars(bars, 0, std::max(2.5, std::ceil(max_of(bars, 0) * 1.1 * 2) / 2), {{1.0, "bound"}}, "latency / bound");
  h += "<table>" + table_row({"detector", "scenario", "trigger", "bound", "latency/bound", "after trigger", "after the fault"}, true);
  for (const auto& d : arr(j, "detectors"))
    h += table_row({html_escape(d.value("detector", "")), html_escape(d.value("scenario", "")),
                    html_escape(d.value("trigger", "")), html_escape(bound_text(d)),
                    d["bound_s"].is_null() ? "-" : html_escape(spread(d.value("ratio", json()), "{:.3f}x")),
                    d["bound_s"].is_null() ? "-" : html_escape(spread_s(d.value("after_trigger_s", json()))),
                    html_escape(spread_s(d.value("after_fault_s", json())))});
  h += "</table>";

  // Verdicts.
  h += "<h2>Verdict latency</h2><p class=\"muted\">Seconds after the fault until the first detection, until the last "
       "rank was gone, and until the verdict was known (teardown, triage and the expectation check done).</p>";
  bars.clear();
  for (const auto& v : arr(j, "verdicts")) {
    const std::string sc = v.value("scenario", "") + " (" + v.value("outcome", "") + ")";
    static const std::tuple<const char*, const char*, const char*> kParts[] = {
        {"to_detection_s", "detection", "#7e3fbf"}, {"to_all_gone_s", "all ranks gone", "#4a6fa5"},
        {"to_verdict_s", "verdict", "#1a7f37"}};
    for (const auto& [key, what, color] : kParts) {
      if (!v.contains(key) || !v[key].is_object()) continue;
      Bar b;
      b.label = sc + ": " + what;
      b.value = num(v[key], "median");
      b.lo = num(v[key], "min");
      b.hi = num(v[key], "max");
      b.color = color;
      b.text = spread_s(v[key]);
      bars.push_back(b);
    }
  }
  h += hbars(bars, 0, max_of(bars, 0.1) * 1.1, {}, "seconds after the fault");

  // Trace overhead.
  const json& t = j.value("trace_overhead", json::object());
  h += "<h2>Trace overhead</h2>";
  if (t.contains("ratio")) {
    const std::string goal = t.value("goal", "");
    h += fmt::format("<p>{} ({}): median step traced {:.3f} ms vs untraced {:.3f} ms &rarr; ratio <b>{:.4f}</b> ({:+.2f} %), "
                     "90 % interval {:.4f}&ndash;{:.4f}; goal &lt; {:.0f} %: <span class=\"goal-{}\">{}</span></p>",
                     html_escape(t.value("workload", "")), html_escape(t.value("design", "")), num(t, "median_on_ms"), num(t, "median_off_ms"), num(t, "ratio"),
                     num(t, "overhead_pct"), t["ci90"][0].get<double>(), t["ci90"][1].get<double>(),
                     100 * num(t, "goal_fraction", 0.01), goal == "met" ? "met" : goal == "missed" ? "missed" : "not",
                     html_escape(goal));
    h += fmt::format("<p>The trace writer alone: {:.1f} &micro;s per event (emit() timed in-process) &times; {:.1f} "
                     "events per traced step = <b>{:.3f} %</b> of an untraced step.</p>",
                     num(t, "emit_us"), num(t, "events_per_step"), num(t, "writer_pct"));
    bars.clear();
    int i = 0;
    for (const auto& p : arr(t, "runs")) {
      Bar b;
      b.label = fmt::format("run {} ({} steps)", ++i, p.value("steps", 0));
      b.value = num(p, "ratio");
      b.text = fmt::format("{:.4f} ({:.2f} / {:.2f} ms)", b.value, num(p, "on_ms"), num(p, "off_ms"));
      bars.push_back(b);
    }
    Bar all;
    all.label = "all runs (90 % interval)";
    all.value = num(t, "ratio");
    all.lo = t["ci90"][0].get<double>();
    all.hi = t["ci90"][1].get<double>();
    all.color = "#1a7f37";
    all.text = fmt::format("{:.4f} [{:.4f}-{:.4f}]", all.value, all.lo, all.hi);
    bars.push_back(all);
    double lo = 0.98, hi = 1.03;
    for (const auto& b : bars) {
      lo = std::min({lo, b.value, std::isnan(b.lo) ? b.value : b.lo});
      hi = std::max({hi, b.value, std::isnan(b.hi) ? b.value : b.hi});
    }
    lo = std::floor((lo - 0.005) * 100) / 100;
    hi = std::ceil((hi + 0.005) * 100) / 100;
    h += hbars(bars, lo, hi, {{1.0, "equal"}, {1 + num(t, "goal_fraction", 0.01), "goal"}},
               "traced / untraced median step time");
  } else {
    h += "<p class=\"muted\">not measured</p>";
  }

  // CPU share.
  h += "<h2>Harness CPU share</h2><p class=\"muted\">hanglab's own CPU time while supervising a healthy torch_ddp run, "
       "as a share of all CPU time used (hanglab + ranks).</p>";
  bars.clear();
  for (const auto& c : arr(j, "cpu_share")) {
    Bar b;
    b.label = fmt::format("{} ranks", c.value("ranks", 0));
    b.value = 100 * num(c, "harness_share");
    b.text = fmt::format("{:.2f} % ({:.2f} of {:.1f} CPU s; {:.1f} % of a core)", b.value, num(c, "harness_cpu_s"),
                         num(c, "harness_cpu_s") + num(c, "ranks_cpu_s"), num(c, "harness_core_pct"));
    bars.push_back(b);
  }
  h += hbars(bars, 0, max_of(bars, 1) * 1.2, {}, "hanglab share of CPU time, %");
  h += "<table>" + table_row({"ranks", "wall s", "hanglab CPU s", "ranks CPU s", "share", "% of one core", "triage CPU s"}, true);
  for (const auto& c : arr(j, "cpu_share"))
    h += fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{:.1f}</td><td class=\"num\">{:.2f}</td>"
                     "<td class=\"num\">{:.1f}</td><td class=\"num\">{:.2f} %</td><td class=\"num\">{:.1f} %</td>"
                     "<td class=\"num\">{:.2f}</td></tr>",
                     c.value("ranks", 0), num(c, "wall_s"), num(c, "harness_cpu_s"), num(c, "ranks_cpu_s"),
                     100 * num(c, "harness_share"), num(c, "harness_core_pct"), num(c, "triage_cpu_s"));
  h += "</table>";

  // Triage.
  h += "<h2>Triage at scale</h2><p class=\"muted\">`hanglab triage` of a synthetic incident (one log file per rank, a "
       "watchdog timeout on every rank but one) in a child process: wall time and peak RSS.</p>";
  std::vector<Bar> tb, mb;
  for (const auto& x : arr(j, "triage")) {
    const std::string label = fmt::format("{} ranks ({:.0f} MB of logs)", x.value("ranks", 0), num(x, "bytes") / 1e6);
    tb.push_back({label, num(x, "wall_s"), {}, "#4a6fa5", fmt::format("{:.2f} s", num(x, "wall_s"))});
    mb.push_back({label, num(x, "peak_rss_mb"), {}, "#0e8a7e", fmt::format("{:.0f} MB", num(x, "peak_rss_mb"))});
  }
  h += hbars(tb, 0, max_of(tb, 1) * 1.15, {}, "triage wall time, s");
  h += hbars(mb, 0, max_of(mb, 10) * 1.15, {}, "triage peak RSS, MB");
  h += "<table>" + table_row({"ranks", "lines", "MB of logs", "time s", "peak RSS MB", "answer"}, true);
  for (const auto& x : arr(j, "triage"))
    h += fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1f}</td>"
                     "<td class=\"num\">{:.2f}</td><td class=\"num\">{:.1f}</td><td>{}</td></tr>",
                     x.value("ranks", 0), x.value("lines", 0ULL), num(x, "bytes") / 1e6, num(x, "wall_s"),
                     num(x, "peak_rss_mb"), html_escape((x.value("ok", false) ? "" : "WRONG: ") + x.value("answer", "")));
  h += "</table>";

  if (j.contains("flight_recorder")) h += render_fr_bench_html(j["flight_recorder"]);

  const json& errors = arr(j, "errors");
  if (!errors.empty()) {
    h += "<h2>Not measured / problems</h2><ul>";
    for (const auto& e : errors) h += "<li>" + html_escape(e.get<std::string>()) + "</li>";
    h += "</ul>";
  }
  h += "<p class=\"muted\">Run directories: ";
  for (const auto& r : arr(j, "runs"))
    h += fmt::format("<span class=\"chip\">{}</span>", html_escape(r.value("label", "")));
  h += "</p><p class=\"muted\">Data: <a href=\"bench.json\">bench.json</a> &middot; <a href=\"bench.txt\">bench.txt</a></p>";
  return h + "</main></body></html>\n";
}

// ---- Flight Recorder: hanglab vs torchfrtrace (fr_bench.hpp) -------------------------------

namespace {

std::string fr_secs(const json& tool) {
  const json& w = tool.value("wall_s", json());
  return w.is_object() ? fmt::format("{:.3f}", num(w, "median")) : "-";
}

std::string fr_hanglab_verdict(const json& r) {
  const json& h = r.value("hanglab", json::object());
  return (h.value("ok", false) ? "" : "WRONG: ") + h.value("verdict", std::string("-"));
}

std::string fr_frt_verdict(const json& r) {
  const json& t = r.value("torchfrtrace", json::object());
  std::string v = t.value("verdict", std::string("-"));
  if (t.contains("ok") && t["ok"].is_boolean() && !t["ok"].get<bool>()) v = "WRONG: " + v;
  return v;
}

std::string fr_agree(const json& r) {
  if (!r.contains("agree") || r["agree"].is_null()) return "-";
  return r["agree"].get<bool>() ? "yes" : "NO";
}

std::string fr_ratio(const json& r) { return r.contains("ratio") ? fmt::format("{:.0f}x", num(r, "ratio")) : "-"; }

std::string fr_headline(const json& fr) {
  std::string s;
  if (fr.contains("min_ratio_at_goal_ranks"))
    s = fmt::format("at {} ranks, where torchfrtrace gives a verdict, hanglab is >= {:.1f}x faster (goal >= {}x: {})",
                    fr.value("goal_ranks", 1024), num(fr, "min_ratio_at_goal_ranks"), fr.value("goal_ratio", 10),
                    fr.value("goal", std::string("-")));
  else
    s = fmt::format("speed goal (>= {}x at {} ranks): {}", fr.value("goal_ratio", 10), fr.value("goal_ranks", 1024),
                    fr.value("goal", std::string("not measured")));
  s += fmt::format("; the verdicts agree in {} of {} rows where torchfrtrace gives one (none in {})", fr.value("agree", 0),
                   fr.value("agree", 0) + fr.value("disagree", 0), fr.value("no_torchfrtrace_verdict", 0));
  return s;
}

}  // namespace

std::string render_fr_bench_text(const json& fr) {
  std::string o = "Flight Recorder: hanglab vs torchfrtrace";
  if (!fr.value("available", false)) return o + "\n  not measured: " + fr.value("reason", std::string("-")) + "\n";
  o += fmt::format(" ({}; median of {} run(s), a child process each)\n", fr.value("dumps", std::string("-")),
                   fr.value("repeat", 0));
  if (fr.contains("torchfrtrace_missing"))
    o += "  torchfrtrace not run: " + fr.value("torchfrtrace_missing", std::string()) + "\n";
  o += fmt::format("  {:<11} {:<10} {:>5} {:>10} {:>15} {:>7}  {:<50} {:<52} {}\n", "case", "layout", "ranks",
                   "hanglab s", "torchfrtrace s", "ratio", "hanglab verdict", "torchfrtrace verdict", "agree");
  for (const auto& r : arr(fr, "rows"))
    o += fmt::format("  {:<11} {:<10} {:>5} {:>10} {:>15} {:>7}  {:<50} {:<52} {}\n", r.value("case", ""),
                     r.value("layout", ""), r.value("ranks", 0), fr_secs(r.value("hanglab", json::object())),
                     fr_secs(r.value("torchfrtrace", json::object())), fr_ratio(r), fr_hanglab_verdict(r),
                     fr_frt_verdict(r), fr_agree(r));
  o += "  " + fr_headline(fr) + "\n";
  o += "  layouts: gloo = pg_config as torch wrote it (keyed \"\" while the entries say group \"0\"); nccl-keyed = keyed\n"
       "  by the group the entries name, NCCL's shape. The culprit is the rank fr_scale.py placed (N/2+1).\n";
  return o;
}

std::string render_fr_bench_html(const json& fr) {
  std::string h = "<h2>Flight Recorder: hanglab vs torchfrtrace</h2>";
  if (!fr.value("available", false))
    return h + "<p class=\"muted\">not measured: " + html_escape(fr.value("reason", std::string("-"))) + "</p>";
  h += fmt::format("<p class=\"muted\">The same dumps ({}) read by <code>hanglab triage DIR --format json</code> and by "
                   "<code>torchfrtrace DIR</code>: median wall time of {} run(s), a child process each. Layout gloo: "
                   "pg_config as torch wrote it (keyed \"\" while the entries say group \"0\"); nccl-keyed: keyed by "
                   "the group the entries name, NCCL's shape. The culprit is the rank fr_scale.py placed.</p>",
                   html_escape(fr.value("dumps", std::string("-"))), fr.value("repeat", 0));
  if (fr.contains("torchfrtrace_missing"))
    h += "<p><b>torchfrtrace not run:</b> " + html_escape(fr.value("torchfrtrace_missing", std::string())) + "</p>";
  h += fmt::format("<p>{}</p>", html_escape(fr_headline(fr)));
  std::vector<Bar> bars;
  for (const auto& r : arr(fr, "rows")) {
    if (!r.contains("ratio")) continue;
    Bar b;
    b.label = fmt::format("{} {} {} ranks", r.value("case", ""), r.value("layout", ""), r.value("ranks", 0));
    b.value = num(r, "ratio");
    b.color = r["agree"].is_null() ? "#9aa5b1" : "#4a6fa5";
    b.text = fmt::format("{:.0f}x ({} s vs {} s)", b.value, fr_secs(r["hanglab"]), fr_secs(r["torchfrtrace"]));
    bars.push_back(b);
  }
  if (!bars.empty())
    h += hbars(bars, 0, max_of(bars, 12) * 1.1, {{static_cast<double>(fr.value("goal_ratio", 10)), "goal"}},
               "torchfrtrace time / hanglab time (grey: torchfrtrace gave no verdict)");
  h += "<table>" + table_row({"case", "layout", "ranks", "hanglab s", "torchfrtrace s", "ratio", "hanglab RSS MB",
                              "torchfrtrace RSS MB", "hanglab verdict", "torchfrtrace verdict", "agree"},
                             true);
  for (const auto& r : arr(fr, "rows"))
    h += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}"
                     "</td><td class=\"num\">{}</td><td class=\"num\">{:.0f}</td><td class=\"num\">{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td></tr>",
                     html_escape(r.value("case", "")), html_escape(r.value("layout", "")), r.value("ranks", 0),
                     fr_secs(r.value("hanglab", json::object())), fr_secs(r.value("torchfrtrace", json::object())),
                     fr_ratio(r), num(r.value("hanglab", json::object()), "peak_rss_mb"),
                     r["torchfrtrace"].contains("peak_rss_mb")
                         ? fmt::format("{:.0f}", num(r["torchfrtrace"], "peak_rss_mb"))
                         : std::string("-"),
                     html_escape(fr_hanglab_verdict(r)), html_escape(fr_frt_verdict(r)), fr_agree(r));
  h += "</table>";
  return h;
}

}  // namespace hanglab
