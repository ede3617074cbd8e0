// The Flight Recorder benchmark's parts: fr_scale.py on the real Gloo dumps of
// harness/testdata/fr (8 ranks, both layouts: the culprit kept, every other rank a real peer's
// dump) and hanglab's verdict on what it wrote; torchfrtrace's printed verdict parsed (outputs
// captured from torchfrtrace 2.15 on these scaled dumps); the section's check and rendering.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "bench/fr_bench.hpp"
#include "run/launchers/launchers.hpp"
#include "triage/fr/dump.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kSrc = HANGLAB_SOURCE_DIR;

std::string python() {
  const fs::path v = project_venv();
  if (!v.empty()) return (v / "bin" / "python").string();
  return "/usr/bin/python3";
}

struct Scaled {
  int rc = -1;
  json info;        // fr_scale.py's JSON line
  std::string err;  // its stderr
};

// fr_scale.py SRC OUT --ranks N [extra...]
Scaled scale(const fs::path& src, const fs::path& out, int n, const std::string& extra = "") {
  const fs::path err = out.string() + ".err";
  const std::string cmd = python() + " " + (kSrc / "harness/bench/fr_scale.py").string() + " " + src.string() + " " +
                          out.string() + " --ranks " + std::to_string(n) + " " + extra + " 2>" + err.string();
  Scaled s;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string text;
  char buf[4096];
  for (size_t k; (k = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, k);
  const int st = ::pclose(p);
  s.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  s.info = json::parse(text, nullptr, false);
  std::ifstream e(err);
  s.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
  return s;
}

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("hanglab_fr_bench_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d.parent_path());
  return d;
}

}  // namespace

TEST_CASE("fr_scale.py at 8 ranks keeps each real case's culprit, and hanglab triage names it", "[bench][fr]") {
  // What the real 3-rank dumps hold (make_fr_dumps.py): the odd rank and whether it dumped.
  // At 8 ranks it sits at 8/2+1 = 5 (or --culprit-rank); every other rank is a healthy peer.
  struct Case {
    const char* name;
    std::vector<int> culprits, missing;  // at 8 ranks
    const char* category;
  };
  const std::vector<Case> cases = {
      {"stuck", {5}, {}, "unknown"},
      {"mismatched", {5}, {}, "collective_mismatch"},
      {"killed", {}, {5}, "unknown"},
      {"skipped", {}, {5}, "unknown"},
      {"healthy", {}, {}, "unknown"},
  };
  for (const auto& c : cases)
    for (const std::string layout : {"as-written", "entries"}) {
      INFO(c.name << " " << layout);
      const fs::path out = scratch(std::string(c.name) + "-" + layout);
      const Scaled s = scale(kSrc / "harness/testdata/fr" / c.name, out, 8, "--pg-key " + layout);
      INFO(s.err);
      REQUIRE(s.rc == 0);
      REQUIRE(s.info.is_object());
      CHECK(s.info["culprits"].get<std::vector<int>>() == c.culprits);
      CHECK(s.info["missing"].get<std::vector<int>>() == c.missing);
      size_t files = 0;
      for (const auto& e : fs::directory_iterator(out)) files += e.path().filename().string().rfind("rank_", 0) == 0;
      CHECK(files == 8 - c.missing.size());

      const TriageResult r = triage_paths({out});
      CHECK(r.source == "flight_recorder");
      CHECK(r.world_size == 8);
      std::vector<int> want = c.culprits;
      want.insert(want.end(), c.missing.begin(), c.missing.end());
      CHECK(r.missing_ranks == want);
      CHECK(r.category == c.category);
    }
}

TEST_CASE("fr_scale.py keeps the culprit wherever it is placed, at the edges too", "[bench][fr]") {
  for (int at : {0, 7}) {
    for (const char* c : {"stuck", "mismatched", "killed"}) {
      INFO(c << " at " << at);
      const fs::path out = scratch(std::string(c) + "-at-" + std::to_string(at));
      const Scaled s = scale(kSrc / "harness/testdata/fr" / c, out, 8, "--culprit-rank " + std::to_string(at));
      REQUIRE(s.rc == 0);
      CHECK(triage_paths({out}).missing_ranks == std::vector<int>{at});
    }
  }
}

