#!/usr/bin/env bash
# End-to-end: `hanglab validate` on a deliberately bad setting (collective_s = 2 s, shorter
# than the 3 s checkpoint save of scenarios/validate/healthy_slow_phases.toml, during which
# the peers wait in the barrier) must exit 1 and report the false positive against
# collective_s; the recommended settings it writes must then validate with exit 0. One
# quick fault (kill_rank) keeps it near a minute on 2 cores; bad input exits 2.
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
