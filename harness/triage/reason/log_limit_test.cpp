// Unit test of the plain-log rule that a scheduler's time limit names no rank
// (reason/log_death.cpp, set_root): srun -l shows slurmstepd's "CANCELLED ... DUE TO TIME
// LIMIT" as task 0's line, but the limit ends every rank alike.
#include <catch2/catch.hpp>

#include "triage/log_test_support.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

TEST_CASE("a Slurm time limit carried on task 0's stream names no rank", "[triage_logs]") {
  TempDir t("limit_srun");
  write_file(t.dir / "slurm-1234.out",
             "0: step 10/100\n1: step 10/100\n0: step 11/100\n"
             "0: slurmstepd-vm: error: *** STEP 1234.0 ON vm CANCELLED AT 2026-12-03T13:49:53 DUE TO TIME LIMIT ***\n"
             "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "resource_limit");
  CHECK(r.cause == "time_limit");
  CHECK(r.missing_ranks.empty());
  CHECK(r.scope == "all");
}