TEST_CASE("a scaled rank's dump is a real rank's dump with only pg_config's ranks rewritten", "[bench][fr]") {
  const fs::path src = kSrc / "harness/testdata/fr/stuck";
  const fs::path as_written = scratch("format-as-written"), keyed = scratch("format-entries");
  REQUIRE(scale(src, as_written, 8).rc == 0);
  REQUIRE(scale(src, keyed, 8, "--pg-key entries").rc == 0);
  const fr::FrDump real0 = fr::read_fr_dump(src / "rank_0", "rank_0", 0);
  const fr::FrDump real1 = fr::read_fr_dump(src / "rank_1", "rank_1", 1);
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  // Rank 6 copies real peer 0 (peers 0 and 2, cycling: 6 % 2 == 0); rank 5 is the stuck rank 1.
  for (const auto& [dir, key] : std::vector<std::pair<fs::path, std::string>>{{as_written, ""}, {keyed, "0"}}) {
    INFO(dir.string());
    const fr::FrDump d6 = fr::read_fr_dump(dir / "rank_6", "rank_6", 6);
    const fr::FrDump d5 = fr::read_fr_dump(dir / "rank_5", "rank_5", 5);
    CHECK(d6.version == real0.version);
    CHECK(d6.pg_ranks.size() == 1);
    CHECK(d6.pg_ranks.count(key) == 1);
    CHECK(d6.pg_ranks.at(key) == all);
    REQUIRE(d6.entries.size() == real0.entries.size());
    for (size_t i = 0; i < d6.entries.size(); ++i) {
      const auto &a = d6.entries[i], &b = real0.entries[i];
      CHECK(a.seq == b.seq);
      CHECK(a.op == b.op);
      CHECK(a.sizes == b.sizes);
      CHECK(a.dtypes == b.dtypes);
      CHECK(a.created_s == b.created_s);
      CHECK(a.frames == b.frames);
      CHECK(a.pg == b.pg);
    }
    REQUIRE(d5.entries.size() == real1.entries.size());
    CHECK(d5.entries.back().seq == real1.entries.back().seq);
    CHECK(d5.pg_status.at("0").last_enqueued == real1.pg_status.at("0").last_enqueued);
  }
  // The real dump as torch wrote it: pg_config keyed "" (what torchfrtrace cannot join).
  CHECK(real0.pg_ranks.count("") == 1);
}

TEST_CASE("fr_scale.py refuses what is not a dump set: one line naming the file, exit 2, nothing written",
          "[bench][fr]") {
  const fs::path bad = scratch("bad-src");
  fs::create_directories(bad);
  std::ofstream(bad / "rank_0") << "not a pickle\n";
  const fs::path out = scratch("bad-out");
  const Scaled s = scale(bad, out, 8);
  CHECK(s.rc == 2);
  CHECK(s.err.find((bad / "rank_0").string()) != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  const Scaled none = scale(kSrc / "harness/testdata/fr/stuck", scratch("too-few"), 1);
  CHECK(none.rc == 2);
}

TEST_CASE("torchfrtrace's printed verdict: the first report's ranks, undecided, or its crash", "[bench][fr]") {
  // torchfrtrace 2.15 on fr_scale.py's 8-rank sets (nccl-keyed), verbatim but for the frames.
  const std::string stuck = R"(tabulate is not installed. Proceeding without it.
Not all ranks joining collective, sequence number: 7
internal record id: 6
group info: 0:default_pg
collective: gloo:all_reduce
missing ranks: {5}
input sizes: [[1000]]
output sizes: [[1000]]
world size: 8
expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}
collective state: scheduled
collective stack trace: 
 all_reduce at /work/main/.venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:4174
)";
  FrtVerdict v = parse_torchfrtrace_output(stuck, 0);
  CHECK(v.kind == "blames");
  CHECK(v.ranks == std::vector<int>{5});
  CHECK(v.text == "missing ranks {5} at seq 7 (gloo:all_reduce)");

  const std::string mismatched = R"(Collective sequence number: 5 has errors
internal record id: 4
group info: 0:default_pg
collective: gloo:all_reduce
input sizes: [[1000]]
output sizes: [[1000]]
world size: 8
expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}
collective state: scheduled
error msg: Culprit rank 5; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: 'all_reduce' does not match found collective type: 'broadcast'
collective stack trace: 
 all_reduce at /work/main/.venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:4174
Collective sequence number: 6 has errors
error msg: Culprit rank 2; Error type: SIZE_OR_SYNTAX_MISMATCH
)";
  v = parse_torchfrtrace_output(mismatched, 0);
  CHECK(v.kind == "blames");
  CHECK(v.ranks == std::vector<int>{5});  // the first report only
  CHECK(v.text == "culprit ranks {5} at seq 5 (gloo:all_reduce)");

  // Several culprits in one error line (it blames every rank but the first when the first is the odd one).
  v = parse_torchfrtrace_output("Collective sequence number: 3 has errors\nerror msg: Culprit rank 2; Error type: "
                                "COLLECTIVE_TYPE_MISMATCH, x, Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH, y\n",
                                0);
  CHECK(v.ranks == std::vector<int>{1, 2});

  const std::string killed =
      "We cannot decide what's wrong with this collective entry because we missed FR dumps from ranks ({5}) so we "
      "don't have enough information. If you want to debug further use -j to dump all raw trace\n";
  v = parse_torchfrtrace_output(killed + killed, 0);
  CHECK(v.kind == "undecided");
  CHECK(v.ranks == std::vector<int>{5});

  v = parse_torchfrtrace_output("No errors found for this collective entry, There could be some other reasons why we "
                                "see collective timeout.\n",
                                0);
  CHECK(v.kind == "undecided");
  CHECK(v.ranks.empty());

  v = parse_torchfrtrace_output("tabulate is not installed. Proceeding without it.\n", 0);
  CHECK(v.kind == "no_problem");

  const std::string crash = R"(Traceback (most recent call last):
  File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/flight_recorder/components/builder.py", line 212, in build_collectives
    pg_name = _pg_guids[(original_pg_name, first_rank)]
              ~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
