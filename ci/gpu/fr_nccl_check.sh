#!/usr/bin/env bash
# torch's Flight Recorder from the C++ NCCL workload (torch_ddp_nccl: the training loop on
# LibTorch's ProcessGroupNCCL) on a machine with ONE GPU, a torch wheel with CUDA in its python3,
# CMake and a compiler, but no package manager and no network (a GPU runner borrowed for minutes).
# One GPU cannot hold a multi-rank NCCL job (NCCL refuses two ranks on one device), so this
# checks what one GPU can show:
#   build        the torch_ddp_nccl target alone (HANGLAB_WORKLOADS_ONLY) against python3's
#                torch, with header-only copies of nlohmann-json and CLI11 from DEPS;
#   ws1_healthy  world_size 1, 20 steps, [detect] flight_recorder's environment: the dump the
#                rank writes at the end of training (c10d::dump_nccl_trace, torch's pickle);
#   ws1_signals  world_size 1 lingering after its loop: SIGUSR1 (hanglab's dump request) dumps
#                and the rank goes on; SIGTERM (teardown) dumps and the rank dies of SIGTERM;
#   ws2_one_gpu  two ranks on the one GPU (both cuda:0): NCCL's own refusal, as it prints it;
#   torchfrtrace the wheel's analyser on the healthy dump (when it is installed there).
# Everything lands in $OUT (summary.txt first; logs, traces and dumps per check); the dumps can
# be read here afterwards with `hanglab triage DUMP_DIR`.
#
# usage: bash ci/gpu/fr_nccl_check.sh --stage DEPS        here: copy the headers the workloads
#                                                         need (nlohmann/, CLI/) into DEPS
#        bash ci/gpu/fr_nccl_check.sh DEPS [--build-only] [--python PY]
#   env: OUT (default fr-nccl-out), BUILD (default build-gpu-fr), JOBS (default nproc)
# DEPS is git-ignored (.gpu-deps in .gitignore); exit 0 when every check passed, 1 when one
# failed, 2 on usage errors.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

if [ "${1:-}" = "--stage" ]; then
  deps=${2:?--stage DEPS}
  mkdir -p "$deps"
  # gloo/: the torch wheels' ProcessGroupGloo.hpp includes gloo's headers and ships none (as here:
  # install-deps.sh installs libgloo-dev for the same reason).
  for h in nlohmann/json.hpp CLI/CLI.hpp gloo/algorithm.h; do
    src=$(echo "#include <$h>" | ${CXX:-c++} -E -x c++ - -H 2>&1 > /dev/null | grep -m1 -o "/[^ ]*/$h" || true)
    [ -n "$src" ] || { echo "fr_nccl_check: $h is not installed here" >&2; exit 2; }
    rm -rf "${deps:?}/${h%%/*}"
    cp -r "$(dirname "$src")" "$deps/"
  done
  du -sh "$deps"
  exit 0
fi

deps=${1:?usage: fr_nccl_check.sh DEPS [--build-only] [--python PY] | --stage DEPS}
shift
build_only=0
python=python3
while [ $# -gt 0 ]; do
  case $1 in
    --build-only) build_only=1 ;;
    --python) python=${2:?--python PY}; shift ;;
    *) echo "fr_nccl_check: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -f "$deps/nlohmann/json.hpp" ] && [ -f "$deps/CLI/CLI.hpp" ] && [ -f "$deps/gloo/algorithm.h" ] || {
  echo "fr_nccl_check: $deps lacks nlohmann/json.hpp, CLI/CLI.hpp or gloo/algorithm.h (bash ci/gpu/fr_nccl_check.sh --stage $deps)" >&2
  exit 2
}
deps=$(cd "$deps" && pwd)
out=${OUT:-fr-nccl-out}
mkdir -p "$out" && out=$(cd "$out" && pwd)
build=${BUILD:-build-gpu-fr}
summary=$out/summary.txt
: > "$summary"
failed=0
note() { echo "$*" | tee -a "$summary"; }
check() {  # check NAME CONDITION-STATUS DETAIL
  if [ "$2" = 0 ]; then note "PASS $1: $3"; else note "FAIL $1: $3"; failed=1; fi
}

