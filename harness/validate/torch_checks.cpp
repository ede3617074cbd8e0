// The torch-knob interaction rules and the probe readers; see torch_checks.hpp.
#include "validate/torch_checks.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "run/supervisor.hpp"
#include "triage/fr/dump.hpp"
#include "util.hpp"
#include "validate/validate.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

double hanglab_term_grace_s() { return SupervisorOptions{}.term_grace_s; }

namespace {

long long int_or(const TorchKnobs& k, const std::string& key) {
  if (auto v = k.int_value(key)) return *v;
  return std::stoll(find_torch_knob(key)->torch_default);
}

bool bool_or(const TorchKnobs& k, const std::string& key) {
  if (auto v = k.bool_value(key)) return *v;
  return std::string(find_torch_knob(key)->torch_default) == "true";
}

// "key = value" for the report; torch's default marked as such.
std::string shown(const TorchKnobs& k, const std::string& key) {
  const TorchKnobSpec* s = find_torch_knob(key);
  if (!k.has(key)) return fmt::format("{} = {} (default)", key, s->torch_default);
  const std::string type(s->type);
  const std::string v = *k.string_value(key);
  return fmt::format("{} = {}", key, type == "bool" ? (v == "1" ? "true" : "false") : v);
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

std::vector<KnobInteraction> torch_interactions(const TorchKnobs& k, const Timeouts& to, const KnobProbe& probe) {
  std::vector<KnobInteraction> out;
  const double grace = hanglab_term_grace_s();
  const double wait_s = static_cast<double>(int_or(k, "nccl_wait_timeout_dump_ms")) / 1000.0;

  // The heartbeat monitor aborts the process when the watchdog is stuck for the heartbeat
  // timeout; a hang's dump is due collective_s after the hang plus up to the dump wait.
  if (k.has("nccl_heartbeat_timeout_s") || k.has("nccl_wait_timeout_dump_ms") || k.has("nccl_enable_monitoring")) {
    KnobInteraction r{"heartbeat_before_dump",
                      fmt::format("{}, {}, {}, collective_s = {:g}", shown(k, "nccl_enable_monitoring"),
                                  shown(k, "nccl_heartbeat_timeout_s"), shown(k, "nccl_wait_timeout_dump_ms"),
                                  to.collective_s),
                      "the heartbeat monitor aborts the process before the watchdog's Flight Recorder dump is written",
                      "", "needs_nccl"};
    const long long hb = int_or(k, "nccl_heartbeat_timeout_s");
    const double due = to.collective_s + wait_s;
    if (!bool_or(k, "nccl_enable_monitoring")) {
      r.measured = "static: monitoring off, nothing aborts a stuck watchdog (the heartbeat timeout is unused; a rank "
                   "stuck in a CUDA/NCCL call stays until the launcher's watchdog)";
    } else if (static_cast<double>(hb) < due) {
      r.measured = fmt::format("static: heartbeat timeout {} s < collective_s + dump wait = {:g} + {:g} = {:g} s: the "
                               "abort comes first, the dump is lost",
                               hb, to.collective_s, wait_s, due);
      r.verdict = "harmful";
    } else {
      r.measured = fmt::format("static: heartbeat timeout {} s >= collective_s + dump wait = {:g} s", hb, due);
    }
    out.push_back(r);
  }

  // A rank waits up to the dump wait for its dump; a launcher that stops it kills it after its grace.
  if (k.has("nccl_wait_timeout_dump_ms")) {
    KnobInteraction r{"dump_wait_vs_grace",
                      fmt::format("{}; torchrun --shutdown-timeout {:g} s, hanglab teardown grace {:g} s",
                                  shown(k, "nccl_wait_timeout_dump_ms"), kTorchrunShutdownTimeoutS, grace),
                      "a launcher SIGKILLs a rank still waiting for its dump: the dump is lost", "", "needs_nccl"};
    std::vector<std::string> over;
    if (wait_s > kTorchrunShutdownTimeoutS) over.push_back(fmt::format("torchrun's {:g} s", kTorchrunShutdownTimeoutS));
    if (wait_s > grace) over.push_back(fmt::format("hanglab's {:g} s", grace));
    if (over.empty()) {
      r.measured = fmt::format("static: dump wait {:g} s fits every grace period", wait_s);
    } else {
      r.measured = fmt::format("static: dump wait {:g} s > {}", wait_s, fmt::join(over, " and "));
      r.verdict = "harmful";
    }
    out.push_back(r);
  }

  // Measured: how long a real dump takes here, against the grace periods.
  if (probe.ran && !probe.dump_ms.empty()) {
    const double worst = max_of(probe.dump_ms) / 1000.0;
    KnobInteraction r{"dump_time_vs_grace",
                      fmt::format("{}; torchrun --shutdown-timeout {:g} s, hanglab teardown grace {:g} s",
                                  shown(k, "fr_buffer_size"), kTorchrunShutdownTimeoutS, grace),
                      "a rank asked to stop (SIGTERM) dumps its Flight Recorder on the way out; a dump slower than the "
                      "launcher's grace is cut by SIGKILL",
                      fmt::format("{} dumps, longest {:.2f} s (entries up to {})", probe.dump_ms.size(), worst,
                                  probe.dump_entries.empty()
                                      ? 0
                                      : *std::max_element(probe.dump_entries.begin(), probe.dump_entries.end())),
                      "benign", true};
    if (probe.sigterm_ranks > 0)
      r.measured += fmt::format("; {} of {} ranks stopped by SIGTERM completed their dump", probe.sigterm_dumps,
                                probe.sigterm_ranks);
    // hanglab's grace is the shorter of the two: a dump that outlasts it is cut under hanglab,
    // and under torchrun too once it outlasts 30 s.
    if (worst > grace || probe.sigterm_dumps < probe.sigterm_ranks) {
      r.verdict = "harmful";
      r.measured += worst > kTorchrunShutdownTimeoutS
                        ? fmt::format(": longer than torchrun's {:g} s and hanglab's {:g} s grace, a dump at teardown is lost",
                                      kTorchrunShutdownTimeoutS, grace)
                        : fmt::format(": a dump at teardown is lost under hanglab's {:g} s grace", grace);
    }
    out.push_back(r);
  }

  // TORCH_FR_DUMP_ON_TIMEOUT is ProcessGroupNCCL's watchdog's: on Gloo a timeout dumps nothing.
  if (k.has("fr_dump_on_timeout")) {
    KnobInteraction r{"dump_on_timeout_gloo", shown(k, "fr_dump_on_timeout") + ", backend gloo",
                      "relying on torch to dump on a collective timeout: Gloo has no watchdog that does", "",
                      "benign", probe.ran};
    if (!bool_or(k, "fr_dump_on_timeout")) {
      r.measured = "off: nothing relies on it";
      r.measured_here = false;
    } else if (!probe.ran || probe.timeout_ranks == 0) {
      r.measured = "no Gloo timeout was observed in the probe (nothing to judge)";
      r.verdict = "needs_nccl";
    } else {
      r.measured = fmt::format("{} rank{} timed out; torch wrote {} dump{} at TORCH_FR_DUMP_TEMP_FILE",
                               probe.timeout_ranks, probe.timeout_ranks == 1 ? "" : "s", probe.torch_dumps,
                               probe.torch_dumps == 1 ? "" : "s");
      if (probe.torch_dumps < probe.timeout_ranks) {
        r.verdict = "harmful";
        r.measured += ": the dump the setting promises never comes (on NCCL the watchdog writes it; not measurable here)";
      }
    }
    out.push_back(r);
  }

  // A zero buffer records nothing, so every dump asked for is empty.
  if (k.has("fr_buffer_size")) {
    const long long size = int_or(k, "fr_buffer_size");
    const bool dumps_wanted = bool_or(k, "fr_dump_on_timeout") || k.has("nccl_wait_timeout_dump_ms");
    KnobInteraction r{"buffer_vs_dump", fmt::format("{}, {}", shown(k, "fr_buffer_size"), shown(k, "fr_dump_on_timeout")),
                      "the Flight Recorder is asked to dump but its buffer records nothing (or too little)", "", "benign",
                      probe.ran && !probe.dump_entries.empty()};
    const long most = probe.dump_entries.empty() ? -1 : *std::max_element(probe.dump_entries.begin(), probe.dump_entries.end());
    if (r.measured_here)
      r.measured = fmt::format("{} dump{} read, at most {} entr{}", probe.dump_entries.size(),
                               probe.dump_entries.size() == 1 ? "" : "s", most, most == 1 ? "y" : "ies");
    else
      r.measured = "no dump read";
    if (size == 0 && dumps_wanted && (!r.measured_here || most == 0)) {
      r.verdict = "harmful";
      r.measured += ": every dump is empty, a hang leaves no record of the collectives";
    } else if (size > 0 && r.measured_here && most >= size) {
      r.measured += fmt::format(": the ring is full, a dump holds only the last {} collectives", size);
    }
    out.push_back(r);
  }

  // DETAIL checks every collective against the peers: a mismatch fails at once, at a price.
  if (k.has("distributed_debug") && *k.string_value("distributed_debug") != "OFF") {
    KnobInteraction r{"debug_cost",
                      fmt::format("{} with every other knob as proposed, progress_s = {:g}, collective_s = {:g}",
                                  shown(k, "distributed_debug"), to.progress_s, to.collective_s),
                      "the per-collective check slows every step and can push a healthy-but-slow phase over a bound",
                      "", "benign", probe.debug_ran && probe.control_ran};
    if (r.measured_here) {
      const double on = percentile(probe.step_ms_on, 50), off = percentile(probe.step_ms_off, 50);
      r.measured = fmt::format("healthy DDP script: {} with the knobs ({} step{}{}), {} without ({} steps{})",
                               probe.debug_outcome, probe.step_ms_on.size(), probe.step_ms_on.size() == 1 ? "" : "s",
                               probe.step_ms_on.empty() ? "" : fmt::format(", p50 {:.0f} ms", on), probe.control_outcome,
                               probe.step_ms_off.size(),
                               probe.step_ms_off.empty() ? "" : fmt::format(", p50 {:.0f} ms", off));
      if (!probe.step_ms_on.empty() && !probe.step_ms_off.empty() && off > 0)
        r.measured += fmt::format("; {:+.0f}% per step, slowest {:.0f} ms", (on - off) / off * 100,
                                  max_of(probe.step_ms_on));
      if (!probe.debug_deaths.empty()) r.measured += "; " + probe.debug_deaths;
      if (!probe.cpp_step_ms_on.empty() && !probe.cpp_step_ms_off.empty()) {
        const double con = percentile(probe.cpp_step_ms_on, 50), coff = percentile(probe.cpp_step_ms_off, 50);
        r.measured += fmt::format(". LibTorch workload, steps that are only collectives: p50 {:.2f} ms vs {:.2f} ms "
                                  "without ({:.1f}x), slowest {:.0f} ms; alarms {} with, {} without",
                                  con, coff, coff > 0 ? con / coff : 0.0, max_of(probe.cpp_step_ms_on),
                                  probe.cpp_alarms_on, probe.cpp_alarms_off);
      }
      const bool worse = probe.alarms_on > probe.alarms_off || probe.cpp_alarms_on > probe.cpp_alarms_off ||
                         max_of(probe.cpp_step_ms_on) / 1000.0 > to.progress_s ||
                         (probe.debug_outcome != "completed" && probe.control_outcome == "completed");
      if (worse || max_of(probe.step_ms_on) / 1000.0 > to.progress_s) {
        r.verdict = "harmful";
        r.measured += ": the knob turns a healthy run into an alarm";
      }
    } else {
      r.measured = "not measured (no healthy probe run with and without the knobs)";
      r.verdict = "needs_nccl";
    }
    out.push_back(r);
    auto told = [](const KnobProbe::Mismatch& mm) {
      return fmt::format("{}, first detection {}{}{}", mm.outcome, mm.detector.empty() ? "none" : mm.detector,
                         mm.detect_s ? fmt::format(" {:+.2f} s after the fault", *mm.detect_s) : std::string(),
                         mm.named ? " (\"Detected mismatch between collectives\")" : "");
    };
    for (const auto& [what, desc] : {std::pair<std::string, std::string>{"op", "one rank broadcasts where its peer allreduces"},
                                     {"skip", "one rank skips a step's allreduces"}}) {
      auto with = probe.mismatch.find(what), without = probe.mismatch.find(what + "_control");
      if (with == probe.mismatch.end()) continue;
      KnobInteraction m{"debug_mismatch_" + what, shown(k, "distributed_debug") + ", " + desc,
                        "(the good side) a mismatched collective fails at once with the mismatch named, instead of a "
                        "timeout or a closed connection at the end",
                        "with the knobs: " + told(with->second), "benign", true};
      if (without != probe.mismatch.end()) m.measured += "; without: " + told(without->second);
      if (!with->second.named)
        m.measured += what == "skip" ? ": DETAIL did not catch it (the next allreduce has the same op and shapes)"
                                     : ": DETAIL did not catch it";
      out.push_back(m);
    }
  }

  // Error handling off: a timed-out NCCL collective leaves the process running.
  if (k.has("nccl_async_error_handling")) {
    const long long mode = int_or(k, "nccl_async_error_handling");
    KnobInteraction r{"async_error_handling", shown(k, "nccl_async_error_handling"),
                      "after a NCCL timeout the process is not torn down, so the job hangs past collective_s", "",
                      "needs_nccl"};
    if (mode == 0 || mode == 2) {
      r.verdict = "harmful";
      r.measured = fmt::format("static: mode {} does not end the process after a failed collective: the hang outlasts "
                               "collective_s = {:g} s until a launcher or harness watchdog acts (torchrun's own default "
                               "for its workers is 1)",
                               mode, to.collective_s);
    } else {
      r.measured = fmt::format("static: mode {} tears the process down after a failed collective", mode);
    }
    out.push_back(r);
  }
  return out;
}

TorchKnobs recommend_torch_knobs(const TorchKnobs& proposed, const std::vector<KnobInteraction>& rows,
                                 const Timeouts& rec, double factor, std::vector<std::string>& notes) {
  TorchKnobs out = proposed;
  auto harmful = [&](const std::string& id) {
    return std::any_of(rows.begin(), rows.end(), [&](const KnobInteraction& r) { return r.id == id && r.finding(); });
  };
  auto set = [&](const std::string& key, const std::string& value) {
    const TorchKnobSpec* s = find_torch_knob(key);
    out.set[key] = TorchKnobValue{s->env, value};
  };
  if (harmful("heartbeat_before_dump")) {
    const double wait_s = static_cast<double>(int_or(proposed, "nccl_wait_timeout_dump_ms")) / 1000.0;
    const long long hb = static_cast<long long>(std::ceil((rec.collective_s + wait_s) * factor));
    set("nccl_heartbeat_timeout_s", std::to_string(hb));
    notes.push_back(fmt::format("nccl_heartbeat_timeout_s {} -> {}: {:g} x (collective_s {:g} + dump wait {:g} s)",
                                int_or(proposed, "nccl_heartbeat_timeout_s"), hb, factor, rec.collective_s, wait_s));
  }
  if (harmful("buffer_vs_dump")) {
    set("fr_buffer_size", find_torch_knob("fr_buffer_size")->torch_default);
    notes.push_back("fr_buffer_size 0 -> 2000 (torch's default): a dump of an empty buffer says nothing");
  }
  if (harmful("dump_on_timeout_gloo")) {
    out.set.erase("fr_dump_on_timeout");
    notes.push_back("fr_dump_on_timeout dropped: Gloo never dumps on a timeout; dump from the rank (hanglab's [detect] "
                    "flight_recorder, torch._C._distributed_c10d._dump_fr_trace)");
  }
  if (harmful("debug_cost")) {
    out.set.erase("distributed_debug");
    notes.push_back("distributed_debug dropped: it broke or slowed the healthy probe past a bound (see debug_cost)");
  }
  if (harmful("async_error_handling")) {
    set("nccl_async_error_handling", "3");
    notes.push_back(fmt::format("nccl_async_error_handling {} -> 3 (torch's default): tear a failed rank down",
                                int_or(proposed, "nccl_async_error_handling")));
  }
  if (harmful("dump_wait_vs_grace"))
    notes.push_back("nccl_wait_timeout_dump_ms kept: shorten it below the launcher's grace, or lengthen the grace "
                    "(torchrun --shutdown-timeout)");
  return out;
}

// ---- probe runs --------------------------------------------------------------------------

void read_knob_probe(const fs::path& run_dir, const std::string& kind, KnobProbe& probe) {
  probe.ran = true;
  probe.runs.push_back(run_dir.string());
  json rj;
  try {
    std::ifstream in(run_dir / "run.json");
    rj = json::parse(in);
  } catch (const std::exception&) {
    return;
  }
  const json empty = json::array();
  const json& detections = rj.contains("detections") ? rj["detections"] : empty;
  std::set<int> fault_ranks;
  if (rj.contains("faults"))
    for (const auto& f : rj["faults"])
      if (f.contains("ranks"))
        for (const auto& r : f["ranks"]) fault_ranks.insert(r.get<int>());
  const int ws = rj.contains("settings") ? rj["settings"].value("world_size", 0) : 0;
  const double start = rj.value("start_t", 0.0);

  static const std::regex kStep(R"(step \d+/\d+ loss \S+ dur_ms (\d+))");
  static const std::regex kDump(R"(flight recorder: \d+ bytes written to \S+ in (\d+) ms \(([^)]*)\))");
  std::set<int> sigterm_dumped;
  bool mismatch = false;
  std::string fatal;  // the first "Fatal Python error" and the frame it happened in
  std::map<std::string, int> deaths;  // signal -> ranks
  bool in_current = false;            // inside faulthandler's "Current thread" stack
  for (int r = 0; r < ws; ++r) {
    const fs::path rdir = run_dir / "ranks" / std::to_string(r);
    for (const char* log : {"stdout.log", "stderr.log"}) {
      std::ifstream in(rdir / log);
      for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, kStep)) {
          if (kind == "control") probe.step_ms_off.push_back(std::stod(m[1].str()));
          if (kind == "debug") probe.step_ms_on.push_back(std::stod(m[1].str()));
        } else if ((kind == "healthy" || kind == "timeout") && std::regex_search(line, m, kDump)) {
          probe.dump_ms.push_back(std::stod(m[1].str()));
          if (m[2].str() == "teardown request") sigterm_dumped.insert(r);
        }
        if (line.find("Detected mismatch between collectives") != std::string::npos) mismatch = true;
        if (const auto at = line.find("Fatal Python error: "); at != std::string::npos && fatal.empty())
          fatal = line.substr(at);
        // faulthandler's stack, most recent call first: the first frame of the current thread.
        static const std::regex kFrame(R"re(File "([^"]+)", line (\d+) in (\S+))re");
        if (line.find("Current thread") != std::string::npos) in_current = true;
        if (in_current && !fatal.empty() && fatal.find(" in ") == std::string::npos && std::regex_search(line, m, kFrame)) {
          std::string file = m[1].str();
          if (auto sp = file.find("site-packages/"); sp != std::string::npos) file = file.substr(sp + 14);
          fatal += fmt::format(" in {} ({}:{})", m[3].str(), file, m[2].str());
        }
      }
    }
    if ((kind == "healthy" || kind == "timeout") && fs::exists(rdir / "flight_recorder.pkl")) {
      try {
        probe.dump_entries.push_back(
            static_cast<long>(fr::read_fr_dump(rdir / "flight_recorder.pkl", "flight_recorder.pkl", r).entries.size()));
      } catch (const std::exception&) {
      }
    }
    // torch names it <prefix><rank>; any file under the prefix counts (a suffix torch might add).
    std::error_code ec;
    if (kind == "timeout")
      for (const auto& e : fs::directory_iterator(rdir, ec))
        if (e.path().filename().string().rfind("torch_fr_", 0) == 0) {
          ++probe.torch_dumps;
          break;
        }
  }
  if (kind == "debug" || kind == "control") {
    if (rj.contains("exits"))
      for (const auto& e : rj["exits"])
        if (e.contains("signal") && e["signal"].is_string()) ++deaths[e["signal"].get<std::string>()];
    std::string how;
    for (const auto& [sig, n] : deaths) how += fmt::format("{}{} rank{} {}", how.empty() ? "" : ", ", n, n == 1 ? "" : "s", sig);
    if (!fatal.empty()) how += (how.empty() ? "" : ": ") + fatal;
    (kind == "debug" ? probe.alarms_on : probe.alarms_off) += static_cast<int>(detections.size());
    (kind == "debug" ? probe.debug_outcome : probe.control_outcome) = rj.value("outcome", "");
    (kind == "debug" ? probe.debug_ran : probe.control_ran) = true;
    if (kind == "debug") probe.debug_deaths = how;
  }
  if (kind == "timeout") {
    std::set<int> timed_out;
    for (const auto& d : detections)
      if (d.value("detector", "") == "backend_timeout" && d.value("rank", -1) >= 0) timed_out.insert(d.value("rank", -1));
    probe.timeout_ranks += static_cast<int>(timed_out.size());
  }
  // Ranks hanglab stopped at teardown (not the fault's own: a frozen rank cannot dump).
  if (rj.contains("exits"))
    for (const auto& e : rj["exits"]) {
      const int r = e.value("rank", -1);
      if (fault_ranks.count(r) || !e.contains("signal") || !e["signal"].is_string()) continue;
      const std::string sig = e["signal"].get<std::string>();
      if (sig.find("SIGTERM") == std::string::npos && sig.find("SIGKILL") == std::string::npos) continue;
      ++probe.sigterm_ranks;
      if (sigterm_dumped.count(r)) ++probe.sigterm_dumps;
    }
  if (kind == "cost" || kind == "cost_control") {
    auto& steps = kind == "cost" ? probe.cpp_step_ms_on : probe.cpp_step_ms_off;
    for (int r = 0; r < ws; ++r) {
      std::ifstream in(run_dir / "ranks" / std::to_string(r) / "events.jsonl");
      for (std::string line; std::getline(in, line);) {
        if (line.find("\"ev\":\"step\"") == std::string::npos) continue;
        try {
          steps.push_back(json::parse(line).value("dur_ms", 0.0));
        } catch (const std::exception&) {  // a torn last line
        }
      }
    }
    (kind == "cost" ? probe.cpp_alarms_on : probe.cpp_alarms_off) += static_cast<int>(detections.size());
  }
  if (kind == "skip" || kind == "skip_control" || kind == "op" || kind == "op_control") {
    KnobProbe::Mismatch& mm = probe.mismatch[kind];
    mm.ran = true;
    mm.outcome = rj.value("outcome", "");
    // The C++ workload puts the collective's error in its trace; a Python rank on stderr.
    for (int r = 0; r < ws && !mismatch; ++r) {
      std::ifstream in(run_dir / "ranks" / std::to_string(r) / "events.jsonl");
      for (std::string line; std::getline(in, line);)
        if (line.find("Detected mismatch between collectives") != std::string::npos) mismatch = true;
    }
    mm.named = mismatch;
    if (!detections.empty()) {
      mm.detector = detections[0].value("detector", "");
      mm.detect_s = detections[0].value("after_fault_s", 0.0);
    }
  }
}

std::string scenario_with_torch(const std::string& text, const TorchKnobs& knobs) {
  std::istringstream in(text);
  std::string out;
  bool skipping = false;
  for (std::string l; std::getline(in, l);) {
    std::string t = l.substr(std::min(l.size(), l.find_first_not_of(" \t")));
    if (!t.empty() && t[0] == '[') skipping = t.rfind("[torch]", 0) == 0;
    if (!skipping) out += l + "\n";
  }
  if (knobs.any()) out += "\n# hanglab validate: [torch] from the settings file\n" + torch_knobs_toml(knobs);
  return out;
}

// ---- rendering ---------------------------------------------------------------------------

std::string render_torch_section(const TorchKnobs& knobs, const std::vector<KnobInteraction>& rows,
                                 const KnobProbe& probe) {
  std::string s = "torch knobs ([torch], set in every rank of every pass):\n";
  for (const auto& [key, v] : knobs.set) s += fmt::format("  {:<26} {}={}\n", key, v.env, v.value);
  if (probe.ran)
    s += fmt::format("  probes (a PyTorch DDP script on Gloo under these knobs): {}\n", fmt::join(probe.runs, ", "));
  int harmful = 0;
  for (const auto& r : rows) {
    const std::string basis = r.measured_here ? "measured" : "static check";
    const std::string verdict = r.verdict == "needs_nccl" ? "not measurable here: needs NCCL"
                                : r.verdict == "harmful"  ? "HARMFUL (" + basis + ")"
                                                          : "benign (" + basis + ")";
    harmful += r.finding() ? 1 : 0;
    s += fmt::format("  {:<22} {}\n      knobs:    {}\n      risk:     {}\n      measured: {}\n", r.id, verdict, r.knobs,
                     r.risk, r.measured);
  }
  s += fmt::format("  {} interaction{} checked, {} harmful\n", rows.size(), rows.size() == 1 ? "" : "s", harmful);
  return s;
}

json to_json(const std::vector<KnobInteraction>& rows, const KnobProbe& probe) {
  json a = json::array();
  for (const auto& r : rows)
    a.push_back({{"id", r.id},
                 {"knobs", r.knobs},
                 {"risk", r.risk},
                 {"measured", r.measured},
                 {"verdict", r.verdict},
                 {"measured_here", r.measured_here}});
  return {{"interactions", a},
          {"probe_runs", probe.runs},
          {"dump_ms", probe.dump_ms},
          {"dump_entries", probe.dump_entries},
          {"step_ms_with_knobs", probe.step_ms_on},
          {"step_ms_without_knobs", probe.step_ms_off},
          {"timeout_ranks", probe.timeout_ranks},
          {"torch_dumps", probe.torch_dumps}};
}

}  // namespace hanglab
