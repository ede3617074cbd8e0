// The pure parts of `hanglab validate`: settings file, trace measurement, statistics,
// recommendation, classification and rendering. See validate.hpp for the definitions.
#include "validate/validate.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <limits>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "detect/registry.hpp"
#include "scenario/config_error.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- settings file ---------------------------------------------------------------------

namespace {

const std::vector<std::string> kTimeoutKeys = {"init_s", "collective_s", "progress_s",
                                               "heartbeat_s", "checkpoint_s", "eval_s"};
const std::vector<std::string> kRequiredTimeoutKeys = {"init_s", "collective_s", "progress_s", "heartbeat_s"};
const std::vector<std::string> kValidateKeys = {"slack_s", "margin_factor", "margin_add_s", "cost_ranks"};

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Collects every problem, then throws the one that comes first in the file, as the
// scenario loader does: toml++ iterates tables by key name, not by position.
class SettingsParser {
 public:
  explicit SettingsParser(std::string file) : file_(std::move(file)) {}

  ValidateSettings parse(std::string_view text) {
    ValidateSettings s;
    s.file = file_;
    toml::table root;
    try {
      root = toml::parse(text, file_);
    } catch (const toml::parse_error& e) {
      throw config_error_at(file_, e.source(), "", std::string(e.description()));
    }
    for (const auto& [k, node] : root) {
      if (k.str() != "timeouts" && k.str() != "validate" && k.str() != "torch")
        error(k.source(), std::string(k.str()), "unknown table (expected one of: [timeouts], [torch], [validate])");
    }
    const toml::table* t = table(root, "timeouts");
    if (!t && !root.get("timeouts")) {
      errors_.push_back(ConfigError(file_, 1, 1, "timeouts", "missing required table [timeouts] (the settings to validate)"));
    }
    if (t) {
      reject_unknown(*t, "timeouts", kTimeoutKeys);
      for (const auto& k : kRequiredTimeoutKeys)
        if (!t->get(k)) error(t->source(), "timeouts." + k, "missing required key (a duration in seconds, > 0)");
      if (auto v = number(*t, "timeouts", "init_s", true)) s.timeouts.init_s = *v;
      if (auto v = number(*t, "timeouts", "collective_s", true)) s.timeouts.collective_s = *v;
      if (auto v = number(*t, "timeouts", "progress_s", true)) s.timeouts.progress_s = *v;
      if (auto v = number(*t, "timeouts", "heartbeat_s", true)) s.timeouts.heartbeat_s = *v;
      if (auto v = number(*t, "timeouts", "checkpoint_s", true)) s.timeouts.checkpoint_s = *v;
      if (auto v = number(*t, "timeouts", "eval_s", true)) s.timeouts.eval_s = *v;
    }
    if (const toml::table* k = table(root, "torch")) s.torch = parse_torch_table(*k, file_, "torch", errors_);
    if (const toml::table* v = table(root, "validate")) {
      reject_unknown(*v, "validate", kValidateKeys);
      if (auto x = number(*v, "validate", "slack_s", false)) s.slack_s = *x;
      if (auto x = number(*v, "validate", "margin_add_s", false)) s.margin.add_s = *x;
      if (auto x = number(*v, "validate", "margin_factor", true)) {
        if (*x < 1)
          error(v->get("margin_factor")->source(), "validate.margin_factor", fmt::format("must be >= 1 (got {})", *x));
        else
          s.margin.factor = *x;
      }
      if (const toml::node* n = v->get("cost_ranks")) {
        const toml::array* a = n->as_array();
        if (!a || a->empty()) {
          error(n->source(), "validate.cost_ranks", "expected a non-empty array of rank counts, e.g. [8, 1024, 16384]");
        } else {
          std::vector<int> ranks;
          for (const auto& e : *a) {
            auto i = e.value<int64_t>();
            if (!e.is_integer() || !i || *i <= 0 || *i > 100000000)
              error(e.source(), "validate.cost_ranks", "each entry must be an integer rank count > 0");
            else
              ranks.push_back(static_cast<int>(*i));
          }
          if (ranks.size() == a->size()) s.cost_ranks = ranks;
        }
      }
    }
    if (!errors_.empty()) {
      throw *std::min_element(errors_.begin(), errors_.end(), [](const ConfigError& a, const ConfigError& b) {
        return std::make_pair(a.line(), a.col()) < std::make_pair(b.line(), b.col());
      });
    }
    return s;
  }

