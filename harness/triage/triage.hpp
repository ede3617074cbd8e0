// Triage: the analyzer, its public entry points. A pure function of a run directory
// (harness.jsonl, ranks/<r>/ events.jsonl, stdout.log, stderr.log, stack.txt) that builds the
// rank timeline and answers the playbook's four questions. It never looks at the scenario's
// [[fault]] tables or at harness "fault" events to decide: it must reach its answer from what
// the ranks and the supervisor observed, as it would on a real incident.
//
// The same answer can be built from plain logs alone (triage_logs / triage_paths):
// per-rank or per-pod files, one combined launcher log, dmesg, in the formats of
// PyTorch c10d (NCCL watchdog, Gloo, TCPStore), NCCL, torchrun, Slurm, Open MPI and
// Kubernetes; see logs/reader.hpp and README.md "Triage of real logs".
//
// Layers, lower first (a lower one never includes a higher one):
//   model/    TriageResult (the answer, per-rank timelines) and a run directory's observations
//   records/  run directory -> observations            logs/  plain log files -> LogCorpus,
//                                                             the line pattern table
//   fr/       Flight Recorder dumps (torch's pickle or JSON) -> per-rank collective records
//   reason/   observations or a plain-log timeline -> TriageResult (root vs echo, missing by
//             absence, slow vs dead), the playbook's next steps
//   answer/   triage.json and the text report
//   triage.cpp  the entry points below, which chain them.
//
// What a line means lives only in the layers that read text: logs/ (the message catalogue,
// classify_text, the pattern table, frames.cpp's frame -> phase table, progress.cpp), records/
// (records/message_facts.cpp reads a run record's messages with the same plain-log classifier,
// stack_class.cpp a captured stack) and fr/ (a dump's frames). reason/ reads typed observations
// only -- kinds, category, cause, role, strength, phase, signal and the parsed fields (TextFacts,
// LogEvent) -- and never searches a message's text; layers_test.sh fails on a string-literal
// find / contains / starts_with / regex in reason/*.cpp.
#pragma once

#include <filesystem>
#include <vector>

#include "triage/answer/answer.hpp"
#include "triage/model/result.hpp"
#include "triage/reason/next_steps.hpp"
#include "triage/records/run_dir.hpp"

namespace hanglab {

// Analyzes a run directory. Throws std::runtime_error only when `dir` is not readable
// or has no ranks/ folder; missing or truncated files inside are handled as data.
// Flight Recorder dumps the ranks left (ranks/<r>/flight_recorder.{pkl,json}) add a note and
// evidence; they never change the answer the run record gives.
TriageResult triage_run_dir(const std::filesystem::path& dir);
// The same without the Flight Recorder dumps: the run record alone.
TriageResult triage_run_records(const std::filesystem::path& dir);

// Plain logs: `paths` are log files and/or directories of them (searched recursively).
// Throws std::runtime_error when a path does not exist or no readable file is found.
TriageResult triage_logs(const std::vector<std::filesystem::path>& paths, const TriageOptions& opts = {});

// The CLI's entry: one hanglab run directory is analysed from its trace (unless
// opts.logs_only); anything else is triaged as plain logs.
// Flight Recorder dumps, one per rank, named <prefix><rank> (rank_0, nccl_trace_rank_3.json) or
// ranks/<r>/flight_recorder.{pkl,json}: each process group's collectives matched across ranks.
TriageResult triage_fr_dumps(const std::vector<std::filesystem::path>& files, const TriageOptions& opts = {});

TriageResult triage_paths(const std::vector<std::filesystem::path>& paths, const TriageOptions& opts = {});

}  // namespace hanglab
