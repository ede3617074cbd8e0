// Unit tests of triage on the canned run directories in harness/testdata/triage/
// (written by make_fixtures.py there; the lead may replace them by recordings of real
// runs, so the assertions are about the diagnosis, not about exact timestamps).
#include "triage/triage.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "triage/records/run_dir.hpp"

namespace fs = std::filesystem;
using hanglab::render_text;
using hanglab::to_json;
using hanglab::triage_run_dir;
using hanglab::TriageResult;

namespace {

const std::vector<const char*> kFixtures = {
    "healthy",   "killed",    "skip_collective", "uneven_batches",  "frozen",       "slow",           "init_hang",
    "truncated", "all_stuck", "exception",       "checkpoint_hang", "wrong_ifname", "uneven_barrier", "late_rank"};

fs::path fixture(const std::string& name) { return fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/triage" / name; }

TriageResult triage(const std::string& name) { return triage_run_dir(fixture(name)); }

std::vector<std::string> liveness(const TriageResult& r) {
  std::vector<std::string> v;
  for (const auto& t : r.per_rank) v.push_back(t.liveness);
  return v;
}

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// A scratch copy of a fixture that a test may edit; removed on destruction.
struct ScratchCopy {
  fs::path dir;
  explicit ScratchCopy(const std::string& name) {
    dir = fs::temp_directory_path() /
          fs::path("hanglab_triage_test_" + name + "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(dir);
    fs::copy(fixture(name), dir, fs::copy_options::recursive);
  }
  ~ScratchCopy() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Every evidence reference must name a file of the run dir and a line that exists.
void check_evidence_refs(const std::string& name, const TriageResult& r) {
  for (const auto& e : r.evidence) {
    INFO(name << ": " << e.ref << "  " << e.text);
    const auto colon = e.ref.rfind(':');
    REQUIRE(colon != std::string::npos);
    const fs::path file = fixture(name) / e.ref.substr(0, colon);
    REQUIRE(fs::exists(file));
    const int line = std::stoi(e.ref.substr(colon + 1));
    std::ifstream in(file);
    std::string l;
    int n = 0;
    while (n < line && std::getline(in, l)) ++n;
    CHECK(n == line);
    // The injected ground truth must never be cited.
    if (e.ref.rfind("harness.jsonl", 0) == 0) CHECK_FALSE(mentions(l, "\"ev\":\"fault\""));
  }
}

}  // namespace

TEST_CASE("healthy: all ranks complete, nothing to report", "[triage]") {
  const auto r = triage("healthy");
  CHECK(r.category == "none");
  CHECK(r.cause == "none");
  CHECK(r.scope == "none");
  CHECK(r.phase == "training");
  CHECK(r.world_size == 4);
  CHECK(r.missing_ranks.empty());
  CHECK(r.last_good_step == 10);
  CHECK(liveness(r) == std::vector<std::string>{"completed", "completed", "completed", "completed"});
  CHECK_FALSE(r.first_failure);
  CHECK(r.echoes.empty());
  CHECK_FALSE(r.stuck_collective);
  CHECK_FALSE(r.divergence_seq);
  CHECK(r.answers.size() == 4);
  const auto text = render_text(r);
  CHECK(mentions(text, "none / none"));
  CHECK(mentions(text, "First failure: none"));
  check_evidence_refs("healthy", r);
}

TEST_CASE("killed: SIGKILL of rank 2 at step 6, peers' connection errors are echoes", "[triage]") {
  const auto r = triage("killed");
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "killed");
  CHECK(r.phase == "training");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{2});
  CHECK(r.last_good_step == 5);
  CHECK(r.confidence == "high");
  CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "dead", "hung"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 2);
  CHECK(mentions(r.first_failure->what, "SIGKILL"));
  // The three peers' "Connection closed by peer" errors, in time order.
  REQUIRE(r.echoes.size() == 3);
  for (size_t i = 0; i < r.echoes.size(); ++i) {
    CHECK(r.echoes[i].rank != 2);
    CHECK(mentions(r.echoes[i].what, "Connection closed by peer"));
    if (i) CHECK(r.echoes[i - 1].t <= r.echoes[i].t);
  }
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->op == "allreduce");
  CHECK(r.stuck_collective->seq == 13);
  CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{0, 1, 3});
  CHECK(r.stuck_collective->absent_ranks == std::vector<int>{2});
  CHECK(r.per_rank[2].signal == 9);
  CHECK(r.per_rank[0].exit_code == 10);
  const auto text = render_text(r);
  CHECK(mentions(text, "rank_exit / killed"));
  CHECK(mentions(text, "rank 2"));
  CHECK(mentions(text, "SIGKILL"));
  CHECK(mentions(text, "allreduce seq 13"));
  CHECK(mentions(text, "Echoes"));
  CHECK(mentions(text, "dmesg"));
  check_evidence_refs("killed", r);
}