 private:
  void error(const toml::source_region& where, const std::string& key, const std::string& msg) {
    errors_.push_back(config_error_at(file_, where, key, msg));
  }
  const toml::table* table(const toml::table& root, const std::string& name) {
    const toml::node* n = root.get(name);
    if (!n) return nullptr;
    if (!n->is_table()) {
      error(n->source(), name, "expected a table ([" + name + "])");
      return nullptr;
    }
    return n->as_table();
  }
  void reject_unknown(const toml::table& t, const std::string& path, const std::vector<std::string>& allowed) {
    for (const auto& [k, node] : t)
      if (std::find(allowed.begin(), allowed.end(), k.str()) == allowed.end())
        error(k.source(), path + "." + std::string(k.str()), "unknown key (expected one of: " + join(allowed) + ")");
  }
  std::optional<double> number(const toml::table& t, const std::string& path, const std::string& key, bool positive) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    double v = 0;
    if (n->is_integer())
      v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point())
      v = n->as_floating_point()->get();
    else {
      error(n->source(), path + "." + key, "expected a number (seconds)");
      return std::nullopt;
    }
    if (!std::isfinite(v) || (positive ? v <= 0 : v < 0)) {
      error(n->source(), path + "." + key, fmt::format("must be a finite number {} 0 (got {})", positive ? ">" : ">=", v));
      return std::nullopt;
    }
    return v;
  }

  std::string file_;
  std::vector<ConfigError> errors_;
};

}  // namespace

ValidateSettings parse_validate_settings(std::string_view text, const std::string& file) {
  return SettingsParser(file).parse(text);
}

ValidateSettings load_validate_settings(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file.string(), 0, 0, "", "cannot read the settings file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_validate_settings(text, file.string());
}

// ---- statistics ------------------------------------------------------------------------

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

Distribution summarize(const std::vector<double>& values) {
  Distribution d;
  d.n = values.size();
  if (values.empty()) return d;
  d.p50 = percentile(values, 50);
  d.p99 = percentile(values, 99);
  d.max = *std::max_element(values.begin(), values.end());
  return d;
}

double margin_value(const Distribution& d, const MarginRule& m) {
  if (d.n == 0) return 0;
  return std::max(m.factor * d.p99, d.max + m.add_s);
}

double round_up_setting(double s) {
  // The epsilon keeps an exact 4.5 at 4.5 despite floating-point noise in p99 x 3.
  if (s <= 0) return 0;
  return s < 10 ? std::ceil(s * 2 - 1e-9) / 2 : std::ceil(s - 1e-9);
}

// ---- traces ----------------------------------------------------------------------------

void TraceSummary::merge(const TraceSummary& other) {
  for (const auto& [k, v] : other.samples) samples[k].insert(samples[k].end(), v.begin(), v.end());
}

