#!/usr/bin/env bash
# Quick start 1: install what is missing, build, run the default CPU scenario matrix.
# Prints one verdict line per scenario, a summary table and where the run records are.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
bash ci/build.sh
exec ./build/harness/hanglab run scenarios --results results --junit results/junit.xml "$@"
