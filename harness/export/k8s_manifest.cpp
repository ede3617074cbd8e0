// Why these choices (the header comment of k8s_manifest.hpp says what is built):
//
// - Rendezvous: c10d at pod 0 (<job>-0.<service> for the Indexed Job, the operator's per-replica
//   Service <job>-master-0 for the PyTorchJob), as hanglab's torchrun launcher uses c10d. torch 2.15's
//   torchrun ignores --node-rank under c10d ("node_rank is only used for static rdzv_backend") and
//   numbers the nodes in the sorted order of their addresses (socket.getfqdn(): <job>-<i>.<service>...),
//   so pod i is node rank i for up to 10 pods; the flag is still passed (it states the intent, and a
//   static rendezvous would honour it), and the header says so for N > 10.
// - The built-in workloads serve their own TCPStore on rank 0 at MASTER_ADDR:MASTER_PORT, as
//   init_process_group(env://) does. torch 2.15's c10d rendezvous shares its agent's store with the
//   workers (MASTER_PORT is that store's, TORCHELASTIC_USE_AGENT_STORE=True): rank 0's bind then fails
//   and torch's TCPStore falls back to the agent's ("The server socket on N has failed to bind.
//   TORCHELASTIC_USE_AGENT_STORE is enabled so ignoring the error"), which works (k8s_emulate.py, both
//   ways). TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 is set anyway: rank 0's agent then picks a free port on
//   its host and rank 0 serves the store itself, as under every hanglab launcher (the torchrun one
//   passes hanglab's own MASTER_ADDR/PORT), so a rank 0 that dies takes the store with it, here as
//   there. A bring-your-own command keeps torchrun's agent store, as it would anywhere.
// - Every '$' in literal text is doubled: the kubelet expands $(VAR) in command, args and env values.
// - Restarts: torchrun --max-restarts M restarts the worker group in the pod (what hanglab runs);
//   with M = 0 a failed pod fails the job (restartPolicy Never, backoffLimit 0), as a crash ends a
//   hanglab run; with M > 0 a pod whose torchrun gave up or died restarts in place (OnFailure),
//   rejoins the rendezvous under the same hostname, up to backoffLimit M times.
#include "export/k8s_manifest.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "export/yaml.hpp"
#include "run/rank_env.hpp"
#include "run/workloads.hpp"
#include "scenario/config_error.hpp"
#include "util.hpp"

#ifndef HANGLAB_VERSION
#define HANGLAB_VERSION "0.1.0"
#endif
#include "git_commit.hpp"  // generated in the build tree: HANGLAB_GIT_COMMIT

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

bool builtin(const Scenario& sc) { return sc.workload.command.empty(); }
int nodes_of(const Scenario& sc) { return std::max(1, sc.topology.nodes); }
int ranks_per_node(const Scenario& sc) { return sc.workload.world_size / nodes_of(sc); }

std::string resolved_name(const PreparedScenario& ps, const ManifestOptions& o) {
  return o.name.empty() ? manifest_name(ps.scenario.name) : o.name;
}

// The hanglab checkout a scenario file lies in (its folder or an ancestor holding harness/ and
// scenarios/), or empty.
fs::path source_root_of(const fs::path& scenario_file) {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(scenario_file), ec).parent_path();
  for (; !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / "harness" / "cli" / "main.cpp", ec) && fs::is_directory(dir / "scenarios", ec)) return dir;
    if (dir == dir.root_path()) break;
  }
  return {};
}

// {scenario_dir} inside the image: the same place relative to the checkout, when the scenario
// is part of one; else the host's path (the header says the image must hold it).
std::string image_scenario_dir(const Scenario& sc, const ManifestOptions& o, bool* outside) {
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(sc.file), ec).parent_path();
  const fs::path root = source_root_of(sc.file);
  if (outside) *outside = root.empty();
  if (root.empty()) return dir.string();
  const fs::path rel = dir.lexically_relative(root);
  return (fs::path(o.image_root) / rel).lexically_normal().string();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

