#!/bin/bash
# t_db_write_ratio: what the database writer writes to disk (issue 39: at
# most 4x the file's final size).  bench/db_day drives the writer's calls
# as the attacher makes them (the call paths at one periodic snapshot in 12
# and the totals at every one, db_write.h's ha_db_paths_due; ha_db_thin
# every 30, as src/record/writer.c) for three simulated hours of 1,024 call
# paths all changing at every 10 s snapshot, from a fixed seed, and counts
# its own /proc/self/io write_bytes (the WAL, the checkpoints, thinning,
# the close).  Asserted: written <= 4x the final file (before schema
# version 14, when every snapshot stored its call paths, this load wrote
# 4.2x its file of the moment at two hours, 9.1x at six, 38x over a day;
# bench/README.md); every snapshot with call paths is kept (a day keeps
# them all) and none with totals only older than an hour (and the 30
# periods between two thinnings); every snapshot
# has its totals, and at a snapshot with paths they are the sum of its
# call paths (bucket_at).  A file system that counts no writes (tmpfs)
# skips.
. "$(dirname "$0")/lib.sh"
DAY=$HA_BUILDDIR/bench/db_day
[ -x "$DAY" ] || fail "db_day not built: $DAY (make check builds it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
db=$W/day.db
"$DAY" 1024 1080 "$db" >"$W/day.out" 2>&1 || fail "db_day: $(tail -n 3 "$W/day.out")"
line=$(tail -n 1 "$W/day.out")
log "$line"
[[ $line =~ ^end:\ 1081\ snapshots\ written,\ ([0-9]+)\ kept,\ file\ ([0-9]+)\ bytes,\ written\ ([0-9]+)\ bytes ]] ||
	fail "db_day: $line"
kept=${BASH_REMATCH[1]} size=${BASH_REMATCH[2]} written=${BASH_REMATCH[3]}
[ "$written" -gt 0 ] || skip "the file system of $W counts no bytes written (tmpfs?)"
[ "$written" -le $((4 * size)) ] ||
	fail "db_day wrote $written bytes for a file of $size: more than 4x"
q() { sqlite3 -batch "$db" "$1" || fail "sqlite3: $1"; }
[ "$(q 'SELECT count(*) FROM snapshots')" = "$kept" ] || fail "the file holds $(q 'SELECT count(*) FROM snapshots') snapshots, db_day says $kept"
# With paths: the baseline, the first 11 periodic ones (the first 12
# periods), one in 12 after (the 23rd ... the 1,079th: 89), the end.
paths=$(q 'SELECT count(*) FROM snapshots WHERE paths = 1')
[ "$paths" = 102 ] || fail "$paths snapshots with call paths kept, not 102"
# (Thinning runs every 30 periodic snapshots: up to 30 more may wait.)
old=$(q 'SELECT count(*) FROM snapshots WHERE paths = 0 AND time < (SELECT max(time) FROM snapshots) - 3900 - 0.5')
[ "$old" = 0 ] || fail "$old snapshots with totals only older than an hour and 30 periods kept"
[ "$(q 'SELECT count(*) FROM snapshots WHERE live_heap_bytes IS NULL OR live_count IS NULL')" = 0 ] ||
	fail "snapshots without their totals"
off=$(q "SELECT count(*) FROM snapshot_totals t WHERE paths = 1 AND abs(live_bytes -
	(SELECT total(v.live_bytes) FROM bucket_at v WHERE v.snapshot_id = t.snapshot_id)) > 2048")
[ "$off" = 0 ] || fail "$off snapshots with paths whose totals are not the sum of their call paths"
echo "ok: three hours of 1,024 churning call paths: $written bytes written for a file of $size ($(awk -v w="$written" -v s="$size" 'BEGIN { printf "%.2f", w / s }')x); $kept snapshots kept, $paths with call paths"
