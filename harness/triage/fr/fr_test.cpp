// Flight Recorder input: the data-only unpickler, reading torch's dumps (pickle and JSON), and
// the answer on dumps written by real Gloo runs of torch 2.15 (harness/testdata/fr, written by
// make_fr_dumps.py there: healthy, skipped, stuck, mismatched, killed, json).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "triage/fr/dump.hpp"
#include "triage/fr/pickle.hpp"
#include "triage/reason/fr.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path fr_dir(const std::string& c) { return fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/fr" / c; }

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

}  // namespace

TEST_CASE("read_pickle decodes the data opcodes of protocols 0 to 5", "[fr]") {
  // pickle.dumps({'a': [1, -2, 300, 70000, 2**40, -(2**40)], 'b': (True, None, 1.5), 'c': 'é'}, protocol=2)
  const std::string p2 = bytes({0x80, 0x02, '}', 'q', 0x00, '(', 'X', 0x01, 0, 0, 0, 'a', 'q', 0x01, ']', 'q', 0x02,
                                '(', 'K', 0x01, 'J', 0xfe, 0xff, 0xff, 0xff, 'M', 0x2c, 0x01, 'J', 0x70, 0x11, 0x01,
                                0x00, 0x8a, 0x06, 0, 0, 0, 0, 0x00, 0x01, 0x8a, 0x06, 0, 0, 0, 0, 0x00, 0xff, 'e',
                                'X', 0x01, 0, 0, 0, 'b', 'q', 0x03, 0x88, 'N', 'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0,
                                0x87, 'q', 0x04, 'X', 0x01, 0, 0, 0, 'c', 'q', 0x05, 'X', 0x02, 0, 0, 0, 0xc3, 0xa9,
                                'q', 0x06, 'u', '.'});
  const json j = fr::read_pickle(p2);
  CHECK(j["a"] == json::array({1, -2, 300, 70000, 1LL << 40, -(1LL << 40)}));
  CHECK(j["b"] == json::array({true, nullptr, 1.5}));
  CHECK(j["c"] == "\xc3\xa9");

  // Protocol 4 with FRAME, SHORT_BINUNICODE and MEMOIZE/BINGET: the memo shares the container,
  // so a list memoized while empty and filled later is seen filled (x = []; {'p': x, 'q': x}).
  const std::string p4 = bytes({0x80, 0x04, 0x95, 0x10, 0, 0, 0, 0, 0, 0, 0, '}', 0x94, '(', 0x8c, 0x01, 'p', 0x94,
                                ']', 0x94, 0x8c, 0x01, 'q', 0x94, 'h', 0x02, 'u', 'h', 0x02, 'K', 0x07, 'a', '0', '.'});
  const json k = fr::read_pickle(p4);
  CHECK(k["p"] == json::array({7}));
  CHECK(k["q"] == json::array({7}));

  // Protocol 0 (text): (dp0\nS'x'\np1\nI3\ns.
  CHECK(fr::read_pickle("(dp0\nS'x'\np1\nI3\ns.")["x"] == 3);
  CHECK(fr::read_pickle("(lp0\nI01\naF2.5\na.") == json::array({true, 2.5}));
}

