#!/usr/bin/env bash
# End-to-end: report.html in a real browser. Runs two quick scenarios (kill_rank and
# uneven_batches), loads kill_rank's report.html from disk in headless Chromium and checks
# the DOM after its script ran: one row per rank, the fault marker, the detector lines,
# the triage panel. Then a synthetic 64-rank run directory is rendered with
# `hanglab report` and checked the same way, and matrix.html must link both runs.
# Screenshots are kept as test artifacts: WORK_DIR/report-4-ranks.png,
# report-64-ranks.png, matrix.png. Exit 4 (skipped) when no chromium is installed.
# usage: e2e_html_test.sh HANGLAB SOURCE_DIR WORK_DIR
set -u
hanglab=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "SKIP: no chromium (ci/install-deps.sh installs it)"; exit 4; }
chrome() {  # headless, no network, its own profile, never a hang
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$work/chrome-profile" --disable-background-networking "$@" 2>> "$work/chromium.log"
}
count() { grep -o "$1" "$2" | wc -l; }

"$hanglab" run "$src/scenarios/kill_rank.toml" "$src/scenarios/uneven_batches.toml" --results "$work/results" \
  > "$work/run.txt" 2>&1; rc=$?
cat "$work/run.txt"
[ $rc -le 1 ] || fail "hanglab run exited $rc"
run_dir=$(ls -d "$work"/results/kill_rank/*/ | head -1)
page="$run_dir/report.html"
[ -s "$page" ] || fail "no report.html in $run_dir"
grep -q "https\?://[a-z]" <(grep -o '\(src\|href\)="[^"]*"' "$page") && fail "report.html references the network"

chrome --dump-dom "file://$page" > "$work/dom-4.html" || fail "chromium could not load $page (see $work/chromium.log)"
[ "$(count 'class="rank-row"' "$work/dom-4.html")" -eq 4 ] || fail "want 4 rank rows in the DOM"
grep -q 'fault-marker" id="fault-0"' "$work/dom-4.html" || fail "no fault marker in the DOM"
grep -q 'exit_monitor' "$work/dom-4.html" || fail "no exit_monitor detection in the DOM"
grep -q 'id="triage"' "$work/dom-4.html" || fail "no triage panel"
grep -q 'data-js="ok"' "$work/dom-4.html" || fail "the page's script did not run to the end"
chrome --window-size=1400,900 --screenshot="$work/report-4-ranks.png" "file://$page" > /dev/null
[ "$(head -c 8 "$work/report-4-ranks.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "no PNG screenshot"
echo "ok: 4 ranks: $(count 'class="rank-row"' "$work/dom-4.html") rows, fault marker, triage; $work/report-4-ranks.png"

# A synthetic 64-rank run: rank 17 killed at step 6, the others stuck in its allreduce
# until Connection closed; rendered from its files by `hanglab report`.
wide="$work/wide/kill_rank_64/20300101T000000Z"
mkdir -p "$wide/ranks"
awk -v dir="$wide" 'BEGIN {
  t0 = 1893456000; n = 64; killed = 17; kt = t0 + 3.05
  h = dir "/harness.jsonl"
  printf "{\"t\":%.6f,\"ev\":\"run_start\",\"scenario\":\"kill_rank_64\",\"world_size\":%d,\"timeouts\":{\"init_s\":30,\"collective_s\":5,\"progress_s\":10,\"heartbeat_s\":1}}\n", t0, n > h
  for (r = 0; r < n; r++) {
    printf "{\"t\":%.6f,\"ev\":\"launch\",\"rank\":%d,\"pid\":%d}\n", t0 + 0.01, r, 5000 + r > h
    f = dir "/ranks/" r "/events.jsonl"; system("mkdir -p " dir "/ranks/" r)
    t = t0 + 0.5 + r * 0.004; seq = 1
    printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"start\"}\n", t, r > f
    printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"phase\",\"name\":\"init\",\"edge\":\"begin\",\"step\":0}\n", t, r > f
    t = t0 + 1.0; printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"phase\",\"name\":\"init\",\"edge\":\"end\",\"step\":0}\n", t, r > f
    for (s = 1; s <= 6; s++) {
      b = t; d = 0.28 + ((r * 7 + s * 3) % 10) / 200
      printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"hb\"}\n", b + 0.1, r > f
      if (r == killed && s == 6) { printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"phase\",\"name\":\"backward\",\"edge\":\"begin\",\"step\":6}\n", b + 0.01, r > f; break }
      printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"phase\",\"name\":\"backward\",\"edge\":\"begin\",\"step\":%d}\n", b + 0.01, r, s > f
      printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"coll\",\"edge\":\"begin\",\"seq\":%d,\"op\":\"allreduce\",\"numel\":4096,\"step\":%d}\n", b + d, r, seq, s > f
      if (s == 6) break
      e = t0 + 1.0 + s * 0.34
      printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"coll\",\"edge\":\"end\",\"seq\":%d,\"op\":\"allreduce\",\"numel\":4096,\"step\":%d}\n", e, r, seq, s > f
      printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"phase\",\"name\":\"backward\",\"edge\":\"end\",\"step\":%d}\n", e, r, s > f
      printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"step\",\"step\":%d,\"dur_ms\":%.1f,\"loss\":0.5}\n", e, r, s, (e - b) * 1000 > f
      t = e; seq++
    }
    if (r != killed) {
      printf "{\"t\":%.6f,\"rank\":%d,\"ev\":\"error\",\"class\":\"comm\",\"where\":\"backward\",\"msg\":\"Connection closed by peer\"}\n", kt + 0.05, r > f
      close(f)
      printf "{\"t\":%.6f,\"ev\":\"detect\",\"detector\":\"backend_error\",\"rank\":%d,\"detail\":\"Connection closed by peer\"}\n", kt + 0.05, r > h
      printf "{\"t\":%.6f,\"ev\":\"exit\",\"rank\":%d,\"code\":10,\"signal\":null,\"status\":10,\"by_teardown\":false}\n", kt + 0.06 + r * 0.001, r > h
    } else {
      close(f)
      printf "{\"t\":%.6f,\"ev\":\"fault\",\"kind\":\"kill_rank\",\"ranks\":[%d],\"detail\":\"SIGKILL to pid %d\"}\n", kt, r, 5000 + r > h
      printf "{\"t\":%.6f,\"ev\":\"exit\",\"rank\":%d,\"code\":null,\"signal\":9,\"status\":137,\"by_teardown\":false}\n", kt + 0.001, r > h
      printf "{\"t\":%.6f,\"ev\":\"detect\",\"detector\":\"exit_monitor\",\"rank\":%d,\"detail\":\"rank %d killed by SIGKILL\"}\n", kt + 0.002, r, r > h
    }
  }
  printf "{\"t\":%.6f,\"ev\":\"teardown\",\"reason\":\"all_exited\"}\n{\"t\":%.6f,\"ev\":\"run_end\",\"outcome\":\"crash\"}\n", kt + 0.2, kt + 0.2 > h
  printf "{\"scenario\":\"kill_rank_64\",\"start_t\":%.6f,\"end_t\":%.6f,\"duration_s\":%.2f,\"outcome\":\"crash\",\"settings\":{\"world_size\":64,\"backend\":\"gloo\",\"steps\":10},\"verdict\":{\"status\":\"pass\",\"checks\":[],\"first_detection_s\":{\"exit_monitor\":0.002,\"backend_error\":0.05}}}\n", t0, kt + 0.2, kt + 0.2 - t0 > dir "/run.json"
}' || fail "could not write the synthetic 64-rank run"
"$hanglab" report "$wide" --matrix "$work/wide/matrix.html" > "$work/report-64.txt" 2>&1 || { cat "$work/report-64.txt"; fail "hanglab report failed"; }
chrome --dump-dom "file://$wide/report.html" > "$work/dom-64.html" || fail "chromium could not load the 64-rank page"
[ "$(count 'class="rank-row"' "$work/dom-64.html")" -eq 64 ] || fail "want 64 rank rows in the DOM"
grep -q 'fault-marker" id="fault-0"' "$work/dom-64.html" || fail "no fault marker at 64 ranks"
grep -q 'data-js="ok"' "$work/dom-64.html" || fail "the page's script did not run at 64 ranks"
chrome --window-size=1400,1100 --screenshot="$work/report-64-ranks.png" "file://$wide/report.html" > /dev/null
[ -s "$work/report-64-ranks.png" ] || fail "no 64-rank screenshot"
echo "ok: 64 ranks: $(count 'class="rank-row"' "$work/dom-64.html") rows; $work/report-64-ranks.png"

# The matrix page of the `hanglab run` above links both runs' pages.
[ -s "$work/results/matrix.html" ] || fail "no matrix.html"
chrome --dump-dom "file://$work/results/matrix.html" > "$work/dom-matrix.html" || fail "chromium could not load matrix.html"
[ "$(count 'class="scenario-row"' "$work/dom-matrix.html")" -eq 2 ] || fail "want 2 scenario rows in matrix.html"
grep -q 'href="kill_rank/[^"]*/report.html"' "$work/dom-matrix.html" || fail "matrix.html does not link kill_rank's report"
chrome --window-size=1400,400 --screenshot="$work/matrix.png" "file://$work/results/matrix.html" > /dev/null
echo "ok: matrix.html links both runs; $work/matrix.png"
