// render_text(): the human triage report. Times are shown relative to the run start
// (TriageResult::t0), because absolute Unix seconds are unreadable side by side.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "triage/answer/answer.hpp"
#include "util.hpp"

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

// "[0,2,3]", "[0-8192,8194-16383]" (util.hpp: rank_ranges), so a 16k-rank job's lists stay
// one short line.
std::string ranks_text(const std::vector<int>& v) {
  if (v.empty()) return "none";
  return "[" + rank_ranges(v) + "]";
}

std::string range_text(int a, int b) { return a == b ? std::to_string(a) : fmt::format("{}-{}", a, b); }

// Flight Recorder triage: per rank its dump, its last recorded collective and where it was called
// from. Large worlds collapse as in log_timeline.
void fr_timeline(const TriageResult& r, const std::function<void(const std::string&)>& line) {
  line(fmt::format("  {:<9} {:<9} {:<34} {:<22} {}", "rank", "liveness", "last collective", "dump", "called from"));
  for (size_t i = 0; i < r.per_rank.size();) {
    const auto& t = r.per_rank[i];
    const auto key = [](const RankTimeline& x) {
      return std::make_tuple(x.liveness, x.last_coll_seq, x.last_coll_op, x.last_coll_edge, x.last_line.empty(),
                             x.stuck_in, x.top_frames);
    };
    size_t j = i;
    if (r.per_rank.size() > 32)
      while (j + 1 < r.per_rank.size() && key(r.per_rank[j + 1]) == key(t)) ++j;
    const std::string last =
        t.last_coll_seq ? fmt::format("{} seq {}{}", t.last_coll_op, t.last_coll_seq,
                                      t.last_coll_edge == "end"     ? " (completed)"
                                      : t.last_coll_edge == "begin" ? " (not completed)"
                                                                    : "")
                        : "-";
    line(fmt::format("  {:<9} {:<9} {:<34} {:<22} {}", range_text(t.rank, r.per_rank[j].rank), t.liveness, last,
                     t.last_line.empty() ? "(none)" : (j > i ? "(each its own)" : t.last_line),
                     t.top_frames.empty() ? "-" : t.top_frames.front()));
    i = j + 1;
  }
}

// Plain-log triage: what the logs say per rank. Large worlds are collapsed: consecutive
// ranks with the same row (apart from the rank) share one line.
void log_timeline(const TriageResult& r, const std::function<void(const std::string&)>& line) {
  line(fmt::format("  {:<9} {:<12} {:<9} {:>9} {:>11} {:<30} {:<7} {:<24} {}", "rank", "host", "liveness",
                   "last step", "at", "last collective", "exit", "last line", "first failure"));
  const auto row = [&](const RankTimeline& t, bool with_refs) {
    const std::string coll =
        t.last_coll_seq ? fmt::format("{} {}{}", t.last_coll_op.empty() ? "?" : t.last_coll_op, t.last_coll_seq,
                                      t.last_coll_numel >= 0 ? fmt::format(" n={}", t.last_coll_numel) : "")
                        : "-";
    return fmt::format("{:<12} {:<9} {:>9} {:>11} {:<30} {:<7} {:<24} {}", t.host.empty() ? "-" : t.host.substr(0, 12),
                       t.liveness, t.last_step ? std::to_string(t.last_step) : "-",
                       t.last_step_t > 0 ? rel_time(r, t.last_step_t) : "-", coll,
                       t.exit_code || t.signal ? exit_text(t).substr(0, 7) : "?",
                       with_refs ? (t.last_line.empty() ? "-" : t.last_line) : "(various)",
                       t.failure.empty() ? "-" : t.failure);
  };
  const bool collapse = r.per_rank.size() > 32;
  for (size_t i = 0; i < r.per_rank.size();) {
    const auto& t = r.per_rank[i];
    size_t j = i;
    if (collapse) {
      // Same liveness, step, collective and exit: the same story.
      const auto key = [&](const RankTimeline& x) {
        return std::make_tuple(x.liveness, x.last_step, x.last_coll_op, x.last_coll_seq, x.last_coll_numel,
                               exit_text(x), x.failure.substr(0, x.failure.find(':')));
      };
      while (j + 1 < r.per_rank.size() && key(r.per_rank[j + 1]) == key(t)) ++j;
    }
    const std::string ranks = range_text(t.rank, r.per_rank[j].rank);
    line(fmt::format("  {:<9} {}", ranks, row(t, i == j)));
    i = j + 1;
  }
}

}  // namespace

