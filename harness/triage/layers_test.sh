#!/usr/bin/env bash
# unit.triage_layers: no upward #include inside harness/triage/ (model < records, logs, fr <
# reason < answer < triage.cpp, the tools and the *_test.cpp beside the code), and nothing in triage/
# includes a higher harness layer (scenario/, run/, history/, report/, validate/, bench/,
# cli/). Prints every offending include as file:line and exits 1.
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
[ "$n" -gt 0 ] || { echo "no source files under $(pwd)/triage"; exit 1; }
[ "$bad" = 0 ] && echo "ok: $n files under triage/, no upward include"
exit "$bad"
