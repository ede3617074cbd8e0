// The torchrun launcher: the project venv's `torchrun` starts every rank (see launchers.hpp).
//
// torchrun gives each worker the same command line, so each worker is hanglab_rank_exec
// (harness/run/launchers/rank_exec.cpp): it reads ranks/<RANK>/launch.json (the rank's own
// argv, wrapper, environment and hooks, written here), appends {pid, restart_count} to
// ranks/<RANK>/exec.jsonl (how the supervisor learns the pid of every incarnation and opens
// its pidfd), points stdout/stderr at ranks/<RANK>/std{out,err}.fifo (the supervisor reads
// each rank's output on its own pipe) and execs the rank: same pid, torchrun's child.
//
// Rendezvous: c10d on 127.0.0.1:0 (torchrun picks the port, as --standalone does), so
// hanglab's leased MASTER_PORT stays free for the built-in workloads, which rendezvous on
// their own TCPStore there; a bring-your-own script gets torchrun's MASTER_ADDR/PORT (its
// agent store, TORCHELASTIC_USE_AGENT_STORE=True), as under torchrun anywhere.
//
// After the run, read_torchrun_facts() reads what torchrun did from the run directory.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "run/launchers/launchers.hpp"
#include "run/rank_env.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// torchrun's own default rendezvous port, on node 0's address inside node 0's namespace.
constexpr int kNodeRdzvPort = 29400;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

LauncherPlan torchrun_launch_plan(const WorkloadSpec& w, const std::vector<LaunchSpec>& specs,
                                  const std::vector<std::map<std::string, std::string>>& base_env,
                                  const fs::path& run_dir, const NodeNetView* nodes) {
  const fs::path dir = fs::absolute(run_dir);
  const bool builtin = w.command.empty();
  std::string run_id = "hanglab";
  if (!base_env.empty())
    if (auto it = base_env[0].find("TORCHELASTIC_RUN_ID"); it != base_env[0].end()) run_id = it->second;
  for (const auto& s : specs) {
    json env = json::object();
    const auto* base = static_cast<size_t>(s.rank) < base_env.size() ? &base_env[s.rank] : nullptr;
    for (const auto& [k, v] : s.env) {
      bool keep = !is_torchrun_contract_key(k) || w.env.count(k) > 0;
      if (base)
        if (auto it = base->find(k); it == base->end() || it->second != v) keep = true;  // a fault's change
      // The built-in workloads rendezvous on their own TCPStore at hanglab's port.
      if (builtin && (k == "MASTER_ADDR" || k == "MASTER_PORT")) keep = true;
      if (keep) env[k] = v;
    }
    if (builtin) env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
    write_rank_launch(dir, s, std::move(env));
  }
  LauncherPlan p;
  p.rank_fifos = true;
  const fs::path shim = rank_exec_shim();
  p.spec.rank = -1;
  const std::string torchrun = (project_venv() / "bin" / "torchrun").string();
  // torchrun's own log lines reach its stderr at once.
  p.spec.env = {{"PYTHONUNBUFFERED", "1"}};
  if (!nodes || nodes->nodes() < 2) {
    p.spec.argv = {torchrun,
                   "--nnodes", "1",
                   "--nproc-per-node", std::to_string(specs.size()),
                   "--rdzv-backend", "c10d",
                   "--rdzv-endpoint", "127.0.0.1:0",
                   "--rdzv-id", run_id,
                   "--max-restarts", std::to_string(w.max_restarts),
                   "--log-dir", (dir / "torchrun").string(),
                   "--no-python", shim.string(), dir.string()};
    return p;
  }
  // One agent per node. Each is its node's process: its workers inherit the namespace (and
  // enter it once more through their own wrapper, a no-op). The rendezvous endpoint is a
  // fixed port on node 0's address: every node has a network namespace of its own, so no
  // other process on this host can hold that port there. Each agent writes whole lines, so
  // their lines reach the launcher's pipes unmixed (one write(2) under PIPE_BUF each).
  const int n = nodes->nodes();
  const int per = static_cast<int>(specs.size()) / n;
  std::string script =
      "pids=()\n"
      "trap 'kill -TERM \"${pids[@]}\" 2>/dev/null' TERM INT HUP\n";
  for (int k = 0; k < n; ++k) {
    std::vector<std::string> a = nodes->wrapper(k);
    const std::vector<std::string> agent = {torchrun,
                                            "--nnodes", std::to_string(n),
                                            "--node-rank", std::to_string(k),
                                            "--nproc-per-node", std::to_string(per),
                                            "--rdzv-backend", "c10d",
                                            "--rdzv-endpoint", nodes->addr(0) + ":" + std::to_string(kNodeRdzvPort),
                                            "--rdzv-id", run_id,
                                            "--local-addr", nodes->addr(k),
                                            // torchrun decides who hosts the rendezvous store by matching the
                                            // endpoint against this host's name, which the namespaces share:
                                            // say it.
                                            "--rdzv-conf", k == 0 ? "is_host=true" : "is_host=false",
                                            "--max-restarts", std::to_string(w.max_restarts),
                                            "--log-dir", (dir / "torchrun" / nodes->name(k)).string(),
                                            "--no-python", shim.string(), dir.string()};
    a.insert(a.end(), agent.begin(), agent.end());
    for (const auto& x : a) script += shell_quote(x) + " ";
    script += "&\npids+=($!)\n";
  }
  // wait returns early (above 128) when a trapped signal arrives: wait again until that
  // agent is gone, then keep the first failure.
  script +=
      "rc=0\n"
      "for p in \"${pids[@]}\"; do\n"
      "  wait \"$p\"; s=$?\n"
      "  while [ $s -gt 128 ] && kill -0 \"$p\" 2>/dev/null; do wait \"$p\"; s=$?; done\n"
      "  [ $rc -eq 0 ] && rc=$s\n"
      "done\n"
      "exit $rc\n";
  p.spec.argv = {"bash", "-c", script, "hanglab-torchrun-nodes"};
  return p;
}