// The rank program as the image runs it (literal, not yet escaped).
std::vector<std::string> rank_program(const PreparedScenario& ps, const ManifestOptions& o) {
  const Scenario& sc = ps.scenario;
  const fs::path root = o.image_root;
  if (builtin(sc)) {
    std::vector<std::string> argv = workload_argv(sc);
    argv[0] = (root / "build" / "workloads" / fs::path(argv[0]).filename()).string();
    return argv;
  }
  const std::string scenario_dir = image_scenario_dir(sc, o, nullptr);
  std::vector<std::string> argv;
  for (std::string a : sc.workload.command) {
    a = replace_all(a, "{scenario_dir}", scenario_dir);
    a = replace_all(a, "{workload_dir}", (root / "build" / "workloads").string());
    a = replace_all(a, "{venv}", (root / ".venv").string());
    argv.push_back(fs::path(a).is_absolute() ? fs::path(a).lexically_normal().string() : a);
  }
  return argv;
}

std::string toml_value_text(const toml::node& n) {
  if (auto s = n.as_string()) return nlohmann::json(s->get()).dump();
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) return fmt::format("{}", f->get());
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto a = n.as_array()) {
    std::string s = "[";
    for (size_t i = 0; i < a->size(); ++i) s += (i ? ", " : "") + toml_value_text(*a->get(i));
    return s + "]";
  }
  if (auto t = n.as_table()) {
    std::string s = "{";
    bool first = true;
    for (const auto& [k, v] : *t) {
      s += fmt::format("{}{} = {}", first ? "" : ", ", std::string(k.str()), toml_value_text(v));
      first = false;
    }
    return s + "}";
  }
  return "?";
}

std::string fault_text(const FaultSpec& f) {
  // In file order (a toml::table iterates sorted by key).
  std::vector<std::tuple<int, int, std::string>> keys;
  for (const auto& [k, v] : f.table)
    if (k.str() != "kind")
      keys.emplace_back(static_cast<int>(v.source().begin.line), static_cast<int>(v.source().begin.column),
                        fmt::format("{} = {}", std::string(k.str()), toml_value_text(v)));
  std::sort(keys.begin(), keys.end());
  std::string text;
  for (const auto& [line, col, kv] : keys) text += (text.empty() ? "" : ", ") + kv;
  return fmt::format("{} {}{}", f.key_prefix(), f.kind, text.empty() ? "" : " (" + text + ")");
}

