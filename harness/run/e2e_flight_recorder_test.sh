#!/usr/bin/env bash
# e2e.flight_recorder: scenarios/fr_python_skip_backward.toml ([detect] flight_recorder = true)
# leaves one Flight Recorder dump per rank (every rank of it ends alive enough to dump: rank 1
# at the end of training, ranks 0,2,3 when DDP's allreduce raises), nothing half-written,
# torchfrtrace's verdict in run.json, the dumps' verdict in the run's triage, and `hanglab
# triage` on the dumps alone names rank 1, the rank that skipped (and on ranks/, as logs, adds
# the dumps' verdict as a note).
# usage: e2e_flight_recorder_test.sh HANGLAB SOURCE_DIR OUT_DIR   (exit 4: skipped, no venv)
set -uo pipefail
hanglab=$1 src=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
"$hanglab" run "$src/scenarios/fr_python_skip_backward.toml" --results "$out" > "$out/run.txt" 2>&1
rc=$?
cat "$out/run.txt"
[ "$rc" = 4 ] && exit 4
[ "$rc" = 0 ] || fail "the scenario's run exited $rc"
run=$(readlink -f "$out/latest")
for r in 0 1 2 3; do
  [ -s "$run/ranks/$r/flight_recorder.pkl" ] || fail "rank $r left no dump"
done
leftovers=$(find "$run/ranks" -name 'flight_recorder.pkl.tmp.*' | head -1)
[ -z "$leftovers" ] || fail "a half-written dump was left: $leftovers"
python3 - "$run" <<'PY' || exit 1
import json, sys
run = sys.argv[1]
fr = json.load(open(f"{run}/run.json"))["flight_recorder"]
assert fr["dumped_ranks"] == [0, 1, 2, 3], fr
t = fr["torchfrtrace"]
# The venv's torch 2.15 (pinned by ci/install-deps.sh) crashes on Gloo dumps: their pg_config
# is keyed by an empty name. A torch that reads them fails this on purpose (then: rank 1).
assert t["status"] == "crashed" and t["detail"].startswith("KeyError: ('0', "), t
print("torchfrtrace:", t["status"], t["detail"])
tri = json.load(open(f"{run}/triage.json"))
notes = [n for n in tri["notes"] if n.startswith("Flight Recorder (4 of 4 rank(s) dumped)")]
assert notes, tri["notes"]
print(notes[0])
assert any(e["text"].startswith("Flight Recorder: ") and "names rank(s) 1" in e["text"] for e in tri["evidence"]), tri["evidence"]
PY
"$hanglab" triage --format json "$run"/ranks/*/flight_recorder.pkl > "$out/fr_triage.json" || fail "hanglab triage on the dumps failed"
python3 - "$out/fr_triage.json" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
print("hanglab triage on the dumps:", t["summary"])
assert t["missing_ranks"] == [1], t["missing_ranks"]
PY
# The ranks/ folder alone, as logs: the logs' answer, with the dumps' verdict as a note.
"$hanglab" triage --format json "$run/ranks" > "$out/ranks_triage.json" || fail "hanglab triage on ranks/ failed"
python3 - "$out/ranks_triage.json" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
assert t["missing_ranks"] == [1], t["missing_ranks"]
notes = [n for n in t["notes"] if n.startswith("Flight Recorder (4 of 4 rank(s) dumped)") and "rank 1" in n]
assert notes, t["notes"]
PY
echo PASS