TEST_CASE("skip_collective: the divergence at step 5 wins over the later exits and timeouts", "[triage]") {
  const auto r = triage("skip_collective");
  CHECK(r.category == "collective_mismatch");
  CHECK(r.cause == "skipped_collective");
  CHECK(r.phase == "training");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{1});
  REQUIRE(r.divergence_seq);
  CHECK(*r.divergence_seq == 10);
  REQUIRE(r.divergence_step);
  CHECK(*r.divergence_step == 5);
  // Ranks 0,2,3 completed 9 steps, but from step 5 on they averaged gradients with the
  // wrong step of rank 1: the last good step is the one before the divergence.
  CHECK(r.last_good_step == 4);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "completed", "hung", "hung"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 1);
  CHECK(mentions(r.first_failure->evidence, "ranks/1/events.jsonl:"));
  REQUIRE(r.echoes.size() == 3);
  CHECK(r.echoes[0].rank == 2);  // Connection closed first, then the two timeouts
  CHECK(mentions(r.echoes[0].what, "Connection closed"));
  CHECK(mentions(r.echoes[1].what, "Timed out"));
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->absent_ranks == std::vector<int>{1});
  const auto text = render_text(r);
  CHECK(mentions(text, "collective_mismatch / skipped_collective"));
  CHECK(mentions(text, "seq 10"));
  CHECK(mentions(text, "step 5"));
  CHECK(mentions(text, "TORCH_DISTRIBUTED_DEBUG=DETAIL"));
  check_evidence_refs("skip_collective", r);
}

TEST_CASE("uneven_batches: rank 3 exits 0 after step 7 while its peers wait in step 8", "[triage]") {
  const auto r = triage("uneven_batches");
  CHECK(r.category == "collective_mismatch");
  CHECK(r.cause == "uneven_batches");
  CHECK(r.phase == "training");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{3});
  CHECK(r.last_good_step == 7);
  CHECK(r.divergence_step == 8);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "hung", "completed"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 3);
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->seq == 17);
  CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{0, 1, 2});
  CHECK(r.echoes.size() == 3);
  const auto text = render_text(r);
  CHECK(mentions(text, "uneven_batches"));
  CHECK(mentions(text, "rank 3"));
  CHECK(mentions(text, "drop_last"));
  check_evidence_refs("uneven_batches", r);
}

TEST_CASE("frozen: rank 2's heartbeats stop while its peers keep heartbeating in allreduce", "[triage]") {
  const auto r = triage("frozen");
  CHECK(r.category == "straggler");
  CHECK(r.cause == "frozen");
  CHECK(r.phase == "training");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{2});
  CHECK(r.last_good_step == 5);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "frozen", "hung"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 2);
  // The harness teardown kills are echoes, not the cause (rank 2's SIGKILL included).
  CHECK(r.echoes.size() == 4);
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{0, 1, 3});
  CHECK(r.per_rank[0].stuck_in == "c10d::ProcessGroupGloo::AsyncWork::wait");
  CHECK(r.per_rank[2].stuck_in == "nanosleep in hanglab::torch_ddp::simulate_compute");
  const auto text = render_text(r);
  CHECK(mentions(text, "straggler / frozen"));
  CHECK(mentions(text, "heartbeat"));
  CHECK(mentions(text, "ProcessGroupGloo"));
  check_evidence_refs("frozen", r);
}

