# tests/cover_lib.sh -- helpers for the coverage tests
# (t_cover_*.sh, t_real_*.sh), on top of lib.sh and profile_lib.sh.

# bucket_sum DB live|alloc KIND SNAPSHOT FRAME-CONDITION: "BYTES COUNT"
# summed at SNAPSHOT over the buckets of kind KIND (heap, mmap, rss, swap)
# whose stack has a frame (f, joined with its module m) meeting
# FRAME-CONDITION.
bucket_sum() {
	local db=$1 what=$2 kind=$3 snap=$4 cond=$5
	sqlite3 -separator ' ' "$db" "
		SELECT CAST(round(coalesce(sum(b.${what}_bytes), 0)) AS INTEGER),
		       CAST(round(coalesce(sum(b.${what}_count), 0)) AS INTEGER)
		  FROM bucket_at b
		 WHERE b.snapshot_id = $snap AND b.kind = '$kind'
		   AND b.stack_id IN (SELECT sf.stack_id FROM stack_frames sf
		                        JOIN frames f ON f.id = sf.frame_id
		                        JOIN modules m ON m.id = f.module_id
		                       WHERE $cond)"
}

LAST_SNAPSHOT='(SELECT max(id) FROM snapshots)'

# live_under DB FUNCTION KIND [SNAPSHOT]: "BYTES COUNT" live at SNAPSHOT
# (default: the last one) in the buckets of kind KIND whose stack has a
# frame of FUNCTION (exact name, or a LIKE pattern with %).
live_under() {
	bucket_sum "$1" live "$3" "${4:-$LAST_SNAPSHOT}" "f.function LIKE '$2'"
}

# alloc_under DB FUNCTION KIND: "BYTES COUNT" ever allocated (cumulative, at
# the last snapshot) under FUNCTION with kind KIND.
alloc_under() {
	bucket_sum "$1" alloc "$3" "$LAST_SNAPSHOT" "f.function LIKE '$2'"
}

# require_cmd CMD PACKAGE: skip (never pass) when CMD is not installed.
require_cmd() {
	command -v "$1" >/dev/null 2>&1 ||
		skip "$1 is not installed (Debian package $2; build-aux/setup installs it)"
}

# now_s: seconds since the epoch, with fractions.
now_s() { date +%s.%N; }

# live_in_module DB MODULE-LIKE KIND SNAPSHOT: "BYTES COUNT" live at SNAPSHOT
# in the buckets of kind KIND whose stack has a frame in a module whose path
# is LIKE MODULE-LIKE.
live_in_module() {
	bucket_sum "$1" live "$3" "$4" "m.path LIKE '$2'"
}

# snapshot_id DB N: the id of the N-th snapshot taken on request (SIGUSR1,
# snapshot_now; 1-based), whatever periodic ones came between.
snapshot_id() {
	sqlite3 "$1" "SELECT id FROM snapshots WHERE reason = 'signal' ORDER BY id LIMIT 1 OFFSET $(($2 - 1))"
}

# py_growth DB S1 S2 TRUTH: the growth of the bytes live under the test
# script's Python function grow_list (heapattach shows a CPython target's
# Python frames in place of its eval loop's) from snapshot S1 to S2,
# logged; fails unless within 25% of TRUTH.  Sets growth.
py_growth() {
	local b1 b2
	read -r b1 _ < <(live_under "$1" grow_list heap "$2")
	read -r b2 _ < <(live_under "$1" grow_list heap "$3")
	growth=$((b2 - b1))
	log "growth under the script's grow_list: $growth bytes (truth: $4)"
	within 25 "$growth" "$4" || fail "growth under the script's grow_list $growth is not within 25% of $4"
}
