#!/bin/bash
# t_db_crash: a writer killed with SIGKILL in the middle of writing snapshots
# (db_fill --loop: stack-interning and snapshot transactions back to back)
# leaves a database that heapdiff reads at once (read-only, WAL recovery),
# whose PRAGMA integrity_check is ok, in which every snapshot the writer
# reported as committed is present with all its buckets, and in which no
# snapshot is partial.  Several rounds on the same file: each new writer
# appends a session to the crashed database.  heapdiff also reads the file
# while the writer is writing.  Synchronisation: the writer's
# "committed snapshot ID buckets N" line after each commit, read through a
# fifo; no sleeps.  The writer runs with a tiny page cache, so its
# transactions spill pages into the WAL before they commit: a kill leaves
# uncommitted frames behind, which recovery must ignore.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed (apt-get install sqlite3)"

db=$W/crash.db
committed=$W/committed      # "ID BUCKETS" of every snapshot reported committed
: >"$committed"
STACKS=1000

# record LINE: note a "committed snapshot ID buckets N" line.
record() {
	local a b id c n
	read -r a b id c n <<<"$1"
	[ "$a $b $c" = "committed snapshot buckets" ] || fail "unexpected line from the writer: '$1'"
	echo "$id $n" >>"$committed"
}

for round in 1 2 3 4 5 6; do
	fifo=$W/fifo$round
	mkfifo "$fifo" || fail "mkfifo"
	"$FILL" --loop 0 --stacks "$STACKS" "$db" >"$fifo" 2>"$W/writer$round.err" &
	wpid=$!
	_PIDS+=("$wpid")
	exec {rfd}<"$fifo"
	read -r -t 60 line <&"$rfd" || fail "round $round: no first line from the writer ($(cat "$W/writer$round.err"))"
	case $line in
	"session "*" stacks $STACKS") ;;
	*) fail "round $round: unexpected first line '$line'" ;;
	esac
	# Let it commit a different number of snapshots each round.
	want=$((round * 5))
	for ((i = 0; i < want; i++)); do
		read -r -t 60 line <&"$rfd" || fail "round $round: writer stopped after $i snapshots ($(cat "$W/writer$round.err"))"
		record "$line"
	done
	last=$(tail -n 1 "$committed" | cut -d' ' -f1)
	# A reader while the writer writes (WAL lets both go on); it sees at
	# least the snapshots reported so far.  Its run also moves the kill
	# below to a different point of the writer's cycle each round: with
	# the writer's tiny page cache, often inside a snapshot transaction
	# that has already spilled pages into the WAL.
	"$HD" --bytes --top 1 "$db" first last >"$W/concurrent$round.out" 2>"$W/concurrent$round.err" ||
		fail "round $round: heapdiff while the writer runs: $(cat "$W/concurrent$round.err")"
	seen=$(sed -n 's/^  to snapshot \([0-9]*\):.*/\1/p' "$W/concurrent$round.out")
	[ -n "$seen" ] && [ "$seen" -ge "$last" ] ||
		fail "round $round: heapdiff during the writes saw snapshot '$seen', $last was committed"
	kill -KILL "$wpid" || fail "round $round: the writer is gone before the kill"
	# Lines still in the fifo were printed after a commit: they count too.
	while read -r -t 10 line <&"$rfd"; do
		record "$line"
	done
	exec {rfd}<&-
	wait "$wpid"
	rc=$?
	[ "$rc" = 137 ] || fail "round $round: writer exit $rc, expected 137 (SIGKILL): $(cat "$W/writer$round.err")"
	last=$(tail -n 1 "$committed" | cut -d' ' -f1)
	log "round $round: writer killed after $(wc -l <"$committed") committed snapshots in all (last $last)"

	# 1. heapdiff reads the crashed file first (read-only connection: WAL
	#    recovery without writing the database).
	"$HD" --bytes --top 3 "$db" "$last" >"$W/after$round.out" 2>"$W/after$round.err" ||
		fail "round $round: heapdiff after the crash: $(cat "$W/after$round.err")"
	grep -q "^live heap at snapshot $last: " "$W/after$round.out" ||
		fail "round $round: heapdiff does not show snapshot $last: $(head -n 3 "$W/after$round.out")"
	# 2. integrity (read-only, leaving the crashed WAL to the next writer).
	ic=$(sqlite3 -batch -readonly "$db" 'PRAGMA integrity_check') || fail "round $round: sqlite3 failed"
	[ "$ic" = ok ] || fail "round $round: integrity_check: $ic"
	fk=$(sqlite3 -batch -readonly "$db" 'PRAGMA foreign_key_check') || fail "round $round: sqlite3 failed"
	[ -z "$fk" ] || fail "round $round: foreign_key_check: $fk"
	# 3. every reported snapshot is there with all its buckets (a
	#    keyframe, base_id its own id, with a row for every bucket of the
	#    session that exists at it: schema version 12).
	values=$(awk '{ printf "%s(%s, %s)", (NR > 1 ? ", " : ""), $1, $2 }' "$committed")
	missing=$(sqlite3 -batch -readonly "$db" "WITH e (id, n) AS (VALUES $values),
		f (id, n, found) AS (SELECT e.id, CASE WHEN s.base_id = s.id THEN
		        (SELECT count(*) FROM session_stacks k WHERE k.session_id = s.session_id
		            AND k.first_snapshot_id <= s.id) ELSE e.n END,
		        (SELECT count(*) FROM buckets b WHERE b.snapshot_id = e.id)
		   FROM e LEFT JOIN snapshots s ON s.id = e.id)
		SELECT f.id || ' (' || f.n || ' buckets, ' || f.found || ' found)'
		  FROM f WHERE f.found <> f.n
		            OR NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.id = f.id)") ||
		fail "round $round: sqlite3 failed"
	[ -z "$missing" ] || fail "round $round: committed snapshots missing or incomplete: $missing"
	# 4. no partial snapshot at all (also those committed just before the
	#    kill but not reported): the k-th snapshot of a loop session has
	#    2 + (37 k mod STACKS) buckets.
	#    (A keyframe has a row for every bucket of the session at it.)
	partial=$(sqlite3 -batch -readonly "$db" "SELECT id FROM (
		SELECT s.id, s.base_id = s.id AS key,
		       (SELECT count(*) FROM snapshots x WHERE x.session_id = s.session_id AND x.id <= s.id) AS k,
		       (SELECT count(*) FROM session_stacks x WHERE x.session_id = s.session_id
		           AND x.first_snapshot_id <= s.id) AS keys,
		       (SELECT count(*) FROM buckets b WHERE b.snapshot_id = s.id) AS n
		  FROM snapshots s) WHERE n <> CASE WHEN key THEN keys ELSE 2 + (37 * k) % $STACKS END") ||
		fail "round $round: sqlite3 failed"
	[ -z "$partial" ] || fail "round $round: partial snapshots: $partial"
	# 5. the bucket keys are consistent with the buckets.
	bad=$(sqlite3 -batch -readonly "$db" "SELECT count(*) FROM buckets b WHERE NOT EXISTS (SELECT 1 FROM session_stacks k
		WHERE k.session_id = b.session_id AND k.stack_id = b.stack_id AND k.kind = b.kind
		  AND k.first_snapshot_id <= b.snapshot_id)") || fail "round $round: sqlite3 failed"
	[ "$bad" = 0 ] || fail "round $round: $bad buckets without their session_stacks key"
	# 6. no partial callstack.
	bad=$(sqlite3 -batch -readonly "$db" "SELECT count(*) FROM stacks s
		WHERE s.depth <> (SELECT count(*) FROM stack_frames f WHERE f.stack_id = s.id)") ||
		fail "round $round: sqlite3 failed"
	[ "$bad" = 0 ] || fail "round $round: $bad callstacks with missing frames"
	echo "ok: round $round: killed after snapshot $last; integrity ok, all committed snapshots complete"
done

# The checks above read the crashed file read-only, so each new writer had
# to open it with the WAL of the killed one; now a read-write connection.
ic=$(sqlite3 -batch "$db" 'PRAGMA integrity_check') || fail "sqlite3 failed"
[ "$ic" = ok ] || fail "final integrity_check: $ic"
sessions=$(sqlite3 -batch "$db" 'SELECT count(*) FROM sessions WHERE end_time IS NULL') || fail "sqlite3 failed"
[ "$sessions" = 6 ] || fail "expected 6 unfinished sessions, found $sessions"
"$HD" --bytes --session 1 "$db" first last >"$W/final.out" 2>&1 || fail "heapdiff --session 1: $(cat "$W/final.out")"
echo "ok"
