#!/bin/bash
# t_cover_mmap: a program that leaks only through anonymous mmap.  The leak
# shows up as kind mmap (buckets.kind = 1) under leak_mmap_here, exactly
# with --interval 1, within 25% at the default interval (512 KiB), and
# nothing of it is counted as heap.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all cover_alloc

# profile N LEN [heapattach options]: leak N mappings of LEN bytes between
# two snapshots; leaves the database in $db.
profile() {
	local n=$1 len=$2
	shift 2
	db=$W/mmap-$RANDOM.db
	start_profiled "mm$n" cover_alloc -q -s 3600 -o "$db" "$@"
	snapshot_now "$db"
	send "$TFD" "mmapleak $n $len"
	wait_line "$TOUT" "^done mmapleak $n $len\$"
	detach_by_signal INT "$pid"
	send "$TFD" quit
	wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "cover_alloc did not exit cleanly ($RC)"
}

profile 100 1048576 -i 1 --block
got=$(live_under "$db" leak_mmap_here mmap)
[ "$got" = "104857600 100" ] || fail "leak_mmap_here (mmap) holds '$got', expected '104857600 100'"
got=$(live_under "$db" leak_mmap_here heap)
[ "$got" = "0 0" ] || fail "leak_mmap_here is counted as heap too: '$got'"
# The same through the raw table: every bucket of leak_mmap_here is kind 1.
kinds=$(sqlite3 "$db" "SELECT DISTINCT b.kind FROM buckets b WHERE b.stack_id IN
        (SELECT sf.stack_id FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
          WHERE f.function = 'leak_mmap_here')")
[ "$kinds" = 1 ] || fail "buckets.kind of leak_mmap_here: '$kinds', expected 1"
log "interval 1: leak_mmap_here 104857600 bytes in 100 mappings, kind mmap: exact"

profile 300 1048576
read -r bytes count < <(live_under "$db" leak_mmap_here mmap)
within 25 "$bytes" 314572800 || fail "leak_mmap_here estimate $bytes is not within 25% of 314572800"
log "default interval: leak_mmap_here estimated $bytes for 314572800 ($(awk -v b="$bytes" 'BEGIN { printf "%+.1f%%", 100 * (b - 314572800) / 314572800 }'))"
echo ok
