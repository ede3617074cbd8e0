// Reading a finished run directory back (design: "Run directory"), so reports can be
// regenerated from the files alone (`hanglab report RUN_DIR...`), long after the run and
// by a newer hanglab: RunFacts from harness.jsonl, the verdict and settings from
// run.json, the scenario from its copy, the triage answer by re-running the (pure)
// analyzer. Missing or torn files are data, not errors, except a directory that is not
// a run directory at all.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "injector.hpp"
#include "run/runner.hpp"

namespace hanglab {

// The run.json record of a finished run: host facts, settings, outcome, detections, verdict.
nlohmann::json run_json(const Scenario& sc, const RunResult& res, const HostInfo& host);

// JSON objects of a .jsonl file; torn or non-object lines are skipped. Missing file: empty.
std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& file);
// run.json, or an empty object when absent or unreadable.
nlohmann::json read_run_json(const std::filesystem::path& run_dir);

// RunFacts rebuilt from harness.jsonl (launch time from run.json when present).
RunFacts read_run_facts(const std::filesystem::path& run_dir);

struct LoadedRun {
  Scenario scenario;      // from scenario.toml; name/description from run.json if it no longer loads
  RunResult result;
  nlohmann::json run_json;
};

// Throws std::runtime_error when `run_dir` has neither harness.jsonl nor run.json.
LoadedRun load_run_dir(const std::filesystem::path& run_dir);

// `# Reproduces:` / `# Expected:` of a scenario file's opening comment block.
void header_notes(const std::string& toml_text, std::string& reproduces, std::string& expected);

}  // namespace hanglab
