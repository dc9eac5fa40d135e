#!/bin/bash
# t_reach_truth: heapattach --reach on a target of known truth
# (tests/targets/reach_truth: 400 blocks of 4 KiB at each of its sites).
# After a scan on SIGUSR2 and the last one (taken just before the detach,
# the hooks still in: reason 'reach', none at the detach snapshot itself),
# per call path: the sites
# that dropped their blocks (drop_site, and parent_site's parents with
# child_site's children) are unreachable, the others reachable, each within
# 25% of the truth, with their holders: the globals g_held, g_table (one
# heap hop: through the heap array it holds) and g_mid (pointers into the
# middle of the blocks) named with their module, the blocked thread's stack
# and its TLS.  Globals are named with the file:line of their definition
# (DWARF), the stack by the function whose frame holds the blocks
# (holder_thread) and the line it is at, the TLS by its variable (t_held,
# past t_round in the executable's TLS block: the block told from glibc's
# link_map and the thread's dtv, the variable from the STT_TLS symbol and
# DWARF's TLS location) and its thread.  The target is unharmed (its own check of the held blocks
# answers as before), no child of it is left (the copies are reaped), and
# each scan's figures are stored; heapdiff --reach shows them as text and JSON.
# (--block: a ring that overflows on a
# loaded machine drops samples, and the truth is then not what was sampled.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all reach_truth
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"

N=400 SIZE=4096
db=$W/reach.db
start_profiled truth reach_truth --reach -i 4096 --block -q -s 3600 -o "$db"
target_cmd "build $N $SIZE"
target_cmd check
before=$(grep '^check ' "$TOUT" | tail -n 1)
[ "$before" = "check $((13 * N))" ] || fail "the target's check before the scans: '$before'"

kill -USR2 "$HAPID" || fail "heapattach is gone"
wait_for 30 '[ "$(sqlite3 "$db" "SELECT count(*) FROM reach_scans" 2>/dev/null)" = 1 ]' ||
	fail "no scan stored within 30 s of SIGUSR2"
[ -z "$(ps -o pid= --ppid "$pid")" ] || fail "the target has a child after the scan: $(ps -o pid,stat,comm --ppid "$pid")"
detach_by_signal INT "$pid"
target_cmd check
after=$(grep '^check ' "$TOUT" | tail -n 1)
[ "$after" = "$before" ] || fail "the target's check changed: '$before' then '$after'"
[ -z "$(ps -o pid= --ppid "$pid")" ] || fail "the target has a child after detach: $(ps -o pid,stat,comm --ppid "$pid")"
grep -q 'reachability scan' "$HA_ERR" && fail "heapattach said a scan failed: $(grep 'reachability scan' "$HA_ERR")"

