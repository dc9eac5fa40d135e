#!/bin/bash
# t_db_views: the documented SQL views, queried with the plain sqlite3 shell,
# give the known values of the synthetic profile and the same numbers as
# heapdiff (growth, live heap at a snapshot, across sessions, and on a larger
# generated profile, row for row); stack_text, top_sites, module_totals,
# snapshot_totals and session_bounds give the expected answers.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed (apt-get install sqlite3)"

same() {
	[ "$2" = "$3" ] && return 0
	printf 'got:\n%s\nwanted:\n%s\n' "$2" "$3"
	fail "$1"
}
q() { sqlite3 -batch -separator ' ' "$1" "$2" || fail "sqlite3 failed on: $2"; }
# rows of heapdiff --bytes: "STACK BYTES OBJECTS KIND"
hd_rows() {
	"$HD" --bytes --top 0 "$@" >"$W/hd.out" 2>"$W/hd.err" || fail "heapdiff $*: $(cat "$W/hd.err")"
	awk '$3 == "stack" && $4 ~ /^[0-9]+$/ { printf "%s %s %s %s\n", $4, $1, $2, ($5 == "(mmap)" ? "mmap" : "heap") }' "$W/hd.out"
}
# The same from the growth view, in heapdiff's order.
growth_rows() {
	q "$1" "SELECT stack_id, printf('%+.0f', live_bytes_delta), printf('%+.0f', live_count_delta), kind
	          FROM growth WHERE from_snapshot = $2 AND to_snapshot = $3
	           AND (abs(live_bytes_delta) >= 0.5 OR abs(live_count_delta) >= 0.5)
	         ORDER BY live_bytes_delta DESC, live_count_delta DESC, stack_id, kind" |
		sed 's/ +0 / 0 /g'
}
live_rows() {
	q "$1" "SELECT stack_id, printf('%.0f', live_bytes), printf('%.0f', live_count), kind
	          FROM bucket_at WHERE snapshot_id = $2
	           AND (abs(live_bytes) >= 0.5 OR abs(live_count) >= 0.5)
	         ORDER BY live_bytes DESC, live_count DESC, stack_id, kind"
}

db=$W/profile.db
"$FILL" --sessions 2 "$db" >"$W/fill.out" 2>&1 || fail "db_fill failed: $(cat "$W/fill.out")"

# ---- known values
same "growth 1..3 (view)" "$(growth_rows "$db" 1 3)" "1 +3000000 +300 heap
4 +20000 +2000 heap
3 -500000 -500 heap"
same "bucket_at 3 (view)" "$(live_rows "$db" 3)" "1 4000000 400 heap
2 500000 10 mmap
3 300000 300 heap
4 20000 2000 heap"
same "bucket_at: written_at" "$(q "$db" "SELECT stack_id, written_at FROM bucket_at WHERE snapshot_id = 3 ORDER BY stack_id")" \
	"1 3
2 1
3 2
4 3"
same "stack_text" "$(q "$db" "SELECT text FROM stack_text WHERE stack_id = 1")" \
	"leak_grow (/src/leaky/leaky.c:42) <- handle_request (/src/leaky/leaky.c:80) <- main (/src/leaky/leaky.c:120)"
same "stack_text, unknown frame" "$(q "$db" "SELECT leaf_function, depth, text FROM stack_text WHERE stack_id = 4")" \
	"mk_small 3 mk_small (/src/leaky/small.c:7) <- 0x7f00 in [unknown] <- main (/src/leaky/leaky.c:130)"
same "growth_text" "$(q "$db" "SELECT printf('%.0f', live_bytes_delta), stack FROM growth_text
	WHERE from_snapshot = 1 AND to_snapshot = 3 ORDER BY live_bytes_delta DESC LIMIT 1")" \
	"3000000 leak_grow (/src/leaky/leaky.c:42) <- handle_request (/src/leaky/leaky.c:80) <- main (/src/leaky/leaky.c:120)"
same "live_text" "$(q "$db" "SELECT printf('%.0f', live_bytes), stack FROM live_text
	WHERE snapshot_id = 3 AND kind = 'mmap'")" "500000 pool_init (/src/leaky/leaky.c:10) <- main (/src/leaky/leaky.c:118)"
same "top_sites 3" "$(q "$db" "SELECT site, kind, printf('%.0f', live_bytes), printf('%.0f', alloc_bytes), stacks
	FROM top_sites WHERE snapshot_id = 3 ORDER BY live_bytes DESC")" \
	"leak_grow (/src/leaky/leaky.c:42) heap 4000000 4500000 1
pool_init (/src/leaky/leaky.c:10) mmap 500000 500000 1
cache_fill (/src/leaky/cache.c:33) heap 300000 800000 1
mk_small (/src/leaky/small.c:7) heap 20000 25000 1"
same "module_totals 3" "$(q "$db" "SELECT module, kind, printf('%.0f', self_live_bytes), printf('%.0f', total_live_bytes)
	FROM module_totals WHERE snapshot_id = 3 ORDER BY module, kind")" \
	" heap 0 20000
/opt/leaky/bin/leaky heap 4000000 4320000
/opt/leaky/bin/leaky mmap 500000 500000
/opt/leaky/lib/libsmall.so.1 heap 320000 320000"
same "snapshot_totals" "$(q "$db" "SELECT snapshot_id, printf('%.0f', live_bytes), rss_bytes, samples, drops, reason
	FROM snapshot_totals ORDER BY snapshot_id")" \
	"1 2300000 10000000 1000 0 periodic
