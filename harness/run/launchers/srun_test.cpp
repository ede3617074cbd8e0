// The srun launcher: its command line and launch files, srun's task-exit lines, the
// private cluster's slurm.conf, and (where Slurm is installed and we are root) a real
// cluster started and stopped without leaving a process behind.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "run/launchers/launchers.hpp"
#include "run/launchers/slurm_cluster.hpp"
#include "run/rank_env.hpp"
#include "util.hpp"

using namespace hanglab;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kTemp = fs::temp_directory_path() / ("hanglab_srun_test." + std::to_string(::getpid()));
struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(kTemp, ec);
  }
} cleanup;

fs::path fresh(const std::string& name) {
  fs::path d = kTemp / name;
  fs::remove_all(d);
  fs::create_directories(d / "ranks");
  return d;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

}  // namespace

TEST_CASE("the srun plan: one srun -l --kill-on-bad-exit, a launch file per rank with its whole environment",
          "[srun]") {
  fs::path dir = fresh("plan");
  WorkloadSpec w;
  w.name = "torch_ddp";
  w.world_size = 3;
  w.launcher = "srun";
  std::vector<LaunchSpec> specs;
  std::vector<std::map<std::string, std::string>> base;
  for (int r = 0; r < 3; ++r) {
    RankEnvInput in;
    in.rank = r;
    in.world_size = 3;
    in.master_port = 29601;
    in.run_id = "srun_x-1";
    in.run_dir = dir;
    LaunchSpec s;
    s.rank = r;
    s.argv = {"/bin/w", "--steps", "3"};
    s.env = torchrun_contract_env(in);
    base.push_back(s.env);
    specs.push_back(s);
  }
  specs[2].wrapper = {"ip", "netns", "exec", "hanglab-n1"};
  specs[1].hooks = json::array({{{"kind", "skip"}}});

  LauncherPlan p = srun_launch_plan(w, specs, base, dir);
  CHECK(p.rank_fifos);
  CHECK(p.labelled_output);
  const auto& a = p.spec.argv;
  auto after = [&](const std::string& flag) {
    auto it = std::find(a.begin(), a.end(), flag);
    return it == a.end() || it + 1 == a.end() ? std::string("<absent>") : *(it + 1);
  };
  CHECK(a.at(0) == "srun");
  CHECK(std::find(a.begin(), a.end(), "-l") != a.end());
  CHECK(std::find(a.begin(), a.end(), "--kill-on-bad-exit=1") != a.end());
  CHECK(after("-n") == "3");
  CHECK(after("-N") == "1");
  CHECK(after("--job-name") == "srun_x-1");
  CHECK(after("--time") == "<absent>");
  REQUIRE(a.size() >= 2);
  CHECK(fs::path(a[a.size() - 2]).filename() == "hanglab_rank_exec");
  CHECK(a.back() == fs::absolute(dir).string());
  CHECK(p.spec.env.at("SLURM_CONF") == (fs::absolute(dir) / "slurm" / "slurm.conf").string());

  json l0 = read_json(dir / "ranks/0/launch.json");
  json l2 = read_json(dir / "ranks/2/launch.json");
  CHECK(l0["argv"] == json({"/bin/w", "--steps", "3"}));
  CHECK(l2["argv"] == json({"ip", "netns", "exec", "hanglab-n1", "/bin/w", "--steps", "3"}));
  // srun sets none of the torchrun contract: the rank's own values travel whole.
  CHECK(l2["env"]["RANK"] == "2");
  CHECK(l2["env"]["MASTER_ADDR"] == "127.0.0.1");
  CHECK(l2["env"]["MASTER_PORT"] == "29601");
  CHECK(l2["env"]["WORLD_SIZE"] == "3");
  CHECK(l0["env"]["HANGLAB_TRACE"] == (fs::absolute(dir) / "ranks/0/events.jsonl").string());
  CHECK(json::parse(read_json(dir / "ranks/1/launch.json")["env"]["HANGLAB_HOOKS"].get<std::string>()) ==
        specs[1].hooks);

  SECTION("time_limit_min becomes srun --time (minutes)") {
    w.time_limit_min = 2;
    LauncherPlan t = srun_launch_plan(w, specs, base, dir);
    auto it = std::find(t.spec.argv.begin(), t.spec.argv.end(), "--time");
    REQUIRE(it != t.spec.argv.end());
    CHECK(*(it + 1) == "2");
  }
}