TEST_CASE("slow: rank 1 computes 3x slower, every rank completes", "[triage]") {
  const auto r = triage("slow");
  CHECK(r.category == "straggler");
  CHECK(r.cause == "slow_rank");
  CHECK(r.phase == "training");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{1});
  CHECK(r.last_good_step == 10);
  CHECK(liveness(r) == std::vector<std::string>{"completed", "slow", "completed", "completed"});
  CHECK_FALSE(r.first_failure);
  // Synchronous DDP paces every rank's step time; the compute time shows the straggler.
  CHECK(r.per_rank[1].busy_step_ms > 2.5 * r.per_rank[0].busy_step_ms);
  CHECK(r.per_rank[0].mean_step_ms == Approx(r.per_rank[1].mean_step_ms).epsilon(0.05));
  const auto text = render_text(r);
  CHECK(mentions(text, "slow_rank"));
  CHECK(mentions(text, "2.9x"));
  check_evidence_refs("slow", r);
}

TEST_CASE("slow: a rank merely over 2x beside a 6x straggler is contention, not a second straggler", "[triage]") {
  const auto r = triage("slow_contention");
  CHECK(r.category == "straggler");
  CHECK(r.cause == "slow_rank");
  CHECK(r.missing_ranks == std::vector<int>{1});
  CHECK(r.per_rank[3].busy_step_ms > 2.0 * r.per_rank[0].busy_step_ms);  // over the 2x line on its own
  CHECK(r.per_rank[3].liveness == "completed");
}

TEST_CASE("slow: two ranks equally slow are both named", "[triage]") {
  const auto r = triage("slow_pair");
  CHECK(r.category == "straggler");
  CHECK(r.missing_ranks == std::vector<int>{1, 2});
  CHECK(liveness(r) == std::vector<std::string>{"completed", "slow", "slow", "completed"});
}

TEST_CASE("healthy is not slow: the checkpoint time of rank 0 is no straggler", "[triage]") {
  const auto r = triage("healthy");
  for (const auto& t : r.per_rank) CHECK(t.liveness != "slow");
}

TEST_CASE("init_hang: rank 3 never starts, the others time out in rendezvous", "[triage]") {
  const auto r = triage("init_hang");
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "rendezvous_timeout");
  CHECK(r.phase == "init");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{3});
  CHECK(r.last_good_step == 0);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "hung", "frozen"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 3);
  CHECK(mentions(r.first_failure->what, "never started"));
  CHECK_FALSE(r.stuck_collective);
  const auto text = render_text(r);
  CHECK(mentions(text, "rendezvous / rendezvous_timeout"));
  CHECK(mentions(text, "waiting for clients"));
  CHECK(mentions(text, "MASTER_ADDR"));
  check_evidence_refs("init_hang", r);
}

TEST_CASE("truncated: a SIGSEGV mid-write leaves half a line, which is skipped", "[triage]") {
  const auto r = triage("truncated");
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "crashed");
  CHECK(r.phase == "training");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{0});
  CHECK(r.last_good_step == 2);
  CHECK(liveness(r) == std::vector<std::string>{"dead", "hung", "hung", "hung"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 0);
  CHECK(r.per_rank[0].signal == 11);

  const auto obs = hanglab::load_run_observations(fixture("truncated"));
  const auto& r0 = obs.ranks.at(0);
  REQUIRE(r0.bad_lines.size() == 1);
  CHECK(r0.bad_lines[0] == 43);
  CHECK(r0.last_line == 42);
  const auto text = render_text(r);
  CHECK(mentions(text, "SIGSEGV"));
  CHECK(mentions(text, "truncated"));
  check_evidence_refs("truncated", r);
}

TEST_CASE("all_stuck: every rank waits in the same allreduce, nobody is missing", "[triage]") {
  const auto r = triage("all_stuck");
  CHECK(r.category == "unknown");
  CHECK(r.cause == "all_ranks_waiting");
  CHECK(r.phase == "training");
  CHECK(r.scope == "all");
  CHECK(r.missing_ranks.empty());
  CHECK(r.last_good_step == 5);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "hung", "hung"});
  CHECK_FALSE(r.first_failure);
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(r.stuck_collective->absent_ranks.empty());
  const auto text = render_text(r);
  CHECK(mentions(text, "all 4 ranks wait in allreduce seq 13"));
  check_evidence_refs("all_stuck", r);
}

