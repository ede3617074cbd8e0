// The frame table of stacks-as-evidence (see stack_class.hpp). Order matters inside one
// frame: a store get is init before it is "c10d", a save is I/O before it is a write.
#include "triage/records/stack_class.hpp"

#include <algorithm>

#include "triage/logs/frames.hpp"

namespace hanglab {

const std::vector<StackClassRule>& stack_class_rules() {
  static const std::vector<StackClassRule> kRules = {
      {"init", "init_process_group",
       {"init_process_group", "_store_based_barrier", "rendezvous", "TCPStore", "PrefixStore", "c10d::Store",
        "store.get", "_create_c10d_store", "init_device_mesh", "ncclCommInitRank", "MPI_Init"},
       "init_process_group (torch/distributed/distributed_c10d.py:1580)"},
      {"io", "a checkpoint save",
       {"torch/serialization.py", "PyTorchStreamWriter", "torch::save", "torch::serialize", "save_checkpoint",
        "_save_snapshot", "save_pretrained", "safetensors"},
       "save (torch/serialization.py:850)"},
      {"data", "DataLoader next",
       // Not "__getitem__" alone: every container class has one (jsonargparse's Namespace, a config's
       // dict); a dataset's is called from torch/utils/data/_utils/fetch.py, which the frames above show.
       {"torch/utils/data/", "DataLoader", "_next_data", "queues.py", "multiprocessing/connection.py"},
       "__next__ (torch/utils/data/dataloader.py:631)"},
      {"collective", "a collective",
       {"c10d::", "ProcessGroup", "torch/distributed/distributed_c10d.py", "torch/nn/parallel/distributed.py",
        "Reducer", "gloo::", "nccl", "NCCL", "MPI_", "PMPI_", "ompi_", "all_reduce", "allreduce", "all_gather",
        "allgather", "reduce_scatter", "broadcast", "barrier", "Work::wait", "wait_tensor"},
       "c10d::ProcessGroupGloo::AsyncWork::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >)"},
      {"io", "file I/O",
       {"fsync", "fdatasync", "__GI___libc_write", "__libc_write", "__libc_open64", "__GI___libc_open",
        "flush (", "write (", "shutil.py"},
       "__GI___libc_write (fd=5, buf=0x55d0c3b1e0a8, nbytes=4096) at ../sysdeps/unix/sysv/linux/write.c:26"},
  };
  return kRules;
}

namespace {

bool has(const std::string& s, const char* n) { return s.find(n) != std::string::npos; }

bool is_backward(const std::string& f) {
  return has(f, "_engine_run_backward") || has(f, "torch/autograd/") || has(f, "backward (torch/_tensor.py") ||
         has(f, "torch::autograd::Engine");
}

// Frames of the interpreter / libc that say nothing about what the program does.
bool is_plumbing(const std::string& f) {
  return f.rfind("<module>", 0) == 0 || f.rfind("_run_code", 0) == 0 || f.rfind("_run_module", 0) == 0 ||
         f.rfind("__libc_start", 0) == 0 || f.rfind("_start", 0) == 0 || f.rfind("??", 0) == 0;
}

}  // namespace

namespace {

void classify_frames(StackFrameInfo& info) {
  info.klass.clear();
  info.klass_frame.clear();
  info.klass_what.clear();
  if (info.state == "T" || info.state == "t") {
    info.klass = "stopped";
    info.klass_what = "stopped (state T)";
    if (!info.frames.empty()) info.klass_frame = info.frames.front();
    return;
  }
  const bool blocked = (info.idle && *info.idle) || info.state == "S" || info.state == "D";
  // The last rule (bare file I/O) is weak: a collective's socket write is a write too, so it
  // decides only when no frame matched a stronger rule.
  const auto& rules = stack_class_rules();
  for (const auto& f : info.frames) {
    for (size_t i = 0; i + 1 < rules.size(); ++i) {
      const auto& rule = rules[i];
      if (std::any_of(rule.needles.begin(), rule.needles.end(), [&](const char* n) { return has(f, n); })) {
        info.klass = rule.klass;
        info.klass_what = rule.what;
        info.klass_frame = f;
        return;
      }
    }
    if (is_backward(f)) {
      // DDP's gradient allreduce runs inside backward: blocked there, the rank waits for it.
      info.klass = blocked ? "collective" : "compute";
      info.klass_what = blocked ? "the DDP gradient allreduce (blocked in backward)" : "backward";
      info.klass_frame = f;
      return;
    }
  }
  for (const auto& f : info.frames) {
    const auto& rule = rules.back();
    if (std::any_of(rule.needles.begin(), rule.needles.end(), [&](const char* n) { return has(f, n); })) {
      info.klass = rule.klass;
      info.klass_what = rule.what;
      info.klass_frame = f;
      return;
    }
  }
  // No frame names a library we know: the kernel may still say it waits for storage.
  if (info.state == "D" || has(info.wchan, "fuse") || has(info.wchan, "nfs") || has(info.wchan, "wait_on_page") ||
      has(info.wchan, "request_wait_answer")) {
    info.klass = "io";
    info.klass_what = info.wchan.empty() ? "uninterruptible I/O (state D)" : "I/O wait in " + info.wchan;
    if (!info.frames.empty()) info.klass_frame = info.frames.front();
    return;
  }
  auto own = std::find_if(info.frames.begin(), info.frames.end(), [](const std::string& f) { return !is_plumbing(f); });
  if (own != info.frames.end()) {
    info.klass = "compute";
    info.klass_what = "its own code";
    info.klass_frame = *own;
    return;
  }
  info.klass = "unknown";
}

}  // namespace

void classify_stack(StackFrameInfo& info) {
  classify_frames(info);
  // torch.save's own frames (torch/serialization.py) decided: the save is torch's, not a library's.
  info.torch_save = info.klass_frame.find("torch/serialization.py") != std::string::npos;
  info.phase = stack_phase(info.frames);  // logs/frames.cpp
}

}  // namespace hanglab