namespace {

// "2026-12-02T02:24:34.972000Z " in front of a launcher line (the supervisor's stamp).
double stamp_of(const std::string& line, std::string& rest) {
  rest = line;
  if (line.size() < 28 || line[4] != '-' || line[10] != 'T') return 0;
  auto sp = line.find(' ');
  if (sp == std::string::npos) return 0;
  rest = line.substr(sp + 1);
  std::tm tm{};
  int us = 0;
  if (sscanf(line.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
             &tm.tm_min, &tm.tm_sec, &us) != 7)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + us / 1e6;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

void parse_torchrun_summary(const std::string& log, std::optional<TorchrunFailure>& root_cause,
                            std::vector<TorchrunFailure>& failures) {
  // The block torchrun's ChildFailedError prints:
  //   Failures:
  //   [1]:
  //     time      : 2026-12-02_02:24:34
  //     host      : localhost
  //     rank      : 0 (local_rank: 0)
  //     exitcode  : -15 (pid: 27081)  (SIGTERM)
  //     error_file: <N/A>
  //     traceback : Signal 15 (SIGTERM) received by PID 27081
  //   ------------------------------------------------------------
  //   Root Cause (first observed failure):
  //   [0]:
  //     ...
  static const std::regex kEntry(R"(^\[(\d+)\]:$)");
  static const std::regex kField(R"(^\s+(time|host|rank|exitcode|error_file|traceback)\s*:\s?(.*)$)");
  static const std::regex kRank(R"((-?\d+)\s*\(local_rank:\s*(-?\d+)\))");
  static const std::regex kExit(R"((-?\d+)\s*\(pid:\s*(\d+)\))");
  std::istringstream in(log);
  std::string raw, line;
  enum { kNone, kFailures, kRoot } section = kNone;
  TorchrunFailure* cur = nullptr;
  bool in_traceback = false;
  std::vector<TorchrunFailure> found_failures;
  std::optional<TorchrunFailure> found_root;
  while (std::getline(in, raw)) {
    stamp_of(raw, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("Failures:", 0) == 0) {
      section = kFailures;
      found_failures.clear();
      found_root.reset();
      cur = nullptr;
      continue;
    }
    if (line.rfind("Root Cause (first observed failure):", 0) == 0) {
      section = kRoot;
      cur = nullptr;
      continue;
    }
    if (section == kNone) continue;
    std::smatch m;
    if (line.rfind("---", 0) == 0) in_traceback = false;
    if (std::regex_match(line, m, kEntry)) {
      in_traceback = false;
      if (section == kFailures) {
        found_failures.emplace_back();
        cur = &found_failures.back();
      } else {
        found_root.emplace();
        cur = &*found_root;
      }
      continue;
    }
    if (line.rfind("====", 0) == 0) {  // end of the summary
      if (found_root) root_cause = found_root, failures = found_failures;
      section = kNone;
      cur = nullptr;
      continue;
    }
    // A multi-line traceback (a rank that wrote an error file) continues with the traceback's
    // lines, each indented by two spaces: keep its last one, the exception ("RuntimeError: ...").
    if (cur && in_traceback && line.rfind("  ", 0) == 0) {
      if (auto t = trim(line); !t.empty()) cur->traceback = t;
      continue;
    }
    in_traceback = false;
    if (!cur || !std::regex_match(line, m, kField)) continue;
    const std::string key = m[1], val = trim(m[2]);
    std::smatch v;
    if (key == "time") cur->time = val;
    else if (key == "error_file") cur->error_file = val;
    else if (key == "traceback") cur->traceback = val, in_traceback = true;
    else if (key == "rank" && std::regex_search(val, v, kRank))
      cur->rank = std::stoi(v[1]), cur->local_rank = std::stoi(v[2]);
    else if (key == "exitcode" && std::regex_search(val, v, kExit))
      cur->exitcode = std::stoi(v[1]), cur->pid = std::stoi(v[2]);
  }
  if (section != kNone && found_root) root_cause = found_root, failures = found_failures;  // cut short
}

TorchrunFacts read_torchrun_facts(const fs::path& run_dir) {
  TorchrunFacts t;
  std::error_code ec;
  // Every incarnation of every rank: restart_count as torchrun gave it.
  if (fs::is_directory(run_dir / "ranks", ec))
    for (const auto& d : fs::directory_iterator(run_dir / "ranks", ec)) {
      std::ifstream in(d.path() / "exec.jsonl");
      for (std::string line; std::getline(in, line);) {
        json j = json::parse(line, nullptr, false);
        if (j.is_object()) t.restarts = std::max(t.restarts, j.value("restart_count", 0));
      }
    }
  // When hanglab's own teardown began (the watchdog, the deadline, Ctrl-C), and how the
  // launcher ended.
  double harness_teardown_t = 0, launcher_exit_t = 0;
  {
    std::ifstream in(run_dir / "harness.jsonl");
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (!j.is_object()) continue;
      const std::string ev = j.value("ev", "");
      if (ev == "teardown" && j.value("reason", "") != "launcher_abort" && harness_teardown_t == 0)
        harness_teardown_t = j.value("t", 0.0);
      if (ev == "launcher_exit") {
        launcher_exit_t = j.value("t", 0.0);
        if (j.contains("code") && j["code"].is_number_integer()) t.exit_code = j["code"].get<int>();
        if (j.contains("signal") && j["signal"].is_number_integer()) t.exit_signal = j["signal"].get<int>();
      }
    }
  }
  std::string log;
  try {
    log = read_file(run_dir / "launcher.stderr.log");
  } catch (...) {
  }
  std::istringstream in(log);
  for (std::string raw, line; std::getline(in, raw);) {
    const double ts = stamp_of(raw, line);
    const bool before_ours = harness_teardown_t == 0 || (ts > 0 && ts < harness_teardown_t);
    if (line.find("closing signal") != std::string::npos && line.find("Sending process") != std::string::npos &&
        before_ours)
      ++t.closing_signals;
    if (line.find("Unable to shutdown process") != std::string::npos && before_ours) t.sigkill_escalation = true;
  }
  t.tore_down = t.closing_signals > 0;
  t.alive_at_harness_teardown = harness_teardown_t > 0 && (launcher_exit_t == 0 || launcher_exit_t >= harness_teardown_t);
  t.hung_in_teardown = t.sigkill_escalation || (t.tore_down && t.alive_at_harness_teardown);
  parse_torchrun_summary(log, t.root_cause, t.failures);
  return t;
}

namespace {
json failure_json(const TorchrunFailure& f) {
  return {{"rank", f.rank},   {"local_rank", f.local_rank}, {"exitcode", f.exitcode}, {"pid", f.pid},
          {"time", f.time},   {"error_file", f.error_file}, {"traceback", f.traceback}};
}
}  // namespace

json to_json(const TorchrunFacts& t) {
  json failures = json::array();
  for (const auto& f : t.failures) failures.push_back(failure_json(f));
  return {{"restarts", t.restarts},
          {"closing_signals", t.closing_signals},
          {"tore_down", t.tore_down},
          {"sigkill_escalation", t.sigkill_escalation},
          {"alive_at_harness_teardown", t.alive_at_harness_teardown},
          {"hung_in_teardown", t.hung_in_teardown},
          {"exit_code", t.exit_code ? json(*t.exit_code) : json(nullptr)},
          {"exit_signal", t.exit_signal ? json(*t.exit_signal) : json(nullptr)},
          {"root_cause", t.root_cause ? failure_json(*t.root_cause) : json(nullptr)},
          {"failures", failures}};
}

}  // namespace hanglab
