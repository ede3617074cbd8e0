// Synthetic large-job incidents for the triage benchmark (`hanglab bench`, `triage_bench`):
// N ranks, S step lines per rank in the kubectl/torch_ddp log format, then a PyTorch 2.4
// ProcessGroupNCCL watchdog timeout (with its "failure detected" and "Some NCCL operations
// have failed" lines) on every rank but one, written as one file per rank or one combined
// file; and the measurement of plain-log triage on it in a child process, whose peak RSS
// (getrusage ru_maxrss via wait4) is the triage's own, not the generator's or the caller's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace hanglab {

struct SyntheticJob {
  int ranks = 0;
  int steps = 0;
  int absent = 0;  // the rank that never reports the timeout (missing by absence)
};

// Writes the incident's logs into `dir` (created): train-worker-<r>.log per rank, or
// job.log with every rank's lines prefixed "[rank R]". Returns the bytes written; 0 when a
// file cannot be opened.
uint64_t write_synthetic_incident(const SyntheticJob& job, const std::filesystem::path& dir, bool combined);

// Lines write_synthetic_incident() writes.
uint64_t synthetic_incident_lines(const SyntheticJob& job);

struct TriageMeasure {
  double wall_s = 0;      // fork to reaped, the child's whole triage
  long maxrss_kb = 0;     // the child's peak RSS
  bool ok = false;        // the answer names job.absent missing and the world size
  std::string answer;     // "category/cause missing R of N", or "error: ..."
};

// Triages `dir` as plain logs in a forked child (threads: 0 = hardware concurrency) and
// measures it. With `hanglab_exe`, the child execs `hanglab_exe triage DIR --format json`
// instead: the command a user runs, startup and output included, in a fresh address space
// (a forked child's RSS would start with the caller's pages). Never throws; a failure is
// ok = false with the reason in `answer`.
TriageMeasure measure_log_triage(const std::filesystem::path& dir, const SyntheticJob& job, unsigned threads,
                                 const std::filesystem::path& hanglab_exe = {});

}  // namespace hanglab