TEST_CASE("exception: rank 1 raises in forward of step 4 and exits 1", "[triage]") {
  const auto r = triage("exception");
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "exception");
  CHECK(r.phase == "training");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{1});
  CHECK(r.last_good_step == 3);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "dead", "hung", "hung"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 1);
  CHECK(mentions(r.first_failure->what, "injected exception"));
  CHECK(mentions(render_text(r), "traceback"));
  check_evidence_refs("exception", r);
}

TEST_CASE("checkpoint_hang: rank 0 blocks in its save, the others wait in the barrier", "[triage]") {
  const auto r = triage("checkpoint_hang");
  CHECK(r.category == "straggler");
  CHECK(r.cause == "stuck_in_checkpoint");
  CHECK(r.phase == "checkpoint");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{0});
  CHECK(r.last_good_step == 5);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "hung", "hung"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 0);
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->op == "barrier");
  CHECK(r.stuck_collective->absent_ranks == std::vector<int>{0});
  CHECK(mentions(render_text(r), "checkpoint save after step 5"));
  check_evidence_refs("checkpoint_hang", r);
}

TEST_CASE("wrong_ifname: every rank fails process-group creation on a missing interface", "[triage]") {
  const auto r = triage("wrong_ifname");
  CHECK(r.category == "network");
  CHECK(r.cause == "wrong_ifname");
  CHECK(r.phase == "init");
  CHECK(r.scope == "all");
  CHECK(r.missing_ranks.empty());
  CHECK(r.last_good_step == 0);
  CHECK(liveness(r) == std::vector<std::string>{"dead", "dead", "dead", "dead"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 0);
  CHECK(mentions(render_text(r), "GLOO_SOCKET_IFNAME"));
  check_evidence_refs("wrong_ifname", r);
}

TEST_CASE("uneven_barrier: a final barrier pairing with the peers' allreduce is still uneven batches", "[triage]") {
  const auto r = triage("uneven_barrier");
  CHECK(r.category == "collective_mismatch");
  CHECK(r.cause == "uneven_batches");
  CHECK(r.phase == "training");
  CHECK(r.missing_ranks == std::vector<int>{3});
  CHECK(r.last_good_step == 7);
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 3);
  check_evidence_refs("uneven_barrier", r);
}

TEST_CASE("late_rank: peers time out before the throttled rank 1 even enters the allreduce", "[triage]") {
  const auto r = triage("late_rank");
  CHECK(r.category == "straggler");
  CHECK(r.cause == "slow_rank");
  CHECK(r.phase == "training");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{1});
  CHECK(r.last_good_step == 2);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "slow", "hung", "hung"});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 1);
  // By the end every rank has a `begin` at seq 6; what counts is who was inside when
  // the first timeout fired.
  REQUIRE(r.stuck_collective);
  CHECK(r.stuck_collective->waiting_ranks == std::vector<int>{0, 1, 2, 3});
  const auto text = render_text(r);
  CHECK(mentions(text, "timed out waiting for it"));
  check_evidence_refs("late_rank", r);
}

TEST_CASE("the injected ground truth is never used", "[triage]") {
  // Point the harness fault line and the scenario's [[fault]] at another rank: the
  // answer must not move.
  ScratchCopy copy("killed");
  const auto before = to_json(triage_run_dir(copy.dir));
  std::string h = read_file(copy.dir / "harness.jsonl");
  const auto pos = h.find("\"ranks\":[2]");
  REQUIRE(pos != std::string::npos);
  h.replace(pos, 11, "\"ranks\":[0]");
  write_file(copy.dir / "harness.jsonl", h);
  std::string toml = read_file(copy.dir / "scenario.toml");
  toml.replace(toml.find("ranks = [2]"), 11, "ranks = [0]");
  write_file(copy.dir / "scenario.toml", toml);
  fs::remove(copy.dir / "scenario.toml");  // and without it at all
  const auto after = to_json(triage_run_dir(copy.dir));
  CHECK(before == after);
  CHECK(after["missing_ranks"] == nlohmann::json::array({2}));
}