TraceSummary summarize_traces(const std::map<int, std::vector<json>>& traces) {
  TraceSummary out;
  std::vector<double> progress_times;  // every non-heartbeat event of every rank
  for (const auto& [rank, events] : traces) {
    std::map<std::string, size_t> open_span;  // phase name -> index into out.spans
    std::map<std::string, double> open_phase;
    std::map<long long, double> open_coll;
    double prev_any = std::nan(""), prev_progress = std::nan("");
    long long first_seq = -1;
    double first_from = 0;
    for (const auto& e : events) {
      if (!e.is_object()) continue;
      const double t = e.value("t", 0.0);
      const std::string ev = e.value("ev", "");
      if (!std::isnan(prev_any) && t >= prev_any) out.samples["heartbeat_gap"].push_back(t - prev_any);
      prev_any = t;
      if (ev == "hb") continue;
      progress_times.push_back(t);
      if (ev == "phase") {
        const std::string name = e.value("name", ""), edge = e.value("edge", "");
        const bool spanned = name == "init" || name == "checkpoint" || name == "eval";
        if (edge == "begin") {
          open_phase[name] = t;
          if (spanned) {
            open_span[name] = out.spans.size();
            out.spans.push_back({rank, name, t, std::nullopt});
          }
        } else if (edge == "end") {
          if (auto it = open_phase.find(name); it != open_phase.end()) {
            if (spanned) out.samples[name].push_back(t - it->second);
            open_phase.erase(it);
          }
          if (auto it = open_span.find(name); it != open_span.end()) {
            out.spans[it->second].end = t;
            open_span.erase(it);
          }
        }
      } else if (ev == "coll") {
        const long long seq = e.value("seq", 0LL);
        const std::string edge = e.value("edge", "");
        if (edge == "begin") {
          open_coll[seq] = t;
          // The first *training* collective (step >= 1): the init-time broadcast is step 0.
          if (first_seq < 0 && e.value("step", 0) >= 1) {
            first_seq = seq;
            first_from = std::isnan(prev_progress) ? t : prev_progress;
          }
        } else if (edge == "end") {
          if (auto it = open_coll.find(seq); it != open_coll.end()) {
            out.samples["collective_wait"].push_back(t - it->second);
            open_coll.erase(it);
          }
          if (seq == first_seq) out.samples["first_collective"].push_back(t - first_from);
        }
      } else if (ev == "step") {
        if (e.value("step", 0) >= 2 && e.contains("dur_ms") && e["dur_ms"].is_number())
          out.samples["step"].push_back(e["dur_ms"].get<double>() / 1000.0);
      }
      prev_progress = t;
    }
  }
  // Job-wide silence, as the harness watchdog sees it: gaps between consecutive progress
  // events of any rank; gaps that overlap a checkpoint or eval are that phase's business.
  std::sort(progress_times.begin(), progress_times.end());
  for (size_t i = 1; i < progress_times.size(); ++i) {
    const double a = progress_times[i - 1], b = progress_times[i];
    bool in_phase = false;
    for (const auto& s : out.spans)
      if (s.name != "init" && s.begin < b && (!s.end || *s.end > a)) in_phase = true;
    if (!in_phase && b > a) out.samples["silence"].push_back(b - a);
  }
  return out;
}

std::map<int, std::vector<json>> read_rank_traces(const fs::path& run_dir) {
  std::map<int, std::vector<json>> out;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(run_dir / "ranks", ec)) {
    const std::string name = d.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream in(d.path() / "events.jsonl");
    auto& events = out[std::stoi(name)];
    std::string line;
    while (std::getline(in, line)) {
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.is_object()) events.push_back(std::move(j));
    }
  }
  return out;
}

// ---- recommendation -------------------------------------------------------------------

namespace {

std::string secs(double s) { return fmt::format("{:.2f} s", s); }

struct Basis {
  double value = 0;      // the margin value (before rounding)
  double healthy_max = 0;
  std::string text;
};

// The strictest margin over the phases a setting must clear.
std::optional<Basis> basis_over(const std::map<std::string, Distribution>& stats,
                                std::initializer_list<const char*> phases, const MarginRule& m) {
  std::optional<Basis> best;
  double healthy_max = 0;
  for (const char* p : phases) {
    auto it = stats.find(p);
    if (it == stats.end() || it->second.n == 0) continue;
    const Distribution& d = it->second;
    healthy_max = std::max(healthy_max, d.max);
    const double v = margin_value(d, m);
    if (!best || v > best->value) {
      const bool by_factor = m.factor * d.p99 >= d.max + m.add_s;
      best = Basis{v, 0,
                   fmt::format("{} p99 {}, max {} (n={}) -> {}", p, secs(d.p99), secs(d.max), d.n,
                               by_factor ? fmt::format("{:g} x p99 = {}", m.factor, secs(v))
                                         : fmt::format("max + {:g} s = {}", m.add_s, secs(v)))};
    }
  }
  if (best) best->healthy_max = healthy_max;
  return best;
}

}  // namespace

