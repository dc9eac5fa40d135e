#!/bin/bash
# t_rss_python: Debian's python3 attached with --rss at the default period.
# Between two snapshots the script keeps 1000 bytes objects of 100 KB
# (allocated and written: heap and resident) and maps 128 MiB with the mmap
# module that it never writes (allocated, not resident).  Under python's
# eval loop (page-fault stacks are native) the resident memory grows by the
# bytes objects (within 15%), not by the mapping; the heap view has both,
# under the script's Python functions grow_list and reserve; the attributed growth is
# within 10% of the growth of python's RssAnon; python exits normally.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all
PY=/usr/bin/python3
[ -x "$PY" ] || skip "/usr/bin/python3 is not installed (Debian package python3; build-aux/setup installs it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"


anon() { awk '/^RssAnon:/ { print $2 * 1024 }' "/proc/$1/status"; }
db=$W/py.db
start_cmd py "$PY" -u "$HA_SRCDIR/tests/targets/grow.py"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha --rss -q -s 3600 -o "$db" "$pid"
wait_ready "$pid" python3
snapshot_now "$db"
a1=$(anon "$pid")
send "$TFD" "grow 1000 100000"
wait_line "$TOUT" '^done grow 1000 100000 total 1000 ok True$' 60
send "$TFD" "reserve 128"
wait_line "$TOUT" '^done reserve 1001$' 60
a2=$(anon "$pid")
snapshot_now "$db"
detach_by_signal INT "$pid"
grep -q '^heapattach: --rss: [0-9]* page-fault samples (1 in 251 faults), 0 lost;' "$HA_ERR" ||
	fail "no --rss summary, or samples lost"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "python exited $RC"

s1=$(snapshot_id "$db" 1)
s2=$(snapshot_id "$db" 2)
growth() { # PATTERN KIND
	local b1 b2
	read -r b1 _ < <(live_under "$db" "$1" "$2" "$s1")
	read -r b2 _ < <(live_under "$db" "$1" "$2" "$s2")
	echo $((b2 - b1))
}
# Page-fault samples are the kernel's (perf): their stacks are native, the
# eval loop's frames as they were; the heap's have Python frames in their
# place (grow_list keeps the bytes objects, reserve makes the mapping).
rss=$(growth '%EvalFrame%' rss)
heap=$(( $(growth grow_list heap) + $(growth reserve mmap) ))
reserved=$(growth 'mmap_new%' rss)
log "under python's eval loop: resident +$rss bytes; under grow_list and reserve: heap and mmap, heap and mmap +$heap (truth: 100000000 written, 134217728 mapped unwritten)"
within 15 "$rss" 100000000 || fail "resident growth under the eval loop $rss is not within 15% of 100000000"
within 15 "$heap" 234217728 || fail "heap+mmap growth under grow_list and reserve $heap is not within 15% of 234217728"
[ "$reserved" -le $((2 << 20)) ] || fail "the unwritten mapping has $reserved bytes resident"
total=$(sqlite3 "$db" "SELECT printf('%.0f', b.resident_bytes - a.resident_bytes) FROM snapshot_totals a, snapshot_totals b
                       WHERE a.snapshot_id = $s1 AND b.snapshot_id = $s2")
log "attributed resident growth $total bytes, RssAnon grew $((a2 - a1))"
within 10 "$total" $((a2 - a1)) || fail "attributed growth $total is not within 10% of RssAnon's $((a2 - a1))"
echo ok