TEST_CASE("plain logs without harness.jsonl: a vanished rank is still found", "[triage]") {
  ScratchCopy copy("killed");
  fs::remove(copy.dir / "harness.jsonl");
  const auto r = triage_run_dir(copy.dir);
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "killed");
  CHECK(r.missing_ranks == std::vector<int>{2});
  CHECK(r.confidence == "medium");
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 2);
  CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "dead", "hung"});
}

TEST_CASE("a SIGKILL is an OOM kill only with OOM evidence", "[triage]") {
  ScratchCopy copy("killed");
  write_file(copy.dir / "ranks/2/oom.txt",
             "# memory cgroup v2, limit 300 MiB\nlow 0\nhigh 0\nmax 12\noom 1\noom_kill 0\n");
  CHECK(triage_run_dir(copy.dir).cause == "killed");  // counters without a kill prove nothing
  write_file(copy.dir / "ranks/2/oom.txt",
             "# memory cgroup v2, limit 300 MiB\nmax 40\noom 3\noom_kill 1\nkernel: Memory cgroup out of memory: "
             "Killed process 4103 (torch_ddp) total-vm:912000kB\n");
  const auto r = triage_run_dir(copy.dir);
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "oom");
  CHECK(r.missing_ranks == std::vector<int>{2});
  bool cited = false;
  for (const auto& e : r.evidence) cited |= e.ref == "ranks/2/oom.txt:4";
  CHECK(cited);
}

TEST_CASE("a rank that froze and was later killed from outside is frozen, not killed", "[triage]") {
  // Turn rank 2's teardown kill into a SIGKILL from outside just before the teardown:
  // no longer the harness' kill, but its heartbeats had stopped 10 s earlier while its
  // peers kept beating.
  ScratchCopy copy("frozen");
  std::stringstream in(read_file(copy.dir / "harness.jsonl"));
  std::vector<nlohmann::json> lines;
  double teardown_t = 0;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(nlohmann::json::parse(line));
    if (lines.back()["ev"] == "teardown") teardown_t = lines.back()["t"].get<double>();
  }
  REQUIRE(teardown_t > 0);
  std::string out;
  for (auto& j : lines) {
    if (j["ev"] == "exit" && j["rank"] == 2) {
      j["t"] = teardown_t - 0.5;
      j["signal"] = 9;
      j["by_teardown"] = false;
    }
    out += j.dump() + "\n";
  }
  write_file(copy.dir / "harness.jsonl", out);
  const auto r = triage_run_dir(copy.dir);
  CHECK(r.category == "straggler");
  CHECK(r.cause == "frozen");
  CHECK(r.missing_ranks == std::vector<int>{2});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 2);
  CHECK(mentions(r.first_failure->what, "heartbeats stopped"));
}

// Rank 0 of the exception fixture, instead of raising "Connection closed by peer", dies of
// SIGPIPE writing to rank 1's closed socket (a rank without signal hygiene). `exit_dt`
// places its recorded death relative to rank 1's exit.
TriageResult exception_with_sigpipe_rank0(double exit_dt) {
  ScratchCopy copy("exception");
  std::stringstream in(read_file(copy.dir / "harness.jsonl"));
  double rank1_exit_t = 0;
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(nlohmann::json::parse(line));
    if (lines.back()["ev"] == "exit" && lines.back()["rank"] == 1) rank1_exit_t = lines.back()["t"].get<double>();
  }
  REQUIRE(rank1_exit_t > 0);
  std::string out;
  for (auto& j : lines) {
    if (j["ev"] == "exit" && j["rank"] == 0) {
      j["t"] = rank1_exit_t + exit_dt;
      j["code"] = nullptr;
      j["signal"] = 13;
      j["status"] = 141;
    }
    out += j.dump() + "\n";
  }
  write_file(copy.dir / "harness.jsonl", out);
  // A SIGPIPE death leaves no error and no exit event in the trace.
  std::stringstream ev(read_file(copy.dir / "ranks/0/events.jsonl"));
  std::string kept;
  for (std::string line; std::getline(ev, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["ev"] != "error" && j["ev"] != "exit") kept += line + "\n";
  }
  write_file(copy.dir / "ranks/0/events.jsonl", kept);
  return triage_run_dir(copy.dir);
}

