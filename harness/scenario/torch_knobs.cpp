#include "scenario/torch_knobs.hpp"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

namespace hanglab {

// Defaults and meanings as torch 2.15 ships them: ProcessGroupNCCL.hpp (the NCCL variables),
// FlightRecorder.hpp (TORCH_FR_*: buffer 2000 when unset, dump on timeout on, 15 s dump wait),
// torch/csrc/distributed/c10d/debug.h (TORCH_DISTRIBUTED_DEBUG). Measured here with Gloo:
// an unset TORCH_FR_BUFFER_SIZE records (2000 entries), 0 records nothing.
const std::vector<TorchKnobSpec> kTorchKnobs = {
    {"nccl_async_error_handling", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "int", 0, 3, "", "3", "nccl",
     "after a failed or timed-out NCCL collective: 0 nothing (the rank carries on), 1 tear the process down, "
     "2 abort the communicators only, 3 tear down without clean-up"},
    {"nccl_heartbeat_timeout_s", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "int", 1, 86400, "", "480", "nccl",
     "the heartbeat monitor aborts the process when ProcessGroupNCCL's watchdog thread is stuck this long"},
    {"nccl_enable_monitoring", "TORCH_NCCL_ENABLE_MONITORING", "bool", 0, 1, "", "true", "nccl",
     "run the heartbeat monitor thread at all"},
    {"fr_buffer_size", "TORCH_FR_BUFFER_SIZE", "int", 0, 10000000, "", "2000", "all",
     "Flight Recorder ring buffer, in entries (one per collective); 0 records nothing"},
    {"fr_dump_on_timeout", "TORCH_FR_DUMP_ON_TIMEOUT", "bool", 0, 1, "", "true", "nccl",
     "dump the Flight Recorder to TORCH_FR_DUMP_TEMP_FILE<rank> when a collective times out (hanglab points "
     "that at ranks/<r>/torch_fr_<r>); ProcessGroupNCCL's watchdog does it, Gloo writes nothing"},
    {"nccl_wait_timeout_dump_ms", "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", "int", 0, 3600000, "", "15000", "nccl",
     "how long a timed-out rank waits for its Flight Recorder dump before it exits"},
    {"distributed_debug", "TORCH_DISTRIBUTED_DEBUG", "enum", 0, 0, "OFF,INFO,DETAIL", "OFF", "all",
     "DETAIL wraps every process group in ProcessGroupWrapper: each collective is first checked against the "
     "other ranks' (op, sequence, shapes), so a mismatch fails at once instead of timing out; costs time per "
     "collective"},
};

const TorchKnobSpec* find_torch_knob(const std::string& key) {
  for (const auto& k : kTorchKnobs)
    if (key == k.key) return &k;
  return nullptr;
}

std::string torch_knob_for_env(const std::string& name) {
  for (const auto& k : kTorchKnobs)
    if (name == k.env) return k.key;
  // torch reads the older and newer spellings of some variables: one knob, one place.
  if (name == "NCCL_ASYNC_ERROR_HANDLING") return "nccl_async_error_handling";
  if (name == "TORCH_NCCL_TRACE_BUFFER_SIZE") return "fr_buffer_size";
  if (name == "TORCH_NCCL_DUMP_ON_TIMEOUT") return "fr_dump_on_timeout";
  if (name == "TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC") return "nccl_wait_timeout_dump_ms";
  return "";
}

std::optional<long long> TorchKnobs::int_value(const std::string& key) const {
  auto it = set.find(key);
  if (it == set.end()) return std::nullopt;
  return std::stoll(it->second.value);
}

std::optional<bool> TorchKnobs::bool_value(const std::string& key) const {
  auto it = set.find(key);
  if (it == set.end()) return std::nullopt;
  return it->second.value == "1";
}

std::optional<std::string> TorchKnobs::string_value(const std::string& key) const {
  auto it = set.find(key);
  if (it == set.end()) return std::nullopt;
  return it->second.value;
}

std::map<std::string, std::string> TorchKnobs::env() const {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : set) out[v.env] = v.value;
  return out;
}

TorchKnobs parse_torch_table(const toml::table& t, const std::string& file, const std::string& path,
                             std::vector<ConfigError>& errors) {
  TorchKnobs out;
  auto error = [&](const toml::source_region& where, const std::string& key, const std::string& msg) {
    errors.emplace_back(file, static_cast<int>(where.begin.line), static_cast<int>(where.begin.column), key, msg);
  };
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    const std::string full = path + "." + key;
    const TorchKnobSpec* spec = find_torch_knob(key);
    if (!spec) {
      std::string known;
      for (const auto& s : kTorchKnobs) known += (known.empty() ? "" : ", ") + std::string(s.key);
      std::string hint;
      const std::string as_knob = torch_knob_for_env(key);
      if (!as_knob.empty()) hint = fmt::format(" (the variable {} is the key {})", key, as_knob);
      error(k.source(), full, "unknown key" + hint + " (expected one of: " + known + ")");
      continue;
    }
    const std::string type(spec->type);
    std::string value;
    if (type == "int") {
      if (!node.is_integer()) {
        error(node.source(), full, "expected an integer");
        continue;
      }
      const long long v = node.as_integer()->get();
      if (v < spec->lo || v > spec->hi) {
        error(node.source(), full, fmt::format("must be between {} and {} (got {})", spec->lo, spec->hi, v));
        continue;
      }
      value = std::to_string(v);
    } else if (type == "bool") {
      if (!node.is_boolean()) {
        error(node.source(), full, "expected true or false");
        continue;
      }
      value = node.as_boolean()->get() ? "1" : "0";
    } else {
      if (!node.is_string()) {
        error(node.source(), full, fmt::format("expected a string, one of {}", spec->values));
        continue;
      }
      value = node.as_string()->get();
      std::vector<std::string> allowed;
      std::stringstream ss(spec->values);
      for (std::string a; std::getline(ss, a, ',');) allowed.push_back(a);
      if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
        error(node.source(), full, fmt::format("must be one of {} (got \"{}\")", spec->values, value));
        continue;
      }
    }
    out.set[key] = TorchKnobValue{spec->env, value, static_cast<int>(node.source().begin.line),
                                  static_cast<int>(node.source().begin.column)};
  }
  return out;
}

std::string torch_knobs_toml(const TorchKnobs& k) {
  std::string s = "[torch]\n";
  for (const auto& spec : kTorchKnobs) {
    auto it = k.set.find(spec.key);
    if (it == k.set.end()) continue;
    const std::string type(spec.type);
    const std::string& v = it->second.value;
    s += fmt::format("{} = {}\n", spec.key,
                     type == "bool" ? (v == "1" ? "true" : "false") : type == "enum" ? "\"" + v + "\"" : v);
  }
  return s;
}

}  // namespace hanglab
