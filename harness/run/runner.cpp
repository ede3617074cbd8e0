#include "run/runner.hpp"

#include <algorithm>
#include <iostream>
#include <optional>
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <fmt/format.h>

#include "network_common.hpp"
#include "run/nodes.hpp"
#include "run/port_lease.hpp"
#include "run/preflight_run.hpp"
#include "run/rank_env.hpp"
#include "run/run_record.hpp"
#include "run/state.hpp"
#include "run/launchers/launchers.hpp"
#include "run/launchers/slurm_cluster.hpp"
#include "run/supervisor.hpp"
#include "run/torchfrtrace.hpp"
#include "util.hpp"
#include "run/workloads.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// torchfrtrace imports torch (seconds on a loaded host) and reads a few MB of dumps.
constexpr double kTorchFrTraceTimeoutS = 120;
}  // namespace

PreparedScenario prepare_scenario(const fs::path& file) {
  PreparedScenario ps;
  ps.scenario = load_scenario(file, make_load_options());
  Scenario& sc = ps.scenario;
  check_workload_runnable(sc);
  const WorkloadInfo* w = sc.workload.command.empty() ? find_workload(sc.workload.name) : nullptr;
  for (const auto& f : sc.faults) {
    const InjectorInfo* info = find_injector(f.kind);
    auto inj = info->make();
    inj->configure(f, file.string());
    AdaptContext ctx{sc, f, file.string()};
    ctx.builtin = w != nullptr;
    ctx.training_loop = w && w->training_loop;
    if (w)
      for (const auto& a : *w->args) ctx.arg_defaults[a.name] = a.default_value;
    check_trigger_reachable(ctx);
    std::vector<std::string> notes;
    for (auto& n : inj->adapt(ctx))
      if (!n.empty()) notes.push_back(std::move(n));
    ps.adapted.push_back(std::move(notes));
    ps.injectors.push_back(std::move(inj));
  }
  return ps;
}

std::vector<FaultManifest> judge_faults(const PreparedScenario& ps, const RunFacts& facts, const fs::path& run_dir) {
  const Scenario& sc = ps.scenario;
  RunFactsView view{facts, run_dir, sc.workload.world_size, RunFactsView::read_traces(run_dir, sc.workload.world_size)};
  std::vector<FaultManifest> out;
  for (size_t i = 0; i < ps.injectors.size(); ++i) {
    FaultManifest m;
    m.index = static_cast<int>(i);
    m.kind = sc.faults[i].kind;
    if (i < ps.adapted.size()) m.adapted = ps.adapted[i];
    // Firings are recorded in order, one per fault: the nth firing of a kind is the nth
    // [[fault]] of that kind.
    int nth = 0;
    for (size_t j = 0; j < i; ++j) nth += sc.faults[j].kind == m.kind;
    for (const auto& f : facts.faults) m.fired = m.fired || (f.kind == m.kind && nth-- == 0);
    Manifest judged;
    try {
      judged = ps.injectors[i]->manifested(view);
    } catch (const std::exception& e) {
      judged = {false, std::string("the judgment failed: ") + e.what()};
    }
    // No effect without a firing: an effect seen anyway was something else's.
    m.exercised = m.fired && judged.exercised;
    m.evidence = m.fired ? judged.evidence : "the fault never fired; " + judged.evidence;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<fs::path> expand_scenario_paths(const std::vector<std::string>& paths) {
  std::vector<fs::path> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(p))
        if (e.path().extension() == ".toml") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      if (files.empty()) throw ConfigError(p, 0, 0, "", "directory holds no *.toml scenario");
      out.insert(out.end(), files.begin(), files.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      throw ConfigError(p, 0, 0, "", "no such file or directory");
    }
  }
  return out;
}

std::string unsupported_reason(const PreparedScenario& ps, const HostInfo& host) {
  const Scenario& sc = ps.scenario;
  if (std::find(sc.tags.begin(), sc.tags.end(), "gpu") != sc.tags.end() && !host.gpu)
    return "tagged gpu and this host has no NVIDIA GPU (/dev/nvidia0 absent)";
  if (auto why = workload_unsupported_reason(sc); !why.empty()) return why;
  if (sc.topology.multi_node())
    if (auto why = nodes_unsupported_reason(); !why.empty()) return why;
  for (size_t i = 0; i < ps.injectors.size(); ++i)
    if (auto why = ps.injectors[i]->unsupported_reason(host); !why.empty())
      return "fault " + sc.faults[i].kind + ": " + why;
  return {};
}

namespace {

fs::path make_run_dir(const fs::path& results, const std::string& name, double t) {
  // mkdir is the claim: runs of the same scenario in parallel (run -j, --repeat) in the
  // same second get -2, -3, ... and never share a directory.
  fs::path base = results / name / utc_stamp(t);
  fs::create_directories(base.parent_path());
  fs::path dir = base;
  for (int i = 2; !fs::create_directory(dir); ++i) {
    if (i > 10000) throw std::runtime_error("cannot create a run directory under " + base.parent_path().string());
    dir = base.string() + "-" + std::to_string(i);
  }
  fs::create_directories(dir / "ranks");
  return dir;
}

}  // namespace