Recommendation recommend(const std::map<std::string, Distribution>& stats, const Timeouts& proposed,
                         const MarginRule& margin) {
  Recommendation rec;
  rec.timeouts = proposed;
  auto add = [&](const std::string& key, std::optional<double> prop, std::optional<Basis> b, double fallback,
                 const std::string& unmeasured) {
    SettingAdvice a;
    a.key = key;
    a.proposed = prop;
    if (b) {
      a.recommended = round_up_setting(b->value);
      a.basis = b->text;
      a.healthy_max = b->healthy_max;
    } else {
      a.recommended = fallback;
      a.basis = unmeasured;
    }
    rec.advice.push_back(a);
    return a.recommended;
  };

  rec.timeouts.init_s = add("init_s", proposed.init_s, basis_over(stats, {"init"}, margin), proposed.init_s,
                            "not measured (no init phase traced); kept");
  // The longest healthy wait inside a collective: the peers wait in the barrier while
  // rank 0 saves, and everyone waits for the slow first collective.
  rec.timeouts.collective_s =
      add("collective_s", proposed.collective_s,
          basis_over(stats, {"collective_wait", "checkpoint", "first_collective"}, margin), proposed.collective_s,
          "not measured (no collectives traced); kept");
  rec.timeouts.progress_s =
      add("progress_s", proposed.progress_s, basis_over(stats, {"step", "first_collective", "silence"}, margin),
          proposed.progress_s, "not measured (no steps traced); kept");

  // heartbeat_s is a period, not a timeout: heartbeat_loss fires after 3 silent periods.
  // Keep the proposal while the longest healthy silence of a rank fits in 2 periods (a
  // whole period of headroom); else lengthen the period to get it back.
  {
    SettingAdvice a;
    a.key = "heartbeat_s";
    a.proposed = proposed.heartbeat_s;
    a.recommended = proposed.heartbeat_s;
    auto it = stats.find("heartbeat_gap");
    if (it != stats.end() && it->second.n > 0) {
      const double gap = it->second.max;
      a.healthy_max = gap;
      if (gap > 2 * proposed.heartbeat_s) {
        a.recommended = round_up_setting(gap / 2);
        a.basis = fmt::format("longest silence of a rank {} > 2 periods: period raised to max/2", secs(gap));
      } else {
        a.basis = fmt::format("a period, not a timeout: longest silence of a rank {} fits in 2 periods (loss at 3)",
                              secs(gap));
      }
    } else {
      a.basis = "not measured; kept";
    }
    rec.timeouts.heartbeat_s = a.recommended;
    rec.advice.push_back(a);
  }
  // Phase limits replace progress_s inside their phase; never below it, or the watchdog
  // would be stricter during a slow phase than outside it.
  for (const auto& [key, phase, prop, slot] :
       {std::tuple{std::string("checkpoint_s"), "checkpoint", proposed.checkpoint_s, &rec.timeouts.checkpoint_s},
        std::tuple{std::string("eval_s"), "eval", proposed.eval_s, &rec.timeouts.eval_s}}) {
    auto b = basis_over(stats, {phase}, margin);
    double fallback = prop.value_or(rec.timeouts.progress_s);
    double v = add(key, prop, b, fallback,
                   fmt::format("not measured (no {} in the baseline runs); {}", phase,
                               prop ? "kept" : "progress_s applies"));
    auto& a = rec.advice.back();
    if (b && v < rec.timeouts.progress_s) {
      a.basis += fmt::format("; raised to progress_s {:g} s", rec.timeouts.progress_s);
      a.recommended = v = rec.timeouts.progress_s;
    }
    *slot = v;
  }
  return rec;
}

std::string recommendation_toml(const Recommendation& rec, const ValidateSettings& settings,
                                const std::vector<std::string>& header) {
  std::string out;
  for (const auto& h : header) out += "# " + h + "\n";
  out += fmt::format("# Margin: each timeout clears the healthy durations by the larger of {:g} x p99 and max + {:g} s.\n",
                     settings.margin.factor, settings.margin.add_s);
  out += "[timeouts]\n";
  for (const auto& a : rec.advice)
    out += fmt::format("{:<13}= {:<6g} # {}\n", a.key, a.recommended, a.basis);
  out += "\n[validate]\n";
  out += fmt::format("slack_s = {:g}\nmargin_factor = {:g}\nmargin_add_s = {:g}\ncost_ranks = [{}]\n", settings.slack_s,
                     settings.margin.factor, settings.margin.add_s, fmt::join(settings.cost_ranks, ", "));
  return out;
}

// ---- classification --------------------------------------------------------------------

namespace {

bool open_at(const PhaseSpan& s, double t) { return s.begin <= t && (!s.end || *s.end >= t); }

}  // namespace

// The detector's setting from the registry (detect/registry.hpp), or the setting of a phase
// with its own bound that was open then.
std::string setting_for_detection(const std::string& detector, int rank, double t,
                                  const std::vector<PhaseSpan>& spans, const Timeouts& timeouts) {
  const DetectorInfo* d = find_detector(detector);
  if (!d || d->setting.empty() || d->factor == 0 || !timeout_value(timeouts, d->setting)) return "";
  std::string best(d->setting);
  double best_v = -1;
  for (const auto& [phase, setting] : d->phase_settings) {
    if (phase.empty()) continue;
    const auto v = timeout_value(timeouts, setting);
    if (!v) continue;
    for (const auto& s : spans)
      if (s.name == phase && (rank < 0 || s.rank == rank) && open_at(s, t) && *v > best_v)
        best = std::string(setting), best_v = *v;
  }
  return best;
}

