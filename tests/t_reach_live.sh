#!/bin/bash
# t_reach_live: heapattach --live --reach=1 --rss on a target of known truth
# (tests/targets/reach_truth) in a real terminal (tmux): the view shows the
# target's call paths while scans run every second; the scans are stored
# without error (each stops the target's threads and copies it while the
# view and the --rss sampler run); q detaches as usual, the last scan
# taken just before (reason 'reach', the hooks still in), none at the
# detach snapshot itself; the resident-memory rows are there; the target is
# unharmed (its own check of its blocks unchanged) and has no child left;
# what the scans found is what t_reach_truth finds (the dropped blocks
# unreachable, g_held's held), and the HTML report of the session shows it.
# run-all-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all reach_truth
command -v tmux >/dev/null || skip "tmux is not installed (build-aux/setup installs it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch -separator ' ' "$db" "$1" || fail "sqlite3 failed on: $1"; }

start_target live reach_truth
pid=$TPID
db=$W/live.db
sock=$W/tmux.sock
T=(tmux -S "$sock")
at_exit "tmux -S '$sock' kill-server"
"${T[@]}" new-session -d -s live -x 110 -y 30 \
	"cd '$W' && '$HA' --live --reach=1 --rss -i 4096 --block -o '$db' $pid 2>'$W/live.err'; echo \"exit=\$?\" >'$W/live.rc'; sleep 600"
pane() { "${T[@]}" capture-pane -p -t live; }
see() { # SECS REGEX: wait until the pane shows a line matching REGEX
	local re=$2
	wait_for "$1" 'pane | grep -Eq -- "$re"' || { pane | sed 's/^/    | /'; fail "the view did not show /$re/ within $1 s"; }
}
# The agent is in when its module is mapped; the blocks are built after.
wait_for 30 'grep -q heapattach_agent "/proc/$pid/maps"' || { pane | sed 's/^/    | /'; fail "no agent in the target within 30 s"; }
target_cmd "build 200 4096"
target_cmd check
before=$(grep '^check ' "$TOUT" | tail -n 1)
see 20 'global_site|drop_site|table_site'
log "the view shows the target's call paths"
scans() { sqlite3 "$db" "SELECT count(*) FROM reach_scans WHERE error = ''" 2>/dev/null || echo 0; }
wait_for 60 '[ "$(scans)" -ge 3 ]' || fail "fewer than 3 scans stored within 60 s: $(q "SELECT error, count(*) FROM reach_scans GROUP BY 1")"
pane | sed 's/^/    | /'
pane | grep -q $'[\x01-\x08\x0b-\x1f]' && fail "control characters on the screen"
see 5 'global_site|drop_site|table_site'
"${T[@]}" send-keys -t live q
wait_for 30 '[ -s "$W/live.rc" ]' || { pane | sed 's/^/    | /'; fail "q did not end heapattach within 30 s"; }
[ "$(cat "$W/live.rc")" = exit=0 ] || fail "heapattach --live --reach exited: $(cat "$W/live.rc"); $(cat "$W/live.err")"
sed 's/^/    err| /' "$W/live.err" | head -n 20
grep -q 'reachability scan' "$W/live.err" && fail "a scan failed: $(grep 'reachability scan' "$W/live.err")"

# the scans: several of reason 'reach', the last just before the detach, none failed
log "scans: $(q "SELECT s.reason, count(*), round(avg(r.pause_ms), 2) FROM reach_scans r JOIN snapshots s ON s.id = r.snapshot_id GROUP BY 1" | tr '\n' ';')"
[ "$(q "SELECT count(*) FROM reach_scans WHERE error != ''")" = 0 ] ||
	fail "failed scans: $(q "SELECT error FROM reach_scans WHERE error != ''")"
[ "$(q "SELECT count(*) FROM reach_scans r JOIN snapshots s ON s.id = r.snapshot_id WHERE s.reason != 'reach'")" = 0 ] ||
	fail "a scan at a snapshot not of reason 'reach'"
[ "$(q "SELECT s.reason FROM snapshots s ORDER BY s.id DESC LIMIT 1")" = detach ] || fail "the last snapshot is not the detach"
gap=$(q "SELECT round(d.time - s.time, 1) FROM snapshots d, snapshots s
         WHERE d.id = (SELECT max(id) FROM snapshots) AND s.id = (SELECT max(snapshot_id) FROM reach_scans)")
awk -v g="$gap" 'BEGIN { exit !(g >= 0 && g < 10) }' || fail "the last scan came $gap s before the detach snapshot"
[ "$(q "SELECT count(*) FROM buckets b JOIN kinds k ON k.id = b.kind WHERE k.name = 'rss'")" -ge 1 ] ||
	grep -q 'perf events' "$W/live.err" || fail "--rss recorded no resident memory"

# the target unharmed, no copy left
target_cmd check
after=$(grep '^check ' "$TOUT" | tail -n 1)
[ "$after" = "$before" ] || fail "the target's check changed: '$before' then '$after'"
[ -z "$(ps -o pid= --ppid "$pid")" ] || fail "the target has children: $(ps -o pid,stat,comm --ppid "$pid")"

# what the last scan found: the dropped blocks unreachable, g_held's held
last=$(q "SELECT max(snapshot_id) FROM reach_scans")
u=$(q "SELECT round(total(unreachable_bytes)) FROM reach_rows r JOIN stack_text t ON t.stack_id = r.stack_id
       WHERE r.snapshot_id = $last AND t.leaf_function = 'drop_site'")
h=$(q "SELECT h.root || '|' || h.name FROM reach_holders h JOIN stack_text t ON t.stack_id = h.stack_id
       WHERE h.snapshot_id = $last AND t.leaf_function = 'global_site' ORDER BY h.bytes DESC LIMIT 1")
within 25 "$u" $((200 * 4096)) || fail "drop_site: unreachable $u, expected about $((200 * 4096))"
l_held=$(grep -n -F 'void *g_held[MAXN];' "$HA_SRCDIR/tests/targets/reach_truth.c" | cut -d: -f1)
[ "$h" = "global|g_held (reach_truth.c:$l_held) [reach_truth]" ] || fail "global_site held by '$h'"
log "drop_site: $u bytes unreachable; global_site held by $h"

HD=$HA_BUILDDIR/src/heapdiff
"$HD" -f html -o "$W/live.html" "$db" 2>"$W/hd.err" || fail "heapdiff -f html: $(cat "$W/hd.err")"
python3 - "$W/live.html" "$l_held" <<'PY' || fail "the session's page has no scan"
import json, re, sys
s = open(sys.argv[1], encoding='utf-8').read()
d = json.loads(re.search(r'<script type="application/json" id="hd-data">\n(.*?)\n</script>', s, re.S).group(1))
R = d['reach']
assert R and R['reason'] == 'reach', R and R['reason']
names = {d['frames'][r[2][0]][0]: r[1] for r in R['rows'] if r[2]}
assert names['drop_site'][0] > 0 and names['drop_site'][2] == 0, names['drop_site']
assert names['global_site'][5][0][:2] == ['global', 'g_held (reach_truth.c:%s) [reach_truth]' % sys.argv[2]], names['global_site']
PY
echo "ok: --live --reach=1 --rss: the view, the scans, q, the target unharmed, the page"
