#!/bin/bash
# t_profile_adaptive: a ring far too small for the sampling rate (512 KiB: some 24 records of 21 KiB with their stack copies,
# --interval 256, a target churning malloc/free) overflows; heapattach
# raises the interval (told on stderr with -v, recorded in the snapshots'
# sample_interval) instead of dropping samples for the rest of the session.
# A leak made while the interval is raised is still estimated right (each
# sample is weighted with the interval it was taken at: with the configured
# 256 bytes instead, 512-byte blocks would be counted ~25 times too small).
# Once the target is quiet the interval comes back to 256.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all leak_cmd

db=$W/adaptive.db
start_profiled adaptive leak_cmd -v -q -s 3600 -i 256 --ring-size 512K -o "$db"
send "$TFD" "churn 3000000"
wait_line "$TOUT" '^done churn 3000000' 120
grep -q '^heapattach: ring overflowing: sampling interval raised to [0-9]* bytes' "$HA_ERR" ||
	fail "no 'sampling interval raised' line after a churn through a 512 KiB ring"
snapshot_now "$db"
base=$(sqlite3 "$db" 'SELECT max(sample_interval) FROM snapshots')
[ "$base" -gt 256 ] || fail "snapshot sample_interval is $base, expected above 256"
log "interval raised to $(grep -o 'raised to [0-9]*' "$HA_ERR" | tail -n 1 | grep -o '[0-9]*$') bytes; snapshot records $base"

# The leak, right after the churn (the interval comes down only after calm).
# A record carries its stack copy (~21 KiB), so the 512 KiB ring holds some
# 24: even raised, the interval does not stop every drop in a burst between
# two drains (they are counted in the snapshot; they fall mostly on the
# churn's records); a 64 KiB ring (3 records) lost half the leak's.
N=100000 SIZE=512
send "$TFD" "churn 300000"
send "$TFD" "leak $N $SIZE"
wait_line "$TOUT" "^done leak $N $SIZE" 60
snapshot_now "$db"
read -r drops got < <(sqlite3 -separator ' ' "$db" "SELECT drops, sample_interval FROM snapshots ORDER BY id DESC LIMIT 1")
log "snapshot of the leak's period: sample_interval $got, $drops drops in all"
read -r bytes _ < <(live_under "$db" leak_here heap)
truth=$((N * SIZE))
within 25 "$bytes" "$truth" || fail "leak_here estimated $bytes bytes, truth $truth"
log "leak_here: $bytes bytes estimated for $truth"
# Quiet: the interval steps back down to the configured one.
wait_for 60 'grep -q "^heapattach: sampling interval back to 256 bytes" "$HA_ERR"' ||
	fail "the interval did not come back to 256 within 60 s of quiet"
snapshot_now "$db"
snapshot_now "$db"
last=$(sqlite3 "$db" 'SELECT sample_interval FROM snapshots ORDER BY id DESC LIMIT 1')
[ "$last" = 256 ] || fail "the last snapshot's sample_interval is $last, expected 256"
log "back to 256 bytes once quiet"
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 || fail "leak_cmd did not exit after quit"
[ "$RC" = 0 ] || fail "leak_cmd exited $RC"
echo ok
