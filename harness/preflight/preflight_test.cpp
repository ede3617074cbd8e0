#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "preflight/env_lint.hpp"
#include "preflight/job.hpp"
#include "preflight/node_local.hpp"
#include "preflight/pairwise.hpp"
#include "preflight/preflight.hpp"
#include "preflight/rendezvous.hpp"
#include "preflight/result.hpp"
#include "preflight/storage.hpp"
#include "util.hpp"

using namespace hanglab::preflight;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Env = std::map<std::string, std::string>;

fs::path temp_root(const std::string& tag) {
  fs::path p = fs::temp_directory_path() / ("hanglab-preflight-test-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void put(const fs::path& f, const std::string& text) {
  fs::create_directories(f.parent_path());
  std::ofstream(f) << text;
}

// A TCP port nobody holds right now (bound to 0, read, released).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("exit code: fail over skip over pass") {
  Report r;
  r.checks.push_back(CheckResult{"a", 0});
  CHECK(r.exit_code() == 0);
  r.checks.push_back(CheckResult{"b", 1, "", Status::kSkip});
  CHECK(r.exit_code() == 4);
  r.checks.push_back(CheckResult{"c", 1, "", Status::kFail});
  CHECK(r.exit_code() == 1);
}

TEST_CASE("a report survives JSON, and its JUnit names every failure") {
  Report r;
  r.nodes = 2;
  r.checks.push_back(CheckResult{"shm.capacity", 1, "n1", Status::kFail, "64.0 KiB free", ">= 8.0 MiB", "x <y>", "", 0.25});
  r.checks.push_back(CheckResult{"gpu.devices", 0, "n0", Status::kSkip, "0", ">= 1", "", "a GPU", 0.1});
  const json j = to_json(r);
  CHECK(j["checks"][0]["name"] == "shm.capacity");
  CHECK(j["checks"][0]["status"] == "fail");
  CHECK(j["preflight"]["exit_code"] == 1);
  for (const char* k : {"name", "node", "status", "measured", "rule", "detail"}) CHECK(j["checks"][0].contains(k));
  const Report back = report_from_json(j);
  REQUIRE(back.checks.size() == 2);
  CHECK(back.checks[1].needs == "a GPU");
  CHECK(back.checks[0].status == Status::kFail);
  const std::string x = render_junit(r);
  CHECK(x.find("failures=\"1\"") != std::string::npos);
  CHECK(x.find("x &lt;y&gt;") != std::string::npos);
  CHECK(x.find("<skipped") != std::string::npos);
  const std::string t = render_text(r);
  CHECK(t.find("FAIL  shm.capacity") != std::string::npos);
  CHECK(t.find("preflight: FAIL (1 failed") != std::string::npos);
  CHECK_THROWS(report_from_json(json{{"preflight", {{"nodes", 1}}}, {"checks", {{{"name", "a"}, {"node", 0}, {"status", "bogus"}}}}}));
}

TEST_CASE("byte counts take binary units, and nothing else") {
  CHECK(parse_bytes("4096", "--x") == 4096);
  CHECK(parse_bytes("64MiB", "--x") == 64ll << 20);
  CHECK(parse_bytes("1.5GiB", "--x") == 3ll << 29);
  CHECK(parse_bytes("512k", "--x") == 512ll << 10);
  CHECK_THROWS_AS(parse_bytes("lots", "--x"), UsageError);
  CHECK_THROWS_AS(parse_bytes("-5", "--x"), UsageError);
  CHECK_THROWS_AS(parse_bytes("5 parsecs", "--x"), UsageError);
  CHECK_THROWS_AS(parse_bytes("", "--x"), UsageError);
}

