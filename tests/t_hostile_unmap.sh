#!/bin/bash
# t_hostile_unmap: a target that takes its ring away mid-session
# (tests/targets/ring_takeover), through the C library's calls: munmap of
# all of it, munmap of its header page, mmap MAP_FIXED over its data,
# mremap of it elsewhere -- and allocates right after.  Each time:
#  - the target does not crash: the agent stops writing before the call is
#    made, ends the session within its tick, says why, restores the GOT and
#    leaves the program's new mapping alone (its pattern intact);
#  - heapattach exits 3 in bounded time with the agent's reason, and the
#    profile holds the 100 samples made before;
#  - the next session works.
# Then a second mapping of the ring (mremap with old size 0; the session
# goes on) with a thread publishing records there for ever: heapattach's
# last drain after a detach ends anyway.  The target's output is that of a
# run without heapattach; nothing heapattach prints holds a control byte.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
require_all ring_takeover

MODES="munmap header mapover move"

objects() {
	"$HA_BUILDDIR/src/heapdiff" --bytes -n 0 "$1" last >"$W/live" 2>&1 || return 1
	heapdiff_rows "$W/live" | awk '$3 == "leak_here" { print $2 }' | head -n 1
}

# script plain|profiled: the same commands for both runs.
script() {
	local m db rc
	for m in $MODES; do
		db=$W/$m.db
		[ "$1" = profiled ] && { start_ha -q -i 1 -s 3600 -o "$db" "$pid"; wait_ready "$pid" ring_takeover; }
		target_cmd "leak 100"
		[ "$1" = profiled ] && snapshot_now "$db"
		target_cmd "take $m"
		target_cmd "leak 100"
		if [ "$1" = profiled ]; then
			wait_for 15 '! is_alive "$HAPID"' || fail "$m: heapattach still attached 15 s after the program took its ring"
			wait "$HAPID"
			rc=$?
			sed 's/^/    /' "$HA_ERR"
			[ "$rc" = 3 ] || fail "$m: heapattach exited $rc, expected 3"
			grep -q '^heapattach: the agent failed: agent: the program unmapped or mapped over the ring' "$HA_ERR" ||
				fail "$m: heapattach does not say what the program did"
			grep -q "^heapattach: lost the agent in $pid" "$HA_ERR" || fail "$m: no 'lost the agent' line"
			no_controls "$HA_ERR" "heapattach's stderr ($m)"
			[ "$(objects "$db")" = 100 ] || fail "$m: leak_here holds $(objects "$db") objects, expected the 100 before"
			log "$m: the session ended with the 100 samples before"
		fi
		target_cmd check
		tail -n 3 "$TOUT" | grep -qx 'hooked=0' || fail "$m: malloc's GOT slot is still patched"
		! tail -n 3 "$TOUT" | grep -qx 'pattern bad' || fail "$m: the program's mapping over the ring was changed"
	done
	# A second mapping of the ring, written to for ever.
	[ "$1" = profiled ] && { start_ha -q -i 1 -s 3600 -o "$W/dup.db" "$pid"; wait_ready "$pid" ring_takeover; }
	target_cmd "leak 10"
	target_cmd "take dup"
	target_cmd "leak 10"
	if [ "$1" = profiled ]; then
		snapshot_now "$W/dup.db"
		detach_by_signal INT "$pid"
		no_controls "$HA_ERR" "heapattach's stderr (dup)"
		log "dup: detached while the program kept publishing records"
	fi
	target_cmd stop
	# The agent is there for the next session, and restores.
	if [ "$1" = profiled ]; then
		run_ha -q -d 1 -o "$W/after.db" "$pid"
		[ "$HA_RC" = 0 ] || fail "the session after exited $HA_RC"
		check_session "$HA_ERR" "$pid" ring_takeover
	fi
	target_cmd check
	send "$TFD" quit
	wait_exit "$pid" 10
	[ "$RC" = 0 ] || fail "ring_takeover exited $RC"
}

start_target plain ring_takeover
pid=$TPID
script plain
grep -v '^ready' "$TOUT" >"$W/expected"

start_target taken ring_takeover
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
script profiled
[ "$(grep -c '^ring at' "$TERR")" = 5 ] || fail "the target did not find its ring each time: $(grep -c '^ring at' "$TERR")"
grep -v '^ready' "$TOUT" | cmp -s - "$W/expected" ||
	fail "the profiled target printed otherwise: $(grep -v '^ready' "$TOUT" | diff - "$W/expected" | head -n 5)"
check_reports "$W/mapover.db" mapover
echo ok
