// `hanglab manifest`: torchrun's argv and the ranks' environment for a 2-node scenario, the node-rank
// expression of each kind, what is carried over (timeouts, [torch] knobs, GPUs, restarts, deadline)
// and how odd strings in [workload.env] survive Kubernetes' $(VAR) expansion and YAML.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <unistd.h>

#include "export/k8s_manifest.hpp"
#include "export/yaml.hpp"
#include "scenario/config_error.hpp"
#include "util.hpp"

using namespace hanglab;
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

fs::path source(const std::string& rel) { return fs::path(HANGLAB_SOURCE_DIR) / rel; }

std::map<std::string, std::string> env_map(const PreparedScenario& ps, const ManifestOptions& o = {}) {
  auto v = manifest_env(ps, o);
  return {v.begin(), v.end()};
}

const ordered_json& container_of(const ordered_json& pod_template) { return pod_template["spec"]["containers"][0]; }

// A scenario file of our own in a fresh temporary folder.
fs::path temp_scenario(const std::string& text) {
  char dir[] = "/tmp/hanglab-k8s-test-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  fs::path p = fs::path(dir) / "odd.toml";
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("2-node scenario: torchrun's argv in an Indexed Job", "[manifest]") {
  PreparedScenario ps = prepare_scenario(source("scenarios/net_kill_node.toml"));
  ManifestOptions o;
  const std::vector<std::string> want = {
      "--nnodes", "2", "--nproc-per-node", "2", "--node-rank", "$(JOB_COMPLETION_INDEX)", "--rdzv-backend", "c10d",
      "--rdzv-endpoint", "hanglab-net-kill-node-0.hanglab-net-kill-node:29400", "--rdzv-id", "hanglab-net-kill-node",
      "--max-restarts", "0", "--log-dir", "/hanglab/run/torchrun", "--no-python",
      "/opt/hanglab/build/workloads/torch_ddp", "--steps=12", "--backend=gloo"};
  CHECK(manifest_torchrun_args(ps, o, "$(JOB_COMPLETION_INDEX)", "hanglab-net-kill-node-0.hanglab-net-kill-node") ==
        want);

  K8sManifest m = build_manifest(ps, o);
  REQUIRE(m.documents.size() == 2);
  const ordered_json& svc = m.documents[0];
  const ordered_json& job = m.documents[1];
  CHECK(svc["kind"] == "Service");
  CHECK(svc["spec"]["clusterIP"] == "None");
  CHECK(svc["spec"]["selector"]["job-name"] == "hanglab-net-kill-node");
  CHECK(job["kind"] == "Job");
  CHECK(job["spec"]["completionMode"] == "Indexed");
  CHECK(job["spec"]["completions"] == 2);
  CHECK(job["spec"]["parallelism"] == 2);
  CHECK(job["spec"]["activeDeadlineSeconds"] == 90);
  CHECK(job["spec"]["backoffLimit"] == 0);
  CHECK(job["spec"]["template"]["spec"]["subdomain"] == "hanglab-net-kill-node");
  CHECK(job["spec"]["template"]["spec"]["restartPolicy"] == "Never");
  const ordered_json& c = container_of(job["spec"]["template"]);
  CHECK(c["command"] == ordered_json::array({"/opt/hanglab/.venv/bin/torchrun"}));
  CHECK(c["args"].get<std::vector<std::string>>() == want);
  CHECK(!c.contains("resources"));  // gloo: no GPUs
  // /dev/shm memory-backed
  CHECK(job["spec"]["template"]["spec"]["volumes"][0] ==
        ordered_json({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}));
  CHECK(c["volumeMounts"][0]["mountPath"] == "/dev/shm");
  // The fault is named in the header, and said not to be applied.
  std::string header;
  for (const auto& l : m.header) header += l + "\n";
  CHECK(header.find("NOT CARRIED OVER") != std::string::npos);
  CHECK(header.find("fault[0] kill_node (nodes = [1], at_step = 5)") != std::string::npos);
  CHECK(job["metadata"]["annotations"]["hanglab/faults-not-applied"] == "kill_node");
}

TEST_CASE("2-node scenario: the ranks' environment", "[manifest]") {
  PreparedScenario ps = prepare_scenario(source("scenarios/net_kill_node.toml"));
  auto env = env_map(ps);
  // [timeouts] as the ranks read them
  CHECK(env.at("HANGLAB_INIT_TIMEOUT_MS") == "15000");
  CHECK(env.at("HANGLAB_COLLECTIVE_TIMEOUT_MS") == "5000");
  CHECK(env.at("HANGLAB_HEARTBEAT_MS") == "1000");
  CHECK(env.at("HANGLAB_RUN_DIR") == "/hanglab/run");
  CHECK(env.at("HANGLAB_CKPT_DIR") == "/hanglab/run/ckpt");
  CHECK(env.at("HANGLAB_TRACE") == "/hanglab/run/events.%r.jsonl");
  CHECK(env.at("OMP_NUM_THREADS") == "1");
  // the built-in workload serves its own store: torchrun must not share its own on that port
  CHECK(env.at("TORCH_DISABLE_SHARE_RDZV_TCP_STORE") == "1");
  // two nodes: the pod's interface, as hanglab's nodes have it
  CHECK(env.at("GLOO_SOCKET_IFNAME") == "eth0");
  CHECK(env.at("NCCL_SOCKET_IFNAME") == "eth0");
  // torchrun sets the contract for every worker itself
  for (const char* k : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK",
                        "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_RUN_ID"})
    CHECK(env.count(k) == 0);
  // sorted by name, once each
  auto v = manifest_env(ps, {});
  CHECK(std::is_sorted(v.begin(), v.end()));
}

