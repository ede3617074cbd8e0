// Repro plan (plan.hpp): the incident's answer -> ranked candidates -> scenario text.
#include "repro/plan.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "util.hpp"

namespace hanglab::repro {

namespace fs = std::filesystem;

std::string role_of(int rank, int world) {
  if (rank < 0) return "unnamed";
  if (world == 1) return "only";
  if (rank == 0) return "first";
  if (world <= 0) return "unknown";  // rank > 0 of a world the logs never state: last or middle?
  if (rank == world - 1) return "last";
  return "middle";
}

// Categories whose first failure is the failing rank's own (it died, its disk or memory ran out);
// in the others the first to report is a witness: the store host timing out waiting for clients,
// a rank timing out in a collective its peer never entered.
const std::set<std::string> kOwnFailure = {"rank_exit", "resource_limit", "data_loading"};

// The ranks the answer blames: its missing ranks, else the first failure's rank where that is the
// failing rank's own and not every rank failed alike (scope all: the first is order, not a culprit).
std::vector<int> culprits_of(const TriageResult& r) {
  if (!r.missing_ranks.empty()) return r.missing_ranks;
  if (r.first_failure && r.first_failure->rank >= 0 && r.scope != "all" && kOwnFailure.count(r.category))
    return {r.first_failure->rank};
  return {};
}

std::string role_of_culprits(const TriageResult& r, const std::vector<int>& culprits) {
  if (culprits.empty()) return r.scope == "all" ? "all" : "unnamed";
  if (r.world_size > 1 && static_cast<int>(culprits.size()) >= r.world_size) return "all";
  if (r.world_size == 1) return "only";
  // Several culprits (a node's ranks): the role of the block, by its lowest rank unless it
  // ends the world.
  const int hi = *std::max_element(culprits.begin(), culprits.end());
  if (culprits.size() > 1 && r.world_size > 0 && hi == r.world_size - 1) return "last";
  return role_of(*std::min_element(culprits.begin(), culprits.end()), r.world_size);
}

NodeSplit node_split(const TriageResult& r, const std::vector<int>& culprits) {
  NodeSplit s;
  std::map<int, std::string> host_of;
  std::map<std::string, int> lowest, count;
  for (const auto& pr : r.per_rank) {
    if (pr.host.empty() || pr.rank < 0 || !host_of.emplace(pr.rank, pr.host).second) continue;
    auto [it, fresh] = lowest.emplace(pr.host, pr.rank);
    if (!fresh) it->second = std::min(it->second, pr.rank);
    ++count[pr.host];
  }
  if (lowest.size() < 2) return s;  // no hosts, or one: a single host, as a plain run
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [h, lo] : lowest) order.push_back({lo, h});
  std::sort(order.begin(), order.end());  // node 0 = rank 0's host, then by lowest rank
  std::map<std::string, int> node_of;
  for (const auto& [lo, h] : order) {
    node_of[h] = static_cast<int>(s.hosts.size());
    s.hosts.push_back(h);
  }
  s.nodes = static_cast<int>(s.hosts.size());
  for (const auto& [h, n] : count) s.ranks_per_node = std::max(s.ranks_per_node, n);
  if (culprits.empty()) return s;
  std::set<int> cn;
  for (int c : culprits) {
    auto it = host_of.find(c);
    if (it == host_of.end()) return s;  // a culprit's host unknown: its node's role is not known
    cn.insert(node_of[it->second]);
  }
  s.culprit_nodes.assign(cn.begin(), cn.end());
  // A whole node: each culprit node holds as many ranks as the busiest and all of them are
  // culprits, judged only when every rank's host is known.
  const std::set<int> cs(culprits.begin(), culprits.end());
  s.whole_known = r.world_size > 0 && static_cast<int>(host_of.size()) >= r.world_size;
  s.whole_node = s.whole_known;
  for (int n : s.culprit_nodes) {
    if (count[s.hosts[n]] != s.ranks_per_node) s.whole_node = false;
    for (const auto& [rank, h] : host_of)
      if (h == s.hosts[n] && !cs.count(rank)) s.whole_node = false;
  }
  if (static_cast<int>(s.culprit_nodes.size()) >= s.nodes)
    s.node_role = "all";
  else if (s.culprit_nodes.size() > 1 && s.culprit_nodes.back() == s.nodes - 1)
    s.node_role = "last";
  else
    s.node_role = role_of(s.culprit_nodes.front(), s.nodes);
  return s;
}

