#!/bin/bash
# t_db_upgrade: a schema-version-1 database (without the views added in
# version 2) is read by heapdiff as it is (byte-identical afterwards, and
# --leaks works on it: it does not need the views), and upgraded in place by
# the writer: version 2, the new views, the data untouched, the schema then
# identical to that of a new file.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }

new=$W/new.db v1=$W/v1.db
"$FILL" --series "$new" >/dev/null || fail "db_fill failed"
cp "$new" "$v1"
# What a version-1 writer left: no leak views, schema_version 1.
q "$v1" "DROP VIEW leak_suspects; DROP VIEW leak_trend; UPDATE meta SET value = '1' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
rm -f "$v1-wal" "$v1-shm"
cp "$v1" "$W/before.db"

"$HD" --bytes "$v1" first last >"$W/d1" 2>&1 || fail "heapdiff on a version-1 file: $(cat "$W/d1")"
"$HD" --bytes "$new" first last >"$W/d2" 2>&1 || fail "heapdiff on a version-2 file"
cmp -s "$W/d1" "$W/d2" || fail "heapdiff reads version 1 and 2 differently"
"$HD" --leaks --bytes "$v1" >"$W/l1" 2>&1 || fail "heapdiff --leaks on a version-1 file: $(cat "$W/l1")"
grep -q '^2 suspects' "$W/l1" || fail "--leaks on version 1: $(cat "$W/l1")"
cmp -s "$W/before.db" "$v1" || fail "heapdiff modified the version-1 file"
echo "ok: heapdiff reads version 1 without changing it"

"$FILL" --open "$v1" || fail "the writer refused a version-1 file"
[ "$(q "$v1" "SELECT value FROM meta WHERE key = 'schema_version'")" = 2 ] || fail "not upgraded to version 2"
[ "$(q "$v1" .schema)" = "$(q "$new" .schema)" ] || fail "the upgraded schema differs from a new file's"
[ "$(q "$v1" 'SELECT count(*) FROM leak_suspects')" = 2 ] || fail "leak_suspects after the upgrade"
[ "$(q "$v1" 'SELECT count(*), total(live_bytes) FROM buckets')" = "$(q "$new" 'SELECT count(*), total(live_bytes) FROM buckets')" ] ||
	fail "the upgrade changed the data"
"$FILL" "$v1" >/dev/null || fail "the writer cannot append a session to the upgraded file"
[ "$(q "$v1" 'SELECT count(*) FROM sessions')" = 2 ] || fail "no second session"
echo "ok: the writer upgrades version 1 in place"
echo ok
