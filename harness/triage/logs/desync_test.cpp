// Unit tests of ProcessGroupNCCL's desync report (logs/desync.cpp): lines in the wording of
// torch/csrc/distributed/c10d/TraceUtils.h (catalogue emitter torch-desync-2.15.0; the same text at pytorch
// 3f8ce0f9 and 009798fd), laid out as retrieveDesyncReport builds them ("\n\t - ..." per line), logged by the
// watchdog of torch 2.3+ (DesyncDebugger::run: "Rank R" + the report, then the same watchdog's "<logPrefix>
// failure detected by watchdog ...") or of 1.x (appended to the watchdog's timeout line); and the answers.
#include "triage/logs/desync.hpp"

#include <catch2/catch.hpp>

#include "triage/log_test_support.hpp"
#include "triage/logs/catalogue.hpp"
#include "triage/reason/log.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

namespace {

TriageResult triage_text(const std::string& name, const std::string& text) {
  TempDir d(name);
  write_file(d.dir / "train.log", text);
  return triage_logs({d.dir / "train.log"});
}

LogLine parse_in(const std::string& s, bool in_report) {
  static std::deque<std::string> keep;
  keep.push_back(s);
  LogLineContext ctx;
  ctx.desync_report = in_report;
  LogLine l;
  parse_log_line(keep.back(), ctx, l);
  return l;
}

// Rank 0's watchdog (torch 2.3+ wording; SeqNum is the WorkNCCL's, the report counts its own way).
const std::string kTimeout =
    "[rank0]:[E515 18:36:47.341808597 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=57, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran for 600086 "
    "milliseconds before timing out.\n";
const std::string kHead = "[rank0]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 0\n";
std::string failure_line(const std::string& pg) {
  return "[rank0]:[E515 18:36:47.343391940 ProcessGroupNCCL.cpp:2268] [PG ID " + pg +
         " Rank 0]  failure detected by watchdog at work sequence id: 57 PG status: last enqueued work: 90, last "
         "completed work: 40\n";
}
const std::string kDefaultPg = "0 PG GUID 0(default_pg)";

// Rank 2 finished #40 and never started #41; ranks 0, 1, 3 are in #90.
const std::string kLagging =
    "\t - [0] Timeout at collective: ALLREDUCE, #90\n"
    "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
    "\t     [2] finished collective #40, but didn't join collective #41 (count from 1)\n"
    "\t - Snapshot of ranks' latest states:\n"
    "\t   #40 finished ranks:\n"
    "\t     [2] finished ALLREDUCE\n"
    "\t   #90 started ranks:\n"
    "\t     [0, 1, 3] started ALLREDUCE\n";

}  // namespace

TEST_CASE("the desync report's lines are read from the catalogue's TraceUtils.h formats", "[triage_logs]") {
  const auto head = parse_in("         - [3] Timeout at collective: _ALLGATHER_BASE, #315", false);
  REQUIRE(head.catalogue);
  CHECK(head.catalogue->emitter == "torch");
  CHECK(head.catalogue->where.rfind("torch/csrc/distributed/c10d/TraceUtils.h:", 0) == 0);
  CHECK(head.word == kDesyncWord);
  CHECK(head.kind == LogKind::kDesyncLagging);
  CHECK(head.other_rank == 3);  // the reporting rank's rank in its group
  CHECK(head.op == "_ALLGATHER_BASE");
  CHECK(head.seq == 315);
  CHECK(head.ranks.empty());
  const auto never = parse_in(
      "\t - To our best knowledge, ranks [5, 9] are the lagging ranks that caused this "
      "timeout. They never joined any collectives",
      true);
  CHECK(never.kind == LogKind::kDesyncMissing);
  CHECK(never.ranks == std::vector<int>{5, 9});
  const auto started = parse_in("\t   - [47] joined but didn't finish collective #41207 (count from 1)", true);
  CHECK(started.kind == LogKind::kDesyncLagging);
  CHECK(started.ranks == std::vector<int>{47});
  CHECK(started.seq == 41207);
  const auto ended =
      parse_in("\t     [0, 1, 2] finished collective #182, but didn't join collective #183 (count from 1)", true);
  CHECK(ended.kind == LogKind::kDesyncLagging);
  CHECK(ended.ranks == std::vector<int>{0, 1, 2});
  CHECK(ended.seq == 182);
  const auto seq = parse_in("\t   #317 started ranks:", true);
  CHECK(seq.word == kDesyncWord);
  CHECK(seq.kind == LogKind::kNone);
  CHECK(seq.seq == 317);
  // A snapshot entry is the report's only inside it: its literal text is too short to be read alone.
  const auto entry = parse_in("\t     [3, 4, 5, 6] started _ALLGATHER_BASE", true);
  CHECK(entry.word == kDesyncWord);
  CHECK(entry.report_entry);
  CHECK(entry.ranks == std::vector<int>{3, 4, 5, 6});
  CHECK(entry.op == "_ALLGATHER_BASE");
  CHECK(parse_in("\t     [3, 4, 5, 6] started _ALLGATHER_BASE", false).word != kDesyncWord);
  CHECK(parse_in("[1, 2] started training", true).ranks.empty());
}

