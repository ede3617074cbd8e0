#!/usr/bin/env bash
# End-to-end check of mpi_ddp under Open MPI's mpirun, independent of the harness:
#   1. a healthy 4-rank job exits 0 and every rank ends with the same parameter checksum
#      (the gradient allreduces really kept the replicas equal);
#   2. per-rank app contexts (MPMD, each with its own -x HANGLAB_TRACE/HANGLAB_HOOKS, as
#      the harness's mpirun launcher does): rank 1 throws at step 3; mpirun aborts the job,
#      exits with the rank's code (1) and names it ("Process name: [[J,1],1]");
#   3. started without mpirun, world_size 2 fails at init with exit 12 (singleton world).
# usage: mpirun_smoke_test.sh MPIEXEC MPI_DDP WORKDIR
set -uo pipefail
mpiexec=$1 prog=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Containers often forbid the cross-process memory reads of Open MPI's shared-memory
# single-copy path; plain copies work everywhere.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
fail() { echo "FAIL: $*"; exit 1; }
common=(--oversubscribe --bind-to none --tag-output)

echo "--- 1. healthy 4-rank job"
timeout 120 "$mpiexec" "${common[@]}" -np 4 -x HANGLAB_TRACE="$work/healthy/%r.jsonl" -x HANGLAB_RUN_DIR="$work/healthy" \
  "$prog" --steps=6 --step_ms=10 --checkpoint_every=3 --eval_every=3 > "$work/healthy.log" 2>&1
rc=$?
cat "$work/healthy.log" | grep -E "done:|ERROR" || true
[ $rc -eq 0 ] || fail "healthy job exited $rc"
sums=$(grep -o "parameter checksum [0-9.e+-]*" "$work/healthy.log" | sort -u | wc -l)
ranks=$(grep -c "done: 6/6 steps" "$work/healthy.log")
[ "$ranks" -eq 4 ] || fail "expected 4 ranks done, got $ranks"
[ "$sums" -eq 1 ] || fail "ranks ended with $sums different parameter checksums"
for r in 0 1 2 3; do
  tail -n 1 "$work/healthy/$r.jsonl" | grep -q '"ev":"exit","code":0' || fail "rank $r trace does not end with exit 0"
done

echo "--- 2. MPMD, rank 1 throws at step 3"
args=("${common[@]}")
for r in 0 1 2 3; do
  [ $r -gt 0 ] && args+=(:)
  args+=(-np 1 -x RANK=$r -x WORLD_SIZE=4 -x HANGLAB_TRACE="$work/mpmd/$r.jsonl" -x HANGLAB_RUN_DIR="$work/mpmd")
  [ $r -eq 1 ] && args+=(-x 'HANGLAB_HOOKS=[{"kind":"exception","at_step":3}]')
  args+=("$prog" --steps=20 --step_ms=10)
done
timeout 120 "$mpiexec" "${args[@]}" > "$work/mpmd.log" 2>&1
rc=$?
grep -E "ERROR|Process name|Exit code|aborted" "$work/mpmd.log" || true
[ $rc -eq 1 ] || fail "mpirun exited $rc, expected the failing rank's code 1"
grep -q '\[1,1\]<stderr>:\[rank 1\] ERROR (other) in forward at step 3: injected exception' "$work/mpmd.log" ||
  fail "rank 1's error line (tagged [1,1]<stderr>) missing"
grep -Eq 'Process name: \[\[[0-9]+,1\],1\]' "$work/mpmd.log" || fail "mpirun did not name rank 1"
grep -q '"ev":"error"' "$work/mpmd/1.jsonl" || fail "rank 1 trace has no error event"

echo "--- 3. world_size 2 without mpirun"
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 HANGLAB_TRACE="$work/local/$r.jsonl" timeout 60 "$prog" --steps=2 --step_ms=1 \
    > "$work/local$r.log" 2>&1 &
done
codes=()
for job in $(jobs -p); do wait "$job"; codes+=($?); done
cat "$work"/local*.log | grep ERROR || true
for c in "${codes[@]}"; do [ "$c" -eq 12 ] || fail "singleton rank exited $c, expected 12"; done
echo "PASS"
