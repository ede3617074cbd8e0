// The detection-tooling matrix; see tooling_matrix.hpp.
#include "report/tooling_matrix.hpp"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "detect/registry.hpp"
#include "report/html_report.hpp"
#include "run/run_record.hpp"
#include "run/workloads.hpp"
#include "scenario/scenario.hpp"
#include "triage/triage.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Typed reads that take any JSON (a torn or older run.json): a missing key, a null or a value
// of another type gives the default.
const json& member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
const json& arr(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& m = member(j, key);
  return m.is_array() ? m : kEmpty;
}
std::string str(const json& j, const char* key, const std::string& def = "") {
  const json& m = member(j, key);
  return m.is_string() ? m.get<std::string>() : def;
}
double num(const json& j, const char* key, double def) {
  const json& m = member(j, key);
  return m.is_number() ? m.get<double>() : def;
}
int integer(const json& j, const char* key, int def) {
  const json& m = member(j, key);
  return m.is_number_integer() ? m.get<int>() : def;
}
bool boolean(const json& j, const char* key, bool def) {
  const json& m = member(j, key);
  return m.is_boolean() ? m.get<bool>() : def;
}

// The line train.py prints where an injected fault acts names its variable: "(HANGLAB_PY_SKIP_STEP)".
constexpr const char* kScriptFaultMarker = "(HANGLAB_PY_";
constexpr const char* kHeartbeatMonitorLine = "Heartbeat monitor timed out";

// The class of each known fault, in triage's vocabulary (category/cause of triage.json): what
// a tool must say to have named the cause. By fault kind (injectors/), and by the variable of a
// fault the Python example injects itself. A kind missing here falls back to the scenario's
// [expect.triage] category/cause.
struct FaultClass {
  const char* key;
  const char* category;
  const char* cause;
};
const FaultClass kFaultKindClasses[] = {
    {"kill_rank", "rank_exit", "killed"},
    {"oom_rank", "rank_exit", "oom"},
    {"exception_on_rank", "rank_exit", "exception"},
    {"freeze_rank", "straggler", "frozen"},
    {"throttle_cpu", "straggler", "cpu_throttle"},
    {"slow_storage", "straggler", "slow_storage"},
    {"skip_collective", "collective_mismatch", "skipped_collective"},
    {"nan_skip", "collective_mismatch", "skipped_collective"},
    {"extra_collective", "collective_mismatch", "extra_collective"},
    {"mismatched_collective", "collective_mismatch", "mismatched_collective"},
    {"uneven_batches", "collective_mismatch", "uneven_batches"},
    {"tiny_shm", "data_loading", "shm_exhausted"},
    {"disk_full", "resource_limit", "disk_full"},
    {"wrong_master_addr", "rendezvous", "wrong_master_addr"},
    {"port_in_use", "rendezvous", "port_in_use"},
    {"duplicate_rank", "rendezvous", "duplicate_rank"},
    {"wrong_socket_ifname", "network", "wrong_ifname"},
};
const FaultClass kScriptFaultClasses[] = {
    {"HANGLAB_PY_SKIP_STEP", "collective_mismatch", "skipped_collective"},  // skips backward: no allreduce
    {"HANGLAB_PY_RAISE_STEP", "rank_exit", "exception"},
    {"HANGLAB_PY_EXIT_STEP", "collective_mismatch", "uneven_batches"},  // leaves the loop early, exits 0
};

template <size_t N>
const FaultClass* fault_class(const FaultClass (&table)[N], const std::string& key) {
  for (const auto& c : table)
    if (key == c.key) return &c;
  return nullptr;
}

// "2026-11-29T08:26:59.123456Z " at the start of a supervisor-written log line (util iso_time).
std::optional<double> line_time(const std::string& line) {
  int Y, M, D, h, m;
  double s;
  if (line.size() < 20 || std::sscanf(line.c_str(), "%4d-%2d-%2dT%2d:%2d:%lfZ", &Y, &M, &D, &h, &m, &s) != 6)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = Y - 1900, tm.tm_mon = M - 1, tm.tm_mday = D, tm.tm_hour = h, tm.tm_min = m, tm.tm_sec = 0;
  return static_cast<double>(timegm(&tm)) + s;
}

struct LogHit {
  int rank = -1;
  double t = 0;
  std::string text;
};