ordered_json env_list(const std::vector<std::pair<std::string, std::string>>& env, bool indexed) {
  ordered_json list = ordered_json::array();
  if (indexed)  // the Job controller sets it too; declared here so $(JOB_COMPLETION_INDEX) in args reads plainly
    list.push_back({{"name", "JOB_COMPLETION_INDEX"},
                    {"valueFrom",
                     {{"fieldRef", {{"fieldPath", "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}}});
  for (const auto& [k, v] : env) list.push_back({{"name", k}, {"value", k8s_literal(v)}});
  return list;
}

ordered_json labels(const std::string& name) {
  return {{"app.kubernetes.io/name", "hanglab"}, {"app.kubernetes.io/instance", name}};
}

ordered_json annotations(const PreparedScenario& ps, const ManifestOptions& o) {
  std::string faults;
  for (const auto& f : ps.scenario.faults) faults += (faults.empty() ? "" : ", ") + f.kind;
  return {{"hanglab/scenario", ps.scenario.name},
          {"hanglab/generated-by", o.version_note},
          {"hanglab/faults-not-applied", faults.empty() ? "none" : faults}};
}

ordered_json container(const PreparedScenario& ps, const ManifestOptions& o, const std::string& container_name,
                       const std::string& port_name, const std::string& node_rank, const std::string& rdzv_host) {
  const Scenario& sc = ps.scenario;
  ordered_json c;
  c["name"] = container_name;
  c["image"] = o.image;
  c["command"] = ordered_json::array({(fs::path(o.image_root) / ".venv" / "bin" / "torchrun").string()});
  c["args"] = manifest_torchrun_args(ps, o, node_rank, rdzv_host);
  c["env"] = env_list(manifest_env(ps, o), node_rank == "$(JOB_COMPLETION_INDEX)");
  c["ports"] = ordered_json::array({{{"name", port_name}, {"containerPort", o.rdzv_port}, {"protocol", "TCP"}}});
  if (sc.workload.backend == "nccl") {
    // One GPU per rank (torch_ddp_nccl and nccl_ddp use cuda:LOCAL_RANK).
    const std::string gpus = std::to_string(ranks_per_node(sc));
    c["resources"] = {{"limits", {{"nvidia.com/gpu", gpus}}}};
  }
  c["volumeMounts"] = ordered_json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}},
                                           {{"name", "hanglab-run"}, {"mountPath", kPodRunDir}}});
  return c;
}

// --preflight: `hanglab preflight` with the job's environment before torchrun starts, on every pod.
// MASTER_PORT is torchrun's rendezvous port: pod 0's preflight binds it (that is the port check)
// and releases it before its torchrun starts. node_rank_sh: the shell expression of the pod's node
// rank (Indexed Job: its completion index; PyTorchJob: 0 for Master, replica index + 1 for Workers).
ordered_json preflight_container(const PreparedScenario& ps, const ManifestOptions& o, const std::string& rdzv_host,
                                 const std::string& node_rank_sh, bool indexed, bool worker) {
  const Scenario& sc = ps.scenario;
  const fs::path root(o.image_root);
  const std::string ckpt = std::string(kPodRunDir) + "/ckpt";
  const std::string script = fmt::format(
      "mkdir -p {} && NODE_RANK={} exec {} preflight --ranks-per-node {} --backend {} --deadline-s {} --ckpt-dir {} "
      "--python {}",
      ckpt, node_rank_sh, (root / "build" / "harness" / "hanglab").string(), ranks_per_node(sc),
      sc.workload.backend == "nccl" ? "nccl" : "gloo", o.preflight_deadline_s, ckpt, (root / ".venv" / "bin" / "python").string());
  ordered_json c;
  c["name"] = "preflight";
  c["image"] = o.image;
  c["command"] = ordered_json::array({"sh", "-c", k8s_literal(script)});
  auto env = manifest_env(ps, o);
  env.emplace_back("MASTER_ADDR", rdzv_host);
  env.emplace_back("MASTER_PORT", std::to_string(o.rdzv_port));
  env.emplace_back("NNODES", std::to_string(nodes_of(sc)));
  env.emplace_back("WORLD_SIZE", std::to_string(sc.workload.world_size));
  std::sort(env.begin(), env.end());
  ordered_json list = env_list(env, indexed);
  if (worker)
    list.push_back({{"name", "REPLICA_INDEX"},
                    {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.labels['training.kubeflow.org/replica-index']"}}}}}});
  c["env"] = std::move(list);
  if (sc.workload.backend == "nccl")
    c["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(ranks_per_node(sc))}}}};
  c["volumeMounts"] = ordered_json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}},
                                           {{"name", "hanglab-run"}, {"mountPath", kPodRunDir}}});
  return c;
}

ordered_json pod_spec(const PreparedScenario& ps, ordered_json c) {
  ordered_json spec;
  spec["restartPolicy"] = ps.scenario.workload.max_restarts > 0 ? "OnFailure" : "Never";
  spec["containers"] = ordered_json::array({std::move(c)});
  // A container runtime's default /dev/shm is 64 MiB: DataLoader workers pass batches through it
  // (the tiny_shm scenarios). Memory-backed, bounded by the pod's memory limit.
  spec["volumes"] = ordered_json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}},
                                         {{"name", "hanglab-run"}, {"emptyDir", ordered_json::object()}}});
  return spec;
}

long long deadline_seconds(const Scenario& sc) { return static_cast<long long>(std::ceil(sc.deadline_s)); }

