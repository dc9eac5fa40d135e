#!/bin/bash
# t_db_upgrade: schema-version-1 to -10 databases (without the views added
# in version 2, without the column snapshots.sample_interval added in version
# 3, with the leak views of before version 4, which counted every snapshot,
# without the kinds rss and swap and their columns of version 5, without
# the column sessions.hostname of version 6, without the columns
# snapshots.frames and fp_frames of version 7, without the column
# sessions.python of version 8, without the column snapshots.rss_read_time
# of version 9 and its snapshot_totals, without the memory breakdown of
# version 10: snapshots.memory_rss_anon_bytes and memory_allocator, the
# tables memory_terms and memory_arenas, without the reachability tables
# of version 11)
# are read by heapdiff as they are (byte-identical afterwards, and --leaks
# works on them: it does not need the views), and upgraded in place by the
# writer: version 11, the new views, kinds and columns, the data untouched, the schema
# then identical to that of a new file.
# Version 11 (made from the schema before the version 12 additions and
# the new file's rows) had the buckets keyed by stack and no snapshots.base_id;
# version 12 no table memory_pinning nor the snapshots' CPU columns (version 13);
# version 13 no snapshots.paths nor the totals' columns (version 14), its
# views over every snapshot;
# upgraded, every file reads the same in heapdiff (diff, --leaks) as the new one.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }

new=$W/new.db v1=$W/v1.db v2=$W/v2.db v3=$W/v3.db v4=$W/v4.db v5=$W/v5.db v6=$W/v6.db v7=$W/v7.db v8=$W/v8.db v9=$W/v9.db v10=$W/v10.db
"$FILL" --series "$new" >/dev/null || fail "db_fill failed"
# What a version-11 writer left: the schema before the version 12
# additions (buckets keyed by stack, no snapshots.base_id, the views that
# read that), with the new file's rows, every column but base_id.
v11=$W/v11.db
sed '/^-- Schema version 12 additions\./,$d' "$HA_SRCDIR/schema/schema.sql" | sqlite3 -batch "$v11" ||
	fail "sqlite3 cannot load the version-11 schema"
