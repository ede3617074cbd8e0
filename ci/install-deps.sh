#!/usr/bin/env bash
# Installs what hanglab needs on Debian 12 and is missing; quiet and idempotent (a no-op
# in about a second when everything is there). Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libtorch-dev libgloo-dev            # LibTorch 1.13 (CPU) with c10d ProcessGroupGloo
  libtomlplusplus-dev nlohmann-json3-dev libcli11-dev libfmt-dev catch2
  gdb procps iproute2 util-linux      # stack capture, process and namespace tools
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
