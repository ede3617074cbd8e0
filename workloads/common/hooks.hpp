// In-process fault hooks: the faults that are program logic rather than environment
// (a skipped or extra collective in a data-dependent branch, uneven batches, a NaN-skip,
// an exception, a mismatched collective, memory growth). The harness hands them to a
// rank as a JSON array in HANGLAB_HOOKS, already filtered to the ranks that should
// misbehave; the training loop asks the queries below at the points where a real
// training script would take the faulty branch.
//
// Each hook object has `kind` plus optional keys (see hook_specs() for the table with
// defaults). The trigger is `at_step` (1-based, default 1) or `at_unix` (Unix seconds:
// the hook acts at the first step that *starts* at or after that time). Parsing rejects
// bad JSON, unknown kinds, unknown or ill-typed keys with a UsageError naming the entry
// (the workload exits 2).
//
// The queries are pure except take_skip_checkpoint_barrier(), which consumes; the
// caller writes the `fault` trace event and log line each time a hook acts, because
// only it knows the detail (which seq was skipped, how much was allocated).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hanglab {

enum class HookKind {
  kSkipCollective,
  kUnevenBatches,
  kException,
  kExtraCollective,
  kNanSkip,
  kMismatchedCollective,
  kAllocGrowth,
};

const char* hook_kind_name(HookKind kind);

struct Hook {
  HookKind kind = HookKind::kSkipCollective;
  int at_step = 1;                 // 1-based; ignored while at_unix is unresolved
  std::optional<double> at_unix;   // time trigger instead of at_step
  int count = 1;                   // skip_collective: steps (allreduce) or barriers skipped
  std::string op;                  // skip_collective: allreduce|barrier; mismatched_collective: allreduce|broadcast
  std::string mode;                // uneven_batches: fewer|drop_last_mismatch
  std::string message;             // exception
  std::optional<int64_t> numel;    // extra_collective (default 1), mismatched_collective (default first bucket + 1)
  int64_t mb_per_step = 64;        // alloc_growth
};

// One documented key of a hook kind, for `--describe` and for the harness.
struct HookKeySpec {
  const char* name;
  const char* type;           // int | float | string
  const char* default_value;  // as text; "" = absent
  const char* doc;
};

struct HookKindSpec {
  const char* kind;
  const char* doc;
  std::vector<HookKeySpec> keys;  // excluding `kind`
};

const std::vector<HookKindSpec>& hook_specs();

class Hooks {
 public:
  Hooks() = default;
  // Parses a JSON array of hook objects. Empty or whitespace-only text = no hooks.
  // Throws UsageError ("HANGLAB_HOOKS[1] (skip_collective): unknown key \"cout\" ...").
  static Hooks parse(std::string_view json_text);
  // From HANGLAB_HOOKS; absent = no hooks. Throws like parse().
  static Hooks from_env();

  bool empty() const { return hooks_.empty(); }
  const std::vector<Hook>& hooks() const { return hooks_; }

  // Called by the training loop at the start of every step, before any query for that
  // step: resolves at_unix triggers to this step when `now_unix` has reached them.
  void begin_step(int step, double now_unix);

  // skip_collective op=allreduce: the rank skips every gradient-bucket allreduce of
  // steps N..N+count-1.
  bool should_skip_grad_allreduce(int step) const;
  // skip_collective op=barrier: true for the first `count` checkpoint barriers at or
  // after step N; each true answer consumes one.
  bool take_skip_checkpoint_barrier(int step);
  // uneven_batches mode=fewer: the sampler has run out before `step` (it yielded only
  // N-1 batches), so the rank leaves the training loop.
  bool sampler_exhausted(int step) const;
  // uneven_batches mode=drop_last_mismatch: this rank uses the opposite drop_last.
  bool flip_drop_last() const;
  // The hook acting at `step`, or nullptr.
  const Hook* exception_at(int step) const;
  const Hook* extra_collective_at(int step) const;
  const Hook* nan_loss_at(int step) const;
  const Hook* mismatched_collective_at(int step) const;
  // Extra MiB to allocate and keep at `step` (sum over alloc_growth hooks from N on).
  int64_t alloc_growth_mb(int step) const;

 private:
  // The step a hook starts acting at, once known (at_unix hooks resolve late).
  std::optional<int> start_step(size_t i) const;
  bool acts_at(size_t i, int step, int span) const;
  const Hook* first_acting(HookKind kind, int step) const;

  std::vector<Hook> hooks_;
  std::vector<std::optional<int>> resolved_;  // parallel to hooks_
  std::vector<int> barrier_skips_left_;        // parallel to hooks_
};

}  // namespace hanglab
