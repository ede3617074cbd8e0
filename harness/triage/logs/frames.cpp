// The traceback-frame phase table (see frames.hpp). The first entry that selects a name
// decides; entries are ordered from the most specific phase (a save, an evaluation) to the
// most general (the training loop), because the specific phases happen inside the loop.
#include "triage/logs/frames.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace hanglab {

const std::vector<FramePhaseRule>& frame_phase_rules() {
  static const std::vector<FramePhaseRule> kRules = {
      // Tearing the job down: destroy_process_group, Lightning's teardown, Python's atexit
      // handlers (multiprocessing's _exit_function) run after the work is done.
      {LogKind::kShutdown,
       {"_exit_function", "_run_finalizers"},
       {},
       {"destroy", "shutdown", "teardown"},
       {},
       {},
       "",
       "  File \"/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py\", line 2055, in "
       "destroy_process_group"},
      // Saving: save_checkpoint, _save_checkpoint, save_model, save_pretrained, Lightning's
      // _save_topk_checkpoint, DCP's _save_state_dict. A bare "save" is anybody's (a logger,
      // np.save); "checkpoint" alone is activation checkpointing (torch/utils/checkpoint.py).
      {LogKind::kCheckpointBegin,
       {},
       {},
       {"save", "saving"},
       {"checkpoint", "checkpoints", "ckpt", "model", "state", "pretrained", "weights", "safetensors", "snapshot",
        "shard", "shards"},
       {"eval", "evaluate", "evaluation", "validate", "validation"},
       "",
       "  File \"/usr/local/lib/python3.10/dist-packages/transformers/trainer.py\", line 2390, in _save_checkpoint"},
      // torch.distributed.checkpoint's save entry points (dcp.save, save_state_dict).
      {LogKind::kCheckpointBegin,
       {"save", "async_save", "_save"},
       {},
       {},
       {},
       {},
       "/distributed/checkpoint/",
       "  File \"/usr/local/lib/python3.11/site-packages/torch/distributed/checkpoint/state_dict_saver.py\", line "
       "143, in save"},
      // Evaluation / validation loops: evaluate, evaluation_loop, validation_step, eval_step.
      // HF's _maybe_log_save_evaluate may still be logging or saving: no phase.
      {LogKind::kEvalBegin,
       {},
       {},
       {"eval", "evaluate", "evaluation", "evaluator", "validate", "validation"},
       {},
       {"save", "log", "maybe"},
       "",
       "  File \"/usr/local/lib/python3.10/dist-packages/transformers/trainer.py\", line 3166, in evaluation_loop"},
      // A data pass starting: the DataLoader's __iter__ / _get_iterator (a new iterator, its worker
      // processes started) runs before an epoch's first batch, outside any step: the failure hit data
      // loading. Not a batch fetch inside the loop (__next__, _next_data, a worker's fetch): that is
      // part of the training step it feeds, as is the SIGCHLD handler that reports a dead worker
      // from inside whatever the main process was doing. Not __init__: a DataLoader is also built
      // during set-up. Only dataloader.py: a sampler's __iter__ is a generator run at every fetch.
      {LogKind::kDataWait,
       {"__iter__", "_get_iterator"},
       {},
       {},
       {},
       {},
       "/torch/utils/data/dataloader.py",
       "  File \"/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py\", line 387, in _get_iterator"},
      // Start-up: the process group and its store, model-parallel groups, DDP's construction
      // (it broadcasts the parameters), a framework's initialize / init_* steps. A private
      // helper named _init_* is not (the optimizer's _init_group runs at every step).
      {LogKind::kInitBegin,
       {"init_process_group", "_init_process_group", "_initialize_distributed", "_store_based_barrier",
        "_create_c10d_store", "_tcp_rendezvous_handler", "_env_rendezvous_handler", "_initialize_workers",
        "_verify_param_shape_across_processes", "_sync_module_states", "_sync_params_and_buffers",
        "init_device_mesh", "setup_distributed"},
       {"init_", "initialize"},
       {},
       {},
       {},
       "",
       "  File \"/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py\", line 2448, in "
       "init_device_graphs"},
      {LogKind::kInitBegin,
       {"__init__"},
       {},
       {},
       {},
       {},
       "/torch/nn/parallel/distributed.py",
       "  File \"/usr/local/lib/python3.8/dist-packages/torch/nn/parallel/distributed.py\", line 655, in __init__"},
      // The backward pass (torch/_tensor.py's and torch/autograd's backward, the engine's run_backward,
      // a trainer's manual_backward, a precision plugin's backward): gradients are computed to train.
      {LogKind::kTrainBegin,
       {"backward", "_engine_run_backward", "run_backward", "manual_backward"},
       {},
       {},
       {},
       {},
       "",
       "  File \"/usr/lib/python3.11/site-packages/torch/autograd/__init__.py\", line 204, in backward"},
      // The training loop: train, training_step, _inner_training_loop, train_epoch, fit.
      {LogKind::kTrainBegin,
       {},
       {},
       {"train", "training", "fit"},
       {},
       {},
       "",
       "  File \"/usr/local/lib/python3.10/dist-packages/transformers/trainer.py\", line 1938, in "
       "_inner_training_loop"},
  };
  return kRules;
}

namespace {

using sv = std::string_view;

bool in(const std::vector<sv>& v, sv w) { return std::find(v.begin(), v.end(), w) != v.end(); }

bool any_word(const std::vector<sv>& words, const std::vector<std::string>& list) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& w) { return in(words, w); });
}

