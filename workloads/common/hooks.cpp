#include "hooks.hpp"

#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>

#include "exit_codes.hpp"

namespace hanglab {

namespace {

using nlohmann::json;

constexpr HookKeySpec kAtStep = {"at_step", "int", "1", "first step the hook acts at (1-based)"};
constexpr HookKeySpec kAtUnix = {"at_unix", "float", "",
                                 "instead of at_step: act at the first step that starts at/after this Unix time (s)"};

struct KindEntry {
  HookKind kind;
  HookKindSpec spec;
};

const std::vector<KindEntry>& kind_table() {
  static const std::vector<KindEntry> kTable = {
      {HookKind::kSkipCollective,
       {"skip_collective", "the rank skips collectives its peers enter (a data-dependent branch)",
        {kAtStep, kAtUnix,
         {"count", "int", "1", "allreduce: steps whose gradient allreduces are skipped; barrier: checkpoint barriers skipped"},
         {"op", "string", "allreduce",
          "allreduce: skip every gradient-bucket allreduce of steps N..N+count-1; barrier: skip the first count "
          "checkpoint barriers at/after step N"}}}},
      {HookKind::kUnevenBatches,
       {"uneven_batches", "the rank's sampler yields a different number of batches than its peers'",
        {kAtStep, kAtUnix,
         {"mode", "string", "fewer",
          "fewer: only N-1 batches, the rank leaves the loop before step N; drop_last_mismatch: the rank uses the "
          "opposite drop_last (differs when dataset_size % world_size != 0; no at_step/at_unix)"}}}},
      {HookKind::kException,
       {"exception", "throw std::runtime_error in forward of step N (unhandled: exit 1)",
        {kAtStep, kAtUnix, {"message", "string", "injected exception", "what() of the exception"}}}},
      {HookKind::kExtraCollective,
       {"extra_collective", "one more allreduce than the peers at step N (after the gradient allreduces)",
        {kAtStep, kAtUnix, {"numel", "int", "1", "elements of the extra allreduce"}}}},
      {HookKind::kNanSkip,
       {"nan_skip", "the loss is NaN at step N: the rank skips backward, its gradient allreduces and the optimizer step",
        {kAtStep, kAtUnix}}},
      {HookKind::kMismatchedCollective,
       {"mismatched_collective", "at step N the first gradient-bucket collective differs from the peers'",
        {kAtStep, kAtUnix,
         {"numel", "int", "", "op=allreduce: elements of the mismatched allreduce (default: first bucket numel + 1)"},
         {"op", "string", "allreduce", "allreduce: same op, different numel; broadcast: broadcast from rank 0 instead"}}}},
      {HookKind::kAllocGrowth,
       {"alloc_growth", "from step N allocate and touch mb_per_step MiB more every step and keep it (OOM faults)",
        {kAtStep, kAtUnix, {"mb_per_step", "int", "64", "MiB allocated and touched per step"}}}},
  };
  return kTable;
}

const KindEntry* find_kind(const std::string& name) {
  for (const auto& entry : kind_table()) {
    if (name == entry.spec.kind) return &entry;
  }
  return nullptr;
}

std::string kind_list() {
  std::string out;
  for (const auto& entry : kind_table()) {
    if (!out.empty()) out += ", ";
    out += entry.spec.kind;
  }
  return out;
}

class EntryParser {
 public:
  EntryParser(size_t index, std::string kind) : prefix_("HANGLAB_HOOKS[" + std::to_string(index) + "]") {
    if (!kind.empty()) prefix_ += " (" + kind + ")";
  }

  [[noreturn]] void fail(const std::string& what) const { throw UsageError(prefix_ + ": " + what); }

  int64_t get_int(const json& value, const char* key, int64_t min_value) const {
    if (!value.is_number_integer()) fail(std::string("key \"") + key + "\" must be an integer, got " + value.dump());
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      fail(std::string("key \"") + key + "\" is too large: " + value.dump());
    }
    const int64_t v = value.get<int64_t>();
    if (v < min_value || v > std::numeric_limits<int>::max()) {
      fail(std::string("key \"") + key + "\" must be >= " + std::to_string(min_value) + ", got " + value.dump());
    }
    return v;
  }

