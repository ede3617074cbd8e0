// throttle_cpu: the chosen ranks get only a slice of a CPU — a container CPU limit set
// too low, CFS throttling under a quota, a noisy neighbour. The rank keeps running,
// just slowly: peers wait for it in every collective (a straggler), and a quota tight
// enough against collective_s turns it into a timeout.
//
// Mechanism, most faithful first:
//   * a CFS quota on a cgroup of its own — v2 `cpu.max` where the unified hierarchy is
//     mounted, else v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us` — created when the
//     trigger fires, directly under the group the rank lives in (so any limit the
//     operator placed around the job still applies), with the rank's processes moved in;
//   * where no cpu cgroup can be created (unprivileged, read-only /sys/fs/cgroup, v2
//     without a delegated cpu controller): a SIGSTOP/SIGCONT duty cycle driven by tick()
//     that stops the rank whenever its CPU time since the fault exceeds the quota.
// fire()'s detail names the mechanism used. revert() moves the processes back where
// they came from and removes the group, or resumes a rank the duty cycle had stopped.
//
// Needs CPU work to limit: on a built-in workload without `compute` it sets compute =
// "burn" (the step's time is CPU time) and refuses compute = "sleep". Manifested when the
// limit bit: the group's cpu.stat nr_throttled > 0 (read before the group is removed), or
// the duty cycle stopped the rank at least once.
#include <csignal>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "process_control.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> throttle_keys() {
  return {{"cpu_percent", "float", "10",
           "CPU limit in percent of ONE cpu (10 = 10 ms of CPU time per 100 ms; above 100 allows several cpus)"},
          {"period_ms", "int", "100", "CFS period in ms (1..1000); quota per period = period_ms x cpu_percent / 100"},
          {"duration_s", "float", "0", "seconds after which the limit is lifted (0 = until the run ends)"}};
}