# --- build -------------------------------------------------------------------------------
torch_dir=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2> "$out/python.err")
torch_version=$("$python" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>> "$out/python.err")
note "host $(uname -n), $(nproc) CPUs; $python: torch $torch_version at $torch_dir"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  | sed 's/^/gpu: /' | tee -a "$summary"
[ -n "$torch_dir" ] || { check build 1 "no torch in $python ($(tail -1 "$out/python.err"))"; exit 1; }
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
t0=$(date +%s)
{
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHANGLAB_WORKLOADS_ONLY=ON \
    -DHANGLAB_HEADER_DEPS="$deps" -DHANGLAB_TORCH_PREFIX="$torch_dir" &&
    cmake --build "$build" --target torch_ddp_nccl -j"${JOBS:-$(nproc)}"
} > "$out/build.log" 2>&1
rc=$?
# What the NCCL workload's CMake looks for beside torch (nvidia/nccl, nvidia/cu13), and what it found.
ls "$(dirname "$torch_dir")/nvidia" > "$out/nvidia_wheels.txt" 2>&1
grep -E "^(Torch_DIR|HANGLAB_|CUDAToolkit|NCCL_)" "$build/CMakeCache.txt" > "$out/cmake_cache.txt" 2> /dev/null
exe=$root/$build/workloads/torch_ddp_nccl
if [ $rc != 0 ] || [ ! -x "$exe" ]; then
  grep -E "error|Error|torch_ddp_nccl is not built" -B2 -A4 "$out/build.log" | head -60
  check build 1 "cmake exited $rc in $(( $(date +%s) - t0 )) s (build.log)"
  exit 1
fi
check build 0 "torch_ddp_nccl built in $(( $(date +%s) - t0 )) s ($("$exe" --describe 2> /dev/null | "$python" -c 'import json,sys; print(json.load(sys.stdin).get("built_with","?"))' 2> /dev/null))"
[ $build_only = 1 ] && exit $failed

# --- runs --------------------------------------------------------------------------------
free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# rank_env NAME RANK WORLD_SIZE PORT: the environment hanglab gives a rank with [detect]
# flight_recorder = true (harness/run/rank_env.cpp), under $out/NAME/<rank>/.
rank_env() {
  local d=$out/$1/$2
  mkdir -p "$d"
  echo RANK=$2 WORLD_SIZE=$3 LOCAL_RANK=0 LOCAL_WORLD_SIZE=$3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$4 \
    HANGLAB_RUN_DIR=$out/$1/run HANGLAB_TRACE=$d/events.jsonl HANGLAB_HEARTBEAT_MS=1000 \
    HANGLAB_INIT_TIMEOUT_MS=60000 HANGLAB_COLLECTIVE_TIMEOUT_MS=20000 OMP_NUM_THREADS=1 \
    TORCH_FR_BUFFER_SIZE=2000 HANGLAB_FR_DUMP=$d/flight_recorder.pkl NCCL_DEBUG=WARN
}
summarize_dump() {  # the dump as torch's pickle: version, groups, entries (op, state)
  "$python" - "$1" << 'PY' 2>&1
import collections, pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
e = d.get("entries", [])
ops = collections.Counter((x.get("profiling_name"), x.get("state")) for x in e)
print(f"version {d.get('version')}, comm_lib {d.get('comm_lib_version')}, pg_config {d.get('pg_config')}, "
      f"{len(e)} entries: " + ", ".join(f"{n} x {op} ({st})" for (op, st), n in sorted(ops.items())))
if e:
    x = e[-1]
    print("last entry:", {k: x.get(k) for k in ("process_group", "collective_seq_id", "profiling_name", "input_sizes",
                                                "state", "time_discovered_completed_ns", "duration_ms")})
PY
}

# ws1_healthy: the dump at the end of training.
port=$(free_port)
( cd "$out" && env $(rank_env ws1_healthy 0 1 "$port") timeout 180 "$exe" --steps=20 --backend=nccl \
    > ws1_healthy/0/stdout.log 2> ws1_healthy/0/stderr.log )
rc=$?
dump=$out/ws1_healthy/0/flight_recorder.pkl
line=$(grep -m1 "flight recorder:" "$out/ws1_healthy/0/stderr.log")
[ $rc = 0 ] && [ -s "$dump" ]
check ws1_healthy $? "exit $rc; $line"
[ -s "$dump" ] && summarize_dump "$dump" | tee "$out/ws1_healthy/dump_summary.txt" | sed 's/^/  /' | tee -a "$summary"

