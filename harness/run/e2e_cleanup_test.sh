#!/usr/bin/env bash
# End-to-end: a hanglab run leaves no rank process behind, after a normal run and after
# Ctrl-C (SIGINT to hanglab) in the middle of a run.
# usage: e2e_cleanup_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# Ranks are found by the run directory in their environment (unique to this test).
leftovers() {
  local found=""
  for e in /proc/[0-9]*/environ; do
    if tr '\0' '\n' < "$e" 2>/dev/null | grep -q "^HANGLAB_RUN_DIR=$work"; then
      found+=" ${e#/proc/}"
    fi
  done
  echo "${found// \/environ/}"
}

cat > "$work/sleepers.toml" <<TOML
# Reproduces: nothing; four ranks that sleep (a stand-in for a hung job).
# Expected: torn down by Ctrl-C.
[scenario]
deadline_s = 60
[workload]
command = ["sh", "-c", "echo rank \$RANK up; sleep 50 & sleep 50; wait"]
world_size = 4
[timeouts]
progress_s = 50
TOML

# 1. Ctrl-C mid-run.
"$hanglab" run "$work/sleepers.toml" --results "$work/results" > "$work/int.out" 2>&1 &
hl=$!
sleep 2
[ -n "$(leftovers)" ] || fail "ranks did not start: $(cat "$work/int.out")"
kill -INT $hl
wait $hl; rc=$?
[ $rc -eq 130 ] || fail "hanglab exit code after SIGINT was $rc, want 130: $(cat "$work/int.out")"
sleep 0.5
left=$(leftovers)
[ -z "$left" ] || fail "processes survived Ctrl-C: $left"
grep -q '"reason":"interrupted"' "$work"/results/sleepers/*/harness.jsonl || fail "no interrupted teardown recorded"
echo "ok: Ctrl-C left nothing behind"

# 2. A normal hang -> watchdog -> teardown.
sed -i 's/progress_s = 50/progress_s = 1/' "$work/sleepers.toml"
"$hanglab" run "$work/sleepers.toml" --results "$work/results" --no-stacks > "$work/hang.out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "want exit 0 (no expectations: verdict observed), got $rc: $(cat "$work/hang.out")"
grep -q "^OBSERVED" "$work/hang.out" || fail "no OBSERVED verdict line: $(cat "$work/hang.out")"
left=$(leftovers)
[ -z "$left" ] || fail "processes survived a watchdog teardown: $left"
echo "ok: watchdog teardown left nothing behind"

# 3. Every shipped torch scenario run in this build must have left nothing either.
for d in /proc/[0-9]*; do
  if tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -q '^HANGLAB_RUN_ID='; then
    if tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -q "^HANGLAB_RUN_DIR=$(dirname "$work")/test-results"; then
      fail "a scenario test's rank is still running: ${d#/proc/}"
    fi
  fi
done
echo "ok: no scenario rank left"
