#!/usr/bin/env bash
# End-to-end: `kill -9` of hanglab in the middle of each stateful fault, then the next
# hanglab start (`hanglab clean`, or `hanglab run` of another scenario: the two alternate)
# must leave 0 processes, mounts, cgroups and namespaces of the killed run, and say so in
# one line. A live run's state is never touched (checked once, with `clean` mid-run).
# usage: e2e_kill9_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
# A previous run of this test killed mid-way (a CTest timeout, a Ctrl-C) left its runs' state in
# $work/state: sweep it before removing it, or what those runs hold (namespaces, cgroups) is lost to
# every later sweep.
[ -d "$work/state" ] && HANGLAB_STATE_DIR=$work/state "$hanglab" clean > /dev/null 2>&1
rm -rf "$work"; mkdir -p "$work"
export HANGLAB_STATE_DIR=$work/state   # only this test's runs are swept here
fail() { echo "FAIL: $*"; exit 1; }

# "pid:start" of a process (start = field 22 of /proc/PID/stat), empty when gone/zombie.
ident() {
  local s; s=$(cat /proc/$1/stat 2>/dev/null) || return 0
  s=${s##*) }; set -- $s
  [ "$1" = Z ] || echo "${20}"
}
# Processes that carry this test's run directories in their environment (ranks and
# everything they started), plus the direct children of a given pid (helpers).
ours() {
  local e p
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%/environ}
    { tr '\0' '\n' < "$e"; } 2>/dev/null | grep -q "^HANGLAB_RUN_DIR=$work/" && echo "$p"
  done
  [ -n "${1:-}" ] && pgrep -P "$1"
}
# Names of one kind (netns, netdev) a live run recorded in its state file (JSON lines).
state_names() {
  cat "$HANGLAB_STATE_DIR"/$1-*.jsonl 2>/dev/null | grep "\"op\": *\"$2\"" |
    sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' | sort -u
}
ns_of() { readlink "/proc/$1/ns/mnt" "/proc/$1/ns/net" 2>/dev/null; }

scenario() {  # NAME FAULT-TOML...
  local name=$1; shift
  cat > "$work/$name.toml" <<TOML
# Reproduces: $name, for the kill -9 test (long enough to be killed mid-fault).
# Expected: killed by the test.
[scenario]
name = "$name"
deadline_s = 120
[workload]
name = "torch_ddp"
backend = "gloo"
world_size = 2
steps = 2000
[workload.args]
step_ms = 50
$( [ "$name" = tiny_shm ] && printf 'num_workers = 1\n' )
$( [ "$name" = disk_full ] && printf 'checkpoint_every = 1000  # no save before the kill: the run must live on\n' )
[timeouts]
init_s = 60
collective_s = 60
progress_s = 60
heartbeat_s = 1
[[fault]]
$(printf '%s\n' "$@")
TOML
}

scenario throttle_cpu 'kind = "throttle_cpu"' 'ranks = [1]' 'at_step = 2' 'cpu_percent = 5'
scenario oom_rank 'kind = "oom_rank"' 'ranks = [1]' 'at_step = 2' 'limit_mb = 400' 'mb_per_step = 1'
scenario freeze_rank 'kind = "freeze_rank"' 'ranks = [1]' 'at_step = 2'
scenario slow_storage 'kind = "slow_storage"' 'ranks = [1]' 'at_step = 2' 'dirs = "data,ckpt"' 'delay_ms = 5'
scenario tiny_shm 'kind = "tiny_shm"' 'ranks = [1]' 'size_mb = 64' '[expect]' 'fault_manifests = false'  # a mount that need not bite: only its cleanup is tested
scenario disk_full 'kind = "disk_full"' 'ranks = [1]' 'at_step = 2' 'size_mb = 1' '[expect]' 'fault_manifests = false'  # the full mount is only cleaned up here
scenario port_in_use 'kind = "port_in_use"' 'ranks = [0]'
scenario wrong_master_addr 'kind = "wrong_master_addr"' 'ranks = [1]'
scenario late_joiner 'kind = "late_joiner"' 'ranks = [1]' 'delay_s = 50'

