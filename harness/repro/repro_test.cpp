// Unit tests of `hanglab repro`'s parts: the cause table (every row runnable or honestly not),
// culprit roles, stated timeouts, the comparison and its refinements, and every real-log corpus
// case's scenarios loading with the scenario loader.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <set>

#include "injector.hpp"
#include "repro/cause_table.hpp"
#include "repro/compare.hpp"
#include "repro/plan.hpp"
#include "run/runner.hpp"
#include "triage/model/causes.hpp"
#include "triage/triage.hpp"
#include "util.hpp"

namespace fs = std::filesystem;
using namespace hanglab;
using namespace hanglab::repro;

namespace {

fs::path corpus_dir() { return fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/reallogs"; }

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("hanglab-repro-test-" + std::to_string(::getpid())) / name;
  fs::create_directories(d);
  return d;
}

TriageResult answer(const std::string& cat, const std::string& cause, int world, std::vector<int> missing,
                    const std::string& phase = "training", const std::string& scope = "subset") {
  TriageResult r;
  r.category = cat;
  r.cause = cause;
  r.world_size = world;
  r.missing_ranks = std::move(missing);
  r.phase = phase;
  r.scope = scope;
  return r;
}

}  // namespace

// Repro follows triage (issue 24 item 5): every answer triage can give (its one list,
// triage/model/causes.hpp) has a row here -- recipes, or what it needs and the missing fault --
// or, for the answers that name no mechanism, a stated reason; and every recipe reproduces a
// listed answer (what the reproduction's triage says).
TEST_CASE("cause table: every answer triage can give has a recipe or a stated reason", "[repro]") {
  for (const auto& c : triage_causes()) {
    const std::string cat(c.category), cause(c.cause);
    INFO(cat << "/" << cause);
    const CauseRow* row = find_cause(cat, cause);
    if (!row) {
      CHECK(!no_recipe_reason(cat, cause).empty());
      continue;
    }
    CHECK(no_recipe_reason(cat, cause).empty());
    CHECK((!row->recipes.empty() || (!row->needs.empty() && !row->missing_fault.empty())));
  }
  // The table's own rows answer with listed pairs, and each recipe's reproduction names one too.
  for (const auto& row : cause_table()) {
    INFO(row.category << "/" << row.cause);
    for (const auto& r : row.recipes) {
      INFO("recipe " << r.id);
      CHECK(listed_cause(r.category, r.cause));
      CHECK(listed_phase(r.phase));
    }
  }
  // The example of the issue: a save that never finishes is a storage stall, which exists.
  const CauseRow* ckpt = find_cause("straggler", "stuck_in_checkpoint");
  REQUIRE(ckpt);
  REQUIRE(!ckpt->recipes.empty());
  CHECK(ckpt->recipes.front().fault == "slow_storage");
}

TEST_CASE("cause table: every row is runnable here or says what it needs and which fault is missing", "[repro]") {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& row : cause_table()) {
    INFO(row.category << "/" << row.cause);
    CHECK(seen.insert({row.category, row.cause}).second);
    if (row.recipes.empty()) {
      CHECK(!row.needs.empty());
      CHECK(!row.missing_fault.empty());
    }
    for (const auto& r : row.recipes) {
      INFO("recipe " << r.id);
      CHECK(find_injector(r.fault) != nullptr);
      CHECK(!r.why.empty());
      CHECK(!r.detector.empty());
      CHECK(!r.category.empty());
      CHECK(!r.cause.empty());
      CHECK((r.targets == "culprit" || r.targets == "all" || r.targets == "node"));
      if (r.targets == "node") CHECK(r.nodes > 1);
      if (r.at_step) CHECK((r.fault_step >= 1 && r.fault_step <= r.steps));
    }
  }
  // GPU-only causes are never mapped to a CPU fault.
  for (const char* c : {"nccl_shm", "ib_error", "efa_error", "cuda_oom", "unique_id_exchange"}) {
    bool found = false;
    for (const auto& row : cause_table())
      if (row.cause == c) {
        found = true;
        CHECK(row.recipes.empty());
      }
    CHECK(found);
  }
  for (const auto& r : absence_recipes()) CHECK(find_injector(r.fault) != nullptr);
}