TEST_CASE("read_pickle refuses objects and reports the byte of bad input", "[fr]") {
  // GLOBAL + REDUCE (what a malicious pickle uses to run code): refused, never executed.
  const std::string evil = "cos\nsystem\n(S'true'\ntR.";
  CHECK_THROWS_WITH(fr::read_pickle(evil), Catch::Contains("byte 0") && Catch::Contains("refused"));
  CHECK_THROWS_WITH(fr::read_pickle(bytes({0x80, 0x02, ']', 'X', 0xff, 0, 0, 0})), Catch::Contains("truncated"));
  CHECK_THROWS_WITH(fr::read_pickle(bytes({0x80, 0x02, 'h', 0x05, '.'})), Catch::Contains("never stored"));
  CHECK_THROWS_WITH(fr::read_pickle(bytes({0x80, 0x02, 'K', 1, 'a', '.'})), Catch::Contains("underflow"));
  CHECK_THROWS_WITH(fr::read_pickle(bytes({0x80, 0x02, 'K', 1, 'K', 2, 'a', '.'})), Catch::Contains("non-list"));
  CHECK_THROWS_WITH(fr::read_pickle(""), Catch::Contains("truncated"));
  CHECK_THROWS_WITH(fr::read_pickle(bytes({0x80, 0x02, 0xfe})), Catch::Contains("unknown opcode 0xfe"));
  // Depth: 300 nested lists.
  std::string deep = bytes({0x80, 0x02});
  for (int i = 0; i < 300; ++i) deep += ']';
  for (int i = 0; i < 299; ++i) deep += 'a';
  deep += '.';
  CHECK_THROWS_WITH(fr::read_pickle(deep), Catch::Contains("nesting deeper"));
}