TEST_CASE("srun's task-exit lines name the ranks and how they ended", "[srun]") {
  auto e = parse_srun_task_exit("srun: error: vm: task 1: Killed");
  REQUIRE(e);
  CHECK(e->tasks == std::vector<int>{1});
  CHECK(e->signal == SIGKILL);
  CHECK_FALSE(e->code);

  e = parse_srun_task_exit("2026-12-03T12:00:00.000000Z srun: error: node-7: tasks 0,2-3: Exited with exit code 11");
  REQUIRE(e);
  CHECK(e->tasks == std::vector<int>{0, 2, 3});
  CHECK(e->code == 11);

  e = parse_srun_task_exit("srun: error: vm: task 0: Segmentation fault (core dumped)");
  REQUIRE(e);
  CHECK(e->signal == SIGSEGV);
  e = parse_srun_task_exit("srun: error: vm: task 3: Terminated");
  REQUIRE(e);
  CHECK(e->signal == SIGTERM);

  CHECK_FALSE(parse_srun_task_exit("srun: Job step aborted: Waiting up to 7 seconds for job step to finish."));
  CHECK_FALSE(parse_srun_task_exit("srun: launch/slurm: _step_signal: Terminating StepId=1.0"));
  CHECK_FALSE(parse_srun_task_exit("1: srun: error: vm: task x: Killed"));
}

TEST_CASE("the private cluster's slurm.conf", "[srun]") {
  SlurmConfInput in;
  in.node_name = "vm";
  in.cpus = 4;
  in.slurmctld_port = 40001;
  in.slurmd_port = 40002;
  in.dir = "/r/slurm";
  in.spool_dir = "/tmp/hanglab-slurmd-x";
  const std::string c = slurm_conf_text(in);
  for (const char* line : {"AuthType=auth/none\n", "CredType=cred/none\n", "SlurmctldHost=vm(127.0.0.1)\n",
                           "SlurmctldPort=40001\n", "SlurmdPort=40002\n", "SlurmdSpoolDir=/tmp/hanglab-slurmd-x\n",
                           "StateSaveLocation=/r/slurm/state\n", "SlurmdLogFile=/r/slurm/slurmd.log\n",
                           "ProctrackType=proctrack/linuxproc\n", "TaskPlugin=task/none\n",
                           "SlurmdParameters=config_overrides\n", "KillWait=5\n",
                           "NodeName=vm NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN\n",
                           "PartitionName=hanglab Nodes=vm Default=YES MaxTime=INFINITE State=UP\n"})
    CHECK(c.find(line) != std::string::npos);
  CHECK(c.find("PluginDir") == std::string::npos);
}

TEST_CASE("a real private cluster comes up idle and stops without leaving a process", "[srun][slurm]") {
  if (auto why = slurm_unsupported_reason(); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  fs::path dir = fresh("cluster");
  std::vector<pid_t> pids;
  fs::path spool;
  {
    SlurmCluster c(dir, 2, nullptr, 60);
    json d = c.describe();
    for (const auto& x : d["daemons"]) pids.push_back(x["pid"].get<pid_t>());
    REQUIRE(pids.size() == 2);
    for (pid_t p : pids) CHECK(alive(p));
    CHECK(fs::exists(dir / "slurm" / "slurm.conf"));
    CHECK(d["slurmctld_port"].get<int>() != d["slurmd_port"].get<int>());
    // A job step really runs on it: two tasks, each with its SLURM_PROCID.
    ToolResult r = run_tool({"env", "SLURM_CONF=" + c.conf().string(), "srun", "-l", "-n", "2", "sh", "-c",
                             "echo task $SLURM_PROCID"});
    CHECK(r.status == 0);
    CHECK(r.output.find("0: task 0") != std::string::npos);
    CHECK(r.output.find("1: task 1") != std::string::npos);
    c.stop();
    for (pid_t p : pids) CHECK_FALSE(alive(p));
    c.stop();  // idempotent
  }
  CHECK(fs::exists(dir / "slurm" / "slurmctld.log"));
}

TEST_CASE("without Slurm on PATH the srun launcher says why (the scenario is skipped)", "[srun]") {
  if (::geteuid() != 0) {
    CHECK_THAT(slurm_unsupported_reason(), Catch::Contains("needs root"));
    return;
  }
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  const fs::path empty = fresh("nopath");
  ::setenv("PATH", empty.c_str(), 1);
  const std::string why = slurm_unsupported_reason();
  const std::string via_launcher = launcher_unsupported_reason("srun");
  ::setenv("PATH", saved.c_str(), 1);
  CHECK_THAT(why, Catch::Contains("`slurmctld` is not on PATH"));
  CHECK_THAT(why, Catch::Contains("ci/install-deps.sh"));
  CHECK(via_launcher == why);
}
