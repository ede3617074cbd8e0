// torch's own Flight Recorder analyser, `torchfrtrace` (the project venv's), as a second
// detector over the dumps a run's ranks left ([detect] flight_recorder: ranks/<r>/
// flight_recorder.pkl). After the run the dumps are copied to flight_recorder/dumps/rank_<r>
// (the <prefix><rank> names it expects), it runs there under a time limit, its stdout and
// stderr go to flight_recorder/torchfrtrace.txt, and its verdict goes into run.json
// ("flight_recorder"): the ranks it names, or that it crashed (it does on Gloo dumps in torch
// 2.15: KeyError ('0', N), their pg_config is keyed by an empty name), or timed out.
// Here, not in triage/: it runs a program; triage stays a pure function of files.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

struct TorchFrTraceResult {
  // no_dumps | not_installed | crashed | timed_out | named_ranks | no_culprit
  std::string status;
  std::string detail;             // the exception's last line, the reason it did not run, ...
  std::vector<int> named_ranks;   // ranks its "missing ranks: {..}" lines name (status named_ranks)
  std::vector<int> dumped_ranks;  // ranks that left a dump
  std::vector<int> undumped_ranks;  // ranks of the world that left none (a SIGKILLed rank)
  std::optional<int> exit_code;
  double duration_s = 0;
  std::string output;             // flight_recorder/torchfrtrace.txt, relative to the run dir
};

// Reads torchfrtrace's combined output and exit status into a verdict (status, detail,
// named_ranks). Pure: the unit tests feed it real outputs.
TorchFrTraceResult judge_torchfrtrace_output(const std::string& text, int exit_code);

// Collects the dumps of ranks 0..world_size-1 and runs `exe` (torchfrtrace) on their copy.
TorchFrTraceResult run_torchfrtrace(const std::filesystem::path& run_dir, int world_size,
                                    const std::filesystem::path& exe, double timeout_s);

nlohmann::json to_json(const TorchFrTraceResult& r);

}  // namespace hanglab
