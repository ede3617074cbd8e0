#!/usr/bin/env bash
# The detection-tooling matrix in one command: runs every fault scenario of scenarios/tooling
# (or the scenario files/directories given) with `hanglab run`, then renders which tools saw
# each fault — the ranks' own PG/Gloo error, NCCL's heartbeat monitor, Flight Recorder dumps
# read by torchfrtrace and by hanglab, torchrun's failure summary, hanglab's detectors and
# triage — when, and whether each named the right rank and cause:
#   OUT/tooling-matrix.md and OUT/tooling-matrix.html (OUT: results/ by default).
# The runs go to OUT/tooling-runs/<UTC stamp>/ (one run directory per scenario); a failed
# expectation of a scenario does not stop the matrix (the table shows what happened), a
# scenario or usage error (hanglab exit 2) does.
# usage: ci/tooling-matrix.sh [SCENARIO_FILE_OR_DIR...]
#        ci/tooling-matrix.sh --render RUNS_DIR   (re-render earlier runs, e.g. after a renderer
#                                                  change; their origin line is kept in RUNS_DIR/ORIGIN)
#   env: HANGLAB (default build/harness/hanglab), OUT (default results),
#        JOBS (runs at once, default 1: the runs are timing-sensitive and the machine small)
set -uo pipefail
cd "$(dirname "$0")/.."
hanglab=${HANGLAB:-build/harness/hanglab}
out=${OUT:-results}
jobs=${JOBS:-1}
[ -x "$hanglab" ] || { echo "ci/tooling-matrix.sh: $hanglab not built (bash ci/build.sh)" >&2; exit 2; }
if [ "${1:-}" = "--render" ]; then
  runs=${2:?--render RUNS_DIR}
  [ -d "$runs" ] || { echo "ci/tooling-matrix.sh: $runs: no such directory" >&2; exit 2; }
else
  [ $# -gt 0 ] || set -- scenarios/tooling
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
  runs="$out/tooling-runs/$stamp"
  mkdir -p "$runs"
  commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
  git diff --quiet HEAD 2> /dev/null || commit="$commit (with uncommitted changes)"
  torch=$(.venv/bin/python -c 'import torch; print(torch.__version__)' 2> /dev/null || echo "?")
  echo "Runs made $(date -u +%Y-%m-%dT%H:%MZ) by ci/tooling-matrix.sh at commit $commit on $(uname -n) ($(nproc) CPUs, torch $torch, CPU only: Gloo)" > "$runs/ORIGIN"

  "$hanglab" run "$@" --results "$runs" -j "$jobs"
  rc=$?
  case $rc in
    0 | 1 | 3 | 4) ;;  # pass / an expectation failed / unknown / skipped: the matrix shows it
    *) echo "ci/tooling-matrix.sh: hanglab run exited $rc" >&2; exit $rc ;;
  esac
fi

dirs=()
for d in "$runs"/*/; do
  [ -L "${d%/}" ] && continue  # results/latest
  newest=$(ls -d "$d"2*Z 2> /dev/null | sort | tail -1)
  [ -n "$newest" ] && [ -f "$newest/run.json" ] && dirs+=("$newest")
done
[ ${#dirs[@]} -gt 0 ] || { echo "ci/tooling-matrix.sh: no run directories under $runs" >&2; exit 3; }

origin="$(cat "$runs/ORIGIN" 2> /dev/null || echo "Runs of unknown origin"); ${#dirs[@]} run directories in $runs."
"$hanglab" report --format none --tooling-matrix "$out/tooling-matrix.md" --origin "$origin" "${dirs[@]}"
