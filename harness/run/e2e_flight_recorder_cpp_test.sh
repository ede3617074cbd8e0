#!/usr/bin/env bash
# e2e.flight_recorder_cpp: torch's Flight Recorder from the built-in LibTorch workload (torch_ddp,
# Gloo). Reads the runs that CTest made just before, as this test's fixtures (no second run):
#   scenario.fr_torch_ddp_skip_collective         rank 1 skips step 5's allreduces, exits 0
#   scenario.fr_torch_ddp_skip_collective_linger  ... then lingers: Gloo timeouts, SIGUSR1, SIGTERM
# Each left one dump per rank (torch's pickle, c10d::dump_fr_trace), nothing half-written, each
# written for the reason its rank had (end of training, the loop's error, hanglab's dump
# request, teardown); `hanglab triage` on the dumps alone (copied away from the run, named as
# torch names them) names rank 1; torchfrtrace's verdict is in run.json.
# usage: e2e_flight_recorder_cpp_test.sh HANGLAB RESULTS_DIR OUT_DIR   (exit 4: skipped, no torch_ddp)
set -uo pipefail
hanglab=$1 results=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
python=$(command -v python3)

latest() {  # the newest run directory of a scenario under RESULTS_DIR
  ls -d "$results/$1"/2*Z 2> /dev/null | sort | tail -1
}

for sc in fr_torch_ddp_skip_collective fr_torch_ddp_skip_collective_linger; do
  run=$(latest $sc)
  if [ -z "$run" ] || [ ! -f "$run/run.json" ]; then
    # The fixture was skipped (exit 4: no LibTorch here) or never ran.
    [ -x "$(dirname "$hanglab")/../workloads/torch_ddp" ] || { echo "SKIP: torch_ddp not built"; exit 4; }
    fail "$sc: no run under $results/$sc (run by CTest as this test's fixture)"
  fi
  echo "== $sc: $run"
  for r in 0 1 2 3; do
    [ -s "$run/ranks/$r/flight_recorder.pkl" ] || fail "$sc: rank $r left no dump"
  done
  leftovers=$(find "$run/ranks" -name 'flight_recorder.pkl.tmp.*' | head -1)
  [ -z "$leftovers" ] || fail "$sc: a half-written dump was left: $leftovers"

  # Why each rank dumped (the rank's stderr line), and torch's pickle itself.
  "$python" - "$run" "$sc" << 'PY' || exit 1
import json, pickle, re, sys
run, sc = sys.argv[1], sys.argv[2]
why = {}
for r in range(4):
    text = open(f"{run}/ranks/{r}/stderr.log", errors="replace").read()
    why[r] = re.findall(r"flight recorder: \d+ bytes written to \S+ in \d+ ms \(([^)]*)\)", text)
    print(f"rank {r} dumped: {why[r]}")
    d = pickle.load(open(f"{run}/ranks/{r}/flight_recorder.pkl", "rb"))
    ops = {e["profiling_name"] for e in d["entries"]}
    assert d["entries"] and ops <= {"gloo:all_reduce", "gloo:broadcast", "gloo:barrier"}, (r, ops)
    assert all(tuple(e["process_group"]) == ("0", "default_pg") for e in d["entries"]), r
exits = {}
for line in open(f"{run}/harness.jsonl"):
    ev = json.loads(line)
    if ev["ev"] == "exit":
        exits[ev["rank"]] = ev
signalled = [ev for ev in map(json.loads, open(f"{run}/harness.jsonl")) if ev["ev"] == "fr_dump_signal"]
if sc == "fr_torch_ddp_skip_collective":
    # Rank 1 ends its loop one step's allreduces short and leaves; its peers' allreduce then
    # fails ("Connection closed by peer").
    assert why[1] == ["end of training"], why[1]
    for r in (0, 2, 3):
        assert "the loop ended early: comm" in why[r], (r, why[r])
else:
    # The peers time out in Gloo and dump as the error ends them; the first detection asks every
    # live rank for a dump (rank 1 lingers: it dumps and goes on); the teardown's SIGTERM makes
    # rank 1 dump again and die of SIGTERM.
    for r in (0, 2, 3):
        assert "the loop ended early: timeout" in why[r], (r, why[r])
    assert signalled and 1 in signalled[0]["ranks"], signalled
    assert why[1] == ["dump request", "teardown request"], why[1]
    assert exits[1]["signal"] == 15 and exits[1]["by_teardown"], exits[1]
fr = json.load(open(f"{run}/run.json"))["flight_recorder"]
assert fr["dumped_ranks"] == [0, 1, 2, 3], fr
t = fr["torchfrtrace"]
# As on the Python ranks' Gloo dumps: torch 2.15's torchfrtrace crashes, pg_config is keyed by
# an empty name (ProcessGroupGloo records its ranks before init_process_group names the group,
# and the workload names it as init_process_group does). A torch that reads them fails this on
# purpose (then: rank 1).
assert t["status"] == "crashed" and t["detail"].startswith("KeyError: ('0', "), t
print("torchfrtrace:", t["status"], t["detail"])
PY

  # The dumps alone, away from the run and its logs, named as torch names them.
  dumps=$out/$sc/dumps
  mkdir -p "$dumps"
  for r in 0 1 2 3; do cp "$run/ranks/$r/flight_recorder.pkl" "$dumps/rank_$r"; done
  "$hanglab" triage --format json "$dumps" > "$out/$sc/triage.json" || fail "$sc: hanglab triage on the dumps failed"
  "$python" - "$out/$sc/triage.json" << 'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
print("hanglab triage on the dumps alone:", t["summary"])
assert t["missing_ranks"] == [1], t["missing_ranks"]
assert t["phase"] == "training", t["phase"]
PY
done
echo PASS
