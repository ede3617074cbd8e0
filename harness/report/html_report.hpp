// HTML reports: report.html per run directory and matrix.html for a run over many
// scenarios. Both are self-contained single files (inline CSS, SVG and a little JS; no
// network, no external fonts) so they open from a CI artifact or a laptop's disk.
//
// report.html is written from run-directory files only (harness.jsonl, ranks/*/
// events.jsonl, triage.json, run.json and the header comments of scenario.toml), so
// `hanglab report RUN_DIR` regenerates it for any old run. It shows a per-rank timeline
// (x = seconds after launch): steps, collectives (stuck ones in red), phases
// (checkpoint, eval, data, init), heartbeats, the fault's firing, each detector's first
// firing, errors, exits and signals; the triage answer beside it; detections,
// expectations and exits below. Row height adapts so 4 and 64 ranks are both readable;
// long runs scroll horizontally while the rank labels stay put. The SVG is drawn here,
// not by the script: the script only adds layer toggles, a time cursor and row
// highlighting, so the page reads the same with JavaScript off.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace hanglab {

// Throws std::runtime_error only when run_dir is not a run directory.
std::string render_run_html(const std::filesystem::path& run_dir);

// One line of the matrix page, read from a run directory's run.json.
struct MatrixEntry {
  std::string scenario;
  std::string status;        // pass | fail | unknown | skipped
  std::string outcome;
  std::string triage;        // category/cause
  std::string link;          // report.html relative to the matrix page
  double duration_s = 0;
  double fault_at_s = -1;    // after launch; -1 = no fault fired
  std::map<std::string, double> detections_at_s;  // detector -> after launch
  std::map<std::string, double> first_detection_s;  // detector -> after the fault
  std::vector<std::string> failed_checks;
  std::string skip_reason;
};

MatrixEntry matrix_entry(const std::filesystem::path& run_dir, const std::filesystem::path& page_dir);
std::string render_matrix_html(const std::vector<MatrixEntry>& entries, const std::string& title);

// HTML text escaping (& < > " ').
std::string html_escape(const std::string& s);

}  // namespace hanglab