// The earliest time-stamped line holding `needle` in ranks/<r>/{stdout,stderr}.log of `ranks`
// (every rank folder when empty).
std::optional<LogHit> first_log_line(const fs::path& run_dir, const std::vector<int>& ranks, const std::string& needle) {
  std::optional<LogHit> best;
  std::error_code ec;
  if (!fs::is_directory(run_dir / "ranks", ec)) return best;
  for (const auto& d : fs::directory_iterator(run_dir / "ranks", ec)) {
    int r = -1;
    try {
      r = std::stoi(d.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    if (!ranks.empty() && std::find(ranks.begin(), ranks.end(), r) == ranks.end()) continue;
    for (const char* f : {"stdout.log", "stderr.log"}) {
      std::ifstream in(d.path() / f);
      std::string line;
      while (std::getline(in, line)) {
        if (line.find(needle) == std::string::npos) continue;
        auto t = line_time(line);
        if (!t) continue;
        if (!best || *t < best->t) best = LogHit{r, *t, line.size() > 28 ? line.substr(28) : line};
        break;  // the first in this file
      }
    }
  }
  return best;
}

std::string shorten(std::string s, size_t n = 90) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '|') c = ' ';
  if (s.size() > n) s = utf8_prefix(s, n) + "...";
  return s;
}

std::vector<int> int_array(const json& j) {
  std::vector<int> v;
  if (j.is_array())
    for (const auto& x : j)
      if (x.is_number_integer()) v.push_back(x.get<int>());
  return v;
}

std::string judge_ranks(const std::vector<int>& named, const std::vector<int>& culprits) {
  if (named.empty()) return "";
  if (culprits.empty()) return "?";
  std::set<int> a(named.begin(), named.end()), b(culprits.begin(), culprits.end());
  if (a == b) return "right";
  for (int x : a)
    if (b.count(x)) return "partly";
  return "wrong";
}

std::string judge_cause(const std::string& cat, const std::string& cause, const ToolingRow& row) {
  if (row.truth_category.empty()) return "?";
  if (cat.empty() || cat == "none" || cat == "unknown") return "none";
  if (cat != row.truth_category) return "wrong";
  if (!row.truth_cause.empty() && cause != row.truth_cause) return "partly";
  return "right";
}

double rel(const ToolingRow& row, double t) { return t - row.fault_t.value_or(row.start_t); }

// complainer: the tool reports the rank that noticed (raised, exited), not a rank it blames.
void finish(ToolCell& c, const ToolingRow& row, bool complainer = false) {
  c.rank_judgment = judge_ranks(c.ranks, row.culprits);
  c.victim = complainer && c.rank_judgment == "wrong";
  c.cause_judgment = c.status == "fired" ? judge_cause(c.category, c.cause, row) : "";
}

ToolCell na(const std::string& tool, const std::string& why) {
  ToolCell c;
  c.tool = tool;
  c.status = "na";
  c.note = why;
  return c;
}

std::string fr_na_reason(const ToolingRow& row) {
  if (row.workload.rfind("built-in", 0) == 0 && row.backend == "mpi")
    return "MPI backend: no torch Flight Recorder";
  return "Flight Recorder off in this scenario ([detect] flight_recorder)";
}

// The first detection in run.json by a detector of that source (the registry's: the backend's
// own errors feed pg_error, the harness's in-run detectors the hanglab column).
const json* first_detection(const json& run, DetectorSource source) {
  const json* first = nullptr;
  for (const auto& d : arr(run, "detections")) {
    const DetectorInfo* info = find_detector(str(d, "detector"));
    if (!info || info->source != source || !info->timed) continue;
    if (!first || num(d, "t", 0.0) < num(*first, "t", 0.0)) first = &d;
  }
  return first;
}

// What the detection says, in triage's vocabulary (the registry's category and cause): a
// timeout says where a rank waited, not why; a closed connection says a peer went away.
void set_class(ToolCell& c, const json& detection) {
  if (const DetectorInfo* info = find_detector(str(detection, "detector"))) {
    c.category = std::string(info->category);
    c.cause = std::string(info->cause);
  }
}

ToolCell pg_cell(const ToolingRow& row, const json& run) {
  const std::string tool = "pg_error";
  if (row.backend == "mpi") return na(tool, "MPI backend: no c10d ProcessGroup");
  ToolCell c;
  c.tool = tool;
  c.status = "silent";
  const json* first = first_detection(run, DetectorSource::kBackend);
  if (!first) return c;
  c.status = "fired";
  c.after_s = rel(row, num(*first, "t", 0.0));
  if (integer(*first, "rank", -1) >= 0) c.ranks = {integer(*first, "rank", -1)};
  set_class(c, *first);
  c.note = shorten(str(*first, "detail"), 70);
  finish(c, row, true);
  return c;
}

