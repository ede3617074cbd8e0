#!/usr/bin/env bash
# End-to-end: `kill -9` of hanglab while an srun job runs on its private Slurm cluster;
# the next start (`hanglab clean`) must leave no slurmctld, slurmd, slurmstepd or rank of
# the killed run, and no cgroup of it, and say so in one line. Skipped (exit 4) where the
# srun launcher is unsupported (no Slurm, not root).
# usage: e2e_kill9_srun_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
# A previous run of this test killed mid-way (a CTest timeout, a Ctrl-C) left its runs' state in
# $work/state: sweep it before removing it, or what those runs hold (namespaces, cgroups) is lost to
# every later sweep.
[ -d "$work/state" ] && HANGLAB_STATE_DIR=$work/state "$hanglab" clean > /dev/null 2>&1
rm -rf "$work"; mkdir -p "$work"
export HANGLAB_STATE_DIR=$work/state   # only this test's runs are swept here
fail() { echo "FAIL: $*"; exit 1; }

# "start" of a process (field 22 of /proc/PID/stat), empty when gone/zombie.
ident() {
  local s; s=$(cat /proc/$1/stat 2>/dev/null) || return 0
  s=${s##*) }; set -- $s
  [ "$1" = Z ] || echo "${20}"
}

cat > "$work/srun_long.toml" <<'TOML'
# Reproduces: a long srun job, for the kill -9 test.
# Expected: killed by the test.
[scenario]
name = "srun_long"
deadline_s = 120
[workload]
name = "torch_ddp"
backend = "gloo"
world_size = 2
steps = 2000
launcher = "srun"
[workload.args]
step_ms = 50
[timeouts]
init_s = 60
collective_s = 60
progress_s = 60
heartbeat_s = 1
TOML

"$hanglab" run "$work/srun_long.toml" --results "$work/results" --no-stacks > "$work/run.out" 2>&1 &
hl=$!
# Wait until both ranks have started under srun (their exec records), or hanglab ended.
up=""
for _ in $(seq 1 600); do
  n=$(cat "$work"/results/srun_long/*/ranks/*/exec.jsonl 2>/dev/null | grep -c '"ev":"exec"')
  [ "${n:-0}" -ge 2 ] && { up=1; break; }
  kill -0 $hl 2>/dev/null || break
  sleep 0.1
done
if [ -z "$up" ]; then
  wait $hl; rc=$?
  [ $rc -eq 4 ] && { echo "skip: srun is unsupported here: $(grep -m1 -i skip "$work/run.out")"; exit 4; }
  fail "the srun job never started (hanglab exit $rc): $(tail -20 "$work/run.out")"
fi
sleep 1
run_dir=$(ls -d "$work"/results/srun_long/*/ | head -1)
conf=${run_dir}slurm/slurm.conf
# The cluster's processes: the daemons (their command line names the run's slurm.conf),
# slurmstepd (the ranks' parent), the ranks (their exec records).
procs=""
for p in $(pgrep -f -- "-f $conf"); do procs+=" $p:$(ident $p)"; done
for f in "$run_dir"ranks/*/exec.jsonl; do
  p=$(grep -o '"pid":[0-9]*' "$f" | tail -1 | cut -d: -f2)
  procs+=" $p:$(ident $p)"
  pp=$(awk '{print $4}' /proc/$p/stat 2>/dev/null)
  [ -n "$pp" ] && [ "$(cat /proc/$pp/comm 2>/dev/null)" = slurmstepd ] && procs+=" $pp:$(ident $pp)"
done
procs=$(printf '%s\n' $procs | sort -u)
ndaemons=$(pgrep -f -- "-f $conf" | wc -l)
[ "$ndaemons" -eq 2 ] || fail "want slurmctld and slurmd of the run, found $ndaemons: $(pgrep -af -- "-f $conf")"
printf '%s\n' $procs | grep -q . || fail "no process of the run found"
nstepd=0
for ps in $procs; do [ "$(cat /proc/${ps%%:*}/comm 2>/dev/null)" = slurmstepd ] && nstepd=$((nstepd + 1)); done
[ $nstepd -ge 1 ] || fail "no slurmstepd found as the ranks' parent"

kill -9 $hl
wait $hl 2>/dev/null
sleep 0.5
# slurmstepd does not die with hanglab (it is slurmd's grandchild, in a session of its own).
alive_before=0
for ps in $procs; do [ "$(ident ${ps%%:*})" = "${ps#*:}" ] && alive_before=$((alive_before + 1)); done

"$hanglab" clean > "$work/clean.out" 2>&1 || fail "hanglab clean exit $?: $(cat "$work/clean.out")"
line=$(grep "^hanglab: swept what dead run $hl " "$work/clean.out")
[ "$(printf '%s\n' "$line" | grep -c .)" -eq 1 ] || fail "want one sweep line for run $hl: $(cat "$work/clean.out")"
grep -q "NOT reverted" <<< "$line" && fail "$line"
sleep 0.5
for ps in $procs; do
  p=${ps%%:*} id=${ps#*:}
  [ "$(ident "$p")" = "$id" ] && fail "process $p ($(cat /proc/$p/comm 2>/dev/null)) survived: $line"
done
[ -z "$(pgrep -f -- "-f $conf")" ] || fail "Slurm daemons of the run survived: $(pgrep -af -- "-f $conf")"
cg=$(find /sys/fs/cgroup -maxdepth 8 -type d -name "hanglab-slurm-$hl-*" 2>/dev/null)
[ -z "$cg" ] || fail "cgroups left: $cg"
[ -z "$(ls "$HANGLAB_STATE_DIR"/*.jsonl 2>/dev/null)" ] || fail "state files left: $(ls "$HANGLAB_STATE_DIR")"
# The killed run's slurmd spool (a temp dir named after its hanglab) goes with the next cluster.
ls -d "${TMPDIR:-/tmp}"/hanglab-slurmd-$hl-* > /dev/null 2>&1 || fail "the killed run left no spool to check"
cat > "$work/next.toml" <<'TOML'
# Reproduces: nothing; the next srun run after a kill -9.
# Expected: completes.
[scenario]
deadline_s = 60
[workload]
command = ["true"]
world_size = 1
launcher = "srun"
[expect]
outcome = "completed"
TOML
"$hanglab" run "$work/next.toml" --results "$work/results-next" > "$work/next.out" 2>&1 ||
  fail "the next srun run failed: $(tail -20 "$work/next.out")"
left=$(ls -d "${TMPDIR:-/tmp}"/hanglab-slurmd-$hl-* 2>/dev/null)
[ -z "$left" ] || fail "the killed run's slurmd spool is still there after the next cluster started: $left"
echo "ok: srun job killed with hanglab (kill -9): $(printf '%s\n' $procs | wc -l) processes of the run" \
     "($nstepd slurmstepd), $alive_before still alive before the sweep, none after: $line"
