// Scenario loading and validation. The loader records every problem it finds and then
// throws the one that comes first in the file, so the user fixes errors top to bottom
// no matter in which order the tables are checked (toml++ tables iterate by key name,
// not by position).
// Over 800 lines: one Loader checks every table with shared position and error state; the
// [expect] and [torch] tables already live in expect.cpp and torch_knobs.cpp, and the next
// table to move out with them is [topology] (load_topology), when the loader is reworked.
#include "scenario/scenario.hpp"

#include "scenario/header_comments.hpp"
#include "scenario/preflight_spec.hpp"

#include "detect/registry.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string_view>

#include <fmt/format.h>

namespace hanglab {

namespace {

using Allowed = std::initializer_list<std::string_view>;

const Allowed kTopLevelKeys = {"scenario", "workload", "topology", "timeouts", "detect", "torch", "fault", "expect",
                               "preflight"};
const Allowed kTopologyKeys = {"nodes", "ranks_per_node", "second_nic"};
const Allowed kDetectKeys = {"flight_recorder", "fr_buffer_size"};
const Allowed kScenarioKeys = {"name", "description", "tags", "deadline_s"};
const Allowed kWorkloadKeys = {"name",     "command",      "backend", "world_size", "steps",
                                "launcher", "max_restarts", "time_limit_min", "args",    "env", "python_modules"};
const Allowed kTimeoutKeys = {"init_s", "collective_s", "progress_s", "heartbeat_s", "checkpoint_s", "eval_s"};
const Allowed kExpectKeys = {"outcome",      "detected_by", "not_detected_by", "detected_within_s",
                             "not_before_s", "triage",      "fault_manifests", "torchrun"};
const Allowed kTorchrunExpectKeys = {"restarted", "tore_down", "hung_in_teardown", "root_cause_rank"};
const Allowed kTriageKeys = {"category", "cause", "phase", "scope", "missing_ranks", "last_good_step", "liveness"};

const Allowed kBackends = {"gloo", "nccl", "mpi"};
const Allowed kLaunchers = {"local", "mpirun", "torchrun", "srun"};
const Allowed kOutcomes = {"completed", "hang", "crash", "slow"};
const Allowed kCategories = {"rendezvous", "collective_mismatch", "rank_exit", "straggler", "data_loading",
                             "network",    "resource_limit",      "none",      "unknown"};
const Allowed kPhases = {"init", "training", "checkpoint", "eval", "data", "shutdown"};
const Allowed kScopes = {"all", "subset", "none"};
const Allowed kLiveness = {"completed", "dead", "hung", "frozen", "slow"};

constexpr int kMaxWorldSize = 4096;

bool contains(Allowed set, std::string_view v) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

template <typename Range>
std::string join(const Range& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

// Keys that are not TOML bare keys are quoted in key paths, so `workload.env."A.B"`
// stays unambiguous.
std::string key_path(std::string_view parent, std::string_view key) {
  bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  std::string k = bare ? std::string(key) : in_quotes(key);
  return parent.empty() ? k : std::string(parent) + "." + k;
}

// Renders a double so that strtod() gives back the same value (fmt's default is the
// shortest round-tripping form).
std::string render_double(double d) { return fmt::format("{}", d); }

std::string read_file_or_throw(const std::filesystem::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ConfigError(file.string(), 0, 0, "", std::string("cannot read: ") + std::strerror(errno));
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw ConfigError(file.string(), 0, 0, "", std::string("cannot read: ") + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

class Loader {
 public:
  Loader(std::string file, const LoadOptions& opts) : file_(std::move(file)), opts_(opts) {}

  void load(toml::table& root, Scenario& sc);

  // Throws the error that comes first in the file, if any was found.
  void throw_first_error() const {
    if (errors_.empty()) return;
    auto first = std::min_element(errors_.begin(), errors_.end(), [](const ConfigError& a, const ConfigError& b) {
      return std::make_pair(a.line(), a.col()) < std::make_pair(b.line(), b.col());
    });
    throw *first;
  }

 private:
  void error(const toml::source_region& where, const std::string& key, const std::string& msg) {
    errors_.push_back(config_error_at(file_, where, key, msg));
  }
  void error(const toml::node& node, const std::string& key, const std::string& msg) {
    error(node.source(), key, msg);
  }
  SourcePos pos_of(const toml::node& node) const {
    return SourcePos{file_, static_cast<int>(node.source().begin.line), static_cast<int>(node.source().begin.column)};
  }
  void type_error(const toml::node& node, const std::string& key, std::string_view expected) {
    error(node, key, fmt::format("expected {}, got {}", expected, type_name(node.type())));
  }

  void reject_unknown_keys(const toml::table& t, const std::string& path, Allowed allowed) {
    for (const auto& [k, node] : t) {
      if (contains(allowed, k.str())) continue;
      error(k.source(), key_path(path, k.str()), "unknown key (expected one of: " + join(allowed) + ")");
    }
  }

  // Typed getters: an absent key gives nullopt silently; a wrong type records an error
  // and gives nullopt, so callers simply skip dependent checks.
  const toml::table* table_at(const toml::table& t, std::string_view name, const std::string& path) {
    const toml::node* n = t.get(name);
    if (!n) return nullptr;
    if (!n->is_table()) {
      type_error(*n, key_path(path, name), "a table");
      return nullptr;
    }
    return n->as_table();
  }

  std::optional<std::string> string_at(const toml::table& t, std::string_view name, const std::string& path) {
    const toml::node* n = t.get(name);
    if (!n) return std::nullopt;
    if (!n->is_string()) {
      type_error(*n, key_path(path, name), "a string");
      return std::nullopt;
    }
    return n->as_string()->get();
  }

  std::optional<std::string> enum_at(const toml::table& t, std::string_view name, const std::string& path,
                                     Allowed allowed) {
    auto v = string_at(t, name, path);
    if (v && !contains(allowed, *v)) {
      error(*t.get(name), key_path(path, name), fmt::format("must be one of {} (got {})", join(allowed), in_quotes(*v)));
      return std::nullopt;
    }
    return v;
  }

  std::optional<int> int_at(const toml::table& t, std::string_view name, const std::string& path, int64_t lo,
                            std::optional<int64_t> hi) {
    const toml::node* n = t.get(name);
    if (!n) return std::nullopt;
    if (!n->is_integer()) {
      type_error(*n, key_path(path, name), "an integer");
      return std::nullopt;
    }
    int64_t v = n->as_integer()->get();
    if (v < lo || (hi && v > *hi)) {
      error(*n, key_path(path, name),
            hi ? fmt::format("must be between {} and {} (got {})", lo, *hi, v)
               : fmt::format("must be >= {} (got {})", lo, v));
      return std::nullopt;
    }
    return static_cast<int>(v);
  }

  // A number (integer or float) that must be finite and > 0 (strict) or >= 0.
  std::optional<double> number_at(const toml::table& t, std::string_view name, const std::string& path,
                                  bool strictly_positive) {
    const toml::node* n = t.get(name);
    if (!n) return std::nullopt;
    double v = 0;
    if (n->is_integer()) {
      v = static_cast<double>(n->as_integer()->get());
    } else if (n->is_floating_point()) {
      v = n->as_floating_point()->get();
    } else {
      type_error(*n, key_path(path, name), "a number");
      return std::nullopt;
    }
    bool ok = std::isfinite(v) && (strictly_positive ? v > 0 : v >= 0);
    if (!ok) {
      error(*n, key_path(path, name),
            fmt::format("must be a finite number {} 0 (got {})", strictly_positive ? ">" : ">=", render_double(v)));
      return std::nullopt;
    }
    return v;
  }

  const toml::array* array_at(const toml::table& t, std::string_view name, const std::string& path) {
    const toml::node* n = t.get(name);
    if (!n) return nullptr;
    if (!n->is_array()) {
      type_error(*n, key_path(path, name), "an array");
      return nullptr;
    }
    return n->as_array();
  }

  std::optional<std::vector<std::string>> strings_at(const toml::table& t, std::string_view name,
                                                     const std::string& path) {
    const toml::array* a = array_at(t, name, path);
    if (!a) return std::nullopt;
    std::vector<std::string> out;
    bool ok = true;
    for (const toml::node& e : *a) {
      if (!e.is_string()) {
        type_error(e, key_path(path, name), "a string");
        ok = false;
        continue;
      }
      out.push_back(e.as_string()->get());
    }
    return ok ? std::optional(out) : std::nullopt;
  }

  // Detector names, each known and listed once.
  std::optional<std::vector<std::string>> detectors_at(const toml::table& t, std::string_view name,
                                                       const std::string& path) {
    auto names = strings_at(t, name, path);
    if (!names) return std::nullopt;
    const toml::array& a = *t.get(name)->as_array();
    std::set<std::string> seen;
    bool ok = true;
    for (size_t i = 0; i < names->size(); ++i) {
      const std::string& d = (*names)[i];
      // The detector registry (detect/registry.hpp) is the one list of names.
      const DetectorInfo* info = find_detector(d);
      if (!info || !info->expectable) {
        error(*a.get(i), key_path(path, name),
              fmt::format("{} detector {} (known: {})", info ? "not an expectable" : "unknown", in_quotes(d),
                          join(expectable_detector_names())));
        ok = false;
      } else if (!seen.insert(d).second) {
        error(*a.get(i), key_path(path, name), fmt::format("detector {} listed twice", in_quotes(d)));
        ok = false;
      }
    }
    return ok ? names : std::nullopt;
  }

  // Rank lists: integers, each in [0, world_size) when the world size is known, no
  // duplicates. Errors point at the offending element.
  std::optional<std::vector<int>> ranks_at(const toml::table& t, std::string_view name, const std::string& path) {
    const toml::array* a = array_at(t, name, path);
    if (!a) return std::nullopt;
    const std::string key = key_path(path, name);
    std::vector<int> out;
    bool ok = true;
    for (const toml::node& e : *a) {
      if (!e.is_integer()) {
        type_error(e, key, "an integer");
        ok = false;
        continue;
      }
      int64_t r = e.as_integer()->get();
      if (r < 0 || (world_size_ && r >= *world_size_)) {
        error(e, key,
              world_size_ ? fmt::format("rank {} out of range: world_size is {} (ranks 0..{})", r, *world_size_,
                                        *world_size_ - 1)
                          : fmt::format("rank {} out of range: must be >= 0", r));
        ok = false;
        continue;
      }
      if (std::find(out.begin(), out.end(), static_cast<int>(r)) != out.end()) {
        error(e, key, fmt::format("rank {} listed twice", r));
        ok = false;
        continue;
      }
      out.push_back(static_cast<int>(r));
    }
    return ok ? std::optional(out) : std::nullopt;
  }

  void load_scenario_table(const toml::table& root, Scenario& sc);
  void load_workload(const toml::table& root, WorkloadSpec& w);
  void load_workload_args(const toml::table& args, const std::string& workload, WorkloadSpec& w);
  void load_topology(const toml::table& root, Scenario& sc);
  void load_timeouts(const toml::table& root, Timeouts& to);
  void load_detect(const toml::table& root, const WorkloadSpec& w, DetectSpec& d);
  bool records_fr(const WorkloadSpec& w) const;
  std::string fr_capable_text() const;
  void load_torch(const toml::table& root, Scenario& sc);
  void load_faults(toml::table& root, std::vector<FaultSpec>& faults);
  void load_expect(const toml::table& root, ExpectSpec& ex);
  void load_triage_expect(const toml::table& t, TriageExpect& tr);

  std::string file_;
  const LoadOptions& opts_;
  std::vector<ConfigError> errors_;
  // The job's shape for range checks of ranks and steps, set by load_workload (the
  // default when the key is absent). nullopt when invalid: that is its own error, and
  // checking against a wrong bound would only add noise.
  std::optional<int> world_size_;
  std::optional<int> steps_;
  bool builtin_workload_ = false;   // [workload] name (not command), for [detect]
  std::string launcher_ = "local";  // [workload] launcher, for the launcher-specific expectations
};

void Loader::load(toml::table& root, Scenario& sc) {
  for (const auto& [k, node] : root) {
    if (!contains(kTopLevelKeys, k.str()))
      error(k.source(), key_path("", k.str()),
            "unknown table (expected one of: [scenario], [workload], [topology], [timeouts], [detect], [torch], [[fault]], "
            "[expect], [preflight])");
  }
  load_scenario_table(root, sc);
  load_workload(root, sc.workload);
  load_topology(root, sc);
  load_timeouts(root, sc.timeouts);
  load_detect(root, sc.workload, sc.detect);
  load_torch(root, sc);
  load_faults(root, sc.faults);
  load_expect(root, sc.expect);
  load_preflight_table(root, file_, sc, errors_);
}

void Loader::load_scenario_table(const toml::table& root, Scenario& sc) {
  const toml::table* t = table_at(root, "scenario", "");
  if (!t) return;
  reject_unknown_keys(*t, "scenario", kScenarioKeys);
  if (auto name = string_at(*t, "name", "scenario")) {
    // The name becomes a results/ directory and a CTest name: keep it path- and shell-safe.
    bool safe = !name->empty() && *name != "." && *name != ".." &&
                std::all_of(name->begin(), name->end(), [](char c) {
                  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
                });
    if (safe)
      sc.name = *name;
    else
      error(*t->get("name"), "scenario.name", "must be non-empty and use only letters, digits, '.', '_' and '-'");
  }
  if (auto d = string_at(*t, "description", "scenario")) sc.description = *d;
  if (auto tags = strings_at(*t, "tags", "scenario")) {
    const toml::array& a = *t->get("tags")->as_array();
    for (size_t i = 0; i < tags->size(); ++i) {
      if ((*tags)[i].empty())
        error(*a.get(i), "scenario.tags", "tags must not be empty");
      else
        sc.tags.push_back((*tags)[i]);
    }
  }
  if (auto d = number_at(*t, "deadline_s", "scenario", true)) sc.deadline_s = *d;
}

void Loader::load_workload(const toml::table& root, WorkloadSpec& w) {
  const toml::node* node = root.get("workload");
  if (!node) {
    error(root.source(), "workload", "missing required table [workload]");
    return;
  }
  const toml::table* t = table_at(root, "workload", "");
  if (!t) return;
  reject_unknown_keys(*t, "workload", kWorkloadKeys);

  auto name = string_at(*t, "name", "workload");
  const toml::array* command = array_at(*t, "command", "workload");
  if (name && command) {
    error(*t->get("command"), "workload.command",
          "set either name (a built-in workload) or command (your own rank program), not both");
  } else if (!t->get("name") && !t->get("command")) {
    error(*t, "workload", "needs name (a built-in workload) or command (your own rank program)");
  }
  bool name_known = false;
  builtin_workload_ = name.has_value() && !command;
  if (name) {
    if (std::find(opts_.known_workloads.begin(), opts_.known_workloads.end(), *name) == opts_.known_workloads.end()) {
      error(*t->get("name"), "workload.name",
            fmt::format("unknown workload {} (known: {})", in_quotes(*name),
                        opts_.known_workloads.empty() ? "none" : join(opts_.known_workloads)));
    } else {
      w.name = *name;
      name_known = !command;
    }
  }
  if (command) {
    if (auto argv = strings_at(*t, "command", "workload")) {
      if (argv->empty() || argv->front().empty())
        error(*command, "workload.command", "must name a program: a non-empty array of strings");
      else if (!name) {
        w.command = *argv;
        for (const auto& el : *command) w.command_pos.push_back(pos_of(el));
      }
    }
  }

  if (const toml::node* pm = t->get("python_modules")) {
    if (!command)
      error(*pm, "workload.python_modules", "only with command (the modules a bring-your-own program imports)");
    else if (auto mods = strings_at(*t, "python_modules", "workload"))
      for (const auto& m : *mods) {
        if (m.empty() || m.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != std::string::npos)
          error(*pm, "workload.python_modules", "not a Python module name: " + in_quotes(m));
        else
          w.python_modules.push_back(m);
      }
  }
  if (auto b = enum_at(*t, "backend", "workload", kBackends)) w.backend = *b;
  if (auto l = enum_at(*t, "launcher", "workload", kLaunchers)) w.launcher = *l;
  launcher_ = w.launcher;
  w.table_pos = pos_of(*t);
  w.launcher_pos = t->get("launcher") ? pos_of(*t->get("launcher")) : w.table_pos;
  if (const toml::node* mr = t->get("max_restarts")) {
    if (w.launcher != "torchrun")
      error(*mr, "workload.max_restarts", "only with launcher = \"torchrun\" (its --max-restarts)");
    else if (auto n = int_at(*t, "max_restarts", "workload", 0, 100))
      w.max_restarts = *n;
  }
  if (const toml::node* tl = t->get("time_limit_min")) {
    // Minutes: Slurm keeps job time limits in whole minutes (srun --time 0:20 is 1 minute).
    if (w.launcher != "srun")
      error(*tl, "workload.time_limit_min", "only with launcher = \"srun\" (Slurm's job time limit, srun --time)");
    else if (auto n = int_at(*t, "time_limit_min", "workload", 1, 7 * 24 * 60))
      w.time_limit_min = *n;
  }
  w.world_size_pos = t->get("world_size") ? pos_of(*t->get("world_size")) : w.table_pos;
  if (t->get("world_size")) {
    world_size_ = int_at(*t, "world_size", "workload", 1, kMaxWorldSize);
    if (world_size_) w.world_size = *world_size_;
  } else {
    world_size_ = w.world_size;
  }
  if (t->get("steps")) {
    steps_ = int_at(*t, "steps", "workload", 1, std::nullopt);
    if (steps_) w.steps = *steps_;
  } else {
    steps_ = w.steps;
  }

  if (const toml::table* args = table_at(*t, "args", "workload")) {
    if (command)
      error(*args, "workload.args", "not allowed with command: put the arguments in command itself");
    else if (name_known)
      load_workload_args(*args, *name, w);
  }
  if (const toml::table* env = table_at(*t, "env", "workload")) {
    for (const auto& [k, v] : *env) {
      const std::string key = key_path("workload.env", k.str());
      if (k.str().empty() || k.str().find('=') != std::string_view::npos) {
        error(k.source(), key, "not a valid environment variable name");
      } else if (const std::string knob = torch_knob_for_env(std::string(k.str())); !knob.empty()) {
        // One place per knob: typed, recorded in run.json, and what `hanglab validate` checks.
        error(k.source(), key, fmt::format("set it as [torch] {} (a typed torch knob)", knob));
      } else if (!v.is_string()) {
        type_error(v, key, "a string");
      } else {
        w.env[std::string(k.str())] = v.as_string()->get();
      }
    }
  }
}

void Loader::load_workload_args(const toml::table& args, const std::string& workload, WorkloadSpec& w) {
  static const std::map<std::string, std::string> kNoArgs;
  auto declared_it = opts_.workload_args.find(workload);
  const auto& declared = declared_it == opts_.workload_args.end() ? kNoArgs : declared_it->second;

  // toml::table iterates by key name; args keep the file's order.
  std::vector<std::pair<const toml::key*, const toml::node*>> in_order;
  for (const auto& [k, v] : args) in_order.emplace_back(&k, &v);
  std::sort(in_order.begin(), in_order.end(), [](const auto& a, const auto& b) {
    const auto& pa = a.first->source().begin;
    const auto& pb = b.first->source().begin;
    return std::make_pair(pa.line, pa.column) < std::make_pair(pb.line, pb.column);
  });

  for (const auto& [k, v] : in_order) {
    const std::string key = key_path("workload.args", k->str());
    auto it = declared.find(std::string(k->str()));
    if (it == declared.end()) {
      std::vector<std::string> names;
      for (const auto& [n, type] : declared) names.push_back(n);
      error(k->source(), key,
            fmt::format("unknown argument for workload {} (known: {})", in_quotes(workload),
                        names.empty() ? "none" : join(names)));
      continue;
    }
    const std::string& type = it->second;
    std::string value;
    if (type == "int" && v->is_integer()) {
      value = std::to_string(v->as_integer()->get());
    } else if (type == "float" && v->is_integer()) {
      value = std::to_string(v->as_integer()->get());
    } else if (type == "float" && v->is_floating_point()) {
      value = render_double(v->as_floating_point()->get());
    } else if (type == "bool" && v->is_boolean()) {
      value = v->as_boolean()->get() ? "true" : "false";
    } else if (type == "string" && v->is_string()) {
      value = v->as_string()->get();
    } else {
      const char* expected = type == "int"     ? "an integer"
                             : type == "float" ? "a number"
                             : type == "bool"  ? "a boolean"
                                               : "a string";
      type_error(*v, key, expected);
      continue;
    }
    w.args.emplace_back(std::string(k->str()), std::move(value));
  }
}

void Loader::load_topology(const toml::table& root, Scenario& sc) {
  const toml::table* t = table_at(root, "topology", "");
  if (!t) return;
  TopologySpec& tp = sc.topology;
  tp.pos = {file_, static_cast<int>(t->source().begin.line), static_cast<int>(t->source().begin.column)};
  reject_unknown_keys(*t, "topology", kTopologyKeys);
  if (auto v = int_at(*t, "nodes", "topology", 1, 64)) tp.nodes = *v;
  if (const toml::node* n = t->get("second_nic")) {
    if (!n->is_boolean()) type_error(*n, "topology.second_nic", "true or false");
    else tp.second_nic = n->as_boolean()->get();
  }
  const int ws = world_size_.value_or(sc.workload.world_size);
  if (const toml::node* n = t->get("ranks_per_node")) {
    if (auto v = int_at(*t, "ranks_per_node", "topology", 1, 1024)) {
      tp.ranks_per_node = *v;
      if (world_size_ && tp.nodes * *v != ws)
        error(*n, "topology.ranks_per_node",
              fmt::format("{} node(s) x {} rank(s) is {} ranks, but [workload] world_size is {}", tp.nodes, *v,
                          tp.nodes * *v, ws));
    }
  } else if (world_size_) {
    if (ws % tp.nodes != 0) {
      const toml::node* n = t->get("nodes");
      error(n ? *n : static_cast<const toml::node&>(*t), "topology.nodes",
            fmt::format("world_size {} does not spread evenly over {} nodes: set ranks_per_node, or a world_size "
                        "that {} divides",
                        ws, tp.nodes, tp.nodes));
    } else {
      tp.ranks_per_node = ws / tp.nodes;
    }
  }
  if (tp.nodes > 1) {
    const toml::node* n = t->get("nodes");
    const toml::node& at = n ? *n : static_cast<const toml::node&>(*t);
    // srun's tasks are hanglab_rank_exec, which runs each rank under its wrapper (`ip netns
    // exec NODE`) as the local launcher does; torchrun runs one agent per node, in the node.
    // A [preflight] scenario runs no ranks: mpirun starts one preflight per node, each in its node.
    if (sc.workload.launcher != "local" && sc.workload.launcher != "torchrun" && sc.workload.launcher != "srun" &&
        !(sc.workload.launcher == "mpirun" && root.get("preflight")))
      error(at, "topology.nodes",
            fmt::format("nodes > 1 runs with launcher = \"local\", \"torchrun\" (one agent per node) or \"srun\", not {}",
                        in_quotes(sc.workload.launcher)));
    if (sc.workload.backend == "mpi")
      error(at, "topology.nodes", "nodes > 1 needs a backend that connects over TCP/IP by itself (gloo, nccl), not mpi");
  } else if (tp.second_nic) {
    error(*t->get("second_nic"), "topology.second_nic", "only with nodes > 1 (a node's second interface)");
  }
}

void Loader::load_timeouts(const toml::table& root, Timeouts& to) {
  const toml::table* t = table_at(root, "timeouts", "");
  if (!t) return;
  reject_unknown_keys(*t, "timeouts", kTimeoutKeys);
  if (auto v = number_at(*t, "init_s", "timeouts", true)) to.init_s = *v;
  if (auto v = number_at(*t, "collective_s", "timeouts", true)) to.collective_s = *v;
  if (auto v = number_at(*t, "progress_s", "timeouts", true)) to.progress_s = *v;
  if (auto v = number_at(*t, "heartbeat_s", "timeouts", true)) to.heartbeat_s = *v;
  if (auto v = number_at(*t, "checkpoint_s", "timeouts", true)) to.checkpoint_s = *v;
  if (auto v = number_at(*t, "eval_s", "timeouts", true)) to.eval_s = *v;
}

bool Loader::records_fr(const WorkloadSpec& w) const {
  auto it = opts_.flight_recorder_backends.find(w.name);
  return it != opts_.flight_recorder_backends.end() &&
         std::find(it->second.begin(), it->second.end(), w.backend) != it->second.end();
}

std::string Loader::fr_capable_text() const {
  std::string s;
  for (const auto& [name, backends] : opts_.flight_recorder_backends)
    s += (s.empty() ? "" : "; ") + name + " on " + join(backends);
  return s.empty() ? std::string("none built here") : s;
}

void Loader::load_detect(const toml::table& root, const WorkloadSpec& w, DetectSpec& d) {
  const toml::table* t = table_at(root, "detect", "");
  if (!t) return;
  reject_unknown_keys(*t, "detect", kDetectKeys);
  if (const toml::node* n = t->get("flight_recorder")) {
    if (!n->is_boolean())
      type_error(*n, "detect.flight_recorder", "true or false");
    else if (n->as_boolean()->get() && builtin_workload_ && !w.name.empty() && !records_fr(w))
      // The ranks dump to HANGLAB_FR_DUMP: torch_ddp's (workloads/loop/flight_recorder.hpp), a
      // bring-your-own Python rank's (workloads/python_ddp/train.py). MPI and raw NCCL have no
      // torch Flight Recorder.
      error(*n, "detect.flight_recorder",
            fmt::format("the built-in workload {} on backend {} has no torch Flight Recorder (only {}; or a "
                        "bring-your-own command whose ranks dump to HANGLAB_FR_DUMP)",
                        in_quotes(w.name), in_quotes(w.backend), fr_capable_text()));
    else
      d.flight_recorder = n->as_boolean()->get();
  }
  if (const toml::node* n = t->get("fr_buffer_size")) {
    if (!d.flight_recorder && n->is_integer())
      error(*n, "detect.fr_buffer_size", "only with flight_recorder = true");
    else if (auto v = int_at(*t, "fr_buffer_size", "detect", 1, 1000000))
      d.fr_buffer_size = *v;
  }
}

void Loader::load_torch(const toml::table& root, Scenario& sc) {
  const toml::table* t = table_at(root, "torch", "");
  if (!t) return;
  sc.torch = parse_torch_table(*t, file_, "torch", errors_);
  const toml::node* fb = t->get("fr_buffer_size");
  if (!fb || !sc.torch.has("fr_buffer_size")) return;
  const toml::table* detect = root.get("detect") ? root.get("detect")->as_table() : nullptr;
  if (detect && detect->get("fr_buffer_size"))
    error(*fb, "torch.fr_buffer_size", "set twice: [detect] fr_buffer_size also sets TORCH_FR_BUFFER_SIZE; keep one");
  else if (sc.detect.flight_recorder && *sc.torch.int_value("fr_buffer_size") == 0)
    error(*fb, "torch.fr_buffer_size",
          "0 records nothing, but [detect] flight_recorder = true collects the dumps: use a buffer > 0");
}

void Loader::load_faults(toml::table& root, std::vector<FaultSpec>& faults) {
  toml::node* node = root.get("fault");
  if (!node) return;
  if (!node->is_array()) {
    type_error(*node, "fault", "an array of tables ([[fault]])");
    return;
  }
  toml::array& arr = *node->as_array();
  for (size_t i = 0; i < arr.size(); ++i) {
    toml::node& elem = *arr.get(i);
    const std::string path = "fault[" + std::to_string(i) + "]";
    if (!elem.is_table()) {
      type_error(elem, path, "a table ([[fault]])");
      continue;
    }
    toml::table& t = *elem.as_table();
    FaultSpec f;
    f.index = static_cast<int>(i);
    f.pos = SourcePos{file_, static_cast<int>(t.source().begin.line), static_cast<int>(t.source().begin.column)};

    if (!t.get("kind")) {
      error(t, path + ".kind", "missing required key (the fault kind)");
    } else if (auto kind = string_at(t, "kind", path)) {
      if (std::find(opts_.known_faults.begin(), opts_.known_faults.end(), *kind) == opts_.known_faults.end())
        error(*t.get("kind"), path + ".kind",
              fmt::format("unknown fault kind {} (known: {})", in_quotes(*kind),
                          opts_.known_faults.empty() ? "none" : join(opts_.known_faults)));
      else
        f.kind = *kind;
    }

    if (!t.get("ranks")) {
      // A node or network fault ([topology] nodes > 1) names nodes; its injector turns them into ranks.
      if (!t.get("nodes"))
        error(t, path + ".ranks", "missing required key (the ranks the fault acts on; nodes = [..] for a node or network fault)");
    } else if (auto ranks = ranks_at(t, "ranks", path)) {
      if (ranks->empty())
        error(*t.get("ranks"), path + ".ranks", "must list at least one rank");
      else
        f.ranks = *ranks;
    }

    // At most one trigger; point at whichever comes later in the file: that is the one to delete.
    std::vector<std::pair<const toml::node*, const char*>> triggers;
    for (const char* k : {"at_step", "at_s", "at_output"})
      if (const toml::node* n = t.get(k)) triggers.push_back({n, k});
    std::sort(triggers.begin(), triggers.end(), [](const auto& a, const auto& b) {
      return std::make_pair(a.first->source().begin.line, a.first->source().begin.column) <
             std::make_pair(b.first->source().begin.line, b.first->source().begin.column);
    });
    if (triggers.size() > 1) {
      error(*triggers[1].first, path + "." + triggers[1].second, "set at most one trigger: at_step, at_s or at_output");
    } else if (t.get("at_step")) {
      f.at_step = int_at(t, "at_step", path, 1, steps_);
    } else if (t.get("at_s")) {
      f.at_s = number_at(t, "at_s", path, false);
    } else if (t.get("at_output")) {
      if (auto text = string_at(t, "at_output", path)) {
        if (text->empty() || text->size() > 200)
          error(*t.get("at_output"), path + ".at_output", "must be 1 to 200 characters of the line to wait for");
        else if (text->find_first_of("\n\r") != std::string::npos)
          error(*t.get("at_output"), path + ".at_output", "must be text within one line (no newline)");
        else
          f.at_output = *text;
      }
    }
    // Moved, not copied: toml++'s copy constructor drops source positions, and the
    // injectors need them for their own errors. Nothing reads the tree after this.
    f.table = std::move(t);
    faults.push_back(std::move(f));
  }
}

void Loader::load_expect(const toml::table& root, ExpectSpec& ex) {
  const toml::table* t = table_at(root, "expect", "");
  if (!t) return;
  reject_unknown_keys(*t, "expect", kExpectKeys);
  ex.outcome = enum_at(*t, "outcome", "expect", kOutcomes);
  auto detected = detectors_at(*t, "detected_by", "expect");
  auto not_detected = detectors_at(*t, "not_detected_by", "expect");
  if (detected) ex.detected_by = *detected;
  if (not_detected) ex.not_detected_by = *not_detected;
  if (detected && not_detected) {
    const toml::array& a = *t->get("not_detected_by")->as_array();
    for (size_t i = 0; i < not_detected->size(); ++i) {
      const std::string& d = (*not_detected)[i];
      if (std::find(detected->begin(), detected->end(), d) != detected->end())
        error(*a.get(i), "expect.not_detected_by", fmt::format("{} is also listed in detected_by", in_quotes(d)));
    }
  }
  ex.detected_within_s = number_at(*t, "detected_within_s", "expect", false);
  ex.not_before_s = number_at(*t, "not_before_s", "expect", false);
  // The timing checks measure the first firing of a detected_by detector; the post-mortem
  // ones (triage) have no firing time.
  bool timed_detector = std::any_of(ex.detected_by.begin(), ex.detected_by.end(), [](const std::string& d) {
    const DetectorInfo* info = find_detector(d);
    return info && info->timed;
  });
  bool detected_ok = detected || !t->get("detected_by");  // an invalid list is already an error
  if (detected_ok && !timed_detector) {
    for (const char* k : {"detected_within_s", "not_before_s"}) {
      if (const toml::node* n = t->get(k))
        error(*n, std::string("expect.") + k, "needs a detector other than triage in detected_by to time");
    }
  }
  if (ex.detected_within_s && ex.not_before_s && *ex.not_before_s > *ex.detected_within_s)
    error(*t->get("not_before_s"), "expect.not_before_s",
          fmt::format("must not exceed detected_within_s ({})", render_double(*ex.detected_within_s)));
  if (const toml::node* n = t->get("fault_manifests")) {
    if (!n->is_boolean()) {
      type_error(*n, "expect.fault_manifests", "true or false");
    } else if (!root.get("fault")) {
      error(*n, "expect.fault_manifests", "the scenario has no [[fault]] to manifest");
    } else {
      ex.fault_manifests = n->as_boolean()->get();
    }
  }
  if (const toml::table* tr = table_at(*t, "triage", "expect")) load_triage_expect(*tr, ex.triage);
  if (const toml::table* tr = table_at(*t, "torchrun", "expect")) {
    const std::string path = "expect.torchrun";
    reject_unknown_keys(*tr, path, kTorchrunExpectKeys);
    if (launcher_ != "torchrun")
      error(*tr, path, "only with [workload] launcher = \"torchrun\" (what torchrun did)");
    ex.torchrun.restarted = int_at(*tr, "restarted", path, 0, 100);
    for (const char* k : {"tore_down", "hung_in_teardown"}) {
      const toml::node* n = tr->get(k);
      if (!n) continue;
      if (!n->is_boolean()) {
        type_error(*n, path + "." + k, "true or false");
        continue;
      }
      (std::string_view(k) == "tore_down" ? ex.torchrun.tore_down : ex.torchrun.hung_in_teardown) =
          n->as_boolean()->get();
    }
    if (tr->get("root_cause_rank")) {
      if (world_size_)
        ex.torchrun.root_cause_rank = int_at(*tr, "root_cause_rank", path, 0, *world_size_ - 1);
      else
        ex.torchrun.root_cause_rank = int_at(*tr, "root_cause_rank", path, 0, kMaxWorldSize - 1);
    }
  }
}

void Loader::load_triage_expect(const toml::table& t, TriageExpect& tr) {
  const std::string path = "expect.triage";
  reject_unknown_keys(t, path, kTriageKeys);
  tr.category = enum_at(t, "category", path, kCategories);
  tr.cause = string_at(t, "cause", path);
  tr.phase = enum_at(t, "phase", path, kPhases);
  tr.scope = enum_at(t, "scope", path, kScopes);
  tr.missing_ranks = ranks_at(t, "missing_ranks", path);
  tr.last_good_step = int_at(t, "last_good_step", path, 0, steps_);
  const toml::table* live = table_at(t, "liveness", path);
  if (!live) return;
  for (const auto& [k, v] : *live) {
    const std::string key = key_path(path + ".liveness", k.str());
    std::string_view ks = k.str();
    bool numeric = !ks.empty() && ks.size() <= 9 && std::all_of(ks.begin(), ks.end(), [](char c) {
      return c >= '0' && c <= '9';
    }) && (ks.size() == 1 || ks[0] != '0');
    int rank = numeric ? std::stoi(std::string(ks)) : -1;
    if (!numeric || (world_size_ && rank >= *world_size_)) {
      error(k.source(), key,
            world_size_ ? fmt::format("keys are ranks 0..{}", *world_size_ - 1) : std::string("keys are rank numbers"));
      continue;
    }
    if (!v.is_string()) {
      type_error(v, key, "a string");
      continue;
    }
    const std::string& state = v.as_string()->get();
    if (!contains(kLiveness, state)) {
      error(v, key, fmt::format("must be one of {} (got {})", join(kLiveness), in_quotes(state)));
      continue;
    }
    tr.liveness[rank] = state;
  }
}

}  // namespace

ConfigError config_error_at(const std::string& file, const toml::source_region& where, const std::string& key,
                            const std::string& msg) {
  return ConfigError(file, static_cast<int>(where.begin.line), static_cast<int>(where.begin.column), key, msg);
}

ConfigError config_error_at(const std::string& file, const toml::node& node, const std::string& key,
                            const std::string& msg) {
  return config_error_at(file, node.source(), key, msg);
}

Scenario load_scenario(const std::filesystem::path& file, const LoadOptions& opts) {
  const std::string file_name = file.string();
  Scenario sc;
  sc.file = file;
  sc.source_text = read_file_or_throw(file);
  sc.name = file.stem().string();
  parse_header_comments(sc.source_text, sc.reproduces, sc.expected_note);

  toml::table root;
  try {
    root = toml::parse(std::string_view(sc.source_text), std::string_view(file_name));
  } catch (const toml::parse_error& e) {
    throw config_error_at(file_name, e.source(), "", std::string(e.description()));
  }

  Loader loader(file_name, opts);
  loader.load(root, sc);
  loader.throw_first_error();
  return sc;
}

std::optional<double> timeout_value(const Timeouts& t, std::string_view key) {
  if (key == "init_s") return t.init_s;
  if (key == "collective_s") return t.collective_s;
  if (key == "progress_s") return t.progress_s;
  if (key == "heartbeat_s") return t.heartbeat_s;
  if (key == "checkpoint_s") return t.checkpoint_s;
  if (key == "eval_s") return t.eval_s;
  return std::nullopt;
}

}  // namespace hanglab
