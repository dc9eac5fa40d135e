#!/bin/bash
# t_profile_jitdump: JIT frames named from a jitdump file.
# tests/targets/jit_tramp jitdump writes its names as code-load records into
# jit-PID.dump in its working directory (not /tmp: found through its
# mapping, as node --perf-prof's is) and no perf map.  Asserted: the stack
# through each slot is alloc_in_c, the slot's name [jit], call_through_jit,
# main; a slot loaded again under a new name before it is used shows the
# new one, never the old.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all

db=$W/jd.db
start_cmd jd env -C "$W" "$TARGETS/jit_tramp" jitdump
wait_target_ready
pid=$TPID
[ -f "$W/jit-$pid.dump" ] && [ ! -e "/tmp/perf-$pid.map" ] || fail "jit_tramp made no jitdump, or a perf map"
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
wait_ready "$pid" jit_tramp
jit_go_name_go jd_fresh
finish_live "$pid" "$pid" jit_tramp "$db" "$W/live"
for slot in jit_first jd_fresh; do
	got=$(stack_of "$slot" "$W/live" | grep -E '^(alloc_in_c|jit_[a-z]+|jd_[a-z]+|call_through_jit|main) ')
	exp="alloc_in_c [jit_tramp]
$slot [jit]
call_through_jit [jit_tramp]
main [jit_tramp]"
	[ "$got" = "$exp" ] || fail "stack through $slot: expected
$exp
got
$got"
done
! grep -q jit_stale "$W/live" || fail "a stack names slot B by its first, replaced load"
echo ok
