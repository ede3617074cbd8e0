#!/usr/bin/env bash
# End-to-end: `hanglab manifest` output for shipped scenarios (1 node gloo, 2 nodes, nccl,
# bring-your-own command, max_restarts) in both kinds, validated for real by k8s_schema_check.py
# (kubernetes-validate's Kubernetes schemas; the Kubeflow Training SDK's PyTorchJob model); broken
# copies of each, and a broken file, must be refused. Skipped (exit 4) where the project venv lacks
# kubernetes-validate or kubeflow-training (ci/install-deps.sh installs them).
# usage: e2e_k8s_schema_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
venv=${HANGLAB_VENV:-$src/.venv}
py="$venv/bin/python"
if ! "$py" -c "import kubernetes_validate, kubeflow.training, yaml" 2> /dev/null; then
  echo "SKIP: $py cannot import kubernetes_validate and kubeflow.training (run ci/install-deps.sh)"
  exit 4
fi
check="$(dirname "$0")/k8s_schema_check.py"

# A 12-node scenario: pod names past 9 (<job>-10), and the header's node-rank warning.
cat > "$work/twelve_nodes.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 12
steps = 3
[topology]
nodes = 12
TOML

pairs=()
for sc in scenarios/kill_rank.toml scenarios/net_kill_node.toml scenarios/net_baseline.toml \
          scenarios/gpu/c10d_nccl_kill_rank.toml scenarios/python_ddp_baseline.toml \
          scenarios/torchrun_restart.toml "$work/twelve_nodes.toml"; do
  f=$sc; [ -e "$f" ] || f="$src/$sc"
  base=$(basename "$sc" .toml)
  for kind in indexed-job pytorchjob; do
    y="$work/$base.$kind.yaml" j="$work/$base.$kind.json"
    "$hanglab" manifest "$f" --kind "$kind" --image registry.example/hanglab:test --out "$y" 2> "$work/err" ||
      fail "$sc ($kind): $(cat "$work/err")"
    "$hanglab" manifest "$f" --kind "$kind" --image registry.example/hanglab:test --format json --out "$j" 2> "$work/err" ||
      fail "$sc ($kind, json): $(cat "$work/err")"
    pairs+=("$y:$j")
  done
done
# --preflight: an init container on every pod (2 nodes gloo, and nccl with its GPUs), both kinds.
for sc in scenarios/net_baseline.toml scenarios/gpu/c10d_nccl_kill_rank.toml; do
  base=$(basename "$sc" .toml).preflight
  for kind in indexed-job pytorchjob; do
    y="$work/$base.$kind.yaml" j="$work/$base.$kind.json"
    "$hanglab" manifest "$src/$sc" --kind "$kind" --preflight --out "$y" 2> "$work/err" || fail "$sc ($kind, --preflight): $(cat "$work/err")"
    "$hanglab" manifest "$src/$sc" --kind "$kind" --preflight --format json --out "$j" 2> "$work/err" ||
      fail "$sc ($kind, --preflight, json): $(cat "$work/err")"
    grep -q "initContainers:" "$y" && grep -q "hanglab preflight --ranks-per-node" "$y" || fail "$y: no preflight init container"
    grep -q "^# Preflight: init container" "$y" || fail "$y: the header does not say so"
    pairs+=("$y:$j")
  done
done
grep -q "pod i is not node rank i beyond pod 9" "$work/twelve_nodes.indexed-job.yaml" || fail "no node-rank warning for 12 nodes"
grep -q "NOT CARRIED OVER: the scenario's 1 fault" "$work/net_kill_node.indexed-job.yaml" || fail "the fault is not named"

"$py" "$check" --self-test "${pairs[@]}" || fail "a manifest did not validate, or a broken copy was not refused"

# Every shipped scenario, both kinds: valid (backend mpi: refused with exit 2, nothing written).
all=() n_mpi=0
for f in "$src"/scenarios/*.toml "$src"/scenarios/{gpu,thirdparty,tooling,validate}/*.toml; do
  base=$(basename "$(dirname "$f")")_$(basename "$f" .toml)
  for kind in indexed-job pytorchjob; do
    out="$work/all/$base.$kind.yaml"
    mkdir -p "$work/all"
    "$hanglab" manifest "$f" --kind "$kind" --out "$out" 2> "$work/err"; rc=$?
    if [ $rc -eq 2 ] && grep -q "workload.backend: backend mpi has no torchrun form" "$work/err"; then
      [ ! -e "$out" ] || fail "$f ($kind): refused but written"
      n_mpi=$((n_mpi + 1))
      continue
    fi
    [ $rc -eq 0 ] || fail "$f ($kind): exit $rc: $(cat "$work/err")"
    all+=("$out")
  done
done
[ ${#all[@]} -gt 100 ] || fail "only ${#all[@]} manifests from the shipped scenarios"
"$py" "$check" "${all[@]}" > "$work/all.txt" || { tail -20 "$work/all.txt"; fail "a shipped scenario's manifest is not valid"; }
echo "ok: ${#all[@]} manifests of the shipped scenarios valid ($n_mpi mpi refusals)"

# A broken file, through the same path as the good ones: must be refused.
sed 's/^  completionMode: Indexed$/  completionMod: Indexed/' "$work/net_kill_node.indexed-job.yaml" > "$work/broken-job.yaml"
cmp -s "$work/broken-job.yaml" "$work/net_kill_node.indexed-job.yaml" && fail "the sed did not break the Job"
sed 's/^\(  *\)- name: pytorch$/\1- name: trainer/' "$work/net_kill_node.pytorchjob.yaml" > "$work/broken-pytorchjob.yaml"
cmp -s "$work/broken-pytorchjob.yaml" "$work/net_kill_node.pytorchjob.yaml" && fail "the sed did not break the PyTorchJob"
"$py" "$check" --expect-invalid "$work/broken-job.yaml" "$work/broken-pytorchjob.yaml" || fail "a broken file was accepted"
echo "ok: ${#pairs[@]} manifests (YAML and JSON) valid; their broken copies and the broken files refused"
