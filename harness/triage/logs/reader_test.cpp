// Unit tests of the plain-log reader: which inputs it reads, which paths it refuses.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "triage/log_test_support.hpp"
#include "triage/logs/parse.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/logs/reader.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

namespace fs = std::filesystem;
using namespace hanglab;
using namespace hanglab::logtest;
using nlohmann::json;

// ---- reading and reporting -------------------------------------------------------------------

TEST_CASE("inputs: single files, several files, directories; unreadable paths throw", "[triage_logs]") {
  const fs::path d = logs_dir() / "gloo_peer_closed";
  const auto one = triage_logs({d / "rank_0.log", d / "rank_1.log", d / "rank_2.log", d / "rank_3.log"});
  CHECK(one.missing_ranks == std::vector<int>{2});
  CHECK(mentions(one.first_failure->evidence, "rank_2.log:"));
  CHECK_THROWS_AS(triage_logs({d / "nope.log"}), std::runtime_error);
  TempDir empty("empty");
  CHECK_THROWS_AS(triage_logs({empty.dir}), std::runtime_error);
  // A run directory given to triage_paths is analysed from its trace; --logs-only reads its logs.
  const fs::path run = fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/triage/killed";
  CHECK(triage_paths({run}).source == "run_dir");
  TriageOptions lo;
  lo.logs_only = true;
  const auto r = triage_paths({run}, lo);
  CHECK(r.source == "logs");
  CHECK(r.category == "rank_exit");
  CHECK(r.missing_ranks == std::vector<int>{2});
}
