#!/usr/bin/env bash
# End-to-end: `hanglab manifest` on bad input prints one line naming file:line:col and the key,
# exits 2 and writes nothing (not even an empty --out file); good input writes the file.
# usage: e2e_manifest_bad_input_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

cat > "$work/bad.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 4
[topology]
nodes = 3
TOML
cat > "$work/badfault.toml" <<'TOML'
[workload]
name = "torch_ddp"
world_size = 2
[[fault]]
kind = "kill_rank"
ranks = [5]
TOML
cat > "$work/mpi.toml" <<'TOML'
[workload]
name = "mpi_ddp"
backend = "mpi"
launcher = "mpirun"
world_size = 2
TOML
for case in "bad.toml:5:[0-9]+: topology.nodes" "badfault.toml:6:[0-9]+: fault\[0\]\.ranks" \
            "mpi.toml:1:[0-9]+: workload.backend: backend mpi has no torchrun form"; do
  f=${case%%:*}
  for kind in indexed-job pytorchjob; do
    out=$("$hanglab" manifest "$work/$f" --kind $kind --out "$work/out-$f.yaml" 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "$f ($kind): exit $rc, want 2: $out"
    [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "$f ($kind): want exactly one line, got: $out"
    echo "$out" | grep -Eq "$case" || fail "$f ($kind): line does not match '$case': $out"
    [ ! -e "$work/out-$f.yaml" ] || fail "$f ($kind): a manifest was written for bad input"
    echo "ok: $out"
  done
done

out=$("$hanglab" manifest "$work/missing.toml" --out "$work/missing.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "missing file: exit $rc"
echo "$out" | grep -q "missing.toml:0:0" || fail "missing file not named: $out"
[ ! -e "$work/missing.yaml" ] || fail "a manifest was written for a missing scenario"

for bad in "--name=Bad_Name" "--name=9lives" "--name=$(printf 'a%.0s' {1..41})" "--kind=deployment" "--image=" \
           "--image=two words" "--rdzv-port=0"; do
  out=$("$hanglab" manifest "$src/scenarios/kill_rank.toml" "$bad" --out "$work/opt.yaml" 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "$bad: exit $rc, want 2: $out"
  [ ! -e "$work/opt.yaml" ] || fail "$bad: a manifest was written"
  echo "ok ($bad): $(echo "$out" | head -1)"
done

out=$("$hanglab" manifest "$src/scenarios/kill_rank.toml" --out "$work/no/such/dir/x.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unwritable --out: exit $rc, want 2: $out"
echo "ok (unwritable --out): $out"

# and the good case writes exactly the file asked for
"$hanglab" manifest "$src/scenarios/kill_rank.toml" --out "$work/good.yaml" 2> "$work/good.err" || fail "good input failed: $(cat "$work/good.err")"
grep -q "^kind: Job$" "$work/good.yaml" || fail "no Job in $work/good.yaml"
echo "ok: good input wrote $work/good.yaml"
