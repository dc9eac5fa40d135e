#!/bin/bash
# t_profile_unbias: estimates are unbiased across size classes.  A program
# allocates (and frees) 128 MiB in each of 32 B, 1 KiB, 32 KiB and 1 MiB
# blocks, each from its own function; sampled at a 64 KiB interval, the
# estimated allocated bytes of each class are within 10% of 128 MiB.  (--block:
# the bursts of this program outrun the ring; drops are a separate matter.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all size_classes

db=$W/sizes.db
start_profiled sizes size_classes -q -i 64K --block -s 3600 -o "$db"
send "$TFD" go
wait_line "$TOUT" '^done [0-9]+$'
total=$(sed -n 's/^done //p' "$TOUT")
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "size_classes did not exit cleanly ($RC)"

# Allocated bytes per leaf function at the last snapshot (SQL view).
sqlite3 "$db" "SELECT f.function, sum(b.alloc_bytes) FROM bucket_at b
	JOIN stack_frames sf ON sf.stack_id = b.stack_id AND sf.pos = 0
	JOIN frames f ON f.id = sf.frame_id
	WHERE b.snapshot_id = (SELECT max(id) FROM snapshots)
	GROUP BY f.function" >"$W/classes" || fail "query failed"
cat "$W/classes" | sed 's/^/    /'
for fn in alloc_32b alloc_1k alloc_32k alloc_1m; do
	est=$(awk -F'|' -v f="$fn" '$1 == f { print $2 }' "$W/classes")
	[ -n "$est" ] || fail "no estimate for $fn"
	within 10 "$est" "$total" ||
		fail "$fn: estimated $est bytes allocated, truth $total: more than 10% off"
	log "$fn: $(awk -v e="$est" -v t="$total" 'BEGIN { printf "%+.2f%%", 100 * (e - t) / t }')"
done
echo ok