std::string NodeSplit::describe() const {
  if (nodes < 2) return "a single host";
  std::string o = fmt::format("{} nodes x {} rank(s)", nodes, ranks_per_node);
  if (node_role.empty()) return o + "; the culprit's node is not known";
  return o + fmt::format("; culprit: {} node(s) {} ({}{})",
                         whole_node ? "the whole" : whole_known ? "one rank on" : "a rank (not every host known) on",
                         rank_ranges(culprit_nodes), node_role,
                         culprit_nodes.front() == 0 && node_role != "all" ? ", the store's host" : "");
}

namespace {

// What a log line says about a timeout: the pattern, what it times, and the unit of its number.
struct TimeoutPattern {
  const char* re;
  const char* what;
  double scale;  // to seconds
};
const TimeoutPattern kTimeoutPatterns[] = {
    {R"(Timeout\(ms\)=(\d+))", "collective", 1e-3},                              // NCCL watchdog
    {R"(Timed out waiting (\d+)ms for (?:recv|send))", "collective", 1e-3},      // Gloo
    {R"(Timed out after (\d+) seconds waiting for clients)", "store", 1},        // TCPStore server
    {R"(client socket has timed out after (\d+)ms)", "store", 1e-3},             // TCPStore client
    {R"(client socket has timed out after (\d+)s)", "store", 1},
    {R"(watchdog thread (?:has been )?stuck for (\d+) seconds)", "heartbeat", 1},  // heartbeat monitor
    {R"(heartbeat[^\n]*?(\d+) seconds)", "heartbeat", 1},
};

// The signals kill_rank sends (`hanglab describe kill_rank`).
const std::pair<int, const char*> kKillSignals[] = {{9, "SIGKILL"}, {15, "SIGTERM"}, {11, "SIGSEGV"}, {7, "SIGBUS"},
                                                    {6, "SIGABRT"}, {2, "SIGINT"},  {3, "SIGQUIT"},  {10, "SIGUSR1"}};

std::vector<fs::path> incident_files(const std::vector<fs::path>& inputs) {
  std::vector<fs::path> out;
  for (const auto& p : inputs) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec)) out.push_back(it->path());
    } else if (fs::is_regular_file(p, ec)) {
      out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string one_line(std::string s, size_t max) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  if (s.size() > max) s = utf8_prefix(s, max - 3) + "...";
  return s;
}

std::string toml_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') { o += "\\n"; continue; }
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o + "\"";
}

std::string int_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The rank that plays `role` in a world of w ranks.
int rank_for_role(const std::string& role, int w) {
  if (role == "first" || role == "only") return 0;
  if (role == "last") return w - 1;
  return w >= 3 ? w / 2 : w - 1;  // middle (or unknown): away from rank 0, the store's host
}

std::string sanitize_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  return s;
}

// Missing by absence: rank the three by what the answer says of the absent rank's liveness.
std::vector<std::pair<Recipe, std::string>> rank_absence(const TriageResult& r, const std::vector<int>& culprits) {
  std::string live;
  for (const auto& pr : r.per_rank)
    if (!culprits.empty() && pr.rank == culprits.front()) live = pr.liveness;
  const auto& a = absence_recipes();  // killed, frozen, skipped
  if (live == "dead")
    return {{a[0], "the answer calls the absent rank dead (exit status or closed sockets): killed first"},
            {a[1], "frozen would look dead only without its heartbeat lines: second"},
            {a[2], "a skipped collective leaves the rank running: last"}};
  if (live == "hung" || live == "frozen" || live == "slow")
    return {{a[1], "the answer says the absent rank was alive (" + live + "): frozen first"},
            {a[2], "alive and past the collective its peers wait in: skipped second"},
            {a[0], "a dead rank contradicts the liveness the logs show: last"}};
  return {{a[0], "the logs cannot tell dead from stuck (no exit status, no closed socket, no later line): killed, the "
                 "commonest reason a rank goes missing, first"},
          {a[1], "frozen (alive, silent): its peers time out the same way; second"},
          {a[2], "skipped (diverged): the rank would show progress past the collective if it logged it; third"}};
}

// A phase a log reader names that a reproduction in `acts` matches (compare.cpp's rule: a step's
// data loading is training to a log without a data-loading marker).
bool same_phase(const std::string& incident, const std::string& acts) {
  return incident == acts || (incident == "training" && acts == "data");
}

