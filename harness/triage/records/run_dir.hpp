// Triage records: a hanglab run directory -> its observations (model/observations.hpp).
// Reading only: what each file says, with its file:line; nothing is judged here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "triage/model/observations.hpp"

namespace hanglab {

// A hanglab run directory: has ranks/ and harness.jsonl or a ranks/<r>/events.jsonl.
bool is_run_dir(const std::filesystem::path& dir);

// Reads a run directory. Per rank: events.jsonl, stdout.log, stderr.log, stack.txt, oom.txt. Throws std::runtime_error
// when `dir` or `dir`/ranks is not a readable directory; anything inside that is missing or malformed is data.
RunObservations load_run_observations(const std::filesystem::path& dir);

// Innermost interesting frame of the main thread in a gdb `thread apply all bt` /
// `bt` output or a py-spy dump; exposed for unit tests.
std::optional<StackFrameInfo> parse_stack_text(const std::string& text);

// "2026-11-29T09:26:59.123456Z" -> Unix seconds; nullopt when malformed.
std::optional<double> parse_log_timestamp(const std::string& s);

}  // namespace hanglab
