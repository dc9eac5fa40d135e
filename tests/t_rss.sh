#!/bin/bash
# t_rss: heapattach --rss attributes resident memory to its first-touch call
# path, at the default period, on tests/targets/touch_pages (sites of known
# size, each its own function):
#   touch 96      fully written by the worker threads     rss 96 MiB +-15%
#   half 96       half written (touch_half)              rss 48 MiB +-15%
#   untouched 96  allocated, never written               rss ~0, heap 96 MiB
#   drop 96       written, then MADV_DONTNEED            rss ~0 now, but it was
#                                                        made resident (alloc)
#   thread 64     written by a thread created after the  rss 64 MiB +-15%
#                 attach (inherited events)
#   sysread 64    first touch inside read(2) (the kernel rss 64 MiB +-15%
#                 writes, the user registers unwind)
# The attributed total is within 10% of the growth of the target's RssAnon;
# the snapshots carry RssAnon and the sample counts; the session records its
# period; detaching leaves no perf event in the target.  Then, where the
# kernel can make transparent huge pages, every fault sampled (--rss-period
# 1): a 64 MiB MADV_HUGEPAGE region (32 faults of 2 MiB) counts 64 MiB.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all touch_pages
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
MiB=1048576



# perf_fds PID: perf event fds the process holds (anon_inode:[perf_event]).
perf_fds() {
	local n=0 f
	for f in /proc/"$1"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:[perf_event]" ] && n=$((n + 1))
	done
	echo "$n"
}

# ---- the default period
db=$W/rss.db
start_target tp touch_pages 2
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha --rss -q -s 0 -o "$db" "$pid"
wait_ready "$pid" touch_pages
anon0=$(rss_anon_bytes "$pid")
target_cmd "touch 96"
target_cmd "half 96"
target_cmd "untouched 96"
target_cmd "drop 96"
target_cmd "thread 64"
target_cmd "sysread 64"
anon1=$(rss_anon_bytes "$pid")
kill -INT "$HAPID"
wait "$HAPID" || fail "heapattach exited $? on SIGINT"
sed 's/^/    /' "$HA_ERR"
grep -q "^heapattach: --rss: [0-9]* page-fault samples (1 in 251 faults), 0 lost; " "$HA_ERR" ||
	fail "no --rss summary line, or samples lost"
[ "$(perf_fds "$pid")" = 0 ] || fail "perf events left in the target after detach"
check_alive "$pid"

[ "$(q "$db" 'SELECT rss_period FROM sessions')" = 251 ] || fail "sessions.rss_period is not 251"
last=$(q "$db" 'SELECT max(id) FROM snapshots')
[ "$(q "$db" "SELECT rss_samples > 0 AND rss_anon_bytes > 0 FROM snapshots WHERE id = $last")" = 1 ] ||
	fail "the last snapshot has no page-fault samples or RssAnon: $(q "$db" "SELECT * FROM snapshots WHERE id = $last")"

check_site() { # FUNCTION KIND MIB PCT [COLUMN]
	local got
	if [ "${5:-}" = alloc_bytes ]; then
		read -r got _ < <(alloc_under "$db" "$1" "$2")
	else
		read -r got _ < <(live_under "$db" "$1" "$2")
	fi
	log "$1: $2 ${5:-live_bytes} $(awk -v b="$got" 'BEGIN { printf "%.1f", b / 1048576 }') MiB, truth $3 MiB"
	within "$4" "$got" $(($3 * MiB)) || fail "$1: $2 ${5:-live_bytes} $got bytes, not within $4% of $3 MiB"
}
check_small() { # FUNCTION KIND MAX_MIB
	local got
	read -r got _ < <(live_under "$db" "$1" "$2")
	log "$1: $2 $(awk -v b="$got" 'BEGIN { printf "%.1f", b / 1048576 }') MiB, truth ~0"
	[ "$got" -le $(($3 * MiB)) ] || fail "$1: $2 $got bytes, expected about 0 (at most $3 MiB)"
}
check_site worker rss 96 15
check_site touch_half rss 48 15
check_small alloc_untouched rss 2
check_site alloc_untouched heap 96 15
check_small touch_then_drop rss 2
check_site touch_then_drop rss 96 15 alloc_bytes
check_site new_thread_touch rss 64 15
check_site kernel_first_touch rss 64 15
total=$(q "$db" "SELECT printf('%.0f', resident_bytes) FROM snapshot_totals WHERE snapshot_id = $last")
log "attributed $((total / MiB)) MiB, RssAnon grew $(((anon1 - anon0) / MiB)) MiB"
within 10 "$total" $((anon1 - anon0)) || fail "attributed $total bytes, RssAnon grew $((anon1 - anon0))"
# Resident memory is not heap: the default totals leave it out.
heap=$(q "$db" "SELECT printf('%.0f', live_bytes) FROM snapshot_totals WHERE snapshot_id = $last")
kinds=$(q "$db" "SELECT printf('%.0f', total(live_bytes)) FROM bucket_at WHERE snapshot_id = $last AND kind IN ('heap', 'mmap')")
[ "$heap" = "$kinds" ] || fail "snapshot_totals.live_bytes $heap is not heap + mmap $kinds"
echo "ok: sites at the default period"

send "$TFD" exit
wait_exit "$pid" 20

# ---- huge pages, every fault sampled
thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
case $thp in
*"[never]"*|"") echo "no transparent huge pages here ($thp): huge-page check not run" ;;
*)
	db=$W/huge.db
	start_target huge touch_pages 1
	pid=$TPID
	wait_syscall "$pid" "$pid" "$NR_READ"
	start_ha --rss-period 1 -q -s 0 -o "$db" "$pid"
	wait_ready "$pid" touch_pages
	target_cmd "huge 64"
	kill -INT "$HAPID"
	wait "$HAPID" || fail "heapattach exited $? on SIGINT"
	sed 's/^/    /' "$HA_ERR"
	huge_kib=$(awk '/^AnonHugePages:/ { s += $2 } END { print s + 0 }' "/proc/$pid/smaps")
	if [ "$huge_kib" -lt 32768 ]; then
		echo "the kernel made only $huge_kib KiB of huge pages: huge-page check not run"
	else
		check_site touch_huge rss 64 5
		echo "ok: a 2 MiB page counts 2 MiB"
	fi
	send "$TFD" exit
	wait_exit "$pid" 20
	;;
esac
echo ok
