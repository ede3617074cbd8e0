#include "preflight/job.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

extern char** environ;

namespace hanglab::preflight {

namespace {

constexpr int kMaxNodes = 4096;

const std::string* get(const std::map<std::string, std::string>& env, const std::string& k) {
  auto it = env.find(k);
  return it == env.end() ? nullptr : &it->second;
}

// A whole decimal number in [lo, hi]; anything else (spaces, signs, units, overflow) is an error
// naming the variable and what it holds.
int env_int(const std::map<std::string, std::string>& env, const std::string& k, long long lo, long long hi) {
  const std::string& v = *get(env, k);
  bool digits = !v.empty() && v.size() <= 9 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  long long n = digits ? std::atoll(v.c_str()) : -1;
  if (!digits || n < lo || n > hi)
    throw UsageError(fmt::format("{}={}: expected a whole number {}..{}", k, v.empty() ? "\"\"" : v, lo, hi));
  return static_cast<int>(n);
}

// torchrun's --nnodes form: "N" or "N:N" (an elastic range MIN:MAX leaves the count open).
int nnodes_value(const std::map<std::string, std::string>& env, const std::string& k) {
  const std::string& v = *get(env, k);
  const auto colon = v.find(':');
  if (colon == std::string::npos) return env_int(env, k, 1, kMaxNodes);
  std::map<std::string, std::string> lo{{k, v.substr(0, colon)}}, hi{{k, v.substr(colon + 1)}};
  int a = 0, b = 0;
  try {
    a = env_int(lo, k, 1, kMaxNodes);
    b = env_int(hi, k, 1, kMaxNodes);
  } catch (const UsageError&) {
    throw UsageError(fmt::format("{}={}: expected N or N:N (node count)", k, v));
  }
  if (a != b)
    throw UsageError(fmt::format("{}={}: an elastic range leaves the node count open; preflight needs the count the job "
                                 "starts with (set {} or NNODES to it)",
                                 k, v, k));
  return a;
}

}  // namespace

std::map<std::string, std::string> current_env() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    out.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return out;
}

long long parse_bytes(const std::string& text, const std::string& what) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string num = text.substr(0, i);
  std::string unit = text.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'b' && unit != "b") unit.pop_back();  // "MiB"/"MB" -> "mi"/"m"
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  double mult = 0;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k") mult = 1024.0;
  else if (unit == "m") mult = 1024.0 * 1024;
  else if (unit == "g") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t") mult = 1024.0 * 1024 * 1024 * 1024;
  char* end = nullptr;
  const double v = num.empty() ? -1 : std::strtod(num.c_str(), &end);
  if (mult == 0 || num.empty() || !end || *end || !(v >= 0) || v * mult > 9.0e18)
    throw UsageError(fmt::format("{} {}: expected a byte count such as 4096, 64MiB or 1.5GiB", what,
                                 text.empty() ? "\"\"" : text));
  return static_cast<long long>(std::llround(v * mult));
}

std::vector<std::string> gloo_ifnames(const std::string& value) {
  std::vector<std::string> out;
  size_t s = 0;
  while (s <= value.size()) {
    size_t e = value.find(',', s);
    if (e == std::string::npos) e = value.size();
    if (e > s) out.push_back(value.substr(s, e - s));
    s = e + 1;
  }
  return out;
}

std::vector<std::string> nccl_ifname_matches(const std::string& value, const std::vector<std::string>& available) {
  // NCCL (src/misc/socket.cc, matchIfList): "^" inverts the whole list, "=" makes every entry
  // exact; otherwise an entry matches interfaces whose name starts with it.
  std::string v = value;
  bool exclude = false, exact = false;
  if (!v.empty() && v[0] == '^') {
    exclude = true;
    v = v.substr(1);
  }
  if (!v.empty() && v[0] == '=') {
    exact = true;
    v = v.substr(1);
  }
  const auto list = gloo_ifnames(v);
  std::vector<std::string> out;
  for (const auto& name : available) {
    bool hit = false;
    for (const auto& p : list) hit = hit || (exact ? name == p : name.rfind(p, 0) == 0);
    if (hit != exclude) out.push_back(name);
  }
  return out;
}

