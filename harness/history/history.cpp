// Run history in SQLite; see history.hpp.
#include "history/history.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>
#include <sqlite3.h>

#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

std::string torch_version() {
#ifdef HANGLAB_TORCH_VERSION
  return HANGLAB_TORCH_VERSION;
#else
  return "none";  // built without LibTorch (HANGLAB_WITH_TORCH=OFF or no venv)
#endif
}

HistoryRecord history_record_from_run_json(const json& j, const std::string& run_dir) {
  HistoryRecord r;
  r.scenario = j.value("scenario", "");
  r.started_at = j.value("start_t", 0.0);
  r.run_dir = run_dir;
  r.torch_version = torch_version();
  if (auto h = j.find("host"); h != j.end() && h->is_object() && h->contains("torch_version"))
    r.torch_version = h->value("torch_version", r.torch_version);
  json settings = j.value("settings", json::object());
  r.backend = settings.value("backend", "");
  r.world_size = settings.value("world_size", 0);
  r.settings = settings.dump();
  json verdict = j.value("verdict", json::object());
  r.verdict = verdict.value("status", "");
  r.outcome = j.value("outcome", "");
  json triage = j.value("triage", json::object());
  r.triage_category = triage.value("category", "");
  r.triage_cause = triage.value("cause", "");
  r.duration_s = j.value("duration_s", 0.0);
  if (auto fd = verdict.find("first_detection_s"); fd != verdict.end() && fd->is_object())
    for (const auto& [k, v] : fd->items())
      if (v.is_number()) r.latencies[k] = v.get<double>();
  return r;
}

namespace {

// Owns a prepared statement; every error names the database and SQLite's message.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr) != SQLITE_OK) fail("prepare");
  }
  ~Statement() { sqlite3_finalize(st_); }
  Statement& bind(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.c_str(), -1, SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, double d) {
    sqlite3_bind_double(st_, i, d);
    return *this;
  }
  Statement& bind(int i, long long v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail("step");
    return false;
  }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(st_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  double real(int col) const { return sqlite3_column_double(st_, col); }
  long long integer(int col) const { return sqlite3_column_int64(st_, col); }

 private:
  [[noreturn]] void fail(const char* what) {
    throw std::runtime_error(fmt::format("{}: sqlite3 {}: {}", path_, what, sqlite3_errmsg(db_)));
  }
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  std::string path_;
};

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  scenario        TEXT NOT NULL,
  started_at      REAL NOT NULL,     -- Unix seconds
  run_dir         TEXT,
  torch_version   TEXT,
  backend         TEXT,
  world_size      INTEGER,
  settings        TEXT,              -- JSON: timeouts, steps, world_size, ...
  verdict         TEXT,              -- pass | fail | unknown | skipped
  outcome         TEXT,
  triage_category TEXT,
  triage_cause    TEXT,
  duration_s      REAL
);
CREATE INDEX IF NOT EXISTS runs_by_scenario ON runs (scenario, started_at);
CREATE TABLE IF NOT EXISTS detections (
  run_id    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  detector  TEXT NOT NULL,
  latency_s REAL NOT NULL,           -- first firing, seconds after the fault (after launch if none)
  PRIMARY KEY (run_id, detector)
);
PRAGMA user_version = 1;
)sql";

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string compact_timeouts(const std::string& settings) {
  json s = json::parse(settings, nullptr, false);
  if (s.is_discarded() || !s.contains("timeouts")) return "-";
  const json& t = s["timeouts"];
  auto v = [&](const char* k) -> std::string {
    auto it = t.find(k);
    return it != t.end() && it->is_number() ? fmt::format("{:g}", it->get<double>()) : "-";
  };
  std::string out = fmt::format("i{} c{} p{} h{}", v("init_s"), v("collective_s"), v("progress_s"), v("heartbeat_s"));
  if (v("checkpoint_s") != "-") out += " ck" + v("checkpoint_s");
  if (v("eval_s") != "-") out += " ev" + v("eval_s");
  return out;
}

}  // namespace

