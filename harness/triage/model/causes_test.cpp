// The cause list (model/causes.hpp) holds every answer triage gives: triage runs over every canned
// input the repository has (run directories, plain-log fixtures, the real-incident corpus, the
// Flight Recorder fixtures) and each answer's (category, cause) and phase
// must be listed; the line tables' proofs must name listed pairs too.
#include "triage/model/causes.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

#include "triage/logs/patterns.hpp"
#include "triage/triage.hpp"

namespace fs = std::filesystem;
using namespace hanglab;

namespace {

fs::path testdata() { return fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata"; }

// Each case folder under `root` (sorted, so that a failure names the same case every time).
std::vector<fs::path> case_dirs(const fs::path& root) {
  std::vector<fs::path> v;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory()) v.push_back(it->path());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("cause list: no pair twice, every category and cause named", "[triage]") {
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const auto& c : triage_causes()) {
    INFO(c.category << "/" << c.cause);
    CHECK(seen.insert({c.category, c.cause}).second);
    CHECK(listed_category(c.category));
    CHECK(!c.cause.empty());
    CHECK(!c.meaning.empty());
  }
  CHECK(listed_cause("straggler", "frozen"));
  CHECK_FALSE(listed_cause("straggler", "quantum_foam"));
  CHECK_FALSE(listed_cause("network", "frozen"));
  CHECK(stuck_in_cause("checkpoint") == "stuck_in_checkpoint");
  CHECK(stuck_in_cause("my_own_phase") == "stuck_in_unknown");
  CHECK(listed_cause("straggler", stuck_in_cause("backward")));
}

TEST_CASE("cause list: the pattern table proves listed pairs only", "[triage]") {
  for (const auto& p : line_patterns()) {
    if (p.cause.empty()) continue;
    INFO(p.example);
    if (!p.category.empty()) {
      CHECK(listed_cause(p.category, p.cause));
    } else {
      // A cause without a category names a listed cause of some category (the echo's answer).
      bool any = false;
      for (const auto& c : triage_causes()) any |= c.cause == p.cause;
      // launcher_kill_all is a fact about the launcher (it names every pid), never an answer.
      CHECK((any || p.cause == "launcher_kill_all"));
    }
  }
}

TEST_CASE("cause list: every canned input's answer is listed", "[triage]") {
  size_t n = 0;
  const auto check = [&](const fs::path& input, const TriageResult& r) {
    INFO(input.string() << ": " << r.category << "/" << r.cause << ", phase " << r.phase);
    CHECK(listed_cause(r.category, r.cause));
    CHECK(listed_phase(r.phase));
    ++n;
  };
  for (const auto& dir : case_dirs(testdata() / "triage")) {
    if (!is_run_dir(dir)) continue;
    check(dir, triage_run_dir(dir));
    TriageOptions o;
    o.logs_only = true;
    try {
      check(dir, triage_paths({dir}, o));
    } catch (const std::exception&) {
      // A run directory without a stdout/stderr line has no logs-only answer.
    }
  }
  for (const char* set : {"logs", "reallogs", "fr"}) {
    for (const auto& dir : case_dirs(testdata() / set)) {
      try {
        check(dir, triage_paths({dir}));
      } catch (const std::exception& e) {
        // Inputs that are not logs are refused with a clear error, never answered.
        INFO(dir.string() << ": " << e.what());
      }
    }
  }
  CHECK(n >= 100);
}
