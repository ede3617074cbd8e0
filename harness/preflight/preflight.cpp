#include "preflight/preflight.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/timex.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "preflight/net_util.hpp"
#include "preflight/node_local.hpp"
#include "preflight/pairwise.hpp"
#include "preflight/python_probe.hpp"
#include "preflight/rendezvous.hpp"
#include "preflight/storage.hpp"
#include "util.hpp"

namespace hanglab::preflight {

using nlohmann::json;

namespace {

const char* const kVersion = "0.1.0";

const char* const kOrder[] = {"shm.capacity",  "shm.removeipc",   "net.ifname",     "host.bind",      "env.lint",
                              "cpu.quota",     "mem.headroom",    "limits.nofile",  "limits.memlock", "gpu.devices",
                              "storage.ckpt",  "master.port",     "master.resolve", "master.reach",   "rendezvous.arrive",
                              "rendezvous.verdict", "node.distinct", "env.agree",   "versions.agree", "clock.offset",
                              "net.reach",     "net.mtu",         "net.loss",       "net.bandwidth",  "collective.smoke"};

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

std::string netns_id() {
  char buf[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/net", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// The kernel's own view of its clock discipline (adjtimex, read-only): reported, not judged.
std::string kernel_clock_sync() {
  timex t{};
  const int st = ::adjtimex(&t);
  if (st < 0) return "";
  if (st == TIME_ERROR) return fmt::format("unsynchronised (adjtimex: no time daemon disciplines it; max error {:.0f} ms)",
                                           t.maxerror / 1000.0);
  return fmt::format("synchronised (max error {:.0f} ms)", t.maxerror / 1000.0);
}

void sort_checks(std::vector<CheckResult>& v) {
  std::stable_sort(v.begin(), v.end(), [](const CheckResult& a, const CheckResult& b) {
    const int oa = check_order(a.name), ob = check_order(b.name);
    return oa != ob ? oa < ob : a.node < b.node;
  });
}

std::string describe_connect_failure(const ConnectResult& c) {
  switch (c.cls) {
    case ConnectClass::kRefused:
      return "refused: nothing listens there (node 0 not started, or a wrong MASTER_PORT or MASTER_ADDR)";
    case ConnectClass::kTimeout:
      return "no answer (" + c.error + "): a firewall or a partition drops the packets, or MASTER_ADDR is a host that is down";
    case ConnectClass::kUnreachable:
      return c.error + ": no route to MASTER_ADDR from here (a wrong address, or this node's network is down)";
    default: return c.error;
  }
}

struct Participant {
  const JobEnv& job;
  const Options& o;
  const NodeCtx& ctx;
  double t0, T;
  double at(double f) const { return t0 + f * T; }

  std::vector<CheckResult> checks;  // what this node found while taking part (master.*, smoke)
  std::optional<json> verdict;
  bool arrived = false;

  void fail(const std::string& name, const std::string& measured, const std::string& rule, const std::string& detail) {
    CheckResult r = ctx.result(name);
    r.status = Status::kFail;
    r.measured = measured;
    r.rule = rule;
    r.detail = detail;
    checks.push_back(r);
  }

  void run(const json& hello_in, const PeerEndpoint& self, bool node0_serving, const Resolved& mr) {
    const std::string desc = fmt::format("{}:{}", job.master_addr, job.rdzv_port);
    if (!mr.error.empty()) {
      fail("master.resolve", fmt::format("{} does not resolve here: {}", job.master_addr, mr.error),
           "MASTER_ADDR resolves on every node",
           "the job's ranks on this node cannot find the store: they retry name resolution until the rendezvous times out");
      return;
    }
    std::vector<std::string> targets = mr.addrs;
    if (job.node_rank == 0) {
      if (!node0_serving) return;  // the port check failed: there is nothing of ours to reach
      const auto mine = local_addresses();
      const bool local = std::any_of(targets.begin(), targets.end(), [&](const std::string& a) {
        return std::find(mine.begin(), mine.end(), a) != mine.end();
      });
      // MASTER_ADDR points away from node 0 (master.resolve says so from the gathered hellos):
      // still deliver this node's results to its own server.
      if (!local) targets = {"127.0.0.1"};
    }
    // Connect as the job's ranks will, retrying while node 0 may still be starting. A hello that
    // gets no welcome within kHelloWindowS is said again on a new connection: on a lossy link one
    // connection's retransmissions back off (1, 2, 4 s: a segment lost three times in a row costs
    // 7 s), a new connection starts over, and node 0 takes the same process's second hello as its
    // reconnect (Server::run). A listener that accepts and never answers is still named below.
    constexpr double kHelloWindowS = 2.0;
    ConnectResult last;
    int attempts = 0, hellos = 0;
    std::optional<LineConn> conn;
    std::optional<json> welcome;
    std::string err;
    double t1 = 0, t4 = 0, first_hello = 0;
    while (left_s(at(0.6)) > 0 && !welcome) {
      for (const auto& a : targets) {
        ++attempts;
        last = tcp_connect(a, job.rdzv_port, std::min(2.0, std::max(0.05, left_s(at(0.6)))), kRendezvousMss);
        if (last.cls == ConnectClass::kOk) break;
      }
      if (last.cls != ConnectClass::kOk) {
        if (last.cls != ConnectClass::kTimeout) ::usleep(100000);
        continue;
      }
      conn.emplace(last.fd);
      json hello = hello_in;
      t1 = unix_now();
      if (!first_hello) first_hello = t1;
      hello["t1"] = t1;
      ++hellos;
      err.clear();
      const double window = std::min(at(0.6), mono_now() + kHelloWindowS);
      if (conn->send(hello, window)) welcome = conn->recv(std::max(window, mono_now() + 0.5), &err);
      t4 = unix_now();
      if (welcome && welcome->value("type", "") != "welcome") break;  // something else answers there
      if (!welcome) conn->close();
    }
    const std::string rule = fmt::format("connects to {} and preflight answers there", desc);
    if (!conn) {
      fail("master.reach", fmt::format("{} after {} attempt{} in {:.1f} s", connect_class_name(last.cls), attempts,
                                       attempts == 1 ? "" : "s", mono_now() - t0),
           rule, describe_connect_failure(last));
      return;
    }
    if (!welcome || welcome->value("type", "") != "welcome") {
      fail("master.reach",
           err == "no answer in time" || (!welcome && err.empty())
               ? fmt::format("accepted, no answer in {:.1f} s ({} hello{})", t4 - first_hello, hellos,
                             hellos == 1 ? "" : "s")
               : fmt::format("accepted, then {}", err.empty() ? "an unexpected message" : err),
           rule,
           err == "no answer in time"
               ? "a process on node 0 accepts connections on the port and never answers: a stale listener (an earlier "
                 "job's store or server) holds MASTER_PORT, or node 0 is stuck. The job's ranks would connect to it "
                 "and wait until their timeout"
               : "something other than preflight answers at MASTER_ADDR:MASTER_PORT");
      return;
    }
    arrived = true;
    const double t2 = welcome->value("t2", t1), t3 = welcome->value("t3", t4);
    const json clock = {{"offset_s", ((t2 - t1) + (t3 - t4)) / 2}, {"err_s", std::max(0.0, ((t4 - t1) - (t3 - t2)) / 2)}};
    CheckResult reach = ctx.result("master.reach");
    reach.measured = fmt::format("connected to {}:{} and answered in {:.1f} ms", last.fd >= 0 ? targets.front() : "?",
                                 job.rdzv_port, (t4 - t1) * 1000);
    if (hellos > 1)
      reach.measured += fmt::format(" (hello {} on a new connection, {:.1f} s after the first: the earlier ones "
                                    "stalled)",
                                    hellos, t1 - first_hello);
    reach.rule = rule;
    checks.push_back(reach);

    auto roster = conn->recv(at(0.75), &err);
    if (!roster || roster->value("type", "") != "roster") {
      fail("rendezvous.verdict", "no list of nodes from node 0", "node 0 sends the roster by its arrival deadline",
           "node 0 stopped answering after the hello");
      return;
    }
    const double probe_end = std::min(at(0.85), mono_now() + roster->value("probe_s", 1.0));
    std::vector<PeerEndpoint> peers;
    for (const auto& e : roster->value("nodes", json::array())) peers.push_back(endpoint_from_json(e));
    // --smoke: the collective runs while the probes do.
    ChildRun smoke;
    std::string smoke_err;
    const int smoke_port = roster->value("smoke_port", 0);
    if (o.smoke && smoke_port > 0)
      smoke.start(smoke_argv(o.python, job.backend, job.master_addr, smoke_port, job.node_rank, job.nnodes,
                             std::max(1.0, probe_end - mono_now() - 0.5)),
                  smoke_err);
    std::vector<PairResult> pairs(peers.size());
    std::vector<std::thread> threads;
    std::vector<int> order;
    for (const auto& p : peers) order.push_back(p.node);
    std::sort(order.begin(), order.end());
    int next = -1;  // the ring neighbour for --bandwidth-s
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i] == job.node_rank && order.size() > 1) next = order[(i + 1) % order.size()];
    for (size_t i = 0; i < peers.size(); ++i) {
      if (peers[i].node == job.node_rank) continue;
      threads.emplace_back([&, i] { pairs[i] = probe_peer(self, peers[i], o, peers[i].node == next, probe_end); });
    }
    for (auto& t : threads) t.join();
    json jpairs = json::array();
    for (size_t i = 0; i < peers.size(); ++i)
      if (peers[i].node != job.node_rank) jpairs.push_back(to_json(pairs[i]));
    json smoke_json;
    if (o.smoke) {
      int status = 127;
      std::string serr;
      const std::string sout = smoke.started() ? smoke.finish(probe_end, status, &serr) : std::string();
      smoke_json = {{"status", status},
                    {"out", sout.substr(0, 2000)},
                    {"err", (smoke.started() ? serr : smoke_err).substr(serr.size() > 2000 ? serr.size() - 2000 : 0)}};
    }
    json checks_json = json::array();
    for (const auto& c : checks) checks_json.push_back(to_json(c));
    conn->send({{"type", "report"}, {"node", job.node_rank}, {"pairs", jpairs}, {"clock", clock}, {"checks", checks_json},
               {"smoke", smoke_json}},
              at(0.9));
    verdict = conn->recv(at(0.97), &err);
    if (verdict && verdict->value("type", "") != "verdict") verdict.reset();
    if (!verdict)
      fail("rendezvous.verdict", "no verdict from node 0", "node 0 answers with the job's verdict before the deadline",
           "node 0 stopped answering after the probes");
  }
};

CheckResult smoke_result(int node, const std::string& host, const json& s, const std::string& backend, double at_s) {
  CheckResult r;
  r.name = "collective.smoke";
  r.node = node;
  r.host = host;
  r.at_s = at_s;
  r.rule = fmt::format("init_process_group({}) with the job's environment, all_reduce of 1 element and 1 MiB, barrier",
                       backend);
  const int status = s.value("status", 127);
  json res = json::parse(s.value("out", ""), nullptr, false);
  if (status == 0 && res.is_object() && res.value("ok", false)) {
    r.measured = fmt::format("passed: torch import {:.1f} s, collectives {:.2f} s", res.value("import_s", 0.0),
                             res.value("collective_s", 0.0));
    return r;
  }
  const std::string err = s.value("err", "");
  std::string last;
  for (std::istringstream in(err); std::getline(in, last);) {
  }
  const bool no_torch = err.find("No module named 'torch'") != std::string::npos;
  if (no_torch || status == 127) {
    r.status = Status::kSkip;
    r.needs = "torch in --python";
    r.measured = no_torch ? "torch is not installed for --python" : "--python could not be run";
    return r;
  }
  if (backend == "nccl" && err.find("CUDA") != std::string::npos && err.find("available") != std::string::npos) {
    r.status = Status::kSkip;
    r.needs = "a GPU";
    r.measured = "no CUDA device for the nccl smoke test";
    return r;
  }
  r.status = Status::kFail;
  r.measured = status == -1 ? "did not finish before the deadline" : fmt::format("exit {}: {}", status, last.substr(0, 200));
  r.detail = "the job's backend could not complete a collective across the nodes with the job's environment";
  return r;
}

}  // namespace

int check_order(const std::string& name) {
  for (size_t i = 0; i < std::size(kOrder); ++i)
    if (name == kOrder[i]) return static_cast<int>(i);
  return static_cast<int>(std::size(kOrder));
}

bool is_check_name(const std::string& name) { return check_order(name) < static_cast<int>(std::size(kOrder)); }

std::vector<std::string> check_names() { return {std::begin(kOrder), std::end(kOrder)}; }

int run_preflight(const Options& o, const std::map<std::string, std::string>& env, std::ostream& out,
                  std::ostream& err) {
  const double t0 = mono_now();
  const double T = o.deadline_s;
  auto at = [&](double f) { return t0 + f * T; };
  JobEnv job;
  try {
    job = resolve_job(env, o);
  } catch (const UsageError& e) {
    err << "hanglab preflight: " << e.what() << "\n";
    return 2;
  }
  char hn[256] = {};
  ::gethostname(hn, sizeof hn - 1);
  const std::string host = hn;
  if (job.under_torchrun && job.local_rank != 0) {
    out << fmt::format("hanglab preflight: node{} local rank {}: preflight runs once per node, on LOCAL_RANK 0\n",
                       job.node_rank, job.local_rank);
    return 0;
  }
  NodeCtx ctx{job, o, host, t0, ""};
  std::vector<CheckResult> local;

  // Node 0: the rendezvous port, first, so the other nodes find it bound.
  std::optional<PortBind> bind;
  if (job.node_rank == 0) {
    bind = bind_rendezvous_port(job.rdzv_port, std::min(1.0, 0.05 * T));
    CheckResult r = ctx.result("master.port");
    r.rule = fmt::format("port {} free on node 0 for the store (SO_REUSEADDR, every address)", job.rdzv_port);
    if (job.under_torchrun) {
      r.measured = fmt::format("MASTER_PORT {} held by torchrun's agent store; preflight rendezvous at --port {}",
                               job.master_port, job.rdzv_port);
    } else {
      r.measured = fmt::format("port {}{}", job.rdzv_port, job.master_defaulted ? " (torch's default: MASTER_PORT unset)" : "");
    }
    if (bind->fd < 0) {
      r.status = Status::kFail;
      r.measured = fmt::format("port {}: {}{}", job.rdzv_port, std::strerror(bind->err),
                               bind->holder.empty() ? "" : ", held by " + bind->holder);
      r.detail = bind->err == EADDRINUSE
                     ? fmt::format("the holder {}. The job's store cannot start here (\"Address already in use\") and "
                                   "the other ranks would connect to the holder and wait",
                                   bind->behaviour)
                     : "the job's store could not listen on this port either";
    } else {
      r.measured += "; free, now held by preflight until the verdict";
    }
    local.push_back(r);
  }

  // The Python probe first: it runs while the storage probe (which may use up its whole bound on
  // slow storage) and the other checks do. posix_spawn starts no thread here.
  ChildRun versions;
  std::string verr;
  versions.start(versions_argv(o.python), verr);

  // The storage probe forks: before any thread exists.
  const double storage_timeout = std::max(0.5, std::min(o.ckpt_budget_s, 0.3 * T));
  if (!o.ckpt_dir.empty()) {
    try {
      const StorageProbe p = probe_storage(o.ckpt_dir, o, storage_timeout);
      local.push_back(judge_storage(ctx, p, storage_timeout));
    } catch (const UsageError& e) {
      err << "hanglab preflight: " << e.what() << "\n";
      return 2;
    }
  }

  const auto ifaces = list_interfaces();
  const Resolved hostres = resolve_host(host, std::min(2.0, 0.1 * T));
  const ChosenIface chosen = choose_interface(job, ifaces, hostres);
  PeerEndpoint self{job.node_rank, host, chosen.name, chosen.addr, 0, 0, chosen.mtu};
  ProbeServer probes;
  if (job.nnodes > 1 && !chosen.addr.empty()) {
    std::string perr;
    if (!probes.start(chosen.addr, job.node_rank, perr)) self.addr.clear();
    self.tcp_port = probes.tcp_port();
    self.udp_port = probes.udp_port();
  }
  for (auto& r : node_local_checks(ctx, ifaces, hostres, chosen)) local.push_back(std::move(r));
  int vstatus = 127;
  std::string vstderr;
  const std::string vout = versions.started() ? versions.finish(at(0.45), vstatus, &vstderr) : "";
  json vers = parse_versions(vout, vstatus, o.python, versions.started() ? vstderr : verr);
  vers["hanglab"] = kVersion;

  // Node 0 serves the rendezvous; its judge assembles the job's report.
  std::mutex mu;
  Report job_report;
  bool job_report_ready = false;
  std::unique_ptr<Server> server;
  const std::string master_desc = fmt::format("{}:{}", job.master_addr, job.rdzv_port);
  auto base_report = [&](Report& r) {
    r.nodes = job.nnodes;
    r.reporting_node = job.node_rank;
    r.master = master_desc;
    r.world_size = job.world_size;
    r.ranks_per_node = job.ranks_per_node;
    r.backend = job.backend;
    r.ifname = chosen.var.empty() ? chosen.name + (chosen.name.empty() ? "" : " (default)") : chosen.var + "=" + chosen.name;
    r.launcher = job.launcher;
    r.deadline_s = T;
  };
  if (bind && bind->fd >= 0) {
    ServerConfig cfg;
    cfg.nnodes = job.nnodes;
    cfg.arrive_deadline = at(0.55);
    cfg.report_deadline = at(0.88);
    cfg.bandwidth = o.bandwidth_s > 0;
    if (o.smoke) {
      // A free port for torch's store on node 0 (bound and released: the store binds it next).
      int e = 0;
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      socklen_t len = sizeof a;
      if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        cfg.smoke_port = ntohs(a.sin_port);
      (void)e;
      if (fd >= 0) ::close(fd);
    }
    auto judge = [&](const Gathered& g) {
      Report r;
      base_report(r);
      const double at_s = mono_now() - t0;
      for (const auto& [n, h] : g.hellos)
        for (const auto& c : h.value("checks", json::array())) r.checks.push_back(check_from_json(c));
      for (const auto& [n, rep] : g.reports)
        for (const auto& c : rep.value("checks", json::array())) r.checks.push_back(check_from_json(c));
      for (auto& c : judge_agreement(g, job.nnodes, master_desc, g.arrive_wait_s, at_s)) r.checks.push_back(std::move(c));
      if (job.nnodes > 1) {
        std::vector<PeerEndpoint> eps;
        std::vector<PairResult> pairs;
        for (const auto& [n, h] : g.hellos) {
          eps.push_back(endpoint_from_json(h.value("endpoint", json::object())));
          if (eps.back().addr.empty())
            r.not_run.push_back({"net.*", fmt::format("node{}: no address on its chosen interface (net.ifname)", n)});
          if (!g.reports.count(n)) r.not_run.push_back({"net.*", fmt::format("node{}: it did not report its probes in time", n)});
        }
        for (const auto& [n, rep] : g.reports)
          for (const auto& p : rep.value("pairs", json::array())) pairs.push_back(pair_from_json(p));
        for (auto& c : judge_pairs(pairs, eps, o, at_s)) r.checks.push_back(std::move(c));
      } else {
        r.not_run.push_back({"net.*", "one node: no peer to probe"});
      }
      if (o.smoke)
        for (const auto& [n, rep] : g.reports)
          r.checks.push_back(smoke_result(n, g.hellos.count(n) ? g.hellos.at(n).value("host", "") : "",
                                          rep.value("smoke", json::object()), job.backend, at_s));
      for (const auto& s : g.strangers) {
        CheckResult c;
        c.name = "master.port";
        c.node = 0;
        c.host = host;
        c.status = Status::kWarn;
        c.measured = s;
        c.rule = "only this job's nodes connect to the rendezvous port";
        c.detail = "another process connected to MASTER_PORT during preflight: another job (or an earlier one's rank) "
                   "uses the same address and port";
        c.at_s = at_s;
        r.checks.push_back(c);
      }
      if (o.ckpt_dir.empty()) r.not_run.push_back({"storage.ckpt", "no --ckpt-dir"});
      sort_checks(r.checks);
      r.elapsed_s = mono_now() - t0;
      std::lock_guard<std::mutex> lk(mu);
      job_report = r;
      job_report_ready = true;
      return json{{"exit_code", r.exit_code()}, {"failed", r.failed()}, {"warnings", r.warned()},
                  {"skipped", r.skipped()}, {"checks", r.checks.size()}, {"elapsed_s", r.elapsed_s}};
    };
    server = std::make_unique<Server>(bind->fd, cfg, [&, judge](const Gathered& g) {
      try {
        return judge(g);
      } catch (const std::exception& e) {
        // A node sent a message of the right type with the wrong shape (another hanglab version,
        // or not preflight at all): the job's report says so instead of node 0 dying.
        Report r;
        base_report(r);
        CheckResult c;
        c.name = "rendezvous.verdict";
        c.host = host;
        c.status = Status::kFail;
        c.measured = std::string("a malformed message from a node: ") + e.what();
        c.rule = "every node speaks this preflight's protocol (same hanglab version)";
        c.at_s = mono_now() - t0;
        r.checks.push_back(c);
        r.elapsed_s = c.at_s;
        std::lock_guard<std::mutex> lk(mu);
        job_report = r;
        job_report_ready = true;
        return json{{"exit_code", 1}, {"failed", 1}, {"warnings", 0}, {"skipped", 0}, {"checks", 1}};
      }
    });
  }

  // Every node, node 0 included, takes part through MASTER_ADDR:MASTER_PORT.
  json local_json = json::array();
  for (const auto& c : local) local_json.push_back(to_json(c));
  json hello = {{"type", "hello"},
                {"node", job.node_rank},
                {"nnodes", job.nnodes},
                {"host", host},
                {"pid", ::getpid()},
                {"boot_id", first_line("/proc/sys/kernel/random/boot_id")},
                {"netns", netns_id()},
                {"master_addr", job.master_addr},
                {"local_addrs", local_addresses()},
                {"endpoint", to_json(self)},
                {"env", agreed_env(job)},
                {"versions", vers},
                {"clock_sync", kernel_clock_sync()},
                {"checks", local_json}};
  const Resolved mr = resolve_host(job.master_addr, std::min(5.0, left_s(at(0.5))));
  hello["resolved"] = mr.addrs;
  Participant part{job, o, ctx, t0, T};
  part.run(hello, self, server != nullptr, mr);
  probes.stop();
  if (server) server->join();

  // The report this node prints.
  Report mine;
  base_report(mine);
  mine.whole_job = false;
  mine.checks = local;
  for (const auto& c : part.checks) mine.checks.push_back(c);
  sort_checks(mine.checks);
  if (o.ckpt_dir.empty()) mine.not_run.push_back({"storage.ckpt", "no --ckpt-dir"});
  mine.elapsed_s = mono_now() - t0;
  mine.delivered = part.verdict.has_value();
  mine.job_exit_code = part.verdict ? part.verdict->value("exit_code", 1) : -1;
  Report shown;
  {
    std::lock_guard<std::mutex> lk(mu);
    shown = job_report_ready ? job_report : mine;
  }
  if (job_report_ready) shown.elapsed_s = mono_now() - t0;
  int code = job_report_ready ? shown.exit_code() : part.verdict ? part.verdict->value("exit_code", 1) : mine.exit_code();
  if (!job_report_ready && !part.verdict && code == 0) code = 1;  // nothing came back: not a pass

  auto render_as = [&](const Report& r, const std::string& format) {
    return format == "json" ? to_json(r).dump(2) + "\n" : format == "junit" ? render_junit(r) : render_text(r);
  };
  auto render = [&](const Report& r) { return render_as(r, o.format); };
  // --out takes its format from its name where that says one (.json, .xml): text for people on the
  // console, the JSON or JUnit file for the machines, in one run.
  const auto ends = [&](const std::string& suf) {
    return o.out.size() >= suf.size() && o.out.compare(o.out.size() - suf.size(), suf.size(), suf) == 0;
  };
  const std::string out_format = ends(".json") ? "json" : ends(".xml") ? "junit" : o.format;
  const bool own_line_only = !job_report_ready && part.verdict && o.format == "text";
  if (own_line_only) {
    out << fmt::format("hanglab preflight: node{} ({}): {} own checks reported to node 0 at {}; the job: {} (exit {}: {} "
                       "failed, {} warnings, {} skipped; node 0 prints the report)\n",
                       job.node_rank, host, mine.checks.size(), master_desc,
                       code == 0 ? "PASS" : code == 4 ? "SKIPPED" : "FAIL", code, part.verdict->value("failed", 0),
                       part.verdict->value("warnings", 0), part.verdict->value("skipped", 0));
  } else {
    out << render(job_report_ready ? shown : mine);
  }
  out.flush();
  if (!o.out.empty()) {
    std::string path = o.out;
    const auto ph = path.find("{node}");
    if (ph != std::string::npos) path.replace(ph, 6, std::to_string(job.node_rank));
    if (job.node_rank == 0 || ph != std::string::npos) {
      try {
        write_file(path, render_as(job_report_ready ? shown : mine, out_format));
      } catch (const std::exception& e) {
        err << "hanglab preflight: --out " << path << ": " << e.what() << "\n";
      }
    }
  }
  return code;
}

}  // namespace hanglab::preflight
