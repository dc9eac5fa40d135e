#!/bin/bash
# t_files: what heapattach and heapdiff write is for the profile's owner
# only, and never written through a link planted in its place:
#   - the database, its -wal and its -shm, while attached: 0600 under umask
#     022 (as perf.data);
#   - a symbolic link at the database's name (or at its -wal) makes
#     heapattach refuse with one line before the target is touched, and the
#     file it points to is unchanged;
#   - heapdiff -o: a new report is 0600; a symbolic link at the name is
#     refused with one line and what it points to is unchanged.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all leaky
HD=$HA_BUILDDIR/src/heapdiff
umask 022
mode() { stat -c %a "$1"; }

start_cmd leaky "$TARGETS/leaky"
pid=$TPID
wait_line "$TOUT" '^ready [0-9]+$'

# ---- planted links
echo "precious" >"$W/precious"
for name in evil.db evil2.db-wal; do
	ln -s "$W/precious" "$W/$name"
	target=$W/${name%-wal}
	run_ha -q -d 1 -o "$target" "$pid"
	[ "$HA_RC" = 1 ] || fail "heapattach wrote through a link at $name (exit $HA_RC)"
	[ "$(grep -c . "$HA_ERR")" = 1 ] && grep -q "^heapattach: $W/$name: a symbolic link: refusing to write through it\$" "$HA_ERR" ||
		fail "the refusal of a link at $name: $(cat "$HA_ERR")"
	[ "$(cat "$W/precious")" = precious ] || fail "the file behind $name changed"
	check_untouched "$pid"
done
echo "ok: links at the database's name or its -wal refused"

# ---- the database while attached
db=$W/p.db
start_ha -q -s 3600 -o "$db" "$pid"
wait_ready "$pid" leaky
snapshot_now "$db"
for f in "$db" "$db-wal" "$db-shm"; do
	[ -e "$f" ] || fail "$f does not exist while attached"
	[ "$(mode "$f")" = 600 ] || fail "$f is mode $(mode "$f"), expected 600"
done
kill -INT "$HAPID"
wait "$HAPID" || fail "heapattach exited $?"
echo "ok: the database, -wal and -shm are 0600"

"$HD" -f json -o "$W/report.json" "$db" >"$W/hd.out" 2>&1 || fail "heapdiff -o: $(cat "$W/hd.out")"
[ "$(mode "$W/report.json")" = 600 ] || fail "report.json is mode $(mode "$W/report.json")"
ln -s "$W/precious" "$W/evil.html"
"$HD" -f html -o "$W/evil.html" "$db" >"$W/hd.out" 2>&1 && fail "heapdiff wrote through a link"
[ "$(grep -c . "$W/hd.out")" = 1 ] && grep -q "a symbolic link: refusing to write through it" "$W/hd.out" ||
	fail "heapdiff's refusal: $(cat "$W/hd.out")"
[ "$(cat "$W/precious")" = precious ] || fail "the file behind evil.html changed"
echo "ok: heapdiff's reports 0600, links refused"
echo ok
