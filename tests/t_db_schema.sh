#!/bin/bash
# t_db_schema: the database as a file format.  The writer creates exactly
# schema/schema.sql (the sqlite3 shell loads that file to the same schema),
# marks the file (application_id, meta format and schema_version; a rollback
# journal once the writer closed it, WAL only while it writes),
# interns modules, frames and callstacks once across sessions and reopens,
# writes only the changed buckets, initializes an empty file or an empty
# SQLite database; every view can be queried from the sqlite3 shell; and a
# successful heapdiff leaves the file byte-identical.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
SCHEMA=$HA_SRCDIR/schema/schema.sql
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"
[ -f "$SCHEMA" ] || fail "missing $SCHEMA"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed (apt-get install sqlite3)"

same() {
	[ "$2" = "$3" ] && return 0
	printf 'got:\n%s\nwanted:\n%s\n' "$2" "$3"
	fail "$1"
}
q() { sqlite3 -batch -separator ' ' "$1" "$2" || fail "sqlite3 failed on: $2"; }

db=$W/profile.db
"$FILL" --sessions 2 "$db" >"$W/fill.out" 2>&1 || fail "db_fill failed: $(cat "$W/fill.out")"

# ---- identification
same "application_id" "$(q "$db" 'PRAGMA application_id')" 1214603632
same "meta" "$(q "$db" 'SELECT key, value FROM meta ORDER BY key')" "format heapattach
schema_version 14"
same "journal_mode" "$(q "$db" 'PRAGMA journal_mode')" delete
grep -q '^#define HA_DB_SCHEMA_VERSION 14$' "$HA_SRCDIR/src/db/db.h" || fail "db.h and the schema disagree on the version"
echo "ok: file identification"

# ---- the schema file is the schema
sqlite3 -batch "$W/cli.db" <"$SCHEMA" || fail "sqlite3 cannot load $SCHEMA"
same "schema created by the writer vs schema.sql" "$(q "$db" .schema)" "$(q "$W/cli.db" .schema)"
for v in $(q "$db" "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name"); do
	sqlite3 -batch "$db" "SELECT * FROM $v LIMIT 3" >/dev/null 2>"$W/view.err" ||
		fail "view $v cannot be queried: $(cat "$W/view.err")"
	# Each view is documented with an example in the schema.
	grep -q "FROM $v\\b" "$SCHEMA" || fail "view $v has no documented example query in schema.sql"
done
same "views" "$(q "$db" "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name)")" \
	"bucket_at frame_text growth growth_text leak_suspects leak_trend live_text module_totals session_bounds snapshot_totals stack_text top_sites"
echo "ok: schema.sql is the schema; every view can be queried"

# ---- interning: each module, frame and callstack once, across a reopen
same "modules" "$(q "$db" "SELECT path, build_id FROM modules ORDER BY path")" \
	" 
/opt/leaky/bin/leaky 5f3c9a0e1b2d4c6e8f90a1b2c3d4e5f60718293a
/opt/leaky/lib/libsmall.so.1 a1b2c3d4e5f60718293a5f3c9a0e1b2d4c6e8f90"
same "frames" "$(q "$db" 'SELECT count(*) FROM frames')" 11
same "stacks" "$(q "$db" 'SELECT count(*), sum(depth) FROM stacks')" "5 12"
same "stack_frames" "$(q "$db" 'SELECT count(*) FROM stack_frames')" 12
same "stack 1 frames" "$(q "$db" "SELECT sf.pos, f.function, f.inlined, printf('0x%x', f.rel_pc) FROM stack_frames sf
	JOIN frames f ON f.id = sf.frame_id WHERE sf.stack_id = 1 ORDER BY sf.pos")" "0 leak_grow 1 0x1234
1 handle_request 0 0x1234
2 main 0 0x1300"
same "distinct hashes" "$(q "$db" 'SELECT count(DISTINCT hash) FROM stacks')" 5
echo "ok: interning"

