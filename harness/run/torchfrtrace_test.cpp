// torchfrtrace as a second detector: its output judged (real outputs of torch 2.15's
// torchfrtrace), and a run directory's dumps handed to the venv's torchfrtrace.
#include "run/torchfrtrace.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "run/rank_env.hpp"
#include "util.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

// torch 2.15's torchfrtrace on the Gloo dumps of harness/testdata/fr/healthy.
const char* kGlooCrash = R"(tabulate is not installed. Proceeding without it.
Traceback (most recent call last):
  File "/work/wt/fr-run/.venv/bin/torchfrtrace", line 8, in <module>
    sys.exit(main())
             ^^^^^^
  File ".../torch/distributed/flight_recorder/components/builder.py", line 212, in build_collectives
    pg_name = _pg_guids[(original_pg_name, first_rank)]
              ~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
KeyError: ('0', 2)
)";

struct TempRun {
  fs::path dir = fs::temp_directory_path() / ("hanglab_frtrace_test." + std::to_string(::getpid()));
  TempRun() { fs::create_directories(dir); }
  ~TempRun() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

TEST_CASE("torchfrtrace's crash is a verdict: the exception line", "[torchfrtrace]") {
  auto r = judge_torchfrtrace_output(kGlooCrash, 1);
  CHECK(r.status == "crashed");
  CHECK(r.detail == "KeyError: ('0', 2)");
  CHECK(r.named_ranks.empty());
}

TEST_CASE("torchfrtrace naming ranks: every 'missing ranks: {..}' line", "[torchfrtrace]") {
  // types.py: logger.info("missing ranks: %s", missing_ranks), once per mismatched collective.
  auto r = judge_torchfrtrace_output("Mismatch in process group 0\nmissing ranks: {1}\nmissing ranks: {3, 1}\n", 0);
  CHECK(r.status == "named_ranks");
  CHECK(r.named_ranks == std::vector<int>{1, 3});
  auto quiet = judge_torchfrtrace_output("tabulate is not installed. Proceeding without it.\n", 0);
  CHECK(quiet.status == "no_culprit");
  CHECK(judge_torchfrtrace_output("usage: torchfrtrace ...\n", 2).status == "crashed");
}

TEST_CASE("no dumps: torchfrtrace is not run, and a missing one is listed", "[torchfrtrace]") {
  TempRun run;
  auto none = run_torchfrtrace(run.dir, 2, "/bin/true", 10);
  CHECK(none.status == "no_dumps");
  CHECK(none.undumped_ranks == std::vector<int>{0, 1});
  fs::create_directories(run.dir / "ranks" / "1");
  write_file(rank_fr_dump(run.dir, 1), "not read here");
  auto absent = run_torchfrtrace(run.dir, 2, run.dir / "no-such-torchfrtrace", 10);
  CHECK(absent.status == "not_installed");
  CHECK(absent.dumped_ranks == std::vector<int>{1});
  CHECK(absent.undumped_ranks == std::vector<int>{0});
}

TEST_CASE("a program that outlives the limit is killed: timed_out", "[torchfrtrace]") {
  TempRun run;
  fs::create_directories(run.dir / "ranks" / "0");
  write_file(rank_fr_dump(run.dir, 0), "x");
  const fs::path slow = run.dir / "slow.sh";
  write_file(slow, "#!/bin/sh\necho started\nexec sleep 30\n");
  fs::permissions(slow, fs::perms::owner_all);
  const double t0 = mono_now();
  auto r = run_torchfrtrace(run.dir, 1, slow, 0.5);
  CHECK(r.status == "timed_out");
  CHECK(mono_now() - t0 < 10);  // killed, not waited for (30 s)
  CHECK(read_file(run.dir / r.output).find("started") != std::string::npos);
}

TEST_CASE("the venv's torchfrtrace on real Gloo dumps of a run directory", "[torchfrtrace]") {
  const fs::path exe = fs::path(HANGLAB_SOURCE_DIR) / ".venv" / "bin" / "torchfrtrace";
  if (::access(exe.c_str(), X_OK) != 0) {
    WARN("skipping: no project venv with torchfrtrace");
    return;
  }
  TempRun run;
  const fs::path src = fs::path(HANGLAB_SOURCE_DIR) / "harness" / "testdata" / "fr" / "killed";  // rank 1's is missing
  for (int k : {0, 2}) {
    fs::create_directories(run.dir / "ranks" / std::to_string(k));
    fs::copy_file(src / ("rank_" + std::to_string(k)), rank_fr_dump(run.dir, k));
  }
  auto r = run_torchfrtrace(run.dir, 3, exe, 120);
  CHECK(r.dumped_ranks == std::vector<int>{0, 2});
  CHECK(r.undumped_ranks == std::vector<int>{1});
  CHECK(fs::exists(run.dir / "flight_recorder" / "dumps" / "rank_2"));
  const std::string out = read_file(run.dir / r.output);
  CHECK(out.find("--allow-incomplete-ranks") != std::string::npos);
  // The venv's torch 2.15 (ci/install-deps.sh pins it) crashes on Gloo dumps: their
  // pg_config is keyed by an empty name. A torch that reads them fails this on purpose.
  INFO(out);
  CHECK(r.status == "crashed");
  CHECK(r.detail.rfind("KeyError: ('0', ", 0) == 0);
}
