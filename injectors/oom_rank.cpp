// oom_rank: the chosen rank is killed by the kernel's OOM killer, for real — a
// container memory limit or a node running out of memory while one rank's usage
// grows (a leak, a larger batch, a cache). The rank runs in a memory cgroup of its own
// with memory.limit_in_bytes (v1) / memory.max (v2) = limit_mb and no swap, and an
// in-process hook ("alloc_growth" of workloads/common) makes it allocate and touch
// mb_per_step MiB more every step from the trigger step on. When the usage reaches the
// limit the kernel SIGKILLs it: exit status 137, no error in its own trace, the same
// kernel log line as in production. Its peers are left waiting in the next collective.
//
// Placement: the rank enters the group *before exec*, through a `/bin/sh -c` wrapper
// prepended to its argv that writes its own pid ($$, which the exec keeps) to
// cgroup.procs. Moving it in after launch (from fire()) would race with its start-up:
// pages it touched before the move stay charged to the old group (v1 does not move
// charges by default), so the limit would bite late and by an amount that depends on
// timing. With the wrapper every byte the rank ever allocates is counted, the group is
// set up in prepare_rank (errors abort the run before anything starts), and a failure
// to join is loud: the rank exits 126 with a message on stderr.
//
// The group is made directly under the harness's own memory group, which the rank
// would otherwise inherit, so any limit around the whole job still applies. fire() at
// the trigger records where the rank is and its usage then. revert() writes the
// evidence (oom_kill count, failcnt, peak usage and the kernel's OOM lines) to
// <run_dir>/ranks/<r>/oom.txt for triage, moves anything still alive back and removes
// the group.
//
// Needs the built-in training loop (the growth is its hook). Manifested when the kernel
// OOM-killed inside the group: oom_kill >= 1 in memory.events (v2) / memory.oom_control
// (v1), read by revert before the group goes, or, where the kernel has no such counter,
// the limit was hit (failcnt > 0) and the rank died of SIGKILL.
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <sys/klog.h>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "process_control.hpp"

namespace hanglab {

namespace fs = std::filesystem;

namespace {

const char* const kNeeds =
    "needs a writable memory cgroup (cgroup v1 /sys/fs/cgroup/memory or v2 with the memory controller)";

std::vector<KeyDoc> oom_keys() {
  return {
      {"limit_mb", "int", "300", "memory limit of the rank's cgroup in MiB (what the rank may use in total, no swap)"},
      {"mb_per_step", "int", "64", "MiB the rank allocates, touches and keeps every step from the trigger step on"}};
}

double mono_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string first_line_with(const std::string& text, const std::string& key) {
  std::istringstream ss(text);
  for (std::string line; std::getline(ss, line);)
    if (line.compare(0, key.size(), key) == 0) return line;
  return {};
}

std::string mib(const std::optional<std::string>& bytes) {
  if (!bytes) return "?";
  return fmt::format("{:.1f}", std::strtod(bytes->c_str(), nullptr) / (1024.0 * 1024.0));
}

// The kernel's lines about an OOM kill in `group` (oom-kill:...oom_memcg=...<group>...
// pid=N, then "Memory cgroup out of memory: Killed process N (...)"), logged after
// `since_mono` (the kernel stamps lines with seconds since boot, close to
// CLOCK_MONOTONIC). Reading needs CAP_SYSLOG where kernel.dmesg_restrict = 1.
std::vector<std::string> kernel_oom_lines(const std::string& group, double since_mono, std::string& why) {
  int size = ::klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  if (size <= 0) size = 1 << 20;
  std::string buf(static_cast<size_t>(size), '\0');
  int n = ::klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf.data(), size);
  if (n < 0) {
    why = fmt::format("kernel log not readable: klogctl(SYSLOG_ACTION_READ_ALL) failed: {} (errno {})",
                      std::strerror(errno), errno);
    return {};
  }
  buf.resize(static_cast<size_t>(n));
  std::vector<std::string> lines;
  std::istringstream ss(buf);
  for (std::string line; std::getline(ss, line);) {
    if (!line.empty() && line[0] == '<') {  // "<4>" priority prefix
      auto gt = line.find('>');
      if (gt != std::string::npos) line.erase(0, gt + 1);
    }
    double ts = -1;
    if (!line.empty() && line[0] == '[') ts = std::strtod(line.c_str() + 1, nullptr);
    if (ts >= 0 && ts < since_mono - 2) continue;  // older than the group (a recycled name)
    lines.push_back(line);
  }
  std::vector<std::string> out;
  for (const auto& line : lines) {
    if (line.find("oom-kill:") == std::string::npos || line.find(group) == std::string::npos) continue;
    out.push_back(line);
    auto p = line.find(",pid=");
    if (p == std::string::npos) continue;
    std::string killed = "Killed process " + std::to_string(std::atol(line.c_str() + p + 5)) + " ";
    for (const auto& l : lines)
      if (l.find(killed) != std::string::npos) out.push_back(l);
  }
  return out;
}

class OomRank : public HookInjector {
 public:
  OomRank() : HookInjector("alloc_growth", oom_keys()) {}