KeyError: ('0', 3)
)";
  v = parse_torchfrtrace_output(crash, 1);
  CHECK(v.kind == "crashed");
  CHECK(v.text == "crashed: KeyError: ('0', 3)");
  CHECK(parse_torchfrtrace_output("", 137).text == "crashed: exit 137 without a message");
}

TEST_CASE("the Flight Recorder section: its check names a wrong hanglab verdict, text and HTML carry the rows",
          "[bench][fr]") {
  json fr = json::parse(R"json({
    "title": "Flight Recorder: hanglab vs torchfrtrace", "available": true, "repeat": 3, "goal_ratio": 10,
    "goal_ranks": 1024, "dumps": "harness/testdata/fr", "torchfrtrace": "/v/bin/torchfrtrace",
    "rows": [
      {"case": "stuck", "layout": "nccl-keyed", "ranks": 1024, "files": 1024, "bytes": 14000000, "expected": [513],
       "missing_dumps": [],
       "hanglab": {"wall_s": {"n": 3, "median": 0.5, "min": 0.4, "max": 0.6, "runs": [0.4, 0.5, 0.6]},
                   "peak_rss_mb": 80, "verdict": "straggler/unresponsive: ranks 513", "ranks": [513], "ok": true},
       "torchfrtrace": {"wall_s": {"n": 3, "median": 15.0, "min": 14, "max": 16, "runs": [14, 15, 16]},
                        "peak_rss_mb": 900, "kind": "blames", "ranks": [513], "ok": true,
                        "verdict": "missing ranks {513} at seq 7 (gloo:all_reduce)"},
       "agree": true, "ratio": 30.0},
      {"case": "stuck", "layout": "gloo", "ranks": 1024, "files": 1024, "bytes": 14000000, "expected": [513],
       "missing_dumps": [],
       "hanglab": {"wall_s": {"n": 3, "median": 0.5, "min": 0.4, "max": 0.6, "runs": [0.4, 0.5, 0.6]},
                   "peak_rss_mb": 80, "verdict": "straggler/unresponsive: ranks 513", "ranks": [513], "ok": true},
       "torchfrtrace": {"wall_s": {"n": 3, "median": 3.0, "min": 3, "max": 3, "runs": [3, 3, 3]},
                        "kind": "crashed", "ranks": [], "ok": null, "verdict": "crashed: KeyError: ('0', 3)"},
       "agree": null, "ratio": 6.0}
    ],
    "agree": 1, "disagree": 0, "no_torchfrtrace_verdict": 1, "min_ratio_at_goal_ranks": 30.0, "goal": "met"})json");
  CHECK(check_fr_bench_json(fr).empty());
  const std::string text = render_fr_bench_text(fr);
  CHECK(text.find("Flight Recorder: hanglab vs torchfrtrace") != std::string::npos);
  CHECK(text.find("crashed: KeyError: ('0', 3)") != std::string::npos);
  CHECK(text.find("30x") != std::string::npos);
  CHECK(text.find("goal >= 10x: met") != std::string::npos);
  const std::string html = render_fr_bench_html(fr);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("missing ranks {513}") != std::string::npos);

  fr["rows"][0]["hanglab"]["ok"] = false;
  fr["rows"][0]["hanglab"]["ranks"] = json::array();
  fr["rows"][1]["hanglab"]["wall_s"] = nullptr;
  const auto p = check_fr_bench_json(fr);
  REQUIRE(p.size() == 2);
  CHECK(p[0] == "bench.json: flight_recorder: stuck nccl-keyed 1024 ranks: hanglab triage named none where the "
                "culprit is 513 (straggler/unresponsive: ranks 513)");
  CHECK(p[1] == "bench.json: flight_recorder: stuck gloo 1024 ranks: no hanglab time");

  // No torchfrtrace: the section says so; not a problem.
  json missing = {{"available", true}, {"torchfrtrace_missing", "no project venv"}, {"rows", fr["rows"]}};
  missing["rows"][0]["hanglab"]["ok"] = true;
  missing["rows"][1]["hanglab"]["wall_s"] = fr["rows"][0]["hanglab"]["wall_s"];
  CHECK(check_fr_bench_json(missing).empty());
  CHECK(render_fr_bench_text(missing).find("torchfrtrace not run: no project venv") != std::string::npos);
  CHECK_FALSE(check_fr_bench_json(json()).empty());
}
