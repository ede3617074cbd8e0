// torchrun's elastic agent says where its node's workers sit in the job: its rendezvous result
// (torch/distributed/elastic/agent/server/api.py:552@2.15.0, "[%(role)s] Rendezvous complete for workers.
// Result:\n  restart_count=...\n  master_addr=...\n  master_port=...\n  group_rank=%(group_rank)s\n
// group_world_size=...\n  local_ranks=...\n  role_ranks=...\n  global_ranks=...\n  role_world_sizes=...\n
// global_world_sizes=...\n"; the same keys from torch 1.9's f-string on) and the launcher's banner
// (launcher/api.py:257@2.15.0, "Starting elastic_operator with launch configs:\n  entrypoint : ...\n
// min_nodes : %(min_nodes)s\n  max_nodes : ...\n  nproc_per_node : ..."). Logging prints the message's
// first line with its prefix and the rest as they are, so each key is a line of its own.
//
// A worker's global rank is its agent's base global rank plus its local rank (api.py:683), and
// global_ranks lists them in local_ranks' order: one agent's result maps torchrun's local ranks (its exit
// lines' "local_rank: N", its "[defaultN]:" tee prefix) onto global ranks. A group world size above 1 (the
// agents that rendezvoused, one per node) or a minimum node count above 1 says the job spans nodes, and a
// local rank alone then names no global rank.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "triage/logs/parse_parts.hpp"
#include "triage/logs/reader.hpp"

namespace hanglab {
namespace logparse {

namespace {

// "[0, 1, 2]" (every element a number) or "7"; false for anything else.
bool read_values(sv v, std::vector<int>& out) {
  if (v.empty()) return false;
  if (v.front() != '[') {
    long long x = 0;
    if (read_int(v, 0, &x) != v.size()) return false;
    out.push_back(x >= 0 && x < kMaxWorld ? static_cast<int>(x) : -1);
    return out.back() >= 0;
  }
  if (v.back() != ']') return false;
  const sv inner = trim(v.substr(1, v.size() - 2));
  if (inner.empty()) return false;
  read_rank_list(v, 0, out);
  const size_t elements = static_cast<size_t>(std::count(inner.begin(), inner.end(), ',')) + 1;
  if (out.size() != elements) return false;
  return std::all_of(out.begin(), out.end(), [](int r) { return r >= 0 && r < kMaxWorld; });
}

}  // namespace

bool agent_layout_lines(sv m, LogLine& o) {
  const sv t = trim(m);
  if (t.size() < 8) return false;
  static constexpr sv kResultKeys[] = {"group_rank",   "group_world_size", "local_ranks",       "role_ranks",
                                       "global_ranks", "role_world_sizes", "global_world_sizes"};
  for (const sv key : kResultKeys) {
    if (t.size() <= key.size() + 1 || t.compare(0, key.size(), key) != 0 || t[key.size()] != '=') continue;
    std::vector<int> vals;
    if (!read_values(t.substr(key.size() + 1), vals)) return false;
    o.kind = LogKind::kAgentLayout;
    o.word = key;
    if (key == "global_world_sizes") o.world = bounded_world(vals.front());
    o.ranks = std::move(vals);
    return true;
  }
  static constexpr sv kBannerKeys[] = {"min_nodes", "max_nodes", "nproc_per_node"};
  for (const sv key : kBannerKeys) {
    if (t.compare(0, key.size(), key) != 0) continue;
    size_t p = skip_sp(t, key.size());
    if (p == key.size() || p >= t.size() || t[p] != ':') return false;  // "min_nodes   : 2": padded, then ':'
    std::vector<int> vals;
    if (!read_values(trim(t.substr(p + 1)), vals) || vals.size() != 1) return false;
    o.kind = LogKind::kAgentLayout;
    o.word = key;
    o.ranks = std::move(vals);
    return true;
  }
  return false;
}

}  // namespace logparse

AgentLayout read_agent_layout(const std::vector<LogEvent>& events) {
  AgentLayout a;
  bool conflict = false;
  // The last "local_ranks" line of each file, waiting for its "global_ranks" two lines below
  // (role_ranks between them).
  const LogEvent* local = nullptr;
  for (const auto& e : events) {
    if (e.kind != LogKind::kAgentLayout || e.ranks.empty()) continue;
    if ((e.word == "group_world_size" || e.word == "min_nodes") && e.ranks.front() > 1 && !a.multi_node) {
      a.multi_node = true;
      a.file = e.file;
      a.line = e.line;
    }
    if (e.word == "local_ranks") {
      local = &e;
    } else if (e.word == "global_ranks" && local && local->file == e.file && e.line > local->line &&
               e.line - local->line <= 3 && local->ranks.size() == e.ranks.size()) {
      for (size_t i = 0; i < e.ranks.size(); ++i) {
        const auto [it, fresh] = a.local_to_global.emplace(local->ranks[i], e.ranks[i]);
        if (!fresh && it->second != e.ranks[i]) conflict = true;
      }
      if (a.file == 0 && a.line == 0) a.file = e.file, a.line = e.line;
      local = nullptr;
    }
  }
  if (conflict) a.local_to_global.clear();
  return a;
}

}  // namespace hanglab
