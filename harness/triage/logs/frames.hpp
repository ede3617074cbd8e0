// The traceback-frame phase table (data): what a Python traceback frame
// ('File "/x/trainer.py", line 812, in _save_checkpoint') says about the phase the program
// was in when it failed -- init, training, checkpoint, eval, data, shutdown -- read from the
// function's name (its words, split at '_') and, for a few library functions, its file.
// Each entry: the phase marker it gives, the words (or exact names) that select it, the
// words that rule it out, and a real frame it was written for. Python prints a traceback
// outermost call first ("most recent call last"), so the last frame that names a phase is
// the innermost and decides: `train` -> `_maybe_log_save_evaluate` -> `_save_checkpoint`
// is a checkpoint; `train` -> `accelerator.prepare` -> `init_process_group` is init.
// Names that say nothing (main, run, wrapper, forward, __init__, <module>) give nothing.
// faulthandler and py-spy print the innermost call first: there the first frame that names
// a phase decides (reader.cpp keeps that order).
// Internal to hanglab_triage; used by parse.cpp; frames_test.cpp checks every example.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "triage/logs/parse.hpp"

namespace hanglab {

struct FramePhaseRule {
  LogKind kind;                            // the phase marker: kInitBegin, kTrainBegin, kCheckpointBegin, ...
  std::vector<std::string_view> names;     // exact function names that select the rule
  std::vector<std::string_view> prefixes;  // name prefixes (no leading '_': a private helper is not the phase)
  std::vector<std::string_view> words;     // one of these words of the name selects it...
  std::vector<std::string_view> with;      // ...together with one of these (when not empty)
  std::vector<std::string_view> without;   // a word that makes the name ambiguous: no phase
  std::string_view path;                   // when not empty, the frame's file must contain it
  std::string_view example;                // a frame of this shape, as Python prints it
};

const std::vector<FramePhaseRule>& frame_phase_rules();

// The frame shapes, by the order their stacks are printed in:
//   kOutermostFirst  Python's traceback: '  File "<path>", line <n>, in <function>'
//   kInnermostFirst  faulthandler's dump: '  File "<path>", line <n> in <function>', and py-spy's
//                    dump: '    <function> (<path>:<n>)' (both list the most recent call first)
enum class FrameShape : uint8_t { kNone, kOutermostFirst, kInnermostFirst };

// The frame shape of a line (after any rank prefix has been peeled off), with its file and
// function when it is one.
FrameShape frame_shape(std::string_view msg, std::string_view* path = nullptr, std::string_view* function = nullptr);

// A frame line of any shape: the phase marker its function names, or kNone (also for a line
// that is not a frame). Which frame of a stack decides is the reader's business: the last one
// printed of a traceback, the first one of an innermost-first dump.
LogKind frame_phase(std::string_view msg);

// The phase a captured stack's frames name, innermost first (py-spy's and Flight Recorder's
// "name (path:line)"; gdb's native frames, "name\tfrom lib", carry no .py file and name none); a
// method's class is dropped ("Trainer.train" is read as "train"). The first frame that names one
// decides: "init" | "training" | "checkpoint" | "eval" | "data" | "shutdown", "" when none does.
// The one reading of a stack's phase: records/ (stack.txt) and fr/ (a dump's frames) both use it.
std::string stack_phase(const std::vector<std::string>& frames);

// Which frame markers of a file count, line by line: every one of a Python traceback (it
// lists the innermost call last, and the last marker wins downstream), only the first one of
// a dump that lists the innermost call first (faulthandler, py-spy): its outer frames, printed
// after it, say nothing more. A line that is no frame ends the dump. One per file scanner.
class FrameMarkers {
 public:
  // False for the phase marker of an outer frame of an innermost-first dump already decided.
  bool keep(std::string_view msg, LogKind kind);

 private:
  bool taken_ = false;
};

}  // namespace hanglab