// The bound a setting sets on the detections it bounds: the registry's factor x its value
// (heartbeat_loss fires after 3 heartbeat periods); an unset phase limit is progress_s.
double setting_value(const std::string& setting, const Timeouts& t) {
  const auto v = timeout_value(t, setting);
  double factor = 1;
  for (const DetectorInfo* d : detector_registry())
    if (d->setting == setting && d->factor > 0) factor = d->factor;
  if (v) return factor * *v;
  if (setting == "checkpoint_s" || setting == "eval_s") return t.progress_s;
  return 0;
}

int PassResult::count(const std::string& kind) const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [&](const Finding& f) { return f.kind == kind; }));
}

PassResult classify_pass(const std::string& label, const std::vector<RunObservation>& runs, const Timeouts& timeouts,
                         double slack_s) {
  PassResult pass;
  pass.label = label;
  pass.timeouts = timeouts;
  for (const auto& run : runs) {
    if (run.skipped) {
      ++pass.skipped_runs;
      continue;
    }
    const RunFacts& f = run.facts;
    // A rank that died inside a phase never traced its end: the phase closed with it.
    std::vector<PhaseSpan> spans = run.spans;
    for (auto& s : spans)
      if (!s.end)
        for (const auto& e : f.exits)
          if (e.rank == s.rank) s.end = e.t;
    std::vector<Detection> dets = f.detections;
    std::stable_sort(dets.begin(), dets.end(), [](const Detection& a, const Detection& b) { return a.t < b.t; });

    std::optional<double> fault_t;
    for (const auto& x : f.faults) fault_t = fault_t ? std::min(*fault_t, x.t) : x.t;

    // Alarms on healthy work: every detector that fired on a healthy run, or on a fault
    // run before its fault. Echoes (a peer's exit after the timeout) go to the setting of
    // the first alarm they follow.
    auto false_positives = [&](const std::vector<Detection>& alarms) {
      std::vector<std::string> order;
      std::map<std::string, std::vector<const Detection*>> by_detector;
      for (const auto& d : alarms) {
        if (!by_detector.count(d.detector)) order.push_back(d.detector);
        by_detector[d.detector].push_back(&d);
      }
      std::string primary;
      for (const auto& name : order) {
        const Detection& d = *by_detector[name].front();
        Finding fp{"false_positive", run.scenario, run.run_dir, name, d.rank, {}, "", d.t - f.start_t, d.detail};
        for (const Detection* x : by_detector[name])
          if (x->rank >= 0) fp.ranks.push_back(x->rank);
        std::sort(fp.ranks.begin(), fp.ranks.end());
        fp.setting = setting_for_detection(name, d.rank, d.t, spans, timeouts);
        const bool echo = fp.setting.empty() && !primary.empty();
        if (echo) {
          fp.setting = primary;
          fp.detail = "echo of the first alarm: " + fp.detail;
        }
        if (primary.empty()) primary = fp.setting;
        // Where the job was: the phase the first firing rank (any rank, for job-wide
        // detectors) was inside, which is what the setting had to allow for.
        for (const auto& s : echo ? std::vector<PhaseSpan>{} : spans)
          if ((s.rank == d.rank || d.rank < 0) && s.begin <= d.t && (!s.end || *s.end >= d.t)) {
            fp.detail = "during " + s.name + ": " + fp.detail;
            break;
          }
        pass.findings.push_back(std::move(fp));
      }
    };

    if (run.healthy) {
      ++pass.healthy_runs;
      false_positives(dets);
      if (dets.empty() && !f.outcome.empty() && f.outcome != "completed")
        pass.findings.push_back({"false_positive", run.scenario, run.run_dir, "", -1, {}, "", f.end_t - f.start_t,
                                 fmt::format("healthy run ended {} (teardown: {})", f.outcome, f.teardown_reason)});
      continue;
    }

    ++pass.fault_runs;
    if (!fault_t) {
      pass.findings.push_back({"miss", run.scenario, run.run_dir, "", -1, {}, "", 0,
                               "the fault never fired: nothing was validated (run ended " +
                                   (f.outcome.empty() ? std::string("early") : f.outcome) + ")"});
      continue;
    }
    std::map<std::string, const Detection*> first_by_detector;
    std::vector<Detection> before;
    for (const auto& d : dets) {
      if (d.t < *fault_t)
        before.push_back(d);
      else if (!first_by_detector.count(d.detector))
        first_by_detector[d.detector] = &d;
    }
    false_positives(before);
    const Detection* first = nullptr;
    for (const auto& [name, d] : first_by_detector)
      if (!first || d->t < first->t) first = d;
    for (const auto& [name, d] : first_by_detector) {
      DetectorLatency l;
      l.scenario = run.scenario;
      l.detector = name;
      l.rank = d->rank;
      l.latency_s = d->t - *fault_t;
      l.setting = setting_for_detection(name, d->rank, d->t, spans, timeouts);
      l.bound_s = setting_value(l.setting, timeouts);
      l.first = d == first;
      l.late = l.first && run.detection_required && l.latency_s > l.bound_s + slack_s;
      if (l.late)
        pass.findings.push_back(
            {"late", run.scenario, run.run_dir, name, d->rank, {}, l.setting, l.latency_s,
             fmt::format("first detection {:.2f} s after the fault > {} {:g} s + slack {:g} s",
                         l.latency_s, l.setting.empty() ? "immediate" : l.setting, l.bound_s, slack_s)});
      pass.latencies.push_back(l);
    }
    if (!first && run.detection_required)
      pass.findings.push_back({"miss", run.scenario, run.run_dir, "", -1, {}, "", f.end_t - *fault_t,
                               fmt::format("no detector fired in the {:.1f} s after the fault (run ended {}, teardown: {})",
                                           f.end_t - *fault_t, f.outcome.empty() ? "-" : f.outcome,
                                           f.teardown_reason)});
  }
  std::stable_sort(pass.latencies.begin(), pass.latencies.end(), [](const DetectorLatency& a, const DetectorLatency& b) {
    return std::tie(a.scenario, a.latency_s) < std::tie(b.scenario, b.latency_s);
  });
  return pass;
}

