#include <catch2/catch.hpp>

#include "preflight/result.hpp"

using namespace hanglab::preflight;

TEST_CASE("exit code: fail over skip over pass") {
  Report r;
  r.checks.push_back(CheckResult{"a", 0});
  CHECK(r.exit_code() == 0);
  r.checks.push_back(CheckResult{"b", 1, "", Status::kSkip});
  CHECK(r.exit_code() == 4);
  r.checks.push_back(CheckResult{"c", 1, "", Status::kFail});
  CHECK(r.exit_code() == 1);
}
