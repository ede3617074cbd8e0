#include "run/preflight_run.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "network_common.hpp"
#include "preflight/result.hpp"
#include "run/launchers/launchers.hpp"
#include "run/launchers/slurm_cluster.hpp"
#include "run/nodes.hpp"
#include "run/port_lease.hpp"
#include "run/rank_env.hpp"
#include "run/run_record.hpp"
#include "run/state.hpp"
#include "triage/triage.hpp"
#include "util.hpp"

extern char** environ;

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;
namespace pf = hanglab::preflight;

namespace {

// The torchrun contract a worker gets, which a job script running preflight before the launch
// does not have (and whose TORCHELASTIC_RUN_ID would tell preflight it is a torchrun worker).
// RANK stays: it is the node's first rank, which faults that pick their victims by RANK (slow_storage's
// FUSE daemon) use to find the node's processes, and preflight does not read it.
bool worker_only_key(const std::string& k) {
  return k == "LOCAL_RANK" || k == "LOCAL_WORLD_SIZE" || k == "GROUP_RANK" || k == "GROUP_WORLD_SIZE" ||
         k == "ROLE_RANK" || k == "ROLE_NAME" || k == "ROLE_WORLD_SIZE" || k.rfind("TORCHELASTIC_", 0) == 0;
}

// What a fault's fire() sees of the job: each node's preflight, as the node's first rank.
class NodeJob : public Job {
 public:
  NodeJob(int ws, int rpn, std::string dir) : ws_(ws), rpn_(rpn), dir_(std::move(dir)) {}
  int world_size() const override { return ws_; }
  pid_t pid_of(int rank) const override {
    if (rank % rpn_ != 0) return 0;
    auto it = pids_.find(rank / rpn_);
    return it == pids_.end() ? 0 : it->second;
  }
  bool alive(int rank) const override {
    const pid_t p = pid_of(rank);
    return p > 0 && ::kill(p, 0) == 0;
  }
  std::string run_dir() const override { return dir_; }
  std::map<int, pid_t> pids_;  // node -> the pid its gate wrote

 private:
  int ws_, rpn_;
  std::string dir_;
};

pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const fs::path& out,
            const fs::path& err) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) merged[k] = v;
  std::vector<std::string> envs;
  for (const auto& [k, v] : merged) envs.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const int fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int fe = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    child_after_fork(parent);
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(fo, 1);
    ::dup2(fe, 2);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::close(fo);
  ::close(fe);
  if (pid < 0) throw_system_error("fork", "preflight node");
  return pid;
}

struct NodeOutcome {
  int node = 0;
  bool started = false;          // its gate was reached before go (a node that never starts is a fault)
  std::optional<pf::Report> report;
  std::string report_problem;
  std::optional<int> exit_code;  // the node's preflight exit code (local launcher), when known
  double wall_s = 0;             // from go to its exit
};

// The checks of the whole run: node 0's job report, plus what nodes that never reached node 0
// wrote for themselves.
std::vector<pf::CheckResult> merged_checks(const std::vector<NodeOutcome>& nodes) {
  std::vector<pf::CheckResult> out;
  for (const auto& n : nodes) {
    if (!n.report) continue;
    if (n.node == 0 || !n.report->delivered)
      for (const auto& c : n.report->checks)
        if (n.node == 0 || c.node == n.node) out.push_back(c);
  }
  return out;
}

