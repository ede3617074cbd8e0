// The triage entry points (triage.hpp): a run directory is read (records/) and reasoned
// about (reason/); plain logs are read (logs/reader.cpp) and reasoned about
// (reason/log_*.cpp); a run directory without any trace is triaged from its logs.
#include "triage/triage.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "triage/fr/dump.hpp"
#include "triage/logs/reader.hpp"
#include "triage/reason/fr.hpp"
#include "triage/reason/log.hpp"
#include "triage/reason/run.hpp"
#include "triage/reason/run_evidence.hpp"

namespace hanglab {

namespace fs = std::filesystem;

namespace {

// The Flight Recorder dumps a run's ranks left ([detect] flight_recorder: ranks/<r>/
// flight_recorder.pkl or .json): what they say is added to the answer as a note and evidence.
// The answer itself stays the one the run record gives: the supervisor's and the ranks' own
// observations come first, the recorder is a second witness (its buffer may have wrapped,
// a SIGKILLed rank has no dump). `ranks_dir` holds <r>/flight_recorder.*; references are
// written as ref_prefix + the path below it. False when it holds no dump.
bool add_flight_recorder(const fs::path& ranks_dir, const std::string& ref_prefix, TriageResult& r) {
  std::vector<std::pair<int, fs::path>> found;
  std::error_code ec;
  for (fs::directory_iterator it(ranks_dir, ec), end; !ec && it != end; it.increment(ec)) {
    for (const char* name : {"flight_recorder.pkl", "flight_recorder.json"}) {
      const fs::path f = it->path() / name;
      std::error_code fec;
      if (!fs::is_regular_file(f, fec)) continue;
      if (const int rank = fr::fr_rank_from_path(f); rank >= 0) found.emplace_back(rank, f);
      break;
    }
  }
  if (found.empty()) return false;
  std::sort(found.begin(), found.end());
  std::vector<fs::path> files;
  std::vector<int> dumped;
  for (const auto& [rank, f] : found) files.push_back(f), dumped.push_back(rank);
  std::vector<std::string> undumped;
  for (int k = 0; k < r.world_size; ++k)
    if (!std::binary_search(dumped.begin(), dumped.end(), k)) undumped.push_back(std::to_string(k));
  const std::string coverage =
      fmt::format("{} of {} rank(s) dumped{}", files.size(), r.world_size,
                  undumped.empty() ? "" : fmt::format("; none from rank(s) {}", fmt::join(undumped, ", ")));
  TriageOptions o;
  if (r.world_size > 0) o.world_size = r.world_size;
  try {
    const TriageResult fr = triage_fr_dumps(files, o);
    r.notes.push_back(fmt::format("Flight Recorder ({}): {}", coverage, fr.summary));
    r.evidence.push_back(
        {ref_prefix + fs::relative(files.front(), ranks_dir).string(),
         fmt::format("Flight Recorder: {} / {}{}", fr.category, fr.cause,
                     fr.missing_ranks.empty() ? std::string()
                                              : fmt::format(", names rank(s) {}", fmt::join(fr.missing_ranks, ", ")))});
    // Its references are relative to ranks_dir (the folder the dumps share); a few are enough
    // here, `hanglab triage <ranks_dir>/*/flight_recorder.pkl` gives them all.
    constexpr size_t kMaxFrEvidence = 6;
    for (size_t i = 0; i < fr.evidence.size() && i < kMaxFrEvidence; ++i)
      r.evidence.push_back({ref_prefix + fr.evidence[i].ref, "Flight Recorder: " + fr.evidence[i].text});
  } catch (const std::exception& e) {
    r.notes.push_back(fmt::format("Flight Recorder ({}): the dumps could not be read: {}", coverage, e.what()));
  }
  return true;
}

}  // namespace

TriageResult triage_run_dir(const std::filesystem::path& dir) {
  TriageResult r = triage_run_records(dir);
  add_flight_recorder(dir / "ranks", "ranks/", r);
  return r;
}

TriageResult triage_run_records(const std::filesystem::path& dir) {
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

TriageResult triage_fr_dumps(const std::vector<fs::path>& files, const TriageOptions& opts) {
  if (files.empty()) throw std::runtime_error("triage: no Flight Recorder dumps");
  // Names are shown relative to the directory they share.
  fs::path base = files.front().parent_path();
  for (const auto& f : files)
    while (!base.empty() && f.string().rfind(base.string(), 0) != 0) base = base.parent_path();
  std::vector<fr::FrDump> dumps;
  std::map<int, std::string> seen;
  for (const auto& f : files) {
    const std::string shown = base.empty() ? f.string() : fs::relative(f, base).string();
    const int rank = fr::fr_rank_from_path(f);
    if (rank < 0)
      throw std::runtime_error(fmt::format("{}:0:0: a Flight Recorder dump's name must end in its rank "
                                           "(<prefix><rank>, e.g. rank_3, or ranks/3/flight_recorder.pkl)",
                                           f.string()));
    if (auto [it, fresh] = seen.emplace(rank, f.string()); !fresh)
      throw std::runtime_error(fmt::format("{}:0:0: a second dump of rank {} (the first is {})", f.string(), rank,
                                           it->second));
    dumps.push_back(fr::read_fr_dump(f, shown, rank));
  }
  TriageResult r = analyze_fr_dumps(dumps, opts);
  r.notes.push_back(fmt::format("read {} Flight Recorder dump(s){}", dumps.size(),
                                dumps.empty() || dumps.front().version.empty()
                                    ? ""
                                    : fmt::format(" (format version {})", dumps.front().version)));
  return r;
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
  if (!opts.logs_only) {
    const auto dumps = fr::list_fr_dumps(paths);
    if (!dumps.empty()) return triage_fr_dumps(dumps, opts);
  }
  TriageResult r = triage_logs(paths, opts);
  // A run's ranks/ folder (or a copy of it) given as logs: its ranks' Flight Recorder dumps, if
  // any, are a second witness there too.
  std::error_code ec;
  if (!opts.logs_only && paths.size() == 1 && fs::is_directory(paths.front(), ec))
    add_flight_recorder(paths.front(), "", r);
  return r;
}

}  // namespace hanglab