TEST_CASE("node-rank expression: JOB_COMPLETION_INDEX in the Indexed Job, the operator's RANK in the PyTorchJob",
          "[manifest]") {
  PreparedScenario ps = prepare_scenario(source("scenarios/net_kill_node.toml"));
  ManifestOptions o;
  K8sManifest ij = build_manifest(ps, o);
  const ordered_json& c = container_of(ij.documents[1]["spec"]["template"]);
  auto args = c["args"].get<std::vector<std::string>>();
  auto at = std::find(args.begin(), args.end(), "--node-rank");
  REQUIRE(at + 1 < args.end());
  CHECK(*(at + 1) == "$(JOB_COMPLETION_INDEX)");
  // declared in the container's env (from the pod's completion-index annotation), so it expands in args
  CHECK(c["env"][0]["name"] == "JOB_COMPLETION_INDEX");
  CHECK(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] ==
        "metadata.annotations['batch.kubernetes.io/job-completion-index']");

  o.kind = "pytorchjob";
  K8sManifest pj = build_manifest(ps, o);
  REQUIRE(pj.documents.size() == 1);
  const ordered_json& job = pj.documents[0];
  CHECK(job["apiVersion"] == "kubeflow.org/v1");
  CHECK(job["kind"] == "PyTorchJob");
  CHECK(job["spec"]["nprocPerNode"] == "2");
  CHECK(job["spec"]["elasticPolicy"]["rdzvBackend"] == "c10d");
  CHECK(job["spec"]["elasticPolicy"]["rdzvHost"] == "hanglab-net-kill-node-master-0");
  CHECK(job["spec"]["elasticPolicy"]["rdzvPort"] == 29400);
  CHECK(job["spec"]["elasticPolicy"]["minReplicas"] == 1);  // Worker replicas
  CHECK(job["spec"]["elasticPolicy"]["maxReplicas"] == 1);
  CHECK(job["spec"]["runPolicy"]["activeDeadlineSeconds"] == 90);
  const ordered_json& specs = job["spec"]["pytorchReplicaSpecs"];
  CHECK(specs["Master"]["replicas"] == 1);
  CHECK(specs["Worker"]["replicas"] == 1);
  for (const char* role : {"Master", "Worker"}) {
    const ordered_json& pc = container_of(specs[role]["template"]);
    CHECK(pc["name"] == "pytorch");  // the operator injects its env into this container only
    CHECK(pc["ports"][0]["name"] == "pytorchjob-port");
    auto pargs = pc["args"].get<std::vector<std::string>>();
    auto r = std::find(pargs.begin(), pargs.end(), "--node-rank");
    REQUIRE(r + 1 < pargs.end());
    CHECK(*(r + 1) == "$(RANK)");
    auto e = std::find(pargs.begin(), pargs.end(), "--rdzv-endpoint");
    CHECK(*(e + 1) == "hanglab-net-kill-node-master-0:29400");
    CHECK(pc["env"][0]["name"] != "JOB_COMPLETION_INDEX");
  }
}