// ---- scenario text ---------------------------------------------------------------------

namespace {

std::string timeouts_table(const Timeouts& t) {
  std::string s = fmt::format("[timeouts]\ninit_s = {}\ncollective_s = {}\nprogress_s = {}\nheartbeat_s = {}\n", t.init_s,
                              t.collective_s, t.progress_s, t.heartbeat_s);
  if (t.checkpoint_s) s += fmt::format("checkpoint_s = {}\n", *t.checkpoint_s);
  if (t.eval_s) s += fmt::format("eval_s = {}\n", *t.eval_s);
  return s;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

}  // namespace

// The run directory's scenario.toml must say what actually ran, so `hanglab report`
// reloads the same settings.
std::string scenario_with_timeouts(const std::string& text, const Timeouts& t, const std::string& note) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  const std::string table = "# " + note + "\n" + timeouts_table(t);
  std::string out;
  bool replaced = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string tl = trim(lines[i]);
    if (!replaced && (tl == "[timeouts]" || tl.rfind("[timeouts]", 0) == 0 && tl.find('#') != std::string::npos)) {
      out += table + "\n";
      replaced = true;
      while (i + 1 < lines.size() && trim(lines[i + 1]).rfind("[", 0) != 0) ++i;
      continue;
    }
    out += lines[i] + "\n";
  }
  if (!replaced) out += "\n" + table;
  try {
    toml::table root = toml::parse(out);
    if (root["timeouts"]["collective_s"].value<double>() == t.collective_s &&
        root["timeouts"]["progress_s"].value<double>() == t.progress_s)
      return out;
  } catch (const std::exception&) {
  }
  // An unusual layout (inline or dotted timeouts): fall back to a re-serialization.
  toml::table root = toml::parse(text);
  toml::table tt{{"init_s", t.init_s}, {"collective_s", t.collective_s}, {"progress_s", t.progress_s},
                 {"heartbeat_s", t.heartbeat_s}};
  if (t.checkpoint_s) tt.insert("checkpoint_s", *t.checkpoint_s);
  if (t.eval_s) tt.insert("eval_s", *t.eval_s);
  root.insert_or_assign("timeouts", tt);
  std::ostringstream os;
  os << "# " << note << "\n" << root << "\n";
  return os.str();
}

// ---- rendering -------------------------------------------------------------------------

double gpu_hours(double latency_s, int ranks) { return std::max(0.0, latency_s) * ranks / 3600.0; }

