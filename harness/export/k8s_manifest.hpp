// `hanglab manifest`: a Kubernetes manifest that runs a scenario's workload on a real cluster, under
// torchrun, one pod per [topology] node. Generated, documented and schema-checked here; never applied
// or run by hanglab (e2e.k8s_manifest_schema validates the output against the Kubernetes JSON schemas
// and the Kubeflow Training SDK's PyTorchJob model).
//
// Two kinds:
//   indexed-job  a headless Service + a batch/v1 Job with completionMode Indexed: N pods, pod i's
//                JOB_COMPLETION_INDEX is its node rank, pod 0 is <job>-0.<service> in DNS (subdomain);
//   pytorchjob   a Kubeflow Training Operator PyTorchJob (kubeflow.org/v1): Master (1 pod) + Worker
//                (N-1 pods), nprocPerNode, and with N > 1 an elasticPolicy naming the c10d rendezvous.
// Each pod runs `torchrun --nnodes N --nproc-per-node R --node-rank <pod index> --rdzv-backend c10d
// --rdzv-endpoint <pod 0>:PORT --rdzv-id <job> --max-restarts M --no-python RANK_PROGRAM...`.
//
// What is carried over from the scenario, and how (the environment comes from run/rank_env, the
// same function every launcher uses, so a knob or timeout added there reaches the manifest too):
// the rank program (a built-in workload's argv with the binary under the image's build tree, or
// [workload] command with {venv}, {workload_dir}, {scenario_dir} mapped into the image), backend,
// world size and steps, [workload.env], [torch] knobs, [detect] fr_buffer_size, [timeouts] as the
// HANGLAB_*_MS variables the ranks read, deadline_s as activeDeadlineSeconds, max_restarts as
// torchrun's --max-restarts and the pods' restart policy and backoff limit, one GPU per rank with
// backend nccl, a memory-backed /dev/shm. Not carried over, and said so in the manifest's header:
// [[fault]] tables (they need hanglab on the node), [expect], hanglab's detectors and triage.
// With --preflight, an init container per pod runs `hanglab preflight` first (preflight/preflight.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/runner.hpp"

namespace hanglab {

struct ManifestOptions {
  std::string kind = "indexed-job";  // indexed-job | pytorchjob
  std::string image = "hanglab:latest";
  // The object names' stem (Job, Service, PyTorchJob); default "hanglab-<scenario name>", made a
  // DNS-1035 label of at most kMaxManifestName characters.
  std::string name;
  // Where the image holds a hanglab checkout with its build (build/) and venv (.venv).
  std::string image_root = "/opt/hanglab";
  int rdzv_port = 29400;  // torchrun's c10d rendezvous port (its default)
  std::string format = "yaml";  // yaml | json (a v1 List)
  // --preflight: every pod first runs `hanglab preflight` as an init container, with the job's
  // environment and its rendezvous (pod 0's name, rdzv_port): a failing check fails the pod, so the
  // job never starts into the hang. Every pod's init container must start within preflight_deadline_s.
  bool preflight = false;
  double preflight_deadline_s = 300;
  std::string version_note;     // "hanglab 0.1.0 (commit abc123)" for the header
};

constexpr size_t kMaxManifestName = 40;  // <job>-master-0 and <job>-<index> stay within 63
constexpr const char* kPodRunDir = "/hanglab/run";  // emptyDir: HANGLAB_RUN_DIR, data, checkpoints, traces

struct K8sManifest {
  std::vector<std::string> header;               // comment lines, without "# "
  std::vector<nlohmann::ordered_json> documents;  // in apply order (Service before Job)
};

// The object name for a scenario: "hanglab-" + its name, lowercased, runs of other characters as
// one '-', cut to kMaxManifestName.
std::string manifest_name(const std::string& scenario_name);

// Empty when `name` is a DNS-1035 label of at most kMaxManifestName characters, else why not.
std::string manifest_name_problem(const std::string& name);

// The torchrun argv (without the program) every pod runs; node_rank is the expression the pod
// reads its node rank from ("$(JOB_COMPLETION_INDEX)" or "$(RANK)"), rdzv_host pod 0's name.
std::vector<std::string> manifest_torchrun_args(const PreparedScenario& ps, const ManifestOptions& o,
                                                const std::string& node_rank, const std::string& rdzv_host);

// The environment every rank's container gets: (name, value) sorted by name, values literal
// (not yet escaped for Kubernetes' $(VAR) expansion). Notes about what was left out are appended
// to `notes`.
std::vector<std::pair<std::string, std::string>> manifest_env(const PreparedScenario& ps, const ManifestOptions& o,
                                                              std::vector<std::string>* notes = nullptr);

// A literal string in a container's command, args or env value: Kubernetes expands $(VAR) there,
// and $$ is its escape for '$'; every '$' is doubled so the process sees the text as written.
std::string k8s_literal(const std::string& s);

// Builds the manifest. Throws ConfigError for a scenario that has no torchrun form (backend mpi).
K8sManifest build_manifest(const PreparedScenario& ps, const ManifestOptions& o);

// The text `hanglab manifest` prints: header comments, then YAML documents (or a JSON v1 List).
std::string render_manifest(const K8sManifest& m, const std::string& format);

struct ManifestCommand {
  std::string scenario;
  std::string out;  // empty: stdout
  ManifestOptions options;
};

// `hanglab manifest`: 0 written, 2 bad input (one line FILE:LINE:COL: KEY: MESSAGE, nothing written).
int manifest_command(const ManifestCommand& cmd);

}  // namespace hanglab
