// Reading a finished run directory back; see run_record.hpp.
#include "run/run_record.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sys/utsname.h>
#include <unistd.h>

#include "history/history.hpp"
#include "util.hpp"
#include "run/launchers/launchers.hpp"
#include "run/workloads.hpp"
#include "signal_name.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<json> read_jsonl(const fs::path& file) {
  std::vector<json> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

json read_run_json(const fs::path& run_dir) {
  std::ifstream in(run_dir / "run.json");
  if (!in) return json::object();
  json j = json::parse(in, nullptr, false);
  return j.is_object() ? j : json::object();
}

RunFacts read_run_facts(const fs::path& run_dir) {
  RunFacts f;
  const json rj = read_run_json(run_dir);
  double run_start_t = 0;
  for (const auto& e : read_jsonl(run_dir / "harness.jsonl")) {
    const std::string ev = e.value("ev", "");
    const double t = e.value("t", 0.0);
    if (ev == "run_start") {
      run_start_t = t;
    } else if (ev == "launch") {
      if (f.start_t == 0) f.start_t = t;
    } else if (ev == "fault") {
      FaultFiring x;
      x.kind = e.value("kind", "");
      if (e.contains("ranks") && e["ranks"].is_array())
        for (const auto& r : e["ranks"])
          if (r.is_number_integer()) x.ranks.push_back(r.get<int>());
      x.t = t;
      x.detail = e.value("detail", "");
      f.faults.push_back(x);
    } else if (ev == "exercised") {
      FaultManifest m;
      m.index = e.value("index", static_cast<int>(f.manifests.size()));
      m.kind = e.value("kind", "");
      m.fired = e.value("fired", false);
      m.exercised = e.value("exercised", false);
      m.evidence = e.value("evidence", "");
      if (e.contains("adapted") && e["adapted"].is_array())
        for (const auto& a : e["adapted"])
          if (a.is_string()) m.adapted.push_back(a.get<std::string>());
      f.manifests.push_back(m);
    } else if (ev == "detect") {
      f.detections.push_back({e.value("detector", ""), e.value("rank", -1), t, e.value("detail", "")});
    } else if (ev == "detect_retracted") {
      // A detection the supervisor found later to be another's echo (Supervisor::detect).
      const std::string det = e.value("detector", "");
      const int rank = e.value("rank", -1);
      f.detections.erase(std::remove_if(f.detections.begin(), f.detections.end(),
                                        [&](const Detection& d) { return d.detector == det && d.rank == rank; }),
                         f.detections.end());
    } else if (ev == "exit") {
      RankExit x;
      x.rank = e.value("rank", -1);
      if (e.contains("code") && e["code"].is_number_integer()) x.code = e["code"].get<int>();
      if (e.contains("signal") && e["signal"].is_number_integer()) x.signal = e["signal"].get<int>();
      x.t = t;
      f.exits.push_back(x);
    } else if (ev == "teardown") {
      f.teardown_reason = e.value("reason", "");
    } else if (ev == "run_end") {
      f.end_t = t;
      f.outcome = e.value("outcome", "");
    }
  }
  // The supervisor stamps the launch time after run_start; run.json has the exact value.
  if (rj.contains("start_t") && rj["start_t"].is_number()) f.start_t = rj["start_t"].get<double>();
  if (f.start_t == 0) f.start_t = run_start_t;
  if (f.end_t == 0 && rj.contains("end_t") && rj["end_t"].is_number()) f.end_t = rj["end_t"].get<double>();
  if (f.teardown_reason.empty() && f.end_t > 0) f.teardown_reason = rj.value("teardown_reason", "all_exited");
  f.error_files = read_error_files(run_dir);
  if (rj.contains("settings") && rj["settings"].is_object() && rj["settings"].value("launcher", "") == "torchrun")
    f.torchrun = read_torchrun_facts(run_dir);
  std::stable_sort(f.detections.begin(), f.detections.end(),
                   [](const Detection& a, const Detection& b) { return a.t < b.t; });
  return f;
}

void header_notes(const std::string& text, std::string& reproduces, std::string& expected) {
  std::string* cur = nullptr;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty() || line[0] != '#') break;  // the opening comment block ends
    std::string body = line.substr(1);
    while (!body.empty() && body.front() == ' ') body.erase(0, 1);
    if (body.rfind("Reproduces:", 0) == 0) {
      cur = &reproduces;
      body = body.substr(11);
    } else if (body.rfind("Expected", 0) == 0 && body.find(':') != std::string::npos && body.find(':') < 40) {
      cur = &expected;
      body = body.substr(body.find(':') + 1);
    } else if (body.empty()) {
      cur = nullptr;
      continue;
    }
    if (!cur) continue;
    while (!body.empty() && body.front() == ' ') body.erase(0, 1);
    if (!body.empty()) *cur += (cur->empty() ? "" : " ") + body;
  }
}