std::string render_phase_table(const std::map<std::string, Distribution>& stats) {
  std::string out = fmt::format("  {:<18} {:>5} {:>9} {:>9} {:>9}\n", "phase", "n", "p50_s", "p99_s", "max_s");
  for (const char* p : {"init", "step", "first_collective", "checkpoint", "eval", "collective_wait", "silence",
                        "heartbeat_gap"}) {
    auto it = stats.find(p);
    if (it == stats.end() || it->second.n == 0) {
      out += fmt::format("  {:<18} {:>5} {:>9} {:>9} {:>9}\n", p, 0, "-", "-", "-");
      continue;
    }
    const Distribution& d = it->second;
    out += fmt::format("  {:<18} {:>5} {:>9.3f} {:>9.3f} {:>9.3f}\n", p, d.n, d.p50, d.p99, d.max);
  }
  return out;
}

namespace {

std::string opt_value(const std::optional<double>& v) { return v ? fmt::format("{:g}", *v) : "-"; }

std::string who(const Finding& f) {
  if (f.detector.empty()) return "";
  if (f.ranks.size() > 1) return fmt::format("{} ranks {}", f.detector, rank_ranges(f.ranks));
  return f.detector + (f.rank >= 0 ? fmt::format(" rank {}", f.rank) : "");
}

// Two significant digits without exponents: small jobs cost micro-GPU-hours, large ones
// hundreds, and both must read at a glance.
std::string gpu_h(double h) {
  if (h <= 0) return "0";
  if (h >= 10) return fmt::format("{:.0f}", h);
  const int decimals = std::clamp(1 - static_cast<int>(std::floor(std::log10(h))), 1, 7);
  return fmt::format("{:.{}f}", h, decimals);
}

}  // namespace