TEST_CASE("culprit roles survive scaling down", "[repro]") {
  CHECK(role_of(0, 8) == "first");
  CHECK(role_of(7, 8) == "last");
  CHECK(role_of(3, 8) == "middle");
  CHECK(role_of(0, 1) == "only");
  CHECK(role_of(5, 0) == "unknown");
  PlanOptions o;
  {
    Plan p = make_plan(answer("rank_exit", "killed", 8, {7}), {}, o);
    REQUIRE(p.candidates.size() == 2);  // SIGKILL from outside, then the OOM killer's
    CHECK(p.candidates[1].recipe.fault == "oom_rank");
    CHECK(p.candidates[1].rank_why.find("OOM") != std::string::npos);
    CHECK(p.candidates[1].culprits == std::vector<int>{3});
    CHECK(p.role == "last");
    CHECK(p.candidates[0].world == 4);
    CHECK(p.candidates[0].culprits == std::vector<int>{3});
    CHECK(p.candidates[0].role == "last");
  }
  {
    Plan p = make_plan(answer("rank_exit", "killed", 287, {100}), {}, o);
    REQUIRE(!p.candidates.empty());
    CHECK(p.candidates[0].role == "middle");
    CHECK(p.candidates[0].culprits.front() != 0);
  }
  {
    o.world_size = 6;
    Plan p = make_plan(answer("rank_exit", "killed", 8, {0}), {}, o);
    CHECK(p.candidates[0].world == 6);
    CHECK(p.candidates[0].culprits == std::vector<int>{0});
    o.world_size.reset();
  }
  {
    Plan p = make_plan(answer("rank_exit", "killed", 1, {0}, "unknown", "all"), {}, o);
    CHECK(p.role == "only");
    CHECK(p.candidates[0].world == 1);
  }
  {
    // Every rank failed alike: the first failure is order, not a culprit.
    TriageResult r = answer("network", "wrong_ifname", 9, {}, "init", "all");
    r.first_failure = Failure{8, 0, "Unable to find address", "a.log:3"};
    Plan p = make_plan(r, {}, o);
    CHECK(p.role == "all");
    REQUIRE(p.candidates.size() == 1);
    CHECK(p.candidates[0].fault_ranks.size() == 4);
  }
  {
    // The store host that timed out waiting for its clients is a witness, not the culprit.
    TriageResult r = answer("rendezvous", "rendezvous_timeout", 8, {}, "init", "subset");
    r.first_failure = Failure{0, 0, "Timed out after 601 seconds waiting for clients. 1/8 clients joined.", "a.log:1"};
    CHECK(culprits_of(r).empty());
    r.category = "rank_exit";
    r.cause = "crashed";
    CHECK(culprits_of(r) == std::vector<int>{0});
  }
  {
    // Every rank died of the same signal: a fault that may take every rank takes them all.
    Plan p = make_plan(answer("rank_exit", "segfault", 2, {0, 1}, "unknown", "all"), {}, o);
    CHECK(p.role == "all");
    REQUIRE(p.candidates.size() == 1);
    CHECK(p.candidates[0].fault_ranks == std::vector<int>{0, 1});
    // ... a mismatch never: it is defined against peers.
    Plan m = make_plan(answer("collective_mismatch", "mismatched_collective", 4, {0, 1, 2, 3}, "training", "all"), {}, o);
    REQUIRE(m.candidates.size() == 1);
    CHECK(m.candidates[0].fault_ranks.size() == 1);
  }
}

TEST_CASE("a kill recipe sends the signal the incident's culprit died of", "[repro]") {
  PlanOptions o;
  TriageResult r = answer("rank_exit", "crashed", 4, {2});
  Plan plain = make_plan(r, {}, o);
  REQUIRE(!plain.candidates.empty());
  CHECK(plain.candidates[0].keys.find("SIGABRT") != std::string::npos);  // the recipe's own
  RankTimeline t;
  t.rank = 2;
  t.signal = 11;
  r.per_rank.push_back(t);
  Plan p = make_plan(r, {}, o);
  CHECK(p.candidates[0].keys.find("SIGSEGV") != std::string::npos);
  CHECK(render_scenario(p, p.candidates[0], o).find("signal = \"SIGSEGV\"") != std::string::npos);
}

TEST_CASE("GPU-only and unknown causes say plainly why they are not reproducible", "[repro]") {
  PlanOptions o;
  Plan p = make_plan(answer("resource_limit", "nccl_shm", 0, {}, "init", "unknown"), {}, o);
  CHECK(p.candidates.empty());
  CHECK(p.not_here.find("not reproducible here: needs") == 0);
  CHECK(p.not_here.find("missing fault: nccl_shm") != std::string::npos);
  Plan u = make_plan(answer("unknown", "unknown", 4, {}, "training", "unknown"), {}, o);
  CHECK(u.candidates.empty());
  CHECK(u.not_here.find("names no cause") != std::string::npos);
  Plan x = make_plan(answer("network", "quantum_foam", 4, {}, "training", "all"), {}, o);
  CHECK(x.candidates.empty());
  CHECK(x.not_here.find("missing fault: quantum_foam") != std::string::npos);
}

