#!/usr/bin/env bash
# End-to-end: bad input gets one line naming file:line:col and key, exit 2, nothing
# spawned and nothing written.
# usage: e2e_bad_input_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

cat > "$work/bad.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 2
[[fault]]
kind = "kill_rank"
ranks = [5]
TOML
out=$("$hanglab" run "$src/scenarios" "$work/bad.toml" --results "$work/results" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "exit $rc, want 2: $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "want exactly one line, got: $out"
echo "$out" | grep -Eq "bad.toml:6:[0-9]+: fault\[[01]\]\.ranks" || fail "line does not name file:line:col and key: $out"
[ ! -e "$work/results" ] || fail "results were written for bad input"
echo "ok: $out"

# A fault that could not do what its name says is refused the same way, before anything runs.
cat > "$work/never.toml" <<'TOML'
[scenario]
deadline_s = 30
[workload]
name = "torch_ddp"
world_size = 2
[[fault]]
kind = "kill_rank"
ranks = [1]
at_s = 45
TOML
cat > "$work/noshm.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 2
[workload.args]
num_workers = 0
[[fault]]
kind = "tiny_shm"
ranks = [1]
TOML
for case in "never.toml:9:[0-9]+: fault\[0\]\.at_s: 45 s after launch never comes" \
            "noshm.toml:7:[0-9]+: fault\[0\]\.kind: tiny_shm .*num_workers = 0"; do
  f=${case%%:*}
  out=$("$hanglab" run "$work/$f" --results "$work/results" 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "$f: exit $rc, want 2: $out"
  [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "$f: want exactly one line, got: $out"
  echo "$out" | grep -Eq "$case" || fail "$f: line does not match '$case': $out"
  [ ! -e "$work/results" ] || fail "$f: results were written for a refused fault"
  echo "ok: $out"
done

out=$("$hanglab" run "$work/missing.toml" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "missing file: exit $rc"
echo "$out" | grep -q "missing.toml:0:0" || fail "missing file not named: $out"
echo "ok: $out"

out=$("$hanglab" describe no_such_kind 2>&1); rc=$?
[ $rc -eq 2 ] || fail "describe unknown: exit $rc"
out=$("$hanglab" frobnicate 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unknown subcommand: exit $rc"
echo "ok: usage errors exit 2"
