#!/bin/bash
# t_stack_refs: samples that name their stack (a stack reference: the
# attacher's cache entry, published in the ring, that the agent found
# holding for its live stack) instead of copying it book the same call
# paths as copies do.  leak_cmd's "paths" keeps N, 2N, 3N, 4N blocks from
# path_a..path_d: four paths with the same stack length, told apart only by
# their return addresses, competing for the same table slots.  At interval
# 1 with --block every block is sampled: each path's bytes must be exact
# (but for samples the agent reports dropped),
# with references (most samples, -v says how many) and without them
# (--no-stack-refs: every stack copied, none named).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all leak_cmd

N=3000 SIZE=96
# session LABEL ARGS...: the paths under one session; leaves the DB in $db.
session() {
	local label=$1
	shift
	db=$W/$label.db
	start_profiled "$label" leak_cmd -v -q -s 3600 -i 1 --block -o "$db" "$@"
	send "$TFD" "paths $N $SIZE"
	wait_line "$TOUT" "^done paths $N $SIZE" 120
	snapshot_now "$db"
	detach_by_signal INT "$pid"
	send "$TFD" quit
	wait_exit "$pid" 10 || fail "leak_cmd did not exit after quit"
	[ "$RC" = 0 ] || fail "leak_cmd exited $RC"
	# Exact, but for the samples the agent says it dropped (a block whose
	# live-set bucket was full is not sampled, and counted: rare, one in
	# tens of thousands at interval 1); never more, never another size.
	local k=1 dropped short=0
	dropped=$(sed -n 's/^heapattach: the agent took [0-9]* samples, dropped \([0-9]*\)$/\1/p' "$HA_ERR")
	dropped=${dropped:-0}
	for f in path_a path_b path_c path_d; do
		read -r bytes count < <(live_under "$db" "$f" heap)
		[ -n "$count" ] && [ "$count" -le $((k * N)) ] && [ "$bytes" = $((count * SIZE)) ] ||
			fail "$label: $f holds $count blocks, $bytes bytes; expected $((k * N)), $((k * N * SIZE))"
		short=$((short + k * N - count))
		k=$((k + 1))
	done
	[ "$short" -le "$dropped" ] ||
		fail "$label: $short blocks missing from path_a..path_d, and the agent dropped only $dropped samples"
	named=$(sed -n 's/^heapattach: \([0-9]*\) samples named their stack.*/\1/p' "$HA_ERR")
	samples=$(sed -n 's/^heapattach: \([0-9]*\) samples,.*/\1/p' "$HA_ERR")
	grep -q ' 0 unwind failures' "$HA_ERR" || fail "$label: unwind failures: $(grep 'unwind failures' "$HA_ERR")"
	log "$label: path_a..path_d exact ($N..$((4 * N)) blocks); ${named:-0} of $samples samples named their stack"
}

session refs
[ -n "$named" ] && [ "$named" -gt $((samples / 2)) ] ||
	fail "only ${named:-no} of $samples samples named their stack"
session copies --no-stack-refs
[ -z "$named" ] || [ "$named" = 0 ] || fail "--no-stack-refs: still $named samples named their stack"
echo ok