# ws1_signals: SIGUSR1 dumps and the rank goes on; SIGTERM dumps and the rank dies of it.
port=$(free_port)
d=$out/ws1_signals/0
( cd "$out" && exec env $(rank_env ws1_signals 0 1 "$port") timeout 180 "$exe" --steps=10 --backend=nccl \
    --after_loop=linger > "$d/stdout.log" 2> "$d/stderr.log" ) &
pid=$!
wait_for() {  # wait_for FILE PATTERN SECONDS PID: until the line is there, PID ends or time is up
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2> /dev/null && return 0
    kill -0 "$4" 2> /dev/null || { grep -q "$2" "$1" 2> /dev/null; return; }
    sleep 0.1
  done
  return 1
}
if wait_for "$d/stdout.log" "lingering after the training loop" 120 $pid; then
  # The pid the rank armed with (what hanglab reads before it signals); else timeout's child.
  armed=$(cat "$d/flight_recorder.pkl.armed" 2> /dev/null)
  rank_pid=${armed:-$(pgrep -P $pid | head -1)}
  kill -USR1 "$rank_pid"
  wait_for "$d/stderr.log" "(dump request)" 30 "$rank_pid"
  check ws1_sigusr1 $? "pid $rank_pid (armed: $armed): $(grep -m1 '(dump request)' "$d/stderr.log")"
  cp "$d/flight_recorder.pkl" "$d/flight_recorder.sigusr1.pkl" 2> /dev/null
  sleep 1
  kill -0 "$rank_pid" 2> /dev/null
  check ws1_alive_after_sigusr1 $? "the rank goes on after its dump"
  kill -TERM "$rank_pid"
  wait $pid
  rc=$?
  [ $rc = 143 ] && grep -q "(teardown request)" "$d/stderr.log"
  check ws1_sigterm $? "exit $rc (143: died of SIGTERM); $(grep -m1 '(teardown request)' "$d/stderr.log")"
else
  kill $pid 2> /dev/null
  wait $pid
  check ws1_signals 1 "the rank never reached its linger ($(tail -2 "$d/stderr.log" | tr '\n' ' '))"
fi

# ws2_one_gpu: two ranks on the one device; NCCL refuses (duplicate GPU). Its words, captured.
port=$(free_port)
pids=()
for r in 0 1; do
  ( cd "$out" && env $(rank_env ws2_one_gpu $r 2 "$port") timeout 120 "$exe" --steps=5 --backend=nccl \
      > "ws2_one_gpu/$r/stdout.log" 2> "ws2_one_gpu/$r/stderr.log" ) &
  pids+=($!)
done
rcs=()
for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
# NCCL's words (init.cc: "Duplicate GPU detected : rank R and rank S both on CUDA device ...").
msg=$(grep -h -m1 -i "duplicate gpu" "$out"/ws2_one_gpu/*/std*.log | head -1)
[ "${rcs[0]}" != 0 ] && [ "${rcs[1]}" != 0 ] && [ -n "$msg" ]
check ws2_one_gpu $? "exits ${rcs[*]}; NCCL: ${msg:-(no duplicate-GPU line; see ws2_one_gpu/*/stderr.log)}"
grep -h "ERROR\|flight recorder" "$out"/ws2_one_gpu/*/stderr.log | head -4 | sed 's/^/  /' | tee -a "$summary"

# torchfrtrace on the healthy dump (torch's <prefix><rank> names).
frtrace=$(dirname "$python")/torchfrtrace
command -v "$frtrace" > /dev/null || frtrace=$(command -v torchfrtrace)
if [ -s "$dump" ] && [ -n "$frtrace" ]; then
  mkdir -p "$out/torchfrtrace/dumps" && cp "$dump" "$out/torchfrtrace/dumps/rank_0"
  timeout 60 "$frtrace" "$out/torchfrtrace/dumps" > "$out/torchfrtrace/output.txt" 2>&1
  note "info torchfrtrace: exit $? ($(tail -1 "$out/torchfrtrace/output.txt"))"
fi
note "$([ $failed = 0 ] && echo ALL PASSED || echo SOME FAILED); files in $out"
exit $failed