2 2810000 11500000 2100 0 signal
3 4820000 13200000 3500 5 detach
4 4096 20000000 10 0 periodic
5 13288 20100000 25 0 exit"
same "session_bounds" "$(q "$db" "SELECT session_id, pid, first_snapshot, last_snapshot, snapshots FROM session_bounds")" \
	"1 4242 1 3 3
2 4343 4 5 2"
same "sessions" "$(q "$db" "SELECT id, pid, comm, sample_interval, end_time IS NOT NULL FROM sessions")" \
	"1 4242 leaky 524288 1
2 4343 leaky 524288 1"
echo "ok: views give the known values"

# ---- the same numbers as heapdiff, for every pair of snapshots (both
# directions, within and across sessions) and every single snapshot
for a in 1 2 3 4 5; do
	same "bucket_at $a vs heapdiff DB $a" "$(live_rows "$db" "$a")" "$(hd_rows "$db" "$a")"
	for b in 1 2 3 4 5; do
		same "growth $a..$b vs heapdiff DB $a $b" "$(growth_rows "$db" "$a" "$b")" \
			"$(hd_rows "$db" "$a" "$b" 2>/dev/null)"
	done
done
# The totals too.
tot=$(q "$db" "SELECT printf('%+.0f', total(live_bytes_delta)) FROM growth WHERE from_snapshot = 1 AND to_snapshot = 3")
hd_rows "$db" 1 3 >/dev/null
grep -q "^total: live heap $tot (" "$W/hd.out" || fail "growth total $tot is not heapdiff's: $(grep '^total' "$W/hd.out")"
echo "ok: views and heapdiff agree on the synthetic profile"

# ---- a larger generated profile: 60 snapshots, 300 callstacks, rows of
# different ages; views and heapdiff agree row for row
big=$W/big.db
"$FILL" --loop 60 --stacks 300 "$big" >"$W/big.out" 2>&1 || fail "db_fill --loop failed: $(tail -n 3 "$W/big.out")"
for pair in "1 60" "17 42" "42 17" "59 60"; do
	set -- $pair
	g=$(growth_rows "$big" "$1" "$2")
	h=$(hd_rows "$big" "$1" "$2")
	[ -n "$g" ] || fail "growth $1..$2 on the generated profile is empty"
	same "generated profile: growth $1..$2 vs heapdiff" "$g" "$h"
done
for s in 1 30 60; do
	same "generated profile: bucket_at $s vs heapdiff" "$(live_rows "$big" "$s")" "$(hd_rows "$big" "$s")"
done
log "generated profile: $(growth_rows "$big" 1 60 | wc -l) rows compared for 1..60"
echo "ok: views and heapdiff agree on a generated profile"

# ---- two writers at once into one file, their snapshots interleaved (each
# writer waits for a line on stdin before a snapshot): two sessions whose
# snapshot ids alternate; per-session answers must not mix them up
inter=$W/inter.db
start_cmd w1 "$FILL" --loop 0 --step --stacks 120 "$inter"
fd1=$TFD out1=$TOUT p1=$TPID
wait_line "$out1" '^session [0-9]+ stacks 120$'
start_cmd w2 "$FILL" --loop 0 --step --stacks 120 "$inter"
fd2=$TFD out2=$TOUT p2=$TPID
wait_line "$out2" '^session [0-9]+ stacks 120$'
for ((k = 1; k <= 15; k++)); do
	send "$fd1" go
	wait_for 20 '[ "$(grep -c "^committed snapshot" "$out1")" = "$k" ]' || fail "writer 1: no snapshot $k"
	send "$fd2" go
	wait_for 20 '[ "$(grep -c "^committed snapshot" "$out2")" = "$k" ]' || fail "writer 2: no snapshot $k"
done
close_fd "$fd1"
close_fd "$fd2"
wait_exit "$p1" 20
[ "$RC" = 0 ] || fail "writer 1 exited $RC: $(cat "$W/w1.err")"
wait_exit "$p2" 20
[ "$RC" = 0 ] || fail "writer 2 exited $RC: $(cat "$W/w2.err")"
same "two writers: integrity" "$(q "$inter" 'PRAGMA integrity_check')" ok
same "two writers: sessions and snapshots" "$(q "$inter" 'SELECT count(*), sum(snapshots) FROM session_bounds')" "2 30"
for sess in 1 2; do
	read -r first last <<<"$(q "$inter" "SELECT first_snapshot, last_snapshot FROM session_bounds WHERE session_id = $sess")"
	same "session $sess: growth view vs heapdiff --session $sess first last" \
		"$(growth_rows "$inter" "$first" "$last")" "$(hd_rows --session "$sess" "$inter" first last)"
	same "session $sess: live at last" "$(live_rows "$inter" "$last")" "$(hd_rows --session "$sess" "$inter" last)"
done
# Both writers wrote the same values for the same callstacks at their k-th
# snapshot: the heap buckets at the two last snapshots must be equal.
l1=$(hd_rows --session 1 "$inter" last | grep ' heap$')
l2=$(hd_rows --session 2 "$inter" last | grep ' heap$')
[ -n "$l1" ] || fail "no heap rows at the last snapshot of session 1"
same "the two sessions' heaps at their last snapshots" "$l1" "$l2"
same "interleaved snapshot ids" "$(q "$inter" "SELECT group_concat(session_id, '') FROM (SELECT session_id FROM snapshots ORDER BY id)")" \
	"121212121212121212121212121212"
same "both sessions ended" "$(q "$inter" 'SELECT count(*) FROM sessions WHERE end_time IS NOT NULL')" 2
echo "ok: two concurrent writers, interleaved sessions"
echo "ok"