// The incident's phase, where its triage names one the recipe does not act in: reached through a
// PhaseTrigger row where one exists for the fault, else said plainly and left as the recipe's.
void adapt_phase(const std::string& phase, Candidate& c) {
  const Recipe& r = c.recipe;
  if (phase.empty() || phase == "unknown" || phase == "none" || same_phase(phase, r.phase)) return;
  const PhaseTrigger* t = find_phase_trigger(phase, r.fault);
  if (t && c.fault_ranks.size() == 1 && r.targets == "culprit") {
    c.phase = phase;
    c.at_output = fmt::format("[rank {}] {}", c.fault_ranks.front(), t->line);
    c.args += (c.args.empty() ? "" : "\n") + t->args;
    if (!t->outcome.empty()) c.outcome = t->outcome;
    c.phase_note = fmt::format("acts in the incident's {} phase, not {}: {}", phase, r.phase, t->why);
    return;
  }
  c.phase_note = fmt::format(
      "{} acts in the {} phase here and cannot act in the incident's {} phase{} (missing fault: {} in the {} phase)",
      r.fault, r.phase, phase,
      t ? " on more than one rank"
        : r.at_step && r.fault != "kill_rank"
            ? std::string(": it is a hook of the built-in loop's training steps")
            : std::string(": no trigger here holds the ranks in that phase"),
      r.fault, phase);
}

// The role of a block of culprit ranks in a world of w (role_of_culprits' rule).
std::string block_role(const std::vector<int>& ranks, int w) {
  TriageResult t;
  t.world_size = w;
  return role_of_culprits(t, ranks);
}

// The incident's node split, scaled down: the fewest nodes that keep the culprit node's role
// (first: node 0, the store's host; last; middle: of three), at most 2 ranks a node (1 where the
// incident ran 1), the culprit a whole node or one rank on it as in the incident. A node fault
// takes the culprit's node; a rank fault its rank(s), placed on that node with its rank role.
void keep_node_split(const Plan& p, const PlanOptions& opts, Candidate& c) {
  const NodeSplit& s = p.split;
  const Recipe& rec = c.recipe;
  int nodes = std::max(s.node_role == "middle" ? 3 : 2, rec.nodes);
  int per = std::min(s.ranks_per_node, 2);
  if (opts.world_size && *opts.world_size >= nodes && *opts.world_size % nodes == 0) per = *opts.world_size / nodes;
  while (nodes * per < std::max(rec.min_world, 2)) ++per;
  const int w = nodes * per;
  int k = s.node_role == "first" ? 0 : s.node_role == "last" ? nodes - 1 : nodes / 2;
  const auto ranks_of = [&](int n) {
    std::vector<int> v;
    for (int r = n * per; r < (n + 1) * per; ++r) v.push_back(r);
    return v;
  };
  c.nodes = nodes;
  c.ranks_per_node = per;
  c.world = w;
  c.node_note = fmt::format("incident {}; here {} nodes x {} rank(s)", s.describe(), nodes, per);
  if (rec.targets == "all" || c.role == "all") {  // every rank: the recipe's, or every rank died alike
    c.fault_ranks.clear();
    for (int r = 0; r < w; ++r) c.fault_ranks.push_back(r);
    c.culprits = c.fault_ranks;
    c.node_role = s.node_role == "all" ? "all" : "";
    c.role = "all";
    return;
  }
  if (s.node_role == "all") {  // every node holds a culprit: the rank mapping is the world's, not a node's
    c.node_note += "; every node holds a culprit, so no node is singled out";
    if (rec.targets == "node") { c.fault_nodes = {nodes - 1}; c.culprits = ranks_of(nodes - 1); }
    else c.fault_ranks = c.culprits = {rank_for_role(p.role == "all" ? "middle" : p.role, w)};
    c.role = block_role(c.culprits, w);
    return;
  }
  if (rec.targets == "node") {
    if (k == 0 && !rec.store_node) {
      k = nodes - 1;
      c.node_note += fmt::format("; {} cannot take node 0 (the store's host): node {} instead", rec.fault, k);
    }
    c.fault_nodes = {k};
    c.culprits = ranks_of(k);
    c.role = block_role(c.culprits, w);
    c.node_role = role_of(k, nodes);
    c.node_note += fmt::format("; the fault takes node {}", k);
    return;
  }
  if (s.whole_node) {
    c.culprits = ranks_of(k);
    c.node_note += fmt::format("; the fault takes every rank of node {} ({})", k, rank_ranges(c.culprits));
  } else {
    // One rank on the node, keeping its role in the job where the node allows it.
    const std::string role = p.role;  // first | middle | last: the split knows the culprits' hosts
    int local = role == "first" && k == 0 ? 0 : role == "last" && k == nodes - 1 ? per - 1 : k == 0 ? per - 1 : 0;
    if (per == 1) local = 0;
    c.culprits = {k * per + local};
    c.node_note += fmt::format("; the fault takes rank {} on node {}", c.culprits.front(), k);
  }
  c.fault_ranks = c.culprits;
  c.role = block_role(c.culprits, w);
  c.node_role = role_of(k, nodes);
}

}  // namespace

