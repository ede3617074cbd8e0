// The lines no rank can be named for (see timeline.hpp): whether they speak, whose they are when a
// launcher's plain exit follows them, and whether a scheduler's task ids are ranks at all.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "triage/logs/file_scan.hpp"
#include "triage/logs/timeline.hpp"

namespace hanglab::plainlog {

// srun started torch's launcher (corpus.cpp srun_started_agents, where the torch sources are cited):
// srun's "task N" and its "N: " label name agent N, a node whose workers' ranks the rendezvous assigns.
// The corpus already took the rank off the lines that only the label names.
void LogTimeline::decide_srun_agents() {
  srun_agents_ = c_.srun_agents;
  if (srun_agents_)
    note("srun started torch's launcher here (its elastic agent's lines are in the logs): srun's \"task N\" and "
         "its \"N: \" line label are agent N, a node whose workers' ranks the rendezvous assigns, not rank N");
}

namespace {

bool earlier(const Fail& a, const Fail& b) {
  if (a.has_t && b.has_t && a.t != b.t) return a.t < b.t;
  if (a.has_t != b.has_t) return a.has_t;
  return std::tie(a.file, a.line) < std::tie(b.file, b.line);
}

bool failing(const Fail& f) { return f.role != Role::kInfo && f.role != Role::kTeardown; }

}  // namespace

// One host: both named and equal, or at most one host named in the logs.
bool LogTimeline::same_host(const Fail& a, const Fail& f) const {
  const std::string& host = f.host.empty() && valid_rank(f.rank) ? rs_[f.rank].host : f.host;
  return !a.host.empty() && !host.empty() ? a.host == host : single_node_;
}

// a's line was written by the process whose exit f reports: its pid is the rank's, on one host (a pid
// names a process only with its host).
bool LogTimeline::same_process(const Fail& a, const Fail& f) const {
  const long long pid = a.ev && !pid_is_other(a.ev->kind) ? a.ev->pid : -1;
  return pid > 0 && valid_rank(f.rank) && rs_[f.rank].pids.count(pid) && same_host(a, f);
}

// A process that raises an exception and does not catch it exits with status 1 (CPython's Py_Main:
// "1 if the interpreter exits due to an exception", Doc/c-api/veryhigh.rst); torch's elastic agent
// polls its workers and reports the first non-zero status as "failed (exitcode: %s) local_rank: %s
// (pid: %s) of binary: %s" (torch/distributed/elastic/multiprocessing/api.py:1003 @torch 2.15; :673
// @1.13.1 in the catalogue), and the worker's @record wrapper only writes the exception to its error
// file and re-raises it (elastic/multiprocessing/errors/__init__.py:406-408 @2.15). So status 1 with no
// signal, just after a process's own error that no rank is named for, is that error's consequence:
// the worker's traceback (in the agent's stream when it is not redirected) above the agent's notice.
// The error is the rank's whose exit it explains: the same process (its pid), or the only process
// failing on that host in the lines above the exit. Only where no rank's own lines hold a root: a
// plain exit then silences the unattributed lines that say why (decide_anon), which this undoes.
void LogTimeline::explain_plain_exits() {
  for (const auto& s : rs_)
    for (const auto& f : s.fails)
      if (!f.aftermath && (f.role == Role::kRoot || (f.role == Role::kExit && f.signal))) return;
  // The plain exits, in the order they were written.
  std::vector<std::pair<int, size_t>> exits;
  for (const auto& s : rs_)
    for (size_t i = 0; i < s.fails.size(); ++i) {
      const Fail& f = s.fails[i];
      if (f.role == Role::kExit && !f.signal && f.code == 1 && !f.aftermath) exits.emplace_back(s.rank, i);
    }
  std::stable_sort(exits.begin(), exits.end(), [&](const auto& a, const auto& b) {
    return earlier(rs_[a.first].fails[a.second], rs_[b.first].fails[b.second]);
  });
  std::vector<bool> taken(anon_.fails.size(), false);
  std::vector<std::pair<int, size_t>> pairs;  // (exit, anon root)
  for (size_t x = 0; x < exits.size(); ++x) {
    const Fail& f = rs_[exits[x].first].fails[exits[x].second];
    const RankState& s = rs_[f.rank];
    // The last unattributed failure above the exit in its file (or, under the exit's own pid,
    // before it in another).
    std::vector<size_t> above;
    for (size_t i = 0; i < anon_.fails.size(); ++i) {
      const Fail& g = anon_.fails[i];
      if (!failing(g) || !before(g, f)) continue;
      if (g.file == f.file || same_process(g, f)) above.push_back(i);
    }
    if (above.empty()) continue;
    const size_t ai = *std::max_element(above.begin(), above.end(), [&](size_t i, size_t j) {
      return earlier(anon_.fails[i], anon_.fails[j]);
    });
    const Fail* a = &anon_.fails[ai];
    if (taken[ai] || a->role != Role::kRoot || a->aftermath) continue;
    // Failures above it that are not one error: which of them the exit's process printed is open.
    const bool mixed = std::any_of(above.begin(), above.end(), [&](size_t i) {
      return anon_.fails[i].category != a->category || anon_.fails[i].cause != a->cause;
    });
    if (!same_process(*a, f)) {
      const long long pid = a->ev && !pid_is_other(a->ev->kind) ? a->ev->pid : -1;
      if (pid > 0 && (!s.pids.empty() || pid_rank_.count(pid))) continue;  // another process's
      if (!same_host(*a, f) || mixed) continue;
    }
    taken[ai] = true;
    pairs.emplace_back(static_cast<int>(x), ai);
  }
  if (pairs.empty()) return;
  std::vector<const Fail*> moved;
  for (const auto& [x, ai] : pairs) {
    Fail& f = rs_[exits[x].first].fails[exits[x].second];
    f.aftermath = true;
    Fail root = anon_.fails[ai];
    const bool one = same_process(root, f);
    root.rank = f.rank;
    root.what += fmt::format(" (then {} exited with status 1, {}: an uncaught error's status, {})", who(f.rank), f.ref,
                             one ? "the same process" : "the only process failing on its host above it");
    if (root.ev) {
      auto& evs = rs_[f.rank].evs;
      evs.insert(std::upper_bound(evs.begin(), evs.end(), root.ev, std::less<const LogEvent*>()), root.ev);
      anon_.evs.erase(std::remove(anon_.evs.begin(), anon_.evs.end(), root.ev), anon_.evs.end());
    }
    rs_[f.rank].fails.push_back(std::move(root));
    moved.push_back(&anon_.fails[ai]);
  }
  std::vector<Fail> left;
  for (const auto& g : anon_.fails)
    if (std::find(moved.begin(), moved.end(), &g) == moved.end()) left.push_back(g);
  anon_.fails = std::move(left);
  for (auto& s : rs_) std::stable_sort(s.fails.begin(), s.fails.end(), earlier);
}

// The unattributed lines speak when no rank's own lines explain the failure.
void LogTimeline::decide_anon() {
  const auto rootish = [](const Fail& f) {
    return f.role == Role::kRoot || (f.role == Role::kExit && (f.signal || (f.code != kNoCode && f.code != 0)));
  };
  bool ranked_fail = false, ranked_root = false;
  for (const auto& s : rs_) {
    for (const auto& f : s.fails) {
      ranked_fail |= failing(f);
      ranked_root |= rootish(f) && !f.aftermath;
    }
  }
  const bool anon_fail = std::any_of(anon_.fails.begin(), anon_.fails.end(), failing);
  // A SIGABRT next to ranks' own timeouts is the watchdog taking the process down: their
  // echo's aftermath, not a root of its own (srun's "Aborted (core dumped)").
  const bool anon_root = std::any_of(anon_.fails.begin(), anon_.fails.end(), [&](const Fail& f) {
    return rootish(f) && !f.aftermath && !(ranked_fail && f.signal == 6);
  });
  use_anon_ = anon_fail && (!ranked_fail || (!ranked_root && anon_root));
}

}  // namespace hanglab::plainlog
