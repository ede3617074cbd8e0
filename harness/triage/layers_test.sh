#!/usr/bin/env bash
# unit.triage_layers: no upward #include inside harness/triage/ (model < records, logs, fr <
# reason < answer < triage.cpp, the tools and the *_test.cpp beside the code), and nothing in triage/
# includes a higher harness layer (scenario/, run/, history/, report/, validate/, bench/,
# cli/); and no text matching in reason/*.cpp (a string-literal find / contains / starts_with /
# regex: reason/ reads typed observations only, see triage.hpp). Prints every offence as
# file:line and exits 1.
# usage: layers_test.sh [HARNESS_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
rank() {  # layer of a path under triage/ (a file or an #include target); tests sit on top
  case "$1" in
    *_test.cpp) echo 4 ;;
    triage/model/*) echo 0 ;;
    triage/records/* | triage/logs/* | triage/fr/*) echo 1 ;;
    triage/reason/*) echo 2 ;;
    triage/answer/*) echo 3 ;;
    *) echo 4 ;;
  esac
}
bad=0
n=0
while IFS= read -r -d '' f; do
  n=$((n + 1))
  r=$(rank "$f")
  while IFS=: read -r line inc; do
    target=$(sed -E 's/^#include "([^"]+)".*/\1/' <<< "$inc")
    case "$target" in
      scenario/* | run/* | history/* | report/* | validate/* | bench/* | cli/*)
        echo "$f:$line: includes $target, a higher harness layer"; bad=1 ;;
      triage/*)
        if [ "$(rank "$target")" -gt "$r" ]; then
          echo "$f:$line: includes $target, a higher triage layer"; bad=1
        fi ;;
    esac
  done < <(grep -n '^#include "' "$f" | sed -E 's/^([0-9]+):/\1:/')
done < <(find triage -name '*.[ch]pp' -print0)
# reason/ reads typed observations only (triage.hpp): no text matching on a message there.
while IFS= read -r hit; do
  echo "$hit: text matching in reason/ (give the observation a typed field where its text is read)"; bad=1
done < <(find triage/reason -name '*.cpp' ! -name '*_test.cpp' -print0 |
         xargs -0 grep -n -E 'find\("|contains\("|std::regex|starts_with\("|ends_with\("|rfind\("' || true)
[ "$n" -gt 0 ] || { echo "no source files under $(pwd)/triage"; exit 1; }
[ "$bad" = 0 ] && echo "ok: $n files under triage/, no upward include, no text matching in reason/"
exit "$bad"
