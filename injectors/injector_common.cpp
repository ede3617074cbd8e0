// Shared pieces of the injector plumbing: unknown-key rejection, typed key reading,
// the in-process hook base.
#include <chrono>
#include <set>

#include "hook_injector.hpp"

namespace hanglab {

namespace {
const std::set<std::string> kCommonKeys = {"kind", "ranks", "at_step", "at_s"};

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
    if (doc.default_value.empty()) return nullptr;
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
