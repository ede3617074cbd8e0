// What a run record's message says: an error event's msg, a stdout/stderr line, a detection's
// detail. Read once, when the run directory is loaded (records/run_dir.cpp), into TextFacts
// (model/observations.hpp); the run-record reasoner (reason/run_*.cpp) reads those fields and never
// the text. A message one of the stack's emitters prints (PyTorch, Gloo, NCCL, the C library, the
// kernel) gets its meaning from the plain-log classifier (logs/: parse_log_line with its catalogue,
// pattern table and classify_text), so both paths read it by one rule set; this file adds only what
// that classifier has no field for (an address, a rank list) and the texts it does not read (each
// with the program that prints it). Internal to hanglab_triage.
#pragma once

#include <string_view>

#include "triage/model/observations.hpp"

namespace hanglab {

TextFacts read_message_facts(std::string_view text);

}  // namespace hanglab
