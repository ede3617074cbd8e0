// JUnit XML for CI: one <testsuite> per scenario run and one <testcase> per expectation
// check, so a CI dashboard shows exactly which expectation broke. A failed check becomes
// <failure> (expected / actual / reason), an unknown one <error>, a skipped scenario
// <skipped message="why">. Used for the per-run junit.xml and for the combined file of a
// whole matrix run (`hanglab run --junit FILE`).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/expect.hpp"

namespace hanglab {

struct JunitSuite {
  std::string name;     // scenario name; testcases get classname "hanglab.<name>"
  double time_s = 0;    // wall time of the run
  Verdict verdict;
  std::string run_dir;  // shown as a property and in failure bodies; may be empty
};

// The whole document, <?xml ...?> declaration included. Counts (tests, failures,
// errors, skipped) are given on every <testsuite> and summed on <testsuites>.
std::string junit_xml(const std::vector<JunitSuite>& suites);

// Writes junit_xml(suites) to `path` atomically (temporary file + rename), creating the
// parent directory. Throws std::system_error naming the path on failure.
void write_junit_file(const std::filesystem::path& path, const std::vector<JunitSuite>& suites);

// Escapes text for XML 1.0: & < > " ' become entities; other control characters and
// invalid UTF-8 become U+FFFD. For an attribute value tab/LF/CR also become character
// references (parsers would fold them to spaces); in element content only CR does.
std::string xml_escape(std::string_view text, bool attribute = true);

}  // namespace hanglab
