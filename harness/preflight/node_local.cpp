#include "preflight/node_local.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "preflight/env_lint.hpp"
#include "util.hpp"

namespace hanglab::preflight {

namespace {

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<long long> read_ll(const std::string& path) {
  auto s = slurp(path);
  if (!s) return std::nullopt;
  char* end = nullptr;
  const long long v = std::strtoll(s->c_str(), &end, 10);
  if (end == s->c_str()) return std::nullopt;
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

// A cgroup hierarchy this process belongs to: where it is mounted and the process's directory.
struct CgroupDir {
  bool v2 = false;
  std::string mount;  // mount point (without root prefix)
  std::string dir;    // the process's group directory (without root prefix)
};

// Finds the process's group in the hierarchy holding `controller` (v1), else the unified one.
std::optional<CgroupDir> cgroup_dir(const std::string& root, const std::string& controller) {
  auto cg = slurp(root + "/proc/self/cgroup");
  auto mi = slurp(root + "/proc/self/mountinfo");
  if (!cg || !mi) return std::nullopt;
  std::string v1_path, v2_path;
  bool have_v1 = false, have_v2 = false;
  for (const auto& line : split(*cg, '\n')) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.substr(0, a) == "0" && ctrls.empty()) {
      have_v2 = true;
      v2_path = path;
    }
    for (const auto& c : split(ctrls, ','))
      if (c == controller) {
        have_v1 = true;
        v1_path = path;
      }
  }
  // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
  for (const auto& line : split(*mi, '\n')) {
    std::istringstream in(line);
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    const size_t di = static_cast<size_t>(std::find(f.begin(), f.end(), "-") - f.begin());
    if (f.size() < 5 || di + 1 >= f.size()) continue;
    const std::string fstype = f[di + 1], super = di + 3 < f.size() ? f[di + 3] : "";
    const std::string mroot = f[3], mpoint = f[4];
    auto inside = [&](const std::string& p) {
      // The process's path relative to what is mounted there (a container sees its own group as /).
      std::string rel = p.rfind(mroot, 0) == 0 ? p.substr(mroot == "/" ? 0 : mroot.size()) : p;
      return mpoint + (rel == "/" ? "" : rel);
    };
    if (have_v1 && fstype == "cgroup") {
      for (const auto& o : split(super, ','))
        if (o == controller) return CgroupDir{false, mpoint, inside(v1_path)};
    }
    if (!have_v1 && have_v2 && fstype == "cgroup2") return CgroupDir{true, mpoint, inside(v2_path)};
  }
  return std::nullopt;
}

// The directories from the process's group up to the hierarchy's root.
std::vector<std::string> up_the_tree(const CgroupDir& d) {
  std::vector<std::string> out;
  std::string p = d.dir;
  for (;;) {
    out.push_back(p);
    if (p.size() <= d.mount.size()) break;
    const auto slash = p.rfind('/');
    if (slash == std::string::npos || slash < d.mount.size()) break;
    p = p.substr(0, slash);
    if (p.size() < d.mount.size()) p = d.mount;
  }
  return out;
}

std::string fmt_cpus(double c) { return std::fabs(c - std::round(c)) < 1e-9 ? fmt::format("{:.0f}", c) : fmt::format("{:.2f}", c); }

}  // namespace

CheckResult NodeCtx::result(const std::string& name) const {
  CheckResult r;
  r.name = name;
  r.node = job.node_rank;
  r.host = host;
  r.at_s = mono_now() - t0;
  return r;
}

double effective_cpus(const std::string& root, int affinity, std::string& how) {
  double cpus = affinity;
  how = fmt::format("{} CPUs in the affinity mask", affinity);
  auto d = cgroup_dir(root, "cpu");
  if (!d) return cpus;
  for (const auto& dir : up_the_tree(*d)) {
    double limit = -1;
    std::string what;
    if (d->v2) {
      auto s = slurp(root + dir + "/cpu.max");
      if (s && s->rfind("max", 0) != 0) {
        std::istringstream in(*s);
        double q = 0, p = 0;
        if (in >> q >> p && q > 0 && p > 0) {
          limit = q / p;
          what = fmt::format("cpu.max \"{:.0f} {:.0f}\" of {}", q, p, dir);
        }
      }
    } else {
      auto q = read_ll(root + dir + "/cpu.cfs_quota_us"), p = read_ll(root + dir + "/cpu.cfs_period_us");
      if (q && p && *q > 0 && *p > 0) {
        limit = static_cast<double>(*q) / static_cast<double>(*p);
        what = fmt::format("cpu.cfs_quota_us {} / cpu.cfs_period_us {} of {}", *q, *p, dir);
      }
    }
    if (limit > 0 && limit < cpus) {
      cpus = limit;
      how = "CFS quota " + what;
    }
  }
  return cpus;
}