TEST_CASE("a rank missing by absence gives one candidate per mechanism, ranked by its liveness", "[repro]") {
  PlanOptions o;
  TriageResult r = answer("unknown", "unknown", 4, {1});
  Plan p = make_plan(r, {}, o);
  REQUIRE(p.absence);
  REQUIRE(p.candidates.size() == 3);
  CHECK(p.candidates[0].recipe.fault == "kill_rank");
  RankTimeline t;
  t.rank = 1;
  t.liveness = "hung";
  r.per_rank.push_back(t);
  Plan q = make_plan(r, {}, o);
  REQUIRE(q.candidates.size() == 3);
  CHECK(q.candidates[0].recipe.fault == "freeze_rank");
  CHECK(q.candidates[2].recipe.fault == "kill_rank");
  for (const auto& c : q.candidates) CHECK(!c.rank_why.empty());
}

TEST_CASE("stated timeouts are read with the line that states them", "[repro]") {
  const fs::path d = scratch("timeouts");
  std::ofstream(d / "rank7.log") << "noise\n"
                                 << "[Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=923, "
                                    "OpType=REDUCE, Timeout(ms)=1800000) ran for 1806745 milliseconds before timing out.\n"
                                 << "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients.\n";
  std::ofstream(d / "notes.md") << "Timeout(ms)=5\n";
  const auto t = stated_timeouts({d});
  REQUIRE(t.size() == 2);  // the setting, not how long the call ran; nothing from notes
  CHECK(t[0].what == "collective");
  CHECK(t[0].seconds == Approx(1800));
  CHECK(t[0].ref == "rank7.log:2");
  CHECK(t[1].what == "store");
  CHECK(t[1].seconds == Approx(601));
}

TEST_CASE("comparison: category, cause, role, phase and scope decide, and refinements need their fact", "[repro]") {
  PlanOptions o;
  Plan p = make_plan(answer("rank_exit", "segfault", 45, {44}, "training", "subset"), {}, o);
  REQUIRE(p.candidates.size() == 1);
  const Candidate& c = p.candidates[0];
  Observed obs;
  obs.reader = "run record";
  obs.answer = answer("rank_exit", "crashed", 4, {3}, "training", "subset");
  RankTimeline t;
  t.rank = 3;
  t.signal = 11;
  obs.answer.per_rank.push_back(t);
  obs.detectors = {"exit_monitor", "backend_error"};
  Comparison ok = compare_one(p, c, obs);
  CHECK(ok.reproduced);
  CHECK(ok.line().find("reproduced (") == 0);
  // Without the signal the trace's "crashed" is no segfault.
  obs.answer.per_rank[0].signal = 6;
  Comparison no = compare_one(p, c, obs);
  CHECK(!no.reproduced);
  CHECK(no.line().find("not reproduced: differs in cause") == 0);
  // The wrong rank's role.
  obs.answer.per_rank[0].signal = 11;
  obs.answer.missing_ranks = {0};
  obs.answer.per_rank[0].rank = 0;
  Comparison role = compare_one(p, c, obs);
  CHECK(!role.reproduced);
  CHECK(role.line().find("culprit role (incident last, reproduction first)") != std::string::npos);
  // Either reader may agree; the line says which.
  Observed logs = obs;
  logs.reader = "logs";
  logs.answer.missing_ranks = {3};
  logs.answer.per_rank[0].rank = 3;
  Comparison both = compare(p, c, {obs, logs});
  CHECK(both.reproduced);
  CHECK(both.reader == "logs");
}

