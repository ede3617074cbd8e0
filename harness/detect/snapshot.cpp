#include "detect/snapshot.hpp"

#include <fmt/format.h>

#include "detect/harness_watchdog.hpp"
#include "detect/stack_sampler.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;

void write_snapshot(const SnapshotInput& in, const std::vector<RankWatch*>& ranks, const HarnessWatchdog& watchdog,
                    const StackSampler* stacks) {
  nlohmann::json rj = nlohmann::json::array();
  // The job progressed after a sample older than this: the ranks have been elsewhere since (a
  // fast loop passes a step per sampling period), so such a sample tells where a rank was, not
  // where it is, and the phase it would name depends on how the sampling fell.
  const double job_progress_t = watchdog.last_progress_mono() + in.mono_to_unix;
  for (const RankWatch* r : ranks) {
    nlohmann::json j = watchdog.rank_json(*r, in.mono_to_unix);
    // A live rank the liveness sampler has not sampled yet (the detection came before its first
    // period, e.g. a rank that died within a second of the start): its kernel view read now, with no
    // activity window behind it.
    if (!j.contains("kernel") && r->alive && r->gone_t == 0 && r->pid > 0) {
      std::string state, wchan;
      main_thread_state(r->pid, state, wchan);
      if (!state.empty())
        j["kernel"] = {{"activity", "unknown"}, {"state", state}, {"wchan", wchan}, {"sampled_t", nullptr},
                       {"read_at_snapshot", true}};
    }
    const StackSample* s = stacks ? stacks->latest(r->rank) : nullptr;
    // Only a sample from before the cause, recent, and taken since the job last progressed:
    // what the rank was doing then.
    const bool usable = s && s->pid == r->pid && s->t <= in.t && in.t - s->t <= 2 * in.sample_period_s + 1 &&
                        s->t >= job_progress_t;
    if (usable) {
      j["stack_sample"] = {{"t", s->t},
                           {"file", fmt::format("ranks/{}/stack.sample.txt", r->rank)},
                           {"class", s->info ? s->info->klass : ""},
                           {"frame", s->info ? s->info->klass_frame : ""}};
    }
    rj.push_back(std::move(j));
    if (r->has_trace) continue;  // a traced rank's own record was written before any teardown
    const fs::path stack = in.run_dir / "ranks" / std::to_string(r->rank) / "stack.txt";
    std::error_code ec;
    if (fs::exists(stack, ec)) continue;
    if (usable) {
      write_file(stack, s->text);
    } else if (r->alive && r->gone_t == 0 && r->pid > 0) {
      std::string state, wchan;
      main_thread_state(r->pid, state, wchan);
      if (state.empty()) continue;
      write_file(stack, fmt::format("# kernel state of rank {} (pid {}) at {}\n# state: {} wchan: {}\n", r->rank,
                                    r->pid, iso_time(in.t), state, wchan.empty() ? "-" : wchan));
    }
  }
  nlohmann::json out = {{"t", in.t},
                        {"why", in.why},
                        {"last_progress_t", watchdog.last_progress_mono() + in.mono_to_unix},
                        {"last_alive_t", watchdog.last_alive_mono() + in.mono_to_unix},
                        {"ranks", rj}};
  write_file(in.run_dir / "liveness.json", out.dump(2) + "\n");
}

}  // namespace hanglab