  void configure(const FaultSpec& spec, const std::string& file) override {
    HookInjector::configure(spec, file);
    // limit_mb belongs to the cgroup, not to the workload's hook (which rejects it).
    limit_mb_ = hook_.value("limit_mb", 300LL);
    hook_.erase("limit_mb");
  }

  Manifest manifested(const RunFactsView& run) const override {
    for (const auto& [rank, e] : evidence_) {
      if (e.oom_kills > 0)
        return {true, fmt::format("rank {}: the kernel OOM-killed in its memory cgroup (oom_kill {}, peak {} MiB of "
                                  "{} MiB)",
                                  rank, e.oom_kills, e.peak_mb, limit_mb_)};
      const RankExit* x = run.exit_of(rank);
      if (e.oom_kills < 0 && e.failcnt > 0 && x && x->signal && *x->signal == SIGKILL)
        return {true, fmt::format("rank {}: hit its memory limit (failcnt {}) and died of SIGKILL", rank, e.failcnt)};
    }
    if (evidence_.empty()) return {false, "no memory cgroup evidence: the targeted rank never ran in its group"};
    return {false, fmt::format("rank {} never reached its {} MiB limit (no OOM kill; peak {} MiB)",
                               evidence_.begin()->first, limit_mb_, evidence_.begin()->second.peak_mb)};
  }

  // The fault is the environment (the cgroup limit) as much as the rank's growth: the
  // supervisor fires it at the trigger like a runtime fault, so the run records the
  // moment even when the very first allocation is the one that gets the rank killed
  // (the rank traces its `fault` event only after an allocation succeeded).
  bool in_process() const override { return false; }

  std::string unsupported_reason(const HostInfo& /*host*/) const override {
    // host.cgroup_v1_memory is false for an unprivileged user too (the hierarchy is there
    // but not writable): the probes below say which, and what privilege would do.
    std::string why;
    auto mount = find_cgroup_mount("memory", why);
    if (!mount) return std::string(kNeeds) + ": " + why;
    std::string parent = cgroup_path_of(0, *mount);
    if (parent.empty())
      return std::string(kNeeds) + ": cannot read the memory cgroup of hanglab from /proc/self/cgroup";
    if (std::string p = cgroup_parent_problem(*mount, parent); !p.empty()) return std::string(kNeeds) + ": " + p;
    return {};
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    bool targeted = false;
    for (int r : ranks_) targeted = targeted || r == rank;
    if (!targeted) return;
    HookInjector::prepare_rank(rank, spec);
    if (auto it = spec.env.find("HANGLAB_RUN_DIR"); it != spec.env.end()) run_dir_ = it->second;
    Group* g = find(rank);
    if (!g) g = &create_group(rank);
    const std::string procs = (g->cg.dir() / "cgroup.procs").string();
    std::string script =
        "echo $$ > " + shell_quote(procs) + " || { echo " +
        shell_quote(fmt::format("hanglab oom_rank: rank {} cannot join memory cgroup {}", rank, g->cg.dir().string())) +
        " >&2; exit 126; }; exec \"$@\"";
    // First in the wrapper chain, so whatever else wraps the rank runs inside the group.
    std::vector<std::string> w = {"/bin/sh", "-c", script, "hanglab-oom_rank"};
    w.insert(w.end(), spec.wrapper.begin(), spec.wrapper.end());
    spec.wrapper = std::move(w);
  }

