#!/bin/bash
# t_refuse_db: a database heapattach cannot write to -- a foreign SQLite
# file, bytes that are no database, a heapattach database of a newer schema
# version, a directory, a path in a missing directory, a path on proc or
# sysfs -- is refused with one
# line naming the file, exit 1, before the target is touched (no agent
# mapped; the database is checked first even though a new one is created
# alongside the attach), and the file is left byte-identical.
. "$(dirname "$0")/lib.sh"
require_all idle
[ -x "$HA_BUILDDIR/tests/db_fill" ] || fail "db_fill not built (make check builds it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed (apt-get install sqlite3)"

start_target idle idle
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"

sqlite3 "$W/foreign.db" 'CREATE TABLE t (a); INSERT INTO t VALUES (1);' || fail "sqlite3 failed"
printf 'these bytes are no database\n' >"$W/bytes.db"
"$HA_BUILDDIR/tests/db_fill" "$W/newer.db" >/dev/null || fail "db_fill failed"
sqlite3 "$W/newer.db" "UPDATE meta SET value = '99' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null ||
	fail "sqlite3 failed"
rm -f "$W/newer.db-wal" "$W/newer.db-shm"
mkdir "$W/dir.db"

for f in foreign.db bytes.db newer.db dir.db nodir/x.db; do
	[ -f "$W/$f" ] && cp "$W/$f" "$W/before"
	run_ha -o "$W/$f" "$pid"
	check_refusal "$W/$f"
	check_untouched "$pid"
	if [ -f "$W/before" ]; then
		cmp -s "$W/before" "$W/$f" || fail "$f was changed"
		rm -f "$W/before"
	fi
done
[ ! -e "$W/nodir" ] || fail "heapattach created the missing directory"
# On proc and sysfs access(2) lets root "write" where no file can be made:
# refused before the target is touched, not after the attach.
for f in /proc/heapattach-test.db /sys/heapattach-test.db; do
	run_ha -o "$f" "$pid"
	check_refusal "filesystem, where no database can be made"
	check_untouched "$pid"
done
send "$TFD" check
wait_line "$TOUT" '^hooked='
grep -qx 'hooked=0' "$TOUT" || fail "malloc's GOT slot was left patched"
echo ok
