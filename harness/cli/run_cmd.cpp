// `hanglab run`, sequential (-j 1: every run in this process) or parallel (-j N: each run
// in a worker process `hanglab run FILE -j 1 --json`, at most N at once).
//
// Why worker processes and not threads: a run's supervisor owns process-wide state (it is
// the child subreaper of its ranks, it reaps children, injectors register helper pids and
// act on signals). Worker processes keep runs as isolated as two `hanglab run` commands,
// which is what users do by hand; the parent only schedules, collects and reports. Runs
// never share ports (abstract-socket port leases), cgroups, namespaces or run directories
// (atomic mkdir), so the verdicts are those of a sequential run.
//
// Scheduling: the longest runs first (their last duration in history.sqlite, else the
// scenario's deadline as an upper bound), so the matrix's wall time is close to
// max(longest run, total / N). Results are printed in scenario order whatever order the
// runs finish in.
#include "cli/run_cmd.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <map>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "history/history.hpp"
#include "report/html_report.hpp"
#include "report/junit.hpp"
#include "report/progress.hpp"
#include "report/report.hpp"
#include "report/run_report.hpp"
#include "run/run_record.hpp"
#include "run/runner.hpp"
#include "run/state.hpp"
#include "scenario/config_error.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct MatrixJob {
  size_t scenario = 0;  // index into the prepared scenarios
  int rep = 0;          // 0-based repetition
  // Parallel mode.
  pid_t pid = 0;
  int out_fd = -1, err_fd = -1;
  std::string out, err;
  bool done = false;
  RunResult result;
};

RunResult internal_error_result(const std::string& scenario, const std::string& what) {
  RunResult r;
  r.scenario = scenario;
  r.verdict.status = "unknown";
  r.verdict.checks.push_back({"harness", "unknown", "a finished run", "internal error", what});
  return r;
}

// The worker's JSON line -> RunResult, with facts, triage and verdict read back from its
// run directory (the same files a sequential run would have left).
RunResult collect_worker(MatrixJob& j, const PreparedScenario& ps, int status) {
  const std::string& name = ps.scenario.name;
  json arr = json::parse(j.out, nullptr, false);
  if (!arr.is_array() || arr.empty() || !arr[0].is_object()) {
    std::string why = WIFSIGNALED(status) ? fmt::format("worker killed by signal {}", WTERMSIG(status))
                                          : fmt::format("worker exited {} without a result", WEXITSTATUS(status));
    std::string tail = j.err.size() > 600 ? j.err.substr(j.err.size() - 600) : j.err;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    return internal_error_result(name, why + (tail.empty() ? "" : ": " + tail));
  }
  const json& o = arr[0];
  RunResult r;
  r.scenario = name;
  r.run_dir = o.value("run_dir", "");
  r.duration_s = o.value("duration_s", 0.0);
  if (!r.run_dir.empty()) {
    try {
      LoadedRun lr = load_run_dir(r.run_dir);
      r.facts = lr.result.facts;
      r.triage = lr.result.triage;
      r.record = lr.run_json;
    } catch (const std::exception&) {
      // a skipped run has no harness.jsonl: the verdict below is all there is
    }
  }
  r.verdict = verdict_from_json(o.value("verdict", json::object()));
  return r;
}

// Expected duration of a scenario, for scheduling only.
double estimate_s(const PreparedScenario& ps, const std::map<std::string, double>& last) {
  if (auto it = last.find(ps.scenario.name); it != last.end()) return it->second;
  return ps.scenario.deadline_s;
}