TEST_CASE("every corpus case: a plan, and each candidate's scenario loads with the scenario loader", "[repro]") {
  REQUIRE(fs::is_directory(corpus_dir()));
  const fs::path out = scratch("corpus");
  // How many candidates there are is no fact of the design (an honest unknown has none); what is:
  // an answer whose cause has a recipe in the cause table, or an unknown that names absent ranks
  // (the absence recipes), gets a candidate; every other case says why not.
  int cases = 0, with_candidates = 0, not_here = 0, with_recipe = 0;
  for (const auto& e : fs::directory_iterator(corpus_dir())) {
    if (!e.is_directory()) continue;
    ++cases;
    INFO("case " << e.path().filename().string());
    const TriageResult r = triage_paths({e.path()});
    PlanOptions o;
    const Plan p = make_plan(r, {e.path()}, o);
    const CauseRow* row = find_cause(r.category, r.cause);
    const bool recipe = (row && !row->recipes.empty()) ||
                        (!row && (r.category == "unknown" || r.category.empty()) && !culprits_of(r).empty());
    INFO("triage: " << r.category << "/" << r.cause);
    if (recipe) {
      ++with_recipe;
      CHECK(!p.candidates.empty());
    }
    if (p.candidates.empty()) {
      ++not_here;
      CHECK(!p.not_here.empty());
      continue;
    }
    ++with_candidates;
    for (const auto& c : p.candidates) {
      const std::string text = render_scenario(p, c, o);
      CHECK(text.rfind("# Reproduces: incident " + p.incident, 0) == 0);
      CHECK(text.find("# Expected:") != std::string::npos);
      const fs::path f = out / (c.name + ".toml");
      write_file(f, text);
      INFO(text);
      PreparedScenario ps;
      REQUIRE_NOTHROW(ps = prepare_scenario(f));
      CHECK(ps.scenario.name == c.name);
      CHECK(ps.scenario.workload.world_size == c.world);
    }
  }
  CHECK(cases >= 200);
  CHECK(with_candidates >= with_recipe);
  CHECK(with_recipe > 0);
  fs::remove_all(out.parent_path());
}

TEST_CASE("the incident's phase: reached through a phase trigger, or said plainly why not", "[repro]") {
  PlanOptions o;
  // A crash in the shutdown phase: the kill waits for the culprit's own line in that phase.
  TriageResult r = answer("rank_exit", "crashed", 8, {}, "shutdown");
  r.first_failure = Failure{0, 0, "exitcode -6", "a.log:1"};
  Plan p = make_plan(r, {}, o);
  REQUIRE(p.candidates.size() == 1);
  const Candidate& c = p.candidates[0];
  CHECK(c.phase == "shutdown");
  CHECK(c.fault_ranks == std::vector<int>{0});
  CHECK(c.at_output == "[rank 0] lingering after the training loop");
  const std::string s = render_scenario(p, c, o);
  CHECK(s.find("after_loop = \"linger\"") != std::string::npos);
  CHECK(s.find("at_output = \"[rank 0] lingering after the training loop\"") != std::string::npos);
  CHECK(s.find("at_step") == std::string::npos);
  CHECK(s.find("phase = \"shutdown\"") != std::string::npos);
  CHECK(s.find("outcome = \"hang\"") != std::string::npos);  // the peers linger until the watchdog
  // The same cause in training keeps the recipe's step trigger.
  Plan t = make_plan(answer("rank_exit", "crashed", 4, {2}), {}, o);
  CHECK(t.candidates[0].phase == "training");
  CHECK(t.candidates[0].at_output.empty());
  CHECK(t.candidates[0].phase_note.empty());
  // A mismatch during start-up: the hook acts in training steps only; said, not faked.
  Plan m = make_plan(answer("collective_mismatch", "mismatched_collective", 4, {1}, "init"), {}, o);
  REQUIRE(m.candidates.size() == 1);
  CHECK(m.candidates[0].phase == "training");
  CHECK(m.candidates[0].at_output.empty());
  CHECK(m.candidates[0].phase_note.find("cannot act in the incident's init phase") != std::string::npos);
  CHECK(m.candidates[0].phase_note.find("missing fault: mismatched_collective in the init phase") !=
        std::string::npos);
  // Every phase trigger names faults the catalog has.
  for (const auto& pt : phase_triggers())
    for (const auto& f : pt.faults) CHECK(find_injector(f) != nullptr);
}

TEST_CASE("a scheduler's time limit runs under srun with its time limit", "[repro]") {
  PlanOptions o;
  Plan p = make_plan(answer("resource_limit", "time_limit", 0, {}, "unknown", "all"), {}, o);
  REQUIRE(p.candidates.size() == 1);
  const Candidate& c = p.candidates[0];
  CHECK(c.recipe.launcher == "srun");
  CHECK(c.world >= 2);
  const std::string s = render_scenario(p, c, o);
  CHECK(s.find("launcher = \"srun\"") != std::string::npos);
  CHECK(s.find("time_limit_min = 1") != std::string::npos);
  const fs::path f = scratch("time_limit") / (c.name + ".toml");
  write_file(f, s);
  PreparedScenario ps;
  REQUIRE_NOTHROW(ps = prepare_scenario(f));
  CHECK(ps.scenario.workload.world_size == c.world);
}