JobEnv resolve_job(const std::map<std::string, std::string>& env, const Options& o) {
  JobEnv j;
  j.env = env;
  j.backend = o.backend.empty() ? "gloo" : o.backend;
  auto has = [&](const std::string& k) { return get(env, k) != nullptr; };

  if (has("TORCHELASTIC_RUN_ID")) {
    j.under_torchrun = true;
    j.launcher = "torchrun";
    for (const char* k : {"GROUP_RANK", "GROUP_WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"})
      if (!has(k))
        throw UsageError(fmt::format("TORCHELASTIC_RUN_ID is set (a torchrun worker) but {} is not", k));
    j.nnodes = env_int(env, "GROUP_WORLD_SIZE", 1, kMaxNodes);
    j.node_rank = env_int(env, "GROUP_RANK", 0, kMaxNodes - 1);
    j.local_rank = env_int(env, "LOCAL_RANK", 0, 1 << 20);
    j.ranks_per_node = env_int(env, "LOCAL_WORLD_SIZE", 1, 1 << 20);
    j.notes.push_back("node rank and count from torchrun's GROUP_RANK/GROUP_WORLD_SIZE");
  } else if (has("NODE_RANK") || has("NNODES")) {
    j.launcher = "env";
    if (!has("NNODES")) throw UsageError("NODE_RANK is set but NNODES is not: preflight needs the node count");
    j.nnodes = nnodes_value(env, "NNODES");
    j.node_rank = has("NODE_RANK") ? env_int(env, "NODE_RANK", 0, kMaxNodes - 1)
                                    : has("JOB_COMPLETION_INDEX") ? env_int(env, "JOB_COMPLETION_INDEX", 0, kMaxNodes - 1)
                                                                  : -1;
    if (j.node_rank < 0) throw UsageError("NNODES is set but NODE_RANK is not: preflight needs this node's rank");
    if (!has("NODE_RANK")) j.launcher = "k8s-indexed";
    j.notes.push_back(fmt::format("node rank and count from {}/NNODES", has("NODE_RANK") ? "NODE_RANK" : "JOB_COMPLETION_INDEX"));
  } else if (has("PET_NNODES")) {
    j.launcher = "torchrun-env";
    j.nnodes = nnodes_value(env, "PET_NNODES");
    if (!has("PET_NODE_RANK")) throw UsageError("PET_NNODES is set but PET_NODE_RANK is not");
    j.node_rank = env_int(env, "PET_NODE_RANK", 0, kMaxNodes - 1);
    j.notes.push_back("node rank and count from PET_NODE_RANK/PET_NNODES (torchrun's environment form)");
  } else if (has("SLURM_JOB_ID") && has("SLURM_PROCID")) {
    // One task per node (srun --ntasks-per-node=1): the task rank is the node rank. Two tasks
    // on one node are found later (node.distinct), not assumed away here.
    j.launcher = "slurm";
    const std::string ntasks = has("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
    if (!has(ntasks)) throw UsageError("SLURM_PROCID is set but neither SLURM_NTASKS nor SLURM_NPROCS is");
    j.nnodes = env_int(env, ntasks, 1, kMaxNodes);
    j.node_rank = env_int(env, "SLURM_PROCID", 0, kMaxNodes - 1);
    j.notes.push_back("node rank and count from SLURM_PROCID/" + ntasks + " (one task per node)");
  } else if (has("OMPI_COMM_WORLD_RANK")) {
    j.launcher = "mpirun";
    if (!has("OMPI_COMM_WORLD_SIZE")) throw UsageError("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
    j.nnodes = env_int(env, "OMPI_COMM_WORLD_SIZE", 1, kMaxNodes);
    j.node_rank = env_int(env, "OMPI_COMM_WORLD_RANK", 0, kMaxNodes - 1);
    j.notes.push_back("node rank and count from OMPI_COMM_WORLD_RANK/SIZE (mpirun -npernode 1)");
  } else if (has("JOB_COMPLETION_INDEX")) {
    throw UsageError("JOB_COMPLETION_INDEX is set but NNODES is not: preflight needs the node count");
  } else {
    j.launcher = "standalone";
    j.notes.push_back("no launcher variables: one node");
  }
  if (j.node_rank >= j.nnodes)
    throw UsageError(fmt::format("node rank {} is not below the node count {} ({})", j.node_rank, j.nnodes, j.launcher));

  // Ranks per node: the option, else what the launch says.
  if (o.ranks_per_node > 0) {
    j.ranks_per_node = o.ranks_per_node;
  } else if (!j.under_torchrun) {
    if (has("LOCAL_WORLD_SIZE")) {
      j.ranks_per_node = env_int(env, "LOCAL_WORLD_SIZE", 1, 1 << 20);
    } else if (has("PET_NPROC_PER_NODE") && !env.at("PET_NPROC_PER_NODE").empty() &&
               std::isdigit(static_cast<unsigned char>(env.at("PET_NPROC_PER_NODE")[0]))) {
      j.ranks_per_node = env_int(env, "PET_NPROC_PER_NODE", 1, 1 << 20);
    } else if (has("WORLD_SIZE")) {
      const int ws = env_int(env, "WORLD_SIZE", 1, 1 << 24);
      j.ranks_per_node = ws % j.nnodes == 0 ? ws / j.nnodes : 1;
    }
  }
  j.world_size = has("WORLD_SIZE") ? env_int(env, "WORLD_SIZE", 1, 1 << 24) : j.nnodes * j.ranks_per_node;

  if (has("MASTER_ADDR")) {
    j.master_addr = env.at("MASTER_ADDR");
    if (j.master_addr.empty() || j.master_addr.find_first_of(" \t\n/") != std::string::npos)
      throw UsageError(fmt::format("MASTER_ADDR=\"{}\": expected a host name or an address", j.master_addr));
  }
  if (has("MASTER_PORT")) j.master_port = env_int(env, "MASTER_PORT", 1, 65535);
  if (j.nnodes > 1 && j.master_addr.empty())
    throw UsageError(fmt::format("MASTER_ADDR is not set: with {} nodes preflight rendezvous where the job will, at "
                                 "MASTER_ADDR:MASTER_PORT",
                                 j.nnodes));
  if (j.nnodes > 1 && !j.master_port)
    throw UsageError("MASTER_PORT is not set: preflight rendezvous where the job will, at MASTER_ADDR:MASTER_PORT");
  if (j.master_addr.empty() || !j.master_port) j.master_defaulted = true;
  if (j.master_addr.empty()) j.master_addr = "127.0.0.1";
  if (!j.master_port) j.master_port = 29500;  // torch's default (torchrun --master-port)
  j.rdzv_port = j.master_port;
  if (j.under_torchrun) {
    if (o.port <= 0)
      throw UsageError(fmt::format("this is a torchrun worker (TORCHELASTIC_RUN_ID={}): torchrun's agent holds "
                                   "MASTER_PORT {} for its store, so preflight needs a port of its own (--port P), or "
                                   "run it before torchrun",
                                   env.at("TORCHELASTIC_RUN_ID"), j.master_port));
    j.rdzv_port = o.port;
  } else if (o.port > 0) {
    throw UsageError(fmt::format("--port {} is for torchrun workers, whose agent holds MASTER_PORT; here preflight "
                                 "rendezvous at MASTER_PORT {} itself (that is the port check)",
                                 o.port, j.master_port));
  }
  return j;
}

}  // namespace hanglab::preflight