q "$v11" "UPDATE meta SET value = '11' WHERE key = 'schema_version'" >/dev/null
for t in $(q "$v11" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('meta', 'kinds')"); do
	cols=$(q "$v11" "SELECT group_concat(name, ', ') FROM pragma_table_info('$t')")
	q "$v11" "ATTACH '$new' AS n; INSERT INTO main.$t ($cols) SELECT $cols FROM n.$t;" >/dev/null
done
[ "$(q "$v11" 'SELECT count(*), total(live_bytes) FROM buckets')" = "$(q "$new" 'SELECT count(*), total(live_bytes) FROM buckets')" ] ||
	fail "the version-11 file lacks rows"
# What a version-13 writer left: the schema before the version 14
# additions (no snapshots.paths nor the totals' columns, the views over
# every snapshot), with the new file's rows.
v13=$W/v13.db
sed '/^-- Schema version 14 additions\./,$d' "$HA_SRCDIR/schema/schema.sql" | sqlite3 -batch "$v13" ||
	fail "sqlite3 cannot load the version-13 schema"
q "$v13" "UPDATE meta SET value = '13' WHERE key = 'schema_version'" >/dev/null
for t in $(q "$v13" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('meta', 'kinds')"); do
	cols=$(q "$v13" "SELECT group_concat(name, ', ') FROM pragma_table_info('$t')")
	q "$v13" "ATTACH '$new' AS n; INSERT INTO main.$t ($cols) SELECT $cols FROM n.$t;" >/dev/null
done
[ "$(q "$v13" 'SELECT count(*), total(live_bytes) FROM buckets')" = "$(q "$new" 'SELECT count(*), total(live_bytes) FROM buckets')" ] ||
	fail "the version-13 file lacks rows"
# What a version-12 writer left: that without memory_pinning and the
# snapshots' CPU columns.
v12=$W/v12.db
cp "$v13" "$v12"
q "$v12" "DROP TABLE memory_pinning; ALTER TABLE snapshots DROP COLUMN memory_cpus_online;
	ALTER TABLE snapshots DROP COLUMN memory_cpus_allowed; ALTER TABLE snapshots DROP COLUMN memory_cpu_quota;
	UPDATE meta SET value = '12' WHERE key = 'schema_version'" >/dev/null
# What a version-8 writer left: no snapshots.rss_read_time, the
# snapshot_totals of version 5 (without it: its text as schema.sql's, the
# column cut); a version-7 writer: no sessions.python either; a version-6
# writer: no frame counters either; a version-5 writer: no
# sessions.hostname either.  Versions 1-4 are made from that.
totals5=$(q "$v13" "SELECT sql FROM sqlite_master WHERE name = 'snapshot_totals'" | sed 's/, s\.rss_read_time//')
grep -q rss_read_time <<<"$totals5" && fail "cannot make the version-5 snapshot_totals: $totals5"
# A version-10 writer: no reachability tables.
cp "$v11" "$v10"
q "$v10" "DROP TABLE reach_holders; DROP TABLE reach_rows; DROP TABLE reach_scans;
         UPDATE meta SET value = '10' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
# A version-9 writer: no memory breakdown.
cp "$v10" "$v9"
q "$v9" "DROP TABLE memory_terms; DROP TABLE memory_arenas;
         ALTER TABLE snapshots DROP COLUMN memory_rss_anon_bytes; ALTER TABLE snapshots DROP COLUMN memory_allocator;
         UPDATE meta SET value = '9' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
cp "$v9" "$v8"
q "$v8" "DROP VIEW snapshot_totals; ALTER TABLE snapshots DROP COLUMN rss_read_time; $totals5;
         UPDATE meta SET value = '8' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
cp "$v8" "$v7"
q "$v7" "ALTER TABLE sessions DROP COLUMN python;
         UPDATE meta SET value = '7' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
cp "$v7" "$v6"
q "$v6" "ALTER TABLE snapshots DROP COLUMN frames; ALTER TABLE snapshots DROP COLUMN fp_frames;
         UPDATE meta SET value = '6' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
cp "$v6" "$v5"
q "$v5" "ALTER TABLE sessions DROP COLUMN hostname;
         UPDATE meta SET value = '5' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
# What a version-4 writer left: no kinds rss and swap, none of their
# columns, the snapshot_totals that summed every kind.  Versions 1-3 are
# made from it.
cp "$v5" "$v4"
q "$v4" "DELETE FROM kinds WHERE id >= 2; DROP VIEW snapshot_totals;
         ALTER TABLE sessions DROP COLUMN rss_period;
         ALTER TABLE snapshots DROP COLUMN rss_anon_bytes; ALTER TABLE snapshots DROP COLUMN swap_bytes;
         ALTER TABLE snapshots DROP COLUMN rss_samples; ALTER TABLE snapshots DROP COLUMN rss_lost;
         CREATE VIEW snapshot_totals AS SELECT s.id AS snapshot_id, s.rss_bytes FROM snapshots s;
         UPDATE meta SET value = '4' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
cp "$v4" "$v1"
cp "$v4" "$v2"
cp "$v4" "$v3"
# What a version-3 writer left: the leak views over every snapshot.
q "$v3" "DROP VIEW leak_suspects; DROP VIEW leak_trend;
         CREATE VIEW leak_trend AS SELECT 1 AS session_id, 1 AS stack_id, 'heap' AS kind, 1 AS snapshots;
         CREATE VIEW leak_suspects AS SELECT * FROM leak_trend WHERE 0;
         UPDATE meta SET value = '3' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
# What a version-2 writer left: no sample_interval column, schema_version 2;
# a version-1 writer: no leak views either.
q "$v2" "ALTER TABLE snapshots DROP COLUMN sample_interval; UPDATE meta SET value = '2' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
q "$v1" "ALTER TABLE snapshots DROP COLUMN sample_interval; DROP VIEW leak_suspects; DROP VIEW leak_trend; UPDATE meta SET value = '1' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
rm -f "$v10-wal" "$v10-shm" "$v1-wal" "$v1-shm" "$v2-wal" "$v2-shm" "$v3-wal" "$v3-shm" "$v4-wal" "$v4-shm" "$v5-wal" "$v5-shm" "$v6-wal" "$v6-shm" "$v7-wal" "$v7-shm" "$v8-wal" "$v8-shm"
rm -f "$v11-wal" "$v11-shm" "$v12-wal" "$v12-shm" "$v13-wal" "$v13-shm"
cp "$v1" "$W/before.db"
"$HD" --bytes "$new" first last >"$W/dnew" 2>&1 || fail "heapdiff on a version-14 file"
"$HD" --bytes "$v11" first last >"$W/d11" 2>&1 || fail "heapdiff on a version-11 file: $(cat "$W/d11")"
cmp -s "$W/d11" "$W/dnew" || fail "heapdiff reads version 11 and 14 differently"
"$HD" --bytes "$v12" first last >"$W/d12" 2>&1 || fail "heapdiff on a version-12 file: $(cat "$W/d12")"
cmp -s "$W/d12" "$W/dnew" || fail "heapdiff reads version 12 and 14 differently"
"$HD" --bytes "$v13" first last >"$W/d13" 2>&1 || fail "heapdiff on a version-13 file: $(cat "$W/d13")"
cmp -s "$W/d13" "$W/dnew" || fail "heapdiff reads version 13 and 14 differently"

"$HD" --bytes "$v1" first last >"$W/d1" 2>&1 || fail "heapdiff on a version-1 file: $(cat "$W/d1")"
"$HD" --bytes "$new" first last >"$W/d9" 2>&1 || fail "heapdiff on a version-11 file"
"$HD" --bytes "$v10" first last >"$W/d10" 2>&1 || fail "heapdiff on a version-10 file: $(cat "$W/d10")"
cmp -s "$W/d9" "$W/d10" || fail "heapdiff reads version 10 and 11 differently"
"$HD" --bytes "$v8" first last >"$W/d8" 2>&1 || fail "heapdiff on a version-8 file: $(cat "$W/d8")"
"$HD" --bytes "$v7" first last >"$W/d7" 2>&1 || fail "heapdiff on a version-7 file: $(cat "$W/d7")"
"$HD" --bytes "$v6" first last >"$W/d6" 2>&1 || fail "heapdiff on a version-6 file: $(cat "$W/d6")"
"$HD" --bytes "$v5" first last >"$W/d5" 2>&1 || fail "heapdiff on a version-5 file: $(cat "$W/d5")"
"$HD" --bytes "$v4" first last >"$W/d4" 2>&1 || fail "heapdiff on a version-4 file: $(cat "$W/d4")"
"$HD" --bytes "$v3" first last >"$W/d3" 2>&1 || fail "heapdiff on a version-3 file: $(cat "$W/d3")"
"$HD" --bytes "$v2" first last >"$W/d2" 2>&1 || fail "heapdiff on a version-2 file: $(cat "$W/d2")"
cmp -s "$W/d8" "$W/d9" || fail "heapdiff reads version 8 and 9 differently"
cmp -s "$W/d7" "$W/d8" || fail "heapdiff reads version 7 and 8 differently"
cmp -s "$W/d6" "$W/d7" || fail "heapdiff reads version 6 and 7 differently"
cmp -s "$W/d5" "$W/d6" || fail "heapdiff reads version 5 and 6 differently"
cmp -s "$W/d4" "$W/d5" || fail "heapdiff reads version 4 and 5 differently"
cmp -s "$W/d1" "$W/d4" || fail "heapdiff reads version 1 and 4 differently"
cmp -s "$W/d2" "$W/d4" || fail "heapdiff reads version 2 and 4 differently"
cmp -s "$W/d3" "$W/d4" || fail "heapdiff reads version 3 and 4 differently"
"$HD" --leaks --bytes "$v1" >"$W/l1" 2>&1 || fail "heapdiff --leaks on a version-1 file: $(cat "$W/l1")"
grep -q '^2 suspects' "$W/l1" || fail "--leaks on version 1: $(cat "$W/l1")"
cmp -s "$W/before.db" "$v1" || fail "heapdiff modified the version-1 file"
echo "ok: heapdiff reads version 1 without changing it"

for f in "$v1" "$v2" "$v3" "$v4" "$v5" "$v6" "$v7" "$v8" "$v9" "$v10" "$v11" "$v12" "$v13"; do
	v=${f##*/v}; v=${v%.db}
	"$FILL" --open "$f" || fail "the writer refused a version-$v file"
	[ "$(q "$f" "SELECT value FROM meta WHERE key = 'schema_version'")" = 14 ] || fail "version $v not upgraded to version 14"
	[ "$(q "$f" 'SELECT count(*) FROM snapshots WHERE paths = 1')" = "$(q "$f" 'SELECT count(*) FROM snapshots')" ] ||
		fail "snapshots from before version 14 should all have their call paths"
	# Read the same by heapdiff (the diff, --leaks) as the new file.
	"$HD" --bytes "$f" first last >"$W/u$v" 2>&1 || fail "heapdiff on the file upgraded from version $v: $(cat "$W/u$v")"
	cmp -s "$W/u$v" "$W/dnew" || fail "heapdiff reads the file upgraded from version $v differently: $(diff "$W/u$v" "$W/dnew")"
	"$HD" --leaks --bytes "$f" >"$W/ul$v" 2>&1 || fail "heapdiff --leaks on the file upgraded from version $v"
	"$HD" --leaks --bytes "$new" >"$W/ul" 2>&1 || fail "heapdiff --leaks on the new file"
	cmp -s "$W/ul$v" "$W/ul" || fail "--leaks reads the file upgraded from version $v differently"
	[ "$(q "$f" 'SELECT count(*) FROM snapshots WHERE base_id IS NULL')" = 0 ] || fail "snapshots without base_id after the upgrade from version $v"
	[ "$(q "$f" 'SELECT count(*), total(live_bytes) FROM bucket_at')" = "$(q "$new" 'SELECT count(*), total(live_bytes) FROM bucket_at')" ] ||
		fail "bucket_at differs after the upgrade from version $v"
	[ "$(q "$f" .schema)" = "$(q "$new" .schema)" ] || fail "the schema upgraded from version $v differs from a new file's"
	[ "$(q "$f" "SELECT group_concat(name, ' ') FROM (SELECT name FROM kinds ORDER BY id)")" = "heap mmap rss swap" ] ||
		fail "kinds after the upgrade from version $v: $(q "$f" 'SELECT * FROM kinds')"
	[ "$(q "$f" 'SELECT count(*) FROM leak_suspects')" = 2 ] || fail "leak_suspects after the upgrade from version $v"
	[ "$(q "$f" 'SELECT count(*), total(live_bytes) FROM buckets')" = "$(q "$new" 'SELECT count(*), total(live_bytes) FROM buckets')" ] ||
		fail "the upgrade from version $v changed the data"
	[ "$v" -ge 3 ] || [ "$(q "$f" 'SELECT count(*) FROM snapshots WHERE sample_interval = 0')" = "$(q "$f" 'SELECT count(*) FROM snapshots')" ] ||
		fail "snapshots from before version 3 should have sample_interval 0"
	[ "$(q "$f" 'SELECT count(*) FROM snapshot_totals WHERE rss_read_time IS NULL')" = "$(q "$f" 'SELECT count(*) FROM snapshots')" ] ||
		fail "snapshots from before version 9 should have rss_read_time NULL (read at the snapshot)"
	"$FILL" "$f" >/dev/null || fail "the writer cannot append a session to the file upgraded from version $v"
	[ "$(q "$f" 'SELECT count(*) FROM sessions')" = 2 ] || fail "no second session in the file upgraded from version $v"
	echo "ok: the writer upgrades version $v in place"
done
echo ok
