#!/bin/bash
# t_leaks_pipeline: the whole pipeline on a real program (tests/targets/
# leak_trend): a steady leak in leak_step(), a cache in cache_step() that
# grows for five steps and is then emptied, a constant pool from
# pool_init().  heapattach samples every allocation; a snapshot is taken
# after each step (SIGUSR1, synchronously).  heapdiff --leaks must name
# leak_step and only it; the leak_suspects view agrees; the flame graph of
# first..last (svg) is well-formed XML and shows leak_step; the html page
# names leak_step among the growth and as the only leak suspect, and so
# does its DOM in headless Chromium when that is installed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all leak_trend
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"

db=$W/trend.db
start_profiled lt leak_trend -q -i 1 --block -s 3600 -o "$db"
send "$TFD" pool
wait_line "$TOUT" '^done pool$'
snapshot_now "$db"
for i in 0 1 2 3 4 5 6 7 8 9; do
	# Steps at a steady pace, as a leak in a service grows with time.
	sleep 0.2
	send "$TFD" "step $i"
	wait_line "$TOUT" "^done step $i\$"
	snapshot_now "$db"
done
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "leak_trend exited $RC"

HD=$HA_BUILDDIR/src/heapdiff
"$HD" --leaks --bytes "$db" >"$W/leaks" 2>&1 || fail "heapdiff --leaks failed: $(cat "$W/leaks")"
sed 's/^/    /' "$W/leaks"
leaves=$(awk '$5 == "stack" { want = 1; next } want && /^                    / { sub(/^ +/, ""); split($0, f, "  "); print f[1]; want = 0 }' "$W/leaks")
[ "$leaves" = leak_step ] || fail "suspects are '$(echo $leaves)', expected only leak_step"
# 32 blocks of 2 KiB per step, 10 steps: the live bytes now are exact.
awk '$5 == "stack" { print $3 }' "$W/leaks" | grep -qx $((10 * 32 * 2048)) ||
	fail "leak_step's live bytes are not $((10 * 32 * 2048))"
view=$(sqlite3 "$db" "SELECT group_concat(s.leaf_function) FROM leak_suspects l JOIN stack_text s USING (stack_id)")
[ "$view" = leak_step ] || fail "leak_suspects view: '$view', expected leak_step"
# The cache grew and fell back: not a suspect, but present.
n=$(sqlite3 "$db" "SELECT count(*) FROM leak_trend l JOIN stack_text s USING (stack_id) WHERE s.leaf_function = 'cache_step' AND retained < 0.9")
[ "$n" -ge 1 ] || fail "cache_step has no fallen-back trend in leak_trend"
echo "ok: leak_step is the only suspect; the cache and the pool are not"

"$HD" --peak --bytes "$db" >"$W/peak" || fail "heapdiff --peak failed"
head -n 1 "$W/peak"
"$HD" -f svg "$db" first last >"$W/g.svg" || fail "heapdiff -f svg failed"
python3 - "$W/g.svg" <<'PY' || fail "the svg is not well-formed or lacks leak_step"
import sys, xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
t = ET.parse(sys.argv[1])
names = [g.find(ns + 'title').text for g in t.getroot().iter(ns + 'g') if g.get('class') == 'f']
assert any(n.startswith('leak_step ') for n in names), names
PY
"$HD" -f html -o "$W/r.html" "$db" || fail "heapdiff -f html failed"
python3 - "$W/r.html" <<'PY' || fail "the html page does not name leak_step as the leak"
import json, re, sys
s = open(sys.argv[1], encoding='utf-8').read()
d = json.loads(re.search(r'<script type="application/json" id="hd-data">\n(.*?)\n</script>', s, re.S).group(1))
F = d['frames']
diff = [v for v in d['views'] if v['key'] == 'diff'][0]
top = diff['rows'][0]
assert F[top[3][0]][0] == 'leak_step', [F[r[3][0]][0] for r in diff['rows']]
sus = [F[x['frames'][0]][0] for x in d['leaks']['suspects']]
assert sus == ['leak_step'], sus
assert len(d['snaps']) >= 11, len(d['snaps'])
PY
CHROMIUM=$(command -v chromium || true)
if [ -n "$CHROMIUM" ]; then
	prof=$(mktemp -d "$W/chromium.XXXXXX")
	timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$prof" --dump-dom "file://$W/r.html" >"$W/r.dom" 2>"$W/chromium.log" ||
		fail "chromium --dump-dom failed: $(tail -n 5 "$W/chromium.log")"
	python3 - "$W/r.dom" <<'PY' || fail "the rendered page does not show leak_step"
import re, sys
d = open(sys.argv[1], encoding='utf-8').read()
assert re.search(r'<html[^>]*data-rendered="', d) and not re.search(r'<html[^>]*data-errors=', d), 'not rendered cleanly'
assert re.search(r'<div class="fr[^"]*"[^>]*>leak_step</div>', d), 'leak_step not in the flame graph'
leaks = re.search(r'<section id="hd-leaks">.*?</section>', d, re.S).group(0)
assert 'leak_step' in leaks and 'cache_step' not in leaks, 'the leak table'
PY
	log "html page rendered by chromium: leak_step in the flame graph and the leak table"
fi
echo ok
