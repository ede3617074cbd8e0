// Unit tests of plain-log triage on the corpus of incident fixtures in
// harness/testdata/logs/<case>/, each checked against the expected.json beside it (written
// by make_log_fixtures.py there), and on the fixtures whose reports say more than a verdict.
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

// ---- the corpus -----------------------------------------------------------------------------

TEST_CASE("log corpus: every case reaches its expected answer", "[triage_logs]") {
  const auto names = cases();
  REQUIRE(names.size() >= 18);
  for (const auto& name : names) {
    INFO("case " << name);
    const fs::path dir = logs_dir() / name;
    json exp;
    std::ifstream(dir / "expected.json") >> exp;
    const TriageOptions opts = options_from(exp.value("args", json::array()));
    const TriageResult r = triage_logs({dir}, opts);
    const json j = to_json(r);
    INFO(render_text(r));
    CHECK(r.source == "logs");
    CHECK(j["category"] == exp["category"]);
    CHECK(j["cause"] == exp["cause"]);
    CHECK(j["missing_ranks"] == exp["missing_ranks"]);
    CHECK(j["phase"] == exp["phase"]);
    for (const char* k : {"scope", "world_size", "last_good_step", "divergence_seq"}) {
      if (exp.contains(k)) CHECK(j[k] == exp[k]);
    }
    if (exp.contains("first_failure_rank")) {
      REQUIRE(r.first_failure);
      CHECK(r.first_failure->rank == exp["first_failure_rank"].get<int>());
    }
    if (exp.contains("stuck_op")) {
      REQUIRE(r.stuck_collective);
      CHECK(r.stuck_collective->op == exp["stuck_op"].get<std::string>());
      CHECK(r.stuck_collective->seq == exp["stuck_seq"].get<long long>());
    }
    if (exp.contains("note_contains")) {
      bool found = false;
      for (const auto& n : r.notes) found |= mentions(n, exp["note_contains"].get<std::string>());
      CHECK(found);
    }
    CHECK(r.answers.size() == 4);
    CHECK_FALSE(r.next_steps.empty());
    CHECK(r.per_rank.size() == static_cast<size_t>(r.world_size));
    CHECK_FALSE(r.evidence.empty());
    check_refs(dir, r);
    // A verdict other than unknown is backed by a first failure with a file:line.
    if (r.category != "unknown" && r.category != "none") {
      REQUIRE(r.first_failure);
      CHECK_FALSE(r.first_failure->evidence.empty());
    }
    if (exp.contains("without_args")) {
      const TriageResult bare = triage_logs({dir}, {});
      const json& w = exp["without_args"];
      CHECK(to_json(bare)["missing_ranks"] == w["missing_ranks"]);
      CHECK(bare.world_size == w["world_size"].get<int>());
      bool found = false;
      for (const auto& n : bare.notes) found |= mentions(n, w["note_contains"].get<std::string>());
      CHECK(found);
    }
  }
}

TEST_CASE("log corpus: deterministic, and independent of the number of threads", "[triage_logs]") {
  for (const auto& name : cases()) {
    INFO(name);
    const auto inputs = list_log_inputs({logs_dir() / name}, false);
    const auto a = analyze_log_corpus(load_log_corpus(inputs, 1), {});
    const auto b = analyze_log_corpus(load_log_corpus(inputs, 4), {});
    CHECK(to_json(a).dump() == to_json(b).dump());
    CHECK(render_text(a) == render_text(b));
  }
}

TEST_CASE("misleading tool output: torchrun's whole-second Root Cause is overruled and said so", "[triage_logs]") {
  const auto r = triage_logs({logs_dir() / "torchrun_misleading_root"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 2);
  CHECK(mentions(r.first_failure->evidence, "dmesg-train-node.txt:"));
  bool cited = false;
  for (const auto& e : r.evidence) cited |= mentions(e.text, "torchrun's summary names rank 1");
  CHECK(cited);
  // Rank 1's own DistBackendError is listed as an echo of rank 2's death.
  bool echo1 = false;
  for (const auto& e : r.echoes) echo1 |= e.rank == 1 && mentions(e.what, "DistBackendError");
  CHECK(echo1);
}

TEST_CASE("OOM cascade: same-host socket errors, watchdogs and srun aborts are echoes", "[triage_logs]") {
  const auto r = triage_logs({logs_dir() / "oom_cascade"});
  CHECK(r.cause == "cuda_oom");
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 6);
  std::set<int> echo_ranks;
  for (const auto& e : r.echoes) echo_ranks.insert(e.rank);
  CHECK(echo_ranks == std::set<int>{0, 1, 2, 3, 4, 5, 7});
  CHECK(r.per_rank[6].liveness == "dead");
  CHECK(r.per_rank[4].liveness == "hung");
  const auto text = render_text(r);
  CHECK(mentions(text, "Echoes"));
  CHECK(mentions(text, "node-b"));
}

TEST_CASE("missing rank by absence: the report says what is provable and what is not", "[triage_logs]") {
  const auto r = triage_logs({logs_dir() / "nccl_absent_rank"});
  CHECK(r.missing_ranks == std::vector<int>{5});
  CHECK(r.per_rank[5].liveness == "unknown");
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{0, 1, 2, 3, 4, 6, 7});
  CHECK(r.stuck_collective->absent_ranks == std::vector<int>{5});
  bool provable = false, truncated = false;
  for (const auto& n : r.notes) {
    provable |= mentions(n, "provable:") && mentions(n, "Not provable");
    truncated |= mentions(n, "train-worker-2.log") && mentions(n, "mid-line");
  }
  CHECK(provable);
  CHECK(truncated);
  CHECK(r.confidence == "low");
}

TEST_CASE("PG-local ranks are not global ranks", "[triage_logs]") {
  const auto r = triage_logs({logs_dir() / "subgroup_pg_ranks"});
  CHECK(r.missing_ranks == std::vector<int>{6});
  // Global rank 2 reported its own timeout in the default PG: not confused with PG 1's rank 2.
  CHECK(r.per_rank[2].liveness == "hung");
  CHECK(r.per_rank[2].last_coll_op == "ALLREDUCE");
}

TEST_CASE("print the log reports", "[.dump_logs]") {
  for (const auto& name : cases()) {
    json exp;
    std::ifstream(logs_dir() / name / "expected.json") >> exp;
    std::cout << "==================== " << name << "\n"
              << render_text(triage_logs({logs_dir() / name}, options_from(exp.value("args", json::array())))) << "\n";
  }
}
