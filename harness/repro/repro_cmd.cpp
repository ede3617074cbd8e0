// `hanglab repro` (repro_cmd.hpp).
#include "repro/repro_cmd.hpp"

#include <unistd.h>

#include <fstream>
#include <set>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "repro/compare.hpp"
#include "repro/plan.hpp"
#include "run/runner.hpp"
#include "triage/triage.hpp"
#include "util.hpp"

namespace hanglab::repro {

namespace fs = std::filesystem;

namespace {

int usage_error(const std::string& msg) {
  std::cerr << "hanglab repro: " << msg << "\n";
  return 2;
}

// Where candidate i's scenario goes.
fs::path target_for(const ReproCommand& cmd, const fs::path& default_dir, const Plan& p, size_t i) {
  const Candidate& c = p.candidates[i];
  if (cmd.out.empty()) return default_dir / (c.name + ".toml");
  fs::path out(cmd.out);
  if (p.candidates.size() == 1) return out;
  std::string ext = out.extension().string();
  if (ext.empty()) ext = ".toml";
  return out.parent_path() / (out.stem().string() + "." + c.recipe.id + ext);
}

// The newest run directory of a scenario under `results` (run dirs are named by UTC stamp).
fs::path newest_run(const fs::path& results, const std::string& scenario) {
  fs::path best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(results / scenario, ec))
    if (e.is_directory(ec) && (best.empty() || e.path().filename() > best.filename())) best = e.path();
  return best;
}

// The last non-empty line of a child's output, for a one-line reason.
std::string one_line_of(const std::string& out) {
  std::string last, line;
  for (char ch : out) {
    if (ch == '\n') {
      if (line.find_first_not_of(" \t") != std::string::npos) last = line;
      line.clear();
    } else {
      line += ch;
    }
  }
  if (line.find_first_not_of(" \t") != std::string::npos) last = line;
  return last;
}

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("hanglab") : p.string();
}

}  // namespace

