#!/bin/bash
# t_hostile_ring: a target that writes over its own ring mid-session
# (tests/targets/ring_scribble): records forged with the right stamps and
# wrong lengths, types and stack lengths; prod and cons moved ahead, behind
# and off alignment; the header's fields; then random bytes and words all
# over the ring while a thread allocates; then a flood of millions of
# "modules changed" records.  With --interval 1 --block (every
# allocation is a record, and the target waits rather than drop):
#  - the target never hangs (each command answers in bounded time), and
#    its output is exactly that of a run without heapattach;
#  - the attacher neither crashes nor hangs, detaches cleanly, and its
#    summary counts the corrupt records (each forged one exactly once) and
#    the positions it put back;
#  - the samples around the forged records are all there (100 before, the
#    6 between), and so are the 1000 made after the chaos;
#  - no control byte reaches heapattach's output, and every heapdiff report
#    of the profile is valid.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
require_all ring_scribble

FORGED="len7 len0 huge type stacklen small"
POSITIONS="cons_ahead prod_misalign prod_ahead prod_behind header"

# script: the commands, the same for both runs, each waited for.
script() {
	local k
	target_cmd "leak 100 before"
	for k in $FORGED; do
		target_cmd "forge $k"
		target_cmd "leak 1 between"
	done
	[ "$1" = profiled ] && check_counts
	for k in $POSITIONS; do
		target_cmd "pos $k" 20
		# (The collector repairs the header at its next drain; let it
		# before the next malloc, which draws the next sample's
		# countdown with the interval there: one of 2^39 would leave
		# the program unsampled for good.)
		[ "$1" = profiled ] && [ "$k" = header ] && snapshot_now "$db"
		target_cmd "leak 10 between" 20
	done
	before=$(grep -c '^done chaos' "$TOUT")
	send "$TFD" "chaos 20000 42"
	wait_for 60 '[ "$(grep -c "^done chaos" "$TOUT")" -gt "$before" ]' ||
		fail "the target did not finish its chaos in 60 s (blocked in the agent?)"
	[ "$1" = profiled ] && { snapshot_now "$db"; snapshot_now "$db"; }
	# Millions of "modules changed" records (each asked for a read of
	# the maps: the collector took 49 s for such a flood).
	target_cmd "flood 3000000" 60
	[ "$1" = profiled ] && snapshot_now "$db"
	target_cmd "leak 1000 after"
	[ "$1" = profiled ] && wait_objects after 1000
	send "$TFD" quit
	wait_exit "$TPID" 20
	[ "$RC" = 0 ] || fail "ring_scribble exited $RC"
}

# objects WHERE: live objects of leak_WHERE in the last snapshot.
objects() {
	"$HA_BUILDDIR/src/heapdiff" --bytes -n 0 "$db" last >"$W/live" 2>&1 || return 1
	heapdiff_rows "$W/live" | awk -v f="leak_$1" '$3 == f { print $2 }' | head -n 1
}

# wait_objects WHERE N: snapshots until leak_WHERE holds N objects (a
# corrupt record is got past at once when a later one is published, else
# within a second).
wait_objects() {
	local i
	for ((i = 0; i < 30; i++)); do
		snapshot_now "$db"
		[ "$(objects "$1")" = "$2" ] && break
		sleep 0.5
	done
	[ "$(objects "$1")" = "$2" ] ||
		fail "leak_$1 holds $(objects "$1") objects in the last snapshot, expected $2"
	log "leak_$1: $2 objects, every one"
}

check_counts() {
	wait_objects between 6
	[ "$(objects before)" = 100 ] || fail "leak_before holds $(objects before) objects, expected 100"
}

# 1. Without heapattach: what the program prints.
start_target plain ring_scribble
script plain
grep -v '^ready' "$TOUT" >"$W/expected"
grep -q 'no ring' "$TERR" || fail "the plain run found a ring"

# 2. Profiled.
db=$W/ring.db
start_target scribbled ring_scribble
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
wait_ready "$pid" ring_scribble
script profiled
grep -q '^ring [0-9]* of [1-9][0-9]* at ' "$TERR" || fail "the target did not find its ring: $(head -n 3 "$TERR")"
! grep -q 'ring full\|no ring' "$TERR" || fail "the target could not forge: $(grep 'ring full\|no ring' "$TERR" | head -n 1)"
grep -v '^ready' "$TOUT" | cmp -s - "$W/expected" ||
	fail "the profiled target printed otherwise than the plain one: $(grep -v '^ready' "$TOUT" | diff - "$W/expected" | head -n 5)"
log "the target's output is the same as without heapattach"

# The target exited: heapattach says so, writes its last snapshot, exits 0.
wait_for 20 '! is_alive "$HAPID"' || fail "heapattach did not exit after its target"
wait "$HAPID"
rc=$?
sed 's/^/    /' "$HA_ERR"
[ "$rc" = 0 ] || fail "heapattach exited $rc"
grep -q "^heapattach: target $pid exited$" "$HA_ERR" || fail "no 'target exited' line"
no_controls "$HA_ERR" "heapattach's stderr"
no_controls "$HA_OUT" "heapattach's stdout"
line=$(grep -E '^heapattach: [0-9]+ corrupt records rejected, [0-9]+ ring positions put back' "$HA_ERR") ||
	fail "the summary does not say what was rejected"
read -r corrupt repairs < <(sed -E 's/^heapattach: ([0-9]+) corrupt records rejected, ([0-9]+) ring positions put back.*/\1 \2/' <<<"$line")
[ "$corrupt" -ge 6 ] || fail "$corrupt corrupt records counted, expected at least the 6 forged"
[ "$repairs" -ge 5 ] || fail "$repairs ring positions put back, expected at least the 5 moved"
log "$line"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check failed"
check_reports "$db" ring
echo ok
