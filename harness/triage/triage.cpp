// The triage entry points (triage.hpp): a run directory is read (records/) and reasoned
// about (reason/); plain logs are read (logs/reader.cpp) and reasoned about
// (reason/log_*.cpp); a run directory without any trace is triaged from its logs.
#include "triage/triage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "triage/logs/reader.hpp"
#include "triage/reason/log.hpp"
#include "triage/reason/run.hpp"
#include "triage/reason/run_evidence.hpp"

namespace hanglab {

namespace fs = std::filesystem;

TriageResult triage_run_dir(const std::filesystem::path& dir) {
  const RunObservations in = load_run_observations(dir);
  const bool any_trace =
      std::any_of(in.ranks.begin(), in.ranks.end(), [](const auto& kv) { return kv.second.has_trace; });
  if (!any_trace && !in.ranks.empty()) {
    // A bring-your-own program writes no hanglab trace: its stdout/stderr (and the
    // launcher's console) are all there is, exactly as on a real incident.
    TriageOptions o;
    o.logs_only = true;
    o.world_size = in.harness.world_size;
    try {
      TriageResult r = triage_logs({dir}, o);
      r.notes.insert(r.notes.begin(), "no rank wrote a hanglab trace (a bring-your-own program): judged from the "
                                      "supervisor's record, the captured stacks and the ranks' stdout/stderr");
      apply_run_evidence(in, r, /*traced=*/false);
      return r;
    } catch (const std::exception&) {
      // No log file either: the supervisor's record is all there is.
    }
  }
  TriageResult r = analyze_run(in);
  apply_run_evidence(in, r, any_trace);
  return r;
}

TriageResult triage_logs(const std::vector<fs::path>& paths, const TriageOptions& opts) {
  if (paths.empty()) throw std::runtime_error("triage: no input paths");
  const auto inputs = list_log_inputs(paths, opts.logs_only);
  if (inputs.empty()) {
    throw std::runtime_error(fmt::format("triage: no log files under {}", paths.front().string()));
  }
  const LogCorpus corpus = load_log_corpus(inputs);
  return analyze_log_corpus(corpus, opts);
}

TriageResult triage_paths(const std::vector<fs::path>& paths, const TriageOptions& opts) {
  if (paths.size() == 1 && !opts.logs_only && is_run_dir(paths.front())) {
    TriageResult r = triage_run_dir(paths.front());
    if (opts.world_size && *opts.world_size != r.world_size) {
      r.notes.push_back(fmt::format("--world-size {} ignored: the run record says {}", *opts.world_size,
                                    r.world_size));
    }
    return r;
  }
  return triage_logs(paths, opts);
}

}  // namespace hanglab