  double get_float(const json& value, const char* key) const {
    if (!value.is_number()) fail(std::string("key \"") + key + "\" must be a number, got " + value.dump());
    return value.get<double>();
  }

  std::string get_string(const json& value, const char* key, std::initializer_list<const char*> allowed = {}) const {
    if (!value.is_string()) fail(std::string("key \"") + key + "\" must be a string, got " + value.dump());
    std::string s = value.get<std::string>();
    if (allowed.size() == 0) return s;
    std::string names;
    for (const char* a : allowed) {
      if (s == a) return s;
      names += names.empty() ? "" : " | ";
      names += a;
    }
    fail(std::string("key \"") + key + "\" must be one of " + names + ", got \"" + s + "\"");
  }

 private:
  std::string prefix_;
};

Hook parse_entry(const json& obj, size_t index) {
  if (!obj.is_object()) EntryParser(index, "").fail("expected an object, got " + obj.dump());
  const auto kind_it = obj.find("kind");
  if (kind_it == obj.end()) EntryParser(index, "").fail("missing \"kind\" (one of " + kind_list() + ")");
  if (!kind_it->is_string()) EntryParser(index, "").fail("\"kind\" must be a string, got " + kind_it->dump());
  const std::string kind_name = kind_it->get<std::string>();
  const KindEntry* entry = find_kind(kind_name);
  EntryParser p(index, kind_name);
  if (entry == nullptr) p.fail("unknown kind \"" + kind_name + "\" (one of " + kind_list() + ")");

  Hook hook;
  hook.kind = entry->kind;
  if (hook.kind == HookKind::kSkipCollective) hook.op = "allreduce";
  if (hook.kind == HookKind::kMismatchedCollective) hook.op = "allreduce";
  if (hook.kind == HookKind::kUnevenBatches) hook.mode = "fewer";
  if (hook.kind == HookKind::kException) hook.message = "injected exception";
  if (hook.kind == HookKind::kExtraCollective) hook.numel = 1;

  bool has_at_step = false;
  for (const auto& [key, value] : obj.items()) {
    if (key == "kind") continue;
    bool known = false;
    for (const auto& k : entry->spec.keys) known = known || key == k.name;
    if (!known) {
      std::string allowed = "kind";
      for (const auto& k : entry->spec.keys) allowed += std::string(", ") + k.name;
      p.fail("unknown key \"" + key + "\" (allowed: " + allowed + ")");
    }
    if (key == "at_step") {
      hook.at_step = static_cast<int>(p.get_int(value, "at_step", 1));
      has_at_step = true;
    } else if (key == "at_unix") {
      hook.at_unix = p.get_float(value, "at_unix");
      if (*hook.at_unix <= 0) p.fail("key \"at_unix\" must be a positive Unix time, got " + value.dump());
    } else if (key == "count") {
      hook.count = static_cast<int>(p.get_int(value, "count", 1));
    } else if (key == "op") {
      hook.op = hook.kind == HookKind::kSkipCollective ? p.get_string(value, "op", {"allreduce", "barrier"})
                                                       : p.get_string(value, "op", {"allreduce", "broadcast"});
    } else if (key == "mode") {
      hook.mode = p.get_string(value, "mode", {"fewer", "drop_last_mismatch"});
    } else if (key == "message") {
      hook.message = p.get_string(value, "message");
    } else if (key == "numel") {
      hook.numel = p.get_int(value, "numel", 1);
    } else if (key == "mb_per_step") {
      hook.mb_per_step = p.get_int(value, "mb_per_step", 1);
    }
  }
  if (has_at_step && hook.at_unix) p.fail("give at most one of \"at_step\" and \"at_unix\"");
  if (hook.kind == HookKind::kUnevenBatches && hook.mode == "drop_last_mismatch" && (has_at_step || hook.at_unix)) {
    p.fail("mode drop_last_mismatch acts on the sampler from the start; drop \"at_step\"/\"at_unix\"");
  }
  if (hook.kind == HookKind::kMismatchedCollective && hook.op == "broadcast" && hook.numel) {
    p.fail("\"numel\" applies to op allreduce only (a mismatched broadcast keeps the bucket's numel)");
  }
  return hook;
}

}  // namespace

