// The rank's Flight Recorder dump ([detect] flight_recorder = true): hanglab sets
// TORCH_FR_BUFFER_SIZE, so torch records every collective of the c10d backend, and
// HANGLAB_FR_DUMP, the path of this rank's dump. The bytes are torch's own (the backend's
// FrDumper: c10d::dump_fr_trace for ProcessGroupGloo, c10d::dump_nccl_trace for
// ProcessGroupNCCL: the pickle `torchfrtrace` and `hanglab triage` read); this file decides
// only when they are written, and writes them atomically (tmp + rename):
//   - on SIGUSR1 (hanglab, when its first detector fires): the rank goes on;
//   - on SIGTERM (hanglab's and torchrun's teardown): then the rank dies of SIGTERM, as it
//     would have without the recorder;
//   - on the fatal path (fail(): a collective timed out, a peer closed), before _exit;
//   - at the end of training;
//   - when torch dumps by itself (ProcessGroupNCCL's dump on timeout, through the
//     DebugInfoWriter the NCCL backend registers, which calls fr_dump_write).
// A SIGKILLed rank leaves none. The Python ranks do the same (workloads/python_ddp/train.py).
//
// Signals: SIGTERM and SIGUSR1 are blocked in the thread that arms (it must be the only
// thread: every thread started later inherits the mask) and taken by one thread with
// sigwait, so a dump never runs inside a signal handler. Forked children (the data
// loader's workers) get the previous mask back. <dump>.armed holds the pid once armed: the
// harness signals only ranks that take SIGUSR1 instead of dying of it.
#pragma once

#include <functional>
#include <string>

namespace hanglab {

// Returns torch's dump (the pickle); may throw (the dump is then skipped and logged).
using FrDumper = std::function<std::string()>;

// Arms the recorder's dumps when HANGLAB_FR_DUMP is set and `dumper` is set: returns true
// then. Call once, before any thread starts. A dump path without a dumper is logged and
// ignored (the backend has no Flight Recorder).
bool fr_arm(FrDumper dumper);

// The dump path when armed, else empty.
const std::string& fr_dump_path();

// Writes torch's dump now (`why` goes into the log line). Never throws. `final`: no dump
// starts after this one (the process is about to _exit; a later one would be cut off and
// leave its tmp file). A no-op when not armed.
void fr_dump(const char* why, bool final = false);

// Writes `bytes` (a dump torch made itself) as this rank's dump. Never throws.
void fr_dump_write(const std::string& bytes, const char* why);

}  // namespace hanglab