TEST_CASE("one node: one pod, a Master alone, no elasticPolicy", "[manifest]") {
  PreparedScenario ps = prepare_scenario(source("scenarios/kill_rank.toml"));
  ManifestOptions o;
  K8sManifest ij = build_manifest(ps, o);
  CHECK(ij.documents[1]["spec"]["completions"] == 1);
  auto args = container_of(ij.documents[1]["spec"]["template"])["args"].get<std::vector<std::string>>();
  CHECK(args[1] == "1");                                  // --nnodes
  CHECK(args[3] == std::to_string(ps.scenario.workload.world_size));  // --nproc-per-node
  CHECK(env_map(ps).count("GLOO_SOCKET_IFNAME") == 0);
  o.kind = "pytorchjob";
  K8sManifest pj = build_manifest(ps, o);
  CHECK(!pj.documents[0]["spec"].contains("elasticPolicy"));
  CHECK(!pj.documents[0]["spec"]["pytorchReplicaSpecs"].contains("Worker"));
}

TEST_CASE("nccl: one GPU per rank of the pod", "[manifest]") {
  PreparedScenario ps = prepare_scenario(source("scenarios/gpu/c10d_nccl_kill_rank.toml"));
  K8sManifest m = build_manifest(ps, {});
  const ordered_json& c = container_of(m.documents[1]["spec"]["template"]);
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "2");
  auto args = c["args"].get<std::vector<std::string>>();
  CHECK(std::find(args.begin(), args.end(), "/opt/hanglab/build/workloads/torch_ddp_nccl") != args.end());
  CHECK(std::find(args.begin(), args.end(), "--backend=nccl") != args.end());
  CHECK(env_map(ps).at("NCCL_DEBUG") == "WARN");  // [workload.env]
}

