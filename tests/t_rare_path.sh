#!/bin/bash
# t_rare_path: the leak is named when its call path is rare and shares its
# inner frames with hot ones, with stack references on (the default).
# rare_path runs 4,096 hot call paths that allocate and free, and one rare
# path that keeps what it allocates, whose innermost 14 frames are a hot
# path's (tests/targets/rare_path.c).  At 4 KiB the attacher publishes
# thousands of references a second while the rare path's stays in its
# slot: every sample naming it must resolve (it did not once 4,096 later
# publications had gone by, and the leak stood as one frameless row).  At
# the default interval, the same shape with few samples.  Each session:
# the first row is the rare path (rare_step on its stack), within 25% of
# what the target says it kept, no row without frames, and no sample
# that could not be unwound.  Then a session where nothing unwinds
# (HEAPATTACH_TEST_NO_UNWIND): its samples are booked under the program's
# call of malloc (in1), followed by "(stack not unwound past here)".
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all rare_path
HD=$HA_BUILDDIR/src/heapdiff

# session LABEL MS ARGS...: run the loop for MS ms under one session;
# leaves the DB in $db, the target's kept bytes in $kept, heapdiff's text
# in $out.
session() {
	local label=$1 ms=$2
	shift 2
	db=$W/$label.db
	start_profiled "$label" rare_path -v -q -o "$db" "$@"
	target_cmd "run $ms" $((ms / 1000 + 60))
	kept=$(sed -n 's/^done run \([0-9]*\)$/\1/p' "$TOUT" | tail -n 1)
	detach_by_signal INT "$pid"
	send "$TFD" quit
	wait_exit "$pid" 10 || fail "rare_path did not exit after quit"
	out=$W/$label.txt
	"$HD" --bytes "$db" >"$out" 2>"$W/hd.err" || fail "heapdiff $db: $(cat "$W/hd.err")"
}

# named_first LABEL: the checks on the session just run.
named_first() {
	local label=$1 first bytes
	heapdiff_rows "$out" >"$W/rows"
	first=$(head -n 1 "$W/rows")
	bytes=${first%% *}
	bytes=${bytes#+}
	log "$label: first row $first; the target kept $kept bytes"
	stack_of rare_step "$out" >"$W/stack"
	[ "$(awk '{print $1; exit}' "$W/stack")" = in1 ] ||
		fail "$label: no stack with rare_step, or its leaf is not in1: $(head -n 3 "$W/stack")"
	# The first row's stack is the one holding rare_step.
	awk '/ stack [0-9]+$/ { n++ } n == 1 && /rare_step/ { ok = 1 } END { exit !ok }' "$out" ||
		fail "$label: the first row is not the rare path: $(sed -n '/STACK/,/^$/p' "$out" | head -n 8)"
	within 25 "$bytes" "$kept" || fail "$label: the rare path holds $bytes bytes, the target kept $kept"
	! grep -q '(no frames' "$out" || fail "$label: a row without frames: $(grep -B1 '(no frames' "$out")"
	grep -q ' 0 unwind failures' "$HA_ERR" ||
		fail "$label: $(grep 'unwind failures' "$HA_ERR"); $(grep 'stack references' "$HA_ERR")"
}

# --block: every 4 KiB sample reaches the attacher however busy the
# machine (no interval raised for a full ring), so that thousands of
# references are published.
session fast 8000 -i 4096 --block
named_first fast
named=$(sed -n 's/^heapattach: \([0-9]*\) samples named their stack.*/\1/p' "$HA_ERR")
published=$(sed -n 's/.*(\([0-9]*\) stack references published.*/\1/p' "$HA_ERR")
log "4 KiB: $named samples named their stack, $published references published"
# The shape that lost the samples: references published by the thousand.
[ "${published:-0}" -gt 4096 ] && [ "${named:-0}" -gt 1000 ] ||
	fail "4 KiB: only ${published:-no} references published, ${named:-no} samples named their stack"

session default 25000
named_first default

HEAPATTACH_TEST_NO_UNWIND=1 session none 2000 -i 65536
grep -q "samples, [0-9]* callstacks, [1-9][0-9]* unwind failures" "$HA_ERR" ||
	fail "no unwind failures counted with HEAPATTACH_TEST_NO_UNWIND: $(grep 'unwind failures' "$HA_ERR")"
grep -q '^note: [1-9][0-9]* samples were not unwound' "$out" || fail "heapdiff does not say how many samples were not unwound"
after=$(awk '/^ +in1  / { getline; sub(/^ +/, ""); print; exit }' "$out")
[ "$after" = "(stack not unwound past here)" ] ||
	fail "the leaf of a sample not unwound (in1) is followed by '$after', not the marker"
! grep -q '(no frames' "$out" || fail "a row without frames where the leaf was known"
echo ok