class ThrottleCpu : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    const auto keys = throttle_keys();
    reject_unknown_keys(spec, file, keys);
    ranks_ = spec.ranks;
    percent_ = read_fault_key(spec, file, keys[0]).get<double>();
    period_us_ = read_fault_key(spec, file, keys[1]).get<long long>() * 1000;
    duration_s_ = read_fault_key(spec, file, keys[2]).get<double>();
    auto bad = [&](const std::string& key, const std::string& msg) {
      const toml::node* n = spec.table.get(key);
      return n ? config_error_at(file, *n, spec.key_prefix() + "." + key, msg)
               : config_error_at(file, spec.table.source(), spec.key_prefix() + "." + key, msg);
    };
    if (!(percent_ > 0)) throw bad("cpu_percent", "must be > 0");
    if (period_us_ < 1000 || period_us_ > 1000000)
      throw bad("period_ms", "must be within 1..1000 (the kernel's CFS period range)");
    quota_us_ = static_cast<long long>(period_us_ * percent_ / 100.0);
    if (quota_us_ < 1000)
      throw bad(spec.table.get("cpu_percent") ? "cpu_percent" : "period_ms",
                fmt::format("quota per period would be {} us, below the kernel's minimum of 1000 us: raise cpu_percent "
                            "or period_ms",
                            quota_us_));
    if (duration_s_ < 0) throw bad("duration_s", "must be >= 0");
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    if (!ctx.has_arg("compute")) return {};
    if (!ctx.arg_given("compute"))
      return {ctx.set_default_arg("compute", "burn",
                                  "throttle_cpu limits CPU time: the step's compute must be CPU work, not sleep")};
    if (ctx.arg("compute") == "sleep" && !ctx.expects_no_effect())
      throw ctx.refuse("kind", "throttle_cpu limits CPU time, but [workload.args] compute = \"sleep\" spends the "
                               "step sleeping: use compute = \"burn\"");
    return {};
  }

  Manifest manifested(const RunFactsView& /*run*/) const override {
    if (throttled_.empty()) return {false, "the CPU limit never bit (no throttled period, no duty-cycle stop)"};
    return {true, throttled_};
  }

  std::string fire(Job& job) override {
    std::string detail;
    for (int r : ranks_) {
      pid_t pid = job.pid_of(r);
      std::string d;
      if (!job.alive(r) || pid <= 0)
        d = fmt::format("rank {} already gone", r);
      else
        d = throttle(r, pid);
      detail += (detail.empty() ? "" : "; ") + d;
    }
    if (duration_s_ > 0) detail += fmt::format(", lifted after {} s", duration_s_);
    return detail;
  }

  std::string tick(Job& /*job*/, double since_fire_s) override {
    if (duration_s_ > 0 && since_fire_s >= duration_s_) {
      if (targets_.empty()) return {};
      std::string problems = undo_all();
      return fmt::format("CPU limit lifted after {:.1f} s{}", since_fire_s, problems.empty() ? "" : ": " + problems);
    }
    for (auto& t : targets_)
      if (t.duty) duty_step(t, since_fire_s);
    for (auto& t : targets_)
      if (t.duty && t.stops > 0) note_throttled(t, fmt::format("duty cycle stopped it {} time(s)", t.stops));
    return {};  // duty-cycle switches are routine, not harness.jsonl events
  }

  void revert(Job& /*job*/) override {
    std::string problems = undo_all();
    if (!problems.empty()) throw std::runtime_error("throttle_cpu revert: " + problems);
  }

 private:
  struct Target {
    ProcessRef leader;
    std::vector<ProcessRef> procs;     // the rank's processes at fire time
    std::optional<OwnedCgroup> group;  // cgroup mechanism
    bool duty = false;                 // duty-cycle mechanism
    bool stopped = false;
    double cpu_at_fire = 0;
    long long stops = 0;   // duty-cycle SIGSTOPs
    bool noted = false;    // counted in throttled_
  };

  void note_throttled(Target& t, const std::string& how) {
    if (t.noted) return;
    t.noted = true;
    throttled_ += fmt::format("{}rank {} throttled: {}", throttled_.empty() ? "" : "; ", t.leader.rank, how);
  }

  // nr_throttled of the group's cpu.stat (v1 and v2 both have it), before it is removed.
  void read_throttled(Target& t) {
    if (!t.group || t.noted) return;
    const std::string stat = t.group->read("cpu.stat").value_or("");
    const auto p = stat.find("nr_throttled ");
    if (p == std::string::npos) return;
    const long long n = std::atoll(stat.c_str() + p + 13);
    if (n > 0) note_throttled(t, fmt::format("cpu.stat nr_throttled {}", n));
  }

  std::string throttle(int r, pid_t pid) {
    Target t;
    t.leader = ProcessRef::of(r, pid);
    for (pid_t p : rank_processes(pid)) t.procs.push_back(ProcessRef::of(r, p));
    std::string why;
    std::string via = try_cgroup(t, why);
    if (!via.empty()) {
      std::string d = fmt::format("rank {} (pid {}, {} process(es)) limited to {}% of one cpu via {}", r, pid,
                                  t.procs.size(), percent_, via);
      targets_.push_back(std::move(t));
      return d;
    }
    t.duty = true;
    t.cpu_at_fire = cpu_seconds(t);
    targets_.push_back(std::move(t));
    return fmt::format(
        "rank {} (pid {}) limited to {}% of one cpu via a SIGSTOP/SIGCONT duty cycle (no cpu cgroup: {})", r, pid,
        percent_, why);
  }

  // Returns a description of the cgroup used, or "" with `why` set when none could be.
  std::string try_cgroup(Target& t, std::string& why) {
    auto mount = find_cgroup_mount("cpu", why);
    if (!mount) return {};
    const pid_t pid = t.leader.pid;
    const std::string ctx = fmt::format("throttle_cpu rank {} (pid {})", t.leader.rank, pid);
    // The group goes directly under the rank's own group: revert's "move back to the
    // parent" then returns the processes exactly where they came from.
    std::string origin = cgroup_path_of(pid, *mount);
    if (origin.empty()) {
      why = fmt::format("cannot read the cpu cgroup of pid {} from /proc/{}/cgroup", pid, pid);
      return {};
    }
    if (std::string p = cgroup_parent_problem(*mount, origin); !p.empty()) {
      why = p;
      return {};
    }
    OwnedCgroup g(*mount, origin, new_cgroup_name(t.leader.rank));
    try {
      g.create(ctx, state());
    } catch (const std::exception& e) {
      why = e.what();
      return {};
    }
    try {
      if (mount->v2) {
        g.write("cpu.max", fmt::format("{} {}", quota_us_, period_us_), ctx);
      } else {
        // Period first: the quota is checked against it.
        g.write("cpu.cfs_period_us", std::to_string(period_us_), ctx);
        g.write("cpu.cfs_quota_us", std::to_string(quota_us_), ctx);
      }
      for (const auto& p : t.procs) {
        try {
          g.add_process(p.pid, ctx);
        } catch (const std::exception&) {
          if (p.pid == pid || p.same_process()) throw;  // a helper that exited meanwhile is fine
        }
      }
    } catch (const std::exception& e) {
      why = e.what();
      if (std::string left = g.remove(); !left.empty()) why += "; cleanup: " + left;
      return {};
    }
    std::string via = mount->v2
                          ? fmt::format("cgroup v2 {} (cpu.max \"{} {}\")", g.dir().string(), quota_us_, period_us_)
                          : fmt::format("cgroup v1 {} (cpu.cfs_quota_us {}, cpu.cfs_period_us {})", g.dir().string(),
                                        quota_us_, period_us_);
    t.group.emplace(std::move(g));
    return via;
  }

  double cpu_seconds(const Target& t) const {
    double s = 0;
    for (const auto& p : t.procs)
      if (p.same_process()) s += process_cpu_seconds(p.pid);
    return s;
  }

  // Keeps the rank's CPU time since fire() at or below the quota's share of the wall
  // time since fire(): stop it while it is ahead, resume it once the allowance has
  // caught up. Counting CPU time (not running time) keeps "percent of one cpu" exact for
  // multi-threaded ranks, and accounting cumulatively makes the average right even
  // though the supervisor ticks only every ~20 ms (each stop/run phase is >= one tick).
  void duty_step(Target& t, double since_fire_s) {
    if (!t.leader.same_process()) return;
    double used = cpu_seconds(t) - t.cpu_at_fire;
    double allowed = percent_ / 100.0 * since_fire_s;
    if (!t.stopped && used >= allowed) {
      if (signal_rank(t.leader.pid, SIGSTOP) == 0) {
        t.stopped = true;
        ++t.stops;
      }
    } else if (t.stopped && used < allowed) {
      if (signal_rank(t.leader.pid, SIGCONT) == 0) t.stopped = false;
    }
  }

  // Undoes every target; keeps those that could not be undone so a second call retries.
  std::string undo_all() {
    std::string problems;
    std::vector<Target> left;
    for (auto& t : targets_) {
      read_throttled(t);
      if (t.group) {
        if (std::string p = t.group->remove(); !p.empty()) {
          problems += (problems.empty() ? "" : "; ") + fmt::format("rank {}: {}", t.leader.rank, p);
          left.push_back(std::move(t));
        }
      } else if (t.duty && t.stopped && t.leader.same_process()) {
        if (int err = signal_rank(t.leader.pid, SIGCONT)) {
          problems +=
              (problems.empty() ? "" : "; ") + fmt::format("rank {}: kill(SIGCONT, pid {}) failed: {} (errno {})",
                                                           t.leader.rank, t.leader.pid, std::strerror(err), err);
          left.push_back(std::move(t));
        }
      }
    }
    targets_ = std::move(left);
    return problems;
  }

  std::vector<int> ranks_;
  double percent_ = 10;
  long long period_us_ = 100000;
  long long quota_us_ = 10000;
  double duration_s_ = 0;
  std::vector<Target> targets_;
  std::string throttled_;  // evidence that the limit bit, per rank
};

}  // namespace

InjectorInfo throttle_cpu_info() {
  return {"throttle_cpu", "limit the chosen ranks to a slice of one CPU (container CPU limit, CFS throttling)",
          "CFS quota on a hanglab-* cpu cgroup (v2 cpu.max, else v1 cpu.cfs_quota_us) the rank's processes are moved "
          "into when the trigger is due; without a writable cpu cgroup a SIGSTOP/SIGCONT duty cycle; "
          "$HANGLAB_CGROUP_ROOT overrides /sys/fs/cgroup",
          throttle_keys(), [] { return std::make_unique<ThrottleCpu>(); }};
}

}  // namespace hanglab
