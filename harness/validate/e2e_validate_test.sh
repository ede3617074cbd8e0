#!/usr/bin/env bash
# End-to-end: `hanglab validate` on a deliberately bad setting (collective_s = 2 s, shorter
# than the 3 s checkpoint save of scenarios/validate/healthy_slow_phases.toml, during which
# the peers wait in the barrier) must exit 1 and report the false positive against
# collective_s; the recommended settings it writes must then validate with exit 0. One
# quick fault (kill_rank) keeps it near a minute on 2 cores; bad input exits 2. Then torch's
# knobs (scenarios/validate/settings/torch_knobs_harmful.toml, about a minute more): the
# probes must measure the harmful interactions (no torch dump on a Gloo timeout, empty dumps
# with a zero buffer), the static NCCL check must flag the heartbeat, DETAIL must name an op
# mismatch at once, and the proposal must fail; a bad [torch] value exits 2.
# usage: e2e_validate_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
cd "$src" || fail "no source dir $src"

# Bad input: one line, file:line:col and key, exit 2, nothing run.
printf '[timeouts]\ninit_s = 30\ncollective_s = 5\nprogress_s = 10\nheartbeat_s = 1\ncolective_s = 2\n' > "$work/typo.toml"
out=$("$hanglab" validate "$work/typo.toml" --results "$work/typo" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "typo: exit $rc, want 2: $out"
echo "$out" | grep -q "typo.toml:6:1: timeouts.colective_s: unknown key" || fail "typo not named: $out"
[ ! -e "$work/typo/proposed" ] || fail "runs were started for bad input"
echo "ok: $out"

# The bad setting.
"$hanglab" validate scenarios/validate/settings/too_short_collective.toml --scenarios scenarios/kill_rank.toml \
  --results "$work/bad" > "$work/bad.txt" 2> "$work/bad.err"; rc=$?
cat "$work/bad.txt"
[ $rc -eq 1 ] || { cat "$work/bad.err"; fail "bad setting: exit $rc, want 1"; }
grep -q "== proposed settings: FAIL" "$work/bad.txt" || fail "no FAIL verdict for the proposed settings"
grep -Eq "^  healthy_slow_phases +backend_timeout .*\[collective_s = 2 s\]" "$work/bad.txt" ||
  fail "the false positive (backend_timeout on the healthy run, collective_s) is not reported"
grep -Eq "^  collective_s +2 .*FAIL: [0-9]+ false positive" "$work/bad.txt" || fail "collective_s not marked FAIL"
grep -q "== recommended settings: PASS" "$work/bad.txt" || fail "the recommended settings did not pass their re-validation"
rec="$work/bad/recommended.toml"
[ -s "$rec" ] || fail "no recommended.toml written"
coll=$(sed -n 's/^collective_s *= *\([0-9.]*\).*/\1/p' "$rec")
awk -v c="$coll" 'BEGIN { exit !(c > 3.0) }' || fail "recommended collective_s $coll does not exceed the 3 s checkpoint wait"
[ -s "$work/bad/validate.json" ] || fail "no validate.json"
echo "ok: bad setting fails with the false positive; recommended collective_s = $coll"

# The recommendation, validated as a proposal.
"$hanglab" validate "$rec" --scenarios scenarios/kill_rank.toml --results "$work/rec" --no-recheck \
  > "$work/rec.txt" 2> "$work/rec.err"; rc=$?
cat "$work/rec.txt"
[ $rc -eq 0 ] || { cat "$work/rec.err"; fail "recommended settings: exit $rc, want 0"; }
grep -q "== proposed settings: PASS" "$work/rec.txt" || fail "recommended settings not reported PASS"
echo "ok: the recommended settings pass"

# torch knobs: a bad value is one line, exit 2, nothing run.
printf '[timeouts]\ninit_s = 30\ncollective_s = 5\nprogress_s = 10\nheartbeat_s = 1\n[torch]\ndistributed_debug = "LOUD"\n' \
  > "$work/bad_torch.toml"
out=$("$hanglab" validate "$work/bad_torch.toml" --results "$work/bad_torch" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad [torch]: exit $rc, want 2: $out"
echo "$out" | grep -q 'bad_torch.toml:7:21: torch.distributed_debug: must be one of OFF,INFO,DETAIL (got "LOUD")' ||
  fail "bad [torch] value not named: $out"
[ ! -e "$work/bad_torch/proposed" ] || fail "runs were started for a bad [torch]"
echo "ok: $out"

# torch knobs: harmful interactions found by running them.
"$hanglab" validate scenarios/validate/settings/torch_knobs_harmful.toml --scenarios scenarios/kill_rank.toml \
  --no-recheck --results "$work/knobs" > "$work/knobs.txt" 2> "$work/knobs.err"; rc=$?
sed -n '/^torch knobs/,$p' "$work/knobs.txt"
[ $rc -eq 1 ] || { cat "$work/knobs.txt" "$work/knobs.err"; fail "harmful knobs: exit $rc, want 1"; }
k="$work/knobs.txt"
grep -Eq "^  dump_on_timeout_gloo +HARMFUL \(measured\)" "$k" || fail "no measured harm: dump on timeout with Gloo"
grep -Eq "measured: [0-9]+ ranks? timed out; torch wrote 0 dumps" "$k" || fail "the Gloo timeout probe did not time out"
grep -Eq "^  buffer_vs_dump +HARMFUL \(measured\)" "$k" || fail "no measured harm: zero buffer"
grep -Eq "^  heartbeat_before_dump +HARMFUL \(static check\)" "$k" || fail "heartbeat shorter than the dump not flagged"
grep -Eq "with the knobs: crash, first detection backend_error \+0\.[0-9]+ s after the fault \(\"Detected mismatch" "$k" ||
  fail "DETAIL did not name the op mismatch at once"
grep -Eq "without: hang, first detection backend_timeout \+[45]\.[0-9]+ s" "$k" || fail "the op-mismatch control did not time out"
grep -q "verdict: the proposed settings FAIL (0 false positives, 0 misses, 0 late, [0-9]* harmful torch-knob" "$k" ||
  fail "the verdict does not count the harmful knobs"
grep -q '"fr_dump_on_timeout"' "$(ls -d "$work"/knobs/knobs/python_timeout/2*/ | head -1)run.json" ||
  fail "run.json does not record the knobs"
# The fixed heartbeat clears the recommended collective_s + torch's 15 s dump wait by margin_factor 3.
krec="$work/knobs/recommended.toml"
kcoll=$(sed -n 's/^collective_s *= *\([0-9.]*\).*/\1/p' "$krec")
khb=$(sed -n 's/^nccl_heartbeat_timeout_s *= *\([0-9]*\).*/\1/p' "$krec")
awk -v c="$kcoll" -v h="$khb" 'BEGIN { w = 3 * (c + 15); e = (w == int(w)) ? w : int(w) + 1; exit !(h == e) }' ||
  fail "recommended.toml: heartbeat $khb s is not 3 x (collective_s $kcoll + 15 s dump wait), rounded up"
grep -q "^fr_buffer_size = 2000$" "$krec" || fail "recommended.toml: the zero buffer was not fixed"
echo "ok: harmful torch-knob interactions measured and reported"