q() { sqlite3 -batch -separator ' ' "$db" "$1" || fail "sqlite3 failed on: $1"; }
scans=$(q "SELECT s.reason, r.error FROM reach_scans r JOIN snapshots s ON s.id = r.snapshot_id ORDER BY s.id")
log "scans: $(q "SELECT pause_ms, duration_ms, bytes_scanned, cow_bytes, chunks, blocks FROM reach_scans" | tr '\n' ';')"
[ "$scans" = "reach 
reach " ] || fail "scans stored: '$scans' (expected two of reason reach, the SIGUSR2's and the last, before the detach, no error)"
[ "$(q "SELECT reason FROM snapshots WHERE id > $(q "SELECT max(snapshot_id) FROM reach_scans")")" = detach ] ||
	fail "snapshots after the last scan: '$(q "SELECT reason FROM snapshots WHERE id > (SELECT max(snapshot_id) FROM reach_scans)")' (expected the detach's alone)"

# per site at the last scan: unreachable, reachable bytes; the top holder.
last=$(q "SELECT max(snapshot_id) FROM reach_scans")
site() {
	q "SELECT round(total(r.unreachable_bytes)), round(total(r.reachable_bytes)),
	          (SELECT h.root || '|' || h.name || '|' || h.hops FROM reach_holders h
	            WHERE h.snapshot_id = $last AND h.stack_id IN
	                  (SELECT stack_id FROM stack_text WHERE leaf_function = '$1')
	            ORDER BY h.bytes DESC LIMIT 1)
	     FROM reach_rows r JOIN stack_text st ON st.stack_id = r.stack_id
	    WHERE r.snapshot_id = $last AND st.leaf_function = '$1'"
}
truth=$((N * SIZE))
check_site() { # SITE unreachable|reachable [ROOT|NAME|HOPS]
	local s=$1 want=$2 holder=${3:-} u r h
	read -r u r h < <(site "$s")
	log "$s: unreachable $u, reachable $r, held by $h"
	if [ "$want" = unreachable ]; then
		within 25 "$u" "$truth" || fail "$s: unreachable $u is not within 25% of $truth"
		[ "${r%.0}" = 0 ] || within 5 "$r" 0 2>/dev/null || [ "$(awk -v r="$r" -v t="$truth" 'BEGIN { print (r < t / 20) }')" = 1 ] ||
			fail "$s: $r bytes found reachable, nothing should be"
	else
		within 25 "$r" "$truth" || fail "$s: reachable $r is not within 25% of $truth"
		[ "$(awk -v u="$u" -v t="$truth" 'BEGIN { print (u < t / 20) }')" = 1 ] ||
			fail "$s: $u bytes found unreachable"
		[ "$h" = "$holder" ] || fail "$s: held by '$h', expected '$holder'"
	fi
}
check_site drop_site unreachable
check_site parent_site unreachable
check_site child_site unreachable
# Globals with the file:line of their definition (DWARF), the stack by the
# function whose frame holds the blocks and the line it is blocked at.
src=$HA_SRCDIR/tests/targets/reach_truth.c
line_of() { grep -n -F -- "$1" "$src" | head -n 1 | cut -d: -f1; }
l_held=$(line_of 'void *g_held[MAXN];') l_table=$(line_of 'void **g_table;')
l_mid=$(line_of 'char *g_mid[MAXN];') l_read=$(line_of 'while (read(pipe_fds[0], &c, 1) < 0)')
l_tls=$(line_of '__thread void *t_held[MAXN];')
[ -n "$l_held" ] && [ -n "$l_table" ] && [ -n "$l_mid" ] && [ -n "$l_read" ] && [ -n "$l_tls" ] ||
	fail "cannot find the definitions' lines in $src"
check_site global_site reachable "global|g_held (reach_truth.c:$l_held) [reach_truth]|0"
check_site table_site reachable "global|g_table (reach_truth.c:$l_table) [reach_truth]|1"
check_site middle_site reachable "global|g_mid (reach_truth.c:$l_mid) [reach_truth]|0"
tid=$(ls "/proc/$pid/task" | sort -n | sed -n 2p)
check_site thread_site reachable "stack|tid $tid in holder_thread (reach_truth.c:$l_read)|0"
check_site tls_site reachable "tls|t_held (reach_truth.c:$l_tls) [reach_truth] tid $tid|0"
echo "ok: every site within 25% of the truth, the holders named (definitions' lines, the holding frame, the TLS variable)"

# heapdiff --reach: the same, as text and as JSON.
HD=$HA_BUILDDIR/src/heapdiff
"$HD" --reach -n 0 "$db" >"$W/reach.txt" 2>&1 || fail "heapdiff --reach failed: $(cat "$W/reach.txt")"
sed 's/^/    /' "$W/reach.txt" | head -n 20
grep -Eq '^ +LIVE +UNREACHABLE +REACHABLE +HELD BY$' "$W/reach.txt" || fail "heapdiff --reach: no header"
grep -qF "global g_held (reach_truth.c:$l_held) [reach_truth]" "$W/reach.txt" ||
	fail "heapdiff --reach names no g_held with its definition"
"$HD" --reach -f json "$db" >"$W/reach.json" 2>&1 || fail "heapdiff --reach -f json failed: $(cat "$W/reach.json")"
grep -qF "tls t_held (reach_truth.c:$l_tls) [reach_truth] tid $tid" "$W/reach.txt" ||
	fail "heapdiff --reach names no t_held with its definition and thread"
python3 - "$W/reach.json" "$l_held" "$tid" "$l_read" "$l_tls" <<'PY' || fail "heapdiff --reach -f json: $(head -c 600 "$W/reach.json")"
import json, sys
d = json.load(open(sys.argv[1]))["reach"]
rows = {r["frames"][0]["function"]: r for r in d["rows"] if r["frames"]}
for k in ("unreachable_bytes", "unreachable_objects", "reachable_bytes", "reachable_objects", "held_by"):
    assert all(k in r for r in d["rows"]), k
assert rows["drop_site"]["unreachable_bytes"] > 0 and rows["drop_site"]["held_by"] == []
h = rows["global_site"]["held_by"][0]
assert (h["root"], h["name"], h["hops"]) == ("global", "g_held (reach_truth.c:%s) [reach_truth]" % sys.argv[2], 0), h
h = rows["thread_site"]["held_by"][0]
assert (h["root"], h["name"]) == ("stack", "tid %s in holder_thread (reach_truth.c:%s)" % (sys.argv[3], sys.argv[4])), h
h = rows["tls_site"]["held_by"][0]
assert (h["root"], h["name"], h["hops"]) == ("tls", "t_held (reach_truth.c:%s) [reach_truth] tid %s" % (sys.argv[5], sys.argv[3]), 0), h
assert rows["table_site"]["held_by"][0]["hops"] == 1
assert d["scan"]["pause_ms"] > 0 and d["scan"]["blocks"] > 0
PY
echo "ok: heapdiff --reach as text and JSON"