int repro_command(const ReproCommand& cmd) {
  // ---- everything that can be wrong with the input, before anything is written or spawned
  if (cmd.inputs.empty()) return usage_error("no incident given (log files, a log directory or a run directory)");
  for (const auto& in : cmd.inputs) {
    std::error_code ec;
    if (!fs::exists(in, ec)) return usage_error(in + ": no such file or directory");
  }
  if (cmd.world_size && (*cmd.world_size < 1 || *cmd.world_size > 64))
    return usage_error(fmt::format("--world-size {}: must be 1..64 (the reproduction runs on this host)",
                                   *cmd.world_size));
  if (cmd.backend != "gloo" && cmd.backend != "nccl")
    return usage_error("--backend " + cmd.backend + ": the repro recipes run torch_ddp on gloo or nccl");
  TriageResult answer;
  try {
    answer = triage_paths(std::vector<fs::path>(cmd.inputs.begin(), cmd.inputs.end()));
  } catch (const std::exception& e) {
    return usage_error(cmd.inputs.front() + ": " + e.what());
  }
  const auto unknown = [](const std::string& v) { return v.empty() || v == "unknown" || v == "none"; };
  if (answer.evidence.empty() && !answer.first_failure && answer.missing_ranks.empty() &&
      !answer.stuck_collective && unknown(answer.category) && unknown(answer.phase))
    return usage_error(fmt::format("{}: no recognizable incident (triage found no failure, missing rank, stuck "
                                   "collective or phase in it)",
                                   cmd.inputs.front()));

  PlanOptions popts;
  popts.world_size = cmd.world_size;
  popts.backend = cmd.backend;
  const Plan plan = make_plan(answer, std::vector<fs::path>(cmd.inputs.begin(), cmd.inputs.end()), popts);

  const fs::path default_dir = fs::path(cmd.results) / "repro" / (plan.incident + "-" + utc_stamp(unix_now()));
  std::vector<fs::path> targets;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    targets.push_back(target_for(cmd, default_dir, plan, i));
    std::error_code ec;
    if (!cmd.out.empty() && fs::exists(targets.back(), ec) && !cmd.force)
      return usage_error(targets.back().string() + ": exists (--force replaces it)");
  }
  std::cout << fmt::format("incident {}: {}/{}, culprit {}{}, phase {}, scope {}, world {}\n", plan.incident,
                           answer.category.empty() ? "unknown" : answer.category,
                           answer.cause.empty() ? "unknown" : answer.cause, plan.role,
                           plan.culprits.empty() ? "" : " (rank " + rank_ranges(plan.culprits) + ")",
                           answer.phase.empty() ? "unknown" : answer.phase,
                           answer.scope.empty() ? "unknown" : answer.scope,
                           answer.world_size > 0 ? std::to_string(answer.world_size) : "unstated");
  if (plan.split.nodes >= 2) std::cout << "  nodes: " << plan.split.describe() << "\n";
  for (const auto& c : plan.cites) std::cout << "  based on " << c << "\n";
  for (const auto& t : plan.timeouts)
    std::cout << fmt::format("  stated {} timeout {:g} s ({})\n", t.what, t.seconds, t.ref);
  if (plan.candidates.empty()) {
    std::cout << plan.not_here << "\n";
    return 1;
  }
  if (plan.absence)
    std::cout << fmt::format("  rank {} is missing by absence; the logs leave open whether it was killed, frozen or "
                             "skipped the collective: {} candidates, most plausible first\n",
                             rank_ranges(plan.culprits), plan.candidates.size());

  // ---- write the scenarios: each checked by the loader under a temporary name, then renamed
  // Every file is loaded under its temporary name first; only when all load are they renamed
  // into place, so a failure leaves none of them behind.
  std::vector<fs::path> tmps;
  const auto drop_tmps = [&] {
    std::error_code ec;
    for (const auto& t : tmps) fs::remove(t, ec);
  };
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const fs::path& t = targets[i];
    std::error_code ec;
    if (!t.parent_path().empty()) fs::create_directories(t.parent_path(), ec);
    tmps.push_back(t.parent_path() / (".repro-" + std::to_string(::getpid()) + "-" + t.filename().string()));
    try {
      write_file(tmps.back(), render_scenario(plan, plan.candidates[i], popts));
      (void)prepare_scenario(tmps.back());
    } catch (const std::exception& e) {
      drop_tmps();
      std::cerr << "hanglab repro: internal error: the generated scenario " << t.string() << " does not load: "
                << e.what() << "\n";
      return 3;
    }
  }
  for (size_t i = 0; i < tmps.size(); ++i) fs::rename(tmps[i], targets[i]);

  int reproduced = 0, ran = 0, skipped = 0;
  std::set<std::string> missing_in;  // fields some run differed in
  std::vector<std::string> nearest;  // the faults that ran
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    if (cmd.interrupted && *cmd.interrupted) {
      std::cerr << "hanglab repro: interrupted; the remaining candidates were not run\n";
      return 130;
    }
    const Candidate& c = plan.candidates[i];
    std::cout << fmt::format("candidate {}/{} {} ({}, rank(s) {} of {}, role {}): {}\n", i + 1, plan.candidates.size(),
                             c.recipe.id, c.recipe.fault, rank_ranges(c.culprits), c.world, c.role, c.rank_why);
    if (!c.phase_note.empty()) std::cout << "  phase: " << c.phase_note << "\n";
    if (!c.node_note.empty()) std::cout << "  nodes: " << c.node_note << "\n";
    std::cout << "  scenario: " << targets[i].string() << "\n";
    if (!cmd.run) continue;
    const std::string exe = cmd.hanglab.empty() ? self_exe() : cmd.hanglab;
    ToolResult tr = run_tool({exe, "run", targets[i].string(), "-j", "1", "--results", cmd.results});
    if (tr.status == 4) {
      ++skipped;
      // hanglab run's verdict line: "SKIPPED  <name>  <reason>".
      std::string why = tr.output;
      if (auto pos = why.find("SKIPPED"); pos != std::string::npos) {
        why = why.substr(pos);
        why = why.substr(0, why.find('\n'));
        if (auto n = why.find(c.name); n != std::string::npos) why = why.substr(n + c.name.size());
        why.erase(0, why.find_first_not_of(" \t"));
      } else {
        why = one_line_of(why);
      }
      std::cout << "  " << c.recipe.id << ": not run here: " << why << "\n";
      continue;
    }
    const fs::path run_dir = newest_run(cmd.results, c.name);
    if (tr.status == 2 || run_dir.empty() || !fs::exists(run_dir / "run.json")) {
      std::cout << "  " << c.recipe.id << ": not reproduced: the run did not complete (hanglab run status "
                << tr.status << "): " << one_line_of(tr.output) << "\n";
      continue;
    }
    ++ran;
    std::vector<Observed> readings;
    Observed rec;
    rec.reader = "run record";
    rec.answer = triage_run_dir(run_dir);
    try {
      rec.detectors = detectors_from_run_json(nlohmann::json::parse(read_file(run_dir / "run.json")));
    } catch (const std::exception&) {
    }
    readings.push_back(rec);
    Observed logs;
    logs.reader = "run's logs, as the incident's were read";
    TriageOptions lo;
    lo.logs_only = true;
    logs.answer = triage_paths({run_dir}, lo);
    logs.detectors = rec.detectors;
    readings.push_back(logs);
    const Comparison cmp = compare(plan, c, readings);
    if (cmp.reproduced) ++reproduced;
    for (const auto& f : cmp.differ_fields) missing_in.insert(f);
    nearest.push_back(c.recipe.fault);
    std::cout << "  " << c.recipe.id << ": " << cmp.line() << "\n";
    for (const auto& n : cmp.notes) std::cout << "    " << n << "\n";
    std::cout << "    its [expect]: " << (tr.status == 0 ? "met" : fmt::format("not met (hanglab run exit {})", tr.status))
              << "; run record: " << run_dir.string() << "\n";
  }
  if (!cmd.run) return 0;
  if (reproduced > 0) return 0;
  if (ran > 0) {
    // Say what the catalog lacks: a fault whose run gives the incident's answer, or one that acts
    // in the incident's phase or on every rank alike.
    std::string lacks;
    if (missing_in.count("category") || missing_in.count("cause"))
      lacks = fmt::format("a fault whose run triage reads as {}/{}", answer.category, answer.cause);
    else if (missing_in.count("phase"))
      lacks = fmt::format("{} acting in phase {}", fmt::join(nearest, ", "), answer.phase);
    else
      lacks = fmt::format("{} with the incident's culprit role ({}) and scope ({})", fmt::join(nearest, ", "),
                          plan.role, answer.scope);
    std::cout << fmt::format("not reproduced by any candidate (nearest: {}); missing fault: {}\n",
                             fmt::join(nearest, ", "), lacks);
  }
  if (ran == 0 && skipped > 0) return 4;
  return 1;
}

}  // namespace hanglab::repro