void update_latest(const fs::path& results, const fs::path& run_dir) {
  fs::path link = results / "latest";
  fs::path tmp = results / ".latest.tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_directory_symlink(fs::relative(run_dir, results), tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
}

RunResult run_scenario(PreparedScenario& ps, const HostInfo& host, const RunOptions& opts) {
  const Scenario& sc = ps.scenario;
  RunResult res;
  res.scenario = sc.name;
  double t0 = unix_now();
  res.run_dir = make_run_dir(opts.results_dir, sc.name, t0);
  write_file(res.run_dir / "scenario.toml", sc.source_text);

  // [preflight]: `hanglab preflight` once per node under the faults, instead of the job.
  if (sc.preflight) return run_preflight_scenario(ps, host, opts, res.run_dir, t0);

  std::string skip = unsupported_reason(ps, host);
  if (!skip.empty()) {
    res.verdict = skipped_verdict(skip);
  } else {
    PortLease port;
    const int ws = sc.workload.world_size;
    std::vector<LaunchSpec> specs;
    // A bring-your-own script may cd into its data or checkpoint directory before it
    // writes anything: both exist before any rank starts.
    fs::create_directories(res.run_dir / "data");
    fs::create_directories(res.run_dir / "ckpt");
    for (int r = 0; r < ws; ++r) {
      LaunchSpec s;
      s.rank = r;
      s.argv = workload_argv(sc);
      RankEnvInput in;
      in.rank = r;
      in.world_size = ws;
      in.master_port = port.port();
      in.run_id = sc.name + "-" + res.run_dir.filename().string();
      in.run_dir = fs::absolute(res.run_dir);
      in.max_restarts = sc.workload.max_restarts;
      s.env = rank_env(in, sc);
      specs.push_back(std::move(s));
    }
    std::vector<ArmedFault> armed;
    for (size_t i = 0; i < ps.injectors.size(); ++i) armed.push_back({&sc.faults[i], ps.injectors[i].get(), false});

    SupervisorOptions sopts;
    sopts.capture_stacks = opts.capture_stacks;
    sopts.interrupt_fd = opts.interrupt_fd;
    sopts.on_state = opts.on_state;
    // Injectors prepare ranks; revert must run on every path from here on.
    struct NoRanksYet : Job {
      NoRanksYet(int w, std::string d) : ws(w), dir(std::move(d)) {}
      int ws;
      std::string dir;
      int world_size() const override { return ws; }
      pid_t pid_of(int) const override { return 0; }
      bool alive(int) const override { return false; }
      std::string run_dir() const override { return dir; }
    } before_launch{ws, res.run_dir.string()};
    // What the run creates outside its run directory is written here first (the kill -9
    // sweep's input). Declared before the supervisor and the guard, so it outlives them:
    // their teardown and reverts still record what they released.
    std::unique_ptr<RunState> state = RunState::create(sc.name, res.run_dir);
    sopts.state = state.get();
    for (auto& inj : ps.injectors) inj->attach_state(state.get());
    // [topology] nodes > 1: the nodes exist before any rank is prepared, and are removed
    // after the supervisor (every rank gone) and the reverts (declared before both).
    std::optional<NodeNet> net;
    if (sc.topology.multi_node()) {
      net.emplace(sc.topology, ws, port.port(), state.get());
      JsonlWriter(res.run_dir / "harness.jsonl").write(json{{"t", unix_now()}, {"ev", "nodes"}, {"nodes", net->describe()}});
      for (auto& s : specs) net->apply_env(s.rank, s.env);
      for (auto& inj : ps.injectors) inj->attach_nodes(&*net);
    }
    // launcher = "srun": the run's own Slurm cluster, up before srun is exec'd and stopped
    // after every rank is gone (declared before the supervisor, so destroyed after it).
    std::optional<SlurmCluster> slurm;
    if (sc.workload.launcher == "srun") {
      if (opts.on_state) opts.on_state("starting slurmctld, slurmd");
      slurm.emplace(res.run_dir, ws, state.get());
      JsonlWriter(res.run_dir / "harness.jsonl").write(json{{"t", unix_now()}, {"ev", "slurm"}, {"cluster", slurm->describe()}});
    }
    // Declared before the guard, so the guard (destroyed first) reverts while the
    // supervisor it may hand to revert() still exists.
    std::optional<Supervisor> sup;
    struct RevertGuard {
      PreparedScenario& ps;
      Job* job;
      std::vector<std::string> errors;
      bool done = false;
      void revert_all() {
        if (done) return;
        done = true;
        for (auto& inj : ps.injectors) {
          try {
            inj->revert(*job);
          } catch (const std::exception& e) {
            errors.push_back(e.what());
          }
        }
        for (auto& inj : ps.injectors) {
          inj->attach_state(nullptr);
          inj->attach_nodes(nullptr);
        }
      }
      ~RevertGuard() { revert_all(); }
    } guard{ps, &before_launch, {}};
    std::vector<std::map<std::string, std::string>> base_env;
    for (const auto& s : specs) base_env.push_back(s.env);
    if (net)
      for (auto& inj : ps.injectors) inj->prepare_nodes(*net);
    for (auto& s : specs)
      for (auto& inj : ps.injectors) inj->prepare_rank(s.rank, s);
    // Outermost: every other wrapper (a late start, a mount namespace) runs inside the node.
    if (net)
      for (auto& s : specs) prepend_wrapper(s, net->wrapper(net->node_of(s.rank)));
    if (auto plan = launcher_spec(sc.workload, specs, base_env, res.run_dir, net ? &*net : nullptr)) {
      sopts.launcher = plan->spec;
      sopts.rank_fifos = plan->rank_fifos;
      sopts.labelled_output = plan->labelled_output;
    }
    sup.emplace(sc, res.run_dir, std::move(specs), std::move(armed), sopts);
    guard.job = &*sup;
    res.facts = sup->run();
    // Something went wrong between nodes, or may have: probe them while every fault is still
    // in force, as an engineer would ping the nodes of a hung job (harness.jsonl `net_probe`).
    if (net && !res.facts.detections.empty())
      JsonlWriter(res.run_dir / "harness.jsonl").write(json{{"t", unix_now()}, {"ev", "net_probe"}, {"probe", net->probe()}});
    guard.revert_all();
    if (slurm) {
      slurm->stop();
      res.slurm = slurm->describe();
    }
    if (net) {
      res.topology = net->describe();
      net->destroy();
    }
    state->close();
    for (const auto& e : guard.errors)
      std::cerr << "hanglab: warning: revert of a fault failed: " << e << "\n";
    // What the ranks and the launcher left: error files under every launcher, torchrun's
    // account of the job (its log and summary) under torchrun.
    res.facts.error_files = read_error_files(res.run_dir);
    if (sc.workload.launcher == "torchrun") res.facts.torchrun = read_torchrun_facts(res.run_dir);
    {
      JsonlWriter log(res.run_dir / "harness.jsonl");
      for (const auto& e : res.facts.error_files) {
        json j = to_json(e);
        j["t"] = unix_now();
        j["ev"] = "error_file";
        log.write(j);
      }
      if (res.facts.torchrun) {
        json j = to_json(*res.facts.torchrun);
        j["t"] = unix_now();
        j["ev"] = "torchrun";
        log.write(j);
      }
    }
    // [detect] flight_recorder: torch's analyser is a second detector over the ranks' dumps.
    std::optional<TorchFrTraceResult> frtrace;
    if (sc.detect.flight_recorder) {
      if (opts.on_state) opts.on_state("torchfrtrace");
      frtrace = run_torchfrtrace(res.run_dir, ws, project_venv() / "bin" / "torchfrtrace", kTorchFrTraceTimeoutS);
      json j = to_json(*frtrace);
      j["t"] = unix_now();
      j["ev"] = "flight_recorder";
      JsonlWriter(res.run_dir / "harness.jsonl").write(j);
    }
    // After revert: injectors read their evidence (cgroup counters, daemon logs) there.
    res.facts.manifests = judge_faults(ps, res.facts, res.run_dir);
    {
      JsonlWriter log(res.run_dir / "harness.jsonl");
      for (const auto& m : res.facts.manifests)
        log.write({{"t", unix_now()},
                   {"ev", "exercised"},
                   {"index", m.index},
                   {"kind", m.kind},
                   {"fired", m.fired},
                   {"exercised", m.exercised},
                   {"evidence", m.evidence},
                   {"adapted", m.adapted}});
    }

    if (opts.on_state) opts.on_state("triage");
    res.triage = triage_run_dir(res.run_dir);
    write_file(res.run_dir / "triage.json",
               to_json(res.triage).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    res.verdict = check_expectations(sc, res.facts, res.triage);
    if (frtrace) res.flight_recorder = to_json(*frtrace);
  }
  res.duration_s = unix_now() - t0;
  res.record = run_json(sc, res, host);
  if (res.flight_recorder) res.record["flight_recorder"] = *res.flight_recorder;
  if (res.topology) res.record["topology"] = *res.topology;
  if (res.slurm) res.record["slurm"] = *res.slurm;
  // A rank's text may hold invalid UTF-8 (a cut line, binary output): replaced, not fatal.
  write_file(res.run_dir / "run.json",
             res.record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return res;
}

}  // namespace hanglab
