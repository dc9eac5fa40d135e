#!/bin/bash
# t_container_jit: a JIT target (tests/targets/jit_tramp) in its own mount
# and pid namespaces, where it is pid 1 and /tmp is a tmpfs of its own.  It
# names its JIT code in ITS /tmp/perf-1.map (named by its own pid, NSpid's
# last field), and in the second run in ITS /tmp/jit-1.dump (its working
# directory; no perf map).  The attacher must read them through the
# target's root with that pid: a perf map or dump looked up by the host
# pid, or in our /tmp, names nothing.  Asserted each time: the stack
# through each slot is alloc_in_c, the slot's name [jit], call_through_jit,
# main; a slot renamed before it is used shows its new name, never the old.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all jit_tramp

for how in perfmap jitdump; do
	if [ $how = perfmap ]; then
		container_start $how mnt+pid "" jit_tramp
		file=/tmp/perf-1.map fresh=jit_fresh
	else
		container_start $how mnt+pid "cd /tmp" jit_tramp jitdump
		file=/tmp/jit-1.dump fresh=jd_fresh
	fi
	own=$(awk '/^NSpid:/{print $NF}' "/proc/$pid/status")
	[ "$own" = 1 ] && [ "$pid" != 1 ] || fail "precondition: the target is $pid here and $own inside, expected 1"
	[ -s "/proc/$pid/root$file" ] || fail "precondition: no $file in the target's root"
	[ ! -e "/proc/$pid/root/tmp/perf-$pid.map" ] && [ ! -e "/proc/$pid/root/tmp/jit-$pid.dump" ] ||
		fail "precondition: a file named by the host pid in the target's /tmp"
	db=$W/$how.db
	start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
	wait_ready "$pid" jit_tramp
	jit_go_name_go "$fresh"
	finish_live "$pid" "$TPID" "jit_tramp (under unshare)" "$db" "$W/$how.live"
	for slot in jit_first $fresh; do
		got=$(stack_of "$slot" "$W/$how.live" | grep -E '^(alloc_in_c|jit_[a-z]+|jd_[a-z]+|call_through_jit|main) ')
		exp="alloc_in_c [jit_tramp]
$slot [jit]
call_through_jit [jit_tramp]
main [jit_tramp]"
		[ "$got" = "$exp" ] || fail "$how: stack through $slot: expected
$exp
got
$got"
	done
	! grep -q jit_stale "$W/$how.live" || fail "$how: a stack names slot B by its stale name"
	log "$how: the JIT frames named from the target's own $file"
done
echo "ok: a JIT target in its own mount and pid namespaces: its frames named from its /tmp/perf-1.map and jit-1.dump"
