#!/bin/bash
# t_peak_python: Debian's python3 grows a list by 200 MB (2000 bytes objects
# of 100 KB) while attached at the default interval and snapshot period,
# then exits: the interpreter frees everything at finalization, so the exit
# snapshot holds almost nothing.  The session keeps the peak: heapdiff --peak
# shows the 200 MB (within 25%) under the script's grow_list (its Python frame), and
# heapdiff DB says in one line that the heap peaked and names --peak.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all
PY=/usr/bin/python3
[ -x "$PY" ] || skip "/usr/bin/python3 is not installed (Debian package python3; build-aux/setup installs it)"
HD=$HA_BUILDDIR/src/heapdiff


db=$W/py.db
start_cmd py "$PY" -u "$HA_SRCDIR/tests/targets/grow.py"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -o "$db" "$pid"
wait_ready "$pid" python3
send "$TFD" "grow 2000 100000"
wait_line "$TOUT" '^done grow 2000 100000 total 2000 ok True$' 60
send "$TFD" quit
wait_exit "$pid" 30
[ "$RC" = 0 ] || fail "python exited $RC"
wait_for 20 '! is_alive "$HAPID"' || fail "heapattach still runs 20 s after python exited"
wait "$HAPID" || fail "heapattach exited $? when python exited"
sed 's/^/    /' "$HA_ERR"

truth=200000000
"$HD" --peak --bytes "$db" >"$W/peak" 2>&1 || fail "heapdiff --peak: $(cat "$W/peak")"
head -n 1 "$W/peak"
peak=$(sqlite3 "$db" "SELECT id FROM snapshots WHERE reason <> 'attach' ORDER BY
        (SELECT total(live_bytes) FROM bucket_at v WHERE v.snapshot_id = snapshots.id) DESC LIMIT 1")
grep -q "^peak: snapshot $peak " "$W/peak" || fail "heapdiff --peak does not show the highest snapshot ($peak)"
read -r bytes _ < <(live_under "$db" grow_list heap "$peak")
log "peak under the script's grow_list: $bytes bytes (truth: 2000 x 100000 = $truth)"
within 25 "$bytes" "$truth" || fail "the peak under the interpreter's frames, $bytes, is not within 25% of $truth"
read -r last _ < <(live_under "$db" grow_list heap)
[ "$last" -lt $((truth / 10)) ] || fail "python's exit snapshot still holds $last bytes: did it not free at exit?"
"$HD" "$db" >"$W/diff" 2>&1 || fail "heapdiff DB: $(cat "$W/diff")"
[ "$(grep -c '^note: .*peaked at .* heapdiff --peak shows the peak$' "$W/diff")" = 1 ] ||
	fail "heapdiff DB does not say that the heap peaked: $(head -n 6 "$W/diff")"
echo "ok: python's 200 MB peak is kept although it freed everything at exit"
