#!/usr/bin/env bash
# Flake hunt: runs the scenario catalog ROUNDS times (default 5), each round as two
# matrices at once (each one the other's load, as on a shared CI runner), and prints
# every scenario's pass rate over all its runs (`kill_rank 10/10`) and a total.
# Exits 0 only when every run that was not skipped passed: a verdict that flips under
# load is a bug with a cause, to be found in the failing run directories it lists.
#
# Usage: ci/flake.sh [-n ROUNDS] [-o DIR] [SCENARIO_FILE_OR_DIR...]   (default: scenarios/)
#   -o DIR  where the run records and each matrix's JSON go (default: a new /tmp dir)
#   HANGLAB=path/to/hanglab overrides build/harness/hanglab.
# Exit: 0 all passed · 1 some run failed or gave no verdict · 2 usage/scenario error.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
out=""
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
while getopts "n:o:h" opt; do
  case $opt in
    n) rounds=$OPTARG ;;
    o) out=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "flake.sh: -n: expected a positive number of rounds, got '$rounds'" >&2; exit 2; }
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(scenarios)
hanglab=${HANGLAB:-build/harness/hanglab}
[ -x "$hanglab" ] || { echo "flake.sh: $hanglab is not built (run ci/build.sh)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "flake.sh: python3 is needed to aggregate the results" >&2; exit 2; }
if [ -z "$out" ]; then out=$(mktemp -d /tmp/hanglab-flake.XXXXXX); else mkdir -p "$out"; fi

echo "flake.sh: ${paths[*]}, $rounds round(s) of 2 concurrent matrices; records in $out"
start=$SECONDS
for ((i = 1; i <= rounds; i++)); do
  pids=()
  for m in A B; do
    "$hanglab" run "${paths[@]}" --json --results "$out/r$i-$m" > "$out/r$i-$m.json" 2> "$out/r$i-$m.stderr" &
    pids+=($!)
  done
  rcs=()
  for p in "${pids[@]}"; do
    rc=0
    wait "$p" || rc=$?
    rcs+=("$rc")
  done
  # 2: the scenarios did not load (nothing ran); 130: interrupted. Neither is a verdict.
  for rc in "${rcs[@]}"; do
    if [ "$rc" = 2 ]; then cat "$out/r$i-A.stderr" >&2; exit 2; fi
    if [ "$rc" = 130 ]; then echo "flake.sh: interrupted" >&2; exit 130; fi
  done
  echo "round $i/$rounds done after $((SECONDS - start)) s (exit codes ${rcs[*]})"
done

python3 - "$out" "$rounds" << 'EOF'
import glob, json, os, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {}      # scenario -> [(matrix, status, entry)]
broken = []    # matrices whose JSON is missing or invalid (hanglab died)
for path in sorted(glob.glob(os.path.join(out, "r*-*.json"))):
    matrix = os.path.basename(path)[:-5]
    try:
        with open(path) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        broken.append(f"{matrix}: no JSON result ({e}); see {path[:-5]}.stderr")
        continue
    for e in entries:
        runs.setdefault(e["scenario"], []).append((matrix, e["verdict"]["status"], e))
width = max([len(s) for s in runs] + [8])
passed = total = skipped = 0
failures = []
for name in sorted(runs):
    rs = runs[name]
    counted = [r for r in rs if r[1] != "skipped"]
    ok = sum(1 for r in counted if r[1] == "pass")
    if not counted:
        print(f"{name:<{width}}  skipped ({rs[0][2]['verdict'].get('skip_reason', '')})")
        skipped += len(rs)
        continue
    passed += ok
    total += len(counted)
    skipped += len(rs) - len(counted)
    mark = "" if ok == len(counted) else "   <-- FLAKY" if ok else "   <-- FAILS"
    print(f"{name:<{width}}  {ok}/{len(counted)}{mark}")
    for matrix, status, e in counted:
        if status == "pass":
            continue
        bad = [c for c in e["verdict"].get("checks", []) if c.get("status") != "pass"]
        why = "; ".join(f"{c['name']}: expected {c.get('expected')}, got {c.get('actual')}" for c in bad[:3])
        failures.append(f"{name} [{matrix}] {status}: {why}\n    {e.get('run_dir', '')}")
pct = 100.0 * passed / total if total else 0.0
print(f"{'total':<{width}}  {passed}/{total} ({pct:.1f} %) over {rounds} round(s) x 2 concurrent matrices"
      + (f"; {skipped} skipped run(s)" if skipped else ""))
for f in failures:
    print("  " + f)
for b in broken:
    print("  " + b)
sys.exit(0 if total and passed == total and not broken else 1)
EOF
