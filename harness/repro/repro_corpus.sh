#!/usr/bin/env bash
# `hanglab repro --run` over the whole real-log corpus (harness/testdata/reallogs), once, by hand:
# prints each case's outcome and the fraction reproduced among the cases whose root cause is
# known (expected.json category not "unknown": the thread found the cause). The tool never reads
# expected.json; this script reads it only to score. Not a CTest test (about 6 minutes on 2 cores).
# usage: harness/repro/repro_corpus.sh HANGLAB WORK_DIR [CORPUS_DIR]
set -u
hanglab=$1 work=$2
corpus=${3:-$(cd "$(dirname "$0")/../testdata/reallogs" && pwd)}
mkdir -p "$work"
known=0 repro=0 gpu=0
declare -A why
for d in "$corpus"/*/; do
  c=$(basename "$d")
  cat=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['category'])" "$d/expected.json")
  cause=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cause'])" "$d/expected.json")
  out=$("$hanglab" repro "$d" --run --results "$work/results" --out "$work/scenarios/$c.toml" --force 2>&1); rc=$?
  echo "$out" > "$work/$c.txt"
  if echo "$out" | grep -Eq '^  [a-z_]+: reproduced \('; then res=reproduced
  elif echo "$out" | grep -Eq '^  [a-z_]+: consistent with the incident \('; then res=consistent
  elif echo "$out" | grep -q 'not reproducible here'; then res="not-here: $(echo "$out" | grep -o 'missing fault: .*')"
  elif echo "$out" | grep -q '^not reproducible'; then res="unmapped: $(echo "$out" | grep '^not reproducible' | cut -c1-120)"
  else res="not-reproduced: $(echo "$out" | grep -E '^  [a-z_]+: not ' | head -1 | cut -c1-200)"
  fi
  printf '%-34s %-22s exit %d  %s\n' "$c" "$cat/$cause" "$rc" "$res"
  if [ "$cat" != unknown ]; then
    known=$((known + 1))
    [ "$res" = reproduced ] && repro=$((repro + 1))
  fi
done
echo "reproduced: $repro / $known cases whose root cause is known ($(python3 -c "print(f'{100*$repro/max($known,1):.1f}')") %)"
