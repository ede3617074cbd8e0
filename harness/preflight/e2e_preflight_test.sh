#!/usr/bin/env bash
# End-to-end: `hanglab preflight` on this host as a user runs it. Bad input (an unknown option, a
# malformed environment value, a checkpoint directory that is not there) is one line on stderr, exit 2,
# nothing on stdout and no --out file; a healthy standalone run exits 0 with one JSON object per check
# (name, node, status, measured, rule, detail) and well-formed JUnit; a failing check exits 1 and is
# named with its node and the measured value against its rule; a check that needs a GPU exits 4 here;
# a torchrun worker needs --port, runs on LOCAL_RANK 0 only, and passes under the real torchrun; a node
# whose MASTER_ADDR is black-holed fails within --deadline-s.
# usage: e2e_preflight_test.sh HANGLAB WORK_DIR [VENV]
set -u
hanglab=$1 work=$2 venv=${3:-}
# A previous run of this test killed mid-way (a CTest timeout, a Ctrl-C) left its runs' state in
# $work/state: sweep it before removing it, or what those runs hold (namespaces, cgroups) is lost to
# every later sweep.
[ -d "$work/state" ] && HANGLAB_STATE_DIR=$work/state "$hanglab" clean > /dev/null 2>&1
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# A clean environment: only what each case sets (the CI's own MASTER_*/SLURM_* must not leak in).
run() { env -i PATH="$PATH" HOME="${HOME:-/root}" "$@"; }

bad() {  # bad DESCRIPTION PATTERN CMD...
  local what=$1 pat=$2; shift 2
  rm -f "$work/out.json"
  run "$@" --out "$work/out.json" > "$work/stdout" 2> "$work/stderr"; local rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, want 2: $(cat "$work/stderr")"
  [ "$(wc -l < "$work/stderr")" -eq 1 ] || fail "$what: want one line on stderr, got: $(cat "$work/stderr")"
  [ ! -s "$work/stdout" ] || fail "$what: printed on stdout: $(cat "$work/stdout")"
  [ ! -e "$work/out.json" ] || fail "$what: wrote --out"
  grep -q -- "$pat" "$work/stderr" || fail "$what: '$pat' not in: $(cat "$work/stderr")"
  echo "ok: $what: $(cat "$work/stderr")"
}
bad "unknown option" "--frob" "$hanglab" preflight --frob
bad "malformed MASTER_PORT" "MASTER_PORT=abc" env MASTER_PORT=abc "$hanglab" preflight
bad "malformed NODE_RANK" "NODE_RANK=x" env MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 NNODES=2 NODE_RANK=x "$hanglab" preflight
bad "WORLD_SIZE 0" "WORLD_SIZE=0" env WORLD_SIZE=0 "$hanglab" preflight
bad "node rank beyond the nodes" "not below the node count" env MASTER_ADDR=a MASTER_PORT=1 NNODES=2 NODE_RANK=2 "$hanglab" preflight
bad "missing checkpoint dir" "No such file or directory" "$hanglab" preflight --ckpt-dir "$work/nope"
touch "$work/afile"
bad "checkpoint dir is a file" "Not a directory" "$hanglab" preflight --ckpt-dir "$work/afile"
bad "bad byte count" "--batch-bytes" "$hanglab" preflight --loader-workers 2 --batch-bytes 12parsecs
bad "torchrun worker without --port" "--port" env TORCHELASTIC_RUN_ID=r GROUP_RANK=0 GROUP_WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 "$hanglab" preflight
bad "--port outside torchrun" "torchrun workers" "$hanglab" preflight --port 29999

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
mkdir -p "$work/ckpt"
run env MASTER_PORT=$port "$hanglab" preflight --ckpt-dir "$work/ckpt" --ckpt-probe-bytes 1MiB --format json \
  --out "$work/pf.json" > "$work/stdout" 2> "$work/stderr"; rc=$?
[ $rc -eq 0 ] || fail "healthy standalone: exit $rc: $(cat "$work/stdout" "$work/stderr")"
python3 - "$work/pf.json" <<'PY' || fail "JSON report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["preflight"]["exit_code"] == 0, r["preflight"]
assert r["checks"], "no checks"
names = set()
for c in r["checks"]:
    for k in ("name", "node", "status", "measured", "rule", "detail"):
        assert k in c, (k, c)
    assert c["status"] in ("pass", "warn", "fail", "skip"), c
    names.add(c["name"])
for want in ("shm.capacity", "cpu.quota", "storage.ckpt", "master.port", "master.reach", "env.lint"):
    assert want in names, (want, sorted(names))
print("ok: JSON report:", len(r["checks"]), "checks")
PY
run env MASTER_PORT=$port "$hanglab" preflight --format junit > "$work/junit.xml" || fail "junit run"
python3 -c "import sys, xml.etree.ElementTree as E; t=E.parse(sys.argv[1]); s=t.getroot().find('testsuite'); assert int(s.get('tests')) > 5; print('ok: JUnit', s.get('tests'), 'testcases')" "$work/junit.xml" || fail "JUnit"

