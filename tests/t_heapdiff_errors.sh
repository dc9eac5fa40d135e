#!/bin/bash
# t_heapdiff_errors: files heapdiff (and the writer, ha_db_open through
# db_fill --open) must refuse with one clear line and a non-zero exit, leaving
# the file byte-identical: a missing file, an empty file, a directory, a
# foreign SQLite database (rollback and WAL journal: no -wal or -shm left
# beside either), random bytes, a
# heapattach database of another schema version or format, a corrupt one;
# and the run-time errors: no snapshots, a snapshot or session that does not
# exist, a --function or --module filter that matches no frame of the file,
# another user's 0600 database ("Permission denied").  No root, no target.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed (apt-get install sqlite3)"

# refused PROG-LABEL EXPECTED-REGEX FILE CMD...: CMD must exit 1 with exactly
# one line on stderr matching "^LABEL: FILE: EXPECTED", nothing on stdout,
# and FILE must be as it was (or still missing), with no FILE-wal or
# FILE-shm made beside it (reading a WAL file makes them: issue 38).
refused() {
	local label=$1 re=$2 file=$3 out=$W/r.out err=$W/r.err rc s beside=
	shift 3
	if [ -e "$file" ] && [ ! -d "$file" ]; then
		cp -p "$file" "$W/before" || fail "cp $file"
	fi
	for s in -wal -shm; do
		[ -e "$file$s" ] || beside="$beside $file$s"
	done
	"$@" >"$out" 2>"$err"
	rc=$?
	[ "$rc" = 1 ] || fail "$*: expected exit 1, got $rc (stderr: $(cat "$err"))"
	[ "$(wc -l <"$err")" = 1 ] || fail "$*: expected one line on stderr, got: $(cat "$err")"
	grep -Eq -- "^$label: $(printf '%s' "$file" | sed 's/[][\.*^$+?(){}|/]/\\&/g'): $re" "$err" ||
		fail "$*: message '$(cat "$err")' does not match '$label: FILE: $re'"
	[ ! -s "$out" ] || fail "$*: wrote on stdout: $(head -n 5 "$out")"
	for s in $beside; do
		[ ! -e "$s" ] || fail "$*: left $s beside the file"
	done
	if [ -f "$W/before" ]; then
		cmp -s "$W/before" "$file" || fail "$*: modified $file"
		rm -f "$W/before"
	elif [ ! -d "$file" ]; then
		[ ! -e "$file" ] || fail "$*: created $file"
	fi
	log "refused: $(cat "$err")"
}

# both EXPECTED-REGEX FILE: refused by heapdiff and by the writer.
both() {
	refused heapdiff "$1" "$2" "$HD" "$2" first last
	refused heapdiff "$1" "$2" "$HD" --bytes "$2" 1
	refused db_fill "$1" "$2" "$FILL" --open "$2"
}

good=$W/good.db
"$FILL" "$good" >"$W/fill.out" 2>&1 || fail "db_fill failed: $(cat "$W/fill.out")"

# ---- missing file: never created by heapdiff
refused heapdiff 'No such file or directory$' "$W/missing.db" "$HD" "$W/missing.db" first last
refused heapdiff 'No such file or directory$' "$W/missing.db" "$HD" --db "$W/missing.db" 3
refused heapdiff 'No such file or directory$' "$W/nodir/x.db" "$HD" "$W/nodir/x.db"
echo "ok: missing file"

# ---- empty file: heapdiff refuses; the writer may initialize it
: >"$W/empty.db"
refused heapdiff 'not a heapattach database \(empty file\)$' "$W/empty.db" "$HD" "$W/empty.db"
mkdir "$W/dir.db"
refused heapdiff 'Is a directory$' "$W/dir.db" "$HD" "$W/dir.db"
refused db_fill 'Is a directory$' "$W/dir.db" "$FILL" --open "$W/dir.db"
echo "ok: empty file, directory"

# ---- another program's SQLite database
sqlite3 "$W/foreign.db" 'CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);' || fail "sqlite3 failed"
both 'not a heapattach database \(no meta table\)$' "$W/foreign.db"
sqlite3 "$W/foreign-wal.db" 'PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);' \
	>/dev/null || fail "sqlite3 failed"
both 'not a heapattach database \(no meta table\)$' "$W/foreign-wal.db"
# A meta table of its own, with another format.
sqlite3 "$W/othermeta.db" "CREATE TABLE meta (key, value); INSERT INTO meta VALUES ('format', 'other');" ||
	fail "sqlite3 failed"
both "not a heapattach database \\(meta format 'other'\\)$" "$W/othermeta.db"
echo "ok: foreign SQLite databases"

# ---- random bytes, and text
head -c 65536 /dev/urandom >"$W/random.db"
both 'not a heapattach database: file is not a database$' "$W/random.db"
printf 'hello, this is not a database at all, but it is long enough to have a header\n%.0s' \
	$(seq 20) >"$W/text.db"
both 'not a heapattach database: file is not a database$' "$W/text.db"
echo "ok: random bytes"

