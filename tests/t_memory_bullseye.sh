#!/bin/bash
# run-all-timeout: 900
# t_memory_bullseye: the memory breakdown (issue 41) under glibc 2.31: the
# Debian 11 root of container_lib.sh (made once by debootstrap and cached)
# runs its python3.9 on tests/targets/mem_truth.py, chrooted.  Read from
# the host: glibc's arenas found (its heap_info of 32 bytes, before 2.35's
# 48), the main arena and one per thread, each walked whole; the terms add
# up to RssAnon; the pinned holes within 30% of the truth.  Then
# heapattach --trim: the agent (through a memfd: the root is not ours)
# calls glibc 2.31's malloc_trim on its thread, and RssAnon drops by what
# was predicted, within 25%.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all
CHECK=$HA_BUILDDIR/tests/mem_view_check
[ -x "$CHECK" ] || fail "mem_view_check not built: $CHECK"
debian_root bullseye
[ -x "$ROOT/usr/bin/python3.9" ] || fail "no python3.9 in $ROOT"
SCRIPT=$(cat "$HA_SRCDIR/tests/targets/mem_truth.py") || fail "no tests/targets/mem_truth.py"
MiB=1048576

start_cmd py chroot "$ROOT" /usr/bin/python3.9 -u -c "$SCRIPT"
wait_line "$TOUT" '^ready pid=[0-9]+$' 30
pid=$TPID
grep -q 'libc-2\.31\.so' "/proc/$pid/maps" || fail "precondition: python does not run on the root's glibc 2.31"
target_cmd "threads 4 8"
target_cmd "holes 16"
target_cmd "empty 32"
pinned_truth=$(sed -n 's/^truth pinned=//p' "$TOUT")
"$CHECK" "$pid" >"$W/view" || fail "mem_view_check failed"
sed 's/^/    /' "$W/view"
grep -qx 'allocator glibc' "$W/view" || fail "glibc 2.31 not read"
[ "$(grep -c '^arena .* main=0 .*complete=1$' "$W/view")" -ge 4 ] || fail "not 4 thread arenas walked whole"
[ "$(grep -c '^arena .* main=1 .*complete=1$' "$W/view")" = 1 ] || fail "the main arena not walked whole"
awk '$1 == "rss_anon" { r = $2 } $1 == "term" { s += $3; if ($2 == "unexplained") u = $3 }
	END { exit !(s == r && (u < 0 ? -u : u) <= r * 0.05 + 4 * 1048576) }' "$W/view" ||
	fail "the terms do not add up, or unexplained is above 5% + 4 MiB"
pinned=$(awk '$2 == "allocator_free_pinned" { print $3 }' "$W/view")
awk -v g="$pinned" -v w="$pinned_truth" 'BEGIN { exit !(g >= w * 0.7 && g <= w * 1.3) }' ||
	fail "pinned $pinned not within 30% of $pinned_truth"
log "pinned $pinned (truth $pinned_truth)"
echo "ok: glibc 2.31's arenas read, the terms add up, pinned within 30%"

run_ha --trim "$pid"
[ "$HA_RC" = 0 ] || fail "--trim exited $HA_RC"
read -r gave pred <<<"$(sed -n 's/.*gave back \(-*[0-9.]*\) MiB (predicted \([0-9.]*\) MiB.*/\1 \2/p' "$HA_ERR")"
[ -n "$pred" ] || fail "--trim: no 'gave back ... (predicted ...)' line"
awk -v g="$gave" -v p="$pred" 'BEGIN { exit !(p >= 16 && g >= p * 0.75 && g <= p * 1.25) }' ||
	fail "--trim gave back $gave MiB for $pred MiB predicted (16 MiB at least, within 25%)"
echo "ok: --trim under glibc 2.31 gave back $gave MiB, predicted $pred MiB"
send "$TFD" quit
wait_line "$TOUT" '^done quit$' 10
echo ok
