// The traceback-frame phase table: every entry's example frame gives its own phase, the
// common frames of real tracebacks give the phase they were written in, and names that
// say nothing (or two things) give none. Frames are parsed as whole lines too (rank
// prefixes peeled off), as the reader sees them.
#include "triage/logs/frames.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "triage/log_test_support.hpp"

using namespace hanglab;
using hanglab::logtest::parse;

namespace {

std::string frame(const std::string& path, const std::string& fn) {
  return "  File \"" + path + "\", line 123, in " + fn;
}

}  // namespace

TEST_CASE("every frame rule's example gives its own phase", "[triage_logs]") {
  for (const auto& r : frame_phase_rules()) {
    INFO(r.example);
    CHECK(frame_phase(r.example) == r.kind);
    CHECK(parse(std::string(r.example)).kind == r.kind);
  }
}

TEST_CASE("frames: the phase a function's name says", "[triage_logs]") {
  const std::string hf = "/usr/lib/python3.10/site-packages/transformers/trainer.py";
  const std::string pl = "/opt/conda/lib/python3.8/site-packages/lightning/pytorch/callbacks/model_checkpoint.py";
  // checkpoint
  CHECK(frame_phase(frame(hf, "_save_checkpoint")) == LogKind::kCheckpointBegin);
  CHECK(frame_phase(frame(hf, "save_model")) == LogKind::kCheckpointBegin);
  CHECK(frame_phase(frame(pl, "_save_topk_checkpoint")) == LogKind::kCheckpointBegin);
  CHECK(frame_phase(frame("/w/openrlhf/trainer/sft_trainer.py", "save_logs_and_checkpoints")) ==
        LogKind::kCheckpointBegin);
  CHECK(frame_phase(frame("/usr/lib/python3.11/site-packages/torch/distributed/checkpoint/state_dict_saver.py",
                          "_save_state_dict")) == LogKind::kCheckpointBegin);
  // eval
  CHECK(frame_phase(frame(hf, "evaluate")) == LogKind::kEvalBegin);
  CHECK(frame_phase(frame("/w/loops/evaluation_loop.py", "validation_step")) == LogKind::kEvalBegin);
  // init
  CHECK(frame_phase(frame("/usr/lib/python3.8/site-packages/torch/distributed/distributed_c10d.py",
                          "init_process_group")) == LogKind::kInitBegin);
  CHECK(frame_phase(frame("/w/megatron/initialize.py", "_initialize_distributed")) == LogKind::kInitBegin);
  CHECK(frame_phase(frame("/w/pipedream/runtime.py", "initialize")) == LogKind::kInitBegin);
  CHECK(frame_phase(frame("/usr/lib/python3.8/site-packages/torch/nn/parallel/distributed.py", "__init__")) ==
        LogKind::kInitBegin);
  // training
  CHECK(frame_phase(frame(hf, "_inner_training_loop")) == LogKind::kTrainBegin);
  CHECK(frame_phase(frame("/w/main.py", "train")) == LogKind::kTrainBegin);
  CHECK(frame_phase(frame("/w/lightning/pytorch/trainer/trainer.py", "_fit_impl")) == LogKind::kTrainBegin);
  CHECK(frame_phase(frame("/w/lightning/pytorch/core/module.py", "training_step")) == LogKind::kTrainBegin);
  // camelCase names are words too (kwola/tasks/RunTrainingStep.py: runTrainingStep; an acronym ends before the
  // capital that starts the next word).
  CHECK(frame_phase(frame("/w/kwola/tasks/RunTrainingStep.py", "runTrainingStep")) == LogKind::kTrainBegin);
  CHECK(frame_phase(frame("/w/app/checkpoints.py", "saveHTTPCheckpoint")) == LogKind::kCheckpointBegin);
  CHECK(frame_phase(frame("/w/app/agent.py", "learnFromBatches")) == LogKind::kNone);
  // shutdown
  CHECK(frame_phase(frame("/usr/lib/python3.10/multiprocessing/util.py", "_exit_function")) == LogKind::kShutdown);
  CHECK(frame_phase(frame("/w/megatron/core/parallel_state.py", "destroy_model_parallel")) == LogKind::kShutdown);
}