std::string render_pass(const PassResult& pass, const Recommendation* rec, const std::vector<int>& cost_ranks) {
  const int fp = pass.count("false_positive"), miss = pass.count("miss"), late = pass.count("late");
  std::string out = fmt::format("== {} settings: {} ({} false positive{}, {} miss{}, {} late detection{}) ==\n",
                                pass.label, pass.pass() ? "PASS" : "FAIL", fp, fp == 1 ? "" : "s", miss,
                                miss == 1 ? "" : "es", late, late == 1 ? "" : "s");
  out += fmt::format("runs: {} healthy, {} with a fault, {} skipped (unsupported here)\n\n", pass.healthy_runs,
                     pass.fault_runs, pass.skipped_runs);

  // Verdict per setting.
  out += fmt::format("  {:<13} {:>8} {:>12} {:>12}  {}\n", "setting", "value_s", "healthy_max", "recommended",
                     "verdict");
  const Timeouts& t = pass.timeouts;
  const std::pair<std::string, std::optional<double>> values[] = {
      {"init_s", t.init_s},           {"collective_s", t.collective_s}, {"progress_s", t.progress_s},
      {"heartbeat_s", t.heartbeat_s}, {"checkpoint_s", t.checkpoint_s}, {"eval_s", t.eval_s}};
  for (const auto& [key, value] : values) {
    const SettingAdvice* adv = nullptr;
    if (rec)
      for (const auto& a : rec->advice)
        if (a.key == key) adv = &a;
    int n_fp = 0, n_late = 0;
    std::string first_fp;
    for (const auto& f : pass.findings) {
      if (f.setting != key) continue;
      if (f.kind == "false_positive" && n_fp++ == 0) first_fp = f.scenario + ": " + who(f);
      if (f.kind == "late") ++n_late;
    }
    std::string verdict;
    if (n_fp || n_late) {
      verdict = "FAIL:";
      if (n_fp) verdict += fmt::format(" {} false positive{} ({})", n_fp, n_fp == 1 ? "" : "s", first_fp);
      if (n_late) verdict += fmt::format(" {} late detection{}", n_late, n_late == 1 ? "" : "s");
    } else if (!value) {
      verdict = key == "checkpoint_s" || key == "eval_s" ? "unset: progress_s applies in this phase" : "-";
    } else if (adv && adv->healthy_max > 0 && key != "heartbeat_s" &&
               *value < adv->healthy_max) {
      verdict = fmt::format("RISK: below the longest healthy duration ({:.2f} s)", adv->healthy_max);
    } else if (adv && *value < adv->recommended) {
      verdict = "ok, but below the margin (tight)";
    } else if (adv && adv->recommended > 0 && *value > 2 * adv->recommended && key != "heartbeat_s") {
      verdict = fmt::format("ok, loose: detection waits {:.1f}x longer than needed", *value / adv->recommended);
    } else {
      verdict = "ok";
    }
    out += fmt::format("  {:<13} {:>8} {:>12} {:>12}  {}\n", key, opt_value(value),
                       adv && adv->healthy_max > 0 ? fmt::format("{:.2f}", adv->healthy_max) : "-",
                       adv ? fmt::format("{:g}", adv->recommended) : "-", verdict);
  }

  auto list = [&](const std::string& kind, const std::string& title) {
    std::string s = "\n" + title + ":";
    bool any = false;
    for (const auto& f : pass.findings) {
      if (f.kind != kind) continue;
      any = true;
      std::string when = kind == "false_positive" ? fmt::format("at +{:.2f} s after launch", f.at_s)
                         : kind == "late"         ? fmt::format("{:.2f} s after the fault", f.at_s)
                                                  : "";
      s += fmt::format("\n  {:<26} {}{}{}{}\n      {}\n      run: {}", f.scenario, who(f), when.empty() ? "" : " " + when,
                       f.setting.empty() ? "" : fmt::format(" [{} = {:g} s]", f.setting,
                                                             timeout_value(t, f.setting).value_or(setting_value(f.setting, t))),
                       "", f.detail, f.run_dir);
    }
    return any ? s + "\n" : s + " none\n";
  };
  out += list("false_positive", "false positives (an alarm on healthy work)");
  out += list("miss", "misses (a fault no detector caught within the run)");
  out += list("late", "late detections (beyond the setting + slack)");

  out += "\ndetection latency after the fault and its GPU cost (latency x ranks; * = the fault's first detection):\n";
  if (pass.latencies.empty()) {
    out += "  (no detections after a fault)\n";
  } else {
    std::string head = fmt::format("  {:<26} {:<18} {:>5} {:>10} {:>16}", "scenario", "detector", "rank", "latency_s",
                                   "bound_s");
    for (int r : cost_ranks) head += fmt::format(" {:>12}", fmt::format("GPU-h@{}", r));
    out += head + "\n";
    for (const auto& l : pass.latencies) {
      std::string bound = l.setting.empty() ? "immediate" : fmt::format("{:g} ({})", l.bound_s, l.setting);
      std::string row = fmt::format("  {:<26} {:<18} {:>5} {:>10.2f} {:>16}", l.scenario,
                                    l.detector + (l.first ? "*" : "") + (l.late ? " LATE" : ""),
                                    l.rank >= 0 ? std::to_string(l.rank) : "-", l.latency_s, bound);
      for (int r : cost_ranks) row += fmt::format(" {:>12}", gpu_h(gpu_hours(l.latency_s, r)));
      out += row + "\n";
    }
  }
  return out;
}

json to_json(const Timeouts& t) {
  json j = {{"init_s", t.init_s}, {"collective_s", t.collective_s}, {"progress_s", t.progress_s},
            {"heartbeat_s", t.heartbeat_s}};
  j["checkpoint_s"] = t.checkpoint_s ? json(*t.checkpoint_s) : json(nullptr);
  j["eval_s"] = t.eval_s ? json(*t.eval_s) : json(nullptr);
  return j;
}

json to_json(const PassResult& p) {
  json findings = json::array(), lat = json::array();
  for (const auto& f : p.findings)
    findings.push_back({{"kind", f.kind}, {"scenario", f.scenario}, {"run_dir", f.run_dir}, {"detector", f.detector},
                        {"rank", f.rank}, {"setting", f.setting}, {"at_s", f.at_s}, {"detail", f.detail}});
  for (const auto& l : p.latencies)
    lat.push_back({{"scenario", l.scenario}, {"detector", l.detector}, {"rank", l.rank}, {"latency_s", l.latency_s},
                   {"setting", l.setting}, {"bound_s", l.bound_s}, {"first", l.first}, {"late", l.late}});
  return {{"label", p.label},
          {"status", p.pass() ? "pass" : "fail"},
          {"timeouts", to_json(p.timeouts)},
          {"healthy_runs", p.healthy_runs},
          {"fault_runs", p.fault_runs},
          {"skipped_runs", p.skipped_runs},
          {"false_positives", p.count("false_positive")},
          {"misses", p.count("miss")},
          {"late", p.count("late")},
          {"findings", findings},
          {"latencies", lat}};
}

}  // namespace hanglab
