// freeze_rank: the chosen ranks stop dead but stay alive — a VM or container paused by
// the hypervisor or a node agent, a process held by a debugger, a node stuck in a long
// stall. SIGSTOP to the rank's process group when the trigger is due: every thread,
// the heartbeat thread included, stops, so the rank exists (no exit, no error) and is
// silent; its peers block in the next collective. With duration_s > 0 it resumes
// (SIGCONT) after that many seconds, which turns the fault into a straggler.
//
// Needs nothing of the workload. Manifested when a rank was seen stopped (state T in
// /proc/<pid>/stat) after the SIGSTOP.
#include <chrono>
#include <thread>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "process_control.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> freeze_keys() {
  return {
      {"duration_s", "float", "0", "seconds until SIGCONT resumes the rank (0 = it stays frozen until the run ends)"}};
}

class FreezeRank : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, freeze_keys());
    ranks_ = spec.ranks;
    duration_s_ = read_fault_key(spec, file, freeze_keys()[0]).get<double>();
    if (duration_s_ < 0)
      throw config_error_at(file, *spec.table.get("duration_s"), spec.key_prefix() + ".duration_s", "must be >= 0");
  }

  std::string fire(Job& job) override {
    std::string detail;
    auto add = [&detail](const std::string& s) { detail += (detail.empty() ? "" : "; ") + s; };
    for (int r : ranks_) {
      pid_t pid = job.pid_of(r);
      if (!job.alive(r) || pid <= 0) {
        add(fmt::format("rank {} already gone", r));
        continue;
      }
      ProcessRef ref = ProcessRef::of(r, pid);
      if (int err = signal_rank(pid, SIGSTOP)) {
        add(fmt::format("rank {}: kill(SIGSTOP, pid {}) failed: {} (errno {})", r, pid, std::strerror(err), err));
        continue;
      }
      stopped_.push_back(ref);
      // The signal is delivered asynchronously: look (bounded) for the stopped state.
      char state = 0;
      for (int i = 0; i < 50 && (state = process_state(pid)) != 'T' && state != 't'; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (state == 'T' || state == 't') seen_stopped_.push_back(fmt::format("rank {} (pid {})", r, pid));
      add(fmt::format("SIGSTOP rank {} (pid {}){}", r, pid, state == 'T' || state == 't' ? ", stopped" : ""));
    }
    if (!stopped_.empty())
      detail += duration_s_ > 0 ? fmt::format(", SIGCONT after {} s", duration_s_) : ", frozen until the run ends";
    return detail;
  }

  std::string tick(Job& /*job*/, double since_fire_s) override {
    if (duration_s_ <= 0 || stopped_.empty() || since_fire_s < duration_s_) return {};
    return fmt::format("{} after {:.1f} s", resume_all(), since_fire_s);
  }

  Manifest manifested(const RunFactsView& /*run*/) const override {
    if (seen_stopped_.empty()) return {false, "no targeted rank was seen stopped (never fired, or already gone)"};
    std::string who;
    for (const auto& s : seen_stopped_) who += (who.empty() ? "" : ", ") + s;
    return {true, who + " in state T (stopped) after SIGSTOP" +
                      (duration_s_ > 0 ? fmt::format(", resumed after {} s", duration_s_) : std::string())};
  }

  // Runs after the supervisor's teardown too (which also SIGCONTs stopped ranks), and
  // after an interrupted run; it only touches processes it stopped and that still are
  // the same processes (start time), never a recycled pid.
  void revert(Job& /*job*/) override { resume_all(); }

 private:
  std::string resume_all() {
    std::string detail;
    for (const auto& ref : stopped_) {
      if (!ref.same_process()) continue;
      int err = signal_rank(ref.pid, SIGCONT);
      detail +=
          (detail.empty() ? "" : "; ") + (err == 0 ? fmt::format("SIGCONT rank {} (pid {})", ref.rank, ref.pid)
                                                   : fmt::format("rank {}: kill(SIGCONT, pid {}) failed: {} (errno {})",
                                                                 ref.rank, ref.pid, std::strerror(err), err));
    }
    stopped_.clear();
    return detail.empty() ? "frozen ranks already gone" : detail;
  }

  std::vector<int> ranks_;
  double duration_s_ = 0;
  std::vector<ProcessRef> stopped_;
  std::vector<std::string> seen_stopped_;  // ranks observed in state T after the SIGSTOP
};

}  // namespace

InjectorInfo freeze_rank_info() {
  return {"freeze_rank",
          "SIGSTOP the chosen ranks: alive but silent (paused VM/container, debugger), optionally resumed",
          "kill(2) SIGSTOP to the rank's process group when the trigger is due; SIGCONT after duration_s and on revert",
          freeze_keys(), [] { return std::make_unique<FreezeRank>(); }};
}

}  // namespace hanglab