TEST_CASE("frames: a DataLoader starting a data pass is data loading -- a batch fetch in the loop is not",
          "[triage_logs]") {
  const std::string dl = "/opt/conda/lib/python3.9/site-packages/torch/utils/data/dataloader.py";
  CHECK(frame_phase(frame(dl, "_get_iterator")) == LogKind::kDataWait);
  CHECK(frame_phase(frame(dl, "__iter__")) == LogKind::kDataWait);
  // Fetching the next batch belongs to the step it feeds; the SIGCHLD handler runs inside whatever
  // the main process was doing; a DataLoader is also built during set-up; a sampler's __iter__ is a
  // generator resumed at every fetch.
  for (const char* fn : {"__next__", "_next_data", "_try_get_data", "__init__"})
    CHECK(frame_phase(frame(dl, fn)) == LogKind::kNone);
  CHECK(frame_phase(frame("/usr/lib/python3.12/site-packages/torch/utils/data/_utils/signal_handling.py",
                          "handler")) == LogKind::kNone);
  CHECK(frame_phase(frame("/usr/lib/python3.12/site-packages/torch/utils/data/sampler.py", "__iter__")) ==
        LogKind::kNone);
  CHECK(frame_phase(frame("/w/app/dataset.py", "__iter__")) == LogKind::kNone);
  const auto l = parse("[rank2]:   File \"" + dl + "\", line 441, in __iter__");
  CHECK(l.kind == LogKind::kDataWait);
  CHECK(l.rank == 2);
  // py-spy lists the innermost call first: the new iterator decides over the loop around it.
  FrameMarkers fm;
  CHECK(fm.keep("    _get_iterator (torch/utils/data/dataloader.py:387)", LogKind::kDataWait));
  CHECK_FALSE(fm.keep("    train (train.py:80)", LogKind::kTrainBegin));
}

TEST_CASE("frames: names that say nothing, or two things, give no phase", "[triage_logs]") {
  // Activation checkpointing is not a checkpoint save.
  CHECK(frame_phase(frame("/usr/lib/python3.10/site-packages/torch/utils/checkpoint.py", "checkpoint")) ==
        LogKind::kNone);
  // The optimizer's _init_group runs at every step; a private _init_* is not start-up.
  CHECK(frame_phase(frame("/usr/lib/python3.10/site-packages/torch/optim/adam.py", "_init_group")) ==
        LogKind::kNone);
  // A constructor anywhere else, the program's plumbing, a bare save, "retrieval" (not eval).
  CHECK(frame_phase(frame("/w/sglang/cuda_graph_runner.py", "__init__")) == LogKind::kNone);
  for (const char* fn : {"<module>", "main", "run", "wrapper", "forward", "_call_impl", "save", "retrieval_step",
                         "all_reduce", "barrier", "pretrain_step_fn"})
    CHECK(frame_phase(frame("/w/x.py", fn)) == LogKind::kNone);
  // HF's _maybe_log_save_evaluate may be logging, saving or evaluating.
  CHECK(frame_phase(frame("/w/transformers/trainer.py", "_maybe_log_save_evaluate")) == LogKind::kNone);
  // Not frames: prose, a C++ frame, a py-spy-like line of no Python file, an unindented one.
  CHECK(frame_phase("Saving model to File \"x\"") == LogKind::kNone);
  CHECK(frame_phase("frame #3: c10d::ProcessGroupNCCL::save_checkpoint() + 0x1d2 (0x7f in libtorch_cuda.so)") ==
        LogKind::kNone);
  CHECK(frame_phase("    PyEval_EvalFrameDefault (libpython3.10.so.1.0)") == LogKind::kNone);
  CHECK(frame_phase("train_model (main.py:12)") == LogKind::kNone);
}

