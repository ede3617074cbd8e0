#!/usr/bin/env bash
# Configures and builds hanglab into build/ (incremental).
# usage: ci/build.sh [BUILD_DIR [CMAKE_ARG...]]   e.g. ci/build.sh build-asan -DHANGLAB_SANITIZE=address,undefined
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
# ccache (installed by install-deps.sh) makes rebuilds in fresh clones and extra build trees cheap.
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); export CCACHE_BASEDIR="$PWD"; fi
log="$dir.log"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@" > "$log" 2>&1 || { mkdir -p "$dir"; tail -40 "$log"; exit 1; }
# On failure: the lines around each error (a tool's own message, e.g. ar's "No space left on
# device", often lacks the word), and the free disk space, which a full runner exhausts first.
cmake --build "$dir" -j"$jobs" >> "$log" 2>&1 || {
  grep -E "error|Error" -B4 -A3 "$log" | head -80; df -h . | tail -1; exit 1; }
mv "$log" "$dir/build.log"
