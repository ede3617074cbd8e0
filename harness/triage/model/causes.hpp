// Triage model: the one list of answers triage can give, as (category, cause) pairs with what
// each means. Every reasoner (reason/), the log-line tables (logs/patterns.cpp) and the message
// catalogue's meanings name their causes from this list; the tests hold them to it:
//   - triage_causes_test runs triage over every canned input (run directories, plain-log
//     fixtures, the real-incident corpus) and fails on an answer the list lacks;
//   - the pattern-table and catalogue tests fail on a (category, cause) the list lacks;
//   - triage_fuzz traps on one;
//   - repro's cause-table test enumerates this list: each pair has a recipe or a stated
//     reason why none (repro/cause_table.hpp).
// So adding a cause is one entry here plus its recipe (or reason) in repro/cause_table.cpp.
#pragma once

#include <string_view>
#include <vector>

namespace hanglab {

struct TriageCause {
  std::string_view category;  // rendezvous | collective_mismatch | rank_exit | straggler | data_loading |
                              // network | resource_limit | none | unknown
  std::string_view cause;
  std::string_view meaning;  // one line: what the answer says happened
};

const std::vector<TriageCause>& triage_causes();

// The pair is in the list.
bool listed_cause(std::string_view category, std::string_view cause);

// The categories of the answer's vocabulary (DESIGN.md: triage.json).
bool listed_category(std::string_view category);

// The phases of the answer's vocabulary: init | training | checkpoint | eval | data | shutdown | unknown.
bool listed_phase(std::string_view phase);

// "stuck_in_<phase>" for a rank alive outside the collective its peers wait in, by the phase its
// trace names (init, forward, backward, optimizer, checkpoint, eval, shutdown); a phase outside
// that vocabulary (a program's own name) is "stuck_in_unknown".
std::string_view stuck_in_cause(std::string_view trace_phase);

}  // namespace hanglab
