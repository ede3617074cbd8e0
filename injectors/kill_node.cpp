// kill_node: a whole node goes away at once — a host crash, a kernel panic, a spot
// instance reclaimed, a node evicted. Every rank of the chosen nodes gets the signal
// (default SIGKILL) in the same instant, as when the machine under them disappears.
//
// [topology] nodes > 1. Manifested when every rank of a chosen node that was alive at the
// firing died of that signal.
#include <unistd.h>

#include <csignal>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "node_common.hpp"
#include "util.hpp"

namespace hanglab {

namespace {

std::vector<KeyDoc> kill_node_keys() {
  return {nodes_key(), {"signal", "string", "SIGKILL", "signal sent to every rank of the node: SIGKILL or SIGTERM"}};
}

class KillNode : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, kill_node_keys());
    nodes_ = read_nodes(spec, file);
    name_ = read_fault_key(spec, file, kill_node_keys()[1]).get<std::string>();
    static const std::map<std::string, int> kSig = {{"SIGKILL", SIGKILL}, {"SIGTERM", SIGTERM}};
    auto it = kSig.find(name_);
    if (it == kSig.end())
      throw config_error_at(file, *spec.table.get("signal"), spec.key_prefix() + ".signal",
                            "unknown signal '" + name_ + "' (known: SIGKILL, SIGTERM)");
    signo_ = it->second;
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    ranks_per_node_ = ctx.scenario.topology.ranks_per_node;
    return {adapt_nodes(ctx, nodes_)};
  }

  std::string fire(Job& job) override {
    std::vector<std::string> parts;
    for (int k : nodes_) {
      // Everything the node runs goes with it: its ranks, and whatever else lives in its
      // network namespace (a torchrun agent, a data-loader worker). Listed first, then
      // signalled in one pass, so nothing on the node notices another's death first.
      std::set<pid_t> others;
      if (const NodeNetView* net = nodes()) {
        ToolResult t = run_tool({"ip", "netns", "pids", net->ns(k)});
        std::istringstream in(t.output);
        for (long p; in >> p;)
          if (p > 1 && p != ::getpid()) others.insert(static_cast<pid_t>(p));
      }
      std::string sent;
      for (int r = k * ranks_per_node_; r < (k + 1) * ranks_per_node_; ++r) {
        const pid_t pid = job.pid_of(r);
        others.erase(pid);
        if (!job.alive(r) || pid <= 0) continue;
        job.fault_signalled(r, signo_);
        if (::kill(pid, signo_) == 0) {
          sent_.push_back(r);
          sent += (sent.empty() ? "" : ",") + std::to_string(r);
        }
      }
      int more = 0;
      for (pid_t p : others) more += ::kill(p, signo_) == 0;
      parts.push_back(fmt::format("{} to node {} (ranks {}{})", name_, k, sent.empty() ? "none alive" : sent,
                                  more ? fmt::format(", and {} other process(es) of the node", more) : ""));
    }
    std::string d;
    for (const auto& p : parts) d += (d.empty() ? "" : "; ") + p;
    return d;
  }

  Manifest manifested(const RunFactsView& run) const override {
    if (sent_.empty()) return {false, "no rank of " + node_list(nodes_) + " was alive to signal"};
    for (int r : sent_) {
      const RankExit* e = run.exit_of(r);
      const bool died = e && ((e->signal && *e->signal == signo_) || (!e->signal && e->code == 128 + signo_) ||
                              (signo_ == SIGTERM && e->status() != 0));
      if (!died) return {false, fmt::format("rank {} of {} outlived its {}", r, node_list(nodes_), name_)};
    }
    return {true, fmt::format("every rank of {} ({} rank(s)) died of {}", node_list(nodes_), sent_.size(), name_)};
  }

 private:
  std::vector<int> nodes_;
  int ranks_per_node_ = 0;
  std::string name_ = "SIGKILL";
  int signo_ = SIGKILL;
  std::vector<int> sent_;
};

}  // namespace

InjectorInfo kill_node_info() {
  return {"kill_node", "every rank of the chosen nodes dies at once (host crash, eviction, reclaimed instance)",
          "kill(2) (default SIGKILL) on each rank of the nodes in the same instant when the trigger is due",
          kill_node_keys(), [] { return std::make_unique<KillNode>(); }};
}

}  // namespace hanglab
