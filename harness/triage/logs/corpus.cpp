// The corpus of plain logs (see reader.hpp): the files under the paths given, each scanned by
// logs/reader.cpp (several in parallel), merged in file order so that the answer does not depend on
// thread timing: a rank spread over several files, the progress bars, the events in time order.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include "triage/logs/file_scan.hpp"
#include "triage/records/run_dir.hpp"  // is_run_dir: --logs-only on a run directory

namespace hanglab {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const char* suf) {
  const size_t n = std::strlen(suf);
  return s.size() >= n && s.compare(s.size() - n, n, suf) == 0;
}

// Files that are not logs: hanglab's own records, configs, binaries, sources.
bool skip_file_name(const std::string& name) {
  if (name.empty() || name[0] == '.') return true;
  if (name == "expected.json") return true;
  static const char* kSkip[] = {".json", ".jsonl", ".toml", ".html", ".xml", ".sqlite", ".pt", ".png", ".jpg",
                                ".gz",   ".zip",   ".tar",  ".so",   ".py",  ".sh",     ".md", ".svg", ".pdf"};
  for (const char* ext : kSkip) {
    if (ends_with(name, ext)) return true;
  }
  return false;
}

bool looks_binary(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n < 0) return true;
  return std::memchr(buf, '\0', static_cast<size_t>(n)) != nullptr;
}

