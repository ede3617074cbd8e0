// The progress-line table (see progress.hpp). Specific shapes come first: the first entry
// whose needle and regex both match decides, so "[GPU1] Epoch 12 | Batchsize: 32 | Steps: 22"
// is the tutorial's epoch line, not a generic "Steps: 22".
#include "triage/logs/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <regex>

namespace hanglab {

namespace {

// Optional leading tags a program or logger puts before its message: "[rank 2] ",
// "[GPU1] ", "INFO: ", "train: ".
#define HL_PREFIX R"(^(?:\s*\[[^\]]*\]|\s*[A-Za-z_][\w.-]*:)*\s*)"

}  // namespace

const std::vector<ProgressPattern>& progress_patterns() {
  // name, needle, regex, epoch, epoch_total, step, step_total, example[, json]
  static const std::vector<ProgressPattern> kTable = {
      // pytorch/examples distributed/ddp-tutorial-series: Steps is the batches of one epoch.
      {"ddp_tutorial", "batchsize", R"(Epoch (\d+) \| Batchsize: \d+ \| Steps: (\d+))", 1, 0, 0, 2,
       "[GPU1] Epoch 12 | Batchsize: 32 | Steps: 22"},
      // pytorch/examples dcgan (and many GAN scripts): [epoch/epochs][batch/batches]
      {"epoch_batch_brackets", "][", R"(\[(\d+)/(\d+)\]\s*\[(\d+)/(\d+)\])", 1, 2, 3, 4,
       "[1/5][20/469] Loss_D: 0.6517 Loss_G: 2.8713 D(x): 0.7718 D(G(z)): 0.2712 / 0.0791"},
      // mmengine (mmdetection, mmsegmentation, mmpretrain 1.x) LogProcessor.get_log_after_iter
      // (mmengine/runner/log_processor.py): "Epoch(train)  [{epoch}][{iter}/{dataloader_len}]" by epoch
      // (epoch from 1), "Iter(train) [{iter}/{max_iters}]" by iteration. Only mode `train`: the same
      // header with `val` / `test` counts evaluation batches, which are no training steps.
      {"mmengine", "(train)", R"((?:Epoch|Iter)\(train\)\s*(?:\[\s*(\d+)\])?\s*\[\s*(\d+)/(\d+)\])", 1, 0, 2, 3,
       "2023/10/26 11:20:02 - mmengine - INFO - Epoch(train)  [2][3400/7330]  lr: 1.0000e-04  eta: 1 day, 2:03:04  "
       "time: 0.5120  data_time: 0.0040  memory: 20000  loss: 0.3125"},
      // pytorch/examples imagenet ProgressMeter: "Epoch: [0][ 10/5005]"
      {"imagenet_meter", "epoch", R"(Epoch: \[(\d+)\]\s*\[\s*(\d+)/(\d+)\])", 1, 0, 2, 3,
       "Epoch: [0][ 10/5005]\tTime  0.512 ( 0.640)\tData  0.001 ( 0.120)\tLoss 6.8956e+00 (6.9089e+00)"},
      // pytorch/examples mnist: "Train Epoch: 1 [640/60000 (1%)]" (samples seen, not batches)
      {"mnist", "train epoch", R"(Train Epoch: (\d+) \[(\d+)/(\d+))", 1, 0, 2, 3,
       "Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.283364"},
      // Megatron-LM training_log: " iteration       20/  500000 | consumed samples: ..."
      {"megatron", "iteration", R"(iteration\s+(\d+)\s*/\s*(\d+)\s*\|)", 0, 0, 1, 2,
       " iteration       20/  500000 | consumed samples:        10240 | elapsed time per iteration (ms): 512.3 | "
       "learning rate: 1.500E-04 | global batch size:   512 | lm loss: 9.812E+00 |"},
      // DeepSpeed engine: "[Rank 0] step=20, skipped=0, lr=[...]" and the throughput line.
      {"deepspeed_step", "skipped=", R"(\bstep=(\d+), skipped=\d+)", 0, 0, 1, 0,
       "[Rank 0] step=20, skipped=0, lr=[0.001], mom=[(0.9, 0.999)]"},
      {"deepspeed_steps", "steps:", R"(\bsteps: (\d+) loss: )", 0, 0, 1, 0,
       "steps: 20 loss: 0.6931 iter time (s): 0.512 samples/sec: 62.500"},
      // Lightning's progress bar: "Epoch 3:  45%|####5     | 212/469 [00:10<00:12, 20.10it/s, v_num=0]"
      {"lightning_bar", "%|", R"(Epoch (\d+):\s*\d+%\|[^|]*\|\s*(\d+)/(\d+))", 1, 0, 2, 3,
       "Epoch 3:  45%|████▌     | 212/469 [00:10<00:12, 20.10it/s, v_num=0, train_loss=0.312]"},
      // Lightning's RichProgressBar (the default where `rich` is installed): "Epoch 111/-2 ━━━╸  17/32 0:00:01 • 0:00:01 325.13it/s"
      {"lightning_rich_bar", "epoch", R"(Epoch (\d+)/-?\d+ [^0-9]*?(\d+)/(\d+) \d+:\d\d:\d\d)", 1, 0, 2, 3,
       "Epoch 111/-2 \xe2\x94\x81\xe2\x94\x81\xe2\x94\x81\xe2\x95\xb8               17/32 0:00:01 \xe2\x80\xa2 0:00:01 325.13it/s v_num: 0"},
      // A plain tqdm bar (HF Trainer's, accelerate's, anybody's): " 45%|####5 | 212/469 [00:10<00:12, 20.1it/s]"
      {"tqdm", "%|", R"((\d+)%\|[^|]*\|\s*(\d+)/(\d+)\s*\[)", 0, 0, 2, 3,
       " 45%|████▌     | 212/469 [00:10<00:12, 20.10it/s]"},
      // HF Trainer's log dict (Python repr): {'loss': 0.69, ..., 'epoch': 0.04}
      {"hf_trainer_log", "'epoch'", R"('epoch': ([0-9]+(?:\.[0-9]+)?))", 1, 0, 0, 0,
       "{'loss': 0.6931, 'grad_norm': 1.234, 'learning_rate': 4.9e-05, 'epoch': 0.04}"},
      // JSON lines (metrics loggers, our own python_ddp --json): a step / iteration field.
      {"json_step", "{", R"(^\s*\{)", 0, 0, 0, 0, R"({"step": 300, "loss": 0.1234, "lr": 0.001})", true},
      // key=value anywhere in the line: "loss=0.31 iter=120", "global_step=300"; a word of its
      // own, not part of a path or file name ("epoch=3-step=4192.ckpt" is a checkpoint's name)
      {"key_value", "=", R"((?:^|[\s,;(\[{|])(?:global_step|step|iteration|iter)\s*=\s*(\d+)(?:\s*/\s*(\d+))?(?![\w.\-/]))", 0, 0, 1, 2,
       "train: loss=0.3125 iter=120 lr=0.001"},
      // The epoch then the batch within it, in words: "Epoch 3, Batch 120, Loss 0.41", PaddlePaddle v2's
      // event handler "Pass 11, Batch 140, Cost 1.168355, {...}" (its book's train.py prints
      // "Pass %d, Batch %d, Cost %f, %s" % (event.pass_id, event.batch_id, event.cost, event.metrics); a pass
      // is Paddle's epoch). The batch counts within the epoch.
      {"epoch_batch_words", "batch",
       HL_PREFIX R"((?:epoch|pass)\s*[:#]?\s*(\d+)\s*(?:/\s*\d+\s*)?[,|]?\s*batch\s*[:#]?\s*(\d+)(?:\s*/\s*(\d+))?)", 1, 0, 2, 3,
       "Pass 11, Batch 140, Cost 1.168355, {'classification_error_evaluator': 0.267578125}"},
      // A message that starts with the counter: "step 300/1000", "Iteration 50", "[rank 2] step: 29/200"
      {"step_word", "", HL_PREFIX R"((?:global[ _]step|step|iteration|iter)\b\s*[:#]?\s*(\d+)(?:\s*/\s*(\d+))?)", 0, 0, 1,
       2, "[rank 2] step 29/200 loss 0.4183"},
      // ...or with the epoch: "Epoch 3", "epoch 12/40", "Starting epoch 2"
      {"epoch_word", "epoch", HL_PREFIX R"((?:starting |train |training )?epoch\b\s*[:#]?\s*\[?\s*(\d+)(?:\s*/\s*(\d+))?)", 1,
       2, 0, 0, "Epoch 3/10 - loss: 0.2211 - accuracy: 0.9312"},
  };
  return kTable;
}

std::string ProgressMatch::describe() const {
  std::string out;
  if (epoch) {
    out = *epoch == static_cast<long long>(*epoch) ? fmt::format("epoch {}", static_cast<long long>(*epoch))
                                                   : fmt::format("epoch {:.2f}", *epoch);
    if (epoch_total) out += fmt::format("/{}", *epoch_total);
  }
  if (step) {
    if (!out.empty()) out += ", ";
    out += fmt::format("step {}", *step);
    if (step_total) out += fmt::format("/{}", *step_total);
  } else if (step_total && epoch) {
    out += fmt::format(" ({} steps)", *step_total);
  }
  return out;
}

std::optional<long long> ProgressMatch::steps_done() const {
  if (!step) return std::nullopt;
  if (pattern == "mnist" || pattern == "ddp_tutorial") return std::nullopt;
  // mmengine's by-epoch header numbers epochs from 1 (runner.epoch + 1 during training); its
  // by-iteration header counts iterations over the run.
  if (pattern == "mmengine") {
    if (!epoch) return *step;
    if (!step_total || *step_total <= 0 || *epoch < 1) return std::nullopt;
    return (static_cast<long long>(*epoch) - 1) * *step_total + *step;
  }
  const bool per_epoch = pattern == "lightning_bar" || pattern == "lightning_rich_bar" || pattern == "imagenet_meter" ||
                         pattern == "epoch_batch_brackets" || pattern == "epoch_batch_words";
  if (!per_epoch) return *step;
  if (!epoch || !step_total || *step_total <= 0 || *epoch < 0) return std::nullopt;
  // All three number epochs from 0 (dcgan prints "[epoch/niter]" with the 0-based epoch).
  return static_cast<long long>(*epoch) * *step_total + *step;
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

const std::vector<std::regex>& compiled() {
  static const std::vector<std::regex> kRegex = [] {
    std::vector<std::regex> v;
    for (const auto& p : progress_patterns()) {
      v.emplace_back(std::string(p.regex), std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    }
    return v;
  }();
  return kRegex;
}

std::optional<ProgressMatch> match_json(std::string_view s, const ProgressPattern& p) {
  const auto j = nlohmann::json::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  ProgressMatch m;
  m.pattern = p.name;
  for (const char* k : {"step", "global_step", "iteration", "iter"}) {
    auto it = j.find(k);
    if (it != j.end() && it->is_number_integer() && it->get<long long>() >= 0) {
      m.step = it->get<long long>();
      break;
    }
  }
  if (auto it = j.find("epoch"); it != j.end() && it->is_number() && it->get<double>() >= 0) m.epoch = it->get<double>();
  if (!m.step && !m.epoch) return std::nullopt;
  return m;
}

std::optional<long long> group_int(const std::cmatch& mt, int g) {
  if (g <= 0 || static_cast<size_t>(g) >= mt.size() || !mt[g].matched) return std::nullopt;
  try {
    return std::stoll(mt[g].str());
  } catch (...) {
    return std::nullopt;
  }
}

// A plain tqdm bar counts training steps only when nothing says it counts something else.
// Libraries draw many bars besides the training loop's: "Loading weights: 100%|...| 28/28",
// "Map: 100%|...| 400/400 [00:00<00:00, 9855.27 examples/s]", "Validation DataLoader 0: ...".
// A bar is read as training progress when its description (the text before the percentage,
// after any "[rank 1]" / "INFO:" tags) is empty or names training (train, epoch, step,
// iteration, batch), and its rate, if shown, is in iterations (it/s, s/it), not examples,
// bytes or files.
bool training_bar(std::string_view line, size_t bar_at) {
  static const std::regex kTag(R"(^\s*(?:\[[^\]]*\]|(?:INFO|WARNING|WARN|DEBUG|ERROR|rank\s*\d+|\d+)\s*:)\s*)",
                               std::regex::icase);
  static const std::regex kTrainingWords(R"(\b(?:train\w*|epoch\w*|steps?|iter\w*|batch\w*|global_step)\b)",
                                         std::regex::icase);
  std::string desc(line.substr(0, std::min(bar_at, line.size())));
  for (std::smatch t; std::regex_search(desc, t, kTag) && t.length(0) > 0;) desc = t.suffix().str();
  while (!desc.empty() && (std::isspace(static_cast<unsigned char>(desc.back())) || desc.back() == ':')) desc.pop_back();
  if (!desc.empty() && !std::regex_search(desc, kTrainingWords)) return false;
  // The rate inside the bar's trailing "[elapsed<left, RATE]".
  const auto open = line.find('[', bar_at);
  if (open == std::string_view::npos) return true;
  const auto close = line.find(']', open);
  const std::string_view stats = line.substr(open, close == std::string_view::npos ? std::string_view::npos : close - open);
  const auto slash = stats.rfind("/s");
  const auto per = stats.rfind("s/");
  if (slash == std::string_view::npos && per == std::string_view::npos) return true;
  return stats.find("it/s") != std::string_view::npos || stats.find("s/it") != std::string_view::npos;
}

}  // namespace

std::optional<ProgressMatch> match_progress(std::string_view line) {
  if (const auto cr = line.find_last_of('\r'); cr != std::string_view::npos) {
    // tqdm redraws in place: the last non-empty segment is the newest state.
    std::string_view rest = line.substr(cr + 1);
    std::string_view before = line.substr(0, cr);
    while (rest.find_first_not_of(" \t") == std::string_view::npos && !before.empty()) {
      const auto c2 = before.find_last_of('\r');
      rest = c2 == std::string_view::npos ? before : before.substr(c2 + 1);
      before = c2 == std::string_view::npos ? std::string_view() : before.substr(0, c2);
    }
    line = rest;
  }
  if (line.size() > 4096) line = line.substr(0, 4096);
  if (std::none_of(line.begin(), line.end(), [](unsigned char c) { return std::isdigit(c); })) return std::nullopt;
  const std::string low = lower(line);
  const auto& table = progress_patterns();
  const auto& rx = compiled();
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& p = table[i];
    if (!p.needle.empty() && low.find(p.needle) == std::string::npos) continue;
    std::cmatch mt;
    if (!std::regex_search(line.data(), line.data() + line.size(), mt, rx[i])) continue;
    if (p.json) {
      if (auto m = match_json(line, p)) return m;
      continue;
    }
    ProgressMatch m;
    m.pattern = p.name;
    if (p.epoch > 0 && mt[p.epoch].matched) {
      try {
        m.epoch = std::stod(mt[p.epoch].str());
      } catch (...) {
      }
    }
    m.epoch_total = group_int(mt, p.epoch_total);
    m.step = group_int(mt, p.step);
    m.step_total = group_int(mt, p.step_total);
    if (!m.epoch && !m.step) continue;
    if (p.name == "tqdm" && !training_bar(line, static_cast<size_t>(mt.position(0)))) continue;
    return m;
  }
  return std::nullopt;
}

namespace {

long long digits_at(std::string_view s, size_t& p) {
  long long v = 0;
  const size_t b = p;
  while (p < s.size() && s[p] >= '0' && s[p] <= '9' && v < (1LL << 40)) v = v * 10 + (s[p++] - '0');
  return p > b ? v : -1;
}

// "27:15" / "1:02:03" -> seconds; -1 when it is not a clock.
double clock_s(std::string_view s) {
  double total = 0;
  int parts = 0;
  size_t p = 0;
  while (p < s.size()) {
    const long long v = digits_at(s, p);
    if (v < 0) return -1;
    total = total * 60 + static_cast<double>(v);
    ++parts;
    if (p < s.size() && s[p] == ':') ++p;
    else break;
  }
  return parts >= 2 && p == s.size() ? total : -1;
}

bool has_word(std::string_view low, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (low.find(w) != std::string_view::npos) return true;
  return false;
}

// tqdm without a total (tqdm.format_meter: "{desc}: {n}{unit} [{elapsed}, {rate}{postfix}]", e.g.
// datasets' "Generating train split: 2230000 examples [29:59, 1466.92 examples/s]"): no bar, no
// percentage; the count, its unit and the clock say the same.
bool parse_tqdm_count(std::string_view line, TqdmBar& bar) {
  for (size_t open = line.find(" ["); open != std::string_view::npos; open = line.find(" [", open + 1)) {
    const size_t comma = line.find(", ", open + 2);
    const size_t end = line.find(']', open + 2);
    if (comma == std::string_view::npos || end == std::string_view::npos || comma > end || comma - open > 12) continue;
    const double elapsed = clock_s(line.substr(open + 2, comma - open - 2));
    if (elapsed < 0) continue;
    // The rate: "1466.92 examples/s", "? examples/s", "1.13s/it".
    const std::string_view rate = line.substr(comma + 2, end - comma - 2);
    // tqdm's rate_fmt: "{rate:5.2f}{unit}/s", "{1/rate:5.2f}s/{unit}" or "?{unit}/s".
    const size_t slash = rate.find('/');
    if (slash == std::string_view::npos || slash == 0 || !((rate[0] >= '0' && rate[0] <= '9') || rate[0] == '?'))
      continue;
    if (rate.substr(slash) != "/s" && rate[slash - 1] != 's') continue;
    // Before " [": the count and its unit ("2230000 examples", "512it").
    size_t u = open;
    while (u > 0 && ((line[u - 1] >= 'a' && line[u - 1] <= 'z') || (line[u - 1] >= 'A' && line[u - 1] <= 'Z'))) --u;
    const std::string_view unit = line.substr(u, open - u);
    size_t d = u;
    if (d > 0 && line[d - 1] == ' ' && !unit.empty()) --d;
    const size_t digits_end = d;
    while (d > 0 && line[d - 1] >= '0' && line[d - 1] <= '9') --d;
    if (d == digits_end || digits_end - d > 13 || (d > 0 && line[d - 1] != ' ')) continue;
    size_t p = d;
    bar.n = digits_at(line, p);
    bar.total = -1;
    bar.elapsed_s = elapsed;
    bar.unit = unit.empty() ? std::string_view("it") : unit;
    std::string_view desc = line.substr(0, d);
    while (!desc.empty() && (desc.back() == ' ' || desc.back() == ':')) desc.remove_suffix(1);
    while (!desc.empty() && desc.front() == '[') {
      const size_t e = desc.find(']');
      if (e == std::string_view::npos) break;
      desc.remove_prefix(e + 1);
      while (!desc.empty() && desc.front() == ' ') desc.remove_prefix(1);
    }
    // A description is what the bar counts: words, not another message's text.
    if (desc.empty() || desc.size() > 120) continue;
    bar.desc = desc;
    return true;
  }
  return false;
}

}  // namespace

bool parse_tqdm_bar(std::string_view line, TqdmBar& bar) {
  bar = TqdmBar{};
  const size_t bar_at = line.find("%|");
  if (bar_at == std::string_view::npos) return parse_tqdm_count(line, bar);
  if (bar_at == 0) return false;
  size_t pct = bar_at;
  while (pct > 0 && line[pct - 1] >= '0' && line[pct - 1] <= '9') --pct;
  if (pct == bar_at || bar_at - pct > 3) return false;
  // The description: before the percentage, without the ": " tqdm puts after it.
  std::string_view desc = line.substr(0, pct);
  while (!desc.empty() && (desc.back() == ' ' || desc.back() == ':')) desc.remove_suffix(1);
  const size_t close = line.find('|', bar_at + 2);
  if (close == std::string_view::npos) return false;
  size_t p = close + 1;
  while (p < line.size() && line[p] == ' ') ++p;
  bar.n = digits_at(line, p);
  if (bar.n < 0 || p >= line.size() || line[p] != '/') return false;
  ++p;
  bar.total = digits_at(line, p);  // "?" when unknown: -1
  // The stats: "[27:15<23:13, 37.65s/it]"
  const size_t open = line.find('[', p);
  if (open != std::string_view::npos) {
    const size_t lt = line.find('<', open);
    const size_t end = line.find(']', open);
    if (lt != std::string_view::npos && (end == std::string_view::npos || lt < end))
      bar.elapsed_s = clock_s(line.substr(open + 1, lt - open - 1));
    const size_t comma = line.find(", ", open);
    if (comma != std::string_view::npos && (end == std::string_view::npos || comma < end)) {
      std::string_view rate = line.substr(comma + 2, (end == std::string_view::npos ? line.size() : end) - comma - 2);
      rate = rate.substr(0, rate.find(','));
      const size_t slash = rate.find('/');
      if (slash != std::string_view::npos) {
        // "37.65s/it" -> it; "9855.27 examples/s" -> examples
        std::string_view a = rate.substr(0, slash), b = rate.substr(slash + 1);
        if (!a.empty() && a.back() == 's' && a.find_first_not_of("0123456789.?s ") == std::string_view::npos) {
          bar.unit = b;
        } else {
          size_t u = a.size();
          while (u > 0 && a[u - 1] != ' ' && !(a[u - 1] >= '0' && a[u - 1] <= '9') && a[u - 1] != '.') --u;
          bar.unit = a.substr(u);
        }
      }
    }
  }
  // Leading tags a logger or launcher put before tqdm's text ("[rank 1]", "INFO:") are not the
  // description; the parser peeled most of them already.
  while (!desc.empty() && desc.front() == '[') {
    const size_t e = desc.find(']');
    if (e == std::string_view::npos) break;
    desc.remove_prefix(e + 1);
    while (!desc.empty() && desc.front() == ' ') desc.remove_prefix(1);
  }
  bar.desc = desc;
  return true;
}

std::string_view bar_phase(std::string_view desc, std::string_view unit) {
  const std::string low = lower(desc);
  // Loading a model's weights (transformers' "Loading checkpoint shards") is start-up, not a save.
  if (has_word(low, {"loading checkpoint shards", "loading weights", "loading model", "loading pipeline"}))
    return "init";
  if (has_word(low, {"saving", "save ", "checkpoint", "writing", "uploading"})) return "checkpoint";
  // A reinforcement-learning trainer's step is made of stages, each its own bar (veRL-family actors,
  // dp_actor.py: tqdm(micro_batches, desc="Compute log probs") for the experience, then
  // desc="Update policy"): the policy's log-probabilities, rewards, advantages and its update are
  // computed to train it, so such a bar counts the training step, whatever verb leads it ("Computing
  // rewards" is not data preparation). Not an evaluation's bar ("Validation rollouts"). A standalone
  // scoring script may print "compute log probs" too: that job is an evaluation, read as training here.
  if (has_word(low, {"log prob", "logprob", "log-prob", "rollout", "reward", "advantage", "update policy",
                     "policy update", "update actor", "update critic"}) &&
      !has_word(low, {"eval", "valid", "test"}))
    return "training";
  if (has_word(low, {"prepar", "tokeniz", "preprocess", "map", "filter", "generating", "download", "extract",
                     "building", "indexing", "caching", "shard", "encoding", "converting", "scanning", "reading",
                     "loading data", "loading dataset", "resolving data files", "computing"}) ||
      unit == "examples" || unit == "ba" || unit == "B" || unit == "MB" || unit == "files")
    return "data";
  if (has_word(low, {"eval", "valid", "test", "predict", "sanity check", "inference"})) return "eval";
  if (has_word(low, {"epoch", "train", "step", "iter", "batch"}) || (low.empty() && (unit == "it" || unit.empty())))
    return "training";
  return "";
}

}  // namespace hanglab
