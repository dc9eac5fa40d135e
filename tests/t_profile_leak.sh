#!/bin/bash
# t_profile_leak: a program leaks known bytes in leak_here() between two
# snapshots while churning (everything else freed).  heapdiff first..last
# names leak_here first; with --interval 1 the bytes and objects are exact,
# at the default interval (512 KiB) they are within 25% of the truth.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all leak_cmd

# profile INTERVAL_ARGS... : one session; leaves heapdiff output in $W/diff.
profile() {
	local db=$W/leak-$RANDOM.db
	start_profiled "leak$N" leak_cmd -q -s 3600 -o "$db" "$@"
	send "$TFD" "churn 20000"
	wait_line "$TOUT" '^done churn 20000'
	# The threads that read the ring and write the DB run 10 nice levels
	# below heapattach's main thread (--nice, default 10); none above it.
	# (They start once the agent is ready: on a busy machine the target
	# may be done churning before they exist.)
	local nices
	wait_for 10 '[ "$(ps -L -o nice= -p "$HAPID" | wc -l)" -ge 3 ]' ||
		fail "heapattach has not started its reading and writing threads"
	nices=$(ps -L -o nice= -p "$HAPID" | sort -n | uniq | xargs)
	set -- $nices
	[ "$#" = 2 ] && { [ $(($2 - $1)) = 10 ] || [ "$2" = 19 ]; } ||
		fail "heapattach's threads run at nice '$nices', expected the main thread's and 10 more"
	snapshot_now "$db"
	send "$TFD" "leak $N $SIZE"
	wait_line "$TOUT" "^done leak $N $SIZE"
	send "$TFD" "churn 20001"
	wait_line "$TOUT" '^done churn 20001'
	detach_by_signal INT "$pid"
	send "$TFD" quit
	wait_exit "$pid" 10 || fail "leak_cmd did not exit after quit"
	[ "$RC" = 0 ] || fail "leak_cmd exited $RC"
	"$HA_BUILDDIR/src/heapdiff" --bytes "$db" first last >"$W/diff" ||
		fail "heapdiff failed: $(cat "$W/diff")"
	sed 's/^/    /' "$W/diff" | head -n 30
	[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check failed"
}

# 1. Every allocation, and the target waits rather than drop: exact.
N=1000 SIZE=4096
profile -i 1 --block
read -r bytes objects leaf < <(heapdiff_rows "$W/diff" | head -n 1)
[ "$leaf" = leak_here ] || fail "top growth is '$leaf', expected leak_here"
[ "$bytes" = "+$((N * SIZE))" ] || fail "leak_here grew by $bytes bytes, expected +$((N * SIZE))"
[ "$objects" = "+$N" ] || fail "leak_here grew by $objects objects, expected +$N"
log "interval 1: leak_here +$((N * SIZE)) bytes, +$N objects: exact"

# 2. Default interval: within 25% (256 MiB in 64 KiB blocks: ~480 samples,
# a relative standard deviation of ~4.5%).
N=4096 SIZE=65536
profile
read -r bytes objects leaf < <(heapdiff_rows "$W/diff" | head -n 1)
[ "$leaf" = leak_here ] || fail "top growth at the default interval is '$leaf', expected leak_here"
truth=$((N * SIZE))
within 25 "${bytes#+}" "$truth" ||
	fail "leak_here estimate $bytes is not within 25% of $truth"
log "default interval: leak_here estimated $bytes for $truth ($(awk -v b="${bytes#+}" -v t="$truth" 'BEGIN { printf "%+.1f%%", 100 * (b - t) / t }'))"
echo ok