HistoryDb::HistoryDb(const fs::path& path) : path_(path.string()) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error(fmt::format("{}: sqlite3 open: {}", path_, msg));
  }
  // Two hanglab processes may share a results directory (CTest runs tests in parallel).
  sqlite3_busy_timeout(db_, 10000);
  exec("PRAGMA foreign_keys = ON");
  exec(kSchema);
}

HistoryDb::~HistoryDb() { sqlite3_close(db_); }

void HistoryDb::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error(fmt::format("{}: sqlite3: {}", path_, msg));
  }
}

long long HistoryDb::record(const HistoryRecord& r) {
  // One transaction: a run appears with all its detections or not at all.
  exec("BEGIN IMMEDIATE");
  try {
    Statement ins(db_,
                  "INSERT INTO runs (scenario, started_at, run_dir, torch_version, backend, world_size, settings, "
                  "verdict, outcome, triage_category, triage_cause, duration_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                  path_);
    ins.bind(1, r.scenario).bind(2, r.started_at).bind(3, r.run_dir).bind(4, r.torch_version).bind(5, r.backend);
    ins.bind(6, static_cast<long long>(r.world_size)).bind(7, r.settings).bind(8, r.verdict).bind(9, r.outcome);
    ins.bind(10, r.triage_category).bind(11, r.triage_cause).bind(12, r.duration_s);
    ins.step();
    const long long id = sqlite3_last_insert_rowid(db_);
    for (const auto& [det, lat] : r.latencies) {
      Statement d(db_, "INSERT INTO detections (run_id, detector, latency_s) VALUES (?,?,?)", path_);
      d.bind(1, id).bind(2, det).bind(3, lat);
      d.step();
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    try {
      exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
}

std::vector<HistoryRecord> HistoryDb::runs(const std::optional<std::string>& scenario) const {
  std::vector<HistoryRecord> out;
  std::string sql =
      "SELECT id, scenario, started_at, run_dir, torch_version, backend, world_size, settings, verdict, outcome, "
      "triage_category, triage_cause, duration_s FROM runs";
  if (scenario) sql += " WHERE scenario = ?";
  sql += " ORDER BY started_at, id";
  Statement q(db_, sql, path_);
  if (scenario) q.bind(1, *scenario);
  std::map<long long, size_t> index;
  while (q.step()) {
    HistoryRecord r;
    r.id = q.integer(0);
    r.scenario = q.text(1);
    r.started_at = q.real(2);
    r.run_dir = q.text(3);
    r.torch_version = q.text(4);
    r.backend = q.text(5);
    r.world_size = static_cast<int>(q.integer(6));
    r.settings = q.text(7);
    r.verdict = q.text(8);
    r.outcome = q.text(9);
    r.triage_category = q.text(10);
    r.triage_cause = q.text(11);
    r.duration_s = q.real(12);
    index[r.id] = out.size();
    out.push_back(std::move(r));
  }
  Statement d(db_, "SELECT run_id, detector, latency_s FROM detections", path_);
  while (d.step()) {
    auto it = index.find(d.integer(0));
    if (it != index.end()) out[it->second].latencies[d.text(1)] = d.real(2);
  }
  return out;
}

void record_run_history(const fs::path& db_path, const HistoryRecord& r) {
  try {
    HistoryDb db(db_path);
    db.record(r);
  } catch (const std::exception& e) {
    std::cerr << "hanglab: warning: run not recorded in the history: " << e.what() << "\n";
  }
}

std::vector<Regression> find_regressions(const std::vector<HistoryRecord>& runs) {
  std::vector<Regression> out;
  struct Seen {
    std::string last_verdict;  // of the last run that was not skipped
    std::map<std::string, std::vector<double>> latencies;
  };
  std::map<std::string, Seen> seen;
  for (const auto& r : runs) {
    Seen& s = seen[r.scenario];
    if (r.verdict == "skipped") continue;
    if (s.last_verdict == "pass" && (r.verdict == "fail" || r.verdict == "unknown"))
      out.push_back({r.scenario, r.id, fmt::format("verdict pass -> {}", r.verdict)});
    for (const auto& [det, lat] : r.latencies) {
      const auto& earlier = s.latencies[det];
      if (earlier.empty()) continue;
      const double med = median(earlier);
      if (lat > 1.5 * med + 1.0)
        out.push_back({r.scenario, r.id,
                       fmt::format("{} latency {:.2f} s > 1.5 x median {:.2f} s + 1 s (over {} earlier run{})", det,
                                   lat, med, earlier.size(), earlier.size() == 1 ? "" : "s")});
    }
    s.last_verdict = r.verdict;
    for (const auto& [det, lat] : r.latencies) s.latencies[det].push_back(lat);
  }
  return out;
}

std::string render_history(const std::vector<HistoryRecord>& runs, const std::vector<Regression>& regressions,
                           size_t last_n) {
  if (runs.empty()) return "no runs recorded\n";
  std::map<std::string, std::vector<const HistoryRecord*>> by_scenario;
  for (const auto& r : runs) by_scenario[r.scenario].push_back(&r);
  std::map<long long, std::vector<std::string>> flags;
  for (const auto& g : regressions) flags[g.run_id].push_back(g.what);

  std::string out;
  for (const auto& [name, list] : by_scenario) {
    const size_t from = list.size() > last_n ? list.size() - last_n : 0;
    out += fmt::format("{} ({} run{}{})\n", name, list.size(), list.size() == 1 ? "" : "s",
                       from ? fmt::format(", last {} shown", last_n) : "");
    out += fmt::format("  {:>5}  {:<20} {:<8} {:<9} {:<28} {:<8} {:<9} {:<40} {}\n", "run", "started (UTC)", "torch",
                       "backend", "timeouts", "verdict", "outcome", "triage", "latency after fault (s)");
    for (size_t i = from; i < list.size(); ++i) {
      const HistoryRecord& r = *list[i];
      std::string lat;
      for (const auto& [d, v] : r.latencies) lat += fmt::format("{}{}={:.2f}", lat.empty() ? "" : " ", d, v);
      std::string stamp = iso_time(r.started_at).substr(0, 19);
      std::replace(stamp.begin(), stamp.end(), 'T', ' ');
      out += fmt::format("  {:>5}  {:<20} {:<8} {:<9} {:<28} {:<8} {:<9} {:<40} {}\n", r.id, stamp,
                         r.torch_version.empty() ? "-" : r.torch_version,
                         fmt::format("{}/{}", r.backend.empty() ? "-" : r.backend, r.world_size),
                         compact_timeouts(r.settings), r.verdict, r.outcome.empty() ? "-" : r.outcome,
                         r.triage_category.empty() ? "-" : r.triage_category + "/" + r.triage_cause,
                         lat.empty() ? "-" : lat);
      for (const auto& f : flags[r.id]) out += fmt::format("  {:>5}  ^ REGRESSION: {}\n", "", f);
    }
    // The trend per detector: median of all runs vs the newest.
    std::map<std::string, std::vector<double>> per_det;
    for (const auto* r : list)
      for (const auto& [d, v] : r->latencies) per_det[d].push_back(v);
    for (const auto& [d, v] : per_det) {
      if (v.size() < 2) continue;
      out += fmt::format("  trend {:<18} median {:.2f} s, min {:.2f}, max {:.2f}, newest {:.2f} over {} runs\n", d,
                         median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()),
                         v.back(), v.size());
    }
    out += "\n";
  }
  if (regressions.empty()) {
    out += "no regressions\n";
  } else {
    out += fmt::format("{} regression{}:\n", regressions.size(), regressions.size() == 1 ? "" : "s");
    for (const auto& g : regressions) out += fmt::format("  {} run {}: {}\n", g.scenario, g.run_id, g.what);
  }
  return out;
}

}  // namespace hanglab