ToolCell heartbeat_cell(const ToolingRow& row, const fs::path& dir) {
  const std::string tool = "heartbeat";
  if (row.backend != "nccl")
    return na(tool, fmt::format("{}: the heartbeat monitor is ProcessGroupNCCL's (runs on GPU runners)",
                                row.backend.empty() ? "no c10d backend" : row.backend == "gloo" ? "Gloo" : row.backend));
  ToolCell c;
  c.tool = tool;
  c.status = "silent";
  if (auto hit = first_log_line(dir, {}, kHeartbeatMonitorLine)) {
    c.status = "fired";
    c.after_s = rel(row, hit->t);
    c.ranks = {hit->rank};
    c.cause = "heartbeat_timeout";  // the watchdog thread itself stopped: no cause of the fault
    c.note = shorten(hit->text, 70);
    finish(c, row, true);
  }
  return c;
}

ToolCell torchfrtrace_cell(const ToolingRow& row, const json& run) {
  const std::string tool = "torchfrtrace";
  if (!row.flight_recorder) return na(tool, fr_na_reason(row));
  ToolCell c;
  c.tool = tool;
  c.post_mortem = true;
  const json fr = member(run, "flight_recorder");
  const json t = member(fr, "torchfrtrace");
  const std::string status = str(t, "status");
  const std::string detail = str(t, "detail");
  const double end = num(run, "end_t", row.start_t);
  c.after_s = rel(row, end + num(t, "duration_s", 0.0));
  if (status == "named_ranks") {
    c.status = "fired";
    c.ranks = int_array(arr(t, "named_ranks"));
    // torchfrtrace reports ranks missing from a collective: a mismatch, with no why.
    c.category = "collective_mismatch";
    c.note = fmt::format("missing ranks {{{}}}", fmt::join(c.ranks, ", "));
  } else if (status == "no_culprit") {
    c.status = "silent";
    c.note = "no mismatch found";
  } else if (status == "not_installed") {
    return na(tool, "torchfrtrace not installed here");
  } else {
    c.status = "no_verdict";
    c.note = status.empty() ? std::string("not run") : status + (detail.empty() ? "" : ": " + shorten(detail, 60));
  }
  finish(c, row);
  return c;
}

ToolCell fr_hanglab_cell(const ToolingRow& row, const fs::path& dir, const json& run) {
  const std::string tool = "fr_hanglab";
  if (!row.flight_recorder) return na(tool, fr_na_reason(row));
  ToolCell c;
  c.tool = tool;
  c.post_mortem = true;
  c.after_s = rel(row, num(run, "end_t", row.start_t));
  std::vector<fs::path> dumps;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(dir / "ranks", ec))
    for (const char* name : {"flight_recorder.pkl", "flight_recorder.json"})
      if (fs::exists(d.path() / name)) dumps.push_back(d.path() / name);
  std::sort(dumps.begin(), dumps.end());
  if (dumps.empty()) {
    c.status = "no_verdict";
    c.note = "no dumps";
    return c;
  }
  TriageOptions opts;
  const int ws = integer(member(run, "settings"), "world_size", 0);
  if (ws > 0) opts.world_size = ws;
  try {
    TriageResult r = triage_fr_dumps(dumps, opts);
    c.category = r.category;
    c.cause = r.cause;
    c.ranks = r.missing_ranks;
    // A rank named without a class (rank_absent: it left no dump) is still an answer.
    c.status = (r.category.empty() || r.category == "none" || r.category == "unknown") && c.ranks.empty() ? "silent" : "fired";
    c.note = fmt::format("{}/{} ({} dump{})", r.category, r.cause, dumps.size(), dumps.size() == 1 ? "" : "s");
  } catch (const std::exception& e) {
    c.status = "no_verdict";
    c.note = shorten(e.what(), 60);
  }
  finish(c, row);
  return c;
}