# A bring-your-own rank whose children do not die with it (no parent-death signal, and
# SIGHUP ignored, so the kernel's SIGHUP+SIGCONT to a stopped orphaned process group does
# not end them either): they stay behind after the kill -9 (2 ranks x 2 sleeps).
cat > "$work/freeze_rank_byo.toml" <<'TOML'
# Reproduces: freeze_rank on a rank program whose children outlive it.
# Expected: killed by the test.
[scenario]
name = "freeze_rank_byo"
deadline_s = 120
[workload]
command = ["sh", "-c", "trap '' HUP; sleep 100 & sleep 100; wait"]
world_size = 2
[timeouts]
progress_s = 60
[[fault]]
kind = "freeze_rank"
ranks = [0, 1]
at_s = 1
TOML

# Two nodes ([topology]): network namespaces, a bridge and veths, and an nftables table in
# node 1's namespace (a partition that never heals).
cat > "$work/partition_nodes.toml" <<'TOML'
# Reproduces: partition of node 1, for the kill -9 test.
# Expected: killed by the test.
[scenario]
name = "partition_nodes"
deadline_s = 120
[workload]
name = "torch_ddp"
backend = "gloo"
world_size = 4
steps = 2000
[workload.args]
step_ms = 50
[topology]
nodes = 2
[timeouts]
init_s = 60
collective_s = 60
progress_s = 60
heartbeat_s = 1
[[fault]]
kind = "partition"
nodes = [1]
at_step = 2
TOML

# The "next start" by `hanglab run`: a one-rank command that exits at once.
cat > "$work/next.toml" <<'TOML'
# Reproduces: nothing; the next hanglab start after a kill -9.
# Expected: completes.
[scenario]
deadline_s = 30
[workload]
command = ["true"]
world_size = 1
[expect]
outcome = "completed"
TOML

