// TorchKnobs: the `[torch]` table of scenario and `hanglab validate` settings files — the
// torch environment knobs users set on real jobs, typed, range-checked and recorded. Each key
// maps to one environment variable that every rank gets (rank_env: Python ranks, torchrun's
// workers, the LibTorch c10d workloads). The process-group timeout is not here: it is
// [timeouts] collective_s (init_process_group(timeout=...) / the c10d backend's timeout).
//
// kTorchKnobs is the one list: the parser, `hanglab describe torch`, run.json and the
// validate interaction rules all read it. Defaults are torch 2.15's (what a rank gets when
// the variable is unset), from its headers under torch/include/torch/csrc/distributed/c10d.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "scenario/config_error.hpp"

namespace hanglab {

struct TorchKnobSpec {
  const char* key;          // [torch] key
  const char* env;          // the variable it sets
  const char* type;         // int | bool | enum
  long long lo, hi;         // int range (inclusive)
  const char* values;       // enum: comma-separated allowed values
  const char* torch_default;  // torch 2.15's value when the variable is unset
  const char* backends;     // "nccl" when only ProcessGroupNCCL reads it, "all" otherwise
  const char* doc;
};

extern const std::vector<TorchKnobSpec> kTorchKnobs;
const TorchKnobSpec* find_torch_knob(const std::string& key);

// One knob as written: its value rendered as the environment variable takes it (bools 0/1).
struct TorchKnobValue {
  std::string env;
  std::string value;
  int line = 0, col = 0;  // where it was written (0: set by hanglab, not by a file)
};

struct TorchKnobs {
  std::map<std::string, TorchKnobValue> set;  // [torch] key -> value, only the keys written

  bool any() const { return !set.empty(); }
  bool has(const std::string& key) const { return set.count(key) != 0; }
  std::optional<long long> int_value(const std::string& key) const;
  std::optional<bool> bool_value(const std::string& key) const;
  std::optional<std::string> string_value(const std::string& key) const;
  // Variable -> value for every knob written, as rank_env adds them.
  std::map<std::string, std::string> env() const;
};

// Reads a [torch] table at `path` ("torch") of `file`: unknown keys, wrong types and values
// out of range are appended to `errors` (each names file:line:col and the key); the valid keys
// are returned.
TorchKnobs parse_torch_table(const toml::table& t, const std::string& file, const std::string& path,
                             std::vector<ConfigError>& errors);

// The table as TOML text ("[torch]\nkey = value\n..."), for the scenario copies validate writes.
std::string torch_knobs_toml(const TorchKnobs& k);

// The [torch] key that sets environment variable `name`, or "" (for [workload.env] checks).
std::string torch_knob_for_env(const std::string& name);

}  // namespace hanglab