ToolCell torchrun_cell(const ToolingRow& row, const fs::path& dir, const json& run) {
  const std::string tool = "torchrun";
  if (row.launcher != "torchrun") return na(tool, fmt::format("launcher {}: no torchrun summary", row.launcher));
  ToolCell c;
  c.tool = tool;
  c.status = "silent";
  const json tr = member(run, "torchrun");
  const json rc = tr.is_object() ? member(tr, "root_cause") : json();
  if (!rc.is_object()) {
    c.note = tr.is_object() && boolean(tr, "alive_at_harness_teardown", false)
                 ? "no summary: still waiting when hanglab ended the run"
                 : "no failure summary";
    return c;
  }
  c.status = "fired";
  // When it printed the summary: it exits right after it.
  double t = num(run, "end_t", row.start_t);
  for (const auto& e : read_jsonl(dir / "harness.jsonl"))
    if (str(e, "ev") == "launcher_exit") t = num(e, "t", t);
  c.after_s = rel(row, t);
  c.ranks = {integer(rc, "rank", -1)};
  const int code = integer(rc, "exitcode", 0);
  std::string tb = str(rc, "traceback");
  // No error file: torchrun prints a placeholder, not the rank's error.
  if (tb == "<N/A>" || tb == "N/A" || tb.find("To enable traceback") != std::string::npos) tb.clear();
  // torchrun's claim is always "this rank failed first"; what it failed of is in its exit
  // code and traceback.
  if (code == -9) {
    c.category = "rank_exit", c.cause = "killed";
  } else if (code < 0) {
    c.category = "rank_exit", c.cause = fmt::format("signal {}", -code);
  } else if (tb.find("imed out") != std::string::npos || tb.find("timeout") != std::string::npos) {
    c.cause = "timeout";
  } else if (tb.find("Connection closed") != std::string::npos || tb.find("reset by peer") != std::string::npos) {
    c.category = "rank_exit", c.cause = "peer_closed";
  } else if (!tb.empty()) {
    c.category = "rank_exit", c.cause = "exception";
  } else {
    c.category = "rank_exit", c.cause = fmt::format("exit {}", code);
  }
  c.note = fmt::format("rank {} exitcode {}{}", c.ranks[0], code, tb.empty() ? "" : ": " + shorten(tb, 50));
  finish(c, row, true);
  return c;
}

ToolCell hanglab_detectors_cell(const ToolingRow& row, const json& run) {
  ToolCell c;
  c.tool = "hanglab";
  c.status = "silent";
  const json* first = first_detection(run, DetectorSource::kHarness);
  if (!first) return c;
  c.status = "fired";
  c.after_s = rel(row, num(*first, "t", 0.0));
  const std::string det = str(*first, "detector");
  if (integer(*first, "rank", -1) >= 0) c.ranks = {integer(*first, "rank", -1)};
  set_class(c, *first);
  c.note = det + ": " + shorten(str(*first, "detail"), 60);
  finish(c, row, true);
  return c;
}

ToolCell triage_cell(const ToolingRow& row, const fs::path& dir, const json& run) {
  ToolCell c;
  c.tool = "triage";
  c.post_mortem = true;
  c.after_s = rel(row, num(run, "end_t", row.start_t));
  std::ifstream in(dir / "triage.json");
  json t = in ? json::parse(in, nullptr, false) : json();
  if (!t.is_object()) {
    c.status = "no_verdict";
    c.note = "no triage.json";
    return c;
  }
  c.category = str(t, "category");
  c.cause = str(t, "cause");
  c.ranks = int_array(arr(t, "missing_ranks"));
  c.status = (c.category.empty() || c.category == "none" || c.category == "unknown") && c.ranks.empty() ? "silent" : "fired";
  c.note = c.category + "/" + c.cause;
  finish(c, row);
  return c;
}

std::string mark(const std::string& judgment) {
  if (judgment == "right") return "✓";
  if (judgment == "partly") return "~";
  if (judgment == "wrong") return "✗";
  if (judgment == "none") return "✗";
  return "?";
}

std::string after_text(const ToolCell& c) {
  if (!c.after_s) return "";
  return fmt::format("{}{:+.1f} s", c.post_mortem ? "after run, " : "", *c.after_s);
}

std::string truth_text(const ToolingRow& r) {
  std::string s = r.truth_category.empty() ? "?" : r.truth_category;
  if (!r.truth_cause.empty()) s += "/" + r.truth_cause;
  return fmt::format("rank {}: {}", r.culprits.empty() ? std::string("?") : fmt::format("{}", fmt::join(r.culprits, ",")), s);
}

