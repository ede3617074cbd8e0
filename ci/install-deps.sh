#!/usr/bin/env bash
# Installs what hanglab needs on Debian 12 and is missing; quiet and idempotent (a no-op
# in about a second when everything is there). Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ccache
  clang libclang-rt-14-dev            # ci/fuzz.sh: libFuzzer + ASan/UBSan over log triage
  libtomlplusplus-dev nlohmann-json3-dev libcli11-dev libfmt-dev catch2
  libgloo-dev                         # gloo/*.h: the torch wheel's ProcessGroupGloo.hpp includes them and
                                      # ships none; only the store-v1 interface is seen (GLOO_STORE_HAS_STORE_V2 unset)
  gdb procps iproute2 util-linux      # stack capture, process and namespace tools
  iputils-ping                        # [topology] nodes: the reachability probe between nodes (ping)
  nftables                            # [topology] nodes: partition, loss, MTU and store faults (nft in node namespaces)
  libfuse3-dev fuse3                  # hanglab_slowfs (slow_storage fault)
  libsqlite3-dev                      # run history: <results>/history.sqlite
  chromium                            # e2e.html: report.html in a real (headless) browser
  libopenmpi-dev openmpi-bin          # mpi_ddp workload and the mpirun launcher
  slurmctld slurmd slurm-client       # the srun launcher: a private slurmctld + slurmd per run (Slurm 22.05).
                                      # munge comes along as a dependency but is never started: 22.05 still
                                      # has auth/none + cred/none (removed in 23.11), which the run's own
                                      # slurm.conf selects. The packages' services are not used (nor started
                                      # in a container: policy-rc.d); hanglab runs the daemons itself.
  python3-torch python3-pip           # workloads/python_ddp (bring-your-own DDP script), py-spy below
  python3-venv                        # the project venv (.venv): torch 2.x from PyPI, below
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "ci/install-deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" > /tmp/hanglab-apt.log 2>&1 || {
    tail -30 /tmp/hanglab-apt.log; exit 1; }
fi

# py-spy (Python stack dumps of bring-your-own Python ranks) for Debian's interpreter,
# which is the one with python3-torch; the `python3` first on PATH may be another one.
if ! /usr/bin/python3 -m pip show -q py-spy > /dev/null 2>&1; then
  echo "ci/install-deps.sh: installing py-spy (pip, for /usr/bin/python3)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO /usr/bin/python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --no-cache-dir --break-system-packages py-spy > /tmp/hanglab-pip.log 2>&1 || { tail -20 /tmp/hanglab-pip.log; exit 1; }
fi

# The project venv (.venv at the repository root): a pinned torch from PyPI. It ships
# LibTorch 2.x for the C++ workloads (headers, libraries, share/cmake/Torch; C++20),
# torchrun and torchfrtrace, with the CUDA runtime and NCCL wheels, so the same build
# serves GPU runners. pip keeps no cache (--no-cache-dir): its ~3 GB of wheels would sit
# beside the venv on a CI runner's disk, which other tenants share.
HANGLAB_TORCH_VERSION=${HANGLAB_TORCH_VERSION:-2.15.0}
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
if ! "$venv/bin/python" - "$HANGLAB_TORCH_VERSION" > /dev/null 2>&1 <<'PY'
import sys, torch, numpy
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] else 1)
PY
then
  echo "ci/install-deps.sh: installing torch==$HANGLAB_TORCH_VERSION into $venv (pip, ~5 GB with CUDA and NCCL wheels)"
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check "torch==$HANGLAB_TORCH_VERSION" numpy py-spy \
    > /tmp/hanglab-pip-torch.log 2>&1 || { tail -20 /tmp/hanglab-pip-torch.log; exit 1; }
fi

# Third-party distributed training programs for scenarios/thirdparty/ (label `thirdparty`):
# run as their wheels ship them, never copied into this repository. Pinned; installed only
# when missing, against the venv's torch (a constraint, so pip never swaps torch for another).
# TRL (Hugging Face's trainer library) brings transformers, datasets and accelerate; its
# `trl.scripts.sft` trains a tiny offline model that ci/make_tiny_lm.py writes below.
HANGLAB_THIRDPARTY=(lightning==2.6.6 "jsonargparse[signatures]==4.40.0" trl==1.16.0 transformers==5.24.0
                    datasets==5.2.0 accelerate==1.15.0)
if ! "$venv/bin/python" - "${HANGLAB_THIRDPARTY[@]}" > /dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1:]:
    name, want = spec.split("==")
    try:
        have = version(name.split("[")[0])
    except PackageNotFoundError:
        sys.exit(1)
    if have != want:
        sys.exit(1)
PY
then
  echo "ci/install-deps.sh: installing ${HANGLAB_THIRDPARTY[*]} into $venv (pip)"
  constraints=$(mktemp)
  "$venv/bin/python" -c 'import torch, numpy; print(f"torch=={torch.__version__.split(chr(43))[0]}\nnumpy=={numpy.__version__}")' > "$constraints"
  "$venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check -c "$constraints" "${HANGLAB_THIRDPARTY[@]}" \
    > /tmp/hanglab-pip-thirdparty.log 2>&1 || { rm -f "$constraints"; tail -20 /tmp/hanglab-pip-thirdparty.log; exit 1; }
  rm -f "$constraints"
fi

# `hanglab manifest` (Kubernetes) schema checks, test e2e.k8s_manifest_schema: kubernetes-validate ships the
# Kubernetes JSON schemas (1.25-1.37) and validates a Job and a Service against one; kubeflow-training is the
# Training Operator SDK, whose generated model classes describe PyTorchJob (kubeflow.org/v1). Pure Python; they
# bring kubernetes (the client, for its model classes), jsonschema, referencing, requests and a few small
# packages, and replace nothing already in the venv (torch and numpy are pinned by the same constraint file).
HANGLAB_K8S=(kubernetes-validate==1.37.0 kubeflow-training==1.9.4)
if ! "$venv/bin/python" - "${HANGLAB_K8S[@]}" > /dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1:]:
    name, want = spec.split("==")
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
then
  echo "ci/install-deps.sh: installing ${HANGLAB_K8S[*]} into $venv (pip)"
  constraints=$(mktemp)
  "$venv/bin/python" -c 'import torch, numpy; print(f"torch=={torch.__version__.split(chr(43))[0]}\nnumpy=={numpy.__version__}")' > "$constraints"
  "$venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check -c "$constraints" "${HANGLAB_K8S[@]}" \
    > /tmp/hanglab-pip-k8s.log 2>&1 || { rm -f "$constraints"; tail -20 /tmp/hanglab-pip-k8s.log; exit 1; }
  rm -f "$constraints"
fi

# The offline inputs of scenarios/thirdparty/trl_*.toml (a tiny GPT-2, a tokenizer and a
# text dataset; see the script), made once per venv.
tiny_lm="$venv/share/hanglab/tiny-lm"
if [ ! -f "$tiny_lm/model/model.safetensors" ]; then
  echo "ci/install-deps.sh: writing the tiny offline model for the TRL scenarios ($tiny_lm)"
  mkdir -p "$(dirname "$tiny_lm")"
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$root/ci/make_tiny_lm.py" "$tiny_lm" > /tmp/hanglab-tiny-lm.log 2>&1 ||
    { tail -20 /tmp/hanglab-tiny-lm.log; exit 1; }
fi
