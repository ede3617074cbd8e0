#include "scenario/preflight_spec.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "preflight/preflight.hpp"

namespace hanglab {

namespace {

const char* const kKeys[] = {"deadline_s", "fail", "nodes", "echoes", "args", "ckpt"};

}  // namespace

void load_preflight_table(const toml::table& root, const std::string& file, Scenario& sc, std::vector<ConfigError>& errors) {
  const toml::node* n = root.get("preflight");
  if (!n) return;
  auto err = [&](const toml::node& at, const std::string& key, const std::string& msg) {
    errors.push_back(config_error_at(file, at, key, msg));
  };
  if (!n->is_table()) {
    err(*n, "preflight", "expected a table");
    return;
  }
  const toml::table& t = *n->as_table();
  PreflightSpec p;
  p.pos = SourcePos{file, static_cast<int>(t.source().begin.line), static_cast<int>(t.source().begin.column)};
  for (const auto& [k, v] : t)
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* x) { return k.str() == x; }) == std::end(kKeys))
      errors.push_back(config_error_at(file, k.source(), "preflight." + std::string(k.str()),
                                       "unknown key (expected one of: deadline_s, fail, nodes, echoes, args, ckpt)"));
  if (const toml::node* d = t.get("deadline_s")) {
    const double v = d->is_integer() ? static_cast<double>(d->as_integer()->get())
                     : d->is_floating_point() ? d->as_floating_point()->get()
                                              : -1;
    if (!(v >= 1 && v <= 600))
      err(*d, "preflight.deadline_s", "expected a number of seconds, 1..600");
    else
      p.deadline_s = v;
  }
  if (const toml::node* c = t.get("ckpt")) {
    if (!c->is_boolean())
      err(*c, "preflight.ckpt", "expected true or false");
    else
      p.ckpt = c->as_boolean()->get();
  }
  auto strings = [&](const char* key, bool checks) {
    std::vector<std::string> out;
    const toml::node* a = t.get(key);
    if (!a) return out;
    if (!a->is_array()) {
      err(*a, std::string("preflight.") + key, "expected an array of strings");
      return out;
    }
    for (const toml::node& e : *a->as_array()) {
      if (!e.is_string()) {
        err(e, std::string("preflight.") + key, "expected a string");
        continue;
      }
      const std::string s = e.as_string()->get();
      if (checks && !preflight::is_check_name(s))
        err(e, std::string("preflight.") + key,
            fmt::format("unknown check \"{}\" (known: {})", s, fmt::join(preflight::check_names(), ", ")));
      out.push_back(s);
    }
    return out;
  };
  p.fail = strings("fail", true);
  p.echoes = strings("echoes", true);
  p.args = strings("args", false);
  if (const toml::node* a = t.get("nodes")) {
    if (!a->is_array()) {
      err(*a, "preflight.nodes", "expected an array of node numbers");
    } else {
      for (const toml::node& e : *a->as_array()) {
        if (!e.is_integer() || e.as_integer()->get() < 0 || e.as_integer()->get() >= sc.topology.nodes) {
          err(e, "preflight.nodes", fmt::format("expected a node 0..{} ([topology] nodes = {})", sc.topology.nodes - 1,
                                                sc.topology.nodes));
          continue;
        }
        p.nodes.push_back(static_cast<int>(e.as_integer()->get()));
      }
    }
  }
  if (!p.fail.empty() && !t.get("nodes"))
    err(t.get("fail") ? *t.get("fail") : static_cast<const toml::node&>(t), "preflight.nodes",
        "missing: the nodes on which the checks in `fail` must fail");
  if (p.fail.empty() && !p.nodes.empty())
    err(*t.get("nodes"), "preflight.fail", "missing: the checks that must fail on `nodes`");
  if (const toml::node* e = root.get("expect"))
    err(*e, "expect", "a [preflight] scenario is judged by its [preflight] fail/nodes/echoes; [expect] does not apply");
  const int rpn = sc.topology.nodes > 1 ? sc.topology.ranks_per_node : sc.workload.world_size;
  for (const auto& f : sc.faults) {
    const toml::node* trig = f.table.get("at_step") ? f.table.get("at_step")
                             : f.table.get("at_s")  ? f.table.get("at_s")
                                                    : f.table.get("at_output");
    if (trig)
      err(*trig, f.key_prefix() + (f.at_step ? ".at_step" : f.at_s ? ".at_s" : ".at_output"),
          "preflight runs before the job: a fault here acts from launch (leave the trigger out)");
    for (int r : f.ranks)
      if (rpn > 0 && r % rpn != 0)
        err(f.table.get("ranks") ? *f.table.get("ranks") : static_cast<const toml::node&>(f.table), f.key_prefix() + ".ranks",
            fmt::format("rank {} is not the first rank of its node: preflight runs once per node, as rank {} (node {})", r,
                        r / rpn * rpn, r / rpn));
  }
  sc.preflight = std::move(p);
}

}  // namespace hanglab