LoadedRun load_run_dir(const fs::path& dir) {
  if (!fs::exists(dir / "harness.jsonl") && !fs::exists(dir / "run.json"))
    throw std::runtime_error(dir.string() + ": not a hanglab run directory (no harness.jsonl, no run.json)");
  LoadedRun out;
  out.run_json = read_run_json(dir);
  try {
    out.scenario = load_scenario(dir / "scenario.toml", make_load_options());
    // The copy is named scenario.toml, so a scenario without [scenario].name would take
    // "scenario" from the file stem: the name it ran under is in run.json.
    out.scenario.name = out.run_json.value("scenario", dir.parent_path().filename().string());
  } catch (const std::exception&) {
    // The copy no longer loads (the format moved on): keep what run.json says.
    out.scenario = Scenario{};
    out.scenario.name = out.run_json.value("scenario", dir.parent_path().filename().string());
    out.scenario.description = out.run_json.value("description", "");
    std::ifstream in(dir / "scenario.toml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    header_notes(text, out.scenario.reproduces, out.scenario.expected_note);
  }
  RunResult& r = out.result;
  r.scenario = out.scenario.name;
  r.run_dir = dir;
  r.facts = read_run_facts(dir);
  r.record = out.run_json;
  if (fs::exists(dir / "ranks")) r.triage = triage_run_dir(dir);
  if (out.run_json.contains("verdict")) r.verdict = verdict_from_json(out.run_json["verdict"]);
  if (r.verdict.status.empty()) r.verdict.status = "unknown";
  r.duration_s = out.run_json.value("duration_s", r.facts.end_t > r.facts.start_t ? r.facts.end_t - r.facts.start_t : 0.0);
  return out;
}

nlohmann::json run_json(const Scenario& sc, const RunResult& res, const HostInfo& host) {
  utsname u{};
  ::uname(&u);
  char hostname[256] = {0};
  ::gethostname(hostname, sizeof hostname - 1);
  const RunFacts& f = res.facts;
  using nlohmann::json;
  json faults = json::array(), detections = json::array(), exits = json::array();
  // [torch]: each knob written, with the variable the ranks got (nothing written: {}).
  json torch = json::object();
  for (const auto& [key, v] : sc.torch.set) torch[key] = {{"env", v.env}, {"value", v.value}};
  double ft = f.faults.empty() ? f.start_t : f.faults.front().t;
  // One entry per firing (in firing order), then the faults that never fired; each with
  // its manifestation judgment (exercised, evidence) and what adapt() arranged for it.
  std::vector<bool> used(f.manifests.size(), false);
  auto judged = [&](const std::string& kind) -> const FaultManifest* {
    for (size_t i = 0; i < f.manifests.size(); ++i)
      if (!used[i] && f.manifests[i].kind == kind && f.manifests[i].fired) {
        used[i] = true;
        return &f.manifests[i];
      }
    return nullptr;
  };
  auto add_judgment = [](json& j, const FaultManifest* m) {
    if (!m) return;
    j["index"] = m->index;
    j["exercised"] = m->exercised;
    j["evidence"] = m->evidence;
    j["adapted"] = m->adapted;
  };
  for (const auto& x : f.faults) {
    json j = {{"kind", x.kind}, {"ranks", x.ranks}, {"t", x.t}, {"after_launch_s", x.t - f.start_t},
              {"detail", x.detail}, {"fired", true}};
    add_judgment(j, judged(x.kind));
    faults.push_back(std::move(j));
  }
  for (size_t i = 0; i < f.manifests.size(); ++i) {
    if (used[i]) continue;
    json j = {{"kind", f.manifests[i].kind}, {"fired", false}};
    add_judgment(j, &f.manifests[i]);
    faults.push_back(std::move(j));
  }
  for (const auto& d : f.detections)
    detections.push_back({{"detector", d.detector}, {"rank", d.rank}, {"t", d.t}, {"after_fault_s", d.t - ft}, {"detail", d.detail}});
  for (const auto& e : f.exits)
    exits.push_back({{"rank", e.rank},
                     {"code", e.code ? json(*e.code) : json(nullptr)},
                     {"signal", e.signal ? json(signal_name(*e.signal)) : json(nullptr)},
                     {"status", e.status()},
                     {"t", e.t}});
  json error_files = json::array();
  for (const auto& e : f.error_files) error_files.push_back(to_json(e));
  return {{"scenario", sc.name},
          {"file", sc.file.string()},
          {"description", sc.description},
          {"tags", sc.tags},
          {"host",
           {{"hostname", hostname},
            {"kernel", std::string(u.sysname) + " " + u.release},
            {"machine", u.machine},
            {"cpus", ::sysconf(_SC_NPROCESSORS_ONLN)},
            {"root", host.is_root},
            {"cgroup_v2", host.cgroup_v2},
            {"cgroup_v1_cpu", host.cgroup_v1_cpu},
            {"mount_namespaces", host.mount_namespaces},
            {"gpu", host.gpu},
            {"torch_version", torch_version()}}},
          {"settings",
           {{"workload", sc.workload.command.empty() ? json(sc.workload.name) : json(sc.workload.command)},
            {"backend", sc.workload.backend},
            {"world_size", sc.workload.world_size},
            {"steps", sc.workload.steps},
            {"launcher", sc.workload.launcher},
            {"max_restarts", sc.workload.max_restarts},
            {"deadline_s", sc.deadline_s},
            {"timeouts",
             {{"init_s", sc.timeouts.init_s},
              {"collective_s", sc.timeouts.collective_s},
              {"progress_s", sc.timeouts.progress_s},
              {"heartbeat_s", sc.timeouts.heartbeat_s},
              {"checkpoint_s", sc.timeouts.checkpoint_s ? json(*sc.timeouts.checkpoint_s) : json(nullptr)},
              {"eval_s", sc.timeouts.eval_s ? json(*sc.timeouts.eval_s) : json(nullptr)}}},
            {"torch", torch}}},
          {"start_t", f.start_t},
          {"end_t", f.end_t},
          {"duration_s", res.duration_s},
          {"outcome", f.outcome},
          {"teardown_reason", f.teardown_reason},
          {"faults", faults},
          {"detections", detections},
          {"exits", exits},
          {"error_files", error_files},
          {"torchrun", f.torchrun ? to_json(*f.torchrun) : json(nullptr)},
          {"triage", {{"category", res.triage.category}, {"cause", res.triage.cause}, {"missing_ranks", res.triage.missing_ranks}}},
          {"verdict", to_json(res.verdict)}};
}

}  // namespace hanglab
