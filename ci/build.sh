#!/usr/bin/env bash
# Configures and builds hanglab into build/ (incremental).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
# ccache (installed by install-deps.sh) makes rebuilds in fresh clones and extra build trees cheap.
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); export CCACHE_BASEDIR="$PWD"; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" > build.log 2>&1 || { mkdir -p build; tail -40 build.log; exit 1; }
cmake --build build -j"$jobs" >> build.log 2>&1 || { grep -E "error|Error" -A3 build.log | head -60; exit 1; }
mv build.log build/build.log