Verdict judge(const PreflightSpec& p, const std::vector<NodeOutcome>& nodes, double deadline_s, double grace_s) {
  Verdict v;
  const auto checks = merged_checks(nodes);
  auto add = [&](std::string name, bool ok, std::string expected, std::string actual, std::string reason = "") {
    v.checks.push_back({std::move(name), ok ? "pass" : "fail", std::move(expected), std::move(actual), ok ? "" : reason});
  };
  // Every node produced its report.
  std::vector<std::string> missing;
  int started = 0;
  for (const auto& n : nodes) {
    started += n.started;
    if (!n.report && n.started) missing.push_back(fmt::format("node{} ({})", n.node, n.report_problem));
  }
  add("preflight.reports", missing.empty() && started > 0, "a JSON report from every node that started",
      missing.empty() ? fmt::format("{} reports ({} of {} nodes started)", started, started, nodes.size())
                      : fmt::format("{}", fmt::join(missing, "; ")),
      "a node's preflight wrote no report");
  // The expected failures, on the expected nodes.
  for (const auto& name : p.fail)
    for (int node : p.nodes) {
      const pf::CheckResult* hit = nullptr;
      for (const auto& c : checks)
        if (c.name == name && c.node == node && c.status == pf::Status::kFail) hit = &c;
      add(fmt::format("preflight.{}.node{}", name, node), hit != nullptr, "fail",
          hit ? fmt::format("fail at +{:.2f} s: {}", hit->at_s, hit->measured) : "no failure of this check on this node",
          "the fault was not caught by the check that exists for it");
    }
  // Nothing else failed (and, on a healthy baseline, nothing warned or skipped).
  std::vector<std::string> extra;
  for (const auto& c : checks) {
    const bool expected_fail = std::find(p.fail.begin(), p.fail.end(), c.name) != p.fail.end() &&
                               std::find(p.nodes.begin(), p.nodes.end(), c.node) != p.nodes.end();
    const bool echo = std::find(p.echoes.begin(), p.echoes.end(), c.name) != p.echoes.end();
    if (c.status == pf::Status::kFail && !expected_fail && !echo)
      extra.push_back(fmt::format("{} fail on node{}: {}", c.name, c.node, c.measured));
    if (p.fail.empty() && (c.status == pf::Status::kWarn || c.status == pf::Status::kSkip))
      extra.push_back(fmt::format("{} {} on node{}: {}", c.name, pf::status_name(c.status), c.node, c.measured));
  }
  add(p.fail.empty() ? "preflight.clean" : "preflight.nothing_else", extra.empty(),
      p.fail.empty() ? "no failure, warning or skip" : "no other failure (echoes allowed: " + fmt::format("{}", fmt::join(p.echoes, ", ")) + ")",
      extra.empty() ? std::string("none") : fmt::format("{}", fmt::join(extra, "; ")),
      p.fail.empty() ? "a healthy baseline must be clean" : "a check failed that the scenario does not expect");
  // Exit codes: the job's verdict on every node.
  const int want = p.fail.empty() ? 0 : 1;
  std::vector<std::string> wrong;
  for (const auto& n : nodes)
    if (n.started && n.exit_code && *n.exit_code != want) wrong.push_back(fmt::format("node{} exit {}", n.node, *n.exit_code));
  add("preflight.exit_codes", wrong.empty(), fmt::format("every node exits {}", want),
      wrong.empty() ? "as expected" : fmt::format("{}", fmt::join(wrong, ", ")), "an exit code disagrees with the verdict");
  // Nothing hangs: every node done within its deadline.
  double worst = 0;
  for (const auto& n : nodes)
    if (n.started) worst = std::max(worst, n.wall_s);
  add("preflight.deadline", worst <= deadline_s + grace_s, fmt::format("every node done within {:.0f} s (+{:.0f} s to start)", deadline_s, grace_s),
      fmt::format("slowest node {:.2f} s", worst), "preflight overran its --deadline-s");
  v.status = "pass";
  for (const auto& c : v.checks)
    if (c.status == "fail") v.status = "fail";
  return v;
}

}  // namespace

