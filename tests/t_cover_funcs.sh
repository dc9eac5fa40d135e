#!/bin/bash
# t_cover_funcs: every allocation function heapattach hooks (malloc, calloc,
# realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc,
# pvalloc, C++ new / new[] / nothrow / aligned, anonymous mmap and mremap)
# shows up under its own caller with exactly the bytes allocated
# (--interval 1 --block), each counted once (operator new -> malloc is one
# allocation), mappings as kind mmap; after every block is released with its
# matching deallocator (free, sized / aligned / nothrow delete, munmap of the
# tail then of the head) nothing is live.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all cover_alloc

N=50
db=$W/funcs.db
start_profiled cover cover_alloc -q -i 1 --block -s 3600 -o "$db"
send "$TFD" "all $N"
wait_line "$TOUT" "^done all $N\$"
snapshot_now "$db"
send "$TFD" release
wait_line "$TOUT" '^done release$'
snapshot_now "$db"
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "cover_alloc did not exit cleanly ($RC)"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check failed"

first=$(snapshot_id "$db" 1)
errors=0
check() {  # FUNCTION KIND SIZE
	local fn=$1 kind=$2 size=$3 got want
	got=$(live_under "$db" "$fn" "$kind" "$first")
	want="$((N * size)) $N"
	if [ "$got" = "$want" ]; then
		log "$fn ($kind): live $got: exact"
	else
		echo "MISMATCH: $fn ($kind): live '$got', expected '$want'"
		errors=$((errors + 1))
	fi
	got=$(live_under "$db" "$fn" "$kind")
	if [ "$got" != "0 0" ]; then
		echo "MISMATCH: $fn ($kind): still live after release: '$got'"
		errors=$((errors + 1))
	fi
}
check use_malloc heap 1088
check use_calloc heap 1152
check use_realloc heap 1216
check use_reallocarray heap 1280
check use_posix_memalign heap 1344
check use_aligned_alloc heap 1408
check use_memalign heap 1472
check use_valloc heap 1536
check use_pvalloc heap 4096
check use_new heap 1600
check use_new_array heap 1664
check use_new_nothrow heap 1728
check use_new_aligned heap 1792
check use_new_array_aligned_nothrow heap 1856
check use_mmap mmap 65536
check use_mremap mmap 32768
# Counted once: nothing under the C++ callers is counted twice (as new and
# as the malloc inside it), and no mapping is counted as heap.
for fn in use_new use_new_array use_new_nothrow use_new_aligned use_new_array_aligned_nothrow; do
	got=$(alloc_under "$db" "$fn" heap)
	[ "${got#* }" = "$N" ] || { echo "MISMATCH: $fn allocated ${got#* } times, expected $N"; errors=$((errors + 1)); }
done
got=$(alloc_under "$db" use_mmap heap)
[ "$got" = "0 0" ] || { echo "MISMATCH: use_mmap has heap allocations: $got"; errors=$((errors + 1)); }
# operator new is a frame of the C++ stacks (the malloc inside it sampled).
n=$(sqlite3 "$db" "SELECT count(*) FROM frames WHERE function LIKE 'operator new%'")
[ "$n" -ge 1 ] || { echo "MISMATCH: no operator new frame"; errors=$((errors + 1)); }
sqlite3 "$db" "SELECT k.name, count(*) FROM session_stacks s JOIN kinds k ON k.id = s.kind GROUP BY k.name" |
	sed 's/^/    buckets per kind: /'
[ "$errors" = 0 ] || fail "$errors mismatches"
echo ok