std::vector<ordered_json> indexed_job(const PreparedScenario& ps, const ManifestOptions& o, const std::string& name) {
  const Scenario& sc = ps.scenario;
  const int n = nodes_of(sc);
  const std::string rdzv_host = name + "-0." + name;  // pod 0: hostname <job>-0, subdomain <service>
  ordered_json svc;
  svc["apiVersion"] = "v1";
  svc["kind"] = "Service";
  svc["metadata"] = {{"name", name}, {"labels", labels(name)}, {"annotations", annotations(ps, o)}};
  // Headless: DNS names pods (<job>-<i>.<service>) instead of load-balancing; published before the
  // pods are ready, so a pod that starts first can resolve pod 0.
  svc["spec"] = {{"clusterIP", "None"},
                 {"publishNotReadyAddresses", true},
                 {"selector", {{"job-name", name}}},
                 {"ports", ordered_json::array({{{"name", "rdzv"}, {"port", o.rdzv_port}, {"targetPort", o.rdzv_port},
                                                 {"protocol", "TCP"}}})}};
  ordered_json job;
  job["apiVersion"] = "batch/v1";
  job["kind"] = "Job";
  job["metadata"] = {{"name", name}, {"labels", labels(name)}, {"annotations", annotations(ps, o)}};
  ordered_json spec;
  spec["completionMode"] = "Indexed";
  spec["completions"] = n;
  spec["parallelism"] = n;
  spec["backoffLimit"] = sc.workload.max_restarts;
  spec["activeDeadlineSeconds"] = deadline_seconds(sc);
  ordered_json pod = pod_spec(ps, container(ps, o, "hanglab", "rdzv", "$(JOB_COMPLETION_INDEX)", rdzv_host));
  if (o.preflight)
    pod["initContainers"] = ordered_json::array({preflight_container(ps, o, rdzv_host, "${JOB_COMPLETION_INDEX}", true, false)});
  ordered_json podspec;
  podspec["subdomain"] = name;
  for (auto it = pod.begin(); it != pod.end(); ++it) podspec[it.key()] = it.value();
  spec["template"] = {{"metadata", {{"labels", labels(name)}}}, {"spec", std::move(podspec)}};
  job["spec"] = std::move(spec);
  return {svc, job};
}

std::vector<ordered_json> pytorch_job(const PreparedScenario& ps, const ManifestOptions& o, const std::string& name) {
  const Scenario& sc = ps.scenario;
  const int n = nodes_of(sc);
  // The operator makes one headless Service per replica pod: <job>-master-0 is pod 0's name.
  const std::string rdzv_host = name + "-master-0";
  // The operator sets RANK to the pod's node index (Master 0, Worker i+1) in the pod spec itself,
  // so $(RANK) expands in args; torchrun then sets each worker's own RANK.
  ordered_json c = container(ps, o, "pytorch", "pytorchjob-port", "$(RANK)", rdzv_host);
  auto replica = [&](int replicas, bool worker) {
    ordered_json r;
    r["replicas"] = replicas;
    r["restartPolicy"] = sc.workload.max_restarts > 0 ? "OnFailure" : "Never";
    ordered_json pod = pod_spec(ps, c);
    if (o.preflight)  // the operator labels each pod with its replica index: Worker i is node i + 1
      pod["initContainers"] = ordered_json::array(
          {preflight_container(ps, o, rdzv_host, worker ? "$((REPLICA_INDEX + 1))" : "0", false, worker)});
    r["template"] = {{"metadata", {{"labels", labels(name)}}}, {"spec", std::move(pod)}};
    return r;
  };
  ordered_json job;
  job["apiVersion"] = "kubeflow.org/v1";
  job["kind"] = "PyTorchJob";
  job["metadata"] = {{"name", name}, {"labels", labels(name)}, {"annotations", annotations(ps, o)}};
  ordered_json spec;
  spec["nprocPerNode"] = std::to_string(ranks_per_node(sc));
  if (n > 1) {
    // The operator's webhook wants a Worker replica spec with an elasticPolicy. min/maxReplicas
    // bound the Worker replicas (its HPA scales those), so N-1; the PET_NNODES it derives from
    // them is overridden by the explicit --nnodes N in args.
    spec["elasticPolicy"] = {{"rdzvBackend", "c10d"},     {"rdzvHost", rdzv_host},
                             {"rdzvPort", o.rdzv_port},    {"rdzvId", name},
                             {"minReplicas", n - 1},       {"maxReplicas", n - 1},
                             {"maxRestarts", sc.workload.max_restarts}};
  }
  spec["runPolicy"] = {{"activeDeadlineSeconds", deadline_seconds(sc)},
                       {"backoffLimit", sc.workload.max_restarts},
                       {"cleanPodPolicy", "None"}};  // keep the pods (and their logs) after the job ends
  ordered_json replicas;
  replicas["Master"] = replica(1, false);
  if (n > 1) replicas["Worker"] = replica(n - 1, true);
  spec["pytorchReplicaSpecs"] = std::move(replicas);
  job["spec"] = std::move(spec);
  return {job};
}

}  // namespace