TEST_CASE("a rank killed by SIGPIPE after a peer failed is an echo, not a second missing rank", "[triage]") {
  for (double dt : {0.18, -0.0005}) {  // after rank 1's recorded exit, or reaped a hair before it
    INFO("rank 0's SIGPIPE death at rank 1's exit " << dt << " s");
    const auto r = exception_with_sigpipe_rank0(dt);
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "exception");
    CHECK(r.missing_ranks == std::vector<int>{1});
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 1);
    CHECK(r.per_rank[0].signal == 13);
    CHECK(r.per_rank[0].liveness == "hung");
    bool echoed = false;
    for (const auto& e : r.echoes) echoed = echoed || (e.rank == 0 && mentions(e.what, "SIGPIPE"));
    CHECK(echoed);
  }
}

TEST_CASE("ranks silent only while the harness captured stacks are not frozen", "[triage]") {
  // gdb stops every rank it attaches to; under load a capture lasts seconds. Rank 3's
  // heartbeats stop 5 s before the teardown, just after the capture began.
  for (bool capture_logged : {true, false}) {
    ScratchCopy copy("frozen");
    std::stringstream in(read_file(copy.dir / "harness.jsonl"));
    std::string out;
    double teardown_t = 0;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["ev"] == "teardown") teardown_t = j["t"].get<double>();
      out += line + "\n";
    }
    REQUIRE(teardown_t > 0);
    if (capture_logged) out += nlohmann::json({{"t", teardown_t - 5.5}, {"ev", "stack_capture"}}).dump() + "\n";
    write_file(copy.dir / "harness.jsonl", out);
    std::stringstream ev(read_file(copy.dir / "ranks/3/events.jsonl"));
    std::string kept;
    for (std::string line; std::getline(ev, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["ev"] == "hb" && j["t"].get<double>() > teardown_t - 5) continue;
      kept += line + "\n";
    }
    write_file(copy.dir / "ranks/3/events.jsonl", kept);
    const auto r = triage_run_dir(copy.dir);
    INFO("stack_capture logged: " << capture_logged);
    CHECK(r.cause == "frozen");
    if (capture_logged) {
      CHECK(r.missing_ranks == std::vector<int>{2});
      CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "frozen", "hung"});
    } else {
      CHECK(r.missing_ranks == std::vector<int>{2, 3});  // what the record said before the capture was logged
    }
  }
}

TEST_CASE("teardown kills are recognised by time when exits lack by_teardown", "[triage]") {
  ScratchCopy copy("frozen");
  std::stringstream in(read_file(copy.dir / "harness.jsonl"));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    j.erase("by_teardown");
    out += j.dump() + "\n";
  }
  write_file(copy.dir / "harness.jsonl", out);
  const auto r = triage_run_dir(copy.dir);
  CHECK(r.cause == "frozen");
  CHECK(liveness(r) == std::vector<std::string>{"hung", "hung", "frozen", "hung"});
  CHECK(r.echoes.size() == 4);
}

TEST_CASE("duplicate RANK: a slot whose trace starts as another rank", "[triage]") {
  // Slot 3 started as RANK 1 (a copy-pasted launch line): RANK 1 twice, RANK 3 never.
  ScratchCopy copy("init_hang");
  std::stringstream in(read_file(copy.dir / "ranks/2/events.jsonl"));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    j["rank"] = 1;
    out += j.dump() + "\n";
  }
  fs::create_directories(copy.dir / "ranks/3");
  write_file(copy.dir / "ranks/3/events.jsonl", out);
  const auto r = triage_run_dir(copy.dir);
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "duplicate_rank");
  CHECK(r.phase == "init");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{3});
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 3);
  CHECK(mentions(r.summary, "RANK 1 was started twice"));
  CHECK(mentions(render_text(r), "node_rank"));
}

TEST_CASE("triage is deterministic", "[triage]") {
  for (const char* name : kFixtures) {
    INFO(name);
    const auto a = triage(name);
    const auto b = triage(name);
    CHECK(to_json(a).dump() == to_json(b).dump());
    CHECK(render_text(a) == render_text(b));
  }
}