std::optional<double> cgroup_memory_headroom(const std::string& root, std::string& how) {
  auto d = cgroup_dir(root, "memory");
  if (!d) return std::nullopt;
  std::optional<double> best;
  for (const auto& dir : up_the_tree(*d)) {
    std::optional<long long> lim, use;
    if (d->v2) {
      auto s = slurp(root + dir + "/memory.max");
      if (s && s->rfind("max", 0) != 0) lim = read_ll(root + dir + "/memory.max");
      use = read_ll(root + dir + "/memory.current");
    } else {
      lim = read_ll(root + dir + "/memory.limit_in_bytes");
      use = read_ll(root + dir + "/memory.usage_in_bytes");
      if (lim && *lim >= (1ll << 60)) lim.reset();  // v1's "no limit" is a page-rounded LLONG_MAX
    }
    if (!lim || !use) continue;
    const double room = static_cast<double>(*lim - *use);
    if (!best || room < *best) {
      best = room;
      how = fmt::format("limit {} - usage {} of {}", human_bytes(static_cast<double>(*lim)),
                        human_bytes(static_cast<double>(*use)), dir);
    }
  }
  return best;
}

std::optional<double> mem_available(const std::string& root) {
  auto s = slurp(root + "/proc/meminfo");
  if (!s) return std::nullopt;
  const auto p = s->find("MemAvailable:");
  if (p == std::string::npos) return std::nullopt;
  return std::atof(s->c_str() + p + 13) * 1024;
}

