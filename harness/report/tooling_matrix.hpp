// The detection-tooling matrix (issue 13): for each fault scenario that ran, which of the
// tools users rely on noticed it, how long after the fault, and whether each named the right
// rank and the right cause. One row per run directory, one cell per tool:
//
//   pg_error      the ranks' own error: the ProcessGroup's collective timeout / Gloo's "Timed
//                 out waiting" or "Connection closed by peer" (run.json detections of the
//                 registry's backend detectors: the first rank that complained)
//   heartbeat     ProcessGroupNCCL's heartbeat monitor ("Heartbeat monitor timed out" in a
//                 rank's log); n/a on Gloo and MPI
//   torchfrtrace  torch's Flight Recorder analyser on the ranks' dumps (run.json
//                 "flight_recorder"); n/a without [detect] flight_recorder
//   fr_hanglab    hanglab's triage of the same dumps (triage_fr_dumps, re-read from the files)
//   torchrun      torchrun's "Root Cause (first observed failure)" (run.json "torchrun");
//                 n/a under other launchers
//   hanglab       hanglab's own in-run detectors (the registry's harness detectors,
//                 detect/registry.hpp): the first one to fire
//   triage        hanglab triage's answer (triage.json)
//
// The truth each cell is judged against is the scenario's known fault: the culprit ranks are
// the [[fault]] table's ranks, the fault class (triage's category/cause) follows from the
// fault's kind (a table in tooling_matrix.cpp); for a fault the rank program injects itself (the
// Python example's HANGLAB_PY_* variables) from the variable and HANGLAB_PY_FAULT_RANK; for
// anything else from the scenario's [expect.triage]. The fault's time is its firing in
// harness.jsonl, or, for a fault the rank program injects, the time stamp of the culprit's
// first log line naming the variable (train.py prints one where it acts). A tool's verdict is
// mapped to triage's category vocabulary ("Connection closed by peer" says a peer exited:
// rank_exit; a timeout says where a rank waited, not why: no cause); a tool that only reports
// the rank that complained names a victim, and the cell says so.
//
// Reads run directories only (run.json, harness.jsonl, triage.json, scenario.toml, ranks/*
// logs and Flight Recorder dumps): nothing is re-run. Written by `hanglab report
// --tooling-matrix FILE.md` (and FILE.html beside it); ci/tooling-matrix.sh runs the
// scenarios/tooling set and then that.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hanglab {

// The tools, in column order.
const std::vector<std::string>& tooling_tools();
// Column heading of a tool ("PG watchdog / Gloo error" ...).
std::string tooling_tool_title(const std::string& tool);

struct ToolCell {
  std::string tool;
  std::string status;           // fired | silent | no_verdict (ran, gave none: crashed) | na
  std::string note;             // n/a reason, or what the tool said, short
  std::optional<double> after_s;  // after the fault (after launch when no fault time is known)
  bool post_mortem = false;     // its answer exists only after the run (analysers)
  std::vector<int> ranks;       // the ranks it named (pg_error: the rank that complained)
  std::string rank_judgment;    // right | partly | wrong | "" (named none)
  bool victim = false;          // it named only a rank that complained, not the culprit
  std::string category, cause;  // its verdict in triage's vocabulary ("" = it gives no cause)
  std::string cause_judgment;   // right | partly (category right, finer cause not) | wrong | none
};

struct ToolingRow {
  std::string scenario;
  std::string description;
  std::string run_dir;          // as given
  std::string link;             // report.html relative to the page
  std::string fault;            // fault kind(s), or the injecting variable
  std::vector<int> culprits;
  std::string truth_category, truth_cause;
  double start_t = 0;
  std::optional<double> fault_t;  // Unix s
  std::string fault_t_source;
  std::string backend, launcher, workload;  // workload: built-in name or "python" / the command's program
  bool flight_recorder = false;
  std::string verdict;          // the run's own verdict (pass | fail | ...)
  std::string outcome;
  std::vector<ToolCell> cells;  // tooling_tools() order
};

// Judges one run directory. page_dir: where the page goes (for the links). Throws
// std::runtime_error when run_dir is not a run directory.
ToolingRow tooling_row(const std::filesystem::path& run_dir, const std::filesystem::path& page_dir);

// One cell as Markdown/plain text, e.g. "fired +5.2 s; rank 0 (victim) ✗; timeout: no cause".
std::string tooling_cell_text(const ToolCell& c);
// The same in a few characters, for the summary table: "+5.2 s · rank ✗ (victim) · cause ✗".
std::string tooling_cell_short(const ToolCell& c);

// The whole table. `origin` is printed under the title (date, commit, host).
std::string render_tooling_md(const std::vector<ToolingRow>& rows, const std::string& origin);
std::string render_tooling_html(const std::vector<ToolingRow>& rows, const std::string& origin);

}  // namespace hanglab
