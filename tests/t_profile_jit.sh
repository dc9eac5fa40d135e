#!/bin/bash
# t_profile_jit: allocations made through JIT code.  tests/targets/jit_tramp
# calls malloc from C through a trampoline in anonymous executable memory
# (no CFI, a frame pointer) that it names in /tmp/perf-PID.map; its C code
# has no frame pointers.  Asserted: the stacks go through the JIT frame (the
# frame-pointer fallback) up to main, the JIT frame is named from the perf
# map and marked [jit]; a slot renamed before it is used (the map re-read
# when it grew) shows its new name, never the stale one; the detach summary
# and the last snapshot (snapshots.fp_frames) count the frames found by
# frame pointer.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all

db=$W/jit.db
start_target jit jit_tramp
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
wait_ready "$pid" jit_tramp
jit_go_name_go jit_fresh
finish_live "$pid" "$pid" jit_tramp "$db" "$W/live" 30
for slot in jit_first jit_fresh; do
	stack_of "$slot" "$W/live" >"$W/$slot.stack"
	[ -s "$W/$slot.stack" ] || fail "no stack goes through the JIT frame $slot"
	sed 's/^/    /' "$W/$slot.stack"
	exp="alloc_in_c [jit_tramp]
$slot [jit]
call_through_jit [jit_tramp]
main [jit_tramp]"
	got=$(grep -E '^(alloc_in_c|jit_[a-z]+|call_through_jit|main) ' "$W/$slot.stack")
	[ "$got" = "$exp" ] || fail "stack through $slot: expected
$exp
got
$got"
done
! grep -q jit_stale "$W/live" || fail "a stack names the slot by its stale perf-map line"
read -r bytes objects leaf < <(heapdiff_rows "$W/live" | head -n 1)
[ "$bytes" = 3000000 ] || fail "the top stack holds $bytes bytes, expected 3000000 (go B 3000 x 1000)"
fpn=$(sed -n 's/^heapattach: \([0-9]*\) of [0-9]* frames found by frame pointer.*/\1/p' "$HA_ERR")
[ -n "$fpn" ] && [ "$fpn" -ge 5000 ] || fail "frames found by frame pointer: '$fpn', expected >= 5000 (one per sample)"
read -r dfp dfr < <(sqlite3 -separator ' ' "$db" 'SELECT fp_frames, frames FROM snapshots ORDER BY id DESC LIMIT 1')
[ "$dfp" = "$fpn" ] && [ "$dfr" -gt "$dfp" ] ||
	fail "the last snapshot's fp_frames/frames are '$dfp'/'$dfr', expected $fpn of more"
log "$(grep 'frame pointer\|perf map' "$HA_ERR")"
echo ok
