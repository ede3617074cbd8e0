// What a run record's message says: an error event's msg, a stdout/stderr line, a detection's
// detail. Read once, when the run directory is loaded (records/run_dir.cpp), into TextFacts
// (model/observations.hpp); the run-record reasoner (reason/run_*.cpp) reads those fields and never
// the text. What a message means (its kind, role, the cause it proves; whether it names a missing
// interface, an unroutable peer, host or CUDA memory, a full /dev/shm) is the plain-log classifier's
// (logs/: parse_log_line with its catalogue, pattern table and classify_text, logs/meaning.cpp
// line_meaning), so both paths read it by one rule set; this file only extracts the fields that
// classifier has no place for (a peer address, a rank list, the store host). Internal to hanglab_triage.
#pragma once

#include <string_view>

#include "triage/model/observations.hpp"

namespace hanglab {

TextFacts read_message_facts(std::string_view text);

}  // namespace hanglab
