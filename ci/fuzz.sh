#!/usr/bin/env bash
# Fuzzes plain-log and Flight Recorder triage (harness/triage/triage_fuzz.cpp: readers + analyzers) with libFuzzer,
# ASan and UBSan for a bounded time, seeded from the log corpora. Exits non-zero on any
# crash, sanitizer report, leak or hang (a crashing input is kept as build-fuzz/crash-*).
# usage: ci/fuzz.sh [SECONDS]   (default 60); ci/fuzz.sh --build-only builds build-fuzz and stops
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
build_only=0
[ "$secs" = --build-only ] && build_only=1 secs=0
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); export CCACHE_BASEDIR="$PWD"; fi
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHANGLAB_FUZZ=ON \
  -DHANGLAB_WITH_TORCH=OFF -DHANGLAB_BUILD_TESTS=OFF "${launcher[@]}" > build-fuzz.log 2>&1 || { tail -30 build-fuzz.log; exit 1; }
cmake --build build-fuzz -j"$(nproc)" --target triage_fuzz >> build-fuzz.log 2>&1 || { grep -E "error" -A3 build-fuzz.log | head -40; exit 1; }
mv build-fuzz.log build-fuzz/build.log
[ $build_only = 1 ] && exit 0
seeds=build-fuzz/seeds
rm -rf "$seeds"; mkdir -p "$seeds" build-fuzz/corpus
# One seed per log file of the corpora (the fuzzer's own finds accumulate in build-fuzz/corpus).
n=0
for f in harness/testdata/logs/*/* harness/testdata/reallogs/*/* harness/testdata/fr/*/*; do
  case "$f" in *.json|*.md|*.py) continue ;; esac
  [ -f "$f" ] || continue
  head -c 65536 "$f" > "$seeds/$n"; n=$((n + 1))
done
echo "ci/fuzz.sh: fuzzing plain-log triage for ${secs}s from $n seeds"
cd build-fuzz
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ./harness/triage_fuzz -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -max_len=262144 \
  -print_final_stats=1 corpus seeds 2>&1 | tail -25
