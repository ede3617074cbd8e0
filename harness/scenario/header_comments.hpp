// The `# Reproduces:` / `# Expected:` labels of a scenario file's opening comment block,
// read by load_scenario() into Scenario::reproduces / expected_note.
#pragma once

#include <string>
#include <string_view>

namespace hanglab {

// A label is one word followed by a colon (optionally with a parenthesised note:
// `# Expected (found by running it): ...`); its text continues on the following comment
// lines until an empty comment line, another label, or the end of the block.
void parse_header_comments(std::string_view text, std::string& reproduces, std::string& expected);

}  // namespace hanglab