int find_year(const std::vector<LogInput>& inputs) {
  // The first full date in the first few files dates the year-less stamps.
  size_t n = 0;
  for (const auto& in : inputs) {
    if (++n > 64) break;
    const int fd = ::open(in.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[8192];
    const ssize_t got = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (got <= 0) continue;
    const std::string_view s(buf, static_cast<size_t>(got));
    for (size_t i = 0; i + 19 <= s.size(); ++i) {
      if ((s[i] != '1' && s[i] != '2') || (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')) continue;
      double t = 0, res = 0;
      if (parse_iso_time(s.substr(i), &t, &res)) {
        return (s[i] - '0') * 1000 + (s[i + 1] - '0') * 100 + (s[i + 2] - '0') * 10 + (s[i + 3] - '0');
      }
    }
  }
  return 0;
}

}  // namespace

std::string log_ref(const LogCorpus& c, uint32_t file, uint32_t line) {
  if (file >= c.files.size()) return fmt::format("?:{}", line);
  return fmt::format("{}:{}", c.files[file].name, line);
}

std::vector<LogInput> list_log_inputs(const std::vector<fs::path>& paths, bool logs_only) {
  std::vector<LogInput> out;
  const bool single = paths.size() == 1;
  for (const auto& p : paths) {
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) throw std::runtime_error(fmt::format("{}: no such file or directory", p.string()));
    if (fs::is_regular_file(st)) {
      out.push_back({p, p.string()});
      continue;
    }
    if (!fs::is_directory(st)) throw std::runtime_error(fmt::format("{}: not a file or directory", p.string()));
    std::vector<LogInput> found;
    if (logs_only && is_run_dir(p)) {
      // The ranks' stdout/stderr and the launcher's console (mpirun's notices go there).
      // supervisor.log: the closing signals hanglab sent when it tore the job down.
      for (const char* f : {"launcher.stdout.log", "launcher.stderr.log", "supervisor.log"}) {
        if (fs::is_regular_file(p / f, ec)) found.push_back({p / f, f});
      }
      for (fs::directory_iterator it(p / "ranks", ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_directory()) continue;
        for (const char* f : {"stdout.log", "stderr.log"}) {
          const fs::path file = it->path() / f;
          if (fs::is_regular_file(file, ec)) found.push_back({file, fs::relative(file, p).generic_string()});
        }
      }
    } else {
      fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (it->is_directory()) {
          if (!name.empty() && name[0] == '.') it.disable_recursion_pending();
          continue;
        }
        if (!it->is_regular_file() || skip_file_name(name)) continue;
        if (looks_binary(it->path())) continue;
        found.push_back({it->path(), fs::relative(it->path(), p).generic_string()});
      }
    }
    if (ec) throw std::runtime_error(fmt::format("{}: cannot list: {}", p.string(), ec.message()));
    std::sort(found.begin(), found.end(), [](const LogInput& a, const LogInput& b) { return a.name < b.name; });
    if (!single) {
      for (auto& f : found)
        f.name = (p.filename().empty() ? p.parent_path().filename() : p.filename()).string() + "/" + f.name;
    }
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// A writer's bar over several files (file order): the later one; the same bar's advances add up.
static void merge_bar(BarSeen& into, const BarSeen& x) {
  if (!x.seen()) return;
  const bool later = !into.seen() || (x.has_t && into.has_t && x.t != into.t
                                          ? x.t > into.t
                                          : std::tie(x.file, x.line) > std::tie(into.file, into.line));
  if (!later) return;
  if (into.seen() && into.desc == x.desc) {
    BarSeen m = x;
    m.advances += into.advances + (x.first_n > into.last_n ? 1 : 0);
    m.first_n = std::min(into.first_n, x.first_n);
    into = m;
  } else {
    into = x;
  }
}

// ProcessGroupNCCL's watchdog reports a timeout in two lines: "[Rank N] Watchdog caught collective operation
// timeout: WorkNCCL(SeqNum=S, ...)" (ProcessGroupNCCL.cpp:616 in the 2.5 era), with no process-group tag, then
// "[PG ID i PG GUID g(desc) Rank N] Exception (either an error or timeout) detected by watchdog at work: S, last
// enqueued ..." (:1795). The second names the group the first's work ran in. Only where every timeout has its
// second line: a timeout without one is in a group these lines do not name, and two keys of one group (a named
// one and an unnamed one) would split it.
static void adopt_work_status_pg(std::vector<LogEvent>& evs) {
  std::vector<std::pair<size_t, size_t>> adopt;  // (timeout, work status)
  size_t timeouts = 0;
  for (size_t i = 0; i < evs.size(); ++i) {
    if (evs[i].kind == LogKind::kWatchdogTimeout && evs[i].seq >= 0 && evs[i].pg.empty()) ++timeouts;
    const LogEvent& w = evs[i];
    if (w.kind != LogKind::kWorkStatus || w.pg.empty()) continue;
    const size_t k = w.text.find("detected by watchdog at work: ");
    if (k == std::string::npos) continue;
    const long long seq = std::atoll(w.text.c_str() + k + 30);
    for (size_t j = i; j-- > 0 && evs[j].file == w.file && evs[j].line + 4 >= w.line;) {
      const LogEvent& t = evs[j];
      if (t.kind != LogKind::kWatchdogTimeout || t.rank != w.rank || t.seq != seq || !t.pg.empty()) continue;
      adopt.emplace_back(j, i);
      break;
    }
  }
  if (adopt.empty() || adopt.size() != timeouts) return;
  for (const auto& [t, w] : adopt) {
    evs[t].pg = evs[w].pg;
    evs[t].pg_default = evs[w].pg_default;
  }
}

static void merge_rank_log(RankLog& g, RankLog& x);

// torchrun's tee prefix "[default3]:" names a local rank
// (torch/distributed/elastic/multiprocessing/tail_log.py:141@2.15.0, header f"[{name}{local_rank}]:"): the
// agent's rendezvous result maps it onto a global rank; with no map, a job that spans nodes leaves it no
// rank's, and one node's local rank is its global rank (the corpus convention for a one-host paste).
static int tee_rank(const AgentLayout& agent, int local) {
  if (!agent.local_to_global.empty()) {
    const auto it = agent.local_to_global.find(local);
    return it == agent.local_to_global.end() ? -1 : it->second;
  }
  return agent.multi_node ? -1 : local;
}

static void place_local_ranks(LogCorpus& c, std::vector<RankLog>& local_ranks,
                              std::vector<std::pair<long long, int>>& local_pids,
                              std::unordered_set<long long>& pid_seen) {
  for (auto& g : local_ranks) {
    const int r = tee_rank(c.agent, g.rank);
    if (r >= 0) {
      g.rank = r;
      merge_rank_log(c.ranks[r], g);
    } else {
      c.unattributed_steps += g.n_steps;
      merge_bar(c.unattributed_bar, g.bar);
    }
  }
  for (auto& [pid, local] : local_pids)
    if (const int r = tee_rank(c.agent, local); r >= 0 && pid_seen.insert(pid).second) c.pid_rank.emplace_back(pid, r);
  for (auto& e : c.events) {
    if (e.rank_src != RankSource::kLocal) continue;
    e.rank = tee_rank(c.agent, e.rank);
    if (e.rank < 0) e.rank_src = RankSource::kNone;
  }
}

// One writer's record from another file (or from srun's label lines) into its record so far.
static void merge_rank_log(RankLog& g, RankLog& x) {
  if (g.lines == 0) {
    g = std::move(x);
    return;
  }
  // A rank spread over several files (stdout + stderr, pod log + dmesg).
  const auto later = [](bool ha, double ta, uint32_t fa, uint32_t la, bool hb, double tb, uint32_t fb,
                        uint32_t lb) {
    if (ha && hb && ta != tb) return ta > tb;
    return std::tie(fa, la) > std::tie(fb, lb);
  };
  if (later(g.has_first_t, g.first_t, g.first_file, g.first_line, x.has_first_t, x.first_t, x.first_file,
            x.first_line)) {
    g.first_file = x.first_file;
    g.first_line = x.first_line;
    g.has_first_t = x.has_first_t;
    g.first_t = x.first_t;
  }
  if (later(x.has_last_t, x.last_t, x.last_file, x.last_line, g.has_last_t, g.last_t, g.last_file, g.last_line)) {
    g.last_file = x.last_file;
    g.last_line = x.last_line;
    g.has_last_t = x.has_last_t;
    g.last_t = x.last_t;
  }
  g.lines += x.lines;
  g.host_tag_lines += x.host_tag_lines;
  g.n_steps += x.n_steps;
  g.max_step = std::max(g.max_step, x.max_step);
  g.total_steps = std::max(g.total_steps, x.total_steps);
  if (g.host.empty()) g.host = x.host;
  merge_bar(g.bar, x.bar);
  if (x.phase != LogKind::kNone &&
      (g.phase == LogKind::kNone || later(x.phase_has_t, x.phase_t, x.phase_file, x.phase_line, g.phase_has_t,
                                          g.phase_t, g.phase_file, g.phase_line))) {
    g.phase = x.phase;
    g.phase_file = x.phase_file;
    g.phase_line = x.phase_line;
    g.phase_t = x.phase_t;
    g.phase_has_t = x.phase_has_t;
    g.phase_text = x.phase_text;
  }
  if (x.started.seq >= 0 && g.started.seq >= 0) {
    // The later of two files' last lines; counting down from the other's is several groups too.
    const bool x_later = later(x.started.has_t, x.started.t, x.started.file, x.started.line, g.started.has_t,
                               g.started.t, g.started.file, g.started.line);
    const bool mixed = x.started.mixed || g.started.mixed ||
                       (x_later ? x.started.seq < g.started.seq : g.started.seq < x.started.seq);
    if (x_later) g.started = x.started;
    g.started.mixed = mixed;
  } else if (x.started.seq >= 0) {
    g.started = x.started;
  }
  if (!x.recent.empty()) {
    g.recent.insert(g.recent.end(), x.recent.begin(), x.recent.end());
    std::stable_sort(g.recent.begin(), g.recent.end(), [](const StepRec& a2, const StepRec& b2) {
      if (a2.has_t && b2.has_t && a2.t != b2.t) return a2.t < b2.t;
      return std::tie(a2.file, a2.line) < std::tie(b2.file, b2.line);
    });
    if (g.recent.size() > kRecentSteps) g.recent.erase(g.recent.begin(), g.recent.end() - kRecentSteps);
    g.last_step = g.recent.back().step;
  }
}

// srun numbers the processes it starts (its "task N" and its "-l" label are SLURM_PROCID, slurm
// src/common/write_labelled_message.c:143 "%*d: " @284c3b95f0). Where those are torch's launchers
// (torchrun, torch.distributed.run/.launch: one elastic agent per node), the agent starts the node's
// workers and the ranks are the workers': the agent's group rank is the rendezvous' order ("group_rank =
// rdzv_info.rank", torch/distributed/elastic/agent/server/api.py:529 @torch 2.15, git d0f2af8b) and a
// worker's global rank is "base_global_rank + local_rank" (:683). Task N is then agent N, a node. The
// paste shows the agents by their own lines: its failure notice and summary, its signal handling, a frame
// or logger of the launcher (reader_lines.cpp names_torch_launcher).
static bool srun_started_agents(const LogCorpus& c, uint64_t label_lines) {
  const auto has = [&](auto pred) { return std::any_of(c.events.begin(), c.events.end(), pred); };
  if (label_lines == 0 && !has([](const LogEvent& e) { return e.kind == LogKind::kSrunTask; })) return false;
  return c.torch_launcher || !c.launch_failures.empty() || has([](const LogEvent& e) {
           return e.kind == LogKind::kLauncherExit || e.kind == LogKind::kChildFailed ||
                  e.kind == LogKind::kSummaryHeader || (e.kind == LogKind::kStopSignal && e.word == "torchrun");
         });
}

LogCorpus load_log_corpus(const std::vector<LogInput>& inputs, unsigned threads) {
  LogCorpus c;
  bool kubeflow = false;
  for (const auto& in : inputs) {
    std::string low = in.name;
    std::transform(low.begin(), low.end(), low.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (low.find("master-0") != std::string::npos || low.find("master_0") != std::string::npos) kubeflow = true;
  }
  LogLineContext ctx;
  if (const int y = find_year(inputs)) {
    ctx.year = y;
    c.year_known = true;
  }
  c.year = ctx.year;

  std::vector<FileScan> scans(inputs.size());
  std::vector<std::string> errors(inputs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < inputs.size();) {
      try {
        scans[i] = scan_log_file(inputs[i], static_cast<uint32_t>(i), rank_from_path(inputs[i].name, kubeflow), ctx);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  n = std::min<unsigned>({n, 8u, static_cast<unsigned>(std::max<size_t>(1, inputs.size()))});
  if (n <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < n; ++i) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  for (const auto& e : errors) {
    if (!e.empty()) throw std::runtime_error(e);
  }

  // Merge in file order.
  std::unordered_set<long long> pid_seen;
  std::set<std::pair<std::string, long long>> nccl_seen;
  std::vector<RankLog> label_ranks, local_ranks;
  std::vector<std::pair<long long, int>> label_pids, local_pids;
  uint64_t label_lines = 0;
  for (auto& s : scans) {
    c.bytes += s.info.bytes;
    c.lines += s.info.lines;
    c.unattributed_steps += s.unattributed_steps;
    c.progress_lines += s.progress_lines;
    c.torch_launcher |= s.torch_launcher;
    merge_bar(c.unattributed_bar, s.unattributed_bar);
    if (s.unattributed_phase != LogKind::kNone) {
      c.unattributed_phase = s.unattributed_phase;
      c.unattributed_phase_file = static_cast<uint32_t>(c.files.size());
      c.unattributed_phase_line = s.unattributed_phase_line;
      c.unattributed_phase_text = std::move(s.unattributed_phase_text);
      c.unattributed_phase_stepped = s.unattributed_phase_stepped;
    }
    c.files.push_back(std::move(s.info));
    for (auto& [rank, a] : s.ranks) merge_rank_log(c.ranks[rank], a.log);
    for (auto& [rank, a] : s.label_ranks) label_ranks.emplace_back(std::move(a.log));
    for (auto& pr : s.label_pid_rank) label_pids.push_back(pr);
    for (auto& [rank, a] : s.local_ranks) local_ranks.emplace_back(std::move(a.log));
    for (auto& pr : s.local_pid_rank) local_pids.push_back(pr);
    label_lines += s.srun_label_lines;
    for (auto& e : s.events) c.events.push_back(std::move(e));
    for (auto& l : s.launch) c.launch_failures.push_back(std::move(l));
    for (auto& pr : s.pid_rank) {
      if (pid_seen.insert(pr.first).second) c.pid_rank.push_back(pr);
    }
    for (auto& w : s.world) c.world_hints.push_back(std::move(w));
    for (auto& p : s.nccl_procs) {
      if (c.nccl_procs.size() < static_cast<size_t>(kMaxWorld) && nccl_seen.emplace(p.host, p.pid).second)
        c.nccl_procs.push_back(std::move(p));
    }
    s = FileScan{};
  }
  adopt_work_status_pg(c.events);  // each file's events are still in line order here
  c.agent = read_agent_layout(c.events);
  place_local_ranks(c, local_ranks, local_pids, pid_seen);
  c.srun_agents = srun_started_agents(c, label_lines);
  if (!c.srun_agents) {  // srun's task ids are the ranks (or no srun)
    for (auto& g : label_ranks) merge_rank_log(c.ranks[g.rank], g);
    for (auto& pr : label_pids)
      if (pid_seen.insert(pr.first).second) c.pid_rank.push_back(pr);
  } else {  // a node's agent and its workers: no rank
    for (auto& e : c.events)
      if (e.rank_src == RankSource::kSrunLabel) e.rank = -1, e.rank_src = RankSource::kNone;
    for (auto& g : label_ranks) {
      c.unattributed_steps += g.n_steps;
      merge_bar(c.unattributed_bar, g.bar);
    }
  }
  // Time order; clock-less events keep their file position, after the timed ones.
  std::stable_sort(c.events.begin(), c.events.end(), [](const LogEvent& a, const LogEvent& b) {
    if (a.has_t != b.has_t) return a.has_t;
    if (a.has_t && a.t != b.t) return a.t < b.t;
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  return c;
}

}  // namespace hanglab