TEST_CASE("frames: the shapes and the order they are printed in", "[triage_logs]") {
  std::string_view path, fn;
  CHECK(frame_shape("  File \"/w/x.py\", line 12, in train", &path, &fn) == FrameShape::kOutermostFirst);
  CHECK(path == "/w/x.py");
  CHECK(fn == "train");
  // faulthandler (Python's own dump on a signal or timeout): "line N in f", innermost first.
  CHECK(frame_shape("  File \"/w/x.py\", line 12 in evaluate", &path, &fn) == FrameShape::kInnermostFirst);
  CHECK(fn == "evaluate");
  CHECK(frame_phase("  File \"/w/x.py\", line 12 in evaluate") == LogKind::kEvalBegin);
  // py-spy dump: "    function (file.py:line)", innermost first.
  CHECK(frame_shape("    destroy_process_group (torch/distributed/distributed_c10d.py:2184)", &path, &fn) ==
        FrameShape::kInnermostFirst);
  CHECK(path == "torch/distributed/distributed_c10d.py");
  CHECK(fn == "destroy_process_group");
  CHECK(frame_phase("    destroy_process_group (torch/distributed/distributed_c10d.py:2184)") == LogKind::kShutdown);
  CHECK(frame_shape("Thread 0x7F81445A8440 (active): \"MainThread\"") == FrameShape::kNone);
  // Only an innermost-first dump's first phase frame counts; a line that is no frame ends the dump.
  FrameMarkers fm;
  CHECK(fm.keep("Thread 0x7F81445A8440 (active): \"MainThread\"", LogKind::kNone));
  CHECK(fm.keep("    _save_checkpoint (transformers/trainer.py:3191)", LogKind::kCheckpointBegin));
  CHECK_FALSE(fm.keep("    _inner_training_loop (transformers/trainer.py:2589)", LogKind::kTrainBegin));
  CHECK(fm.keep("    <module> (train.py:702)", LogKind::kNone));
  CHECK(fm.keep("Thread 0x7F7E83CFF640 (idle): \"Thread-2\"", LogKind::kNone));
  CHECK(fm.keep("    train (train.py:80)", LogKind::kTrainBegin));
  // A traceback's frames all count (its innermost is printed last).
  CHECK(fm.keep("  File \"/w/t.py\", line 1, in train", LogKind::kTrainBegin));
  CHECK(fm.keep("  File \"/w/t.py\", line 2, in _save_checkpoint", LogKind::kCheckpointBegin));
}

TEST_CASE("frames: rank-prefixed frames parse to their phase", "[triage_logs]") {
  auto l = parse("[rank6]:   File \"/w/openrlhf/trainer/sft_trainer.py\", line 301, in save_logs_and_checkpoints");
  CHECK(l.kind == LogKind::kCheckpointBegin);
  CHECK(l.rank == 6);
  l = parse("  File \"/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py\", line 511, in "
            "initialize");
  CHECK(l.kind == LogKind::kInitBegin);
  CHECK(l.rank == -1);
  // The existing serialization.py entry of the pattern table still names torch.save.
  l = parse("  File \"/opt/conda/lib/python3.7/site-packages/torch/serialization.py\", line 379, in save");
  CHECK(l.kind == LogKind::kCheckpointBegin);
}

TEST_CASE("frames: a captured stack's phase, innermost frame first (py-spy, Flight Recorder, gdb)", "[triage_logs]") {
  // A Flight Recorder entry's frames: torch's own call plumbing name nothing, the program's do.
  CHECK(stack_phase({"all_reduce (torch/distributed/distributed_c10d.py:4174)",
                     "wrapper (torch/distributed/c10d_logger.py:79)", "evaluate (eval.py:30)",
                     "train (train.py:77)"}) == "eval");
  CHECK(stack_phase({"destroy_process_group (torch/distributed/distributed_c10d.py:2055)", "main (train.py:10)"}) ==
        "shutdown");
  CHECK(stack_phase({"barrier (torch/distributed/distributed_c10d.py:4000)",
                     "init_process_group (torch/distributed/distributed_c10d.py:1500)", "main (train.py:10)"}) ==
        "init");
  // A method's class is dropped; a bare save (np.save, a logger's) names nothing.
  CHECK(stack_phase({"save (numpy/lib/npyio.py:500)", "Trainer.train (transformers/trainer.py:1938)"}) == "training");
  // gdb's native frames ("name\tfrom lib") and frames naming nothing.
  CHECK(stack_phase({"ncclAllReduce\tfrom /usr/lib/libnccl.so.2", "main\tat train.cpp:10"}).empty());
  CHECK(stack_phase({"<module> (x.py:1)", "wrapper (torch/distributed/c10d_logger.py:79)"}).empty());
  CHECK(stack_phase({}).empty());
}
