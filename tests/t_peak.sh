#!/bin/bash
# t_peak: the true peak of a session whose target frees everything and exits
# (tests/targets/peak_free: grow_to_peak() grows to a known high-water mark,
# then everything is freed, as an interpreter does at exit).
#  1. Every allocation sampled (-i 1), no periodic snapshot (-s 0): the
#     session ends with a snapshot 'peak' between the baseline and the exit
#     snapshot; heapdiff --peak names grow_to_peak within 10% of the truth;
#     heapdiff DB (attach -> exit: nothing left) says in one line that the
#     heap peaked and names --peak; 'peak' works as a snapshot name; every
#     record was read before the exit snapshot (all allocations and frees
#     counted exactly), three times over.
#  2. The default interval (512 KiB) and the default snapshots: --peak names
#     grow_to_peak within 25%.
#  3. A reader that leaves the peak snapshot out sees the session as without
#     it: the exit snapshot holds every bucket again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all peak_free
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
HD=$HA_BUILDDIR/src/heapdiff
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }

# session LABEL N SIZE [heapattach options]: attach, grow N blocks of SIZE
# bytes, churn, then "exit": the target frees everything and exits at once;
# heapattach must end with it.  Leaves the database in $db.
session() {
	local label=$1 n=$2 size=$3
	shift 3
	db=$W/$label.db
	start_profiled "$label" peak_free -q -o "$db" "$@"
	send "$TFD" "grow $n $size"
	send "$TFD" "churn 20000"
	send "$TFD" exit
	wait_exit "$pid" 30
	[ "$RC" = 0 ] || fail "peak_free exited $RC"
	grep -qx 'done exit' "$TOUT" || fail "peak_free did not finish"
	wait_for 20 '! is_alive "$HAPID"' || fail "heapattach still runs 20 s after the target exited"
	wait "$HAPID"
	local rc=$?
	sed 's/^/    /' "$HA_ERR"
	[ "$rc" = 0 ] || fail "heapattach exited $rc when the target exited"
	grep -qx "heapattach: target $pid exited" "$HA_ERR" || fail "no 'target exited' line"
}

# peak_of DB: "BYTES" live under grow_to_peak at heapdiff --peak.
peak_of() {
	"$HD" --peak --bytes --top 0 "$1" >"$W/peak.out" 2>&1 || fail "heapdiff --peak: $(cat "$W/peak.out")"
	heapdiff_rows "$W/peak.out" | awk '$3 == "grow_to_peak" { print $1 }'
}

N=25600 SIZE=4096
truth=$((N * SIZE))
for round in 1 2 3; do
	session "exact$round" $N $SIZE -i 1 --block -s 0
	reasons=$(q "$db" "SELECT group_concat(reason, ' ') FROM (SELECT reason FROM snapshots ORDER BY id)")
	[ "$reasons" = "attach peak exit" ] || fail "round $round: snapshots '$reasons', expected 'attach peak exit'"
	grep -q "^heapattach: the live heap peaked at [0-9.]* MiB" "$HA_ERR" || fail "heapattach does not report the peak"
	# Every record was read before the exit snapshot: all of the grown
	# blocks (and the churn's) allocated and freed, exactly.
	got=$(bucket_sum "$db" alloc heap "$LAST_SNAPSHOT" "f.function = 'grow_to_peak'")
	[ "$got" = "$truth $N" ] || fail "round $round: grow_to_peak allocated '$got' by the exit snapshot, expected '$truth $N'"
	got=$(q "$db" "SELECT CAST(total(free_count) AS INTEGER) FROM bucket_at b JOIN stack_text t USING (stack_id)
	                WHERE b.snapshot_id = $LAST_SNAPSHOT AND t.leaf_function IN ('grow_to_peak', 'churn')")
	[ "$got" = $((N + 20000)) ] || fail "round $round: $got frees of sampled blocks by the exit snapshot, expected $((N + 20000))"
	got=$(live_under "$db" grow_to_peak heap)
	[ "$got" = "0 0" ] || fail "round $round: grow_to_peak still live at exit: $got"
	bytes=$(peak_of "$db")
	log "round $round: peak under grow_to_peak: $bytes bytes (truth $truth)"
	within 10 "$bytes" "$truth" || fail "round $round: the peak $bytes is not within 10% of $truth"
done
head -n 1 "$W/peak.out"
grep -q "^peak: snapshot [0-9]* holds the highest estimated live memory of session 1 .*kept by heapattach" "$W/peak.out" ||
	fail "heapdiff --peak does not say the peak was kept: $(head -n 1 "$W/peak.out")"
echo "ok: -i 1: the peak names grow_to_peak within 10%, three times; every record read before the exit snapshot"

# The diff since attach is empty: heapdiff says where the memory went.
"$HD" "$db" >"$W/diff" 2>&1 || fail "heapdiff DB: $(cat "$W/diff")"
sed 's/^/    /' "$W/diff"
n=$(grep -c '^note: .*peaked at .* heapdiff --peak shows the peak$' "$W/diff")
[ "$n" = 1 ] || fail "heapdiff DB does not say (in one line) that the heap peaked"
"$HD" --bytes "$db" first peak >"$W/tp" 2>&1 || fail "heapdiff DB first peak: $(cat "$W/tp")"
heapdiff_rows "$W/tp" | awk '$3 == "grow_to_peak" { v = $1 } END { exit !(v + 0 > 0) }' ||
	fail "heapdiff DB first peak does not show grow_to_peak growing"
# Leaving the peak out changes nothing: the exit snapshot holds every bucket.
peak_id=$(q "$db" "SELECT id FROM snapshots WHERE reason = 'peak'")
[ "$(q "$db" "SELECT count(*) FROM buckets p WHERE p.snapshot_id = $peak_id AND NOT EXISTS
              (SELECT 1 FROM buckets e WHERE e.session_id = p.session_id AND e.stack_id = p.stack_id
                 AND e.kind = p.kind AND e.snapshot_id = $LAST_SNAPSHOT)")" = 0 ] ||
	fail "a bucket of the peak snapshot is not written again by the exit snapshot"
echo "ok: heapdiff DB says the heap peaked; 'first peak' works; the exit snapshot rewrites the peak's buckets"

# ---- 2. the default interval and snapshots: a 200 MiB peak.
N=51200
truth=$((N * SIZE))
session default $N $SIZE
bytes=$(peak_of "$db")
log "default interval: peak under grow_to_peak: $bytes bytes (truth $truth); $(head -n 1 "$W/peak.out")"
within 25 "$bytes" "$truth" || fail "the peak $bytes at the default interval is not within 25% of $truth"
echo "ok: the default interval: the peak names grow_to_peak within 25%"