ran=0 i=0
for name in throttle_cpu oom_rank freeze_rank slow_storage tiny_shm disk_full port_in_use wrong_master_addr late_joiner \
  freeze_rank_byo partition_nodes; do
  i=$((i + 1))
  "$hanglab" run "$work/$name.toml" --results "$work/results" --no-stacks > "$work/$name.out" 2>&1 &
  hl=$!
  # Wait until the fault has fired (harness.jsonl), or hanglab ended (skipped here: 4).
  fired=""
  for _ in $(seq 1 600); do
    if grep -qs '"ev":"fault"' "$work"/results/"$name"/*/harness.jsonl; then fired=1; break; fi
    kill -0 $hl 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$fired" ]; then
    wait $hl; rc=$?
    [ $rc -eq 4 ] || fail "$name: the fault never fired (hanglab exit $rc): $(tail -5 "$work/$name.out")"
    echo "skip: $name is unsupported here: $(grep -m1 -i skip "$work/$name.out")"
    continue
  fi
  # What the run has created, to check after the sweep: processes, their namespaces.
  procs="" nss=""
  for p in $(ours $hl | sort -u); do
    id=$(ident "$p"); [ -n "$id" ] && procs+=" $p:$id"
    for n in $(ns_of "$p"); do
      # Namespaces other than the test's own (where hanglab runs) are the run's.
      [ "$n" != "$(readlink /proc/$$/ns/${n%%:*})" ] && nss+=" $n"
    done
  done
  nss=$(printf '%s\n' $nss | sort -u)
  # Named network namespaces and interfaces of the run's nodes ([topology]).
  # Only those the run's own state file records: preflight scenarios run beside this test
  # without a lock and lease namespaces and interfaces of their own.
  netns=$(state_names "$hl" netns | grep "^hanglab-") links=$(state_names "$hl" netdev | grep "^hl")
  [ -n "$procs" ] || fail "$name: no process of the run found"
  if [ $i -eq 1 ]; then
    # A live run is never swept.
    "$hanglab" clean > "$work/live-clean.out" 2>&1 || fail "clean during a live run failed: $(cat "$work/live-clean.out")"
    grep -q "nothing to clean" "$work/live-clean.out" || fail "clean touched a live run: $(cat "$work/live-clean.out")"
    ls "$HANGLAB_STATE_DIR"/$hl-*.jsonl > /dev/null 2>&1 || fail "a live run's state file is gone"
  fi

  kill -9 $hl
  wait $hl 2>/dev/null
  ls "$HANGLAB_STATE_DIR"/$hl-*.jsonl > /dev/null 2>&1 || fail "$name: no state file left by the killed run"
  left_cg=$(find /sys/fs/cgroup -maxdepth 8 -type d -name "hanglab-$hl-*" 2>/dev/null | wc -l)

  # The next start sweeps: `hanglab clean` and `hanglab run` take turns.
  if [ $((i % 2)) -eq 1 ]; then
    how=clean
    "$hanglab" clean > "$work/$name.next" 2>&1 || fail "$name: hanglab clean exit $?: $(cat "$work/$name.next")"
  else
    how=run
    "$hanglab" run "$work/next.toml" --results "$work/results-next" > "$work/$name.next" 2>&1 ||
      fail "$name: the next hanglab run failed: $(cat "$work/$name.next")"
  fi
  line=$(grep "^hanglab: swept what dead run $hl " "$work/$name.next")
  [ "$(printf '%s\n' "$line" | grep -c .)" -eq 1 ] || fail "$name: want one sweep line for run $hl: $(cat "$work/$name.next")"
  grep -q "NOT reverted" <<< "$line" && fail "$name: $line"
  # What is known to stay behind without the sweep must be what it reports.
  case $name in
    throttle_cpu|oom_rank) grep -q "left: 1 cgroup" <<< "$line" || fail "$name: want 1 cgroup swept: $line" ;;
    freeze_rank_byo) grep -q "left: 4 processes$" <<< "$line" || fail "$name: want 4 processes swept: $line" ;;
    partition_nodes) grep -q "2 network namespaces" <<< "$line" || fail "$name: want 2 network namespaces swept: $line"
      [ -n "$netns" ] || fail "$name: no node namespace seen while the run lived" ;;
  esac
  # 0 node namespaces, bridges or veths of the run.
  for n in $netns; do ip netns list | awk '{print $1}' | grep -qx "$n" && fail "$name: network namespace $n left: $line"; done
  for l in $links; do [ -e "/sys/class/net/$l" ] && fail "$name: interface $l left: $line"; done

  # 0 processes: none of the run's processes (pid + start time) lives.
  for ps in $procs; do
    p=${ps%%:*} id=${ps#*:}
    [ "$(ident "$p")" = "$id" ] && fail "$name: process $p ($(cat /proc/$p/comm 2>/dev/null)) survived: $line"
  done
  [ -z "$(ours)" ] || fail "$name: processes with the run's environment survived: $(ours)"
  # 0 namespaces: no process is in a mount or network namespace the run's processes had.
  for n in $nss; do
    for p in /proc/[0-9]*/ns; do
      [ "$(readlink "$p/${n%%:*}" 2>/dev/null)" = "$n" ] && fail "$name: namespace $n is still in use by ${p%/ns}"
    done
  done
  # 0 mounts: nothing mounted under the test's directory.
  grep -q " $work/" /proc/self/mountinfo && fail "$name: still mounted: $(grep " $work/" /proc/self/mountinfo)"
  # 0 cgroups: no group named after the killed hanglab.
  cg=$(find /sys/fs/cgroup -maxdepth 8 -type d -name "hanglab-$hl-*" 2>/dev/null)
  [ -z "$cg" ] || fail "$name: cgroups left: $cg"
  [ -z "$(ls "$HANGLAB_STATE_DIR"/*.jsonl 2>/dev/null)" ] || fail "$name: state files left: $(ls "$HANGLAB_STATE_DIR")"
  echo "ok: $name (kill -9 after the fault fired; $left_cg cgroup(s) left before the sweep; next start: $how): $line"
  ran=$((ran + 1))
done
[ $ran -gt 0 ] || fail "no stateful fault could run here"
echo "ok: $ran stateful faults swept after kill -9"
