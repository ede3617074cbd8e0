// render_text(): the human triage report. Times are shown relative to the run start
// (TriageResult::t0), because absolute Unix seconds are unreadable side by side.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "triage.hpp"

namespace hanglab {

namespace {

std::string rel_time(const TriageResult& r, double t) {
  return t > 0 ? fmt::format("{:+.3f} s", t - r.t0) : std::string("-");
}

std::string exit_text(const RankTimeline& t) {
  if (t.signal) return fmt::format("sig {}", *t.signal);
  if (t.exit_code) return std::to_string(*t.exit_code);
  return "alive";
}

std::string coll_text(const RankTimeline& t) {
  if (!t.last_coll_seq) return "-";
  return fmt::format("{} {} {}", t.last_coll_seq, t.last_coll_op, t.last_coll_edge);
}

std::string ranks_text(const std::vector<int>& v) {
  return v.empty() ? std::string("none") : fmt::format("[{}]", fmt::join(v, ","));
}

}  // namespace

std::string render_text(const TriageResult& r) {
  std::string out;
  auto line = [&out](const std::string& s) {
    out += s;
    out += '\n';
  };
  line(fmt::format("TRIAGE  {} / {}  (confidence {})", r.category, r.cause, r.confidence));
  if (!r.summary.empty()) line(r.summary);
  line(fmt::format("phase {} | scope {} | missing ranks {} | last good step {} | world size {}", r.phase, r.scope,
                   ranks_text(r.missing_ranks), r.last_good_step, r.world_size));
  if (r.divergence_seq || r.divergence_step) {
    line(fmt::format("divergence: seq {} in step {}", r.divergence_seq ? std::to_string(*r.divergence_seq) : "?",
                     r.divergence_step ? std::to_string(*r.divergence_step) : "?"));
  }

  line("");
  line("The four questions");
  for (size_t i = 0; i < r.answers.size(); ++i) line(fmt::format("  {}. {}", i + 1, r.answers[i]));

  line("");
  line("Rank timeline");
  // "compute ms" = step time outside collectives: equal step times with unequal compute
  // is what a straggler looks like in synchronous training.
  line(fmt::format("  {:<4} {:<9} {:>9} {:<10} {:<22} {:<6} {:>12} {:>10}  {}", "rank", "liveness", "last step",
                   "phase", "last collective", "exit", "mean step ms", "compute ms", "stuck in"));
  for (const auto& t : r.per_rank) {
    line(fmt::format("  {:<4} {:<9} {:>9} {:<10} {:<22} {:<6} {:>12.1f} {:>10.1f}  {}", t.rank, t.liveness, t.last_step,
                     t.last_phase.empty() ? "-" : t.last_phase, coll_text(t), exit_text(t), t.mean_step_ms,
                     t.busy_step_ms, t.stuck_in.empty() ? "-" : t.stuck_in));
  }
  if (r.stuck_collective) {
    const auto& s = *r.stuck_collective;
    line(fmt::format("  stuck collective: {} seq {} — waiting {}, absent {}", s.op, s.seq, ranks_text(s.waiting_ranks),
                     ranks_text(s.absent_ranks)));
  }

  line("");
  if (r.first_failure) {
    const auto& f = *r.first_failure;
    line(fmt::format("First failure: rank {} at {}: {}  [{}]", f.rank, rel_time(r, f.t), f.what, f.evidence));
  } else {
    line("First failure: none");
  }
  if (!r.echoes.empty()) {
    line("Echoes (later failures, in time order)");
    for (const auto& e : r.echoes) {
      line(fmt::format("  {:>10}  rank {}: {}  [{}]", rel_time(r, e.t), e.rank, e.what, e.evidence));
    }
  }

  if (!r.evidence.empty()) {
    line("");
    line("Evidence");
    for (const auto& e : r.evidence) line(fmt::format("  {}  {}", e.ref, e.text));
  }
  if (!r.next_steps.empty()) {
    line("");
    line("Next steps");
    for (const auto& s : r.next_steps) line(fmt::format("  - {}", s));
  }
  return out;
}

}  // namespace hanglab