  std::string fire(Job& job) override {
    std::string detail;
    for (auto& g : groups_) {
      pid_t pid = job.pid_of(g.rank);
      std::string d;
      if (!job.alive(g.rank) || pid <= 0) {
        d = fmt::format("rank {} already gone", g.rank);
      } else {
        std::string where = cgroup_path_of(pid, g.cg.mount());
        if (where != g.cg.rel_path()) {
          // Should not happen (the wrapper put it there); put it in now so the limit
          // still applies to what it allocates from here on, and say so.
          try {
            g.cg.add_process(pid, fmt::format("oom_rank rank {} (pid {})", g.rank, pid));
            d = fmt::format("rank {} (pid {}) was in {}, moved into {} late: ", g.rank, pid, where,
                            g.cg.dir().string());
          } catch (const std::exception& e) {
            d = fmt::format("rank {} (pid {}) is not in {}: {}; ", g.rank, pid, g.cg.dir().string(), e.what());
          }
        }
        const char* usage = g.cg.mount().v2 ? "memory.current" : "memory.usage_in_bytes";
        d += fmt::format("rank {} (pid {}) in memory cgroup {} {}: limit {} MiB, usage now {} MiB", g.rank, pid,
                         g.cg.mount().v2 ? "v2" : "v1", g.cg.dir().string(), limit_mb_, mib(g.cg.read(usage)));
      }
      detail += (detail.empty() ? "" : "; ") + d;
    }
    // Same trigger rule as HookInjector::prepare_rank: at_step, else at_s, else step 1.
    std::string from = hook_.contains("at_step") ? fmt::format("from step {}", hook_["at_step"].get<int>())
                       : at_s_                   ? fmt::format("from the first step after {} s", *at_s_)
                                                 : std::string("from step 1");
    detail += fmt::format("; alloc_growth adds {} MiB per step {}", hook_.value("mb_per_step", 64LL), from);
    return detail;
  }

  // Runs after the ranks are gone (or, on an aborted run, before they were started).
  // The evidence is read before the group is removed, because it goes with the group.
  void revert(Job& job) override {
    std::string problems;
    std::vector<Group> left;
    for (auto& g : groups_) {
      if (g.cg.exists()) write_evidence(g, job);
      if (std::string p = g.cg.remove(); !p.empty()) {
        problems += (problems.empty() ? "" : "; ") + fmt::format("rank {}: {}", g.rank, p);
        left.push_back(std::move(g));
      }
    }
    groups_ = std::move(left);
    if (!problems.empty()) throw std::runtime_error("oom_rank revert: " + problems);
  }

 protected:
  void validate(const nlohmann::json& hook, const FaultSpec& spec, const std::string& file) override {
    for (const char* key : {"limit_mb", "mb_per_step"})
      if (hook.value(key, 1LL) < 1)
        throw config_error_at(file, *spec.table.get(key), spec.key_prefix() + "." + key, "must be >= 1");
  }

 private:
  struct Group {
    int rank;
    OwnedCgroup cg;
    double created_mono;
  };

  Group* find(int rank) {
    for (auto& g : groups_)
      if (g.rank == rank) return &g;
    return nullptr;
  }

  Group& create_group(int rank) {
    const std::string ctx = fmt::format("oom_rank rank {}", rank);
    std::string why;
    auto mount = find_cgroup_mount("memory", why);
    if (!mount) throw std::runtime_error(ctx + ": " + kNeeds + ": " + why);
    // The rank is forked by the harness and starts in the harness's own group.
    std::string parent = cgroup_path_of(0, *mount);
    if (parent.empty()) throw std::runtime_error(ctx + ": cannot read /proc/self/cgroup for the memory hierarchy");
    if (std::string p = cgroup_parent_problem(*mount, parent); !p.empty())
      throw std::runtime_error(ctx + ": " + kNeeds + ": " + p);
    OwnedCgroup cg(*mount, parent, new_cgroup_name(rank));
    cg.create(ctx, state());
    try {
      const std::string bytes = std::to_string(limit_mb_ * 1024 * 1024);
      if (mount->v2) {
        cg.write("memory.max", bytes, ctx);
        // No swap, and the whole group dies together, as a container does under kubelet.
        try {
          cg.write("memory.swap.max", "0", ctx);
        } catch (const std::exception&) {  // no swap controller: nothing to swap to via this group
        }
        try {
          cg.write("memory.oom.group", "1", ctx);
        } catch (const std::exception&) {
        }
      } else {
        cg.write("memory.limit_in_bytes", bytes, ctx);
        // Without swap limits a v1 group swaps instead of OOM-killing where the host has
        // swap. memsw exists only with swap accounting; swappiness 0 is the fallback.
        if (cg.read("memory.memsw.limit_in_bytes")) cg.write("memory.memsw.limit_in_bytes", bytes, ctx);
        try {
          cg.write("memory.swappiness", "0", ctx);
        } catch (const std::exception&) {
        }
        // The kernel must kill, not pause, the rank at the limit.
        cg.write("memory.oom_control", "0", ctx);
      }
    } catch (...) {
      cg.remove();
      throw;
    }
    groups_.push_back({rank, std::move(cg), mono_s()});
    return groups_.back();
  }