TEST_CASE("the job is read from whichever launcher started preflight") {
  Options o;
  SECTION("a job script: NODE_RANK/NNODES") {
    auto j = resolve_job({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, {"NNODES", "4"}, {"NODE_RANK", "2"},
                          {"WORLD_SIZE", "16"}},
                         o);
    CHECK(j.node_rank == 2);
    CHECK(j.nnodes == 4);
    CHECK(j.ranks_per_node == 4);
    CHECK(j.launcher == "env");
  }
  SECTION("srun --ntasks-per-node=1") {
    auto j = resolve_job({{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "1234"}, {"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "1"},
                          {"SLURM_NTASKS", "3"}},
                         o);
    CHECK(j.node_rank == 1);
    CHECK(j.nnodes == 3);
    CHECK(j.launcher == "slurm");
  }
  SECTION("mpirun -npernode 1") {
    auto j = resolve_job({{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "1234"}, {"OMPI_COMM_WORLD_RANK", "0"},
                          {"OMPI_COMM_WORLD_SIZE", "2"}},
                         o);
    CHECK(j.nnodes == 2);
    CHECK(j.launcher == "mpirun");
  }
  SECTION("an Indexed Job: JOB_COMPLETION_INDEX with NNODES") {
    auto j = resolve_job({{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "1234"}, {"NNODES", "2"}, {"JOB_COMPLETION_INDEX", "1"}}, o);
    CHECK(j.node_rank == 1);
    CHECK(j.launcher == "k8s-indexed");
  }
  SECTION("torchrun's PET_ variables, and its elastic range refused") {
    auto j = resolve_job({{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "1234"}, {"PET_NNODES", "2:2"}, {"PET_NODE_RANK", "1"}}, o);
    CHECK(j.nnodes == 2);
    CHECK_THROWS_WITH(resolve_job({{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "1"}, {"PET_NNODES", "1:4"}, {"PET_NODE_RANK", "0"}}, o),
                      Catch::Contains("elastic range"));
  }
  SECTION("a torchrun worker needs --port, and runs on local rank 0") {
    Env e{{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "29500"}, {"TORCHELASTIC_RUN_ID", "x"}, {"GROUP_RANK", "1"},
          {"GROUP_WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}};
    CHECK_THROWS_WITH(resolve_job(e, o), Catch::Contains("--port"));
    o.port = 29600;
    auto j = resolve_job(e, o);
    CHECK(j.under_torchrun);
    CHECK(j.rdzv_port == 29600);
    CHECK(j.ranks_per_node == 4);
  }
  SECTION("one node needs nothing") {
    auto j = resolve_job({}, o);
    CHECK(j.nnodes == 1);
    CHECK(j.master_port == 29500);
    CHECK(j.master_defaulted);
  }
  SECTION("malformed values are usage errors naming the variable") {
    CHECK_THROWS_WITH(resolve_job({{"MASTER_ADDR", "a"}, {"MASTER_PORT", "abc"}, {"NNODES", "2"}, {"NODE_RANK", "0"}}, o),
                      Catch::Contains("MASTER_PORT=abc"));
    CHECK_THROWS_WITH(resolve_job({{"MASTER_ADDR", "a"}, {"MASTER_PORT", "70000"}, {"NNODES", "2"}, {"NODE_RANK", "0"}}, o),
                      Catch::Contains("MASTER_PORT"));
    CHECK_THROWS_WITH(resolve_job({{"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}, {"NNODES", "2"}, {"NODE_RANK", "2"}}, o),
                      Catch::Contains("not below the node count"));
    CHECK_THROWS_WITH(resolve_job({{"NNODES", "2"}, {"NODE_RANK", "0"}}, o), Catch::Contains("MASTER_ADDR is not set"));
    CHECK_THROWS_WITH(resolve_job({{"NODE_RANK", "0"}}, o), Catch::Contains("NNODES"));
    CHECK_THROWS_WITH(resolve_job({{"WORLD_SIZE", " 4"}}, o), Catch::Contains("WORLD_SIZE"));
    CHECK_THROWS_AS(resolve_job({{"MASTER_ADDR", "has space"}}, o), UsageError);
  }
}

TEST_CASE("interface variables are matched as each library matches them") {
  const std::vector<std::string> have = {"lo", "eth0", "eth1", "docker0", "ib0"};
  CHECK(nccl_ifname_matches("eth", have) == std::vector<std::string>{"eth0", "eth1"});
  CHECK(nccl_ifname_matches("=eth", have).empty());
  CHECK(nccl_ifname_matches("=eth1", have) == std::vector<std::string>{"eth1"});
  CHECK(nccl_ifname_matches("^lo,docker", have) == std::vector<std::string>{"eth0", "eth1", "ib0"});
  CHECK(gloo_ifnames("eth0,eth1") == std::vector<std::string>{"eth0", "eth1"});
}

TEST_CASE("env.lint finds the settings that silently do something else") {
  Options o;
  auto problems = [&](Env e) {
    e["MASTER_ADDR"] = "n0";
    e["MASTER_PORT"] = "1";
    return lint_problems(resolve_job(e, o));
  };
  auto has = [](const std::vector<LintProblem>& ps, const std::string& needle, bool fail) {
    for (const auto& p : ps)
      if (p.text.find(needle) != std::string::npos && p.fail == fail) return true;
    return false;
  };
  CHECK(problems({}).empty());
  CHECK(problems({{"NCCL_SOCKET_IFNAME", "eth0"}, {"GLOO_SOCKET_IFNAME", "eth0"}, {"NCCL_VERSION", "2.21"}}).empty());
  CHECK(has(problems({{"GLOO_SOCKET_IFNAME", "^lo,docker"}}), "NCCL's syntax", true));
  CHECK(has(problems({{"NCCL_SOCKET_IFNAM", "eth0"}}), "did you mean NCCL_SOCKET_IFNAME", true));
  CHECK(has(problems({{"TORCH_NCCL_BLOKING_WAIT", "1"}}), "did you mean TORCH_NCCL_BLOCKING_WAIT", true));
  CHECK(has(problems({{"NCCL_TOTALLY_MADE_UP_KNOB", "1"}}), "not a variable", false));
  CHECK(has(problems({{"NCCL_ASYNC_ERROR_HANDLING", "1"}}), "deprecated", false));
  CHECK(has(problems({{"NCCL_ASYNC_ERROR_HANDLING", "1"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}}), "conflict", true));
  CHECK(has(problems({{"RANK", "3"}, {"GROUP_RANK", "1"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}}),
            "GROUP_RANK 1 x LOCAL_WORLD_SIZE 2 + LOCAL_RANK 0 = 2", true));
  CHECK(has(problems({{"WORLD_SIZE", "8"}, {"NNODES", "2"}, {"NODE_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}}),
            "WORLD_SIZE=8 but 2 nodes x 2 ranks", true));
  CHECK(edit_distance("NCCL_PROTO", "NCCL_PROT") == 1);
}

TEST_CASE("effective CPUs: affinity, lowered by every CFS quota up the cgroup tree") {
  const fs::path root = temp_root("cpu");
  SECTION("cgroup v1, a quota on the process's own group") {
    put(root / "proc/self/cgroup", "4:memory:/job\n1:cpu,cpuacct:/job/rank0\n0::/\n");
    put(root / "proc/self/mountinfo",
        "30 20 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
        "31 20 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
    put(root / "sys/fs/cgroup/cpu,cpuacct/job/rank0/cpu.cfs_quota_us", "50000\n");
    put(root / "sys/fs/cgroup/cpu,cpuacct/job/rank0/cpu.cfs_period_us", "100000\n");
    put(root / "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
    put(root / "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
    std::string how;
    CHECK(effective_cpus(root.string(), 8, how) == Approx(0.5));
    CHECK(how.find("cfs_quota_us 50000") != std::string::npos);
  }
  SECTION("cgroup v2, the tighter limit of a parent wins") {
    put(root / "proc/self/cgroup", "0::/a/b\n");
    put(root / "proc/self/mountinfo", "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    put(root / "sys/fs/cgroup/a/b/cpu.max", "max 100000\n");
    put(root / "sys/fs/cgroup/a/cpu.max", "150000 100000\n");
    std::string how;
    CHECK(effective_cpus(root.string(), 4, how) == Approx(1.5));
  }
  SECTION("no quota anywhere: the affinity") {
    put(root / "proc/self/cgroup", "0::/\n");
    put(root / "proc/self/mountinfo", "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    std::string how;
    CHECK(effective_cpus(root.string(), 3, how) == 3);
  }
  fs::remove_all(root);
}

TEST_CASE("memory headroom under cgroup limits, and logind's RemoveIPC") {
  const fs::path root = temp_root("mem");
  put(root / "proc/self/cgroup", "4:memory:/job\n");
  put(root / "proc/self/mountinfo", "31 20 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
  put(root / "sys/fs/cgroup/memory/job/memory.limit_in_bytes", "1073741824\n");
  put(root / "sys/fs/cgroup/memory/job/memory.usage_in_bytes", "805306368\n");
  put(root / "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put(root / "sys/fs/cgroup/memory/memory.usage_in_bytes", "1\n");
  put(root / "proc/meminfo", "MemTotal: 100 kB\nMemAvailable:    2048 kB\n");
  std::string how;
  REQUIRE(cgroup_memory_headroom(root.string(), how));
  CHECK(*cgroup_memory_headroom(root.string(), how) == 268435456.0);
  CHECK(*mem_available(root.string()) == 2048.0 * 1024);
  std::string where;
  CHECK(logind_remove_ipc(root.string(), where));  // systemd's default
  put(root / "etc/systemd/logind.conf", "[Login]\n#RemoveIPC=yes\nRemoveIPC=no\n");
  CHECK_FALSE(logind_remove_ipc(root.string(), where));
  put(root / "etc/systemd/logind.conf.d/90-x.conf", "[Login]\nRemoveIPC=yes\n");
  CHECK(logind_remove_ipc(root.string(), where));
  CHECK(where.find("90-x.conf") != std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("the shm need is computed from the job's loaders (and NCCL's share)") {
  Options o;
  o.loader_workers = 2;
  o.batch_bytes = 8 << 20;
  o.prefetch = 2;
  auto j = resolve_job({{"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}, {"NNODES", "1"}, {"NODE_RANK", "0"}, {"WORLD_SIZE", "4"}}, o);
  CHECK(shm_need(j, o).bytes == 4.0 * 2 * 2 * (8 << 20));
  o.backend = "nccl";
  j = resolve_job({{"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}, {"NNODES", "1"}, {"NODE_RANK", "0"}, {"WORLD_SIZE", "4"}}, o);
  CHECK(shm_need(j, o).bytes == 4.0 * 2 * 2 * (8 << 20) + 4.0 * 3 * 2 * (4 << 20));
  Options none;
  CHECK_FALSE(shm_need(resolve_job({}, none), none).known);
}

TEST_CASE("pairwise verdicts name the node every failing path touches") {
  Options o;
  std::vector<PeerEndpoint> nodes;
  for (int n = 0; n < 3; ++n) nodes.push_back({n, "h" + std::to_string(n), "eth0", "10.0.0." + std::to_string(n + 1), 1, 1, 9000});
  auto good = [](int a, int b) {
    PairResult p;
    p.from = a;
    p.to = b;
    p.reach = "ok";
    p.small_sent = p.small_recv = 3;
    p.large_sent = p.large_recv = 16;
    p.loss_sent = p.loss_recv = 50;
    p.probe_size = 8972;
    return p;
  };
  std::vector<PairResult> pairs;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      if (a != b) pairs.push_back(good(a, b));
  auto status = [](const std::vector<CheckResult>& rs, const std::string& name, int node) {
    for (const auto& r : rs)
      if (r.name == name && r.node == node) return r.status;
    return Status::kSkip;
  };
  SECTION("healthy: all pass") {
    const auto rs = judge_pairs(pairs, nodes, o, 1);
    for (const auto& r : rs) CHECK(r.status == Status::kPass);
    CHECK(rs.size() == 9);
  }
  SECTION("a blackholed path MTU to node 1") {
    for (auto& p : pairs)
      if (p.from == 1 || p.to == 1) p.large_recv = 0;
    const auto rs = judge_pairs(pairs, nodes, o, 1);
    CHECK(status(rs, "net.mtu", 1) == Status::kFail);
    CHECK(status(rs, "net.mtu", 0) == Status::kPass);
    CHECK(status(rs, "net.mtu", 2) == Status::kPass);
  }
  SECTION("loss on node 2's links") {
    for (auto& p : pairs)
      if (p.from == 2 || p.to == 2) p.loss_recv = 25;
    const auto rs = judge_pairs(pairs, nodes, o, 1);
    CHECK(status(rs, "net.loss", 2) == Status::kFail);
    CHECK(status(rs, "net.loss", 0) == Status::kPass);
  }
  SECTION("two nodes, node 1's address unreachable inbound: node 1 is named") {
    nodes.pop_back();
    std::vector<PairResult> two = {good(0, 1), good(1, 0)};
    two[0].reach = "timeout";
    const auto rs = judge_pairs(two, nodes, o, 1);
    CHECK(status(rs, "net.reach", 1) == Status::kFail);
    CHECK(status(rs, "net.reach", 0) == Status::kPass);
  }
  SECTION("two nodes and a symmetric fault: both named, and said to be ambiguous") {
    nodes.pop_back();
    std::vector<PairResult> two = {good(0, 1), good(1, 0)};
    two[0].large_recv = two[1].large_recv = 0;
    const auto rs = judge_pairs(two, nodes, o, 1);
    CHECK(status(rs, "net.mtu", 0) == Status::kFail);
    CHECK(status(rs, "net.mtu", 1) == Status::kFail);
  }
  SECTION("one lossy path measured, the lossy node's own report missing: the node without a clean path is named") {
    // Node 1's report never reached node 0 (its link loses 20 %): only node 0's path to it and node
    // 2's path to node 0 were measured.
    std::vector<PairResult> partial = {good(0, 1), good(2, 0)};
    partial[0].loss_recv = 30;
    const auto rs = judge_pairs(partial, nodes, o, 1);
    CHECK(status(rs, "net.loss", 1) == Status::kFail);
    CHECK(status(rs, "net.loss", 0) == Status::kPass);
    CHECK(status(rs, "net.loss", 2) == Status::kPass);
  }
  SECTION("random loss alone is not a blackhole: some large datagrams come back") {
    for (auto& p : pairs)
      if (p.from == 1 || p.to == 1) {
        p.large_recv = 6;
        p.loss_recv = 24;
      }
    const auto rs = judge_pairs(pairs, nodes, o, 1);
    CHECK(status(rs, "net.mtu", 1) == Status::kPass);
    CHECK(status(rs, "net.loss", 1) == Status::kFail);
  }
}

TEST_CASE("agreement: majority per setting, ties to node 0 -- missing and duplicate nodes named") {
  Gathered g;
  auto hello = [](int n, const std::string& proto, const std::string& netns) {
    return json{{"node", n},
                {"host", "h" + std::to_string(n)},
                {"boot_id", "b"},
                {"netns", netns},
                {"master_addr", "10.0.0.1"},
                {"resolved", {"10.0.0.1"}},
                {"local_addrs", n == 0 ? json{"10.0.0.1"} : json{"10.0.0.9"}},
                {"env", proto.empty() ? json::object() : json{{"NCCL_PROTO", proto}}},
                {"versions", {{"torch", "2.15.0"}}}};
  };
  auto status = [](const std::vector<CheckResult>& rs, const std::string& name, int node) {
    for (const auto& r : rs)
      if (r.name == name && r.node == node && r.status != Status::kPass) return r.status;
    return Status::kPass;
  };
  g.hellos[0] = hello(0, "", "n0");
  g.hellos[1] = hello(1, "Simple", "n1");
  g.hellos[2] = hello(2, "", "n2");
  g.arrived_after_s = {{0, 0.1}, {1, 0.1}, {2, 0.1}};
  auto rs = judge_agreement(g, 4, "10.0.0.1:29500", 5, 1);
  CHECK(status(rs, "env.agree", 1) == Status::kFail);
  CHECK(status(rs, "env.agree", 0) == Status::kPass);
  CHECK(status(rs, "rendezvous.arrive", 3) == Status::kFail);
  CHECK(status(rs, "node.distinct", 2) == Status::kPass);
  SECTION("two nodes: the odd one is the one that differs from node 0") {
    g.hellos.erase(2);
    rs = judge_agreement(g, 2, "x", 5, 1);
    CHECK(status(rs, "env.agree", 1) == Status::kFail);
    CHECK(status(rs, "env.agree", 0) == Status::kPass);
  }
  SECTION("MASTER_ADDR leading elsewhere on one node") {
    g.hellos[2]["resolved"] = {"10.9.9.9"};
    rs = judge_agreement(g, 3, "x", 5, 1);
    CHECK(status(rs, "master.resolve", 2) == Status::kFail);
    CHECK(status(rs, "master.resolve", 1) == Status::kPass);
  }
  SECTION("two node ranks on one host, and one rank claimed twice") {
    g.hellos[2]["netns"] = "n1";
    g.duplicate_claims.emplace_back(1, hello(1, "Simple", "n7"));
    rs = judge_agreement(g, 3, "x", 5, 1);
    int distinct_fails = 0;
    for (const auto& r : rs) distinct_fails += r.name == "node.distinct" && r.status == Status::kFail;
    CHECK(distinct_fails == 2);
  }
  SECTION("a node whose versions could not be read is left out and warned about, not failed") {
    g.hellos[2]["versions"] = {{"unavailable", "python3: no answer in time"}};
    rs = judge_agreement(g, 3, "x", 5, 1);
    CHECK(status(rs, "versions.agree", 2) == Status::kWarn);
    CHECK(status(rs, "versions.agree", 0) == Status::kPass);
    CHECK(status(rs, "versions.agree", 1) == Status::kPass);
  }
  SECTION("torch versions disagree: fail; python: warn") {
    g.hellos[2]["versions"] = {{"torch", "2.14.0"}};
    g.hellos[1]["versions"] = {{"torch", "2.15.0"}, {"python", "3.12.0"}};
    g.hellos[0]["versions"]["python"] = "3.11.2";
    g.hellos[2]["versions"]["python"] = "3.11.2";
    rs = judge_agreement(g, 3, "x", 5, 1);
    CHECK(status(rs, "versions.agree", 2) == Status::kFail);
    CHECK(status(rs, "versions.agree", 1) == Status::kWarn);
  }
}

TEST_CASE("storage: a slow, a stalled and a full checkpoint directory each fail with the reason") {
  Options o;
  o.ckpt_bytes = 1ll << 30;
  o.ckpt_budget_s = 10;
  const JobEnv j = resolve_job({}, o);
  NodeCtx ctx{j, o, "h", 0, ""};
  StorageProbe p;
  p.have_space = true;
  p.free_bytes = 100.0 * (1 << 30);
  p.total_bytes = p.free_bytes;
  p.written = 16 << 20;
  p.write_s = 0.01;
  p.fsync_s = 0.05;
  p.done = true;
  CHECK(judge_storage(ctx, p, 3).status == Status::kPass);
  StorageProbe slow = p;
  slow.fsync_s = 2;  // 16 MiB in 2 s: a 1 GiB save takes ~128 s
  CHECK(judge_storage(ctx, slow, 3).status == Status::kFail);
  StorageProbe stalled = p;
  stalled.stalled_in = "write";
  stalled.stalled_for_s = 5;
  const auto r = judge_storage(ctx, stalled, 8);
  CHECK(r.status == Status::kFail);
  CHECK(r.detail.find("hung or stalled mount") != std::string::npos);
  StorageProbe crawl = p;  // a second per operation: out of time before the stall bound
  crawl.stalled_in = "open";
  crawl.stalled_for_s = 1;
  crawl.hard_timeout = true;
  const auto c = judge_storage(ctx, crawl, 3);
  CHECK(c.status == Status::kFail);
  CHECK(c.detail.find("too slowly") != std::string::npos);
  StorageProbe full = p;
  full.failed_step = "write";
  full.failed_errno = ENOSPC;
  CHECK(judge_storage(ctx, full, 3).detail.find("full") != std::string::npos);
  StorageProbe tight = p;
  tight.free_bytes = 1 << 20;
  CHECK(judge_storage(ctx, tight, 3).status == Status::kFail);
}

TEST_CASE("storage probe: a real directory is measured -- a missing one is bad input") {
  const fs::path root = temp_root("ckpt");
  Options o;
  o.ckpt_probe_bytes = 2 << 20;
  const StorageProbe p = probe_storage(root.string(), o, 20);
  CHECK(p.done);
  CHECK(p.written == 2 << 20);
  CHECK(fs::is_empty(root));  // the probe file is gone
  CHECK_THROWS_AS(probe_storage((root / "nope").string(), o, 5), UsageError);
  fs::remove_all(root);
}

TEST_CASE("MASTER_PORT held by a stale listener: node 0 names the holder and how it behaves") {
  const int port = free_port();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 8) == 0);  // listens, never accepts: a stale store
  const PortBind b = bind_rendezvous_port(port, 0.3);
  CHECK(b.fd < 0);
  CHECK(b.err == EADDRINUSE);
  CHECK(b.holder.find("pid " + std::to_string(::getpid())) != std::string::npos);
  CHECK(b.behaviour.find("never answers") != std::string::npos);
  ::close(fd);
  const PortBind free = bind_rendezvous_port(port, 0.3);
  CHECK(free.fd >= 0);
  ::close(free.fd);
}

TEST_CASE("a whole preflight of two nodes on this host, over loopback") {
  // Two node ranks on one host: node.distinct must say so; everything else works end to end.
  const int port = free_port();
  Env base{{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}, {"NNODES", "2"}};
  Options o;
  o.deadline_s = 10;
  o.format = "json";
  std::ostringstream out0, err0, out1, err1;
  int rc1 = -1;
  std::thread n1([&] {
    Env e = base;
    e["NODE_RANK"] = "1";
    rc1 = run_preflight(o, e, out1, err1);
  });
  Env e0 = base;
  e0["NODE_RANK"] = "0";
  const double t0 = hanglab::mono_now();
  const int rc0 = run_preflight(o, e0, out0, err0);
  n1.join();
  CHECK(hanglab::mono_now() - t0 < 10);
  CHECK(rc0 == 1);
  CHECK(rc1 == 1);
  const Report r = report_from_json(json::parse(out0.str()));
  CHECK(r.whole_job);
  bool distinct_fail = false, arrived = false, reach = false;
  for (const auto& c : r.checks) {
    distinct_fail = distinct_fail || (c.name == "node.distinct" && c.node == 1 && c.status == Status::kFail);
    arrived = arrived || (c.name == "rendezvous.arrive" && c.node == 1 && c.status == Status::kPass);
    reach = reach || (c.name == "net.reach" && c.node == 0 && c.status == Status::kPass);
  }
  CHECK(distinct_fail);
  CHECK(arrived);
  CHECK(reach);
  bool mtu_ok = false;  // over loopback (MTU 65536) the largest datagram is 65507 bytes, and it passes
  for (const auto& c : r.checks) mtu_ok = mtu_ok || (c.name == "net.mtu" && c.node == 0 && c.status == Status::kPass);
  CHECK(mtu_ok);
  const Report mine = report_from_json(json::parse(out1.str()));
  CHECK_FALSE(mine.whole_job);
  CHECK(mine.delivered);
  CHECK(mine.job_exit_code == 1);
}

TEST_CASE("a node that never arrives is named within the deadline") {
  const int port = free_port();
  Options o;
  o.deadline_s = 3;
  o.format = "json";
  std::ostringstream out, err;
  const double t0 = hanglab::mono_now();
  const int rc = run_preflight(o, {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}, {"NNODES", "3"}, {"NODE_RANK", "0"}},
                               out, err);
  CHECK(hanglab::mono_now() - t0 < 4);  // the deadline (3 s) plus a margin for a loaded host: a hang would be far over
  CHECK(rc == 1);
  const Report r = report_from_json(json::parse(out.str()));
  int never = 0;
  for (const auto& c : r.checks) never += c.name == "rendezvous.arrive" && c.status == Status::kFail && c.node > 0;
  CHECK(never == 2);
}

TEST_CASE("a node whose master is black-holed fails within the deadline and says why") {
  Options o;
  o.deadline_s = 3;
  o.format = "json";
  std::ostringstream out, err;
  const double t0 = hanglab::mono_now();
  // 192.0.2.0/24 (TEST-NET-1) is routed nowhere: connects fail or go unanswered.
  const int rc = run_preflight(o, {{"MASTER_ADDR", "192.0.2.7"}, {"MASTER_PORT", "29500"}, {"NNODES", "2"}, {"NODE_RANK", "1"}}, out, err);
  CHECK(hanglab::mono_now() - t0 < 4);  // the deadline (3 s) plus a margin for a loaded host: a hang would be far over
  CHECK(rc == 1);
  const Report r = report_from_json(json::parse(out.str()));
  CHECK_FALSE(r.delivered);
  bool named = false;
  for (const auto& c : r.checks) named = named || (c.name == "master.reach" && c.status == Status::kFail);
  CHECK(named);
}

TEST_CASE("bad input: one line, exit 2") {
  Options o;
  std::ostringstream out, err;
  CHECK(run_preflight(o, {{"MASTER_PORT", "port"}}, out, err) == 2);
  CHECK(err.str() == "hanglab preflight: MASTER_PORT=port: expected a whole number 1..65535\n");
  CHECK(out.str().empty());
  std::ostringstream out2, err2;
  o.ckpt_dir = "/nonexistent/hanglab/ckpt";
  CHECK(run_preflight(o, {}, out2, err2) == 2);
  CHECK(err2.str().find("--ckpt-dir /nonexistent/hanglab/ckpt: No such file or directory") != std::string::npos);
}

TEST_CASE("node 0's server: the same process's second hello is its reconnect, another process's is a second claim") {
  // A node whose first connection stalled (a lossy link) says hello again on a new one.
  const int port = free_port();
  const PortBind b = bind_rendezvous_port(port, 0.3);
  REQUIRE(b.fd >= 0);
  ServerConfig cfg;
  cfg.nnodes = 2;
  cfg.arrive_deadline = hanglab::mono_now() + 1.5;
  cfg.report_deadline = hanglab::mono_now() + 2.0;
  Gathered seen;
  Server server(b.fd, cfg, [&](const Gathered& g) {
    seen = g;
    return json{{"exit_code", 0}};
  });
  const auto say_hello = [&](int node, int pid) {
    const ConnectResult c = tcp_connect("127.0.0.1", port, 1.0);
    REQUIRE(c.cls == ConnectClass::kOk);
    auto conn = std::make_unique<LineConn>(c.fd);
    REQUIRE(conn->send({{"type", "hello"}, {"node", node}, {"pid", pid}, {"boot_id", "b"}, {"netns", "n"}},
                       hanglab::mono_now() + 1));
    const auto w = conn->recv(hanglab::mono_now() + 1);
    REQUIRE(w);
    CHECK(w->value("type", "") == "welcome");
    return conn;
  };
  auto n0 = say_hello(0, 100);
  auto first = say_hello(1, 200);
  first->close();                      // its welcome "never came": the node gives the connection up
  auto again = say_hello(1, 200);      // ... and says hello again
  auto other = say_hello(1, 300);      // a second process claiming node 1
  server.join();
  CHECK(seen.hellos.size() == 2);
  REQUIRE(seen.duplicate_claims.size() == 1);
  CHECK(seen.duplicate_claims.front().second.value("pid", 0) == 300);
}
