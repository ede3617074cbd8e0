// Shared pieces of the injector plumbing: unknown-key rejection, typed key reading,
// the in-process hook base.
#include <chrono>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "hook_injector.hpp"

namespace hanglab {

namespace {
const std::set<std::string> kCommonKeys = {"kind", "ranks", "at_step", "at_s", "at_output"};

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

namespace {
std::set<pid_t>& helper_pids() {
  static std::set<pid_t> pids;
  return pids;
}
}  // namespace

void register_helper_process(pid_t pid) { helper_pids().insert(pid); }
bool is_helper_process(pid_t pid) { return helper_pids().count(pid) > 0; }

const InjectorInfo* find_injector(const std::string& kind) {
  for (const auto& info : injector_registry())
    if (info.kind == kind) return &info;
  return nullptr;
}

void reject_unknown_keys(const FaultSpec& spec, const std::string& file, const std::vector<KeyDoc>& keys) {
  for (const auto& [k, node] : spec.table) {
    std::string key(k.str());
    if (kCommonKeys.count(key)) continue;
    bool known = false;
    for (const auto& d : keys) known = known || d.key == key;
    if (!known) {
      std::string allowed;
      for (const auto& d : keys) allowed += (allowed.empty() ? "" : ", ") + d.key;
      throw config_error_at(file, node, spec.key_prefix() + "." + key,
                            "unknown key for fault kind '" + spec.kind + "'" +
                                (allowed.empty() ? " (it takes no keys of its own)" : " (known: " + allowed + ")"));
    }
  }
}

nlohmann::json read_fault_key(const FaultSpec& spec, const std::string& file, const KeyDoc& doc) {
  const toml::node* node = spec.table.get(doc.key);
  const std::string key = spec.key_prefix() + "." + doc.key;
  if (!node) {
    // "" (required) or "(...)": a default the injector derives itself.
    if (doc.default_value.empty() || doc.default_value.front() == '(') return nullptr;
    if (doc.type == "int") return std::stoll(doc.default_value);
    if (doc.type == "float") return std::stod(doc.default_value);
    if (doc.type == "bool") return doc.default_value == "true";
    return doc.default_value;
  }
  if (doc.type == "int") {
    if (!node->is_integer()) throw config_error_at(file, *node, key, "expected an integer");
    return node->as_integer()->get();
  }
  if (doc.type == "float") {
    if (node->is_integer()) return static_cast<double>(node->as_integer()->get());
    if (!node->is_floating_point()) throw config_error_at(file, *node, key, "expected a number");
    return node->as_floating_point()->get();
  }
  if (doc.type == "bool") {
    if (!node->is_boolean()) throw config_error_at(file, *node, key, "expected true or false");
    return node->as_boolean()->get();
  }
  if (!node->is_string()) throw config_error_at(file, *node, key, "expected a string");
  return node->as_string()->get();
}

// ---- adapt ----

std::string AdaptContext::arg(const std::string& name) const {
  for (const auto& [k, v] : scenario.workload.args)
    if (k == name) return v;
  auto it = arg_defaults.find(name);
  return it == arg_defaults.end() ? std::string() : it->second;
}

bool AdaptContext::arg_given(const std::string& name) const {
  for (const auto& kv : scenario.workload.args)
    if (kv.first == name) return true;
  return false;
}

std::string AdaptContext::set_default_arg(const std::string& name, const std::string& value, const std::string& why) {
  if (arg_given(name)) return {};
  scenario.workload.args.emplace_back(name, value);
  return fmt::format("[workload.args] {} = {} ({})", name, value, why);
}

bool AdaptContext::expects_no_effect() const {
  return scenario.expect.fault_manifests.has_value() && !*scenario.expect.fault_manifests;
}

ConfigError AdaptContext::refuse(const std::string& key, const std::string& msg) const {
  const toml::node* n = key.empty() ? nullptr : spec.table.get(key);
  return config_error_at(file, n ? n->source() : spec.table.source(),
                         spec.key_prefix() + (key.empty() ? "" : "." + key), msg);
}

void check_trigger_reachable(const AdaptContext& ctx) {
  const Scenario& sc = ctx.scenario;
  if (ctx.spec.at_step && *ctx.spec.at_step > sc.workload.steps)
    throw ctx.refuse("at_step", fmt::format("step {} never comes: the workload runs steps = {}", *ctx.spec.at_step,
                                            sc.workload.steps));
  if (ctx.spec.at_s && *ctx.spec.at_s >= sc.deadline_s)
    throw ctx.refuse("at_s", fmt::format("{} s after launch never comes: deadline_s = {} ends the run first",
                                         *ctx.spec.at_s, sc.deadline_s));
}

// ---- manifestation ----

const RankExit* RunFactsView::exit_of(int rank) const {
  for (const auto& e : facts.exits)
    if (e.rank == rank) return &e;
  return nullptr;
}

std::vector<const nlohmann::json*> RunFactsView::events(int rank, const std::string& ev) const {
  std::vector<const nlohmann::json*> out;
  if (rank < 0 || static_cast<size_t>(rank) >= traces.size()) return out;
  for (const auto& e : traces[static_cast<size_t>(rank)])
    if (e.value("ev", "") == ev) out.push_back(&e);
  return out;
}

bool RunFactsView::has_phase(int rank, const std::string& name, const std::string& edge) const {
  for (const auto* e : events(rank, "phase"))
    if (e->value("name", "") == name && e->value("edge", "") == edge) return true;
  return false;
}

std::string RunFactsView::log_line(int rank, const std::string& needle) const {
  for (const auto* e : events(rank, "error")) {
    const std::string msg = e->value("msg", "");
    if (msg.find(needle) != std::string::npos) return msg;
  }
  if (run_dir.empty()) return {};
  for (const char* name : {"stderr.log", "stdout.log"}) {
    std::ifstream in(run_dir / "ranks" / std::to_string(rank) / name);
    for (std::string line; std::getline(in, line);)
      if (line.find(needle) != std::string::npos) return line.size() > 300 ? line.substr(0, 300) + "..." : line;
  }
  return {};
}

std::optional<double> RunFactsView::first_event_after_launch_s(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= traces.size() || traces[static_cast<size_t>(rank)].empty())
    return std::nullopt;
  return traces[static_cast<size_t>(rank)].front().value("t", 0.0) - facts.start_t;
}

std::vector<std::vector<nlohmann::json>> RunFactsView::read_traces(const std::filesystem::path& run_dir, int world_size) {
  std::vector<std::vector<nlohmann::json>> out(static_cast<size_t>(std::max(world_size, 0)));
  for (int r = 0; r < world_size; ++r) {
    std::ifstream in(run_dir / "ranks" / std::to_string(r) / "events.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.is_object()) out[static_cast<size_t>(r)].push_back(std::move(j));
    }
  }
  return out;
}

// ---- the in-process hook base ----

std::vector<std::string> HookInjector::adapt(AdaptContext& ctx) {
  if (ctx.spec.at_output && ctx.training_loop)
    throw ctx.refuse("at_output", fmt::format("{} acts inside the built-in training loop, which triggers at_step or at_s; "
                                              "at_output watches the output of a bring-your-own program",
                                              ctx.spec.kind));
  if (!ctx.training_loop) {
    throw ctx.refuse("kind", fmt::format(
        "{} is an in-process hook of the built-in training loop (HANGLAB_HOOKS); {} does not run that loop, so the "
        "fault could not act: use a built-in workload (torch_ddp, mpi_ddp, nccl_ddp){}",
        ctx.spec.kind,
        ctx.builtin ? "workload " + ctx.scenario.workload.name : std::string("a bring-your-own command"),
        ctx.builtin ? "" : ", or script the fault in the command itself"));
  }
  return {};
}

Manifest HookInjector::hook_acted(const RunFactsView& run, const std::string& effect) const {
  for (int r : ranks_) {
    for (const auto* e : run.events(r, "fault")) {
      if (e->value("kind", "") != hook_kind_) continue;
      return {true, fmt::format("rank {} traced `fault` {} at step {}: {}{}", r, hook_kind_, e->value("step", 0),
                                e->value("detail", ""), effect.empty() ? "" : "; " + effect)};
    }
  }
  std::string who;
  for (int r : ranks_) who += (who.empty() ? "" : ",") + std::to_string(r);
  return {false, fmt::format("no targeted rank ({}) traced a `fault` event of hook {}: the hook never acted", who,
                             hook_kind_)};
}

void HookInjector::configure(const FaultSpec& spec, const std::string& file) {
  reject_unknown_keys(spec, file, keys_);
  ranks_ = spec.ranks;
  hook_ = nlohmann::json::object();
  hook_["kind"] = hook_kind_;
  if (spec.at_step) hook_["at_step"] = *spec.at_step;
  at_s_ = spec.at_s;
  for (const auto& d : keys_) {
    auto v = read_fault_key(spec, file, d);
    if (!v.is_null()) hook_[d.key] = v;
  }
  validate(hook_, spec, file);
}

void HookInjector::prepare_rank(int rank, LaunchSpec& spec) {
  bool targeted = false;
  for (int r : ranks_) targeted = targeted || r == rank;
  if (!targeted) return;
  nlohmann::json h = hook_;
  // at_s is relative to launch; ranks are exec'd right after prepare_rank, so "now" is
  // the launch time to within milliseconds.
  if (at_s_) h["at_unix"] = unix_now() + *at_s_;
  if (!h.contains("at_step") && !h.contains("at_unix")) h["at_step"] = 1;
  spec.hooks.push_back(h);
}

}  // namespace hanglab
