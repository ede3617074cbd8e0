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
# A node fault on a node the topology does not have, and one that names ranks: refused before
# any namespace or bridge is made.
cat > "$work/nonode.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 4
[topology]
nodes = 2
[[fault]]
kind = "partition"
nodes = [2]
TOML
cat > "$work/noderanks.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 4
[topology]
nodes = 2
[[fault]]
kind = "kill_node"
ranks = [1]
TOML
for case in "never.toml:9:[0-9]+: fault\[0\]\.at_s: 45 s after launch never comes" \
            "noshm.toml:7:[0-9]+: fault\[0\]\.kind: tiny_shm .*num_workers = 0" \
            "nonode.toml:8:[0-9]+: fault\[0\]\.nodes: node 2 does not exist" \
            "noderanks.toml:8:[0-9]+: fault\[0\]\.ranks: kill_node acts on whole nodes"; do
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
echo "$out" | grep -q "unknown subcommand 'frobnicate'" || fail "unknown subcommand not named: $out"
out=$("$hanglab" frobnicate --help 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unknown subcommand with --help: exit $rc (printed: $out)"
echo "$out" | grep -q "unknown subcommand 'frobnicate'" || fail "unknown subcommand with --help not named: $out"
echo "ok: usage errors exit 2"

# Usage errors the file alone cannot show: each one line naming file:line:col and key,
# exit 2, nothing spawned, nothing written.
expect_usage_error() {  # NAME WANT_REGEX  (scenario text on stdin)
  local name=$1 want=$2 f="$work/$1.toml" marker="$work/spawned-$1"
  cat > "$f"
  out=$("$hanglab" run "$f" --results "$work/results" 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, want 2: $out"
  [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "$name: want exactly one line, got: $out"
  echo "$out" | grep -Eq "$want" || fail "$name: line does not match /$want/: $out"
  [ ! -e "$work/results" ] || fail "$name: results were written"
  [ ! -e "$marker" ] || fail "$name: something was spawned"
  echo "ok: $out"
}
expect_usage_error missing_exe "missing_exe.toml:2:12: workload.command: program 'no-such-trainer-xyz' not found on PATH" <<TOML
[workload]
command = ["no-such-trainer-xyz", "--touch", "$work/spawned-missing_exe"]
world_size = 2
TOML
expect_usage_error missing_path "missing_path.toml:2:12: workload.command: no such file: /nonexistent/bin/train" <<TOML
[workload]
command = ["/nonexistent/bin/train"]
world_size = 2
TOML
expect_usage_error not_exec "not_exec.toml:2:12: workload.command: not an executable file" <<TOML
[workload]
command = ["$work"]
world_size = 2
TOML
expect_usage_error missing_script "missing_script.toml:2:[0-9]+: workload.command: bash script not found: $work/nope.sh" <<TOML
[workload]
command = ["bash", "$work/nope.sh", "touch", "$work/spawned-missing_script"]
world_size = 2
TOML
# unreadable: only meaningful where permissions bind (not root)
if [ "$(id -u)" -ne 0 ]; then
  echo 'touch x' > "$work/secret.sh"; chmod 000 "$work/secret.sh"
  expect_usage_error unreadable_script "workload.command: bash script not readable" <<TOML
[workload]
command = ["bash", "$work/secret.sh"]
TOML
fi
expect_usage_error mpi_local "mpi_local.toml:[0-9]+:[0-9]+: workload.launcher: mpi_ddp runs several ranks only under launcher" <<TOML
[workload]
name = "mpi_ddp"
backend = "mpi"
launcher = "local"
world_size = 3
TOML
# A script given with -m (a module) or -c is not a file: no false alarm; it runs.
cat > "$work/module_ok.toml" <<TOML
[workload]
command = ["/bin/sh", "-c", "exit 0"]
world_size = 1
TOML
out=$("$hanglab" run "$work/module_ok.toml" --results "$work/ok-results" --no-stacks 2>&1); rc=$?
[ $rc -eq 0 ] || fail "sh -c with no [expect]: exit $rc, want 0 (observed): $out"
echo "$out" | grep -q "^OBSERVED" || fail "no [expect] is not reported as observed: $out"
echo "ok: sh -c runs, verdict observed"

# The tooling matrix over a directory that is not a run: one line, exit 2, the old table kept.
echo "old table" > "$work/tooling-matrix.md"
out=$("$hanglab" report --format none --tooling-matrix "$work/tooling-matrix.md" "$src/scenarios" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "report --tooling-matrix on a non-run: exit $rc, want 2: $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "want exactly one line, got: $out"
echo "$out" | grep -q "scenarios:0:0: .*not a hanglab run directory" || fail "line does not name the directory: $out"
[ "$(cat "$work/tooling-matrix.md")" = "old table" ] && [ ! -e "$work/tooling-matrix.html" ] || fail "the matrix was (over)written"
# A torch knob of the wrong type in [torch]: the same one line, exit 2, nothing run.
cat > "$work/badknob.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 2
[torch]
nccl_heartbeat_timeout_s = "10m"
TOML
out=$("$hanglab" run "$work/badknob.toml" --results "$work/results-knob" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad knob: exit $rc, want 2: $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "bad knob: want exactly one line, got: $out"
echo "$out" | grep -q "badknob.toml:5:28: torch.nccl_heartbeat_timeout_s: expected an integer" || fail "bad knob not named: $out"
[ ! -e "$work/results-knob" ] || fail "results were written for a bad knob"
echo "ok: $out"