std::string preflight_unsupported_reason(const PreparedScenario& ps, const HostInfo& host) {
  const Scenario& sc = ps.scenario;
  if (sc.topology.multi_node())
    if (auto why = nodes_unsupported_reason(); !why.empty()) return why;
  if (auto why = launcher_unsupported_reason(sc.workload.launcher); !why.empty()) return why;
  if (sc.workload.launcher == "torchrun")
    return "a [preflight] scenario runs before the job's launcher: use launcher local, srun or mpirun (torchrun workers "
           "are covered by --port)";
  for (size_t i = 0; i < ps.injectors.size(); ++i)
    if (auto why = ps.injectors[i]->unsupported_reason(host); !why.empty()) return "fault " + sc.faults[i].kind + ": " + why;
  return {};
}

RunResult run_preflight_scenario(PreparedScenario& ps, const HostInfo& host, const RunOptions& opts, const fs::path& run_dir,
                                 double t0) {
  const Scenario& sc = ps.scenario;
  const PreflightSpec& p = *sc.preflight;
  RunResult res;
  res.scenario = sc.name;
  res.run_dir = run_dir;
  const std::string skip = preflight_unsupported_reason(ps, host);
  std::vector<NodeOutcome> outcomes;
  json harness_events = json::array();
  if (!skip.empty()) {
    res.verdict = skipped_verdict(skip);
  } else {
    const int ws = sc.workload.world_size;
    const int nodes = sc.topology.nodes;
    const int rpn = sc.topology.multi_node() ? sc.topology.ranks_per_node : ws;
    const fs::path dir = fs::absolute(run_dir);
    const fs::path pfdir = dir / "preflight";
    fs::create_directories(pfdir);
    fs::create_directories(dir / "data");
    fs::create_directories(dir / "ckpt");
    PortLease port;
    std::vector<LaunchSpec> specs;
    for (int r = 0; r < ws; ++r) {
      LaunchSpec s;
      s.rank = r;
      RankEnvInput in;
      in.rank = r;
      in.world_size = ws;
      in.master_port = port.port();
      in.run_id = sc.name + "-" + run_dir.filename().string();
      in.run_dir = dir;
      s.env = rank_env(in, sc);
      specs.push_back(std::move(s));
    }
    std::unique_ptr<RunState> state = RunState::create(sc.name, run_dir);
    for (auto& inj : ps.injectors) inj->attach_state(state.get());
    std::optional<NodeNet> net;
    if (sc.topology.multi_node()) {
      net.emplace(sc.topology, ws, port.port(), state.get());
      for (auto& s : specs) net->apply_env(s.rank, s.env);
      for (auto& inj : ps.injectors) inj->attach_nodes(&*net);
    }
    std::optional<SlurmCluster> slurm;
    if (sc.workload.launcher == "srun") {
      if (opts.on_state) opts.on_state("starting slurmctld, slurmd");
      slurm.emplace(run_dir, nodes, state.get());
    }
    NodeJob job(ws, rpn, run_dir.string());
    struct Guard {
      PreparedScenario& ps;
      Job& job;
      std::vector<std::string> errors;
      bool done = false;
      void revert() {
        if (done) return;
        done = true;
        for (auto& inj : ps.injectors) {
          try {
            inj->revert(job);
          } catch (const std::exception& e) {
            errors.push_back(e.what());
          }
        }
        for (auto& inj : ps.injectors) {
          inj->attach_state(nullptr);
          inj->attach_nodes(nullptr);
        }
      }
      ~Guard() { revert(); }
    } guard{ps, job, {}};
    if (net)
      for (auto& inj : ps.injectors) inj->prepare_nodes(*net);
    for (auto& s : specs)
      for (auto& inj : ps.injectors) inj->prepare_rank(s.rank, s);

    // One preflight per node, as the node's first rank.
    const std::string launcher = sc.workload.launcher;
    const fs::path hanglab_bin = fs::read_symlink("/proc/self/exe");
    const fs::path venv = project_venv();
    const fs::path go = pfdir / "go";
    std::vector<LaunchSpec> node_specs;
    for (int k = 0; k < nodes; ++k) {
      LaunchSpec s = specs[static_cast<size_t>(k * rpn)];
      s.rank = k;
      for (auto it = s.env.begin(); it != s.env.end();) it = worker_only_key(it->first) ? s.env.erase(it) : std::next(it);
      if (launcher == "local") {
        s.env["NNODES"] = std::to_string(nodes);
        s.env["NODE_RANK"] = std::to_string(k);
      }
      s.argv = {hanglab_bin.string(), "preflight",      "--deadline-s", fmt::format("{}", p.deadline_s),
                "--ranks-per-node",   std::to_string(rpn), "--out",        (pfdir / "node{node}.json").string()};
      if (p.ckpt) s.argv.insert(s.argv.end(), {"--ckpt-dir", (dir / "ckpt").string()});
      if (!venv.empty()) s.argv.insert(s.argv.end(), {"--python", (venv / "bin" / "python").string()});
      s.argv.insert(s.argv.end(), p.args.begin(), p.args.end());
      // Innermost: the gate. Its pid is the node's pid from here on (sh execs preflight).
      const std::vector<std::string> gate = {
          "sh", "-c", "echo $$ > \"$0.tmp\" && mv \"$0.tmp\" \"$0\"; while [ ! -e \"$1\" ]; do sleep 0.01; done; shift; exec \"$@\"",
          (pfdir / ("ready." + std::to_string(k))).string(), go.string()};
      s.wrapper.insert(s.wrapper.end(), gate.begin(), gate.end());
      if (net) prepend_wrapper(s, net->wrapper(k));
      node_specs.push_back(std::move(s));
    }
    // Every node process and whatever it starts (a wrapper's sleep, the storage probe) carries
    // HANGLAB_RUN_ID: after a kill -9 of hanglab the sweep finds them by it, as it finds ranks.
    const std::string run_id = fmt::format("{}-{}-{}", ::getpid(), static_cast<long long>(unix_now() * 1e6), sc.name);
    state->env_marker("HANGLAB_RUN_ID", run_id);
    for (auto& s : node_specs) s.env["HANGLAB_RUN_ID"] = run_id;
    std::vector<pid_t> pids;
    pid_t launcher_pid = 0;
    int launcher_state_id = 0;
    std::vector<int> state_ids;
    if (launcher == "local") {
      for (auto& s : node_specs) {
        std::vector<std::string> argv = s.wrapper;
        argv.insert(argv.end(), s.argv.begin(), s.argv.end());
        const pid_t pid = spawn(argv, s.env, pfdir / fmt::format("node{}.stdout", s.rank), pfdir / fmt::format("node{}.stderr", s.rank));
        state_ids.push_back(state->process(pid, fmt::format("preflight node {}", s.rank)));
        pids.push_back(pid);
      }
    } else {
      std::vector<std::map<std::string, std::string>> base_env;
      for (const auto& s : node_specs) base_env.push_back(s.env);
      LaunchSpec l;
      if (launcher == "srun") {
        WorkloadSpec w = sc.workload;
        w.world_size = nodes;
        auto plan = srun_launch_plan(w, node_specs, base_env, dir);
        l = plan.spec;
        // hanglab_rank_exec writes each task's output to ranks/<k>/std{out,err}.fifo: plain files here.
        for (int k = 0; k < nodes; ++k)
          for (const char* f : {"stdout.fifo", "stderr.fifo"}) write_file(dir / "ranks" / std::to_string(k) / f, "");
      } else {
        l = mpirun_launch_spec(node_specs, dir);
      }
      launcher_pid = spawn(l.argv, l.env, pfdir / "launcher.stdout", pfdir / "launcher.stderr");
      launcher_state_id = state->process(launcher_pid, "preflight " + launcher);
    }
    JsonlWriter(dir / "harness.jsonl").write(json{{"t", unix_now()}, {"ev", "preflight_launch"}, {"nodes", nodes},
                                                  {"launcher", launcher}, {"argv", node_specs[0].argv}});
    // Wait for every gate: at most 15 s in all (a launcher's cluster starting), and 5 s after the
    // first node is there (a node that is not there by then does not start: preflight names it).
    const double wait_start = mono_now();
    double first_ready = 0;
    for (;;) {
      for (int k = 0; k < nodes; ++k) {
        std::error_code ec;
        const fs::path ready = pfdir / ("ready." + std::to_string(k));
        if (job.pids_.count(k) || !fs::exists(ready, ec)) continue;
        job.pids_[k] = std::atoi(read_file(ready).c_str());
        if (first_ready == 0) first_ready = mono_now();
      }
      const double now = mono_now();
      if (static_cast<int>(job.pids_.size()) == nodes || now - wait_start > 15 || (first_ready > 0 && now - first_ready > 5)) break;
      ::usleep(10000);
    }
    for (int k = 0; k < nodes; ++k) outcomes.push_back(NodeOutcome{k, job.pids_.count(k) > 0});
    res.facts.start_t = unix_now();
    for (size_t i = 0; i < ps.injectors.size(); ++i) {
      std::string detail;
      try {
        detail = ps.injectors[i]->fire(job);
      } catch (const std::exception& e) {
        detail = std::string("fire failed: ") + e.what();
      }
      res.facts.faults.push_back({sc.faults[i].kind, sc.faults[i].ranks, unix_now(), detail});
      JsonlWriter(dir / "harness.jsonl")
          .write(json{{"t", unix_now()}, {"ev", "fault"}, {"kind", sc.faults[i].kind}, {"ranks", sc.faults[i].ranks}, {"detail", detail}});
    }
    write_file(go, "");
    const double go_mono = mono_now();
    JsonlWriter(dir / "harness.jsonl").write(json{{"t", unix_now()}, {"ev", "launch"}, {"rank", -1}, {"what", "preflight go"}});
    if (opts.on_state) opts.on_state("preflight");
    // Every node's preflight ends within its deadline; the harness gives it a bounded margin more
    // and then stops it (that is then a failed check: preflight.deadline).
    const double grace = 3;
    const double hard = go_mono + std::min(p.deadline_s + grace + 5, std::max(1.0, sc.deadline_s - 2));
    auto reap = [&](pid_t pid, int& status) { return ::waitpid(pid, &status, WNOHANG) == pid; };
    std::set<size_t> live;
    for (size_t i = 0; i < pids.size(); ++i) live.insert(i);
    bool launcher_live = launcher_pid > 0;
    auto started_done = [&] {
      for (size_t i : live)
        if (outcomes[i].started) return false;
      if (launcher_live)
        for (const auto& o : outcomes)
          if (o.started && o.wall_s == 0) return false;
      return true;
    };
    // Ctrl-C / SIGTERM of hanglab: stop the nodes now (below), revert, record it.
    auto interrupted = [&] {
      if (opts.interrupt_fd < 0) return false;
      pollfd p{opts.interrupt_fd, POLLIN, 0};
      return ::poll(&p, 1, 0) > 0;
    };
    bool stopped = false;
    while ((!live.empty() || launcher_live) && mono_now() < hard && !started_done()) {
      if (interrupted()) {
        stopped = true;
        break;
      }
      for (auto it = live.begin(); it != live.end();) {
        int st = 0;
        if (reap(pids[*it], st)) {
          outcomes[*it].exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
          outcomes[*it].wall_s = mono_now() - go_mono;
          state->released(state_ids[*it]);
          it = live.erase(it);
        } else {
          ++it;
        }
      }
      if (launcher_live) {
        int st = 0;
        if (reap(launcher_pid, st)) {
          launcher_live = false;
          state->released(launcher_state_id);
        }
        // Under a launcher a node's end shows as its report file appearing.
        for (auto& o : outcomes)
          if (o.wall_s == 0 && fs::exists(pfdir / fmt::format("node{}.json", o.node))) o.wall_s = mono_now() - go_mono;
      }
      ::usleep(10000);
    }
    for (size_t i : live) {
      ::kill(-pids[i], SIGKILL);
      ::kill(pids[i], SIGKILL);
      ::waitpid(pids[i], nullptr, 0);
      outcomes[i].wall_s = mono_now() - go_mono;
      state->released(state_ids[i]);
    }
    if (launcher_live) {
      ::kill(-launcher_pid, SIGKILL);
      ::kill(launcher_pid, SIGKILL);
      ::waitpid(launcher_pid, nullptr, 0);
      state->released(launcher_state_id);
    }
    for (auto& o : outcomes)
      if (o.wall_s == 0) o.wall_s = mono_now() - go_mono;
    res.facts.end_t = unix_now();
    guard.revert();
    if (slurm) {
      slurm->stop();
      res.slurm = slurm->describe();
    }
    if (net) {
      res.topology = net->describe();
      net->destroy();
    }
    state->close();
    for (const auto& e : guard.errors) std::cerr << "hanglab: warning: revert of a fault failed: " << e << "\n";
    for (auto& o : outcomes) {
      const fs::path f = pfdir / fmt::format("node{}.json", o.node);
      try {
        o.report = pf::report_from_json(json::parse(read_file(f)));
      } catch (const std::exception& e) {
        o.report_problem = fs::exists(f) ? std::string("unreadable: ") + e.what() : "no node" + std::to_string(o.node) + ".json";
      }
    }
    res.verdict = judge(p, outcomes, p.deadline_s, grace);
    res.facts.outcome = "completed";
    res.facts.teardown_reason = stopped ? "interrupted" : "all_exited";
    if (stopped) {
      res.verdict.status = "unknown";
      res.verdict.checks.push_back({"preflight.interrupted", "unknown", "a finished preflight", "interrupted", "hanglab was interrupted"});
    }
    for (size_t i = 0; i < sc.faults.size(); ++i) {
      FaultManifest m;
      m.index = static_cast<int>(i);
      m.kind = sc.faults[i].kind;
      m.fired = i < res.facts.faults.size();
      m.exercised = m.fired && res.verdict.status == "pass";
      m.evidence = m.fired ? res.facts.faults[i].detail : "never fired";
      if (i < ps.adapted.size()) m.adapted = ps.adapted[i];
      res.facts.manifests.push_back(m);
    }
    {
      JsonlWriter log(dir / "harness.jsonl");
      for (const auto& o : outcomes)
        if (o.exit_code) log.write(json{{"t", res.facts.end_t}, {"ev", "exit"}, {"rank", o.node}, {"code", *o.exit_code}});
      log.write(json{{"t", res.facts.end_t}, {"ev", "run_end"}, {"outcome", res.facts.outcome}});
    }
    write_file(dir / "triage.json", to_json(res.triage).dump(2) + "\n");
    for (const auto& o : outcomes) {
      if (o.exit_code) res.facts.exits.push_back(RankExit{o.node, o.exit_code, std::nullopt, res.facts.end_t});
      json e = {{"node", o.node}, {"wall_s", o.wall_s}, {"exit_code", o.exit_code ? json(*o.exit_code) : json()}};
      if (o.report) e["report"] = pf::to_json(*o.report);
      else e["problem"] = o.report_problem;
      harness_events.push_back(e);
    }
  }
  res.duration_s = unix_now() - t0;
  res.record = run_json(sc, res, host);
  if (res.topology) res.record["topology"] = *res.topology;
  if (res.slurm) res.record["slurm"] = *res.slurm;
  // The catch: each expected failing check with the node and the time preflight needed for it.
  json caught = json::array();
  for (const auto& c : merged_checks(outcomes))
    if (c.status == pf::Status::kFail) caught.push_back({{"check", c.name}, {"node", c.node}, {"at_s", c.at_s}, {"measured", c.measured}});
  res.record["preflight"] = {{"nodes", harness_events}, {"failed_checks", caught}};
  write_file(run_dir / "run.json", res.record.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  return res;
}

}  // namespace hanglab