std::string rep_label(const std::string& name, int rep, int repeat) {
  return repeat > 1 ? fmt::format("{}#{}", name, rep + 1) : name;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

int run_command(const RunCommand& cmd) {
  std::vector<PreparedScenario> prepared;
  std::vector<fs::path> files;
  try {
    files = expand_scenario_paths(cmd.paths);
    for (const auto& f : files) prepared.push_back(prepare_scenario(f));
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  sweep_dead_runs(&std::cerr);  // what a killed hanglab left, before we add our own
  const int repeat = std::max(1, cmd.repeat);
  int jobs_n = cmd.jobs > 0 ? cmd.jobs : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  std::vector<MatrixJob> jobs;
  for (size_t i = 0; i < prepared.size(); ++i)
    for (int k = 0; k < repeat; ++k) jobs.push_back(MatrixJob{i, k});
  jobs_n = std::min<int>(jobs_n, static_cast<int>(jobs.size()));

  HostInfo host = detect_host();
  RunOptions opts;
  opts.results_dir = cmd.results;
  opts.capture_stacks = !cmd.no_stacks;
  opts.interrupt_fd = cmd.interrupt_fd;
  Progress progress(jobs.size(), cmd.json_out);
  opts.on_state = progress.state_callback();
  auto interrupted = [&] { return cmd.interrupted && *cmd.interrupted; };

  size_t printed = 0;  // results are printed in job (= scenario) order
  auto print_ready = [&] {
    while (printed < jobs.size() && jobs[printed].done) {
      MatrixJob& j = jobs[printed++];
      if (!cmd.json_out) {
        RunResult shown = j.result;
        shown.scenario = rep_label(shown.scenario, j.rep, repeat);
        progress.result(verdict_line(shown));
      }
      if (!j.err.empty()) std::cerr << j.err;  // a worker's warnings, after its verdict
    }
  };

  if (jobs_n <= 1) {
    for (auto& j : jobs) {
      if (interrupted()) break;
      auto& ps = prepared[j.scenario];
      progress.begin(rep_label(ps.scenario.name, j.rep, repeat));
      try {
        j.result = run_and_report(ps, host, opts);
      } catch (const std::exception& e) {
        std::cerr << "hanglab: internal error in " << ps.scenario.name << ": " << e.what() << "\n";
        j.result = internal_error_result(ps.scenario.name, e.what());
      }
      j.done = true;
      print_ready();
    }
  } else {
    // Longest first.
    std::map<std::string, double> last;
    try {
      const fs::path db = fs::path(cmd.results) / "history.sqlite";
      if (fs::exists(db))
        for (const auto& r : HistoryDb(db).runs())
          if (r.verdict != "skipped" && r.duration_s > 0) last[r.scenario] = r.duration_s;
    } catch (const std::exception&) {
    }
    std::vector<size_t> order(jobs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return estimate_s(prepared[jobs[a].scenario], last) > estimate_s(prepared[jobs[b].scenario], last);
    });
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    size_t next = 0;
    int running = 0;
    bool stopping = false;
    auto start = [&](MatrixJob& j) {
      const auto& ps = prepared[j.scenario];
      std::vector<std::string> args = {self, "run", files[j.scenario].string(), "-j", "1", "--json", "--results", cmd.results};
      if (cmd.no_stacks) args.push_back("--no-stacks");
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      int out[2], err[2];
      if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw_system_error("pipe2", "starting a worker");
      const pid_t parent = ::getpid();
      pid_t pid = ::fork();
      if (pid < 0) throw_system_error("fork", "starting a worker");
      if (pid == 0) {
        // The worker tears its run down if this process dies (kill -9 included).
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) ::_exit(130);
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        // The binary this matrix started with, even when its file was replaced meanwhile (a rebuild,
        // a package upgrade: the path then names a new file, or "... (deleted)"): every worker of
        // one matrix runs the same hanglab.
        ::execv("/proc/self/exe", argv.data());
        ::_exit(127);
      }
      ::close(out[1]);
      ::close(err[1]);
      j.pid = pid;
      j.out_fd = out[0];
      j.err_fd = err[0];
      ++running;
      progress.begin(rep_label(ps.scenario.name, j.rep, repeat));
      progress.state(fmt::format("{} running", running));
    };
    while (true) {
      if (interrupted() && !stopping) {
        stopping = true;
        for (auto& j : jobs)
          if (j.pid > 0 && !j.done) ::kill(j.pid, SIGTERM);
      }
      while (!stopping && running < jobs_n && next < order.size()) start(jobs[order[next++]]);
      if (running == 0) break;
      std::vector<pollfd> fds;
      std::vector<std::pair<MatrixJob*, bool>> who;
      for (auto& j : jobs) {
        if (j.out_fd >= 0) fds.push_back({j.out_fd, POLLIN, 0}), who.push_back({&j, false});
        if (j.err_fd >= 0) fds.push_back({j.err_fd, POLLIN, 0}), who.push_back({&j, true});
      }
      std::vector<pollfd> all = fds;
      if (cmd.interrupt_fd >= 0) all.push_back({cmd.interrupt_fd, POLLIN, 0});
      int n = ::poll(all.data(), all.size(), 200);
      if (n < 0 && errno != EINTR) throw_system_error("poll", "waiting for workers");
      for (size_t i = 0; i < fds.size(); ++i) {
        if (!(all[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        auto [j, is_err] = who[i];
        char buf[65536];
        ssize_t r = ::read(all[i].fd, buf, sizeof buf);
        if (r > 0) (is_err ? j->err : j->out).append(buf, static_cast<size_t>(r));
        else if (r == 0 || (errno != EINTR && errno != EAGAIN)) close_fd(is_err ? j->err_fd : j->out_fd);
      }
      for (auto& j : jobs) {
        if (j.pid <= 0 || j.done || j.out_fd >= 0 || j.err_fd >= 0) continue;
        int status = 0;
        if (::waitpid(j.pid, &status, 0) != j.pid) continue;
        j.result = collect_worker(j, prepared[j.scenario], status);
        j.done = true;
        --running;
        progress.state(fmt::format("{} running", running));
      }
      print_ready();
    }
    // Interrupted before they started: nothing ran, nothing to report for them.
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [](const MatrixJob& j) { return j.pid == 0; }), jobs.end());
    printed = std::min(printed, jobs.size());
    print_ready();
  }
  progress.done();

  std::vector<RunResult> out;
  std::vector<Verdict> verdicts;
  std::vector<JunitSuite> suites;
  for (auto& j : jobs) {
    if (!j.done) continue;
    const auto& ps = prepared[j.scenario];
    verdicts.push_back(j.result.verdict);
    JunitSuite s = junit_suite(ps.scenario, j.result);
    if (repeat > 1) s.name = rep_label(s.name, j.rep, repeat);
    suites.push_back(s);
    out.push_back(j.result);
  }
  if (!cmd.junit.empty()) write_junit_file(cmd.junit, suites);
  // One page over the whole matrix, linking each run's report.html.
  std::string matrix;
  if (out.size() > 1) {
    std::vector<MatrixEntry> entries;
    for (const auto& r : out)
      if (!r.run_dir.empty()) entries.push_back(matrix_entry(r.run_dir, cmd.results));
    try {
      write_file(fs::path(cmd.results) / "matrix.html",
                 render_matrix_html(entries, fmt::format("hanglab matrix: {} runs", entries.size())));
      matrix = (fs::path(cmd.results) / "matrix.html").string();
    } catch (const std::exception& e) {
      std::cerr << "hanglab: warning: matrix.html not written: " << e.what() << "\n";
    }
  }
  if (cmd.json_out) {
    json arr = json::array();
    for (const auto& r : out)
      arr.push_back({{"scenario", r.scenario},
                     {"run_dir", r.run_dir.string()},
                     {"outcome", r.facts.outcome},
                     {"triage", {{"category", r.triage.category}, {"cause", r.triage.cause}, {"missing_ranks", r.triage.missing_ranks}}},
                     {"duration_s", r.duration_s},
                     {"verdict", to_json(r.verdict)}});
    std::cout << arr.dump(2) << std::endl;
  } else {
    if (out.size() > 1) std::cout << "\n" << summary_table(out);
    if (repeat > 1) std::cout << "\n" << pass_rate_table(out);
    std::cout << "run records: " << fs::absolute(cmd.results).string()
              << (out.size() == 1 && !out[0].run_dir.empty() ? " (this run: " + out[0].run_dir.string() + ")" : "")
              << "\n";
    if (!cmd.junit.empty()) std::cout << "junit: " << cmd.junit << "\n";
    if (!matrix.empty()) std::cout << "html: " << matrix << "\n";
  }
  if (interrupted()) {
    std::cerr << "hanglab: interrupted; ranks torn down, injectors reverted\n";
    return 130;
  }
  return exit_code_for(verdicts);
}

}  // namespace hanglab