  void write_evidence(const Group& g, Job& job) {
    std::string dir = run_dir_.empty() ? job.run_dir() : run_dir_;
    fs::path rank_dir = fs::path(dir) / "ranks" / std::to_string(g.rank);
    std::error_code ec;
    if (dir.empty() || !fs::is_directory(rank_dir, ec)) return;  // the rank never started: nothing to report
    std::ostringstream out;
    const auto& cg = g.cg;
    out << fmt::format("# oom_rank evidence for rank {}: memory cgroup {} {}, limit {} MiB, {} MiB per step\n", g.rank,
                       cg.mount().v2 ? "v2" : "v1", cg.dir().string(), limit_mb_, hook_.value("mb_per_step", 64LL));
    Evidence& e = evidence_[g.rank];
    if (cg.mount().v2) {
      // memory.events: low, high, max, oom, oom_kill (, oom_group_kill)
      const std::string events = cg.read("memory.events").value_or("");
      std::istringstream ev(events);
      for (std::string line; std::getline(ev, line);)
        if (!line.empty()) out << line << "\n";
      if (std::string k = first_line_with(events, "oom_kill "); !k.empty()) e.oom_kills = std::atoll(k.c_str() + 9);
      if (std::string k = first_line_with(events, "max "); !k.empty()) e.failcnt = std::atoll(k.c_str() + 4);
      e.peak_mb = mib(cg.read("memory.peak"));
      out << "max_usage_mb " << e.peak_mb << "\n";
    } else {
      std::string oc = cg.read("memory.oom_control").value_or("");
      std::string kills = first_line_with(oc, "oom_kill ");
      out << (kills.empty() ? "oom_kill ?" : kills) << "\n";
      if (!kills.empty()) e.oom_kills = std::atoll(kills.c_str() + 9);
      const std::string failcnt = cg.read("memory.failcnt").value_or("?\n");
      e.failcnt = std::atoll(failcnt.c_str());
      out << "failcnt " << failcnt;
      e.peak_mb = mib(cg.read("memory.max_usage_in_bytes"));
      out << "max_usage_mb " << e.peak_mb << "\n";
    }
    out << "limit_mb " << limit_mb_ << "\n";
    std::string why;
    auto lines = kernel_oom_lines(cg.name(), g.created_mono, why);
    for (const auto& l : lines) out << "kernel: " << l << "\n";
    if (!why.empty()) out << "# " << why << "\n";
    std::ofstream f(rank_dir / "oom.txt", std::ios::trunc);
    f << out.str();
  }

  struct Evidence {
    long long oom_kills = -1;  // -1: the kernel has no counter
    long long failcnt = 0;     // times the limit was hit (v2: memory.events max)
    std::string peak_mb = "?";
  };
  std::map<int, Evidence> evidence_;  // per rank, read by revert before the group goes

  long long limit_mb_ = 300;
  std::string run_dir_;
  std::vector<Group> groups_;
};

}  // namespace

InjectorInfo oom_rank_info() {
  InjectorInfo i{"oom_rank", "the chosen ranks grow their memory until the kernel's OOM killer SIGKILLs them (status 137)",
          "a hanglab-* memory cgroup (v1 memory.limit_in_bytes / v2 memory.max = limit_mb, no swap) the rank joins "
          "before exec via a /bin/sh wrapper, plus the in-process hook \"alloc_growth\" of workloads/common; "
          "revert writes ranks/<r>/oom.txt (oom_kill count, failcnt, kernel log lines)",
          oom_keys(), [] { return std::make_unique<OomRank>(); }};
  i.default_trigger = "at_step = 1 (the growth starts with the first step)";
  return i;
}

}  // namespace hanglab
