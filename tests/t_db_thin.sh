#!/bin/bash
# t_db_thin: the thinning of a long session's old snapshots (issue 39,
# src/db/db_thin.c) and the cadence of the call paths (schema version 14).
# tests/db_thin_check (under ASan and UBSan) writes 25 hours of
# 10-second snapshots (9,004), the call paths once every two minutes and the totals
# between, as the collector does, thins them with ha_db_thin and checks,
# itself: every value at a snapshot kept is what it was; the baseline, the
# SIGUSR1 one, the peak and the end survive; every one of the last hour is
# kept, those with call paths once every two minutes up to a day, one every
# ten minutes older, none with totals only older than an hour; a second
# thinning removes nothing.  Then heapdiff on the thinned file: --leaks
# still ranks the steady leak first over the snapshots with paths, --peak
# finds the peak snapshot, the growth since the attach is the leak's whole
# 25 hours, a snapshot with totals only is refused as an operand
# naming the nearest with paths, and the page's chart has every snapshot
# with the totals-only ones marked.  Then a real session
# (tests/targets/leak_cmd) at --snapshot-every 0.05 for 30 s, 600 periods:
# thinned while it runs (-v says how many), the last 360 periods whole, the
# values of what is kept those of the session (the leak's blocks exact,
# -i 1), --leaks naming the leak.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
CHECKER=$HA_BUILDDIR/tests/db_thin_check
HD=$HA_BUILDDIR/src/heapdiff
[ -x "$CHECKER" ] || fail "db_thin_check not built: $CHECKER (make check builds it)"
db=$W/thin.db
"$CHECKER" "$db" >"$W/fill.out" 2>&1 || fail "db_thin_check: $(tail -n 3 "$W/fill.out")"
line=$(tail -n 1 "$W/fill.out")
log "$line"
[[ $line =~ ^thinned\ ([0-9]+)\ of\ 9004\ snapshots:\ ([0-9]+)\ kept,\ ([0-9]+)\ with\ paths,\ values\ equal$ ]] ||
	fail "db_thin_check: $line"
kept=${BASH_REMATCH[2]}
paths=${BASH_REMATCH[3]}
[ "$kept" -lt 1200 ] || fail "$kept snapshots kept of 9004"

"$HD" --leaks "$db" >"$W/leaks.txt" 2>"$W/leaks.err" || fail "heapdiff --leaks: $(cat "$W/leaks.err")"
# The first suspect's first frame.
first=$(grep -A1 -m1 -E ' stack [0-9]+$' "$W/leaks.txt" | tail -n 1 | sed 's/^ *//')
[[ $first == "leak_steady  /src/app/app.c:21  [app]" ]] ||
	fail "--leaks does not rank leak_steady first on the thinned session: $(head -n 12 "$W/leaks.txt")"
# (--leaks leaves the peak snapshot out of the series: one less.)
grep -q "^leak suspects of session 1 .*: $((paths - 1)) snapshots over 1500.5 min" "$W/leaks.txt" ||
	fail "--leaks does not read the $((paths - 1)) snapshots with paths: $(head -n 1 "$W/leaks.txt")"
log "--leaks: first suspect $first"
"$HD" --peak --bytes "$db" >"$W/peak.txt" 2>&1 || fail "heapdiff --peak: $(cat "$W/peak.txt")"
grep -q "kept by heapattach at the moment it was reached" "$W/peak.txt" || fail "--peak does not find the peak snapshot"
"$HD" --bytes "$db" >"$W/diff.txt" 2>&1 || fail "heapdiff: $(cat "$W/diff.txt")"
# leak_steady: 1000 bytes a snapshot, 9003 snapshots after the baseline.
grep -E -m1 -B1 '^ *leak_steady  /src/app/app.c:21' "$W/diff.txt" | grep -q '+9003000 ' ||
	fail "the growth since the attach is not leak_steady's 9003000 bytes: $(head -n 20 "$W/diff.txt")"
# A snapshot with totals only (of the last hour) has no call paths to show.
t_only=$(sqlite3 "$db" "SELECT max(id) FROM snapshots WHERE paths = 0")
[ -n "$t_only" ] || fail "no snapshot with totals only in the last hour"
if "$HD" "$db" 1 "$t_only" >"$W/tonly.txt" 2>&1; then fail "heapdiff 1 $t_only (totals only) did not fail"; fi
grep -q "snapshot $t_only holds the session's totals only, no call paths .*: the nearest with call paths are [0-9]* and [0-9]*" \
	"$W/tonly.txt" || fail "heapdiff on a snapshot with totals only: $(cat "$W/tonly.txt")"
"$HD" -f html -o "$W/thin.html" "$db" 2>"$W/html.err" || fail "heapdiff -f html: $(cat "$W/html.err")"
# The chart's rows: [id, time, "reason", ..., paths].
snaps=$(grep -cE '^  \[[0-9]+, [0-9.]+, "' "$W/thin.html")
with=$(grep -cE '^  \[[0-9]+, [0-9.]+, ".*, 1\]\]?,?$' "$W/thin.html")
marked="$snaps snapshots, $with with paths"
[ "$snaps" -eq "$kept" ] && [ "$with" -eq "$paths" ] || fail "the page's snapshots: $marked (of $kept, $paths with paths)"
log "operand with totals only refused; the page: $marked"

# ---- a real session, thinned while it runs
require_all
start_cmd leak "$HA_BUILDDIR/tests/targets/leak_cmd"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
live=$W/live.db
start_ha -v -q -i 1 --block -s 0.05 -o "$live" "$pid"
wait_ready "$pid" leak_cmd
leak_paced 30
rounds=$ROUNDS
detach_by_signal INT "$pid"
check_alive "$pid"
thinned=$(sed -n 's/^heapattach: \([0-9]*\) old periodic snapshots thinned out.*/\1/p' "$HA_ERR")
n=$(sqlite3 "$live" "SELECT count(*) FROM snapshots")
recent=$(sqlite3 "$live" "SELECT count(*) FROM snapshots WHERE reason = 'periodic' AND time >= (SELECT max(time) FROM snapshots) - 360 * 0.05 + 0.5")
log "live: $rounds leak commands; $n snapshots in the file, $thinned thinned out; $recent periodic ones in the last 360 periods"
[ -n "$thinned" ] && [ "$thinned" -ge 50 ] || fail "live: the session did not thin its snapshots: $(grep -i thin "$HA_ERR")"
[ "$recent" -ge 300 ] || fail "live: only $recent periodic snapshots kept in the last 360 periods"
leak_paced_kept "$live" live
"$HD" --leaks "$live" >"$W/live_leaks.txt" 2>&1 || fail "heapdiff --leaks: $(cat "$W/live_leaks.txt")"
grep -A1 -m1 -E ' stack [0-9]+$' "$W/live_leaks.txt" | tail -n 1 | grep -q leak_here ||
	fail "live: --leaks does not rank leak_here first: $(head -n 12 "$W/live_leaks.txt")"
send "$TFD" quit
echo "ok: 9004 snapshots thinned to $kept ($paths with call paths), every value kept; --leaks, --peak and the diff on the thinned file; a live session at 0.05 s thinned $thinned of its snapshots, the leak exact"