bool logind_remove_ipc(const std::string& root, std::string& where) {
  bool value = true;
  where = "systemd's default (yes)";
  auto apply = [&](const std::string& file) {
    auto s = slurp(root + file);
    if (!s) return;
    bool in_login = false;
    for (auto line : split(*s, '\n')) {
      line.erase(0, line.find_first_not_of(" \t"));
      if (line.empty() || line[0] == '#' || line[0] == ';') continue;
      if (line[0] == '[') {
        in_login = line.rfind("[Login]", 0) == 0;
        continue;
      }
      if (!in_login || line.rfind("RemoveIPC", 0) != 0) continue;
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      std::string v = line.substr(eq + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      v = v.substr(0, v.find_last_not_of(" \t\r") + 1);
      value = v == "yes" || v == "true" || v == "1" || v == "on";
      where = file + ": RemoveIPC=" + v;
    }
  };
  apply("/etc/systemd/logind.conf");
  // Drop-ins from every directory, ordered by file name (systemd.unit(5) "drop-in" rules).
  std::map<std::string, std::string> dropins;
  for (const char* dir : {"/usr/lib/systemd/logind.conf.d", "/run/systemd/logind.conf.d", "/etc/systemd/logind.conf.d"}) {
    if (DIR* dp = ::opendir((root + dir).c_str())) {
      while (dirent* e = ::readdir(dp)) {
        const std::string n = e->d_name;
        if (n.size() > 5 && n.substr(n.size() - 5) == ".conf") dropins[n] = std::string(dir) + "/" + n;
      }
      ::closedir(dp);
    }
  }
  for (const auto& [n, path] : dropins) apply(path);
  return value;
}

ChosenIface choose_interface(const JobEnv& job, const std::vector<Interface>& ifaces, const Resolved& hostname) {
  ChosenIface c;
  auto usable = [](const Interface& i) { return i.up && (!i.ipv4.empty() || !i.ipv6.empty()); };
  auto pick = [&](const Interface& i) {
    c.name = i.name;
    c.mtu = i.mtu;
    c.addr = !i.ipv4.empty() ? i.ipv4.front() : !i.ipv6.empty() ? i.ipv6.front() : "";
  };
  const auto env = [&](const char* k) -> const std::string* {
    auto it = job.env.find(k);
    return it == job.env.end() || it->second.empty() ? nullptr : &it->second;
  };
  if (job.backend == "gloo" && env("GLOO_SOCKET_IFNAME")) {
    c.var = "GLOO_SOCKET_IFNAME";
    const auto names = gloo_ifnames(*env("GLOO_SOCKET_IFNAME"));
    for (const auto& i : ifaces)
      if (!names.empty() && i.name == names.front()) pick(i);
    if (c.name.empty()) c.problem = fmt::format("GLOO_SOCKET_IFNAME={}: no interface {}", *env("GLOO_SOCKET_IFNAME"),
                                                names.empty() ? std::string("(empty)") : names.front());
    else if (c.addr.empty()) c.problem = fmt::format("{} has no address", c.name);
    return c;
  }
  if (job.backend == "nccl") {
    std::vector<std::string> names;
    for (const auto& i : ifaces) names.push_back(i.name);
    std::vector<std::string> match;
    if (env("NCCL_SOCKET_IFNAME")) {
      c.var = "NCCL_SOCKET_IFNAME";
      match = nccl_ifname_matches(*env("NCCL_SOCKET_IFNAME"), names);
    } else {
      match = nccl_ifname_matches("^docker,lo", names);  // NCCL's default selection
    }
    for (const auto& n : match)
      for (const auto& i : ifaces)
        if (i.name == n && usable(i) && c.name.empty()) pick(i);
    if (c.name.empty())
      c.problem = c.var.empty() ? "no interface other than lo/docker* is up with an address"
                                : fmt::format("NCCL_SOCKET_IFNAME={} selects no interface that is up with an address",
                                              *env("NCCL_SOCKET_IFNAME"));
    return c;
  }
  // Gloo without GLOO_SOCKET_IFNAME binds the address its host name resolves to.
  if (hostname.addrs.empty()) {
    c.problem = "the host name does not resolve (" + hostname.error + ")";
    return c;
  }
  c.addr = hostname.addrs.front();
  for (const auto& i : ifaces)
    for (const auto& a : i.ipv4.empty() ? i.ipv6 : i.ipv4)
      if (a == c.addr) {
        c.name = i.name;
        c.mtu = i.mtu;
      }
  if (c.name.empty()) c.problem = "the host name resolves to " + c.addr + ", which no interface here holds";
  return c;
}

ShmNeed shm_need(const JobEnv& job, const Options& opt) {
  ShmNeed n;
  std::vector<std::string> parts;
  if (opt.loader_workers > 0 && opt.batch_bytes > 0) {
    // A DataLoader worker hands each batch over in a /dev/shm segment; prefetch_factor batches
    // per worker are in flight at once.
    const double loader = static_cast<double>(job.ranks_per_node) * opt.loader_workers * opt.prefetch *
                          static_cast<double>(opt.batch_bytes);
    n.bytes += loader;
    n.known = true;
    parts.push_back(fmt::format("{} rank{} x {} worker{} x prefetch {} x {} batch", job.ranks_per_node,
                                job.ranks_per_node == 1 ? "" : "s", opt.loader_workers, opt.loader_workers == 1 ? "" : "s",
                                opt.prefetch, human_bytes(static_cast<double>(opt.batch_bytes))));
  }
  if (job.backend == "nccl" && job.ranks_per_node > 1) {
    // NCCL's shared-memory transport: a buffer of NCCL_BUFFSIZE (4 MiB) per peer on the node, each way.
    double buff = 4 << 20;
    if (auto it = job.env.find("NCCL_BUFFSIZE"); it != job.env.end()) buff = std::atof(it->second.c_str());
    const double nccl = job.ranks_per_node * (job.ranks_per_node - 1.0) * 2 * buff;
    n.bytes += nccl;
    n.known = true;
    parts.push_back(fmt::format("NCCL {} x {} peers x 2 x {}", job.ranks_per_node, job.ranks_per_node - 1,
                                human_bytes(buff)));
  }
  n.formula = parts.empty() ? "nothing of the job's known to need it: no --loader-workers/--batch-bytes, backend " + job.backend
                            : fmt::format("{}", fmt::join(parts, " + "));
  return n;
}

namespace {

CheckResult check_shm(const NodeCtx& ctx) {
  CheckResult r = ctx.result("shm.capacity");
  const ShmNeed need = shm_need(ctx.job, ctx.opt);
  struct statvfs sv {};
  if (::statvfs((ctx.root + "/dev/shm").c_str(), &sv) != 0) {
    r.status = need.known ? Status::kFail : Status::kWarn;
    r.measured = "no /dev/shm";
    r.rule = fmt::format(">= {} ({})", human_bytes(need.bytes), need.formula);
    r.detail = "statvfs(/dev/shm) failed: loader workers and NCCL's shared-memory transport have nowhere to put segments";
    return r;
  }
  const double free = static_cast<double>(sv.f_bavail) * sv.f_frsize, total = static_cast<double>(sv.f_blocks) * sv.f_frsize;
  r.measured = fmt::format("{} free of {}", human_bytes(free), human_bytes(total));
  r.rule = fmt::format("free >= {} ({})", human_bytes(need.bytes), need.formula);
  if (free < need.bytes) {
    r.status = Status::kFail;
    r.detail = fmt::format("/dev/shm holds {} but the job puts up to {} there at once: a loader worker dies of SIGBUS "
                           "(\"out of shared memory\") or NCCL fails to extend its segment, and the other ranks wait",
                           human_bytes(free), human_bytes(need.bytes));
  }
  return r;
}

CheckResult check_removeipc(const NodeCtx& ctx) {
  CheckResult r = ctx.result("shm.removeipc");
  r.rule = "RemoveIPC=no where systemd-logind manages this user's sessions (uid >= 1000)";
  const bool systemd = ::access((ctx.root + "/run/systemd/system").c_str(), F_OK) == 0;
  const uid_t uid = ::getuid();
  std::string where;
  const bool on = logind_remove_ipc(ctx.root, where);
  r.measured = fmt::format("{}; uid {}; {}", where, uid, systemd ? "systemd running" : "no systemd");
  if (systemd && uid >= 1000 && on) {
    r.status = Status::kWarn;
    r.detail = "systemd-logind removes this user's shared-memory segments when its last session ends (NCCL's \"unlink "
               "shared memory ... failed\"): set RemoveIPC=no in logind.conf, or run the job as a system user";
  }
  return r;
}

CheckResult check_ifname(const NodeCtx& ctx, const std::vector<Interface>& ifaces) {
  CheckResult r = ctx.result("net.ifname");
  std::vector<std::string> names;
  for (const auto& i : ifaces) names.push_back(i.name);
  std::vector<std::string> found, problems;
  auto judge = [&](const std::string& var, const std::string& n) {
    const Interface* i = nullptr;
    for (const auto& x : ifaces)
      if (x.name == n) i = &x;
    if (!i) {
      problems.push_back(fmt::format("{}: no interface {} (this node has {})", var, n, fmt::join(names, ", ")));
    } else if (!i->up || !i->running) {
      problems.push_back(fmt::format("{}: {} is {}", var, n, !i->up ? "down" : "up without carrier"));
    } else if (i->ipv4.empty() && i->ipv6.empty()) {
      problems.push_back(fmt::format("{}: {} has no address", var, n));
    } else {
      const std::string f = fmt::format("{} {}", n, !i->ipv4.empty() ? i->ipv4.front() : i->ipv6.front());
      if (std::find(found.begin(), found.end(), f) == found.end()) found.push_back(f);
    }
  };
  bool any = false;
  if (auto it = ctx.job.env.find("GLOO_SOCKET_IFNAME"); it != ctx.job.env.end() && !it->second.empty()) {
    any = true;
    for (const auto& n : gloo_ifnames(it->second)) judge("GLOO_SOCKET_IFNAME", n);
  }
  if (auto it = ctx.job.env.find("NCCL_SOCKET_IFNAME"); it != ctx.job.env.end() && !it->second.empty()) {
    any = true;
    const auto match = nccl_ifname_matches(it->second, names);
    if (match.empty()) problems.push_back(fmt::format("NCCL_SOCKET_IFNAME={} matches no interface (this node has {})",
                                                      it->second, fmt::join(names, ", ")));
    size_t before = problems.size(), ok_before = found.size();
    for (const auto& n : match) judge("NCCL_SOCKET_IFNAME", n);
    // NCCL uses whichever matches work: only all of them failing is a problem.
    if (!match.empty() && found.size() > ok_before) problems.resize(before);
  }
  r.rule = "every interface the job names exists, is up with carrier and has an address";
  if (!any) {
    r.measured = "no GLOO_SOCKET_IFNAME or NCCL_SOCKET_IFNAME";
    r.detail = "the backends pick their own interface (host.bind)";
    return r;
  }
  r.measured = found.empty() ? "none usable" : fmt::format("{}", fmt::join(found, ", "));
  if (!problems.empty()) {
    r.status = Status::kFail;
    r.measured = fmt::format("{}", fmt::join(problems, "; "));
    r.detail = "Gloo fails to create its device (\"Unable to find address for\") and NCCL's bootstrap finds no socket "
               "interface: the process group never forms on this node";
  }
  return r;
}

CheckResult check_host_bind(const NodeCtx& ctx, const Resolved& hostname) {
  CheckResult r = ctx.result("host.bind");
  const bool gloo_ifname = ctx.job.env.count("GLOO_SOCKET_IFNAME") && !ctx.job.env.at("GLOO_SOCKET_IFNAME").empty();
  r.rule = "with several nodes and no GLOO_SOCKET_IFNAME, the host name resolves to a non-loopback address of this node";
  if (!hostname.error.empty()) {
    r.measured = fmt::format("{} does not resolve ({})", ctx.host, hostname.error);
  } else {
    r.measured = fmt::format("{} -> {}", ctx.host, fmt::join(hostname.addrs, ", "));
  }
  if (ctx.job.backend != "gloo" || gloo_ifname || ctx.job.nnodes == 1) {
    r.detail = ctx.job.backend != "gloo" ? "NCCL does not bind the host name's address"
               : gloo_ifname             ? "Gloo binds GLOO_SOCKET_IFNAME's address, not the host name's"
                                         : "one node: loopback is enough";
    return r;
  }
  if (!hostname.error.empty()) {
    r.status = Status::kFail;
    r.detail = "Gloo without GLOO_SOCKET_IFNAME binds the address of the host name, which does not resolve here";
    return r;
  }
  const auto local = local_addresses();
  const std::string& a = hostname.addrs.front();
  if (is_loopback_addr(a)) {
    r.status = Status::kFail;
    r.detail = fmt::format("Gloo would bind {} and tell its peers to connect there: they cannot. Set GLOO_SOCKET_IFNAME, "
                           "or map the host name to this node's address in /etc/hosts",
                           a);
  } else if (std::find(local.begin(), local.end(), a) == local.end()) {
    r.status = Status::kFail;
    r.detail = fmt::format("the host name resolves to {}, which is not an address of this node: Gloo cannot bind it", a);
  }
  return r;
}

CheckResult check_cpu(const NodeCtx& ctx) {
  CheckResult r = ctx.result("cpu.quota");
  cpu_set_t set;
  CPU_ZERO(&set);
  int affinity = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  std::string how;
  const double cpus = effective_cpus(ctx.root, affinity, how);
  const int ranks = ctx.job.ranks_per_node;
  const int workers = std::max(0, ctx.opt.loader_workers);
  r.measured = fmt::format("{} CPUs ({})", fmt_cpus(cpus), how);
  r.rule = fmt::format(">= {} (one per rank){}", ranks,
                       workers ? fmt::format("; warn below {} (ranks x (1 + {} loader workers))", ranks * (1 + workers), workers)
                               : std::string());
  if (cpus < ranks) {
    r.status = Status::kFail;
    r.detail = fmt::format("{} ranks share {} CPUs: every rank runs slower than its peers on other nodes, and a "
                           "collective waits for the slowest (throttled ranks turn into timeouts)",
                           ranks, fmt_cpus(cpus));
  } else if (workers && cpus < ranks * (1 + workers)) {
    r.status = Status::kWarn;
    r.detail = fmt::format("the ranks and their {} loader workers each want a CPU: data loading will compete with the "
                           "training step",
                           ranks * workers);
  }
  return r;
}

CheckResult check_memory(const NodeCtx& ctx) {
  CheckResult r = ctx.result("mem.headroom");
  const auto avail = mem_available(ctx.root);
  std::string how;
  const auto cg = cgroup_memory_headroom(ctx.root, how);
  double room = avail ? *avail : 0;
  std::string what = avail ? "MemAvailable " + human_bytes(*avail) : "no MemAvailable";
  if (cg && (!avail || *cg < room)) {
    room = *cg;
    what = "cgroup " + how;
  }
  const double need = static_cast<double>(ctx.job.ranks_per_node) * static_cast<double>(ctx.opt.mem_per_rank);
  r.measured = fmt::format("{} free ({})", human_bytes(room), what);
  r.rule = fmt::format(">= {} ({} ranks x {} per rank, --mem-per-rank)", human_bytes(need), ctx.job.ranks_per_node,
                       human_bytes(static_cast<double>(ctx.opt.mem_per_rank)));
  if (!avail && !cg) {
    r.status = Status::kSkip;
    r.needs = "/proc/meminfo or a memory cgroup";
    r.detail = "no memory figure could be read here";
  } else if (room < need) {
    r.status = Status::kFail;
    r.detail = "the ranks would not fit: the first to grow is OOM-killed and its peers wait in the next collective";
  }
  return r;
}

std::vector<CheckResult> check_limits(const NodeCtx& ctx) {
  std::vector<CheckResult> out;
  rlimit nf{}, ml{};
  ::getrlimit(RLIMIT_NOFILE, &nf);
  ::getrlimit(RLIMIT_MEMLOCK, &ml);
  CheckResult r = ctx.result("limits.nofile");
  // Gloo's full mesh: a pair (socket) per peer rank in each process group, plus node 0's store
  // serving every rank, plus loader workers' pipes and the process's own files.
  const long long ws = ctx.job.world_size;
  const long long need = 2 * ws + (ctx.job.node_rank == 0 ? ws : 0) + 4LL * std::max(0, ctx.opt.loader_workers) + 256;
  r.measured = nf.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : fmt::format("{} (hard {})", nf.rlim_cur, nf.rlim_max);
  r.rule = fmt::format(">= {} (2 x WORLD_SIZE {} sockets{}, loader pipes, 256 for the process)", need, ws,
                       ctx.job.node_rank == 0 ? " + the store's clients" : "");
  if (nf.rlim_cur != RLIM_INFINITY && static_cast<long long>(nf.rlim_cur) < need) {
    r.status = Status::kFail;
    r.detail = "a rank runs out of file descriptors while connecting to its peers (\"Too many open files\") and the "
               "process group never forms";
  }
  out.push_back(r);
  CheckResult m = ctx.result("limits.memlock");
  bool rdma = false;
  if (DIR* d = ::opendir((ctx.root + "/sys/class/infiniband").c_str())) {
    while (dirent* e = ::readdir(d)) rdma = rdma || e->d_name[0] != '.';
    ::closedir(d);
  }
  const double gib16 = 16.0 * (1 << 30);
  m.measured = (ml.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : human_bytes(static_cast<double>(ml.rlim_cur))) +
               (rdma ? "; RDMA devices present" : "; no RDMA device");
  m.rule = "unlimited or >= 16 GiB where NCCL uses RDMA devices";
  if (rdma && ctx.job.backend == "nccl" && ml.rlim_cur != RLIM_INFINITY && static_cast<double>(ml.rlim_cur) < gib16) {
    m.status = Status::kFail;
    m.detail = "NCCL's IB/RoCE transport pins its buffers: registration fails under this limit (ulimit -l unlimited)";
  }
  out.push_back(m);
  return out;
}

CheckResult check_gpu(const NodeCtx& ctx) {
  CheckResult r = ctx.result("gpu.devices");
  int n = 0;
  if (DIR* d = ::opendir((ctx.root + "/dev").c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string s = e->d_name;
      n += s.size() > 6 && s.rfind("nvidia", 0) == 0 &&
           std::all_of(s.begin() + 6, s.end(), [](char c) { return c >= '0' && c <= '9'; });
    }
    ::closedir(d);
  }
  r.measured = fmt::format("{} NVIDIA device node{}", n, n == 1 ? "" : "s");
  r.rule = fmt::format(">= {} (one per rank)", ctx.job.ranks_per_node);
  if (n == 0) {
    r.status = Status::kSkip;
    r.needs = "a GPU";
    r.detail = "backend nccl, and no /dev/nvidia<N> here: run preflight on the GPU nodes";
  } else if (n < ctx.job.ranks_per_node) {
    r.status = Status::kFail;
    r.detail = "two ranks would share a GPU: NCCL refuses (\"Duplicate GPU detected\")";
  }
  return r;
}

}  // namespace

std::vector<CheckResult> node_local_checks(const NodeCtx& ctx, const std::vector<Interface>& ifaces,
                                           const Resolved& hostname, const ChosenIface& /*chosen*/) {
  std::vector<CheckResult> out;
  out.push_back(check_shm(ctx));
  out.push_back(check_removeipc(ctx));
  out.push_back(check_ifname(ctx, ifaces));
  out.push_back(check_host_bind(ctx, hostname));
  out.push_back(lint_env(ctx, ifaces));
  out.push_back(check_cpu(ctx));
  out.push_back(check_memory(ctx));
  for (auto& r : check_limits(ctx)) out.push_back(std::move(r));
  if (ctx.job.backend == "nccl") out.push_back(check_gpu(ctx));
  return out;
}

}  // namespace hanglab::preflight
