// env_skew: the chosen nodes are launched with a different environment from the rest — a job
// template edited for some nodes only, a node image with its own /etc/environment or module
// defaults, an `export NCCL_PROTO=...` left in one node's shell profile. NCCL and Gloo read these
// per process, so the ranks of the job quietly disagree: different protocols, algorithms or
// buffer sizes on the two ends of a connection, which NCCL does not check before it hangs (NCCL's
// troubleshooting: "a version or configuration mismatch between two ranks").
//
// Mechanism: environment set (or, with the value "", removed) before exec on every rank of the
// chosen nodes. [topology] nodes > 1. Acts from launch: leave at_step/at_s out. Manifested when
// a targeted rank was seen running with the skewed environment (/proc/<pid>/environ at launch).
#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "network_common.hpp"
#include "node_common.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> skew_keys() {
  return {nodes_key(),
          {"set", "string", "NCCL_PROTO=Simple",
           "what the chosen nodes get: NAME=value pairs separated by blanks (NAME= removes NAME there)"}};
}

class EnvSkew : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, skew_keys());
    nodes_ = read_nodes(spec, file);
    const std::string text = read_fault_key(spec, file, skew_keys()[1]).get<std::string>();
    auto bad = [&](const std::string& msg) {
      const toml::node* n = spec.table.get("set");
      return n ? config_error_at(file, *n, spec.key_prefix() + ".set", msg)
               : config_error_at(file, spec.table.source(), spec.key_prefix() + ".set", msg);
    };
    std::istringstream in(text);
    for (std::string kv; in >> kv;) {
      const auto eq = kv.find('=');
      const std::string name = kv.substr(0, eq);
      const bool ok = eq != std::string::npos && !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                      std::all_of(name.begin(), name.end(), [](char c) {
                        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                      });
      if (!ok) throw bad("\"" + kv + "\" is not NAME=value (NAME= removes the variable)");
      set_[name] = kv.substr(eq + 1);
    }
    if (set_.empty()) throw bad("names no variable: expected NAME=value pairs separated by blanks");
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    if (ctx.spec.at_step || ctx.spec.at_s || ctx.spec.at_output)
      throw ctx.refuse(ctx.spec.at_step ? "at_step" : ctx.spec.at_s ? "at_s" : "at_output",
                       "the environment is read at start-up: leave the trigger out");
    std::string note = adapt_nodes(ctx, nodes_);
    ranks_ = ctx.scenario.faults.at(static_cast<size_t>(ctx.spec.index)).ranks;
    return {note};
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (!is_targeted(ranks_, rank)) return;
    for (const auto& [k, v] : set_) {
      if (v.empty()) spec.env.erase(k);
      else spec.env[k] = v;
    }
  }

  std::string fire(Job& job) override {
    std::string seen_on;
    for (int r : ranks_) {
      if (!job.alive(r)) continue;
      std::ifstream in("/proc/" + std::to_string(job.pid_of(r)) + "/environ");
      std::set<std::string> env;
      for (std::string kv; std::getline(in, kv, '\0');) env.insert(kv);
      bool all = true;
      for (const auto& [k, v] : set_) {
        const bool present = std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(k + "=", 0) == 0; });
        all = all && (v.empty() ? !present : env.count(k + "=" + v) > 0);
      }
      if (all) seen_on += (seen_on.empty() ? "" : ",") + std::to_string(r);
    }
    seen_ = !seen_on.empty();
    std::string what;
    for (const auto& [k, v] : set_) what += (what.empty() ? "" : " ") + (v.empty() ? "no " + k : k + "=" + v);
    return fmt::format("{} started with {}{}", node_list(nodes_), what,
                       seen_ ? " (seen in the environment of rank(s) " + seen_on + ")" : "");
  }

  Manifest manifested(const RunFactsView&) const override {
    if (seen_) return {true, "the chosen nodes' ranks ran with the skewed environment"};
    return {false, "no targeted rank was seen running with the skewed environment"};
  }

 private:
  std::vector<int> nodes_;
  std::vector<int> ranks_;
  std::map<std::string, std::string> set_;
  bool seen_ = false;
};

}  // namespace

InjectorInfo env_skew_info() {
  return {"env_skew", "the chosen nodes are launched with different NCCL/Gloo/torch settings from the rest",
          "environment set (or removed) before exec on the chosen nodes' ranks (acts from launch)", skew_keys(),
          [] { return std::make_unique<EnvSkew>(); }};
}

}  // namespace hanglab
