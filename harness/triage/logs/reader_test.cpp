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
#include "triage/logs/file_scan.hpp"
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

TEST_CASE("inputs: single files, several files, directories -- unreadable paths throw", "[triage_logs]") {
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

TEST_CASE("a garbled rank or world size never sizes the answer -- silent ranks are ranges", "[triage_logs]") {
  TempDir d("bounds");
  // World sizes and ranks no job has (a cut or corrupted number) are no rank and no world.
  write_file(d.dir / "train.log",
             "rank 0/4 starting: world_size=999999999999 backend=nccl\n"
             "[rank0]: step 3 loss 1.0\n"
             "[rank1]: step 3 loss 1.0\n"
             "[Rank 4294967297] Watchdog caught collective operation timeout\n"
             "[rank0]: RuntimeError: [Rank 0] Watchdog caught collective operation timeout: "
             "WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n");
  const auto r = triage_logs({d.dir / "train.log"});
  CHECK(r.world_size < kMaxWorld);
  CHECK(static_cast<int>(r.per_rank.size()) == r.world_size);
  CHECK(parse("[Rank 131072] Watchdog caught collective operation timeout").rank == -1);
  CHECK(parse("[Rank 131071] Watchdog caught collective operation timeout").rank == 131071);
  CHECK(parse("world_size=131073 backend=nccl").world == -1);
  CHECK(rank_from_path("ranks/99999999/stdout.log", false) == -1);

  // A plausible but large world, stated once: rows for the ranks the logs speak of, ranges for the rest.
  write_file(d.dir / "big.log",
             "rank 0/100000 starting: world_size=100000 backend=nccl\n"
             "[rank0]: step 3 loss 1.0\n"
             "[rank7]: step 3 loss 1.0\n");
  const auto b = triage_logs({d.dir / "big.log"});
  REQUIRE(b.world_size == 100000);
  const json j = to_json(b);
  CHECK(j.dump().size() < 20000);
  std::set<int> rows;
  for (const auto& p : j["per_rank"]) rows.insert(p["rank"].get<int>());
  CHECK(rows.count(0) == 1);
  CHECK(rows.count(7) == 1);
  CHECK(rows.size() + 0 < 10);
  // Every rank is either a row or inside one range of unseen_ranks, never both.
  long long covered = static_cast<long long>(rows.size());
  for (const auto& range : j["unseen_ranks"]) {
    const int lo = range[0], hi = range[1];
    REQUIRE(lo <= hi);
    for (int x : rows) CHECK((x < lo || x > hi));
    covered += hi - lo + 1;
  }
  CHECK(covered == b.world_size);
  CHECK(j["liveness"].size() == rows.size());
}

TEST_CASE("the line after c10d's 'Last error:' is NCCL's last WARN, read by NCCL's catalogue entry", "[triage_logs]") {
  // ProcessGroupNCCL's exception ends "\nLast error:\n" + ncclGetLastError(): the WARN's text
  // without NCCL's "host:pid:tid [dev] NCCL WARN" prefix.
  const std::string head =
      "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
      "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3\n"
      "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n";
  const std::string body = "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n";
  TempDir d("last_error");
  write_file(d.dir / "train.log", head + "Last error:\n" + body);
  const auto r = triage_logs({d.dir / "train.log"});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "duplicate_gpu");
  // A paste that kept the body without "Last error:" (or before it): a long NCCL warning is read
  // on its own line too.
  write_file(d.dir / "train.log", head + body);
  CHECK(triage_logs({d.dir / "train.log"}).cause == "duplicate_gpu");
  // The same words inside another sentence are no NCCL line.
  write_file(d.dir / "train.log", head + "the docs say that Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n");
  CHECK(triage_logs({d.dir / "train.log"}).cause != "duplicate_gpu");
}

