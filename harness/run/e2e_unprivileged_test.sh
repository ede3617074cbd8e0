#!/usr/bin/env bash
# End-to-end: the scenario catalog run by an unprivileged user. Run as root, this test
# creates (once) the system user hanglab-test, stages hanglab, the built workloads and the
# scenarios in a temporary directory that user owns (the build tree may sit under a path
# it cannot read), and runs `hanglab run scenarios/ --no-stacks` as that user in one
# invocation. Every scenario must pass or be skipped; the scenarios with a fault that needs
# root (a cgroup, a mount or network namespace, a FUSE mount) must be the skipped ones,
# each with its reason naming the missing privilege printed; the other skips may only be
# the ones root gets too (a workload not built here, no GPU). A root-only scenario run on
# its own must exit 4.
# Exit 4 (skipped) where it cannot run as intended: not root, or no way to create or switch
# to an unprivileged user.
# usage: e2e_unprivileged_test.sh HANGLAB SOURCE_DIR WORK_DIR [SCENARIO_NAME...]
# (default: every scenarios/*.toml; a subset must use every fault kind the catalog uses)
set -u
hanglab=$1 src=$2 work=$3
shift 3
only=("$@")
user=hanglab-test
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 4; }

# Faults whose injector's unsupported_reason() refuses an unprivileged user, and the
# words its reason must contain (injectors/*.cpp):
#   oom_rank           a writable memory cgroup            (oom_rank.cpp, kNeeds)
#   disk_full/tiny_shm unshare(CLONE_NEWNS): CAP_SYS_ADMIN (disk_full.cpp, tiny_shm.cpp)
#   slow_storage       root to mount the FUSE file system  (slow_storage.cpp)
#   wrong_master_addr  root for a network namespace        (network_common.cpp; isolate = true)
#   the node and network faults: [topology] nodes > 1, root for network namespaces and a bridge (run/nodes.cpp)
# throttle_cpu falls back to a SIGSTOP/SIGCONT duty cycle without a cpu cgroup, so it runs.
root_only_kinds="oom_rank disk_full tiny_shm slow_storage wrong_master_addr"
root_only_kinds+=" kill_node freeze_node partition packet_loss bandwidth link_flap mtu_mismatch store_unreachable dns_failure"
privilege_words='root|CAP_SYS_ADMIN|writable memory cgroup|[Pp]ermission denied'

rm -rf "$work"; mkdir -p "$work"
[ "$(id -u)" -eq 0 ] || skip "runs as root only, to create and switch to the unprivileged user $user (uid is $(id -u))"
command -v setpriv > /dev/null || skip "setpriv (util-linux) is not installed"
# Without it every torch scenario skips as "not built", and the root-only ones cannot be told apart.
[ -x "$(dirname "$hanglab")/../workloads/torch_ddp" ] || skip "the torch_ddp workload is not built in this tree"

# The user, once (two concurrent runs may race: the loser finds it made).
if ! id -u "$user" > /dev/null 2>&1; then
  command -v useradd > /dev/null || skip "useradd (passwd) is not installed: cannot create $user"
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user" \
    > "$work/useradd.out" 2>&1 || id -u "$user" > /dev/null 2>&1 ||
    skip "cannot create the system user $user: $(cat "$work/useradd.out")"
fi
uid=$(id -u "$user") gid=$(id -g "$user")
[ "$uid" -ne 0 ] || fail "$user has uid 0"
as_user() {
  setpriv --reuid="$uid" --regid="$gid" --init-groups -- env -i HOME="$stage/home" USER="$user" LOGNAME="$user" \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$@"
}