std::string render_text(const TriageResult& r) {
  std::string out;
  auto line = [&out](const std::string& s) {
    out += s;
    out += '\n';
  };
  const bool supervised = std::any_of(r.per_rank.begin(), r.per_rank.end(),
                                      [](const RankTimeline& t) { return t.exit_t > 0 || !t.stack_class.empty(); });
  line(fmt::format("TRIAGE  {} / {}  (confidence {}){}", r.category, r.cause, r.confidence,
                   r.source != "logs" ? ""
                   : supervised       ? "  from plain logs and the supervisor's record"
                                      : "  from plain logs"));
  if (!r.summary.empty()) line(r.summary);
  if (!r.detector_context.empty()) line("Detector in context: " + r.detector_context);
  line(fmt::format("phase {} | scope {} | missing ranks {} | last good step {} | world size {}", r.phase, r.scope,
                   ranks_text(r.missing_ranks), r.last_good_step, r.world_size));
  if (r.divergence_seq || r.divergence_step) {
    // Plain logs often give one of the two only (a SeqNum without a step, or the reverse).
    std::vector<std::string> parts;
    if (r.divergence_seq) parts.push_back(fmt::format("seq {}", *r.divergence_seq));
    if (r.divergence_step) parts.push_back(fmt::format("step {}", *r.divergence_step));
    line(fmt::format("divergence: {}", fmt::join(parts, " in ")));
  }

  line("");
  line("The four questions");
  for (size_t i = 0; i < r.answers.size(); ++i) line(fmt::format("  {}. {}", i + 1, r.answers[i]));

  line("");
  line("Rank timeline");
  if (r.source == "logs") {
    log_timeline(r, line);
  } else if (r.source == "flight_recorder") {
    fr_timeline(r, line);
  } else {
  // "compute ms" = step time outside collectives: equal step times with unequal compute
  // is what a straggler looks like in synchronous training.
  // A node column only where the run had nodes ([topology] nodes > 1).
  const bool nodes = std::any_of(r.per_rank.begin(), r.per_rank.end(), [](const RankTimeline& t) { return !t.host.empty(); });
  const auto node_col = [&](const std::string& h) { return nodes ? fmt::format("{:<7}", h.empty() ? "-" : h.substr(0, 7)) + " " : ""; };
  line(fmt::format("  {:<4} {}{:<9} {:>9} {:<10} {:<22} {:<6} {:>12} {:>10}  {}", "rank", node_col("node"), "liveness",
                   "last step", "phase", "last collective", "exit", "mean step ms", "compute ms", "stuck in"));
  for (const auto& t : r.per_rank) {
    line(fmt::format("  {:<4} {}{:<9} {:>9} {:<10} {:<22} {:<6} {:>12.1f} {:>10.1f}  {}", t.rank, node_col(t.host),
                     t.liveness, t.last_step, t.last_phase.empty() ? "-" : t.last_phase, coll_text(t), exit_text(t),
                     t.mean_step_ms, t.busy_step_ms, t.stuck_in.empty() ? "-" : t.stuck_in));
  }
  }
  // What the supervisor and the stack capture observed, and the progress lines printed.
  const bool observed = std::any_of(r.per_rank.begin(), r.per_rank.end(), [](const RankTimeline& t) {
    return t.exit_t > 0 || !t.stack_class.empty() || t.progress_lines > 0;
  });
  if (observed) {
    line("");
    line("Rank evidence (supervisor, stacks, progress lines)");
    line(fmt::format("  {:<4} {:<13} {:>10} {:<5} {:<10} {:<26} {:>10} {:>7}  {}", "rank", "exit", "at", "state",
                     "stack", "last progress", "at", "every", "top frames"));
    for (const auto& t : r.per_rank) {
      const std::string ex = t.exit_t > 0 ? exit_text(t) + (t.exit_by_harness ? " (harness)" : "") : "alive";
      line(fmt::format("  {:<4} {:<13} {:>10} {:<5} {:<10} {:<26} {:>10} {:>7}  {}", t.rank, ex,
                       t.exit_t > 0 ? rel_time(r, t.exit_t) : "-", t.proc_state.empty() ? "-" : t.proc_state,
                       t.stack_class.empty() ? "-" : t.stack_class,
                       t.progress.empty() ? "-" : t.progress.substr(0, 26), t.progress_t > 0 ? rel_time(r, t.progress_t) : "-",
                       t.progress_every_s > 0 ? fmt::format("{:.2f}s", t.progress_every_s) : "-",
                       t.top_frames.empty() ? "-" : fmt::format("{}", fmt::join(t.top_frames, " <- "))));
    }
  }
  if (r.stuck_collective) {
    const auto& s = *r.stuck_collective;
    // Plain logs of Gloo carry no sequence number: seq 0 stands for "not logged".
    line(fmt::format("  stuck collective: {} {} — waiting {}, absent {}", s.op.empty() ? "?" : s.op,
                     s.seq ? fmt::format("seq {}", s.seq) : std::string("(no seq in the logs)"),
                     ranks_text(s.waiting_ranks), ranks_text(s.absent_ranks)));
  }

  line("");
  if (r.first_failure) {
    const auto& f = *r.first_failure;
    line(fmt::format("First failure: rank {} at {}{}: {}  [{}]", f.rank, f.t_exact ? "" : ">=", rel_time(r, f.t),
                     f.what, f.evidence));
  } else {
    line("First failure: none");
  }
  if (!r.echoes.empty()) {
    line("Echoes (later failures, in time order)");
    size_t shown = 0;
    for (const auto& e : r.echoes) {
      if (++shown > 24) {
        line(fmt::format("  ... and {} more (see --format json)", r.echoes.size() - 24));
        break;
      }
      // ">=": the line had no clock of its own; its writer's previous clock bounds it from below.
      line(fmt::format("  {:>12}  rank {}: {}  [{}]", (e.t_exact ? "" : ">=") + rel_time(r, e.t), e.rank, e.what,
                       e.evidence));
    }
  }

  if (!r.evidence.empty()) {
    line("");
    line("Evidence");
    for (const auto& e : r.evidence) line(fmt::format("  {}  {}", e.ref, e.text));
  }
  if (!r.notes.empty()) {
    line("");
    line(r.source == "logs" ? "What the logs cannot decide, and how they were read" : "Notes");
    for (const auto& n : r.notes) line(fmt::format("  - {}", n));
  }
  if (!r.next_steps.empty()) {
    line("");
    line("Next steps");
    for (const auto& s : r.next_steps) line(fmt::format("  - {}", s));
  }
  return out;
}

}  // namespace hanglab