struct Tally {
  int applicable = 0, fired = 0, rank_right = 0, cause_right = 0;
};

std::map<std::string, Tally> tally(const std::vector<ToolingRow>& rows) {
  std::map<std::string, Tally> out;
  for (const auto& r : rows)
    for (const auto& c : r.cells) {
      Tally& t = out[c.tool];
      if (c.status == "na") continue;
      ++t.applicable;
      if (c.status != "fired") continue;
      ++t.fired;
      t.rank_right += c.rank_judgment == "right";
      t.cause_right += c.cause_judgment == "right";
    }
  return out;
}

const char* kLegend =
    "Each cell: when the tool gave its answer (seconds after the fault was injected; \"after run\" for analysers "
    "that read the run's files at its end), the rank(s) it named (✓ the culprit, ~ some of them, ✗ another rank; "
    "\"victim\": it only reports the rank that complained), and the cause it gives in hanglab triage's vocabulary "
    "(✓ the fault's class, ~ the class but not the finer cause, ✗ another class or no cause at all). "
    "\"silent\": it ran and said nothing; \"no verdict\": it ran and gave no answer (crashed); \"n/a\": it does not "
    "apply to this run, and why.";

}  // namespace

const std::vector<std::string>& tooling_tools() {
  static const std::vector<std::string> kTools = {"pg_error", "heartbeat", "torchfrtrace", "fr_hanglab",
                                                  "torchrun", "hanglab",   "triage"};
  return kTools;
}

std::string tooling_tool_title(const std::string& tool) {
  static const std::map<std::string, std::string> kTitles = {
      {"pg_error", "PG watchdog / Gloo error (ranks' own)"},
      {"heartbeat", "NCCL heartbeat monitor"},
      {"torchfrtrace", "FR dumps → torchfrtrace"},
      {"fr_hanglab", "FR dumps → hanglab triage"},
      {"torchrun", "torchrun summary (Root Cause)"},
      {"hanglab", "hanglab detectors (in run)"},
      {"triage", "hanglab triage (run dir)"},
  };
  auto it = kTitles.find(tool);
  return it == kTitles.end() ? tool : it->second;
}

