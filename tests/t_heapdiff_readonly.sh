#!/bin/bash
# t_heapdiff_readonly: heapdiff only reads (issue 38).  On the database of a
# real session of targets/leaky, every way of running heapdiff (the diff,
# two snapshots, two operands of the same file, --by function, --leaks,
# --peak, each --format written to a file elsewhere) leaves the database's
# directory as it was (no DB-wal, DB-shm or anything else appears) and,
# once no writer is on it, the file's bytes as they were (sha256):
#  1. while the session is live: the writer's -wal and -shm are there, and
#     nothing is added;
#  2. once it ended: the writer put the file back to a rollback journal
#     (header bytes 18-19 are 1), the file is alone, and heapdiff makes
#     nothing beside it;
#  3. a file left in WAL mode without its -wal and -shm (as an older
#     heapattach left them): the -wal and -shm SQLite makes for the read are
#     removed again;
#  4. as nobody, in a directory it cannot write: the closed file and the
#     WAL one are read, and nothing appears.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all leaky
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
HD=$HA_BUILDDIR/src/heapdiff
[ -x "$HD" ] || fail "heapdiff not built: $HD"

mkdir "$W/d" "$W/out" "$W/nout" || fail "mkdir"
db=$W/d/p.db
listing() { (cd "$1" && ls -A | tr '\n' ' '); }
digest() { sha256sum "$1" | cut -d' ' -f1; }
journal() { od -An -tu1 -j18 -N2 "$1" | tr -s ' ' | sed 's/^ //; s/ $//'; }

# read_all DB [WRAP...]: heapdiff in each of its modes on DB, each must
# succeed; the outputs go to $OUTD (stdout to $OUTD/hd.out).
OUTD=$W/out
read_all() {
	local f=$1 m a args
	shift
	local modes=(
		"@DB" "@DB first last" "@DB:first @DB:last" "--by function @DB" "--leaks @DB" "--peak @DB"
		"-f json -o @OUT/r.json @DB" "-f folded -o @OUT/r.folded @DB" "-f svg -o @OUT/r.svg @DB"
		"-f pprof -o @OUT/r.pb.gz @DB" "-f html -o @OUT/r.html @DB"
	)
	for m in "${modes[@]}"; do
		args=()
		for a in $m; do
			a=${a//@DB/$f}
			args+=("${a//@OUT/$OUTD}")
		done
		"$@" "$HD" "${args[@]}" >"$OUTD/hd.out" 2>"$OUTD/hd.err" ||
			fail "heapdiff ${args[*]}: exit $?: $(cat "$OUTD/hd.err")"
	done
}

# unchanged WHAT DIR LISTING [FILE DIGEST]: DIR lists the same names, FILE
# has the same bytes.
unchanged() {
	local what=$1 dir=$2 before=$3 now
	now=$(listing "$dir")
	[ "$now" = "$before" ] || fail "$what: heapdiff changed the directory: before '$before', after '$now'"
	if [ $# -gt 3 ]; then
		[ "$(digest "$4")" = "$5" ] || fail "$what: heapdiff changed the bytes of $4"
	fi
}

# ---- 1. a live session: three snapshots on demand, no periodic ones
start_cmd leaky "$TARGETS/leaky"
wait_line "$TOUT" '^ready [0-9]+$'
pid=$TPID
start_ha -q -s 0 -i 65536 -o "$db" "$pid"
wait_ready "$pid" leaky
snapshot_now "$db"
snapshot_now "$db"
before=$(listing "$W/d")
[ "$before" = "p.db p.db-shm p.db-wal " ] || fail "while attached, the directory holds '$before'"
read_all "$db"
unchanged "during the session" "$W/d" "$before"
echo "ok: during the session heapdiff adds nothing beside the writer's files"

detach_by_signal INT "$pid"
before=$(listing "$W/d")
[ "$before" = "p.db " ] || fail "after the session the directory holds '$before', expected the database alone"
sum=$(digest "$db")

# ---- 2. the finished database
read_all "$db"
unchanged "a finished database" "$W/d" "$before" "$db" "$sum"
[ "$(journal "$db")" = "1 1" ] || fail "after the session the file is not in rollback mode (header: $(journal "$db"))"
echo "ok: on a finished database heapdiff leaves the file alone and byte-identical"

# ---- 3. a file an older heapattach left in WAL mode, without -wal and -shm
cp -p "$db" "$W/d/old.db" || fail "cp"
sqlite3 "$W/d/old.db" 'PRAGMA journal_mode = WAL' >/dev/null || fail "sqlite3 failed"
[ "$(journal "$W/d/old.db")" = "2 2" ] || fail "could not make a WAL file (header: $(journal "$W/d/old.db"))"
before=$(listing "$W/d")
sum=$(digest "$W/d/old.db")
read_all "$W/d/old.db"
unchanged "a WAL file without -wal" "$W/d" "$before" "$W/d/old.db" "$sum"
echo "ok: on a WAL file without -wal and -shm heapdiff leaves nothing beside it"

# ---- 4. a directory it cannot write
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	ro=$W/ro
	mkdir "$ro" && chmod 755 "$ro" && cp "$db" "$W/d/old.db" "$ro/" && chmod 644 "$ro/p.db" "$ro/old.db" &&
		chmod 777 "$W/nout" || fail "cannot prepare $ro"
	OUTD=$W/nout
	before=$(listing "$ro")
	for f in p.db old.db; do
		sum=$(digest "$ro/$f")
		read_all "$ro/$f" setpriv --reuid=65534 --regid=65534 --clear-groups
		unchanged "as nobody in a read-only directory, $f" "$ro" "$before" "$ro/$f" "$sum"
	done
	echo "ok: as nobody in a directory it cannot write, both read, nothing appears"
else
	log "not root or no setpriv: the read-only directory is not checked"
fi
echo "ok"
