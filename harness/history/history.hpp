// Run history: every run is recorded in an embedded SQLite database,
// <results>/history.sqlite, so detection latency and verdicts can be followed across
// runs, LibTorch versions and settings (`hanglab history`). One row per run in `runs`
// and one row per detector that fired in `detections` (first firing, seconds after the
// fault). The database is append-only; a run that cannot be recorded (locked or
// read-only database) is a warning, never a failed run.
//
// Regressions, judged per scenario in time order against that scenario's earlier runs:
//   verdict       the previous run passed and this one did not (fail or unknown);
//   latency       a detector's latency > 1.5 x the median of its earlier latencies + 1 s.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct sqlite3;  // <sqlite3.h> stays out of the header

namespace hanglab {

struct HistoryRecord {
  long long id = 0;              // assigned by the database
  std::string scenario;
  double started_at = 0;         // Unix seconds
  std::string run_dir;
  std::string torch_version;     // LibTorch the workloads were built against
  std::string backend;
  int world_size = 0;
  std::string settings;          // JSON: {"timeouts": {...}, "steps": .., ...}
  std::string verdict;           // pass | fail | unknown | skipped
  std::string outcome;
  std::string triage_category;
  std::string triage_cause;
  double duration_s = 0;
  std::map<std::string, double> latencies;  // detector -> first firing, s after the fault
};

// LibTorch version: the TORCH_VERSION macro of the headers found at build time, else
// /usr/include/torch/csrc/api/include/torch/version.h read now, else "unknown".
std::string torch_version();

// A record from a run directory's run.json (plus the torch version of this build).
HistoryRecord history_record_from_run_json(const nlohmann::json& run_json, const std::string& run_dir);

class HistoryDb {
 public:
  // Opens (creating the file and schema when needed). Throws std::runtime_error naming
  // the path and SQLite's message.
  explicit HistoryDb(const std::filesystem::path& path);
  ~HistoryDb();
  HistoryDb(const HistoryDb&) = delete;
  HistoryDb& operator=(const HistoryDb&) = delete;

  long long record(const HistoryRecord& r);  // returns the new run id
  // Runs in time order (oldest first), optionally of one scenario only.
  std::vector<HistoryRecord> runs(const std::optional<std::string>& scenario = std::nullopt) const;

 private:
  void exec(const std::string& sql);
  sqlite3* db_ = nullptr;
  std::string path_;
};

// Records one run; prints a warning to stderr instead of throwing.
void record_run_history(const std::filesystem::path& db_path, const HistoryRecord& r);

struct Regression {
  std::string scenario;
  long long run_id = 0;
  std::string what;  // "verdict pass -> fail", "exit_monitor latency 3.20 s > 1.5 x median 0.40 s + 1 s"
};

// Pure: `runs` in time order (any mix of scenarios).
std::vector<Regression> find_regressions(const std::vector<HistoryRecord>& runs);

// The `hanglab history` table: per scenario, one line per run with its verdict and
// per-detector latencies, regressions flagged, then a list of the regressions.
std::string render_history(const std::vector<HistoryRecord>& runs, const std::vector<Regression>& regressions,
                           size_t last_n);

}  // namespace hanglab
