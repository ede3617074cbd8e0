// The Flight Recorder section of `hanglab bench` ("Flight Recorder: hanglab vs torchfrtrace"),
// also run alone by the fr_bench tool: the same dumps read by `hanglab triage DIR --format json`
// and by torch's own reader, `torchfrtrace DIR` (the project venv's), at 8 and 1,024 ranks.
//
// The dumps: harness/testdata/fr/<case>/ are real Gloo dumps written by torch (make_fr_dumps.py);
// fr_scale.py (beside this file) scales one case to N ranks, every rank's dump a real rank's
// dump (the culprit keeps its own dump or its absence; every other rank a healthy peer's), in
// two layouts: "gloo", pg_config as torch wrote it (keyed by "", while the entries name group
// "0": torchfrtrace 2.x crashes with KeyError ('0', rank)), and "nccl-keyed", pg_config keyed
// by the group the entries name, the shape NCCL dumps have, where torchfrtrace gives a verdict.
//
// Per (case, layout, ranks): each tool's wall time (median of `repeat` runs, a child process
// each: interpreter or binary start included, as a user runs it) and peak RSS; its verdict
// (the ranks it blames, or what it printed instead: undecided, crashed: <exception>); whether
// it is the culprit fr_scale.py placed; whether the two agree where torchfrtrace gives one; and
// the speed ratio (torchfrtrace time / hanglab time), against the goal >= 10x at 1,024 ranks.
// A missing venv or torchfrtrace is reported in the section, not a failure.
#pragma once

#include <csignal>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

struct FrBenchOptions {
  std::filesystem::path hanglab_exe;   // `hanglab triage` is run as this binary
  std::filesystem::path source_dir;    // the source tree: harness/testdata/fr, harness/bench/fr_scale.py
  std::filesystem::path work;          // scaled dump sets go here (created, removed afterwards)
  std::vector<std::string> cases = {"stuck", "mismatched", "killed", "healthy"};
  std::vector<int> ranks = {8, 1024};
  int repeat = 3;
  double tool_timeout_s = 600;          // a run past this is killed and counted as such
  std::filesystem::path torchfrtrace;   // empty: <venv>/bin/torchfrtrace of project_venv()
  std::filesystem::path python;         // runs fr_scale.py; empty: the venv's, else python3
  const volatile std::sig_atomic_t* interrupted = nullptr;
  std::function<void(const std::string&)> note;  // progress lines (stderr)
};

// Runs the section; problems (hanglab's verdict wrong, a dump set not generated) are appended
// to `errors`. torchfrtrace crashing, being wrong or missing is data, never an error.
nlohmann::json run_fr_bench(const FrBenchOptions& o, std::vector<std::string>& errors);

// The source tree holding harness/testdata/fr: the working directory, else the tree hanglab
// was built from. Empty when neither has it.
std::filesystem::path fr_bench_source_dir();

// ---- pure helpers, unit-tested -------------------------------------------------------------

struct FrtVerdict {
  std::string kind;        // blames | undecided | no_problem | crashed
  std::vector<int> ranks;  // blames: the culprits of its first report; undecided: the ranks it names
  std::string text;        // one line, e.g. "missing ranks {5} at seq 7 (gloo:all_reduce)"
};

// torchfrtrace's verdict from what it printed (stdout and stderr together) and its exit status:
// the first report of a collective ("Not all ranks joining collective ... missing ranks: {..}",
// "Collective sequence number: S has errors ... Culprit rank R; ..."), "We cannot decide ...
// missed FR dumps from ranks ({..})" or "No errors found ..." (undecided), nothing (no problem),
// or a traceback (crashed: its last line, e.g. "KeyError: ('0', 3)").
FrtVerdict parse_torchfrtrace_output(const std::string& out, int exit_status);

// The section as text lines (bench.txt) and as HTML (bench.html).
std::string render_fr_bench_text(const nlohmann::json& fr);
std::string render_fr_bench_html(const nlohmann::json& fr);

// Problems of the section (bench.json check): a row without hanglab time, hanglab's verdict
// not the culprit. Empty = sane.
std::vector<std::string> check_fr_bench_json(const nlohmann::json& fr);

}  // namespace hanglab