std::string manifest_name(const std::string& scenario_name) {
  std::string s = "hanglab-";
  for (char ch : scenario_name) {
    const unsigned char c = static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(ch)));
    if (std::isalnum(c) && c < 0x80) s += static_cast<char>(c);
    else if (s.back() != '-') s += '-';
  }
  if (s.size() > kMaxManifestName) s.resize(kMaxManifestName);
  while (s.back() == '-') s.pop_back();
  return s;
}

std::string manifest_name_problem(const std::string& name) {
  if (name.empty()) return "empty";
  if (name.size() > kMaxManifestName)
    return fmt::format("{} characters, at most {} (pod names <name>-master-0 and <name>-<index> must stay within 63)",
                       name.size(), kMaxManifestName);
  if (!(name[0] >= 'a' && name[0] <= 'z')) return "must start with a lowercase letter (a DNS-1035 label)";
  if (name.back() == '-') return "must end with a letter or digit (a DNS-1035 label)";
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
      return fmt::format("'{}' is not allowed: lowercase letters, digits and '-' only (a DNS-1035 label)", c);
  return {};
}

std::string k8s_literal(const std::string& s) { return replace_all(s, "$", "$$"); }

std::vector<std::string> manifest_torchrun_args(const PreparedScenario& ps, const ManifestOptions& o,
                                                const std::string& node_rank, const std::string& rdzv_host) {
  const Scenario& sc = ps.scenario;
  const std::string name = resolved_name(ps, o);
  std::vector<std::string> args = {"--nnodes",       std::to_string(nodes_of(sc)),
                                   "--nproc-per-node", std::to_string(ranks_per_node(sc)),
                                   "--node-rank",    node_rank,
                                   "--rdzv-backend", "c10d",
                                   "--rdzv-endpoint", fmt::format("{}:{}", rdzv_host, o.rdzv_port),
                                   "--rdzv-id",      name,
                                   "--max-restarts", std::to_string(sc.workload.max_restarts),
                                   "--log-dir",      std::string(kPodRunDir) + "/torchrun",
                                   "--no-python"};
  for (const auto& a : rank_program(ps, o)) args.push_back(k8s_literal(a));
  return args;
}

