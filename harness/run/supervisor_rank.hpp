// The supervisor's record of one rank (or of its launcher), shared by the files that implement
// Supervisor: supervisor.cpp (launch, the loop, reaping, teardown), rank_output.cpp (what the
// ranks print and trace) and launchers/launcher_mode.cpp (ranks a launcher started). Private
// to hanglab_run.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <string>

#include "detect/detector.hpp"
#include "run/supervisor.hpp"

namespace hanglab {

// RankWatch (detect/detector.hpp): what the detectors see of the rank, kept current here.
struct Supervisor::Rank : RankWatch {
  bool launched = false;
  int out_fd = -1, err_fd = -1;
  std::string out_buf, err_buf;
  int out_log = -1, err_log = -1;
  std::filesystem::path trace_path;
  off_t trace_off = 0;
  std::string trace_partial;
  double last_redraw_t = 0;  // when the last in-place (\r) progress redraw was logged
  // The newest in-place redraw not logged yet (redraws are logged at most once a second), per
  // stream, and when it was read: logged once a second has passed, before the stream's next
  // line and at its EOF. A bar that moved on in the last second before a rank died or froze
  // (a short epoch, drawn from 0/32 to "Epoch 1: 0%" between two logged redraws) must reach
  // the logs: it is where the job stood, and triage reads it there.
  std::string out_redraw, err_redraw;
  double out_redraw_t = 0, err_redraw_t = 0;
  // When bytes last arrived on stdout / stderr: an unterminated tail (a progress bar's
  // newest redraw) flushed at EOF is dated when it was written, not when the rank died.
  double out_data_t = 0, err_data_t = 0;
  bool exit_by_teardown = false;
  // Launcher mode: the rank is the launcher's child, not ours.
  bool external = false;
  std::optional<int> traced_exit;       // from the trace's `exit` event
  std::optional<int> reported_code;     // from the launcher's report
  std::optional<int> reported_signal;
  std::optional<int> launcher_sent;     // the signal the launcher said it sent (torchrun's closing signal)
  std::optional<int> fault_signal;      // the signal a fault sent it (Job::fault_signalled)
  // rank_fifos: the write ends held here, so a rank's exit (or restart) is no EOF.
  int fifo_keep_out = -1, fifo_keep_err = -1;
  off_t exec_off = 0;                   // how far ranks/<r>/exec.jsonl was read
  std::string exec_partial;
  int incarnation = 0;                  // 0 = first start; restart_count of the latest exec
  // gone_t (RankWatch): when the process died, as first seen (its pidfd turned readable, or
  // /proc said so): the time its exit is dated at, however much later its status is known.
  int pidfd = -1;                       // readable once the process has exited
  std::optional<int> proc_status;       // its wait status, read from /proc while a zombie
};

namespace supervisor_detail {

inline void set_nonblock(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

inline void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // a log write failure must not take the supervisor down
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace supervisor_detail

}  // namespace hanglab
