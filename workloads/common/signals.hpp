// Signal hygiene for rank programs: the dispositions a PyTorch training script runs with.
//
// CPython ignores SIGPIPE at startup, so a rank writing to a socket whose peer has died
// gets EPIPE, which the backend turns into an error ("Connection closed by peer") that
// the rank reports and exits on. A C++ rank that keeps the default disposition is
// instead killed by SIGPIPE on that write: it dies silently, as if it were a second
// rank that failed on its own, and the run's verdict depends on which write came first.
// Every built-in workload calls init_rank_signals() first thing in main(), before any
// thread or backend exists (dispositions are process-wide and inherited across fork, and
// a handler installed by a library later is left alone).
#pragma once

namespace hanglab {

// Ignores SIGPIPE. Never fails (sigaction cannot fail for SIGPIPE with SIG_IGN).
void init_rank_signals();

}  // namespace hanglab
