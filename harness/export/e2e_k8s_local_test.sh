#!/usr/bin/env bash
# End-to-end: the Indexed Job `hanglab manifest` writes for a 2-node scenario, run on this host the
# way its pods would run it (k8s_emulate.py: one torchrun per pod, the container's args and env as
# the kubelet hands them over; for the PyTorchJob also the env its operator adds): the built-in
# workload must train to the end with ranks 0,1 in pod 0 and 2,3 in pod 1, as an Indexed Job and as a
# PyTorchJob (whose PET_NNODES=1:1 the explicit --nnodes 2 overrides); and a bring-your-own command (python_ddp_baseline: train.py on torchrun's agent
# store) must complete in its one pod; with --preflight, the init container's hanglab preflight must pass first, in
# both kinds. Skipped (exit 4) where torch_ddp or the venv's torchrun is missing.
# usage: e2e_k8s_local_test.sh HANGLAB SOURCE_DIR WORKLOAD_DIR WORK_DIR
set -u
hanglab=$1 src=$2 wdir=$3 work=$4
rm -rf "$work"; mkdir -p "$work"
venv=${HANGLAB_VENV:-$src/.venv}
[ -x "$wdir/torch_ddp" ] || { echo "SKIP: $wdir/torch_ddp is not built"; exit 4; }
[ -x "$venv/bin/torchrun" ] || { echo "SKIP: no $venv/bin/torchrun"; exit 4; }
rc=0
# --preflight on one pod of 2 ranks (this host has 2 CPUs: preflight's cpu.quota would rightly refuse 4 ranks):
# the init container's preflight binds the rendezvous port (the port check) and must have released it
# when the pod's torchrun binds it right after.
mkdir -p "$work/sc"
cat > "$work/sc/two_ranks.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 2
steps = 3
TOML
for case in net_baseline:indexed-job net_baseline:pytorchjob python_ddp_baseline:indexed-job \
            two_ranks:indexed-job:--preflight two_ranks:pytorchjob:--preflight; do
  sc=${case%%:*} rest=${case#*:} kind=${rest%%:*} flag=; [ "$rest" != "$kind" ] && flag=${rest#*:}
  scf="$src/scenarios/$sc.toml"; [ -e "$scf" ] || scf="$work/sc/$sc.toml"
  "$hanglab" manifest "$scf" --kind "$kind" --format json $flag --out "$work/$sc.$kind$flag.json" || exit 1
  if [ -n "$flag" ]; then
    grep -q '"initContainers"' "$work/$sc.$kind$flag.json" || { echo "FAIL: $flag: no init container"; exit 1; }
    sc_json=$sc.$kind$flag
  else
    sc_json=$sc.$kind
  fi
  echo "$sc ($kind $flag):"
  "$venv/bin/python" "$(dirname "$0")/k8s_emulate.py" "$work/$sc_json.json" "$src" "$venv" "$wdir" "$work/$sc_json" ||
    rc=1
done
exit $rc