TEST_CASE("to_json has the design's triage.json fields", "[triage]") {
  const auto j = to_json(triage("killed"));
  for (const char* key : {"phase", "scope", "liveness", "last_good_step", "per_rank", "missing_ranks",
                          "stuck_collective", "first_failure", "category", "cause", "confidence", "evidence",
                          "next_steps", "echoes", "answers", "divergence_seq", "divergence_step"}) {
    INFO(key);
    CHECK(j.contains(key));
  }
  CHECK(j["liveness"]["2"] == "dead");
  CHECK(j["per_rank"][2]["signal"] == 9);
  CHECK(j["per_rank"][0]["last_coll"]["seq"] == 13);
  CHECK(j["stuck_collective"]["absent_ranks"] == nlohmann::json::array({2}));
  CHECK(j["first_failure"]["rank"] == 2);
  CHECK(j["divergence_seq"].is_null());
}

TEST_CASE("bad run directories", "[triage]") {
  CHECK_THROWS_AS(triage_run_dir(fixture("does_not_exist")), std::runtime_error);
  const fs::path empty = fs::temp_directory_path() / "hanglab_triage_test_empty";
  fs::remove_all(empty);
  fs::create_directories(empty);
  CHECK_THROWS_AS(triage_run_dir(empty), std::runtime_error);  // no ranks/
  fs::create_directories(empty / "ranks");
  const auto r = triage_run_dir(empty);  // nothing inside is data, not an error
  CHECK(r.category == "unknown");
  CHECK_FALSE(render_text(r).empty());
  // Garbage lines anywhere are skipped.
  fs::create_directories(empty / "ranks/0");
  write_file(empty / "ranks/0/events.jsonl",
             "not json\n{\"t\":1.0,\"rank\":0,\"ev\":\"start\"}\n[1,2]\n{\"ev\":\"hb\"}\n");
  write_file(empty / "harness.jsonl", "{{{\n");
  const auto r2 = triage_run_dir(empty);
  CHECK(r2.world_size == 1);
  CHECK(r2.phase == "init");
  fs::remove_all(empty);
}

TEST_CASE("log timestamps", "[triage]") {
  using hanglab::parse_log_timestamp;
  REQUIRE(parse_log_timestamp("2026-11-29T09:26:59.123456Z"));
  CHECK(*parse_log_timestamp("1970-01-01T00:00:01.500000Z") == Approx(1.5));
  CHECK(*parse_log_timestamp("2026-11-29T09:26:00Z") == Approx(1795944360.0));
  CHECK_FALSE(parse_log_timestamp("2026-11-29 09:26:00"));
  CHECK_FALSE(parse_log_timestamp("[rank"));
  CHECK_FALSE(parse_log_timestamp("2026-13-29T09:26:00Z"));
}