std::vector<StatedTimeout> stated_timeouts(const std::vector<fs::path>& inputs) {
  std::vector<StatedTimeout> out;
  std::set<std::string> seen;  // one per kind and value
  std::vector<std::regex> res;
  for (const auto& p : kTimeoutPatterns) res.emplace_back(p.re, std::regex::icase);
  for (const auto& f : incident_files(inputs)) {
    // Cited as triage cites: relative to the directory given, else as given.
    std::string shown = f.string();
    for (const auto& in : inputs)
      if (std::error_code ec; fs::is_directory(in, ec) && f.string().rfind(in.string(), 0) == 0)
        shown = f.lexically_relative(in).string();
    const auto ext = f.extension().string();
    if (ext == ".md" || ext == ".json" || ext == ".pkl") continue;  // notes and dumps, not log lines
    std::ifstream in(f);
    std::string line;
    int n = 0;
    while (std::getline(in, line) && n < 200000) {
      ++n;
      if (line.size() > 4096) continue;
      for (size_t i = 0; i < res.size(); ++i) {
        std::smatch m;
        if (!std::regex_search(line, m, res[i])) continue;
        const double s = std::stod(m[1].str()) * kTimeoutPatterns[i].scale;
        const std::string key = fmt::format("{}:{:.0f}", kTimeoutPatterns[i].what, s);
        if (!seen.insert(key).second) break;
        out.push_back({kTimeoutPatterns[i].what, s, fmt::format("{}:{}", shown, n)});
        break;
      }
    }
  }
  return out;
}

