// triage_corpus: the score of plain-log triage on the real incident corpus
// (harness/testdata/reallogs/<case>/: verbatim logs from public threads, source.md,
// expected.json written from the thread's conclusion).
//
// usage: triage_corpus CORPUS_DIR [--baseline FILE] [--update-baseline] [--verbose]
//
// Every case is triaged in a child process, so a crash (a signal) is a scored result
// ("crashed"), never the end of the run. Per case it prints right / unknown / wrong and the
// fields that differ; then a summary line (cases fully right, honest unknowns, wrong ranks,
// crashes), per-field accuracy and per-category precision and recall. With --baseline it
// exits 1 when the score drops below the recorded one (fewer fully right, more wrong ranks,
// any crash); --update-baseline writes the current score there.
//
// A case is fully right when category, cause, phase and the missing ranks match, and the
// first failure's rank where the thread proves it (the fields issue 11 names). Scope is scored
// in the per-field accuracy and shown in parentheses, but is not part of "fully right". It is an honest unknown when the answer's
// category is unknown and it names no rank the log does not prove (the expected missing ranks
// are a superset of the answer's). Anything else is wrong.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "triage/triage.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace hanglab;

namespace {

struct Outcome {
  bool crashed = false;
  std::string crash;
  json answer;
};

// Triage in a child; its JSON answer comes back on a pipe.
Outcome triage_in_child(const fs::path& dir, const json& exp) {
  int p[2];
  if (::pipe(p) != 0) throw std::runtime_error("pipe");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    TriageOptions o;
    // "args": the command-line options the case is triaged with (as in the fixture corpus).
    const json args = exp.value("args", json::array());
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--world-size" && args[i + 1].is_string()) o.world_size = std::stoi(args[i + 1].get<std::string>());
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string n = e.path().filename().string();
      if (n == "expected.json" || n == "source.md") continue;
      files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    std::string out;
    try {
      out = to_json(triage_logs(files, o)).dump();
    } catch (const std::exception& e) {
      out = json{{"error", e.what()}}.dump();
    }
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::write(p[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(p[1]);
  std::string buf;
  char tmp[65536];
  ssize_t n;
  while ((n = ::read(p[0], tmp, sizeof tmp)) > 0) buf.append(tmp, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  Outcome o;
  if (WIFSIGNALED(status)) {
    o.crashed = true;
    o.crash = fmt::format("killed by signal {}", WTERMSIG(status));
    return o;
  }
  o.answer = json::parse(buf, nullptr, false);
  if (o.answer.is_discarded()) {
    o.crashed = true;
    o.crash = "no answer";
  }
  return o;
}

std::set<int> rank_set(const json& j) {
  std::set<int> s;
  if (j.is_array())
    for (const auto& x : j)
      if (x.is_number_integer()) s.insert(x.get<int>());
  return s;
}

std::string str(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: triage_corpus CORPUS_DIR [--baseline FILE] [--update-baseline] [--verbose]\n";
    return 2;
  }
  const fs::path corpus = argv[1];
  fs::path baseline;
  bool update = false, verbose = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--baseline" && i + 1 < argc) baseline = argv[++i];
    else if (a == "--update-baseline") update = true;
    else if (a == "--verbose") verbose = true;
    else {
      std::cerr << "triage_corpus: unknown argument " << a << "\n";
      return 2;
    }
  }
  std::vector<fs::path> cases;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(corpus, ec))
    if (e.is_directory() && fs::exists(e.path() / "expected.json")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  if (cases.empty()) {
    std::cerr << corpus.string() << ":0:0: no cases (directories with expected.json)\n";
    return 2;
  }

  const char* fields[] = {"category", "cause", "phase", "scope", "missing_ranks", "first_failure_rank"};
  std::map<std::string, std::pair<int, int>> field_acc;  // field -> (right, scored)
  std::map<std::string, int> tp, fp, fn;                  // per category
  int right = 0, unknown = 0, wrong = 0, wrong_rank = 0, crashed = 0;
  for (const auto& dir : cases) {
    json exp;
    try {
      std::ifstream(dir / "expected.json") >> exp;
    } catch (const std::exception& e) {
      std::cerr << (dir / "expected.json").string() << ":0:0: " << e.what() << "\n";
      return 2;
    }
    const std::string name = dir.filename().string();
    Outcome o = triage_in_child(dir, exp);
    if (o.crashed || o.answer.contains("error")) {
      ++crashed;
      ++wrong;
      std::cout << fmt::format("CRASH    {:<40} {}\n", name, o.crashed ? o.crash : str(o.answer, "error"));
      continue;
    }
    const json& a = o.answer;
    std::vector<std::string> diffs, side;  // side: scored per field, not part of "fully right"
    auto cmp = [&](const char* f, bool ok, const std::string& want, const std::string& got, bool counts = true) {
      auto& [r, n] = field_acc[f];
      ++n;
      if (ok) ++r;
      else (counts ? diffs : side).push_back(fmt::format("{}: want {}, got {}", f, want, got));
    };
    for (const char* f : {"category", "cause", "phase"})
      if (exp.contains(f)) cmp(f, str(exp, f) == str(a, f), str(exp, f), str(a, f));
    if (exp.contains("scope")) cmp("scope", str(exp, "scope") == str(a, "scope"), str(exp, "scope"), str(a, "scope"), false);
    const std::set<int> want_missing = rank_set(exp.value("missing_ranks", json::array()));
    const std::set<int> got_missing = rank_set(a.value("missing_ranks", json::array()));
    cmp("missing_ranks", want_missing == got_missing, exp.value("missing_ranks", json::array()).dump(),
        a.value("missing_ranks", json::array()).dump());
    int got_ff = -1;
    if (a.contains("first_failure") && a["first_failure"].is_object())
      got_ff = a["first_failure"].value("rank", -1);
    const bool ff_given = exp.contains("first_failure_rank") && exp["first_failure_rank"].is_number_integer();
    if (ff_given)
      cmp("first_failure_rank", got_ff == exp["first_failure_rank"].get<int>(), exp["first_failure_rank"].dump(),
          std::to_string(got_ff));
    // A rank named that the log does not prove.
    bool bad_rank = false;
    for (int r : got_missing)
      if (!want_missing.count(r)) bad_rank = true;
    if (ff_given && got_ff >= 0 && got_ff != exp["first_failure_rank"].get<int>()) bad_rank = true;

    const std::string wc = str(exp, "category"), gc = str(a, "category");
    if (wc == gc) ++tp[wc];
    else {
      ++fp[gc];
      ++fn[wc];
    }
    const char* verdict;
    if (diffs.empty()) {
      ++right;
      verdict = "RIGHT";
    } else if (gc == "unknown" && !bad_rank) {
      ++unknown;
      verdict = "UNKNOWN";
    } else {
      ++wrong;
      if (bad_rank) ++wrong_rank;
      verdict = "WRONG";
    }
    std::string line = diffs.empty() ? gc + "/" + str(a, "cause") : fmt::format("{}", fmt::join(diffs, "; "));
    if (!side.empty()) line += fmt::format("  ({})", fmt::join(side, "; "));
    std::cout << fmt::format("{:<8} {:<40} {}\n", verdict, name, line);
    if (verbose && !diffs.empty()) std::cout << "         " << str(a, "summary") << "\n";
  }
  const int n = static_cast<int>(cases.size());
  std::cout << fmt::format("\ncorpus: {} cases: {} fully right ({:.1f}%), {} honest unknown, {} wrong ({} naming a wrong rank), "
                           "{} crashed\n",
                           n, right, 100.0 * right / n, unknown, wrong, wrong_rank, crashed);
  std::cout << "per-field accuracy:";
  for (const char* f : fields)
    if (field_acc.count(f))
      std::cout << fmt::format(" {} {}/{}", f, field_acc[f].first, field_acc[f].second);
  std::cout << "\nper-category precision / recall:\n";
  std::set<std::string> cats;
  for (auto* m : {&tp, &fp, &fn})
    for (const auto& [c, _] : *m) cats.insert(c);
  for (const auto& c : cats) {
    const int t = tp[c], p = t + fp[c], r = t + fn[c];
    std::cout << fmt::format("  {:<20} precision {:>5} recall {:>5}\n", c.empty() ? "(none)" : c,
                             p ? fmt::format("{}/{}", t, p) : "-", r ? fmt::format("{}/{}", t, r) : "-");
  }
  if (update && !baseline.empty()) {
    std::ofstream(baseline) << json{{"cases", n}, {"fully_right", right}, {"wrong_rank", wrong_rank}, {"crashed", crashed}}.dump(2)
                            << "\n";
    std::cout << "baseline written: " << baseline.string() << "\n";
    return 0;
  }
  if (!baseline.empty()) {
    json b;
    std::ifstream in(baseline);
    if (!in) {
      std::cerr << baseline.string() << ":0:0: no baseline (write one with --update-baseline)\n";
      return 2;
    }
    in >> b;
    bool drop = false;
    if (right < b.value("fully_right", 0)) {
      std::cout << fmt::format("SCORE DROP: {} fully right, baseline {}\n", right, b.value("fully_right", 0));
      drop = true;
    }
    if (wrong_rank > b.value("wrong_rank", 0)) {
      std::cout << fmt::format("SCORE DROP: {} cases name a wrong rank, baseline {}\n", wrong_rank, b.value("wrong_rank", 0));
      drop = true;
    }
    if (crashed > 0) {
      std::cout << fmt::format("SCORE DROP: {} cases crashed triage\n", crashed);
      drop = true;
    }
    return drop ? 1 : 0;
  }
  return 0;
}