# Staging: bin/harness/hanglab finds its workloads in bin/workloads (workload_dir());
# bring-your-own scenarios name {scenario_dir}/../workloads/python_ddp/train.py.
bin=$(cd "$(dirname "$hanglab")/.." && pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/hanglab-unpriv.XXXXXX") || fail "mktemp"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin/harness" "$stage/bin/workloads" "$stage/src/workloads" "$stage/home" "$stage/results"
cp "$hanglab" "$stage/bin/harness/"
[ -x "$bin/harness/hanglab_slowfs" ] && cp "$bin/harness/hanglab_slowfs" "$stage/bin/harness/"
for w in "$bin"/workloads/*; do
  [ -f "$w" ] && [ -x "$w" ] && cp "$w" "$stage/bin/workloads/"
done
cp -r "$src/scenarios" "$stage/src/scenarios"
cp -r "$src/workloads/python_ddp" "$stage/src/workloads/"
chown -R "$uid:$gid" "$stage"
chmod 755 "$stage"
as_user test -x "$stage/bin/harness/hanglab" || skip "$user cannot reach $stage (a parent directory is not searchable)"
as_user sh -c '[ "$(id -u)" != 0 ] && ! grep -q "^CapEff:.*[1-9a-f]" /proc/self/status' ||
  fail "the command run as $user still has root's uid or capabilities"

scenarios=()
if [ ${#only[@]} -eq 0 ]; then
  scenarios=("$stage"/src/scenarios/*.toml)
else
  for n in "${only[@]}"; do
    [ -f "$stage/src/scenarios/$n.toml" ] || fail "no scenario $n in $src/scenarios"
    scenarios+=("$stage/src/scenarios/$n.toml")
  done
fi
# A subset must still cover every fault kind the catalog uses.
kinds_of() { sed -n 's/^kind *= *"\(.*\)".*/\1/p' "$@" | sort -u; }
uncovered=$(comm -23 <(kinds_of "$stage"/src/scenarios/*.toml) <(kinds_of "${scenarios[@]}"))
[ -z "$uncovered" ] || fail "the scenarios chosen leave fault kinds untested as $user: $(echo $uncovered)"

# The user's own working directory: hanglab must need nothing writable but --results.
cd "$stage/home" || fail "cd"

# 1. The catalog, one invocation. Exit 0 (some passed, the rest skipped) or 4 (all skipped).
t0=$(date +%s)
as_user "$stage/bin/harness/hanglab" run "${scenarios[@]}" --results "$stage/results" --no-stacks \
  > "$work/run.out" 2> "$work/run.err"
rc=$?
echo "catalog of ${#scenarios[@]} scenarios as $user: exit $rc in $(($(date +%s) - t0)) s"
cp -r "$stage/results" "$work/results" 2> /dev/null
cat "$work/run.out"
[ $rc -eq 0 ] || [ $rc -eq 4 ] || fail "hanglab run as $user exited $rc, want 0 or 4: $(tail -20 "$work/run.err")"

bad=0
for sc in "${scenarios[@]}"; do
  name=$(awk -F'"' '/^\[scenario\]/ { s = 1; next } /^\[/ { s = 0 } s && /^name *=/ { print $2; exit }' "$sc")
  [ -n "$name" ] || name=$(basename "$sc" .toml)
  kinds=$(sed -n 's/^kind *= *"\(.*\)".*/\1/p' "$sc")
  root_only=""
  for k in $kinds; do [[ " $root_only_kinds " == *" $k "* ]] && root_only=$k; done
  line=$(grep -E "^[A-Z]+ +$name( |$)" "$work/run.out" | head -1)
  status=${line%% *}
  reason=$(sed -E 's/^[A-Z]+ +[^ ]+ +//' <<< "$line")
  if [ -n "$root_only" ]; then
    if [ "$status" != SKIPPED ]; then
      echo "BAD: $name (fault $root_only needs privileges) was not skipped: ${line:-no verdict line}"; bad=1
    elif ! grep -qE "$privilege_words" <<< "$reason"; then
      echo "BAD: $name skipped, but the reason does not name the missing privilege: $reason"; bad=1
    fi
  else
    case $status in
      PASS) ;;
      SKIPPED)
        if grep -qE "$privilege_words" <<< "$reason"; then
          echo "BAD: $name skipped for a privilege it should not need: $reason"; bad=1
        elif ! grep -qE "is not built here|no NVIDIA GPU|is not on PATH|not available" <<< "$reason"; then
          echo "BAD: $name skipped for an unexpected reason: $reason"; bad=1
        fi ;;
      *) echo "BAD: $name: ${line:-no verdict line}"; bad=1 ;;
    esac
  fi
done
[ $bad -eq 0 ] || fail "the unprivileged catalog run did not pass or skip as expected (records: $work/results)"
grep -q "^SKIPPED" "$work/run.out" || fail "no scenario was skipped as $user: the root-only faults ran unprivileged?"
grep -q "^PASS" "$work/run.out" || fail "no scenario passed as $user"
echo "ok: every scenario passed or was skipped for a reason; the root-only faults were the privilege skips"

# 2. A root-only scenario alone: skipped, exit 4, the reason on stdout.
as_user "$stage/bin/harness/hanglab" run "$stage/src/scenarios/disk_full.toml" --results "$stage/results" \
  --no-stacks > "$work/one.out" 2>&1
rc=$?
[ $rc -eq 4 ] || fail "disk_full as $user exited $rc, want 4: $(cat "$work/one.out")"
grep -qE "^SKIPPED +disk_full +fault disk_full: needs mount namespaces.*(root|CAP_SYS_ADMIN)" "$work/one.out" ||
  fail "disk_full as $user: no skip reason naming the privilege: $(cat "$work/one.out")"
echo "ok: a root-only scenario alone exits 4 with its reason"
exit 0