Plan make_plan(const TriageResult& answer, const std::vector<fs::path>& inputs, const PlanOptions& opts) {
  Plan p;
  p.answer = answer;
  for (const auto& i : inputs) p.inputs.push_back(i.string());
  if (!inputs.empty()) {
    fs::path first = inputs.front();
    p.incident = sanitize_name(fs::is_directory(first) ? fs::absolute(first).lexically_normal().filename().string()
                                                       : first.stem().string());
    // A hanglab run directory is named by its stamp: the scenario's name says more.
    std::error_code ec;
    if (fs::is_directory(first, ec) && fs::exists(first / "run.json", ec)) {
      const fs::path abs = fs::absolute(first).lexically_normal();
      const fs::path dir = abs.filename().empty() ? abs.parent_path() : abs;
      p.incident = sanitize_name(dir.parent_path().filename().string() + "_" + dir.filename().string());
    }
    if (p.incident.empty()) p.incident = sanitize_name(fs::absolute(first).lexically_normal().parent_path().filename().string());
  }
  p.culprits = culprits_of(answer);
  p.role = role_of_culprits(answer, p.culprits);
  p.split = node_split(answer, p.culprits);
  if (answer.first_failure && !answer.first_failure->evidence.empty())
    p.cites.push_back(answer.first_failure->evidence + ": " + one_line(answer.first_failure->what, 140));
  // One citation per line of the incident (several claims may rest on the same line).
  std::set<std::string> refs;
  if (answer.first_failure) refs.insert(answer.first_failure->evidence);
  for (const auto& e : answer.evidence) {
    if (p.cites.size() >= 5) break;
    if (e.ref.empty() || !refs.insert(e.ref).second) continue;
    p.cites.push_back(e.ref + ": " + one_line(e.text, 140));
  }
  p.timeouts = stated_timeouts(inputs);

  std::vector<std::pair<Recipe, std::string>> recipes;
  if (const CauseRow* row = find_cause(answer.category, answer.cause)) {
    if (row->recipes.empty()) {
      p.not_here = fmt::format("not reproducible here: needs {}; missing fault: {}", row->needs, row->missing_fault);
      return p;
    }
    for (size_t i = 0; i < row->recipes.size(); ++i) {
      const Recipe& rec = row->recipes[i];
      std::string why = !rec.ranked.empty() ? rec.ranked
                        : i == 0 ? "the cause table's first recipe for " + answer.category + "/" + answer.cause
                                 : "an alternative mechanism for the same answer";
      recipes.push_back({rec, why});
    }
  } else if ((answer.category == "unknown" || answer.category.empty()) && !p.culprits.empty()) {
    p.absence = true;
    recipes = rank_absence(answer, p.culprits);
  } else if (answer.category == "unknown" || answer.category.empty() || answer.category == "none") {
    p.not_here = fmt::format(
        "not reproducible: the incident's triage names no cause ({}/{}) and no absent rank, so there is no fault to "
        "choose; what it proves is in `hanglab triage`",
        answer.category.empty() ? "unknown" : answer.category, answer.cause.empty() ? "unknown" : answer.cause);
    return p;
  } else {
    p.not_here = fmt::format("not reproducible: the cause table has no fault for {}/{}; missing fault: {}",
                             answer.category, answer.cause, answer.cause);
    return p;
  }

  // The culprit's death signal, where the answer records it.
  std::optional<int> culprit_sig;
  for (const auto& pr : answer.per_rank)
    if (!p.culprits.empty() && pr.rank == p.culprits.front()) culprit_sig = pr.signal;
  for (auto& [rec, why] : recipes) {
    Candidate c;
    c.recipe = rec;
    c.rank_why = why;
    c.keys = rec.keys;
    c.phase = rec.phase;
    c.args = rec.args;
    c.outcome = rec.outcome;
    if (rec.incident_signal && culprit_sig) {
      for (const auto& [num, name] : kKillSignals)
        if (num == *culprit_sig) c.keys = fmt::format("signal = \"{}\"  # the incident's culprit died of it", name);
    }
    c.name = sanitize_name("repro_" + p.incident + "_" + rec.id);
    int w = opts.world_size.value_or(answer.world_size >= 1 && answer.world_size <= 4 ? answer.world_size : 4);
    if (rec.nodes > 1) w = std::max(w, 2 * rec.nodes) / rec.nodes * rec.nodes;  // whole nodes, >= 2 ranks each
    if (rec.targets == "node" || rec.targets == "all") w = std::max(w, 2);
    w = std::max(w, rec.min_world);
    c.world = w;
    std::string role = p.role;
    if (role == "unnamed" || role == "unknown") role = rec.default_role;
    if (role == "only" && w > 1) role = "first";
    if (rec.targets == "all" || (role == "all" && rec.every_rank)) {
      for (int r = 0; r < w; ++r) c.fault_ranks.push_back(r);
      c.culprits = c.fault_ranks;
      c.role = "all";
    } else if (rec.targets == "node") {
      const int per = w / rec.nodes;
      for (int r = w - per; r < w; ++r) c.culprits.push_back(r);
      c.role = "last";
      c.nodes = rec.nodes;
      c.fault_nodes = {rec.nodes - 1};
    } else {
      if (role == "all") role = rec.default_role == "all" ? "middle" : rec.default_role;
      c.culprits = {rank_for_role(role, w)};
      c.fault_ranks = c.culprits;
      c.role = role_of(c.culprits.front(), w);
    }
    if (p.split.known()) keep_node_split(p, opts, c);
    adapt_phase(answer.phase, c);
    p.candidates.push_back(std::move(c));
  }
  return p;
}