# ---- only changed buckets are stored
same "bucket rows per snapshot" "$(q "$db" 'SELECT snapshot_id, count(*) FROM buckets GROUP BY snapshot_id')" "1 3
2 3
3 2
4 1
5 2"
same "session_stacks" "$(q "$db" 'SELECT session_id, stack_id, kind, first_snapshot_id FROM session_stacks ORDER BY 1, 2')" \
	"1 1 0 1
1 2 1 1
1 3 0 1
1 4 0 2
2 1 0 4
2 5 0 5"
echo "ok: changed buckets only"

# ---- the writer initializes an empty file and an empty SQLite database
: >"$W/empty.db"
"$FILL" "$W/empty.db" >/dev/null || fail "db_fill on an empty file failed"
same "empty file initialized" "$(q "$W/empty.db" "SELECT value FROM meta WHERE key = 'format'")" heapattach
sqlite3 -batch "$W/blank.db" 'CREATE TABLE t (x); DROP TABLE t; VACUUM' || fail "sqlite3 failed"
"$FILL" "$W/blank.db" >/dev/null || fail "db_fill on an empty SQLite database failed"
same "empty SQLite database initialized" "$(q "$W/blank.db" 'SELECT count(*) FROM snapshots')" 3
echo "ok: empty files are initialized"

# ---- heapdiff never writes the database
cp "$db" "$W/before.db"
"$HD" "$db" first last >/dev/null 2>&1 || fail "heapdiff failed"
"$HD" --session 1 "$db" 2 >/dev/null 2>&1 || fail "heapdiff failed"
cmp -s "$W/before.db" "$db" || fail "heapdiff modified the database"
echo "ok: heapdiff leaves the database byte-identical"

# ---- a user who cannot write the directory can still read a closed
# database (a rollback journal: nothing to make beside it), and one left in
# WAL mode without a -wal file (by an older heapattach: read as immutable);
# with a -wal file (a writer may be active) the error says what SQLite needs
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	ro=$W/ro
	mkdir "$ro" && chmod 755 "$ro" && cp "$db" "$ro/p.db" && chmod 644 "$ro/p.db" &&
		cp "$HD" "$ro/heapdiff" && chmod 755 "$ro/heapdiff" || fail "cannot prepare $ro"
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	nobody "$ro/heapdiff" --bytes --session 1 "$ro/p.db" first last >"$W/ro.out" 2>&1 ||
		fail "heapdiff as nobody in a read-only directory: $(cat "$W/ro.out")"
	grep -q '^total: live heap +2520000 ' "$W/ro.out" || fail "heapdiff as nobody: wrong total: $(cat "$W/ro.out")"
	[ "$(ls "$ro")" = "$(printf 'heapdiff\np.db')" ] || fail "files appeared in the read-only directory: $(ls "$ro")"
	sqlite3 "$ro/p.db" 'PRAGMA journal_mode = WAL' >/dev/null || fail "sqlite3 failed"
	nobody "$ro/heapdiff" --bytes --session 1 "$ro/p.db" first last >"$W/ro.out" 2>&1 ||
		fail "heapdiff as nobody, a WAL file in a read-only directory: $(cat "$W/ro.out")"
	grep -q '^total: live heap +2520000 ' "$W/ro.out" || fail "heapdiff as nobody, WAL: wrong total: $(cat "$W/ro.out")"
	[ "$(ls "$ro")" = "$(printf 'heapdiff\np.db')" ] || fail "files appeared in the read-only directory: $(ls "$ro")"
	: >"$ro/p.db-wal"
	nobody "$ro/heapdiff" "$ro/p.db" >"$W/ro.out" 2>"$W/ro.err"
	rc=$?
	[ "$rc" = 1 ] || fail "heapdiff as nobody with a -wal file: exit $rc, expected 1"
	grep -q -- 'p.db-shm' "$W/ro.err" || fail "heapdiff as nobody with a -wal file: unclear error: $(cat "$W/ro.err")"
	echo "ok: read-only directory"
else
	log "not root or no setpriv: read-only directory case not checked"
fi
echo "ok"