TEST_CASE("a desync report of the default group names the rank its peers went on without", "[triage_logs]") {
  SECTION("torch 2.3+: the report, then the watchdog's line naming the default group") {
    const auto r = triage_text("desync_lag", kTimeout + kHead + kLagging + failure_line(kDefaultPg));
    CHECK(r.category == "unknown");
    CHECK(r.cause == "unknown");
    CHECK(r.missing_ranks == std::vector<int>{2});
    CHECK(r.scope == "subset");
    CHECK(r.world_size == 4);  // the snapshot lists ranks 0-3 of the default group
    CHECK(r.phase == "unknown");
  }
  SECTION("a subgroup's report numbers its ranks inside the group: none is claimed") {
    const auto r = triage_text("desync_subgroup", kTimeout + kHead + kLagging + failure_line("1 PG GUID 3(TP)"));
    CHECK(r.missing_ranks.empty());
    CHECK(r.world_size != 4);
  }
  SECTION("no line names the group (torch 1.x appends the report to the watchdog's line): none is claimed") {
    const std::string v1 =
        "[E ProcessGroupNCCL.cpp:566] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=57, "
        "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800427 milliseconds before timing out.\n";
    const auto r = triage_text("desync_v1", v1 + kLagging + "some later line\n");
    CHECK(r.missing_ranks.empty());
  }
  SECTION("a report cut inside its snapshot (the file ends there) proves no world and no rank") {
    // Rank 3's entry ("#91 started ranks:", "[3] started ALLREDUCE") is past the end of the excerpt.
    const std::string cut =
        "\t - [0] Timeout at collective: ALLREDUCE, #90\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "\t     [1] finished collective #40, but didn't join collective #41 (count from 1)\n"
        "\t - Snapshot of ranks' latest states:\n"
        "\t   #40 finished ranks:\n"
        "\t     [1] finished ALLREDUCE\n"
        "\t   #90 started ranks:\n"
        "\t     [0, 2] started ALLREDUCE\n";
    const auto r = triage_text("desync_cut", kTimeout + kHead + cut);
    CHECK(r.missing_ranks.empty());
    CHECK(r.world_size != 3);
    // ... or ended by another process's line (interleaved output, or a paste that skipped the rest).
    const auto mid = triage_text("desync_interleaved",
                                 kTimeout + kHead + cut + "another process's output\n" + failure_line(kDefaultPg));
    CHECK(mid.missing_ranks.empty());
    CHECK(mid.world_size != 3);
  }
}

TEST_CASE("a desync report's forms: never joined, one collective for all, p2p counts, mismatched collectives",
          "[triage_logs]") {
  SECTION("ranks that never joined any collective of the default group are missing") {
    const std::string never =
        "\t - [0] Timeout at collective: BROADCAST, #1\n"
        "\t - To our best knowledge, ranks [5] are the lagging ranks that caused this timeout. They never joined "
        "any collectives\n";
    const auto r = triage_text("desync_never", kTimeout + kHead + never + failure_line(kDefaultPg));
    CHECK(r.category == "unknown");
    CHECK(r.missing_ranks == std::vector<int>{5});
  }
  SECTION("every rank at one count is inside one collective: none is missing") {
    const std::string all =
        "\t - [0] Timeout at collective: ALLREDUCE, #90\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "\t   - [0, 1, 2, 3] joined but didn't finish collective #90 (count from 1)\n"
        "\t - Snapshot of ranks' latest states:\n"
        "\t   #90 started ranks:\n"
        "\t     [0, 1, 2, 3] started ALLREDUCE\n";
    const auto r = triage_text("desync_all", kTimeout + kHead + all + failure_line(kDefaultPg));
    CHECK(r.missing_ranks.empty());
    CHECK(r.world_size == 4);
  }
  SECTION("a point-to-point count is not comparable with a collective's (seqP2P_ apart from torch 2.4)") {
    const std::string p2p =
        "\t - [0] Timeout at collective: ALLREDUCE, #90\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "\t   - [2] joined but didn't finish collective #3 (count from 1)\n"
        "\t - Snapshot of ranks' latest states:\n"
        "\t   #3 started ranks:\n"
        "\t     [2] started SEND\n"
        "\t   #90 started ranks:\n"
        "\t     [0, 1, 3] started ALLREDUCE\n";
    const auto r = triage_text("desync_p2p", kTimeout + kHead + p2p + failure_line(kDefaultPg));
    CHECK(r.missing_ranks.empty());
  }
  SECTION("two collectives at one count: the smaller side ran the other one") {
    const std::string mm =
        "\t - [0] Timeout at collective: ALLREDUCE, #12\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "\t   - [0, 1, 2, 3] joined but didn't finish collective #12 (count from 1)\n"
        "\t - Snapshot of ranks' latest states:\n"
        "\t   #12 started ranks:\n"
        "\t     [3] started BROADCAST\n"
        "\t     [0, 1, 2] started ALLREDUCE\n";
    const auto r = triage_text("desync_mismatch", kTimeout + kHead + mm + failure_line(kDefaultPg));
    CHECK(r.category == "collective_mismatch");
    CHECK(r.cause == "mismatched_collective");
    CHECK(r.missing_ranks == std::vector<int>{3});
    // In a subgroup the mismatch stands, its side is not named.
    const auto sub = triage_text("desync_mismatch_sub", kTimeout + kHead + mm + failure_line("2 PG GUID 5"));
    CHECK(sub.category == "collective_mismatch");
    CHECK(sub.missing_ranks.empty());
  }
}