TEST_CASE("stack.txt: innermost interesting frame of the main thread", "[triage]") {
  using hanglab::parse_stack_text;
  SECTION("plain gdb bt") {
    const auto f = parse_stack_text(
        "#0  0x00007f3a6f2e57c5 in __GI___libc_read (fd=5, buf=0x7ffd, nbytes=8) at "
        "../sysdeps/unix/sysv/linux/read.c:26\n"
        "#1  0x000055d0c1a3f7d4 in gloo::transport::tcp::Pair::read (this=0x1) at pair.cc:300\n"
        "#2  0x000055d0c1a40b19 in main () at main.cpp:3\n");
    REQUIRE(f);
    CHECK(f->tool == "gdb");
    CHECK(f->frame == "read in gloo::transport::tcp::Pair::read");
    CHECK(f->line == 2);
  }
  SECTION("gdb without debug info prints the demangled signature") {
    const auto f = parse_stack_text(
        "Thread 1 (Thread 0x7f (LWP 10) \"x\"):\n"
        "#0  0x00007f in syscall () from /lib/x86_64-linux-gnu/libc.so.6\n"
        "#1  0x00007f in std::condition_variable::wait(std::unique_lock<std::mutex>&) () from "
        "/lib/x86_64-linux-gnu/libstdc++.so.6\n"
        "#2  0x00007f in c10d::ProcessGroupGloo::AsyncWork::wait(std::chrono::duration<long, std::ratio<1l, 1000l> "
        ">) () from /lib/libtorch_cpu.so\n");
    REQUIRE(f);
    CHECK(f->frame == "c10d::ProcessGroupGloo::AsyncWork::wait");
  }
  SECTION("py-spy dump: MainThread, innermost first") {
    const auto f = parse_stack_text(
        "Process 4101: python3 train.py\nPython v3.10.12 (/usr/bin/python3.10)\n\n"
        "Thread 4109 (idle): \"heartbeat\"\n    wait (threading.py:324)\n    run (train.py:20)\n"
        "Thread 4101 (idle): \"MainThread\"\n"
        "    wait (threading.py:320)\n"
        "    allreduce (torch/distributed/distributed_c10d.py:1536)\n"
        "    train_step (train.py:88)\n");
    REQUIRE(f);
    CHECK(f->tool == "py-spy");
    CHECK(f->frame == "allreduce (torch/distributed/distributed_c10d.py:1536)");
    CHECK(f->line == 9);
  }
  SECTION("a real gdb capture (thread apply all bt): main thread in a condition-variable wait") {
    const auto f = parse_stack_text(read_file(fixture("stacks/gdb_real_cv_wait.txt")));
    REQUIRE(f);
    CHECK(f->frame == "waiter");
    CHECK(f->line == 27);
  }
  SECTION("operator() keeps its name") {
    const auto f = parse_stack_text("#0  0x1 in operator() (__closure=0x2) at main.cpp:7\n");
    REQUIRE(f);
    CHECK(f->frame == "operator()");
  }
  SECTION("nothing usable") { CHECK_FALSE(parse_stack_text("ptrace: Operation not permitted.\n")); }
}

TEST_CASE("print the reports", "[.dump]") {
  for (const char* name : kFixtures) {
    std::cout << "==================== " << name << "\n" << render_text(triage(name)) << "\n";
  }
}

// Developer aid: HANGLAB_TRIAGE_DIRS="dir1:dir2" ./triage_test "[.dir]" prints the
// report of each real run directory (e.g. to compare with a fixture's).
TEST_CASE("print the reports of HANGLAB_TRIAGE_DIRS", "[.dir]") {
  const char* dirs = std::getenv("HANGLAB_TRIAGE_DIRS");
  if (!dirs) return;
  std::stringstream ss(dirs);
  for (std::string dir; std::getline(ss, dir, ':');) {
    if (dir.empty()) continue;
    std::cout << "==================== " << dir << "\n" << render_text(triage_run_dir(dir)) << "\n";
  }
}

// The fixtures below are copies of real runs of the scenarios of the same name.
TEST_CASE("tiny_shm: a DataLoader bus error from a full /dev/shm is shm_exhausted, not data_error", "[triage]") {
  const auto r = triage("tiny_shm");
  CHECK(r.category == "data_loading");
  CHECK(r.cause == "shm_exhausted");
  CHECK(r.missing_ranks == std::vector<int>{1});
  const auto text = render_text(r);
  CHECK(mentions(text, "/dev/shm"));
  CHECK(mentions(text, "shm-size"));
  check_evidence_refs("tiny_shm", r);
}

TEST_CASE("nan_skip: a non-finite loss with no backward phase names the NaN skip", "[triage]") {
  const auto r = triage("nan_skip");
  CHECK(r.category == "collective_mismatch");
  CHECK(r.cause == "nan_skip");
  CHECK(r.missing_ranks == std::vector<int>{2});
  CHECK(r.divergence_step == 5);
  check_evidence_refs("nan_skip", r);
}

TEST_CASE("wrong_master_addr: the store's missing rank tried another MASTER_ADDR", "[triage]") {
  const auto r = triage("wrong_master_addr");
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "wrong_master_addr");
  CHECK(r.phase == "init");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{2});
  check_evidence_refs("wrong_master_addr", r);
}

TEST_CASE("late_joiner: the store's missing rank started after its peers had failed", "[triage]") {
  const auto r = triage("late_joiner");
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "late_joiner");
  CHECK(r.scope == "subset");
  CHECK(r.missing_ranks == std::vector<int>{2});
  check_evidence_refs("late_joiner", r);
}