std::string render_scenario(const Plan& p, const Candidate& c, const PlanOptions& opts) {
  const Recipe& r = c.recipe;
  const TriageResult& a = p.answer;
  std::string o;
  o += fmt::format("# Reproduces: incident {} ({}): triage says {}/{}, culprit {} {} of {}, phase {}, scope {}.\n",
                   p.incident, fmt::join(p.inputs, " "), a.category.empty() ? "unknown" : a.category,
                   a.cause.empty() ? "unknown" : a.cause, p.role,
                   p.culprits.empty() ? std::string("(no rank named)") : "rank(s) " + rank_ranges(p.culprits),
                   a.world_size > 0 ? std::to_string(a.world_size) : std::string("an unstated world"),
                   a.phase.empty() ? "unknown" : a.phase, a.scope.empty() ? "unknown" : a.scope);
  for (const auto& cite : p.cites) o += "#   " + cite + "\n";
  for (const auto& t : p.timeouts) {
    const std::string here = t.what == "collective" ? fmt::format("collective_s = {:g}", r.collective_s)
                             : t.what == "store"    ? fmt::format("init_s = {:g}", r.init_s)
                                                    : std::string("heartbeat_s = 1");
    o += fmt::format("#   stated {} timeout {:g} s ({}); scaled down here to {}\n", t.what, t.seconds, t.ref, here);
  }
  o += fmt::format("# Candidate \"{}\" ({}): {}\n", r.id, r.fault, one_line(r.why, 400));
  o += fmt::format("#   Ranked: {}\n", c.rank_why);
  if (!c.phase_note.empty()) o += fmt::format("#   Phase: {}\n", one_line(c.phase_note, 400));
  o += fmt::format("#   Scaled: world {} -> {}; the culprit keeps its role ({}): {} {}.\n",
                   a.world_size > 0 ? std::to_string(a.world_size) : "unstated", c.world, c.role,
                   !c.fault_nodes.empty() ? "node " + rank_ranges(c.fault_nodes) + ", ranks" : "rank(s)",
                   rank_ranges(c.culprits));
  if (!c.node_note.empty()) o += fmt::format("#   Nodes: {}.\n", one_line(c.node_note, 400));
  o += fmt::format("# Expected: the run's triage says {}/{} in phase {}, naming rank(s) {}; {} fires first.\n",
                   r.category, r.cause, c.phase, rank_ranges(c.culprits), r.detector);
  if (r.category != a.category || r.cause != a.cause)
    o += fmt::format("#   (the incident's {}/{}: `hanglab repro` compares the two and says where they differ)\n",
                     a.category, a.cause);
  o += "[scenario]\n";
  o += "name = " + toml_str(c.name) + "\n";
  o += "description = " + toml_str(fmt::format("repro of incident {}: {} ({})", p.incident, r.id, r.fault)) + "\n";
  std::vector<std::string> tags = {"cpu", opts.backend, "repro"};
  if (opts.backend == "nccl") tags[0] = "gpu";
  for (const auto& t : r.tags) tags.push_back(t);
  if (c.nodes > 1 && std::find(tags.begin(), tags.end(), "net") == tags.end()) tags.push_back("net");
  std::string tl;
  for (const auto& t : tags) tl += (tl.empty() ? "" : ", ") + toml_str(t);
  o += "tags = [" + tl + "]\n";
  o += fmt::format("deadline_s = {}\n\n", r.deadline_s);
  o += "[workload]\nname = \"torch_ddp\"\n";
  o += "backend = " + toml_str(opts.backend) + "\n";
  o += fmt::format("world_size = {}\nsteps = {}\n", c.world, r.steps);
  if (!r.launcher.empty()) o += "launcher = " + toml_str(r.launcher) + "\n";
  if (r.time_limit_min > 0) o += fmt::format("time_limit_min = {}\n", r.time_limit_min);
  if (!c.args.empty()) o += "[workload.args]\n" + c.args + "\n";
  if (c.nodes > 1) {
    o += fmt::format("\n[topology]\nnodes = {}\n", c.nodes);
    if (c.ranks_per_node > 0) o += fmt::format("ranks_per_node = {}\n", c.ranks_per_node);
  }
  o += fmt::format("\n[timeouts]\ninit_s = {:g}\ncollective_s = {:g}\nprogress_s = {:g}\nheartbeat_s = 1\n\n",
                   r.init_s, r.collective_s, r.progress_s);
  o += "[[fault]]\nkind = " + toml_str(r.fault) + "\n";
  if (!c.fault_nodes.empty())
    o += "nodes = " + int_list(c.fault_nodes) + "\n";
  else
    o += "ranks = " + int_list(c.fault_ranks) + "\n";
  if (!c.at_output.empty())
    o += "at_output = " + toml_str(c.at_output) + "\n";
  else if (r.at_step)
    o += fmt::format("at_step = {}\n", r.fault_step);
  if (!c.keys.empty()) o += c.keys + "\n";
  o += "\n[expect]\n";
  if (!c.outcome.empty()) o += "outcome = " + toml_str(c.outcome) + "\n";
  o += "detected_by = [" + toml_str(r.detector) + "]\n";
  o += "[expect.triage]\n";
  o += "category = " + toml_str(r.category) + "\n";
  o += "cause = " + toml_str(r.cause) + "\n";
  o += "phase = " + toml_str(c.phase) + "\n";
  if (r.targets == "culprit") o += "missing_ranks = " + int_list(c.culprits) + "\n";
  return o;
}

}  // namespace hanglab::repro
