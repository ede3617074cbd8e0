#include "options.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "exit_codes.hpp"
#include "hooks.hpp"
#include "workload_args.hpp"

namespace hanglab {

std::optional<int64_t> parse_whole_int(const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return v;
}

namespace {

int64_t to_int(const std::string& name, const std::string& text, int64_t min_value) {
  const std::optional<int64_t> parsed = parse_whole_int(text);
  if (!parsed) throw UsageError("--" + name + "=" + text + ": expected an integer");
  const int64_t v = *parsed;
  if (v < min_value || v > std::numeric_limits<int>::max()) {
    throw UsageError("--" + name + "=" + text + ": must be in [" + std::to_string(min_value) + ", " +
                     std::to_string(std::numeric_limits<int>::max()) + "]");
  }
  return v;
}

double to_float(const std::string& name, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    throw UsageError("--" + name + "=" + text + ": expected a number");
  }
  return v;
}

bool to_bool(const std::string& name, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  throw UsageError("--" + name + "=" + text + ": expected true or false");
}

std::string one_of(const std::string& name, const std::string& text, std::initializer_list<const char*> allowed) {
  std::string names;
  for (const char* a : allowed) {
    if (text == a) return text;
    names += names.empty() ? "" : " | ";
    names += a;
  }
  throw UsageError("--" + name + "=" + text + ": must be one of " + names);
}

Options options_from(const std::map<std::string, std::string>& v) {
  Options o;
  o.steps = static_cast<int>(to_int("steps", v.at("steps"), 1));
  o.backend = v.at("backend");
  o.input_dim = static_cast<int>(to_int("input_dim", v.at("input_dim"), 1));
  o.hidden = static_cast<int>(to_int("hidden", v.at("hidden"), 1));
  o.layers = static_cast<int>(to_int("layers", v.at("layers"), 0));
  o.batch_size = static_cast<int>(to_int("batch_size", v.at("batch_size"), 1));
  o.dataset_size = to_int("dataset_size", v.at("dataset_size"), 1);
  o.shards = static_cast<int>(to_int("shards", v.at("shards"), 1));
  o.seed = to_int("seed", v.at("seed"), 0);
  o.drop_last = to_bool("drop_last", v.at("drop_last"));
  o.bucket_kb = static_cast<int>(to_int("bucket_kb", v.at("bucket_kb"), 1));
  o.lr = to_float("lr", v.at("lr"));
  o.step_ms = static_cast<int>(to_int("step_ms", v.at("step_ms"), 0));
  o.compute = one_of("compute", v.at("compute"), {"sleep", "burn"});
  o.step_jitter_ms = static_cast<int>(to_int("step_jitter_ms", v.at("step_jitter_ms"), 0));
  o.first_collective_delay_ms =
      static_cast<int>(to_int("first_collective_delay_ms", v.at("first_collective_delay_ms"), 0));
  o.checkpoint_every = static_cast<int>(to_int("checkpoint_every", v.at("checkpoint_every"), 0));
  o.checkpoint_ranks = one_of("checkpoint_ranks", v.at("checkpoint_ranks"), {"rank0", "all"});
  o.checkpoint_delay_ms = static_cast<int>(to_int("checkpoint_delay_ms", v.at("checkpoint_delay_ms"), 0));
  o.num_workers = static_cast<int>(to_int("num_workers", v.at("num_workers"), 0));
  o.prefetch = static_cast<int>(to_int("prefetch", v.at("prefetch"), 1));
  if (o.prefetch > 64) throw UsageError("--prefetch=" + v.at("prefetch") + ": must be in [1, 64]");
  o.shm_alloc = one_of("shm_alloc", v.at("shm_alloc"), {"mmap", "fallocate"});
  o.eval_every = static_cast<int>(to_int("eval_every", v.at("eval_every"), 0));
  o.eval_batches = static_cast<int>(to_int("eval_batches", v.at("eval_batches"), 1));
  o.after_loop = one_of("after_loop", v.at("after_loop"), {"exit", "barrier", "linger"});
  if (o.lr <= 0) throw UsageError("--lr must be > 0");
  if (o.shards > o.dataset_size) throw UsageError("--shards must not exceed --dataset_size");
  return o;
}

std::vector<std::string> documented_env(const BackendSpec& spec) {
  std::vector<std::string> env = {"RANK",
                                  "WORLD_SIZE",
                                  "LOCAL_RANK",
                                  "LOCAL_WORLD_SIZE",
                                  "MASTER_ADDR",
                                  "MASTER_PORT",
                                  "HANGLAB_RUN_DIR",
                                  "HANGLAB_TRACE",
                                  "HANGLAB_HEARTBEAT_MS",
                                  "HANGLAB_INIT_TIMEOUT_MS",
                                  "HANGLAB_COLLECTIVE_TIMEOUT_MS",
                                  "HANGLAB_DATA_DIR",
                                  "HANGLAB_CKPT_DIR",
                                  "HANGLAB_HOOKS"};
  if (spec.fr_dumper) env.insert(env.end(), {"HANGLAB_FR_DUMP", "TORCH_FR_BUFFER_SIZE"});
  env.insert(env.end(), spec.extra_env.begin(), spec.extra_env.end());
  return env;
}

std::string describe_json(const BackendSpec& spec) {
  nlohmann::ordered_json d;
  d["name"] = spec.workload;
  d["backends"] = {spec.backend};
  if (!spec.built_with.empty()) d["built_with"] = spec.built_with;
  nlohmann::ordered_json kinds = nlohmann::ordered_json::array();
  nlohmann::ordered_json hook_keys = nlohmann::ordered_json::object();
  for (const auto& hs : hook_specs()) {
    kinds.push_back(hs.kind);
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const auto& k : hs.keys) {
      keys.push_back({{"name", k.name}, {"type", k.type}, {"default", k.default_value}, {"doc", k.doc}});
    }
    hook_keys[hs.kind] = {{"doc", hs.doc}, {"keys", keys}};
  }
  d["hooks"] = kinds;
  d["hook_keys"] = hook_keys;
  nlohmann::ordered_json args = nlohmann::ordered_json::array();
  for (const auto& a : torch_ddp_args()) {
    args.push_back({{"name", a.name}, {"type", a.type}, {"default", a.default_value}, {"doc", a.doc}});
  }
  d["args"] = args;
  d["options"] = nlohmann::ordered_json::array(
      {{{"name", "steps"}, {"type", "int"}, {"default", "10"}, {"doc", "total training steps across epochs"}},
       {{"name", "backend"}, {"type", "string"}, {"default", spec.backend}, {"doc", "communication backend"}}});
  d["env"] = documented_env(spec);
  if (!spec.notes.empty()) d["notes"] = spec.notes;
  nlohmann::ordered_json codes = nlohmann::ordered_json::array();
  for (const auto& c : exit_code_table()) {
    codes.push_back({{"code", c.code}, {"name", c.name}, {"meaning", c.meaning}});
  }
  d["exit_codes"] = codes;
  return d.dump();
}

}  // namespace

