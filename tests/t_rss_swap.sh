#!/bin/bash
# t_rss_swap: with swap on (a swap file made for the test, removed after),
# pages of an attributed call path that are swapped out (MADV_PAGEOUT) stop
# counting as resident and count as kind swap; read back in (major faults,
# not sampled), they count as resident again; the snapshots carry VmSwap.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all touch_pages
require_root
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
command -v mkswap >/dev/null && command -v swapon >/dev/null || skip "no mkswap/swapon"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
MiB=1048576

# A swap file outside $W (which may be on tmpfs, where swapon refuses).
sw=$(mktemp /var/tmp/ha-t_rss_swap.XXXXXX) || skip "cannot make a file in /var/tmp"
at_exit "swapoff '$sw'; rm -f '$sw'"
{ fallocate -l 256M "$sw" && chmod 600 "$sw" && mkswap "$sw" >/dev/null && swapon "$sw"; } 2>"$W/swapon.err" ||
	skip "cannot turn on a swap file here: $(tail -n 1 "$W/swapon.err")"


db=$W/swap.db
start_target tp touch_pages 1
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha --rss -q -s 0 -o "$db" "$pid"
wait_ready "$pid" touch_pages
target_cmd "pageout 64"
swapped=$(awk '/^VmSwap:/ { print $2 * 1024 }' "/proc/$pid/status")
[ "$swapped" -ge $((32 * MiB)) ] || skip "the kernel swapped out only $swapped bytes of 64 MiB (MADV_PAGEOUT)"
snapshot_now "$db"
read -r rss _ < <(live_under "$db" touch_then_pageout rss)
read -r swap _ < <(live_under "$db" touch_then_pageout swap)
log "paged out: rss $((rss / MiB)) MiB, swap $((swap / MiB)) MiB; VmSwap $((swapped / MiB)) MiB"
within 15 "$swap" "$swapped" || fail "swap $swap bytes under touch_then_pageout, VmSwap is $swapped"
[ "$rss" -le $((64 * MiB - swapped + 2 * MiB)) ] || fail "rss $rss bytes under touch_then_pageout after it was paged out"
[ "$(q "$db" "SELECT swap_bytes FROM snapshots ORDER BY id DESC LIMIT 1")" -gt 0 ] || fail "the snapshot has no VmSwap"
target_cmd pagein
snapshot_now "$db"
read -r rss _ < <(live_under "$db" touch_then_pageout rss)
read -r swap _ < <(live_under "$db" touch_then_pageout swap)
log "paged in: rss $((rss / MiB)) MiB, swap $((swap / MiB)) MiB"
within 15 "$rss" $((64 * MiB)) || fail "rss $rss bytes under touch_then_pageout after it was read back"
[ "$swap" -le $((2 * MiB)) ] || fail "swap $swap bytes under touch_then_pageout after it was read back"
kill -INT "$HAPID"
wait "$HAPID" || fail "heapattach exited $?"
send "$TFD" exit
wait_exit "$pid" 20
echo ok
