#!/usr/bin/env bash
# Quick start 2: install what is missing, build, run the whole test suite (Catch2 unit
# tests and the end-to-end scenario tests, through CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
bash ci/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
cd build
exec ctest --output-on-failure -j"$jobs" "$@"