// Parses argv; exits 0 after --describe/--help, exits 2 on any usage error.
Options parse_command_line(int argc, char** argv, const BackendSpec& spec) {
  CLI::App app{spec.workload + ": " + spec.summary, spec.workload};
  std::map<std::string, std::string> values = {{"steps", "10"}, {"backend", spec.backend}};
  for (const auto& a : torch_ddp_args()) values[a.name] = a.default_value;
  bool describe = false;
  app.add_flag("--describe", describe, "print the workload description as one JSON line and exit");
  app.add_option("--steps", values["steps"], "total training steps across epochs")->capture_default_str();
  app.add_option("--backend", values["backend"], "communication backend: " + spec.backend + " only")
      ->capture_default_str();
  for (const auto& a : torch_ddp_args()) {
    app.add_option(std::string("--") + a.name, values[a.name], std::string(a.doc) + " [" + a.type + "]")
        ->capture_default_str();
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "[rank ?] ERROR (usage) in startup at step 0: %s (see --help)\n", e.what());
    std::exit(kExitUsage);
  }
  if (describe) {
    std::printf("%s\n", describe_json(spec).c_str());
    std::exit(kExitOk);
  }
  try {
    Options o = options_from(values);
    if (o.backend != spec.backend) {
      throw UsageError("--backend=" + o.backend + ": " + spec.workload + " supports only " + spec.backend);
    }
    return o;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "[rank ?] ERROR (usage) in startup at step 0: %s\n", e.what());
    std::exit(kExitUsage);
  }
}

}  // namespace hanglab
