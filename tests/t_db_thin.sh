#!/bin/bash
# t_db_thin: the thinning of a long session's old snapshots (issue 39,
# src/db/db_thin.c).  tests/db_thin_check (under ASan and UBSan) writes
# eight hours of 10-second snapshots (2,884), thins them with ha_db_thin
# and checks, itself: every
# value at a snapshot kept is what it was; the baseline, the SIGUSR1 one,
# the peak and the end survive; every one of the last hour is kept, one a
# minute up to six hours, one every ten minutes older; a second thinning
# removes nothing.  Then heapdiff on the thinned file: --leaks still ranks
# the steady leak first, --peak finds the peak snapshot, and the growth
# since the attach is the leak's whole eight hours.  Then a real session
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
[[ $line =~ ^thinned\ ([0-9]+)\ of\ 2884\ snapshots:\ ([0-9]+)\ kept,\ values\ equal$ ]] ||
	fail "db_thin_check: $line"
kept=${BASH_REMATCH[2]}
[ "$kept" -lt 800 ] || fail "$kept snapshots kept of 2884"

"$HD" --leaks "$db" >"$W/leaks.txt" 2>"$W/leaks.err" || fail "heapdiff --leaks: $(cat "$W/leaks.err")"
# The first suspect's first frame.
first=$(grep -A1 -m1 -E ' stack [0-9]+$' "$W/leaks.txt" | tail -n 1 | sed 's/^ *//')
[[ $first == "leak_steady  /src/app/app.c:21  [app]" ]] ||
	fail "--leaks does not rank leak_steady first on the thinned session: $(head -n 12 "$W/leaks.txt")"
# (--leaks leaves the peak snapshot out of the series: one less.)
grep -q "^leak suspects of session 1 .*: $((kept - 1)) snapshots over 480.5 min" "$W/leaks.txt" ||
	fail "--leaks does not read the $((kept - 1)) snapshots: $(head -n 1 "$W/leaks.txt")"
log "--leaks: first suspect $first"
"$HD" --peak --bytes "$db" >"$W/peak.txt" 2>&1 || fail "heapdiff --peak: $(cat "$W/peak.txt")"
grep -q "kept by heapattach at the moment it was reached" "$W/peak.txt" || fail "--peak does not find the peak snapshot"
"$HD" --bytes "$db" >"$W/diff.txt" 2>&1 || fail "heapdiff: $(cat "$W/diff.txt")"
# leak_steady: 1000 bytes a snapshot, 2883 snapshots after the baseline.
grep -E -m1 -B1 '^ *leak_steady  /src/app/app.c:21' "$W/diff.txt" | grep -q '+2883000 ' ||
	fail "the growth since the attach is not leak_steady's 2883000 bytes: $(head -n 20 "$W/diff.txt")"

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
echo "ok: 2884 snapshots thinned to $kept, every value kept; --leaks, --peak and the diff on the thinned file; a live session at 0.05 s thinned $thinned of its snapshots, the leak exact"