# ---- a heapattach database of another schema version
cp "$good" "$W/v99.db"
sqlite3 "$W/v99.db" "UPDATE meta SET value = '99' WHERE key = 'schema_version'" || fail "sqlite3 failed"
both 'database schema version 99, this heapattach reads 1 to 14$' "$W/v99.db"
cp "$good" "$W/v0.db"
sqlite3 "$W/v0.db" "UPDATE meta SET value = '0' WHERE key = 'schema_version'" || fail "sqlite3 failed"
both 'database schema version 0, this heapattach reads 1 to 14$' "$W/v0.db"
cp "$good" "$W/vx.db"
sqlite3 "$W/vx.db" "UPDATE meta SET value = 'x' WHERE key = 'schema_version'" || fail "sqlite3 failed"
both 'database schema version x, this heapattach reads 1 to 14$' "$W/vx.db"
echo "ok: other schema version"

# ---- corrupt databases.  Every page after the first overwritten: the check
# on open fails.  Only the pages of the buckets table overwritten: the open
# succeeds, the query fails.
page=$(sqlite3 "$good" 'PRAGMA page_size') || fail "sqlite3 failed"
pages=$(sqlite3 "$good" 'PRAGMA page_count') || fail "sqlite3 failed"
cp "$good" "$W/corrupt.db"
head -c $(((pages - 1) * page)) /dev/urandom |
	dd of="$W/corrupt.db" bs="$page" seek=1 conv=notrunc status=none || fail "dd failed"
both 'corrupt database: database disk image is malformed$' "$W/corrupt.db"
root=$(sqlite3 "$good" "SELECT rootpage FROM sqlite_master WHERE name = 'buckets'") || fail "sqlite3 failed"
cp "$good" "$W/corrupt2.db"
head -c "$page" /dev/urandom |
	dd of="$W/corrupt2.db" bs="$page" seek=$((root - 1)) conv=notrunc status=none || fail "dd failed"
refused heapdiff 'corrupt database: database disk image is malformed$' "$W/corrupt2.db" \
	"$HD" "$W/corrupt2.db" first last
echo "ok: corrupt databases"

# ---- a heapattach database without snapshots
"$FILL" --open "$W/nosnap.db" || fail "db_fill --open of a new file failed"
refused heapdiff 'no snapshots in DB$' "$W/nosnap.db" "$HD" "$W/nosnap.db" first last
refused heapdiff 'no snapshots in DB$' "$W/nosnap.db" "$HD" "$W/nosnap.db" 1

# ---- snapshots and sessions that do not exist
refused heapdiff 'no snapshot 42 in DB \(snapshots 1\.\.3\)$' "$good" "$HD" "$good" 42
refused heapdiff 'no snapshot 42 in DB \(snapshots 1\.\.3\)$' "$good" "$HD" "$good" 1 42
refused heapdiff 'no snapshot 4 in DB \(snapshots 1\.\.3\)$' "$good" "$HD" "$good" 4 first
refused heapdiff 'no snapshot 99999999999 in DB \(snapshots 1\.\.3\)$' "$good" "$HD" "$good" 99999999999 1
refused heapdiff 'no session 7 in DB \(sessions 1\.\.1\)$' "$good" "$HD" --session 7 "$good" first last
echo "ok: no snapshots, no such snapshot or session"

# ---- another user's 0600 database: the system's word, not SQLite's
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	cp "$good" "$W/root600.db" && chmod 600 "$W/root600.db" && chmod 755 "$W" || fail "cp"
	refused heapdiff 'Permission denied$' "$W/root600.db" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$HD" "$W/root600.db"
	echo "ok: another user's database: Permission denied"
else
	log "not root: the unreadable database is not checked"
fi

# ---- a filter that matches no frame says so (not "no callstack changed")
nf=$(sqlite3 "$good" "SELECT count(DISTINCT function) FROM frames WHERE function <> ''")
refused heapdiff "no frame matches --function 'no_such_fn' \\(its call paths hold $nf functions: heapdiff --by function lists them\\)\$" \
	"$good" "$HD" --function no_such_fn "$good" first last
refused heapdiff "no frame matches --module 'no_such_module' " "$good" "$HD" --module no_such_module "$good"
refused heapdiff "no frame matches --function 'no_such_fn' " "$good" "$HD" --leaks --function no_such_fn "$good"
refused heapdiff "no frame matches --function 'no_such_fn' " "$good" "$HD" --peak --function no_such_fn "$good"
fn=$(sqlite3 "$good" "SELECT function FROM frames WHERE function <> '' ORDER BY id LIMIT 1")
"$HD" --function "$fn" "$good" first last >"$W/fn.out" 2>&1 || fail "--function $fn (a function of the file) failed: $(cat "$W/fn.out")"
echo "ok: a filter that matches nothing says so; one that matches goes on ($fn)"

# After all that, the good database still reads, and the writer reopens it.
"$HD" --bytes "$good" first last >"$W/final.out" 2>&1 || fail "heapdiff on the good database: $(cat "$W/final.out")"
"$FILL" --open "$good" || fail "db_fill --open of a good database failed"
echo "ok"