ToolingRow tooling_row(const fs::path& dir, const fs::path& page_dir) {
  if (!fs::exists(dir / "run.json"))
    throw std::runtime_error(dir.string() + ": not a hanglab run directory (no run.json)");
  const json run = read_run_json(dir);
  ToolingRow row;
  row.run_dir = dir.string();
  row.scenario = str(run, "scenario", dir.parent_path().filename().string());
  row.description = str(run, "description");
  row.start_t = num(run, "start_t", 0.0);
  row.outcome = str(run, "outcome");
  row.verdict = str(member(run, "verdict"), "status", "unknown");
  std::error_code ec;
  fs::path link = fs::relative(fs::absolute(dir) / "report.html", fs::absolute(page_dir), ec);
  row.link = ec ? (dir / "report.html").string() : link.string();
  const json settings = member(run, "settings");
  row.backend = str(settings, "backend");
  row.launcher = str(settings, "launcher", "local");

  // The truth: the scenario's known fault.
  std::optional<Scenario> sc;
  try {
    sc = load_scenario(dir / "scenario.toml", make_load_options());
  } catch (const std::exception&) {
  }
  const json wl = member(settings, "workload");
  if (wl.is_string()) {
    row.workload = "built-in " + wl.get<std::string>();
  } else if (wl.is_array()) {
    for (const auto& a : wl)
      if (a.is_string() && a.get<std::string>().size() > 3 &&
          a.get<std::string>().compare(a.get<std::string>().size() - 3, 3, ".py") == 0)
        row.workload = "python " + fs::path(a.get<std::string>()).filename().string();
    if (row.workload.empty() && !wl.empty() && wl[0].is_string())
      row.workload = fs::path(wl[0].get<std::string>()).filename().string();
  }
  std::vector<std::string> kinds;
  if (sc) {
    row.flight_recorder = sc->detect.flight_recorder;
    const FaultClass* cls = nullptr;
    for (const auto& f : sc->faults) {
      kinds.push_back(f.kind);
      if (!cls) cls = fault_class(kFaultKindClasses, f.kind);
      for (int r : f.ranks)
        if (std::find(row.culprits.begin(), row.culprits.end(), r) == row.culprits.end()) row.culprits.push_back(r);
    }
    if (sc->faults.empty()) {
      // A fault the rank program injects itself (workloads/python_ddp/train.py): its variable
      // names it, HANGLAB_PY_FAULT_RANK (default 1) the rank.
      for (const auto& [k, v] : sc->workload.env)
        if (const FaultClass* c = fault_class(kScriptFaultClasses, k)) {
          kinds.push_back(k + "=" + v);
          if (!cls) cls = c;
        }
      if (!kinds.empty()) {
        auto it = sc->workload.env.find("HANGLAB_PY_FAULT_RANK");
        try {
          row.culprits = {it == sc->workload.env.end() ? 1 : std::stoi(it->second)};
        } catch (const std::exception&) {
        }
      }
    }
    if (cls) {
      row.truth_category = cls->category;
      row.truth_cause = cls->cause;
    } else {
      // Neither: what the scenario's author wrote as the expected answer is the truth.
      row.truth_category = sc->expect.triage.category.value_or("");
      row.truth_cause = sc->expect.triage.cause.value_or("");
    }
    if (row.culprits.empty() && sc->expect.triage.missing_ranks) row.culprits = *sc->expect.triage.missing_ranks;
  }
  row.fault = kinds.empty() ? "none" : fmt::format("{}", fmt::join(kinds, ", "));
  std::sort(row.culprits.begin(), row.culprits.end());

  // When the fault struck: its firing, else the culprit's own line.
  for (const auto& f : arr(run, "faults"))
    if (boolean(f, "fired", false) && member(f, "t").is_number() && (!row.fault_t || num(f, "t", 0) < *row.fault_t)) {
      row.fault_t = num(f, "t", 0);
      row.fault_t_source = "the fault's firing (harness.jsonl)";
    }
  if (!row.fault_t && !row.culprits.empty())
    if (auto hit = first_log_line(dir, row.culprits, kScriptFaultMarker)) {
      row.fault_t = hit->t;
      row.fault_t_source = fmt::format("rank {}'s line \"{}\"", hit->rank, shorten(hit->text, 80));
    }
  if (!row.fault_t) row.fault_t_source = "no fault time known: seconds after launch";

  row.cells = {pg_cell(row, run),
               heartbeat_cell(row, dir),
               torchfrtrace_cell(row, run),
               fr_hanglab_cell(row, dir, run),
               torchrun_cell(row, dir, run),
               hanglab_detectors_cell(row, run),
               triage_cell(row, dir, run)};
  return row;
}

std::string tooling_cell_text(const ToolCell& c) {
  if (c.status == "na") return "n/a: " + c.note;
  if (c.status == "silent") return "silent" + (c.note.empty() ? "" : " (" + c.note + ")");
  if (c.status == "no_verdict") return "no verdict: " + c.note;
  std::string s = "fired " + after_text(c);
  if (!c.ranks.empty())
    s += fmt::format("; rank {} {}{}", fmt::join(c.ranks, ","), mark(c.rank_judgment), c.victim ? " (victim)" : "");
  else
    s += "; no rank";
  const std::string said = c.category.empty() ? (c.cause.empty() ? "no cause" : c.cause + ": no cause")
                                              : c.category + (c.cause.empty() ? "" : "/" + c.cause);
  s += fmt::format("; {} {}", said, mark(c.cause_judgment));
  if (!c.note.empty() && c.tool != "triage" && c.tool != "fr_hanglab") s += " — " + c.note;
  return s;
}

std::string tooling_cell_short(const ToolCell& c) {
  if (c.status == "na") return "n/a";
  if (c.status == "silent") return "silent";
  if (c.status == "no_verdict") return "no verdict";
  std::string s = c.after_s ? fmt::format("{}{:+.1f} s", c.post_mortem ? "after run " : "", *c.after_s) : "fired";
  s += c.ranks.empty() ? " · no rank" : " · rank " + mark(c.rank_judgment) + (c.victim ? " (victim)" : "");
  s += " · cause " + mark(c.cause_judgment);
  return s;
}

