// The progress-line table (data): the shapes in which training programs print how far they
// got — "Epoch 3", "iter=120", "step 300/1000", "[1/5][20/469]", tqdm bars, Lightning / HF
// Trainer / DeepSpeed / Megatron iteration lines, JSON lines with a step field — each entry
// a regular expression, the fields its groups hold and a real line of that shape. A
// newcomer adds a shape by adding one entry (progress_test.cpp checks every example parses
// to its entry and fields). Used by the run-directory reader for bring-your-own ranks (no
// hanglab trace: their printed progress is the only sign they trained) and by anything that
// needs "how far did this program get". Internal to hanglab_triage; reads no file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hanglab {

struct ProgressPattern {
  std::string_view name;   // short id: tutorial_epoch, tqdm, megatron, ...
  std::string_view needle; // lower-case literal that must occur (cheap pre-filter)
  std::string_view regex;  // ECMAScript, searched in the line
  // Capture group of each field (0 = the shape has none). epoch may be fractional (HF).
  int epoch = 0;
  int epoch_total = 0;
  int step = 0;
  int step_total = 0;
  std::string_view example;  // a line of this shape, as the program prints it
  bool json = false;         // the line is a JSON object: fields are read by key, not by group
};

const std::vector<ProgressPattern>& progress_patterns();

struct ProgressMatch {
  std::string_view pattern;  // the entry's name
  std::optional<double> epoch;
  std::optional<long long> epoch_total;
  std::optional<long long> step;  // step / iteration / batch counter
  std::optional<long long> step_total;
  // "epoch 12, step 22/469" style rendering of the fields
  std::string describe() const;
  // Training steps completed, counted over the whole run: the step of a run-wide counter
  // (tqdm of HF Trainer, Megatron, DeepSpeed, step=N); epoch x steps-per-epoch + step for
  // the per-epoch batch counters (Lightning's bar, [epoch][batch/batches], the imagenet
  // meter; epochs counted from 0). None where the line counts no steps (an epoch alone,
  // samples as in mnist's "[640/60000]", the tutorial's batches-per-epoch "Steps: 22").
  std::optional<long long> steps_done() const;
};

// A tqdm bar as tqdm draws it (tqdm/std.py format_meter: "{desc}: {percentage:3.0f}%|{bar}|
// {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"), read without a regular
// expression: the plain-log reader sees one per redraw, on any line.
struct TqdmBar {
  std::string_view desc;   // what the bar counts ("Preparing test set...", "Map (num_proc=4)", "Epoch 3"), "" = none
  long long n = -1;        // done
  long long total = -1;
  double elapsed_s = -1;   // "[27:15<..." (h:mm:ss or mm:ss)
  std::string_view unit;   // of the rate: "it", "s/it" as "it", "examples", "ba", "B" ...
};
bool parse_tqdm_bar(std::string_view line, TqdmBar& bar);

// The phase a bar's description (and its rate's unit) names, from the words the libraries that
// draw them use: preparing, tokenizing, mapping, filtering, generating splits, downloading (HF
// datasets' "Map", "Filter", "Generating train split", any "Preparing ...") -> data; saving,
// checkpoint, uploading -> checkpoint; loading checkpoint shards / weights / the model -> init;
// evaluating, validation, testing, predicting, sanity checking (Lightning's bars) -> eval; epochs,
// training, steps, iterations, or no description with a rate in it/s (HF Trainer's bar) ->
// training; "" when the description names none of these.
std::string_view bar_phase(std::string_view desc, std::string_view unit);

// The first entry of the table the line matches. A line holding carriage returns (a tqdm
// bar redrawn in place, flushed with its final newline) is read at its last segment.
std::optional<ProgressMatch> match_progress(std::string_view line);

}  // namespace hanglab
