// The Flight Recorder benchmark: hanglab triage vs torchfrtrace on the same scaled real dumps.
// See fr_bench.hpp.
#include "bench/fr_bench.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/bench.hpp"
#include "run/launchers/launchers.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ChildRun {
  double wall_s = 0;
  long maxrss_kb = 0;
  int status = 0;  // as wait4 gives it
  bool timed_out = false;
  bool started = false;
};

// Runs argv with stdout to `out` and stderr to `err` (the same file when equal), in its own
// process group; kills the group past `timeout_s`. Wall time from fork to reaped.
ChildRun run_child(const std::vector<std::string>& argv, const fs::path& out, const fs::path& err, double timeout_s) {
  ChildRun r;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return r;
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = err == out ? fo : ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(fo, 1);
    ::dup2(fe, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  r.started = true;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lk(mu);
    if (!cv.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return done; })) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
  });
  struct rusage ru {};
  while (::wait4(pid, &r.status, 0, &ru) < 0 && errno == EINTR) {
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.maxrss_kb = ru.ru_maxrss;
  {
    std::lock_guard<std::mutex> lk(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  return r;
}

std::string status_text(const ChildRun& c) {
  if (!c.started) return "could not fork";
  if (c.timed_out) return "killed after the time limit";
  if (WIFSIGNALED(c.status)) return fmt::format("killed by signal {}", WTERMSIG(c.status));
  return fmt::format("exit {}", WEXITSTATUS(c.status));
}

int exit_of(const ChildRun& c) { return WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128 + WTERMSIG(c.status); }

json stats_of(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return {{"n", v.size()},
          {"median", median_of(v)},
          {"min", *std::min_element(v.begin(), v.end())},
          {"max", *std::max_element(v.begin(), v.end())},
          {"runs", v}};
}

std::vector<int> ints_in(const std::string& s) {
  std::vector<int> v;
  static const std::regex num(R"(\d+)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), num); it != std::sregex_iterator(); ++it)
    v.push_back(std::stoi(it->str()));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string ranks_text(const std::vector<int>& r) {
  return r.empty() ? "none" : fmt::format("{}", fmt::join(r, ","));
}

fs::path venv_tool(const fs::path& venv, const char* name) {
  if (venv.empty()) return {};
  const fs::path p = venv / "bin" / name;
  return ::access(p.c_str(), X_OK) == 0 ? p : fs::path{};
}

// The torch version of the venv, from torch/version.py (importing torch costs seconds).
std::string torch_version(const fs::path& venv) {
  std::error_code ec;
  for (const auto& lib : fs::directory_iterator(venv / "lib", ec)) {
    const fs::path v = lib.path() / "site-packages" / "torch" / "version.py";
    if (!fs::exists(v, ec)) continue;
    try {
      std::smatch m;
      const std::string text = read_file(v);
      if (std::regex_search(text, m, std::regex(R"(__version__\s*=\s*'([^']+)')"))) return m[1];
    } catch (const std::exception&) {
    }
  }
  return "";
}

class FrBench {
 public:
  FrBench(const FrBenchOptions& o, std::vector<std::string>& errors) : o_(o), errors_(errors) {}

  json run() {
    json j = {{"title", "Flight Recorder: hanglab vs torchfrtrace"},
              {"repeat", o_.repeat},
              {"goal_ratio", 10},
              {"goal_ranks", 1024},
              {"rows", json::array()}};
    const fs::path src = o_.source_dir.empty() ? fr_bench_source_dir() : o_.source_dir;
    const fs::path data = src / "harness" / "testdata" / "fr";
    const fs::path scaler = src / "harness" / "bench" / "fr_scale.py";
    std::error_code ec;
    if (src.empty() || !fs::is_directory(data, ec) || !fs::exists(scaler, ec)) {
      j["available"] = false;
      j["reason"] = "the real dumps (harness/testdata/fr) or fr_scale.py are not here: run from the source tree";
      errors_.push_back("flight_recorder: " + j["reason"].get<std::string>());
      return j;
    }
    const fs::path venv = project_venv();
    fs::path python = o_.python;
    if (python.empty()) python = venv_tool(venv, "python");
    if (python.empty()) python = "/usr/bin/python3";
    frt_ = o_.torchfrtrace.empty() ? venv_tool(venv, "torchfrtrace") : o_.torchfrtrace;
    if (!frt_.empty() && ::access(frt_.c_str(), X_OK) != 0) frt_.clear();
    j["available"] = true;
    j["dumps"] = "harness/testdata/fr (real Gloo dumps of torch " +
                 (venv.empty() ? std::string("2.x") : torch_version(venv)) + ", written by make_fr_dumps.py)";
    j["python"] = python.string();
    if (frt_.empty()) {
      j["torchfrtrace"] = nullptr;
      j["torchfrtrace_missing"] = venv.empty() ? "no project venv (.venv: ci/install-deps.sh, or HANGLAB_VENV)"
                                               : "no torchfrtrace in " + (venv / "bin").string();
    } else {
      j["torchfrtrace"] = frt_.string();
      j["torch_version"] = torch_version(frt_.parent_path().parent_path());
    }
    const fs::path work = o_.work.empty() ? fs::temp_directory_path() / fmt::format("hanglab-fr-bench-{}", ::getpid())
                                          : o_.work;
    fs::create_directories(work);
    for (int n : o_.ranks)
      for (const auto& c : o_.cases)
        for (const char* layout : {"gloo", "nccl-keyed"}) {
          if (interrupted()) break;
          json row = measure(python, scaler, data / c, work, c, layout, n);
          if (!row.is_null()) j["rows"].push_back(row);
        }
    if (o_.work.empty()) fs::remove_all(work, ec);
    summarize(j);
    return j;
  }

 private:
  bool interrupted() const { return o_.interrupted && *o_.interrupted; }
  void note(const std::string& s) const {
    if (o_.note) o_.note(s);
  }

  json measure(const fs::path& python, const fs::path& scaler, const fs::path& src, const fs::path& work,
               const std::string& c, const std::string& layout, int n) {
    std::error_code ec;
    const std::string label = fmt::format("{} {} {} ranks", c, layout, n);
    if (!fs::is_directory(src, ec)) {
      errors_.push_back("flight_recorder: no real dumps " + src.string());
      return nullptr;
    }
    const fs::path dir = work / fmt::format("{}-{}-{}", c, layout, n);
    fs::remove_all(dir, ec);
    const fs::path gen_out = work / "fr_scale.out";
    const ChildRun g = run_child({python.string(), scaler.string(), src.string(), dir.string(), "--ranks",
                                  std::to_string(n), "--pg-key", layout == "gloo" ? "as-written" : "entries"},
                                 gen_out, work / "fr_scale.err", 120);
    json gen;
    try {
      gen = json::parse(read_file(gen_out));
    } catch (const std::exception&) {
    }
    if (exit_of(g) != 0 || !gen.is_object()) {
      std::string err;
      try {
        err = read_file(work / "fr_scale.err");
      } catch (const std::exception&) {
      }
      errors_.push_back(fmt::format("flight_recorder: {}: fr_scale.py {}: {}", label, status_text(g), err));
      return nullptr;
    }
    std::vector<int> expected = gen.value("culprits", std::vector<int>{});
    for (int r : gen.value("missing", std::vector<int>{})) expected.push_back(r);
    std::sort(expected.begin(), expected.end());
    const std::vector<int> missing = gen.value("missing", std::vector<int>{});
    json row = {{"case", c},
                {"layout", layout},
                {"ranks", n},
                {"files", n - static_cast<int>(missing.size())},
                {"bytes", gen.value("bytes", 0)},
                {"expected", expected},
                {"missing_dumps", missing}};

    // hanglab triage DIR --format json
    std::vector<double> walls;
    long rss = 0;
    const fs::path hout = work / "hanglab.json", herr = work / "hanglab.err";
    ChildRun last;
    for (int i = 0; i < o_.repeat && !interrupted(); ++i) {
      last = run_child({o_.hanglab_exe.string(), "triage", dir.string(), "--format", "json"}, hout, herr,
                       o_.tool_timeout_s);
      walls.push_back(last.wall_s);
      rss = std::max(rss, last.maxrss_kb);
    }
    json h = {{"wall_s", stats_of(walls)}, {"peak_rss_mb", rss / 1024.0}, {"command", "hanglab triage DIR --format json"}};
    std::vector<int> hranks;
    bool hok = false;
    if (exit_of(last) != 0) {
      std::string err;
      try {
        err = read_file(herr);
      } catch (const std::exception&) {
      }
      h["verdict"] = fmt::format("failed ({}): {}", status_text(last), err.substr(0, 300));
    } else {
      try {
        const json r = json::parse(read_file(hout));
        hranks = r.value("missing_ranks", std::vector<int>{});
        std::sort(hranks.begin(), hranks.end());
        h["category"] = r.value("category", "");
        h["cause"] = r.value("cause", "");
        h["source"] = r.value("source", "");
        h["summary"] = r.value("summary", "");
        h["verdict"] = fmt::format("{}/{}: ranks {}", r.value("category", "?"), r.value("cause", "?"), ranks_text(hranks));
        hok = hranks == expected && r.value("source", "") == "flight_recorder";
      } catch (const std::exception& e) {
        h["verdict"] = std::string("unreadable output: ") + e.what();
      }
    }
    // A wrong verdict is named by check_fr_bench_json (bench.json's check).
    h["ranks"] = hranks;
    h["ok"] = hok;
    row["hanglab"] = h;

    // torchfrtrace DIR [--allow-incomplete-ranks]
    json t;
    if (frt_.empty()) {
      t = {{"kind", "not run"}, {"verdict", "not run: torchfrtrace is not installed here"}};
      row["agree"] = nullptr;
    } else {
      std::vector<std::string> argv = {frt_.string(), dir.string()};
      if (!missing.empty()) argv.push_back("--allow-incomplete-ranks");
      walls.clear();
      rss = 0;
      const fs::path tout = work / "torchfrtrace.out";
      for (int i = 0; i < o_.repeat && !interrupted(); ++i) {
        last = run_child(argv, tout, tout, o_.tool_timeout_s);
        walls.push_back(last.wall_s);
        rss = std::max(rss, last.maxrss_kb);
      }
      std::string out;
      try {
        out = read_file(tout);
      } catch (const std::exception&) {
      }
      FrtVerdict v = last.timed_out ? FrtVerdict{"crashed", {}, "crashed: killed after the time limit"}
                                    : parse_torchfrtrace_output(out, exit_of(last));
      std::string cmd = "torchfrtrace DIR";
      for (size_t i = 2; i < argv.size(); ++i) cmd += " " + argv[i];
      t = {{"wall_s", stats_of(walls)}, {"peak_rss_mb", rss / 1024.0}, {"command", cmd}, {"kind", v.kind},
           {"ranks", v.ranks}, {"verdict", v.text}, {"exit", exit_of(last)}};
      const bool gives = v.kind == "blames" || v.kind == "no_problem";
      t["ok"] = gives ? json(v.ranks == expected) : json(nullptr);
      row["agree"] = gives ? json(v.ranks == hranks) : json(nullptr);
      if (!walls.empty() && !row["hanglab"]["wall_s"].is_null())
        row["ratio"] = median_of(walls) / std::max(1e-9, row["hanglab"]["wall_s"]["median"].get<double>());
    }
    row["torchfrtrace"] = t;
    fs::remove_all(dir, ec);
    note(fmt::format("{:<15} {:<28} hanglab {:.3f} s ({}), torchfrtrace {} ({}){}", "flight_recorder", label,
                     row["hanglab"]["wall_s"].is_null() ? 0.0 : row["hanglab"]["wall_s"]["median"].get<double>(),
                     row["hanglab"]["verdict"].get<std::string>(),
                     t.contains("wall_s") && !t["wall_s"].is_null()
                         ? fmt::format("{:.3f} s", t["wall_s"]["median"].get<double>())
                         : std::string("-"),
                     t.value("verdict", ""),
                     row.contains("ratio") ? fmt::format(", {:.0f}x", row["ratio"].get<double>()) : std::string()));
    return row;
  }

  // The headline: at the goal's rank count, the smallest ratio where torchfrtrace gives a verdict.
  void summarize(json& j) const {
    double worst = 0;
    int agree = 0, disagree = 0, no_verdict = 0;
    for (const auto& r : j["rows"]) {
      if (r["agree"].is_null()) {
        ++no_verdict;
        continue;
      }
      (r["agree"].get<bool>() ? agree : disagree)++;
      if (r.value("ranks", 0) == j.value("goal_ranks", 1024) && r.contains("ratio")) {
        const double x = r["ratio"].get<double>();
        worst = worst == 0 ? x : std::min(worst, x);
      }
    }
    j["agree"] = agree;
    j["disagree"] = disagree;
    j["no_torchfrtrace_verdict"] = no_verdict;
    if (worst > 0) {
      j["min_ratio_at_goal_ranks"] = worst;
      j["goal"] = worst >= j.value("goal_ratio", 10) ? "met" : "missed";
    } else {
      j["goal"] = "not measured";
    }
  }

  const FrBenchOptions& o_;
  std::vector<std::string>& errors_;
  fs::path frt_;
};

}  // namespace

fs::path fr_bench_source_dir() {
  std::error_code ec;
  if (fs::is_directory("harness/testdata/fr", ec)) return fs::current_path();
#ifdef HANGLAB_BENCH_SOURCE_DIR
  if (fs::is_directory(fs::path(HANGLAB_BENCH_SOURCE_DIR) / "harness" / "testdata" / "fr", ec))
    return HANGLAB_BENCH_SOURCE_DIR;
#endif
  return {};
}

json run_fr_bench(const FrBenchOptions& o, std::vector<std::string>& errors) { return FrBench(o, errors).run(); }

FrtVerdict parse_torchfrtrace_output(const std::string& out, int exit_status) {
  std::vector<std::string> lines;
  {
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) {
      if (!l.empty() && l.back() == '\r') l.pop_back();
      lines.push_back(l);
    }
  }
  FrtVerdict v;
  const bool traceback = out.find("Traceback (most recent call last):") != std::string::npos;
  if (exit_status != 0 || traceback) {
    std::string last;
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
      if (it->find_first_not_of(" \t") != std::string::npos) {
        last = *it;
        break;
      }
    v.kind = "crashed";
    v.text = "crashed: " + (last.empty() ? fmt::format("exit {} without a message", exit_status) : last);
    return v;
  }
  static const std::regex not_all(R"(^Not all ranks joining collective, sequence number: (\d+))");
  static const std::regex has_errors(R"(^(?:Collective|Input/output mismatch in the collective) sequence number: (\d+))");
  static const std::regex culprit(R"(Culprit rank (\d+);)");
  static const std::regex cannot(R"(^We cannot decide .* missed FR dumps from ranks \((\{[^}]*\}|set\(\))\))");
  std::optional<FrtVerdict> undecided;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    const bool na = std::regex_search(lines[i], m, not_all);
    const bool he = !na && std::regex_search(lines[i], m, has_errors);
    if (na || he) {
      const std::string seq = m[1];
      std::string collective;
      // The report's lines up to its stack trace.
      for (size_t k = i + 1; k < lines.size() && lines[k].rfind("collective stack trace", 0) != 0; ++k) {
        const std::string& l = lines[k];
        if (l.rfind("collective: ", 0) == 0) collective = l.substr(12);
        if (na && l.rfind("missing ranks: ", 0) == 0) v.ranks = ints_in(l.substr(15));
        if (he && l.rfind("error msg: ", 0) == 0)
          for (auto it = std::sregex_iterator(l.begin(), l.end(), culprit); it != std::sregex_iterator(); ++it)
            v.ranks.push_back(std::stoi((*it)[1]));
      }
      std::sort(v.ranks.begin(), v.ranks.end());
      v.ranks.erase(std::unique(v.ranks.begin(), v.ranks.end()), v.ranks.end());
      v.kind = "blames";
      v.text = fmt::format("{} {{{}}} at seq {}{}", na ? "missing ranks" : "culprit ranks", fmt::join(v.ranks, ", "),
                           seq, collective.empty() ? "" : " (" + collective + ")");
      return v;
    }
    if (!undecided && std::regex_search(lines[i], m, cannot)) {
      FrtVerdict u{"undecided", ints_in(m[1]), ""};
      u.text = fmt::format("undecided: \"cannot decide ... missed FR dumps from ranks {{{}}}\"", fmt::join(u.ranks, ", "));
      undecided = u;
    } else if (!undecided && lines[i].rfind("No errors found for this collective entry", 0) == 0) {
      undecided = FrtVerdict{"undecided", {}, "undecided: \"No errors found for this collective entry\""};
    }
  }
  if (undecided) return *undecided;
  return {"no_problem", {}, "no problem reported"};
}

std::vector<std::string> check_fr_bench_json(const json& fr) {
  std::vector<std::string> p;
  if (!fr.is_object()) return {"bench.json: flight_recorder: missing"};
  if (!fr.value("available", false)) {
    p.push_back("bench.json: flight_recorder: " + fr.value("reason", std::string("not measured")));
    return p;
  }
  if (!fr.contains("rows") || !fr["rows"].is_array() || fr["rows"].empty()) {
    p.push_back("bench.json: flight_recorder: no rows");
    return p;
  }
  for (const auto& r : fr["rows"]) {
    const std::string label = fmt::format("{} {} {} ranks", r.value("case", ""), r.value("layout", ""), r.value("ranks", 0));
    const json& h = r.value("hanglab", json::object());
    if (!h.contains("wall_s") || !h["wall_s"].is_object() || !(h["wall_s"].value("median", 0.0) > 0))
      p.push_back(fmt::format("bench.json: flight_recorder: {}: no hanglab time", label));
    if (!h.value("ok", false))
      p.push_back(fmt::format("bench.json: flight_recorder: {}: hanglab triage named {} where the culprit is {} ({})",
                              label, ranks_text(h.value("ranks", std::vector<int>{})),
                              ranks_text(r.value("expected", std::vector<int>{})), h.value("verdict", std::string("-"))));
  }
  return p;
}

}  // namespace hanglab
