#include "detect/harness_watchdog.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "detect/stack_sampler.hpp"
#include "triage/records/stack_class.hpp"
#include "util.hpp"

namespace hanglab {

constexpr DetectorInfo kHarnessWatchdog{
    "harness_watchdog",
    DetectorSource::kHarness,
    "progress_s",
    1,
    "progress_s (checkpoint_s / eval_s while a rank is in that phase)",
    "the last progress of any rank, or the last moment a rank was busy or waiting on storage; a stopped rank's stop",
    ClockStart::kJobLastProgress,
    "",
    "",
    "hang",
    "#1f3a5f",
    "no progress and no working rank for progress_s: every live rank blocked, no busy thread, no storage wait "
    "(checkpoint_s / eval_s inside those phases), or one rank stopped by a signal (state T) for as long; declares "
    "the hang: stacks are captured, then teardown",
    /*timed=*/true,
    /*expectable=*/true,
    {{{"checkpoint", "checkpoint_s"}, {"eval", "eval_s"}}},
};

HarnessWatchdog::HarnessWatchdog(WatchdogLimits limits, LivenessOptions lo) : limits_(limits), sampler_(lo) {}

void HarnessWatchdog::start(double now_mono) { start_mono_ = last_progress_mono_ = last_alive_mono_ = now_mono; }

void HarnessWatchdog::traced_progress(double now_mono) {
  last_progress_mono_ = std::max(last_progress_mono_, now_mono);
  last_alive_mono_ = std::max(last_alive_mono_, now_mono);
}

void HarnessWatchdog::output_line(const RankWatch& r, double now_mono) {
  PerRank& p = per_rank_[r.rank];
  if (p.pending_line_mono == 0) p.pending_line_mono = now_mono;
}

std::pair<double, std::string> HarnessWatchdog::limit(const std::vector<RankWatch*>& ranks) const {
  double lim = limits_.progress_s;
  std::string name = "progress_s", where;
  bool phase_limit = false;
  for (const RankWatch* r : ranks) {
    if (!r->alive) continue;
    struct Open {
      bool inside;
      const std::optional<double>& limit;
      const char* phase;
    };
    for (const Open& p : {Open{r->in_checkpoint, limits_.checkpoint_s, "checkpoint"},
                          Open{r->in_eval, limits_.eval_s, "eval"}}) {
      if (!p.inside || !p.limit) continue;
      if (!phase_limit || *p.limit > lim) {
        lim = *p.limit;
        name = fmt::format("{}_s", p.phase);
        where = fmt::format("; rank {} in {}", r->rank, p.phase);
      }
      phase_limit = true;
    }
  }
  return {lim, fmt::format("{} = {}{}", name, lim, where)};
}

namespace {

// The main thread is inside a collective call itself: its innermost frame is one (all_reduce in
// distributed_c10d.py, a Work's wait, MPI). A frame further out proves nothing about a busy
// thread: DDP's constructor imports torch._dynamo, a training step runs under backward.
bool inside_collective_call(const StackFrameInfo& info) {
  if (info.frames.empty()) return false;
  const std::string& f = info.frames.front();
  for (const auto& rule : stack_class_rules()) {
    if (std::string_view(rule.klass) != "collective") continue;
    for (const char* n : rule.needles)
      if (f.find(n) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

// Why a working rank is known to wait after all: its trace says so, or a stack sampled since
// the job's last progress shows its main thread inside a collective call (spinning in it).
// Empty: it is not known to wait.
std::string HarnessWatchdog::waits(const RankWatch& r, const StackSampler* stacks) const {
  if (r.has_trace && r.in_collective) return "in a collective (trace)";
  if (r.has_trace && r.in_shutdown) return "past its training loop (trace)";
  if (stacks)
    if (const StackSample* s = stacks->latest(r.rank);
        s && s->pid == r.pid && s->mono >= last_progress_mono_ && s->info && inside_collective_call(*s->info))
      return "in " + s->info->frames.front() + " (sampled stack)";
  return "";
}

bool HarnessWatchdog::check(const std::vector<RankWatch*>& ranks, const Launcher& launcher, double now_mono,
                            StackSampler* stacks, const DetectFn& detect) {
  std::vector<LivenessSampler::Target> targets;
  for (const RankWatch* r : ranks)
    if (r->alive && r->pid > 0 && r->gone_t == 0) targets.push_back({r->rank, r->pid, true});
  if (launcher.pid > 0) targets.push_back({-1, launcher.pid, false});
  if (sampler_.sample(targets, now_mono)) {
    for (RankWatch* r : ranks) {
      PerRank& p = per_rank_[r->rank];
      const RankLiveness* l = r->pid > 0 ? sampler_.get(r->rank) : nullptr;
      const bool known = l && l->activity != Activity::kUnknown && l->activity != Activity::kGone &&
                         l->sampled_mono >= now_mono - 1e-9;
      // A line whose rank ran around it is progress, dated when it arrived; one printed while
      // the rank's main thread slept through (a monitor thread's redraw) is not.
      if (p.pending_line_mono > 0) {
        if (!known || l->main_ran || p.prev_main_ran) {
          p.last_progress_mono = std::max(p.last_progress_mono, p.pending_line_mono);
          last_progress_mono_ = std::max(last_progress_mono_, p.pending_line_mono);
          last_alive_mono_ = std::max(last_alive_mono_, p.pending_line_mono);
        }
        p.pending_line_mono = 0;
      }
      if (known) p.prev_main_ran = l->main_ran;
      if (!r->alive) continue;
      // A rank whose first window is still open cannot be called blocked yet.
      if (l && l->activity == Activity::kUnknown) last_alive_mono_ = std::max(last_alive_mono_, now_mono);
      if (!known) continue;
      if (l->activity == Activity::kStopped && l->state == 'T') {
        // Dated when first seen stopped: the stop began inside the window before, so the time it is
        // reported stopped is never more than it was.
        if (p.stopped_since_mono == 0) p.stopped_since_mono = l->sampled_mono;
      } else {
        p.stopped_since_mono = 0;
      }
      const bool working = l->activity == Activity::kBusy || l->activity == Activity::kDisk;
      const std::string why = working ? waits(*r, stacks) : "";
      if (working && why.empty()) {
        last_alive_mono_ = std::max(last_alive_mono_, now_mono);
        p.waiting_since_mono = 0;
        p.waiting_why.clear();
      } else if (!why.empty()) {
        if (p.waiting_since_mono == 0) p.waiting_since_mono = now_mono;
        p.waiting_why = why;
      } else {
        p.waiting_since_mono = 0;
        p.waiting_why.clear();
      }
    }
    if (launcher.pid > 0 && launcher.starting)
      if (const RankLiveness* l = sampler_.get(-1);
          l && (l->activity == Activity::kBusy || l->activity == Activity::kDisk) && l->sampled_mono >= now_mono - 1e-9)
        last_alive_mono_ = std::max(last_alive_mono_, now_mono);
  }
  const auto [lim, lim_text] = limit(ranks);
  // The signals disagree: the job has been silent for a quarter of the limit while a rank
  // without a trace keeps a CPU busy. Working, or spinning in a collective? Its stack says.
  if (stacks && now_mono - last_progress_mono_ >= lim / 4) {
    const double resample = std::max(1.0, lim / 4);
    for (const RankWatch* r : ranks) {
      if (!r->alive || r->pid <= 0 || r->gone_t > 0 || r->has_trace) continue;
      const RankLiveness* l = sampler_.get(r->rank);
      if (!l || l->activity != Activity::kBusy) continue;
      const StackSample* s = stacks->latest(r->rank);
      if (!s || s->pid != r->pid || s->mono < last_progress_mono_ || now_mono - s->mono >= resample)
        stacks->request(r->rank);
    }
  }
  bool any_alive = false;
  const RankWatch* stopped = nullptr;  // stopped by a signal for longer than the limit
  double stopped_for = 0;
  for (const RankWatch* r : ranks) {
    any_alive = any_alive || r->alive;
    if (!r->alive || r->pid <= 0 || r->gone_t > 0) continue;
    auto it = per_rank_.find(r->rank);
    if (it == per_rank_.end() || it->second.stopped_since_mono == 0) continue;
    const double d = now_mono - it->second.stopped_since_mono;
    if (d > lim && d > stopped_for) {
      stopped = r;
      stopped_for = d;
    }
  }
  if (fired_ || !any_alive || now_mono < launcher.stopping_until_mono) return false;
  if (now_mono - last_alive_mono_ <= lim && !stopped) return false;
  fired_ = true;
  if (now_mono - last_alive_mono_ <= lim) {
    std::string detail = fmt::format(
        "rank {} stopped by a signal (state T) for {:.1f} s ({}): it can take part in no collective until it is "
        "continued",
        stopped->rank, stopped_for, lim_text);
    const std::string kernel = kernel_summary(ranks);
    if (!kernel.empty()) detail += "; " + kernel;
    detect(kHarnessWatchdog.name, stopped->rank, detail, unix_now());
    return true;
  }
  const double silent = now_mono - last_progress_mono_;
  const double idle = now_mono - last_alive_mono_;
  std::string detail = fmt::format("no progress on any live rank for {:.1f} s ({}{})", idle, lim_text,
                                   launcher.stopping_until_mono > 0
                                       ? "; the launcher's time to stop its workers after a rank failed is over"
                                       : "");
  if (silent > idle + 0.5) detail += fmt::format("; nothing printed or traced for {:.1f} s", silent);
  const std::string kernel = kernel_summary(ranks);
  if (!kernel.empty()) detail += "; " + kernel;
  detect(kHarnessWatchdog.name, -1, detail, unix_now());
  return true;
}

std::string HarnessWatchdog::kernel_summary(const std::vector<RankWatch*>& ranks) const {
  std::vector<std::string> parts;
  for (const RankWatch* r : ranks) {
    if (!r->alive || r->pid <= 0 || r->gone_t > 0) continue;
    const RankLiveness* l = sampler_.get(r->rank);
    if (!l) continue;
    std::string s = fmt::format("rank {} {}", r->rank, activity_name(l->activity));
    if (l->activity == Activity::kBlocked && !l->where.empty()) s += " (" + l->where + ")";
    if (l->activity == Activity::kBusy && !l->busy.empty())
      s += fmt::format(" ({} {:.0f} %)", l->busy.front().comm, 100 * l->busy.front().demand);
    auto it = per_rank_.find(r->rank);
    if (it != per_rank_.end() && !it->second.waiting_why.empty()) s += " but waiting " + it->second.waiting_why;
    parts.push_back(std::move(s));
  }
  if (parts.empty()) return "";
  std::string out = "kernel: ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

nlohmann::json HarnessWatchdog::rank_json(const RankWatch& r, double mono_to_unix) const {
  nlohmann::json j = {{"rank", r.rank},
                      {"pid", r.pid},
                      {"alive", r.alive && r.gone_t == 0},
                      {"has_trace", r.has_trace},
                      {"spoke", r.spoke},
                      {"last_step", r.last_step},
                      {"init_done", r.init_done}};
  std::vector<std::string> phases;
  if (r.in_checkpoint) phases.push_back("checkpoint");
  if (r.in_eval) phases.push_back("eval");
  if (r.in_collective) phases.push_back("collective");
  if (r.in_shutdown) phases.push_back("shutdown");
  j["trace_inside"] = phases;
  auto it = per_rank_.find(r.rank);
  const double lp = it == per_rank_.end() ? 0 : it->second.last_progress_mono;
  j["last_output_progress_t"] = lp > 0 ? nlohmann::json(lp + mono_to_unix) : nlohmann::json(nullptr);
  j["last_heartbeat_t"] = r.has_trace ? nlohmann::json(r.last_hb_mono + mono_to_unix) : nlohmann::json(nullptr);
  j["waiting"] = it == per_rank_.end() ? "" : it->second.waiting_why;
  if (const RankLiveness* l = sampler_.get(r.rank); l && r.pid > 0) j["kernel"] = l->to_json(mono_to_unix);
  return j;
}

}  // namespace hanglab
