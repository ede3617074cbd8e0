#!/usr/bin/env bash
# End-to-end: the detection-tooling matrix. ci/tooling-matrix.sh runs two scenarios of
# scenarios/tooling for real (Python DDP ranks under torchrun, Gloo, Flight Recorder on) and
# renders tooling-matrix.md/.html; the cells that are facts of those faults are checked:
#   kill_rank (rank 2 SIGKILLed between collectives): torchrun's summary names rank 2 with
#     exitcode -9; hanglab's reading of the FR dumps and its triage name rank 2; the heartbeat
#     monitor is n/a on Gloo; every tool that answered did so after the fault.
#   early_exit (rank 1 leaves the loop and exits 0): the fault is dated by rank 1's own line;
#     torchrun can only name a rank that failed, so it names a victim; triage names rank 1
#     (collective_mismatch).
# Exit 4 (skipped) where the venv has no torch.
# usage: e2e_tooling_matrix_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$src/.venv/bin/python" -c 'import torch' 2> /dev/null || { echo "SKIP: no torch in $src/.venv"; exit 4; }

HANGLAB=$hanglab OUT=$work bash "$src/ci/tooling-matrix.sh" "$src/scenarios/tooling/kill_rank.toml" \
  "$src/scenarios/tooling/early_exit.toml" > "$work/out.txt" 2>&1
rc=$?
cat "$work/out.txt"
[ $rc -eq 0 ] || fail "ci/tooling-matrix.sh exited $rc"
md=$work/tooling-matrix.md html=$work/tooling-matrix.html
[ -s "$md" ] && [ -s "$html" ] || fail "no $md / $html"
grep -q '^Runs made .* by ci/tooling-matrix.sh at commit ' "$md" || fail "no origin line"

# cell ROW COLUMN: a table cell of the row whose first cell starts with **ROW**.
# Columns: 2 fault, 3 truth, 4 setup, 5 PG/Gloo, 6 heartbeat, 7 torchfrtrace, 8 FR->hanglab,
# 9 torchrun, 10 hanglab detectors, 11 triage.
cell() { awk -F'|' -v row="$1" -v col="$2" 'index($2, " **" row "**") == 1 { print $col }' "$md"; }
expect() {  # expect ROW COLUMN REGEX WHAT
  local c; c=$(cell "$1" "$2")
  [[ "$c" =~ $3 ]] || fail "$1: $4: want /$3/, got '$c'"
  echo "ok: $1: $4:$c"
}
[ "$(grep -c '^| \*\*' "$md")" -eq 2 ] || fail "want 2 rows in $md"

expect kill_rank 3 'rank 2: rank_exit/killed' "truth from the scenario"
expect kill_rank 6 'n/a: Gloo' "heartbeat monitor n/a on Gloo"
expect kill_rank 9 '^ fired \+[0-9.]+ s; rank 2 ✓; rank_exit/killed ✓' "torchrun names rank 2, SIGKILL"
expect kill_rank 8 'fired after run, \+[0-9.]+ s; rank 2 ✓' "hanglab on the FR dumps names rank 2"
expect kill_rank 11 'rank 2 ✓; rank_exit/killed ✓' "triage"
expect kill_rank 10 'fired \+0\.[0-9] s; rank 2 ✓' "exit_monitor within a second"

expect HANGLAB_PY_EXIT_STEP=6 3 'rank 1: collective_mismatch' "truth from [expect.triage]"
expect HANGLAB_PY_EXIT_STEP=6 9 '; rank [02] ✗ \(victim\)' "torchrun blames a rank that complained"
expect HANGLAB_PY_EXIT_STEP=6 11 'rank 1 ✓; collective_mismatch/[a-z_]+ [✓~]' "triage names rank 1"
grep -q "early_exit\`: rank 1's line .*HANGLAB_PY_EXIT_STEP" "$md" || fail "early_exit not dated by rank 1's line"

grep -q '<td class="good"' "$html" || fail "no green cell in the HTML page"
grep -q "https\?://[a-z]" <(grep -o '\(src\|href\)="[^"]*"' "$html") && fail "the HTML page references the network"
echo "ok: $md, $html"
