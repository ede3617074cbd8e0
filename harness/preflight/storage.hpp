// storage.ckpt: the job's checkpoint directory, measured the way a save uses it. A child process
// stats the directory, reads its free space, writes --ckpt-probe-bytes in 1 MiB writes, fsyncs,
// and removes the file, reporting each step on a pipe; the parent holds the child to a hard
// timeout and to a stall bound per step, so a hung mount (NFS server gone, FUSE daemon stopped)
// costs at most that long and is named by the step it hung in. The verdict holds the measured
// write+fsync rate against the save the job will make: --ckpt-bytes within --ckpt-budget-s (the
// time the job's peers wait in the barrier after a save), free space for one checkpoint, no step
// longer than --ckpt-stall-s.
//
// Must run before the process starts any thread (it forks without exec).
#pragma once

#include "preflight/node_local.hpp"

namespace hanglab::preflight {

// The measurements, as the parent saw them (also the input of the verdict, for unit tests).
struct StorageProbe {
  int stat_errno = 0;            // stat(dir) failed with this
  bool have_space = false;
  double free_bytes = 0, total_bytes = 0;
  std::string failed_step;       // "open", "write", "fsync", "unlink": the step that failed
  int failed_errno = 0;
  double written = 0;            // bytes written so far
  double write_s = 0, fsync_s = 0;
  double slowest_step_s = 0;     // the longest single write or fsync
  bool done = false;             // the probe completed (file written, fsynced, removed)
  std::string stalled_in;        // the step the child was in when it was stopped
  double stalled_for_s = 0;      // how long that step had gone without progress
  bool hard_timeout = false;     // stopped by the probe's overall bound, not by --ckpt-stall-s
  double elapsed_s = 0;          // from the probe's start to its end (or stop)
  bool cut_short = false;        // stopped early: the projected save already exceeded the budget
  std::string file;              // the probe file (left behind only when the child was stopped)
};

// Runs the probe in a child within timeout_s. Throws UsageError when the directory is not there,
// not a directory, or not readable (bad input: exit 2), which needs a definite answer from stat.
StorageProbe probe_storage(const std::string& dir, const Options& opt, double timeout_s);

// The verdict on a probe (pure).
CheckResult judge_storage(const NodeCtx& ctx, const StorageProbe& p, double timeout_s);

}  // namespace hanglab::preflight
