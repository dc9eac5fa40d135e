#!/bin/bash
# t_memory_off: --no-memory-view (issue 41): no breakdown of RssAnon at any
# snapshot (heapdiff --memory says there is none, in one line), the heap
# profile as usual; without it, -v says what the allocator's view cost
# per snapshot and per arena walked.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all mem_truth
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
HD=$HA_BUILDDIR/src/heapdiff

start_target mt mem_truth
pid=$TPID
target_cmd "threads 4 8"
target_cmd "holes 16"
wait_syscall "$pid" "$pid" "$NR_READ"
run_ha -q -s 0 -d 1 --no-memory-view -o "$W/off.db" "$pid"
[ "$HA_RC" = 0 ] || fail "heapattach --no-memory-view exited $HA_RC"
n=$(q "$W/off.db" "SELECT count(*) FROM snapshots")
[ "$n" -ge 2 ] || fail "--no-memory-view: $n snapshots"
[ "$(q "$W/off.db" "SELECT count(*) FROM snapshots WHERE memory_rss_anon_bytes IS NOT NULL")" = 0 ] ||
	fail "--no-memory-view: a snapshot has a memory breakdown"
[ "$(q "$W/off.db" "SELECT count(*) FROM memory_terms") $(q "$W/off.db" "SELECT count(*) FROM memory_arenas")" = "0 0" ] ||
	fail "--no-memory-view: memory rows were written"
"$HD" --memory "$W/off.db" >"$W/off.out" 2>&1 && fail "heapdiff --memory on a file without breakdowns succeeded"
[ "$(wc -l <"$W/off.out")" = 1 ] && grep -q "has no memory breakdown" "$W/off.out" ||
	fail "heapdiff --memory without breakdowns: $(cat "$W/off.out")"
echo "ok: --no-memory-view: $n snapshots, none with a breakdown"

run_ha -q -v -s 0 -d 1 -o "$W/on.db" "$pid"
[ "$HA_RC" = 0 ] || fail "heapattach exited $HA_RC"
line=$(grep "the allocator's view at" "$HA_ERR") || fail "-v: no line of what the allocator's view cost"
read -r views each arenas per <<<"$(sed -n 's/.* at \([0-9]*\) snapshots: \([0-9.]*\) ms each, of which [0-9.]* ms walking \([0-9.]*\) arenas (\([0-9]*\) us per arena)/\1 \2 \3 \4/p' <<<"$line")"
[ -n "$per" ] || fail "-v: cannot read '$line'"
[ "$views" = "$(q "$W/on.db" "SELECT count(*) FROM snapshots WHERE memory_rss_anon_bytes IS NOT NULL")" ] ||
	fail "-v says $views views, the file holds another count"
awk -v a="$arenas" 'BEGIN { exit !(a == 5) }' || fail "-v: $arenas arenas walked per view, not 5 (main and 4 threads')"
echo "ok: -v: $line"
check_alive "$pid"
echo ok