std::vector<std::pair<std::string, std::string>> manifest_env(const PreparedScenario& ps, const ManifestOptions& o,
                                                              std::vector<std::string>* notes) {
  const Scenario& sc = ps.scenario;
  RankEnvInput in;
  in.rank = 0;
  in.world_size = sc.workload.world_size;
  in.run_id = resolved_name(ps, o);
  in.run_dir = kPodRunDir;
  in.max_restarts = sc.workload.max_restarts;
  const auto env0 = rank_env(in, sc);
  in.rank = sc.workload.world_size > 1 ? 1 : 0;
  const auto env1 = rank_env(in, sc);
  std::map<std::string, std::string> out;
  auto user = [&](const std::string& k) { return sc.workload.env.count(k) > 0; };
  for (const auto& [k, v] : env0) {
    if (user(k)) {
      out[k] = v;
      continue;
    }
    if (is_torchrun_contract_key(k)) continue;  // torchrun sets these for every worker
    if (k == "TORCH_FR_DUMP_TEMP_FILE") {
      out[k] = std::string(kPodRunDir) + "/torch_fr_";  // torch appends the rank itself
      continue;
    }
    auto it = env1.find(k);
    if (it == env1.end() || it->second != v) {
      // One environment per pod: torchrun gives every local rank the same, so a per-rank value
      // (e.g. HANGLAB_FR_DUMP, the rank's dump path) has no form here.
      if (notes) notes->push_back(fmt::format("{} is not set: hanglab gives each rank its own value (rank 0: {})", k, v));
      continue;
    }
    out[k] = v;
  }
  if (builtin(sc)) {
    if (!user("HANGLAB_TRACE")) out["HANGLAB_TRACE"] = std::string(kPodRunDir) + "/events.%r.jsonl";  // %r: the rank
    if (!user("TORCH_DISABLE_SHARE_RDZV_TCP_STORE")) out["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1";
  }
  if (nodes_of(sc) > 1) {
    // As hanglab's nodes set them: the pod's one interface (a second one would be the wrong_socket_ifname fault).
    for (const char* k : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"})
      if (!user(k)) out[k] = "eth0";
  }
  return {out.begin(), out.end()};
}

K8sManifest build_manifest(const PreparedScenario& ps, const ManifestOptions& opts) {
  const Scenario& sc = ps.scenario;
  ManifestOptions o = opts;
  if (o.name.empty()) o.name = manifest_name(sc.name);
  if (o.version_note.empty()) o.version_note = "hanglab " HANGLAB_VERSION;
  if (sc.workload.backend == "mpi")
    throw ConfigError(sc.file.string(), sc.workload.table_pos.line, sc.workload.table_pos.col, "workload.backend",
                      "backend mpi has no torchrun form: `hanglab manifest` writes torchrun jobs (an MPIJob is not "
                      "generated)");
  const bool indexed = o.kind == "indexed-job";
  const int n = nodes_of(sc), r = ranks_per_node(sc);
  K8sManifest m;
  auto& h = m.header;
  h.push_back(fmt::format("hanglab manifest --kind {}: scenario \"{}\" ({})", o.kind, sc.name, sc.file.string()));
  h.push_back(fmt::format("Generated by {}. Not applied or run by hanglab: review, then `kubectl apply -f`.",
                          o.version_note));
  if (!sc.reproduces.empty()) h.push_back("Reproduces: " + sc.reproduces);
  if (!sc.description.empty()) h.push_back("Description: " + sc.description);
  const std::string what = builtin(sc) ? fmt::format("built-in workload {} on {}, {} steps", sc.workload.name,
                                                     sc.workload.backend, sc.workload.steps)
                                       : fmt::format("[workload] command on {}", sc.workload.backend);
  h.push_back(fmt::format("Runs: {} pod{} x {} rank{} = world size {}; {}.", n, n > 1 ? "s" : "", r, r > 1 ? "s" : "",
                          sc.workload.world_size, what));
  if (indexed)
    h.push_back(fmt::format("Kind: headless Service {0} + Indexed Job {0} (batch/v1): pod i = {0}-i.{0}, node rank "
                            "JOB_COMPLETION_INDEX; rendezvous c10d at {0}-0.{0}:{1}.",
                            o.name, o.rdzv_port));
  else
    h.push_back(fmt::format("Kind: Kubeflow PyTorchJob (kubeflow.org/v1, Training Operator): Master 1{}; node rank "
                            "$(RANK) (the operator's); rendezvous c10d at {}-master-0:{}.",
                            n > 1 ? fmt::format(" + Worker {}", n - 1) : "", o.name, o.rdzv_port));
  h.push_back(fmt::format("Image {}: must hold a hanglab checkout at {} with its build (build/workloads/) and venv "
                          "(.venv/bin/torchrun, torch 2.15).",
                          o.image, o.image_root));
  h.push_back(fmt::format("Deadline: activeDeadlineSeconds {} is the scenario's deadline_s; Kubernetes counts it from "
                          "the job's start, scheduling and image pull included (pre-pull the image, or raise it).",
                          deadline_seconds(sc)));
  if (n > 10)
    h.push_back(fmt::format("Node ranks: torch 2.15's c10d rendezvous ignores --node-rank and orders nodes by host "
                            "name as text, so with {} pods pod i is not node rank i beyond pod 9 (...-10 sorts before "
                            "...-2); ranks per node are unchanged.",
                            n));
  if (sc.faults.empty()) {
    h.push_back("Faults: none in this scenario.");
  } else {
    h.push_back(fmt::format("NOT CARRIED OVER: the scenario's {} fault{}, hanglab's injectors, which need hanglab on "
                            "the node (`hanglab run {}`):",
                            sc.faults.size(), sc.faults.size() > 1 ? "s" : "", sc.file.string()));
    for (const auto& f : sc.faults) h.push_back("  " + fault_text(f));
    h.push_back("  this manifest runs the workload without them.");
    for (size_t i = 0; i < ps.adapted.size(); ++i)
      for (const auto& a : ps.adapted[i])
        h.push_back(fmt::format("  kept: what fault[{}] arranged in the workload when the scenario loaded: {}", i, a));
  }
  h.push_back(std::string("Not carried over either: [expect] and hanglab's supervision (detectors, watchdog, stacks, "
                          "triage, run record)") +
              (builtin(sc) ? fmt::format("; the ranks' traces (events.<rank>.jsonl) stay in the pod's {} (emptyDir).",
                                         kPodRunDir)
                           : "."));
  if (sc.workload.launcher != "local" && sc.workload.launcher != "torchrun")
    h.push_back(fmt::format("Launcher: the scenario's {} is replaced by torchrun.", sc.workload.launcher));
  bool outside = false;
  if (!builtin(sc)) {
    bool uses_dir = false;
    for (const auto& a : sc.workload.command) uses_dir = uses_dir || a.find("{scenario_dir}") != std::string::npos;
    image_scenario_dir(sc, o, &outside);
    if (uses_dir && outside)
      h.push_back("The command's {scenario_dir} is outside a hanglab checkout: the image must hold " +
                  image_scenario_dir(sc, o, nullptr) + ".");
  }
  if (o.preflight)
    h.push_back(fmt::format("Preflight: init container `hanglab preflight` on every pod, with the job's environment and "
                            "MASTER_ADDR:MASTER_PORT = {}:{} (pod 0's binds it, the port check, and releases it for "
                            "torchrun); a failed check fails the pod before torchrun starts. Every pod's init container "
                            "must start within {} s of the first (--deadline-s): pre-pull the image.",
                            indexed ? o.name + "-0." + o.name : o.name + "-master-0", o.rdzv_port, o.preflight_deadline_s));
  std::vector<std::string> env_notes;
  manifest_env(ps, o, &env_notes);
  for (const auto& note : env_notes) h.push_back("Environment: " + note + ".");
  m.documents = indexed ? indexed_job(ps, o, o.name) : pytorch_job(ps, o, o.name);
  return m;
}

std::string render_manifest(const K8sManifest& m, const std::string& format) {
  if (format == "json") {
    ordered_json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", m.documents}};
    return list.dump(2) + "\n";
  }
  std::string out;
  for (const auto& line : m.header) {
    std::istringstream in(line);  // a description may hold line breaks: each line stays a comment
    for (std::string part; std::getline(in, part);) out += part.empty() ? "#\n" : "# " + part + "\n";
  }
  return out + "---\n" + to_yaml_stream(m.documents);
}

int manifest_command(const ManifestCommand& cmd) {
  ManifestOptions o = cmd.options;
  if (!o.name.empty())
    if (auto why = manifest_name_problem(o.name); !why.empty()) {
      std::cerr << "hanglab manifest: --name " << o.name << ": " << why << "\n";
      return 2;
    }
  if (o.image.empty() || o.image.find_first_of(" \t\n") != std::string::npos) {
    std::cerr << "hanglab manifest: --image '" << o.image << "': an image reference has no blanks and is not empty\n";
    return 2;
  }
  if (o.version_note.empty()) {
    const std::string commit = HANGLAB_GIT_COMMIT;
    o.version_note = "hanglab " HANGLAB_VERSION + (commit.empty() ? std::string() : " (commit " + commit + ")");
  }
  std::string text;
  try {
    PreparedScenario ps = prepare_scenario(cmd.scenario);
    if (o.name.empty()) {
      o.name = manifest_name(ps.scenario.name);
      if (auto why = manifest_name_problem(o.name); !why.empty())
        throw ConfigError(cmd.scenario, 0, 0, "scenario.name",
                          "no object name can be made from it (" + why + "): pass --name");
    }
    text = render_manifest(build_manifest(ps, o), o.format);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  if (cmd.out.empty()) {
    std::cout << text;
  } else {
    try {
      write_file(cmd.out, text);  // temp + rename: a reader never sees half a manifest
    } catch (const std::exception& e) {
      std::cerr << "hanglab manifest: --out " << cmd.out << ": " << e.what() << "\n";
      return 2;
    }
    std::cerr << "hanglab manifest: wrote " << cmd.out << "\n";
  }
  return 0;
}

}  // namespace hanglab
