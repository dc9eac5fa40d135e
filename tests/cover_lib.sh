# tests/cover_lib.sh -- helpers for the coverage tests of issue 4
# (t_cover_*.sh, t_real_*.sh), on top of lib.sh and profile_lib.sh.

# live_under DB FUNCTION KIND [SNAPSHOT]: "BYTES COUNT" live at SNAPSHOT
# (default: the last one) in the buckets of kind KIND (heap, mmap) whose
# stack has a frame of FUNCTION (exact name, or a LIKE pattern with %).
live_under() {
	local db=$1 fn=$2 kind=$3 snap=${4:-}
	[ -n "$snap" ] || snap='(SELECT max(id) FROM snapshots)'
	sqlite3 -separator ' ' "$db" "
		SELECT CAST(round(coalesce(sum(b.live_bytes), 0)) AS INTEGER),
		       CAST(round(coalesce(sum(b.live_count), 0)) AS INTEGER)
		  FROM bucket_at b
		 WHERE b.snapshot_id = $snap AND b.kind = '$kind'
		   AND b.stack_id IN (SELECT sf.stack_id FROM stack_frames sf
		                        JOIN frames f ON f.id = sf.frame_id
		                       WHERE f.function LIKE '$fn')"
}

# alloc_under DB FUNCTION KIND: "BYTES COUNT" ever allocated (cumulative, at
# the last snapshot) under FUNCTION with kind KIND.
alloc_under() {
	local db=$1 fn=$2 kind=$3
	sqlite3 -separator ' ' "$db" "
		SELECT CAST(round(coalesce(sum(b.alloc_bytes), 0)) AS INTEGER),
		       CAST(round(coalesce(sum(b.alloc_count), 0)) AS INTEGER)
		  FROM bucket_at b
		 WHERE b.snapshot_id = (SELECT max(id) FROM snapshots) AND b.kind = '$kind'
		   AND b.stack_id IN (SELECT sf.stack_id FROM stack_frames sf
		                        JOIN frames f ON f.id = sf.frame_id
		                       WHERE f.function LIKE '$fn')"
}

# require_cmd CMD PACKAGE: skip (never pass) when CMD is not installed.
require_cmd() {
	command -v "$1" >/dev/null 2>&1 ||
		skip "$1 is not installed (Debian package $2; build-aux/setup installs it)"
}

# within PCT VALUE TRUTH: |VALUE - TRUTH| <= PCT% of TRUTH.
within() {
	awk -v p="$1" -v v="$2" -v t="$3" 'BEGIN { e = (v - t) / t; if (e < 0) e = -e; exit !(e <= p / 100) }'
}

# now_s: seconds since the epoch, with fractions.
now_s() { date +%s.%N; }

# live_in_module DB MODULE-LIKE KIND SNAPSHOT: "BYTES COUNT" live at SNAPSHOT
# in the buckets of kind KIND whose stack has a frame in a module whose path
# is LIKE MODULE-LIKE.
live_in_module() {
	local db=$1 mod=$2 kind=$3 snap=$4
	sqlite3 -separator ' ' "$db" "
		SELECT CAST(round(coalesce(sum(b.live_bytes), 0)) AS INTEGER),
		       CAST(round(coalesce(sum(b.live_count), 0)) AS INTEGER)
		  FROM bucket_at b
		 WHERE b.snapshot_id = $snap AND b.kind = '$kind'
		   AND b.stack_id IN (SELECT sf.stack_id FROM stack_frames sf
		                        JOIN frames f ON f.id = sf.frame_id
		                        JOIN modules m ON m.id = f.module_id
		                       WHERE m.path LIKE '$mod')"
}

# snapshot_id DB N: the id of the N-th snapshot (1-based).
snapshot_id() {
	sqlite3 "$1" "SELECT id FROM snapshots ORDER BY id LIMIT 1 OFFSET $(($2 - 1))"
}
