#!/bin/bash
# t_target_exit_rss: a target that grows about 30 MiB and exits while
# attached (--rss, issue 39).  Its 'exit' snapshot, taken once the target
# is gone, records the last RSS and RssAnon read before the exit (not 0),
# marked with the time they were read (snapshots.rss_read_time, NULL in the
# snapshots read live); every view of the session shows the growth the
# target made, the same figure everywhere, said to be the last read:
# heapdiff text (the total line, --kind rss, --heap-vs-rss), json
# (total.rss_bytes, to.rss_read_time, --heap-vs-rss), html (its data; in
# headless Chromium when installed, the header's A -> B and the chart's RSS
# line, which ends up where it was last read, not at 0).  The same session
# as a version-8 file, where the 'exit' snapshot of a gone target read 0,
# is read as it is and shows an unknown RSS in every view, never a shrink.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/report_lib.sh"
require_all leak_cmd
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
MiB=1048576

# ---- the session: attach, grow 30 MiB, a snapshot (the RSS read then),
# exit.  No periodic snapshots: what the exit snapshot carries can only be
# a reading of the grown target.
db=$W/exit.db
start_profiled ex leak_cmd --rss -q -s 0 -o "$db"
target_cmd "leak 7680 4096"
snapshot_now "$db"
send "$TFD" quit
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "leak_cmd exited $RC (expected 0 on quit)"
wait_for 10 '! is_alive "$HAPID"' || fail "heapattach still running 10 s after the target exited"
wait "$HAPID"
rc=$?
sed 's/^/    /' "$HA_ERR"
[ "$rc" = 0 ] || fail "heapattach exited $rc after the target exited"
grep -qx "heapattach: target $pid exited" "$HA_ERR" || fail "no 'heapattach: target $pid exited' line"

q -header "$db" "SELECT id, reason, time, rss_bytes, rss_anon_bytes, rss_read_time FROM snapshots" |
	sed 's/^/    /'
rss_on=$(q "$db" "SELECT rss_period > 0 FROM sessions")
[ "$rss_on" = 1 ] || log "no --rss here (perf events refused): RssAnon and --heap-vs-rss not checked"
read -r a_id a_rss a_anon <<<"$(q -separator ' ' "$db" \
	"SELECT id, rss_bytes, rss_anon_bytes FROM snapshots WHERE reason = 'attach' AND rss_read_time IS NULL")"
read -r s_time s_rss <<<"$(q -separator ' ' "$db" \
	"SELECT time, rss_bytes FROM snapshots WHERE reason = 'signal' AND rss_read_time IS NULL")"
read -r b_id b_time b_rss b_anon b_read <<<"$(q -separator ' ' "$db" \
	"SELECT id, time, rss_bytes, rss_anon_bytes, rss_read_time FROM snapshots WHERE reason = 'exit'")"
[ -n "$a_rss" ] && [ -n "$s_rss" ] && [ "$a_rss" -gt 0 ] ||
	fail "no attach and signal snapshots read live with an RSS"
[ "$s_rss" -ge $((a_rss + 25 * MiB)) ] || fail "the RSS did not grow 25 MiB by the signal snapshot: $a_rss -> $s_rss"
# The exit snapshot: the last reading (the signal snapshot's, or a later
# one of the grown target), marked with its time.
[ -n "$b_read" ] || fail "the exit snapshot's RSS is not marked as the last read (rss_read_time NULL)"
[ "$b_rss" -ge $((s_rss - MiB)) ] || fail "the exit snapshot's RSS $b_rss is not the last one read (>= $s_rss - 1 MiB)"
awk -v r="$b_read" -v s="$s_time" -v b="$b_time" 'BEGIN { exit !(r >= s - 0.5 && r <= b) }' ||
	fail "rss_read_time $b_read is not between the signal snapshot ($s_time) and the exit ($b_time)"
[ "$(q "$db" "SELECT count(*) FROM snapshots WHERE rss_bytes <= 0")" = 0 ] || fail "a snapshot has RSS 0"
if [ "$rss_on" = 1 ]; then
	[ "$b_anon" -ge $((a_anon + 25 * MiB)) ] || fail "the exit snapshot's RssAnon $b_anon is not the last read"
fi
grow=$((b_rss - a_rss)) agrow=$((b_anon - a_anon))
log "RSS +$grow, RssAnon +$agrow, last read $(awk -v r="$b_read" -v b="$b_time" 'BEGIN { printf "%.2f", b - r }') s before the exit snapshot"
echo "ok: the exit snapshot holds the last RSS read, marked"

# ---- text: the total line's RSS is the growth, said to be the last read
last_re='\(B: last read before the exit, [0-9]+\.[0-9] s earlier\)'
hd --bytes "$db" first last >"$W/text"
total=$(grep '^total:' "$W/text")
log "$total"
grep -Eq "; RSS \\+$grow $last_re; [0-9.]+ s\$" <<<"$total" || fail "text: not 'RSS +$grow (B: last read ...)': $total"
if [ "$rss_on" = 1 ]; then
	hd --bytes --kind rss "$db" first last >"$W/text_rss"
	total=$(grep '^total:' "$W/text_rss")
	grep -Eq "; RssAnon \\+$agrow; RSS \\+$grow $last_re; " <<<"$total" || fail "text --kind rss: $total"
	hd --bytes --heap-vs-rss "$db" first last >"$W/vs"
	total=$(grep '^total:' "$W/vs")
	grep -Eq "; RssAnon \\+$agrow; VmSwap [^;]*; RSS \\+$grow $last_re; " <<<"$total" ||
		fail "text --heap-vs-rss: $total"
