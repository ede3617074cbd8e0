// Stacks as evidence: what a rank's captured main-thread stack (py-spy for Python ranks, gdb
// for native ones; see records/run_dir.cpp for the parsing) shows it doing when the harness
// looked. The frame table (data, in stack_class.cpp) maps frame text to a class:
//   stopped     the process state was T/t (SIGSTOP, a frozen rank), whatever the frames
//   init        init_process_group, rendezvous, a store get / wait, the store barrier
//   collective  c10d / ProcessGroup / DDP reducer / allreduce / barrier / broadcast / Work
//               wait / MPI / NCCL / Gloo; a Python backward that is idle (blocked: DDP's
//               gradient allreduce runs inside backward and is waited for there)
//   io          torch.save / serialization, file write / fsync / open, or the kernel
//               holding it in an I/O wait (state D, a FUSE or NFS wchan)
//   data        DataLoader __next__ / its queue get / a dataset's __getitem__
//   compute     anything else in the program's own code (forward, backward while on CPU,
//               optimizer step, a sleep that stands for compute)
//   unknown     no frame was read
// The first frame, innermost first, that matches an entry decides. Internal to hanglab_triage.
#pragma once

#include <string>
#include <vector>

#include "triage/model/observations.hpp"

namespace hanglab {

struct StackClassRule {
  const char* klass;
  const char* what;                  // short phrase: "a checkpoint save", "allreduce", "DataLoader next"
  std::vector<const char*> needles;  // case-sensitive substrings of one frame; any matches
  const char* example;               // a frame of that shape, as py-spy or gdb prints it
};

const std::vector<StackClassRule>& stack_class_rules();

// Sets info.klass, klass_frame and klass_what from info.frames, idle, state and wchan; torch_save
// (the deciding frame is torch.save's own) and phase (the phase the frames name, logs/frames.cpp).
void classify_stack(StackFrameInfo& info);

}  // namespace hanglab
