// Reading a rank's process from /proc; mostly, watching the exit of a process that is not
// our child: a rank started by a launcher (mpirun) is the launcher's child, so waitpid()
// cannot see it, and its wait status is gone once the launcher reaps it.
//
// - pidfd_open(2) gives a descriptor that poll(2) reports readable the moment the process
//   has exited: the supervisor adds it to its poll set and dates the death then, not a
//   tick later and not when the launcher gets round to reaping it.
// - While the exited process is a zombie (until its parent reaps it), field 52 of
//   /proc/PID/stat, exit_code, holds its wait status: how it ended, straight from the
//   kernel, whether or not the launcher ever reports it.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace hanglab {

// pidfd_open(pid, 0); -1 where the kernel lacks it (before 5.3) or the pid is gone.
// The descriptor is close-on-exec.
int open_pidfd(pid_t pid);

struct ProcExit {
  bool gone = false;                // exited (zombie) or already reaped (no /proc entry)
  std::optional<int> wait_status;   // as waitpid() would give it; only while a zombie
};

// Reads /proc/PID/stat once. A running or stopped process is not gone.
ProcExit probe_proc_exit(pid_t pid);

// CPU time a process has used, its own and its reaped children's (utime + stime + cutime
// + cstime, fields 14-17 of /proc/PID/stat), in clock ticks; -1 when unreadable. The
// supervisor's sign of progress for a rank that has not written anything yet.
long long process_cpu_ticks(pid_t pid);

// The scheduler state of a process (field 3 of /proc/PID/stat: R running, S sleeping, D disk
// sleep, T stopped, t traced, Z zombie) and the kernel function it sleeps in
// (/proc/PID/wchan, "0" when running). Read just before a stack capture, which stops the
// process itself: triage needs the state the rank was in, not the state gdb put it in.
struct ProcState {
  std::string state;  // one letter; empty when unreadable
  std::string wchan;  // empty when unreadable or not sleeping
};
ProcState read_proc_state(pid_t pid);

}  // namespace hanglab
