#!/usr/bin/env bash
# Quick start 2: install what is missing, build, run the whole test suite (Catch2 unit
# tests and the end-to-end scenario tests, through CTest); then the unit tests again in a
# second tree, build-asan, built with AddressSanitizer + UndefinedBehaviorSanitizer and
# without the LibTorch workloads (quick to build; the tests that need them skip there).
# Extra arguments go to the first ctest; the sanitized one writes build-asan/ctest-junit.xml.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
bash ci/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
rc=0
(cd build && ctest --output-on-failure -j"$jobs" "$@") || rc=$?

# Plain-log triage under libFuzzer + ASan + UBSan for a bounded time (clang, build-fuzz/).
bash ci/fuzz.sh "${HANGLAB_FUZZ_SECONDS:-60}" || rc=$?

echo "ci/test.sh: unit tests under ASan+UBSan (build-asan)"
t0=$(date +%s)
# Shared libraries: every test binary statically linking the sanitized libraries made the
# tree 7.9 GB (UBSan's check data and ASan's relocations are copied into each binary).
bash ci/build.sh build-asan -DHANGLAB_SANITIZE=address,undefined -DHANGLAB_WITH_TORCH=OFF -DBUILD_SHARED_LIBS=ON
t1=$(date +%s)
(cd build-asan &&
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest -L unit --output-on-failure -j"$jobs" --output-junit ctest-junit.xml) || rc=$?
echo "ci/test.sh: sanitized build $((t1 - t0)) s, sanitized unit tests $(($(date +%s) - t1)) s"
exit $rc