// The function's words: lower-case, split at '_' ("_inner_training_loop" -> inner, training, loop) and
// at case changes, as camelCase code names them ("runTrainingStep" -> run, training, step;
// "loadHTTPData" -> load, http, data).
std::vector<std::string> words_of(sv name) {
  std::vector<std::string> out;
  std::string cur;
  const auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  const auto lower = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  const auto flush = [&] {
    if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
  };
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '_') {
      flush();
      continue;
    }
    // A capital after a small letter starts a word; so does the last capital of a run followed by
    // a small letter (the acronym ends before it).
    if (upper(c) && i > 0 &&
        (lower(name[i - 1]) || (upper(name[i - 1]) && i + 1 < name.size() && lower(name[i + 1]) &&
                                !(name[i + 1] >= '0' && name[i + 1] <= '9'))))
      flush();
    cur.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  flush();
  return out;
}

}  // namespace

FrameShape frame_shape(sv msg, sv* path_out, sv* name_out) {
  size_t p = 0;
  while (p < msg.size() && (msg[p] == ' ' || msg[p] == '\t')) ++p;
  sv path, name;
  FrameShape shape = FrameShape::kNone;
  if (msg.compare(p, 6, "File \"") == 0) {
    const size_t path_begin = p + 6;
    const size_t path_end = msg.find('"', path_begin);
    if (path_end == sv::npos) return FrameShape::kNone;
    path = msg.substr(path_begin, path_end - path_begin);
    sv rest = msg.substr(path_end + 1);
    if (rest.compare(0, 7, ", line ") != 0) return FrameShape::kNone;
    size_t q = 7;
    while (q < rest.size() && rest[q] >= '0' && rest[q] <= '9') ++q;
    if (q == 7) return FrameShape::kNone;
    if (rest.compare(q, 5, ", in ") == 0) {  // traceback: "line 2448, in init_device_graphs"
      shape = FrameShape::kOutermostFirst;
      name = rest.substr(q + 5);
    } else if (rest.compare(q, 4, " in ") == 0) {  // faulthandler: "line 796 in forward"
      shape = FrameShape::kInnermostFirst;
      name = rest.substr(q + 4);
    } else {
      return FrameShape::kNone;
    }
    const size_t end = name.find_first_of(" \t\r");
    if (end != sv::npos) name = name.substr(0, end);
  } else {
    // py-spy: "    destroy_process_group (torch/distributed/distributed_c10d.py:2184)", indented
    if (p < 2) return FrameShape::kNone;
    sv m = msg.substr(p);
    while (!m.empty() && (m.back() == ' ' || m.back() == '\r')) m.remove_suffix(1);
    const size_t open = m.find(" (");
    if (open == sv::npos || open == 0 || m.empty() || m.back() != ')') return FrameShape::kNone;
    name = m.substr(0, open);
    if (name.find_first_of(" \t") != sv::npos) return FrameShape::kNone;
    sv inner = m.substr(open + 2, m.size() - open - 3);
    const size_t colon = inner.rfind(':');
    if (colon == sv::npos || colon + 1 >= inner.size()) return FrameShape::kNone;
    for (size_t k = colon + 1; k < inner.size(); ++k) {
      if (inner[k] < '0' || inner[k] > '9') return FrameShape::kNone;
    }
    path = inner.substr(0, colon);
    if (path.find(".py") == sv::npos) return FrameShape::kNone;
    shape = FrameShape::kInnermostFirst;
  }
  if (name.empty() || name.size() > 200) return FrameShape::kNone;
  if (path_out) *path_out = path;
  if (name_out) *name_out = name;
  return shape;
}

LogKind frame_phase(sv msg) {
  sv path, name;
  if (frame_shape(msg, &path, &name) == FrameShape::kNone) return LogKind::kNone;
  const std::vector<std::string> words = words_of(name);
  for (const auto& r : frame_phase_rules()) {
    if (!r.path.empty() && path.find(r.path) == sv::npos) continue;
    bool hit = in(r.names, name);
    if (!hit && name.front() != '_') {
      hit = std::any_of(r.prefixes.begin(), r.prefixes.end(), [&](sv pre) { return name.substr(0, pre.size()) == pre; });
    }
    if (!hit && !r.words.empty() && any_word(r.words, words)) hit = r.with.empty() || any_word(r.with, words);
    if (!hit) continue;
    if (any_word(r.without, words)) return LogKind::kNone;
    return r.kind;
  }
  return LogKind::kNone;
}

std::string stack_phase(const std::vector<std::string>& frames) {
  for (const auto& f : frames) {
    std::string frame = f.substr(0, f.find('\t'));
    const auto open = frame.find(" (");
    if (open == std::string::npos) continue;
    const auto dot = frame.rfind('.', open);
    if (dot != std::string::npos) frame = frame.substr(dot + 1);
    switch (frame_phase("    " + frame)) {
      case LogKind::kCheckpointBegin: return "checkpoint";
      case LogKind::kEvalBegin: return "eval";
      case LogKind::kTrainBegin: return "training";
      case LogKind::kInitBegin: return "init";
      case LogKind::kDataWait: return "data";
      case LogKind::kShutdown: return "shutdown";
      default: break;
    }
  }
  return "";
}

bool FrameMarkers::keep(sv msg, LogKind kind) {
  const FrameShape fs = frame_shape(msg);
  if (fs == FrameShape::kNone) {
    taken_ = false;
    return true;
  }
  if (fs != FrameShape::kInnermostFirst) return true;
  switch (kind) {
    case LogKind::kInitBegin:
    case LogKind::kTrainBegin:
    case LogKind::kCheckpointBegin:
    case LogKind::kEvalBegin:
    case LogKind::kDataWait:
    case LogKind::kShutdown:
      if (taken_) return false;
      taken_ = true;
      return true;
    default:
      return true;
  }
}

}  // namespace hanglab