std::string render_tooling_md(const std::vector<ToolingRow>& rows, const std::string& origin) {
  std::string md = "# Detection-tooling matrix\n\n";
  if (!origin.empty()) md += origin + "\n\n";
  md += std::string(kLegend) + "\n\n## Summary\n\n| fault | truth |";
  for (const auto& t : tooling_tools()) md += " " + tooling_tool_title(t) + " |";
  md += "\n|---|---|";
  for (size_t i = 0; i < tooling_tools().size(); ++i) md += "---|";
  md += "\n";
  for (const auto& r : rows) {
    md += fmt::format("| {} | {} |", r.fault == r.scenario ? r.fault : r.scenario + ": " + r.fault, truth_text(r));
    for (const auto& c : r.cells) md += " " + tooling_cell_short(c) + " |";
    md += "\n";
  }
  const auto t = tally(rows);
  md += "\n| tool | applied | fired | named the culprit | right cause |\n|---|---|---|---|---|\n";
  for (const auto& tool : tooling_tools()) {
    const Tally& x = t.count(tool) ? t.at(tool) : Tally{};
    md += fmt::format("| {} | {} | {} | {} | {} |\n", tooling_tool_title(tool), x.applicable, x.fired, x.rank_right,
                      x.cause_right);
  }
  md += "\n## Cells\n\n| fault (scenario) | truth | backend, launcher, ranks |";
  for (const auto& t : tooling_tools()) md += " " + tooling_tool_title(t) + " |";
  md += "\n|---|---|---|";
  for (size_t i = 0; i < tooling_tools().size(); ++i) md += "---|";
  md += "\n";
  for (const auto& r : rows) {
    md += fmt::format("| **{}** (`{}`, run {}) | {} | {}, {}, {} |", r.fault, r.scenario, r.verdict, truth_text(r),
                      r.backend, r.launcher, r.workload);
    for (const auto& c : r.cells) md += " " + tooling_cell_text(c) + " |";
    md += "\n";
  }
  md += "\nFault times:\n\n";
  for (const auto& r : rows) md += fmt::format("- `{}`: {} — {}\n", r.scenario, r.fault_t_source, r.run_dir);
  return md;
}

std::string render_tooling_html(const std::vector<ToolingRow>& rows, const std::string& origin) {
  std::string h =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>hanglab: detection-tooling "
      "matrix</title><style>body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#1f2328}"
      "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d0d7de;padding:4px 6px;vertical-align:top}"
      "th{background:#f6f8fa;text-align:left}td.na{color:#8c959f;background:#f6f8fa}td.silent{background:#fff8c5}"
      "td.no_verdict{background:#ffebe9}td.good{background:#dafbe1}td.half{background:#fff1d6}td.bad{background:#ffebe9}"
      ".muted{color:#57606a}.when{font-weight:600}</style></head><body><h1>Detection-tooling matrix</h1>";
  h += "<p class=\"muted\">" + html_escape(origin) + "</p><p>" + html_escape(kLegend) + "</p><table><tr><th>fault</th><th>truth</th>";
  for (const auto& t : tooling_tools()) h += "<th>" + html_escape(tooling_tool_title(t)) + "</th>";
  h += "</tr>";
  for (const auto& r : rows) {
    h += fmt::format("<tr><td><b>{}</b><br><a href=\"{}\">{}</a><br><span class=\"muted\">{}; {}, {}, {}; run {}</span></td><td>{}</td>",
                     html_escape(r.fault), html_escape(r.link), html_escape(r.scenario), html_escape(r.description),
                     html_escape(r.backend), html_escape(r.launcher), html_escape(r.workload), html_escape(r.verdict),
                     html_escape(truth_text(r)));
    for (const auto& c : r.cells) {
      std::string cls = c.status;
      if (c.status == "fired")
        cls = c.rank_judgment == "right" && c.cause_judgment == "right" ? "good"
              : c.rank_judgment == "right" || c.cause_judgment == "right" || c.rank_judgment == "partly" ||
                      c.cause_judgment == "partly"
                  ? "half"
                  : "bad";
      h += fmt::format("<td class=\"{}\" title=\"{}\">{}</td>", cls, html_escape(c.note), html_escape(tooling_cell_text(c)));
    }
    h += "</tr>";
  }
  h += "</table><table><tr><th>tool</th><th>applied</th><th>fired</th><th>named the culprit</th><th>right cause</th></tr>";
  const auto t = tally(rows);
  for (const auto& tool : tooling_tools()) {
    const Tally& x = t.count(tool) ? t.at(tool) : Tally{};
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", html_escape(tooling_tool_title(tool)),
                     x.applicable, x.fired, x.rank_right, x.cause_right);
  }
  h += "</table></body></html>\n";
  return h;
}

}  // namespace hanglab
