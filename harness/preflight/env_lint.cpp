#include "preflight/env_lint.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

namespace hanglab::preflight {

namespace {

#include "preflight/known_env.inc"

// Set by container images and build systems, never read by the libraries: not typos.
const char* const kKnownNotRead[] = {"NCCL_VERSION", "NCCL_HOME", "NCCL_ROOT", "NCCL_ROOT_DIR", "NCCL_LIB_DIR",
                                     "NCCL_INCLUDE_DIR", "NCCL_LIBRARY", "NCCL_PKG_VERSION"};

// The prefixes whose names are checked against the lists.
const char* const kLintedPrefixes[] = {"NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "TORCH_GLOO_", "TORCH_FR_",
                                       "GLOO_", "TORCHELASTIC_"};

const std::set<std::string>& known_names() {
  static const std::set<std::string> k = [] {
    std::set<std::string> s;
    for (const char* n : kNcclVars) s.insert(n);
    for (const char* n : kTorchVars) s.insert(n);
    for (const auto& p : kTorchDeprecated) s.insert(p[1]);
    for (const char* n : kKnownNotRead) s.insert(n);
    return s;
  }();
  return k;
}

bool linted(const std::string& name) {
  for (const char* p : kLintedPrefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

const std::string* get(const JobEnv& job, const std::string& k) {
  auto it = job.env.find(k);
  return it == job.env.end() ? nullptr : &it->second;
}

bool whole_number(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<LintProblem> lint_problems(const JobEnv& job) {
  std::vector<LintProblem> out;
  if (const auto* g = get(job, "GLOO_SOCKET_IFNAME")) {
    if (g->empty()) {
      out.push_back({false, "GLOO_SOCKET_IFNAME is set but empty: Gloo falls back to the host name's address"});
    } else if ((*g)[0] == '^' || (*g)[0] == '=') {
      out.push_back({true, fmt::format("GLOO_SOCKET_IFNAME={} is NCCL's syntax: Gloo takes exact interface names, "
                                       "comma-separated, and looks for an interface called \"{}\"",
                                       *g, gloo_ifnames(*g).empty() ? *g : gloo_ifnames(*g).front())});
    } else if (g->find_first_of(" \t") != std::string::npos) {
      out.push_back({true, fmt::format("GLOO_SOCKET_IFNAME=\"{}\" holds blanks: Gloo takes them as part of the name", *g)});
    }
  }
  if (const auto* n = get(job, "NCCL_SOCKET_IFNAME"); n && n->empty())
    out.push_back({false, "NCCL_SOCKET_IFNAME is set but empty: NCCL falls back to its own choice of interface"});

  for (const auto& [name, value] : job.env) {
    if (!linted(name) || known_names().count(name)) continue;
    std::string best;
    size_t bd = 99;
    for (const auto& k : known_names()) {
      const size_t d = edit_distance(name, k);
      if (d < bd) {
        bd = d;
        best = k;
      }
    }
    if (bd <= 2 && bd * 4 < name.size())
      out.push_back({true, fmt::format("{} is not a variable the libraries read: did you mean {}? (as written, the job "
                                       "runs as if it were unset)",
                                       name, best)});
    else
      out.push_back({false, fmt::format("{} is not a variable NCCL {} or torch 2.15 reads", name, "2.30")});
  }
  for (const auto& p : kTorchDeprecated) {
    const auto* cur = get(job, p[0]);
    const auto* old = get(job, p[1]);
    if (cur && old && *cur != *old)
      out.push_back({true, fmt::format("{}={} and {}={} conflict: torch reads {} first", p[0], *cur, p[1], *old, p[0])});
    else if (old && !cur)
      out.push_back({false, fmt::format("{} is the deprecated spelling of {} (torch still reads it, with a warning)", p[1],
                                        p[0])});
  }

  // torchrun's contract, where every piece is present (a worker's environment, or a script that
  // exports them by hand).
  const auto* r = get(job, "RANK");
  const auto* gr = get(job, "GROUP_RANK");
  const auto* lr = get(job, "LOCAL_RANK");
  const auto* lws = get(job, "LOCAL_WORLD_SIZE");
  if (r && gr && lr && lws && whole_number(*r) && whole_number(*gr) && whole_number(*lr) && whole_number(*lws)) {
    const long long want = std::atoll(gr->c_str()) * std::atoll(lws->c_str()) + std::atoll(lr->c_str());
    if (std::atoll(r->c_str()) != want)
      out.push_back({true, fmt::format("RANK={} but GROUP_RANK {} x LOCAL_WORLD_SIZE {} + LOCAL_RANK {} = {}: two "
                                       "processes will claim one rank and another rank will be missing",
                                       *r, *gr, *lws, *lr, want)});
  }
  if (get(job, "WORLD_SIZE") && job.world_size != job.nnodes * job.ranks_per_node)
    out.push_back({true, fmt::format("WORLD_SIZE={} but {} node{} x {} rank{} per node = {}: the rendezvous waits for "
                                     "ranks that never come (or refuses extra ones)",
                                     job.world_size, job.nnodes, job.nnodes == 1 ? "" : "s", job.ranks_per_node,
                                     job.ranks_per_node == 1 ? "" : "s", job.nnodes * job.ranks_per_node)});
  if (const auto* c = get(job, "CUDA_LAUNCH_BLOCKING"); c && *c == "1")
    out.push_back({false, "CUDA_LAUNCH_BLOCKING=1 (a debugging leftover): every kernel launch waits for the GPU, and "
                          "NCCL's overlap of compute and communication is gone"});
  return out;
}

CheckResult lint_env(const NodeCtx& ctx, const std::vector<Interface>& /*ifaces*/) {
  CheckResult r = ctx.result("env.lint");
  const auto problems = lint_problems(ctx.job);
  int seen = 0;
  for (const auto& [k, v] : ctx.job.env) seen += linted(k);
  r.rule = "names the libraries read, in their syntax; no conflicting or deprecated spellings; torchrun's rank contract";
  if (problems.empty()) {
    r.measured = fmt::format("{} NCCL/Gloo/torch variable{} set, none suspicious", seen, seen == 1 ? "" : "s");
    return r;
  }
  int fails = 0;
  std::vector<std::string> texts;
  for (const auto& p : problems) {
    fails += p.fail;
    texts.push_back(p.text);
  }
  r.status = fails ? Status::kFail : Status::kWarn;
  r.measured = fmt::format("{}", fmt::join(texts, "; "));
  return r;
}

}  // namespace hanglab::preflight