# A failing check: exit 1, named with its node, the measured value and the rule.
run env MASTER_PORT=$port "$hanglab" preflight --ranks-per-node 64 > "$work/stdout" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "64 ranks on this host: exit $rc, want 1"
grep -A1 -E "FAIL +cpu.quota +node0 \(.*\) +[0-9.]+ CPUs" "$work/stdout" | grep -q "rule: >= 64 (one per rank)" ||
  fail "cpu.quota not named with node, measured value and rule: $(cat "$work/stdout")"
echo "ok: exit 1: $(grep -A1 'FAIL  cpu.quota' "$work/stdout" | tr -s ' ')"

# A check that needs a GPU, on a host without one: exit 4.
if ! ls /dev/nvidia[0-9]* > /dev/null 2>&1; then
  run env MASTER_PORT=$port "$hanglab" preflight --backend nccl > "$work/stdout" 2>&1; rc=$?
  [ $rc -eq 4 ] || fail "backend nccl without a GPU: exit $rc, want 4: $(cat "$work/stdout")"
  grep -q "needs a GPU" "$work/stdout" || fail "the skip does not say what it needs"
  echo "ok: exit 4 (gpu.devices needs a GPU)"
fi

# A black-holed MASTER_ADDR: a named failure within the deadline.
start=$(date +%s.%N)
run env MASTER_ADDR=192.0.2.7 MASTER_PORT=$port NNODES=2 NODE_RANK=1 "$hanglab" preflight --deadline-s 3 > "$work/stdout" 2>&1; rc=$?
took=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 2))")
[ $rc -eq 1 ] || fail "black-holed master: exit $rc"
python3 -c "import sys; sys.exit(0 if $took < 3.5 else 1)" || fail "black-holed master took $took s (deadline 3 s)"
grep -q "FAIL  master.reach" "$work/stdout" || fail "master.reach not named: $(cat "$work/stdout")"
echo "ok: black-holed MASTER_ADDR named in $took s"

# torchrun: a worker other than LOCAL_RANK 0 leaves the node to it; under the real torchrun, with --port.
run env TORCHELASTIC_RUN_ID=r GROUP_RANK=0 GROUP_WORLD_SIZE=1 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 MASTER_PORT=$port \
  "$hanglab" preflight --port 1 > "$work/stdout" 2>&1 || fail "local rank 1 under torchrun: $(cat "$work/stdout")"
grep -q "once per node, on LOCAL_RANK 0" "$work/stdout" || fail "local rank 1: $(cat "$work/stdout")"
if [ -n "$venv" ] && [ -x "$venv/bin/torchrun" ]; then
  p2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
  run "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 2 --master-port $port --no-python "$hanglab" preflight --port $p2 \
    --deadline-s 20 > "$work/torchrun.out" 2>&1; rc=$?
  [ $rc -eq 0 ] || fail "under torchrun: exit $rc: $(tail -20 "$work/torchrun.out")"
  grep -q "held by torchrun's agent store" "$work/torchrun.out" || fail "master.port under torchrun: $(cat "$work/torchrun.out")"
  echo "ok: under torchrun (rendezvous on --port $p2, MASTER_PORT $port left to the agent)"
fi
# kill -9 of hanglab in the middle of a [preflight] scenario: the next start's sweep leaves nothing (the
# node processes, a wrapper's sleep, the namespaces), as for a run of ranks.
scn=$(dirname "$0")/../../scenarios/preflight/preflight_never_starts.toml
if [ "$(id -u)" = 0 ] && command -v ip > /dev/null && [ -e "$scn" ]; then
  export HANGLAB_STATE_DIR="$work/state"
  "$hanglab" run "$scn" --results "$work/k9" > "$work/k9.out" 2>&1 & hp=$!
  for _ in $(seq 100); do [ -e "$(ls -d "$work"/k9/preflight_never_starts/2*/preflight/go 2>/dev/null | head -1)" ] && break; sleep 0.1; done
  kill -9 $hp; wait $hp 2> /dev/null
  # What the dead run recorded: its process marker and its namespaces.
  python3 - "$work"/state/*.jsonl > "$work/recorded.txt" <<'PY'
import json, sys
for f in sys.argv[1:]:
    for line in open(f):
        e = json.loads(line)
        if e.get("op") == "env" and e.get("key") == "HANGLAB_RUN_ID": print("marker", e["value"])
        if e.get("op") == "netns": print("netns", e["name"])
PY
  run_id=$(awk '$1 == "marker" {print $2}' "$work/recorded.txt")
  awk '$1 == "netns" {print $2}' "$work/recorded.txt" > "$work/netns.txt"
  [ -n "$run_id" ] || fail "kill -9: no run marker in the state file"
  [ -s "$work/netns.txt" ] || fail "kill -9: no namespace recorded"
  "$hanglab" clean > "$work/clean.out" 2>&1
  left=$(grep -l "HANGLAB_RUN_ID=$run_id" /proc/[0-9]*/environ 2> /dev/null | wc -l)
  [ "$left" -eq 0 ] || fail "kill -9: $left processes of the run left after the sweep"
  for ns in $(cat "$work/netns.txt"); do ! ip netns list | grep -qw "$ns" || fail "kill -9: namespace $ns left"; done
  grep -q "swept" "$work/clean.out" || fail "kill -9: the sweep did not run: $(cat "$work/clean.out")"
  echo "ok: kill -9 mid-preflight: $(cat "$work/clean.out")"
  unset HANGLAB_STATE_DIR
fi
echo "PASS"
