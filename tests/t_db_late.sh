#!/bin/bash
# t_db_late: the ring is drained from the moment the agent is ready, not
# from the moment the new database is open.  The creation of the database
# is held back (HEAPATTACH_TEST_DB_GATE: it waits for a line from a FIFO, a
# slow disk made exact) while a --block target with a 64 KiB ring records
# far more than the ring holds: it can finish only if the collector drains
# meanwhile.  Once the database is let through, every sample is in it,
# with the attach's baseline snapshot first.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all leak_cmd

N=20000 SIZE=64
gate=$W/gate
mkfifo "$gate" || fail "mkfifo $gate"
db=$W/late.db
export HEAPATTACH_TEST_DB_GATE=$gate
start_profiled late leak_cmd -v -q -s 3600 -i 1 --block --ring-size 64K -o "$db"
# The samples of N blocks are ~100x the ring: with nobody draining, a
# --block target waits for room for ever.
send "$TFD" "leak $N $SIZE"
wait_line "$TOUT" "^done leak $N $SIZE" 60
! grep -q 'database .* opened in' "$HA_ERR" ||
	fail "the database was opened before the gate let it: $(grep 'opened in' "$HA_ERR")"
log "leak_cmd allocated $N blocks of $SIZE bytes while the database was held back"
# Let the creation go on (the gate reads one line).
echo go >"$gate"
wait_line "$HA_ERR" 'database .* opened in' 20
snapshot_now "$db"
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 || fail "leak_cmd did not exit after quit"
[ "$RC" = 0 ] || fail "leak_cmd exited $RC"
first=$(sqlite3 "$db" 'SELECT reason FROM snapshots ORDER BY id LIMIT 1')
[ "$first" = attach ] || fail "the first snapshot is '$first', not the attach's baseline"
# leak_here's blocks, and the array that keeps them (leak_cmd grows it
# from 1,024 entries by doubling: 32,768 pointers for 20,000).
read -r bytes count < <(live_under "$db" leak_here heap)
[ "$count" = $((N + 1)) ] && [ "$bytes" = $((N * SIZE + 32768 * 8)) ] ||
	fail "leak_here holds $count blocks, $bytes bytes; expected $((N + 1)), $((N * SIZE + 32768 * 8))"
grep -q ' 0 drops' "$HA_ERR" || fail "drops: $(grep 'drops' "$HA_ERR")"
log "all $N blocks booked under leak_here; first snapshot: $first"
echo ok