TEST_CASE("dump names give the rank -- files that are dumps are told from logs", "[fr]") {
  CHECK(fr::fr_rank_from_path("dumps/rank_3") == 3);
  CHECK(fr::fr_rank_from_path("nccl_trace_rank_12.json") == 12);
  CHECK(fr::fr_rank_from_path("run/ranks/5/flight_recorder.pkl") == 5);
  CHECK(fr::fr_rank_from_path("flight_recorder.pkl") == -1);
  CHECK(fr::fr_rank_from_path("rank_99999999") == -1);
  CHECK(fr::looks_like_fr_dump(fr_dir("stuck") / "rank_0"));
  CHECK(fr::looks_like_fr_dump(fr_dir("json") / "rank_0.json"));
  CHECK_FALSE(fr::looks_like_fr_dump(fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/fr/make_fr_dumps.py"));
  CHECK(fr::list_fr_dumps({fr_dir("killed")}).size() == 2);
  CHECK(fr::list_fr_dumps({fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/logs/gloo_peer_closed"}).empty());
}

TEST_CASE("a Gloo dump of torch 2.15 reads: groups, status, entries with sizes and frames", "[fr]") {
  const fr::FrDump d = fr::read_fr_dump(fr_dir("mismatched") / "rank_2", "rank_2", 2);
  CHECK(d.version == "2.10");
  REQUIRE(d.pg_ranks.count(""));  // Gloo keys its one group's config by ""
  CHECK(d.pg_ranks.at("") == std::vector<int>{0, 1, 2});
  REQUIRE(d.entries.size() >= 5);
  const auto& e = d.entries[4];
  CHECK(e.seq == 5);
  CHECK(e.op == "broadcast");
  CHECK(e.backend == "gloo");
  CHECK(e.sizes == "[[1000]]");
  CHECK(e.dtypes == "Float");
  CHECK(e.pg == "0");
  CHECK_FALSE(e.frames.empty());
  // The same run's JSON dump and pickle dump say the same (the json case is the stuck case).
  const fr::FrDump pj = fr::read_fr_dump(fr_dir("json") / "rank_1.json", "rank_1.json", 1);
  const fr::FrDump pp = fr::read_fr_dump(fr_dir("stuck") / "rank_1", "rank_1", 1);
  CHECK(pj.entries.size() == pp.entries.size());
  CHECK(pj.entries.back().seq == pp.entries.back().seq);
  CHECK(pj.pg_ranks == pp.pg_ranks);
}

TEST_CASE("triage of Flight Recorder dumps names the culprit where torchfrtrace crashes", "[fr]") {
  SECTION("mismatch: the odd call at the first differing seq") {
    const auto r = triage_paths({fr_dir("mismatched")});
    CHECK(r.source == "flight_recorder");
    CHECK(r.category == "collective_mismatch");
    CHECK(r.missing_ranks == std::vector<int>{2});
    CHECK(r.divergence_seq == 5);
    CHECK(r.phase == "training");
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 2);
  }
  SECTION("a rank that stopped issuing collectives but dumped: absent, why not provable") {
    for (const char* c : {"stuck", "json"}) {
      INFO(c);
      const auto r = triage_paths({fr_dir(c)});
      CHECK(r.category == "unknown");
      CHECK(r.cause == "rank_absent");
      CHECK(r.missing_ranks == std::vector<int>{1});
      REQUIRE(r.stuck_collective);
      CHECK(r.stuck_collective->seq == 7);
      CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{0, 2});
      CHECK(r.per_rank.at(1).stuck_in == "outside collectives");
    }
  }
  SECTION("a rank with no dump (killed, or aborted by Gloo's size check) is the one missing") {
    for (const char* c : {"killed", "skipped"}) {
      INFO(c);
      const auto r = triage_paths({fr_dir(c)});
      CHECK(r.missing_ranks == std::vector<int>{1});
      CHECK(r.world_size == 3);
      CHECK(r.per_rank.at(1).liveness == "unknown");
      CHECK(r.scope == "subset");
    }
  }
  SECTION("healthy Gloo dumps: nobody apart, no culprit named") {
    const auto r = triage_paths({fr_dir("healthy")});
    CHECK(r.missing_ranks.empty());
    CHECK_FALSE(r.first_failure);
  }
  SECTION("--logs-only keeps dumps out; a bad dump is one clear error") {
    const fs::path tmp = fs::temp_directory_path() / "hanglab_fr_test_bad";
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    std::ofstream(tmp / "rank_0", std::ios::binary) << bytes({0x80, 0x02, '}', 'X', 0x07, 0, 0, 0}) << "entries";
    CHECK_THROWS_WITH(triage_paths({tmp}), Catch::Contains("rank_0:0:0:") && Catch::Contains("truncated"));
    fs::remove_all(tmp);
  }
}

TEST_CASE("a rank whose calls realign one position on skipped its peers' call -- one back added one", "[fr]") {
  // Records as an NCCL run would leave them when calls of equal size keep pairing after the slip.
  const auto dump = [](int rank, const std::vector<std::string>& ops) {
    fr::FrDump d;
    d.rank = rank;
    d.file = "rank_" + std::to_string(rank);
    d.pg_ranks["0"] = {0, 1, 2};
    for (size_t i = 0; i < ops.size(); ++i) {
      fr::FrEntry e;
      e.seq = static_cast<long long>(i) + 1;
      e.pg = "0";
      e.op = ops[i];
      e.backend = "nccl";
      e.sizes = "[[1000]]";
      e.dtypes = "Float";
      e.state = i + 1 == ops.size() ? "started" : "completed";
      e.index = i;
      d.entries.push_back(e);
    }
    return d;
  };
  const std::vector<std::string> peers = {"all_reduce", "broadcast", "all_reduce", "broadcast", "all_reduce", "broadcast"};
  SECTION("skipped") {
    const std::vector<std::string> odd = {"all_reduce", "broadcast", "broadcast", "all_reduce", "broadcast"};
    const auto r = analyze_fr_dumps({dump(0, peers), dump(1, odd), dump(2, peers)}, {});
    CHECK(r.category == "collective_mismatch");
    CHECK(r.cause == "skipped_collective");
    CHECK(r.missing_ranks == std::vector<int>{1});
    CHECK(r.divergence_seq == 3);
  }
  SECTION("extra") {
    const std::vector<std::string> odd = {"all_reduce", "broadcast", "barrier", "all_reduce", "broadcast", "all_reduce"};
    const auto r = analyze_fr_dumps({dump(0, peers), dump(1, peers), dump(2, odd)}, {});
    CHECK(r.cause == "extra_collective");
    CHECK(r.missing_ranks == std::vector<int>{2});
  }
  SECTION("two against two: no majority, nobody named") {
    const std::vector<std::string> odd = {"all_reduce", "broadcast", "broadcast"};
    fr::FrDump d3 = dump(3, odd);
    std::vector<fr::FrDump> ds = {dump(0, peers), dump(1, odd), dump(2, peers), d3};
    for (auto& d : ds) d.pg_ranks["0"] = {0, 1, 2, 3};
    const auto r = analyze_fr_dumps(ds, {});
    CHECK(r.category == "collective_mismatch");
    CHECK(r.missing_ranks.empty());
  }
  SECTION("every rank in the same NCCL collective, none completed: all waiting") {
    const auto r = analyze_fr_dumps({dump(0, peers), dump(1, peers), dump(2, peers)}, {});
    CHECK(r.cause == "all_ranks_waiting");
    CHECK(r.scope == "all");
    CHECK(r.missing_ranks.empty());
  }
}

TEST_CASE("pg_config ranks: torch's string \"[0, 1, 2]\" in any spacing, a list, or another shape judged by JSON",
          "[fr]") {
  const fs::path tmp = fs::temp_directory_path() / "hanglab_fr_test_ranks";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const auto ranks_of = [&](const json& ranks) {
    const json dump = {{"version", "2.10"}, {"entries", json::array()},
                       {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", ranks}}}}}};
    std::ofstream(tmp / "rank_0.json") << dump.dump();
    return fr::read_fr_dump(tmp / "rank_0.json", "rank_0.json", 0).pg_ranks.at("0");
  };
  CHECK(ranks_of("[0, 1, 2]") == std::vector<int>{0, 1, 2});
  CHECK(ranks_of("[0, 1, 2]") == std::vector<int>{0, 1, 2});  // the same string again (kept from the last read)
  CHECK(ranks_of(" [4,2 ,\t7] ") == std::vector<int>{4, 2, 7});
  CHECK(ranks_of("[]").empty());
  CHECK(ranks_of(json::array({5, 6})) == std::vector<int>{5, 6});
  CHECK(ranks_of("[0, -1, 3]") == std::vector<int>{0, 3});  // not plain: JSON reads it, the negative one dropped
  CHECK(ranks_of("[0, 1,").empty());                        // neither: no ranks
  CHECK(ranks_of("[0, 99999999999]") == std::vector<int>{0});  // beyond any world size
  fs::remove_all(tmp);
}

TEST_CASE("a dump's entry: where the program called from and the phase its frames name", "[fr]") {
  json j;
  std::ifstream(fr_dir("json") / "rank_0.json") >> j;
  REQUIRE(!j["entries"].empty());
  j["entries"].back()["frames"] = json::array(
      {{{"name", "all_reduce"}, {"filename", "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py"},
        {"line", 4174}},
       {{"name", "wrapper"}, {"filename", "/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py"},
        {"line", 79}},
       {{"name", "_save_checkpoint"}, {"filename", "/work/train.py"}, {"line", 61}},
       {{"name", "train"}, {"filename", "/work/train.py"}, {"line", 77}}});
  const fs::path dir = fs::temp_directory_path() / "hanglab_fr_frames_test";
  fs::create_directories(dir);
  std::ofstream(dir / "rank_0.json") << j.dump();
  const fr::FrDump d = fr::read_fr_dump(dir / "rank_0.json", "rank_0.json", 0);
  fs::remove_all(dir);
  REQUIRE(!d.entries.empty());
  const auto& e = d.entries.back();
  CHECK(e.call_site == "_save_checkpoint (/work/train.py:61)");  // torch's own frames skipped
  CHECK(e.phase == "checkpoint");                                 // logs/frames.cpp's table
  // Frames that name nothing: no phase; a call from torch only: its outermost frame.
  const fr::FrDump p = fr::read_fr_dump(fr_dir("stuck") / "rank_1", "rank_1", 1);
  REQUIRE(!p.entries.empty());
  CHECK(p.entries.back().phase.empty());
  CHECK_FALSE(p.entries.back().call_site.empty());
}