const char* hook_kind_name(HookKind kind) {
  for (const auto& entry : kind_table()) {
    if (entry.kind == kind) return entry.spec.kind;
  }
  return "unknown";
}

const std::vector<HookKindSpec>& hook_specs() {
  static const std::vector<HookKindSpec> kSpecs = [] {
    std::vector<HookKindSpec> specs;
    for (const auto& entry : kind_table()) specs.push_back(entry.spec);
    return specs;
  }();
  return kSpecs;
}

Hooks Hooks::parse(std::string_view json_text) {
  Hooks hooks;
  if (json_text.find_first_not_of(" \t\r\n") == std::string_view::npos) return hooks;
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw UsageError(std::string("HANGLAB_HOOKS is not valid JSON: ") + e.what());
  }
  if (!doc.is_array()) throw UsageError("HANGLAB_HOOKS must be a JSON array of hook objects, got " + doc.dump());
  for (size_t i = 0; i < doc.size(); ++i) {
    hooks.hooks_.push_back(parse_entry(doc[i], i));
    const Hook& h = hooks.hooks_.back();
    hooks.resolved_.push_back(h.at_unix ? std::nullopt : std::optional<int>(h.at_step));
    hooks.barrier_skips_left_.push_back(h.count);
  }
  return hooks;
}

Hooks Hooks::from_env() {
  const char* text = std::getenv("HANGLAB_HOOKS");
  return text == nullptr ? Hooks() : parse(text);
}

void Hooks::begin_step(int step, double now_unix) {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    if (!resolved_[i] && hooks_[i].at_unix && now_unix >= *hooks_[i].at_unix) resolved_[i] = step;
  }
}

std::optional<int> Hooks::start_step(size_t i) const { return resolved_[i]; }

bool Hooks::acts_at(size_t i, int step, int span) const {
  const auto start = start_step(i);
  return start && step >= *start && step - *start < span;
}

bool Hooks::should_skip_grad_allreduce(int step) const {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    const Hook& h = hooks_[i];
    if (h.kind == HookKind::kSkipCollective && h.op == "allreduce" && acts_at(i, step, h.count)) return true;
  }
  return false;
}

bool Hooks::take_skip_checkpoint_barrier(int step) {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    const Hook& h = hooks_[i];
    if (h.kind != HookKind::kSkipCollective || h.op != "barrier") continue;
    const auto start = start_step(i);
    if (start && step >= *start && barrier_skips_left_[i] > 0) {
      --barrier_skips_left_[i];
      return true;
    }
  }
  return false;
}

bool Hooks::sampler_exhausted(int step) const {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    const Hook& h = hooks_[i];
    if (h.kind != HookKind::kUnevenBatches || h.mode != "fewer") continue;
    const auto start = start_step(i);
    if (start && step >= *start) return true;
  }
  return false;
}

bool Hooks::flip_drop_last() const {
  for (const Hook& h : hooks_) {
    if (h.kind == HookKind::kUnevenBatches && h.mode == "drop_last_mismatch") return true;
  }
  return false;
}

const Hook* Hooks::first_acting(HookKind kind, int step) const {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    if (hooks_[i].kind == kind && acts_at(i, step, 1)) return &hooks_[i];
  }
  return nullptr;
}

const Hook* Hooks::exception_at(int step) const { return first_acting(HookKind::kException, step); }

const Hook* Hooks::extra_collective_at(int step) const { return first_acting(HookKind::kExtraCollective, step); }

const Hook* Hooks::nan_loss_at(int step) const { return first_acting(HookKind::kNanSkip, step); }

const Hook* Hooks::mismatched_collective_at(int step) const {
  return first_acting(HookKind::kMismatchedCollective, step);
}

int64_t Hooks::alloc_growth_mb(int step) const {
  int64_t total = 0;
  for (size_t i = 0; i < hooks_.size(); ++i) {
    const Hook& h = hooks_[i];
    if (h.kind != HookKind::kAllocGrowth) continue;
    const auto start = start_step(i);
    if (start && step >= *start) total += h.mb_per_step;
  }
  return total;
}

}  // namespace hanglab
