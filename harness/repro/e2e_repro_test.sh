#!/usr/bin/env bash
# End-to-end: `hanglab repro --run` on a fixed subset of the real-log corpus, one or more cases of
# each class (init, collective mismatch, kill/OOM/crash, a crash in shutdown, freeze (missing by absence), shm,
# network interface, checkpoint); each must write its scenario(s) and print a "reproduced" (or,
# for an incident that states no cause, "consistent with the incident") line, exit 0. Then bad
# input: one line, exit 2, nothing written or spawned.
# usage: e2e_repro_test.sh HANGLAB SOURCE_DIR WORK_DIR [CASE...]
set -u
hanglab=$1 src=$2 work=$3
shift 3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
corpus=$src/harness/testdata/reallogs

cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  cases=(
    gh-open-sora-667               # init: the store never reached (rendezvous/store_timeout)
    gh-pytorch-lightning-19106     # mismatch: DETAIL fingerprints, the middle rank one collective behind
    gh-qwen-vl-series-finetune-17  # mismatch: the first rank's allreduce differs
    gh-elasticdl-1895              # mismatch: uneven batches, a rank out of data
    gh-horovod-469                 # kill: the last of 8 ranks SIGKILLed
    gh-global-workflow-1301        # OOM: Slurm's cgroup OOM killer, the last task
    gh-vlasiator-751               # crash: a rank's segfault (signal 11)
    gh-horovod-429                 # freeze: a rank missing by absence (killed, frozen or skipped?)
    gh-hopsworks-1557              # shm: DataLoader workers' SIGBUS in a small /dev/shm
    gh-horovod-1341                # network interface: Gloo cannot find the named interface
    gh-pipedream-32                # network interface at init
    gh-dolly-139                   # checkpoint: torch.save ENOSPC
    gh-ace-851                     # checkpoint: a save some ranks wait for
    gh-megatron-lm-1874            # shutdown: rank 0 aborts after training (the kill waits for its shutdown line)
  )
fi

t0=$(date +%s)
failed=()
for c in "${cases[@]}"; do
  out=$("$hanglab" repro "$corpus/$c" --run --results "$work/results" --out "$work/scenarios/$c.toml" 2>&1); rc=$?
  echo "=== $c (exit $rc)"
  echo "$out"
  ls "$work/scenarios/$c"*.toml > /dev/null 2>&1 || { failed+=("$c: no scenario written"); continue; }
  [ $rc -eq 0 ] || { failed+=("$c: exit $rc"); continue; }
  echo "$out" | grep -Eq '^  [a-z_]+: (reproduced|consistent with the incident) \(' ||
    failed+=("$c: no reproduced line")
done
echo "corpus subset: $((${#cases[@]} - ${#failed[@]}))/${#cases[@]} reproduced in $(($(date +%s) - t0)) s"
[ ${#failed[@]} -eq 0 ] || fail "$(printf '%s; ' "${failed[@]}")"

# ---- bad input: one line, exit 2, nothing written
bad() {  # bad WHAT ARGS...
  local what=$1
  shift
  rm -rf "$work/bad"
  local o
  o=$("$hanglab" repro "$@" 2>&1); local r=$?
  [ $r -eq 2 ] || fail "$what: exit $r, want 2: $o"
  [ "$(echo "$o" | wc -l)" -eq 1 ] || fail "$what: want one line, got: $o"
  [ ! -e "$work/bad" ] || fail "$what: something was written under $work/bad"
  echo "ok ($what): $o"
}
bad "missing path" "$work/no-such-incident" --run --results "$work/bad"
bad "world size 0" "$corpus/gh-horovod-469" --world-size 0 --results "$work/bad"
bad "backend" "$corpus/gh-horovod-469" --backend tcp --results "$work/bad"
mkdir -p "$work/empty"
echo "hello world" > "$work/empty/notes.txt"
bad "no incident" "$work/empty" --run --results "$work/bad"
echo "keep me" > "$work/existing.toml"
bad "existing --out" "$corpus/gh-dolly-139" --out "$work/existing.toml" --results "$work/bad"
[ "$(cat "$work/existing.toml")" = "keep me" ] || fail "--out overwrote an existing file"
# Several candidates write <stem>.<candidate>.toml; an existing one of those is refused alike.
echo "keep me" > "$work/multi.kill.toml"
bad "existing --out (one of several)" "$corpus/gh-horovod-469" --out "$work/multi.toml" --results "$work/bad"
[ ! -e "$work/multi.oom.toml" ] || fail "a sibling candidate was written although one target exists"
[ "$(cat "$work/multi.kill.toml")" = "keep me" ] || fail "--out overwrote an existing candidate file"
# A GPU-only cause: plain reason and the missing fault, exit 1, nothing run.
o=$("$hanglab" repro "$corpus/gh-nccl-342" --run --results "$work/gpu" 2>&1); r=$?
[ $r -eq 1 ] || fail "GPU-only cause: exit $r, want 1: $o"
echo "$o" | grep -q "not reproducible here: needs .*; missing fault: nccl_shm" || fail "GPU-only cause: $o"
[ ! -e "$work/gpu" ] || fail "GPU-only cause: something was written"
echo "ok (GPU-only cause): $(echo "$o" | tail -1)"
# --backend nccl on a host without a GPU: written, loadable, skipped when run (exit 4), never passed.
if [ ! -e /dev/nvidia0 ]; then
  o=$("$hanglab" repro "$corpus/gh-dolly-139" --backend nccl --run --results "$work/nccl" --out "$work/nccl.toml" 2>&1); r=$?
  [ $r -eq 4 ] || fail "nccl without a GPU: exit $r, want 4: $o"
  echo "$o" | grep -q "not run here: tagged gpu" || fail "nccl without a GPU: $o"
  grep -q 'backend = "nccl"' "$work/nccl.toml" || fail "nccl scenario not written"
  echo "ok (nccl without a GPU): $(echo "$o" | grep 'not run here')"
fi
echo PASS