namespace {

// An answer whose ranks ran `per` to a host, hosts named h0, h1, ... in rank order.
TriageResult on_hosts(TriageResult r, int per) {
  for (int k = 0; k < r.world_size; ++k) {
    RankTimeline t;
    t.rank = k;
    t.host = "h" + std::to_string(k / per);
    r.per_rank.push_back(t);
  }
  return r;
}

PreparedScenario loads(const Plan& p, const Candidate& c, const PlanOptions& o, const std::string& name) {
  const fs::path f = scratch(name) / (c.name + ".toml");
  write_file(f, render_scenario(p, c, o));
  return prepare_scenario(f);
}

}  // namespace

TEST_CASE("node split: the incident's hosts give the split, the culprit's node and whether it is whole", "[repro]") {
  // No hosts, or one host: no split, nothing changes.
  CHECK(node_split(answer("rank_exit", "killed", 8, {7}), {7}).nodes == 0);
  CHECK(!node_split(on_hosts(answer("rank_exit", "killed", 8, {7}), 8), {7}).known());
  // 4 hosts x 8: one rank on the last node; the whole last node; the store's node; a middle one.
  const TriageResult r = on_hosts(answer("rank_exit", "killed", 32, {}), 8);
  NodeSplit s = node_split(r, {30});
  CHECK(s.nodes == 4);
  CHECK(s.ranks_per_node == 8);
  CHECK(s.culprit_nodes == std::vector<int>{3});
  CHECK(s.node_role == "last");
  CHECK(!s.whole_node);
  s = node_split(r, {24, 25, 26, 27, 28, 29, 30, 31});
  CHECK(s.whole_node);
  CHECK(s.describe() == "4 nodes x 8 rank(s); culprit: the whole node(s) 3 (last)");
  s = node_split(r, {3});
  CHECK(s.node_role == "first");
  CHECK(s.describe().find("store's host") != std::string::npos);
  CHECK(node_split(r, {9}).node_role == "middle");
  CHECK(node_split(r, {0, 8, 16, 24}).node_role == "all");
  // Node 0 is rank 0's host whatever the hosts are called; a culprit without a host: role unknown.
  TriageResult named = r;
  for (auto& pr : named.per_rank) pr.host = pr.rank < 8 ? "zz-store" : "aa-" + std::to_string(pr.rank / 8);
  CHECK(node_split(named, {1}).hosts.front() == "zz-store");
  CHECK(node_split(named, {1}).node_role == "first");
  named.per_rank[5].host.clear();
  CHECK(node_split(named, {5}).node_role.empty());
  CHECK(!node_split(named, {8, 9, 10, 11, 12, 13, 14, 15}).whole_node);  // rank 5's host unknown: not judged
  // ...and not known either way: a comparison leaves "whole node or one rank of it" out.
  CHECK(!node_split(named, {30}).whole_known);
  CHECK(node_split(named, {30}).node_role == "last");
  CHECK(node_split(r, {30}).whole_known);
}

