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

# 3. Two nodes ([topology]): after a normal end and after Ctrl-C, none of the run's network
#    namespaces, bridge or veths is left (their names are in harness.jsonl's `nodes` event).
if [ "$(id -u)" -eq 0 ] && command -v ip > /dev/null; then
  cat > "$work/nodes.toml" <<TOML
# Reproduces: nothing; two nodes of two sleeping ranks, node 1 cut off from launch.
# Expected: torn down by the watchdog, then by Ctrl-C.
[scenario]
deadline_s = 60
[workload]
command = ["sh", "-c", "echo rank \$RANK up; sleep 50 & sleep 50; wait"]
world_size = 4
[topology]
nodes = 2
second_nic = true
[timeouts]
progress_s = 1
[[fault]]
kind = "partition"
nodes = [1]
TOML
  node_leftovers() {  # RUN_DIR: the run's namespaces and interfaces that still exist
    local tag
    tag=$(sed -n 's/.*"netns":"hanglab-\([a-z0-9]*\)-n0".*/\1/p' "$1/harness.jsonl" | head -1)
    [ -n "$tag" ] || { echo "no nodes event in $1/harness.jsonl"; return; }
    ip netns list | awk '{print $1}' | grep "^hanglab-$tag-"
    ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^hl$tag"
  }
  "$hanglab" run "$work/nodes.toml" --results "$work/results" --no-stacks > "$work/nodes.out" 2>&1 ||
    fail "two-node run: exit $?: $(cat "$work/nodes.out")"
  left=$(node_leftovers "$(ls -d "$work"/results/nodes/*/ | tail -1)")
  [ -z "$left" ] || fail "a two-node run left: $left"
  sed -i 's/progress_s = 1/progress_s = 50/' "$work/nodes.toml"
  "$hanglab" run "$work/nodes.toml" --results "$work/results" > "$work/nodes-int.out" 2>&1 &
  hl=$!
  for _ in $(seq 1 100); do [ -n "$(leftovers)" ] && break; sleep 0.1; done
  sleep 1
  kill -INT $hl
  wait $hl; rc=$?
  [ $rc -eq 130 ] || fail "two-node run after SIGINT: exit $rc, want 130: $(cat "$work/nodes-int.out")"
  left=$(node_leftovers "$(ls -d "$work"/results/nodes/*/ | tail -1)")
  [ -z "$left" ] || fail "Ctrl-C of a two-node run left: $left"
  [ -z "$(leftovers)" ] || fail "processes survived Ctrl-C of a two-node run: $(leftovers)"
  echo "ok: two nodes: a normal end and Ctrl-C left no namespace, bridge or veth"
fi

# 4. Every shipped torch scenario run in this build must have left nothing either.
for d in /proc/[0-9]*; do
  if tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -q '^HANGLAB_RUN_ID='; then
    if tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -q "^HANGLAB_RUN_DIR=$(dirname "$work")/test-results"; then
      fail "a scenario test's rank is still running: ${d#/proc/}"
    fi
  fi
done
echo "ok: no scenario rank left"