fi
echo "ok: text"

# ---- json (and --heap-vs-rss's)
hd -f json "$db" first last >"$W/j.json"
[ "$rss_on" = 1 ] && hd -f json --heap-vs-rss "$db" first last >"$W/vs.json"
python3 - "$W/j.json" "$W/vs.json" "$grow" "$agrow" "$b_rss" "$b_read" "$rss_on" <<'PY' || fail "json: wrong RSS"
import json, os, sys
path, vs, grow, agrow, b_rss, b_read, rss_on = sys.argv[1:]
for p in [path] + ([vs] if rss_on == '1' else []):
    d = json.load(open(p))
    t, a, b = d['total'], d['from'], d['to']
    assert t['rss_bytes'] == int(grow), (p, t)
    assert rss_on != '1' or t['rss_anon_bytes'] == int(agrow), (p, t)
    assert a['rss_read_time'] is None and b['rss_bytes'] == int(b_rss), (p, a, b)
    assert abs(b['rss_read_time'] - float(b_read)) < 0.01, (p, b)
PY
echo "ok: json"

# ---- html: the data, then the page in Chromium
hd -f html -o "$W/p.html" "$db" first last
page_json "$W/p.html" >"$W/p.json" || fail "the page's data is not JSON"
python3 - "$W/p.json" "$a_rss" "$b_rss" "$b_read" "$b_id" <<'PY' || fail "html: wrong RSS in the page's data"
import json, sys
d = json.load(open(sys.argv[1]))
a_rss, b_rss, b_read, b_id = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
a, b = d['a'], d['b']
assert a['rss'] == a_rss and a['rss_read_time'] is None, a
assert b['rss'] == b_rss and abs(b['rss_read_time'] - b_read) < 0.01, b
rows = {s[0]: s for s in d['snaps']}
assert all(s[3] and s[3] > 0 for s in d['snaps']), d['snaps']
assert rows[b_id][3] == b_rss and abs(rows[b_id][13] - b_read) < 0.01, rows[b_id]
assert all(s[13] is None for s in d['snaps'] if s[0] != b_id), d['snaps']
PY
if (require_chromium) >/dev/null 2>&1; then
	require_chromium
	dom "$W/p.html" "$W/p.dom"
	check_dom "$W/p.dom" >/dev/null
	python3 - "$W/p.dom" "$grow" <<'PY' || fail "html: the rendered page shows the RSS wrong"
import html, re, sys
d = open(sys.argv[1], encoding='utf-8').read()
grow = int(sys.argv[2])
def fmt(v):  # the page's fmtBytes, with a sign
    a, u = float(abs(v)), -1
    while a >= 1024 and u < 3:
        a /= 1024
        u += 1
    n = '%.2f' % a if a < 10 else '%.1f' % a if a < 100 else '%.0f' % a
    return ('+' if v > 0 else '-') + n + ' ' + ['KiB', 'MiB', 'GiB', 'TiB'][u]
m = re.search(r'<dt>A \u2192 B</dt><dd[^>]*>([^<]*)</dd>', d)
assert m, 'no A -> B in the header'
ab = html.unescape(m.group(1))
print('    A -> B:', ab)
assert re.search(r'RSS ' + re.escape(fmt(grow)) + r' \(B: last read before the exit, [0-9.]+ s earlier\) in ', ab), ab
line = re.search(r'<polyline points="([^"]*)" class="rss"', d)
assert line, 'no RSS line in the chart'
pts = sorted((float(x), float(y)) for x, y in (p.split(',') for p in line.group(1).split()))
print('    RSS line:', pts)
# y grows downwards: the line ends well above where it began, never at 0.
assert pts[-1][1] < pts[0][1] - 20, pts
assert 'the last read before the exit' in d, 'the legend does not say what the last point is'
PY
	echo "ok: html rendered"
else
	log "Chromium cannot render here: the page's data checked, not its DOM"
fi
echo "ok: html"

# ---- the same session as a version-8 file: its exit snapshot read 0
v8=$W/v8.db
cp "$db" "$v8"
q "$v8" "DROP VIEW snapshot_totals; ALTER TABLE snapshots DROP COLUMN rss_read_time;
         CREATE VIEW snapshot_totals AS SELECT s.id AS snapshot_id, s.rss_bytes FROM snapshots s;
         UPDATE snapshots SET rss_bytes = 0, rss_anon_bytes = 0, swap_bytes = 0 WHERE reason = 'exit';
         UPDATE meta SET value = '8' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
rm -f "$v8-wal" "$v8-shm"
hd --bytes "$v8" first last >"$W/text8"
total=$(grep '^total:' "$W/text8")
log "version 8: $total"
grep -Eq '; RSS unknown \(not read: the target was gone\); [0-9.]+ s$' <<<"$total" || fail "version 8, text: $total"
hd -f json "$v8" first last >"$W/j8.json"
hd -f html -o "$W/p8.html" "$v8" first last
page_json "$W/p8.html" >"$W/p8.json" || fail "the version-8 page's data is not JSON"
python3 - "$W/j8.json" "$W/p8.json" "$b_id" <<'PY' || fail "version 8: an unknown RSS is not null"
import json, sys
j, p, b_id = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
assert j['total']['rss_bytes'] is None and j['to']['rss_bytes'] is None and j['from']['rss_bytes'] > 0, j['total']
assert p['b']['rss'] is None and p['a']['rss'] > 0, (p['a'], p['b'])
assert [s[3] for s in p['snaps'] if s[0] == b_id] == [None], p['snaps']
PY
echo "ok: a version-8 file: the gone target's RSS is unknown, not a shrink"