TEST_CASE("a progress bar that never ended its line: the text after its closing bracket is a line of its own",
          "[triage_logs]") {
  // tqdm ends a bar's line only when the bar closes; the next writer's line runs into it. A terminal-wide
  // bar puts that line's "[rank1]" past where a message's rank tag is looked for (gh-llamafactory-74).
  const std::string to = "[rank{0}]:[E1123 16:02:10.083090635 ProcessGroupNCCL.cpp:607] [Rank {0}] Watchdog caught "
                         "collective operation timeout: WorkNCCL(SeqNum={1}, OpType=ALLREDUCE, NumelIn={2}, "
                         "NumelOut={2}, Timeout(ms)=600000) ran for 600033 milliseconds before timing out.\n";
  TempDir d("bar_runs_on");
  write_file(d.dir / "train.log",
             "  2%|\xe2\x96\x88\xe2\x96\x88" + std::string(100, ' ') + "| 13/620 [01:17<58:26,  5.78s/it]" +
                 fmt::format(fmt::runtime(to), 1, 1517, 1) +
                 fmt::format(fmt::runtime(to), 0, 1516, 25427968));
  const auto r = triage_logs({d.dir / "train.log"});
  INFO(render_text(r));
  CHECK(r.category == "collective_mismatch");  // rank 1 in #1517 (done with #1516), rank 0 still in #1516
  CHECK(r.missing_ranks.empty());
  CHECK(r.phase == "training");
  // The bar alone, or a bar followed by spaces, stays one line.
  write_file(d.dir / "train.log", "  2%|##       | 13/620 [01:17<58:26,  5.78s/it]   \n" +
                                      fmt::format(fmt::runtime(to), 0, 1516, 25427968));
  CHECK(triage_logs({d.dir / "train.log"}).category != "collective_mismatch");
}

TEST_CASE("a message a terminal wrapped onto two lines is read as the one line it was", "[triage_logs]") {
  // ProcessGroupNCCL's "[Rank N] Watchdog caught collective operation timeout: WorkNCCL(...) ran for N
  // milliseconds before timing out." cut by a terminal's width: the second part has no writer of its own.
  TempDir d("wrapped");
  write_file(d.dir / "train.log",
             "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught \n"
             "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
             "Timeout(ms)=600000) ran for 600888 milliseconds before timing out.\n"
             "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, "
             "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) \n"
             "ran for 600892 milliseconds before timing out.\n");
  const auto r = triage_logs({d.dir / "train.log"});
  INFO(render_text(r));
  // Both ranks reported the collective; neither is absent from it (rank 2 was, read line by line).
  CHECK(r.missing_ranks.empty());
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->seq == 3);
  CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{2, 3});
  const auto scan = scan_log_file({d.dir / "train.log", "train.log"}, 0, -1, LogLineContext{});
  CHECK(scan.info.lines == 4);  // the file's lines are counted as they are
  // A second line that says something by itself (the inner message of c10d's "NCCL watchdog thread
  // terminated with exception: <what>") stays its own line: joined, the outer format would hide it.
  write_file(d.dir / "train.log",
             "[E ProcessGroupNCCL.cpp:915] [Rank 1] NCCL watchdog thread terminated with \n"
             "exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(\n");
  const auto q = triage_logs({d.dir / "train.log"});
  INFO(render_text(q));
  CHECK(q.summary.find("rank 1 reports a failure in a collective") != std::string::npos);
  // Lines that are not one message's two halves stay apart.
  write_file(d.dir / "train.log", "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught \nsomething else entirely\n");
  CHECK(scan_log_file({d.dir / "train.log", "train.log"}, 0, -1, LogLineContext{}).info.lines == 2);
}

TEST_CASE("events: a store barrier's key number, for the reasoner to compare (no text matching there)",
          "[triage_logs]") {
  const fs::path dir = fs::temp_directory_path() / "hanglab_reader_barrier_key";
  fs::create_directories(dir);
  write_file(dir / "rank-11.log",
             "RuntimeError: Timed out initializing process group in store based barrier on rank: 11, for key: "
             "store_based_barrier_key:37 (world_size=16, worker_count=8, timeout=0:30:00)\n"
             "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 3/4 clients "
             "joined.\n");
  const LogCorpus c = load_log_corpus({{dir / "rank-11.log", "rank-11.log"}}, 1);
  fs::remove_all(dir);
  std::vector<std::pair<int, long long>> seen;  // joined, key
  for (const auto& e : c.events)
    if (e.joined >= 0) seen.emplace_back(e.joined, e.barrier_key);
  CHECK(seen == std::vector<std::pair<int, long long>>{{8, 37}, {3, -1}});
}