TEST_CASE("node split: scaled down keeping the culprit node's role, and compared", "[repro]") {
  PlanOptions o;
  {
    // One rank (not the last) on the last of 4 nodes: 2 nodes x 2, rank 2 on node 1.
    Plan p = make_plan(on_hosts(answer("rank_exit", "killed", 32, {26}), 8), {}, o);
    REQUIRE(!p.candidates.empty());
    const Candidate& c = p.candidates[0];
    CHECK(c.nodes == 2);
    CHECK(c.ranks_per_node == 2);
    CHECK(c.world == 4);
    CHECK(c.culprits == std::vector<int>{2});
    CHECK(c.role == "middle");
    CHECK(c.node_role == "last");
    const std::string text = render_scenario(p, c, o);
    CHECK(text.find("[topology]\nnodes = 2\nranks_per_node = 2\n") != std::string::npos);
    CHECK(text.find("#   Nodes: incident 4 nodes x 8 rank(s); culprit: one rank on node(s) 3 (last)") !=
          std::string::npos);
    CHECK(text.find("missing_ranks = [2]") != std::string::npos);
    CHECK(loads(p, c, o, "split1").scenario.topology.node_of(2) == 1);
    // Compared: the reproduction's culprit on the last node (from its [topology]) matches.
    Observed obs;
    obs.reader = "run record";
    obs.answer = answer("rank_exit", "killed", 4, {2});
    Comparison ok = compare_one(p, c, obs);
    CHECK(ok.reproduced);
    CHECK(ok.line().find("culprit node last (one rank of a node)") != std::string::npos);
    // The reproduction's own hosts decide where it has them: rank 2 on the store's node differs.
    for (int k = 0; k < 4; ++k) {
      RankTimeline t;
      t.rank = k;
      t.host = k == 3 ? "node1" : "node0";
      obs.answer.per_rank.push_back(t);
    }
    Comparison no = compare_one(p, c, obs);
    CHECK(!no.reproduced);
    CHECK(no.line().find("culprit node (incident last (one rank of a node), reproduction first") != std::string::npos);
  }
  {
    // A whole middle node frozen: 3 nodes, every rank of node 1.
    Plan p = make_plan(on_hosts(answer("straggler", "frozen", 32, {8, 9, 10, 11, 12, 13, 14, 15}), 8), {}, o);
    REQUIRE(!p.candidates.empty());
    const Candidate& c = p.candidates[0];
    CHECK(c.nodes == 3);
    CHECK(c.culprits == std::vector<int>{2, 3});
    CHECK(c.fault_ranks == std::vector<int>{2, 3});
    CHECK(c.node_role == "middle");
    CHECK(loads(p, c, o, "split2").scenario.workload.world_size == 6);
  }
  {
    // A rank on the store's node (not rank 0): rank 1 of node 0.
    Plan p = make_plan(on_hosts(answer("rank_exit", "killed", 16, {3}), 8), {}, o);
    CHECK(p.candidates[0].culprits == std::vector<int>{1});
    CHECK(p.candidates[0].node_role == "first");
  }
  {
    // A node fault takes the culprit's node; one that cannot take the store's node says so.
    Plan p = make_plan(on_hosts(answer("rank_exit", "node_failure", 16, {0, 1, 2, 3, 4, 5, 6, 7}), 8), {}, o);
    REQUIRE(p.candidates[0].recipe.targets == "node");
    CHECK(p.candidates[0].fault_nodes == std::vector<int>{0});
    CHECK(p.candidates[0].culprits == std::vector<int>{0, 1});
    CHECK(render_scenario(p, p.candidates[0], o).find("nodes = [0]\n") != std::string::npos);
    Plan st = make_plan(on_hosts(answer("rendezvous", "rendezvous_timeout", 16, {0, 1, 2, 3, 4, 5, 6, 7}), 8), {}, o);
    REQUIRE(st.candidates[0].recipe.fault == "store_unreachable");
    CHECK(st.candidates[0].fault_nodes == std::vector<int>{1});
    CHECK(st.candidates[0].node_note.find("cannot take node 0") != std::string::npos);
  }
  {
    // Every rank of every node died alike: every rank here, on every node.
    std::vector<int> all;
    for (int k = 0; k < 16; ++k) all.push_back(k);
    Plan p = make_plan(on_hosts(answer("rank_exit", "killed", 16, all, "training", "all"), 8), {}, o);
    CHECK(p.split.node_role == "all");
    CHECK(p.candidates[0].fault_ranks == std::vector<int>{0, 1, 2, 3});
    CHECK(p.candidates[0].role == "all");
    CHECK(p.candidates[0].node_role == "all");
  }
  {
    // A cgroup fault runs inside a node too (the node wrapper joins the network namespace
    // only, so the host's /sys/fs/cgroup stays in view): it keeps the split.
    Plan p = make_plan(on_hosts(answer("rank_exit", "oom", 16, {3}), 8), {}, o);
    REQUIRE(p.candidates[0].recipe.fault == "oom_rank");
    CHECK(p.candidates[0].nodes > 1);
    CHECK_FALSE(p.candidates[0].node_role.empty());
    CHECK(render_scenario(p, p.candidates[0], o).find("[topology]") != std::string::npos);
  }
  {
    // No hosts: single host as before.
    Plan p = make_plan(answer("rank_exit", "killed", 32, {26}), {}, o);
    CHECK(p.candidates[0].nodes == 1);
    CHECK(p.candidates[0].node_note.empty());
    CHECK(render_scenario(p, p.candidates[0], o).find("[topology]") == std::string::npos);
  }
}