TEST_CASE("max_restarts: torchrun restarts in the pod, the pod restarts in place up to backoffLimit", "[manifest]") {
  PreparedScenario ps = prepare_scenario(source("scenarios/torchrun_restart.toml"));
  K8sManifest m = build_manifest(ps, {});
  const ordered_json& job = m.documents[1];
  CHECK(job["spec"]["backoffLimit"] == 1);
  CHECK(job["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure");
  auto args = container_of(job["spec"]["template"])["args"].get<std::vector<std::string>>();
  auto at = std::find(args.begin(), args.end(), "--max-restarts");
  CHECK(*(at + 1) == "1");
  ManifestOptions o;
  o.kind = "pytorchjob";
  K8sManifest pj = build_manifest(ps, o);
  CHECK(pj.documents[0]["spec"]["runPolicy"]["backoffLimit"] == 1);
  CHECK(pj.documents[0]["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] == "OnFailure");
}

TEST_CASE("odd strings in [workload.env] and a command survive $(VAR) expansion and YAML", "[manifest]") {
  const fs::path file = temp_scenario(R"TOML(
[scenario]
description = "line one\nline two: # not a comment"
deadline_s = 30.5
[workload]
command = ["/bin/sh", "-c", "echo \"$HOME\" $(hostname) 'q' #x"]
backend = "gloo"
world_size = 2
[workload.env]
DOLLAR = "$(HOME) costs $5 and $$"
QUOTES = "say \"hi\": #1 'x'"
NEWLINE = "a\nb"
NUMBER = "0123"
BOOLISH = "yes"
EMPTY = ""
UNICODE = "café 😀"
[torch]
distributed_debug = "DETAIL"
fr_buffer_size = 10
[detect]
flight_recorder = true
)TOML");
  PreparedScenario ps = prepare_scenario(file);
  std::vector<std::string> notes;
  auto v = manifest_env(ps, {}, &notes);
  std::map<std::string, std::string> env(v.begin(), v.end());
  // literal values (before the Kubernetes escape)
  CHECK(env.at("DOLLAR") == "$(HOME) costs $5 and $$");
  CHECK(env.at("QUOTES") == "say \"hi\": #1 'x'");
  CHECK(env.at("NEWLINE") == "a\nb");
  CHECK(env.at("EMPTY").empty());
  // [torch] knobs through rank_env, and torch's own dump prefix inside the pod
  CHECK(env.at("TORCH_DISTRIBUTED_DEBUG") == "DETAIL");
  CHECK(env.at("TORCH_FR_BUFFER_SIZE") == "10");
  CHECK(env.at("TORCH_FR_DUMP_TEMP_FILE") == "/hanglab/run/torch_fr_");
  // a per-rank value has no pod-wide form: left out, and said so
  CHECK(env.count("HANGLAB_FR_DUMP") == 0);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].rfind("HANGLAB_FR_DUMP is not set", 0) == 0);
  // a command gets torchrun's agent store; no hanglab trace
  CHECK(env.count("TORCH_DISABLE_SHARE_RDZV_TCP_STORE") == 0);
  CHECK(env.count("HANGLAB_TRACE") == 0);

  CHECK(k8s_literal("$(HOME) costs $5 and $$") == "$$(HOME) costs $$5 and $$$$");
  K8sManifest m = build_manifest(ps, {});
  const ordered_json& c = container_of(m.documents[1]["spec"]["template"]);
  std::map<std::string, std::string> in_manifest;
  for (const auto& e : c["env"])
    if (e.contains("value")) in_manifest[e["name"].get<std::string>()] = e["value"].get<std::string>();
  CHECK(in_manifest.at("DOLLAR") == "$$(HOME) costs $$5 and $$$$");
  CHECK(in_manifest.at("QUOTES") == "say \"hi\": #1 'x'");
  auto args = c["args"].get<std::vector<std::string>>();
  CHECK(args.back() == "echo \"$$HOME\" $$(hostname) 'q' #x");
  CHECK(m.documents[1]["spec"]["activeDeadlineSeconds"] == 31);  // ceil(30.5)

  const std::string yaml = render_manifest(m, "yaml");
  CHECK(yaml.find("  value: \"$$(HOME) costs $$5 and $$$$\"\n") != std::string::npos);
  CHECK(yaml.find("  value: \"say \\\"hi\\\": #1 'x'\"\n") != std::string::npos);
  CHECK(yaml.find("  value: \"a\\nb\"\n") != std::string::npos);
  CHECK(yaml.find("  value: \"0123\"\n") != std::string::npos);
  CHECK(yaml.find("  value: \"yes\"\n") != std::string::npos);
  CHECK(yaml.find("  value: \"\"\n") != std::string::npos);
  CHECK(yaml.find("  value: \"caf\xC3\xA9 \xF0\x9F\x98\x80\"\n") != std::string::npos);
  // a description's line break stays inside the header's comments
  CHECK(yaml.find("# Description: line one\n# line two: # not a comment\n") != std::string::npos);
  fs::remove_all(file.parent_path());
}

TEST_CASE("backend mpi has no torchrun form: a config error naming the key", "[manifest]") {
  PreparedScenario ps = prepare_scenario(source("scenarios/mpi_kill_rank.toml"));
  try {
    build_manifest(ps, {});
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.key() == "workload.backend");
    CHECK(e.line() > 0);
  }
}

TEST_CASE("object names: DNS-1035 labels short enough for the pods' names", "[manifest]") {
  CHECK(manifest_name("net_kill_node") == "hanglab-net-kill-node");
  CHECK(manifest_name("Weird  Name!!") == "hanglab-weird-name");
  CHECK(manifest_name(std::string(100, 'a')).size() == kMaxManifestName);
  CHECK(manifest_name(std::string(31, 'a') + "_zzz") == "hanglab-" + std::string(31, 'a'));  // no '-' left at the cut
  CHECK(manifest_name_problem("hanglab-x").empty());
  CHECK(!manifest_name_problem("1abc").empty());
  CHECK(!manifest_name_problem("Abc").empty());
  CHECK(!manifest_name_problem("abc-").empty());
  CHECK(!manifest_name_problem("a_b").empty());
  CHECK(!manifest_name_problem(std::string(41, 'a')).empty());
}
