#!/bin/bash
# t_memory_redis: the memory breakdown on Debian's redis-server, linked with
# libjemalloc (issue 41), against redis's own figures: it reads jemalloc's
# stats.allocated and stats.active itself (INFO memory: allocator_allocated,
# allocator_active), which is the truth here.  With 200,000 keys of 512
# bytes (DEBUG POPULATE), at a snapshot of heapattach: jemalloc read by the
# agent (mallctl on its thread), the live terms within 10% of
# allocator_allocated, pinned within 25% (+ 1 MiB) of allocator_active -
# allocator_allocated, the terms adding up to RssAnon with unexplained
# within 5% + 4 MiB, no glibc arena made up, the arenas in json.  After
# 600 values of 64 KiB are made and deleted, --trim (jemalloc's purge of
# every arena on the agent's thread) gives back what it predicted, within
# 25% + 2 MiB (of the 37.5 MiB freed, 0 to 9 MiB were still dirty here:
# redis's jemalloc, with its background thread, purges most of it by
# itself first).  Skipped if
# redis-server is not installed.  It listens on a unix socket in the test's
# directory only (port 0), saves nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
command -v redis-server >/dev/null || skip "redis-server is not installed (apt-get install redis-server)"
command -v redis-cli >/dev/null || skip "redis-cli is not installed (apt-get install redis-tools)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
CHECK=$HA_BUILDDIR/tests/mem_view_check
[ -x "$CHECK" ] || fail "mem_view_check not built: $CHECK"
start_cmd redis redis-server --port 0 --unixsocket "$W/redis.sock" --save '' --appendonly no --dir "$W" \
	--enable-debug-command local
pid=$TPID
wait_for 10 '[ -S "$W/redis.sock" ]' || fail "redis-server did not start: $(cat "$TERR" "$TOUT" | tail -5)"
grep -q libjemalloc "/proc/$pid/maps" || skip "this redis-server is not linked with libjemalloc"
rc() { redis-cli -s "$W/redis.sock" "$@" || fail "redis-cli $* failed"; }
[ "$(rc DEBUG POPULATE 200000 key 512)" = OK ] || fail "DEBUG POPULATE refused"
info() { rc INFO memory | tr -d '\r' | sed -n "s/^$1://p"; }

# From outside alone: named as not read, the terms add up.
"$CHECK" "$pid" >"$W/redis.view" || fail "mem_view_check on redis-server failed"
grep -qxF "allocator jemalloc (not read: its stats need mallctl() called in the target; its memory in other_anon)" "$W/redis.view" ||
	fail "redis-server: allocator line from outside: $(grep allocator "$W/redis.view")"
grep -q '^arena ' "$W/redis.view" && fail "redis-server: a glibc arena was made up"

# At a snapshot: read by the agent, against redis's own figures.
alloc0=$(info allocator_allocated)
active0=$(info allocator_active)
db=$W/redis.db
start_ha -q -s 0 -o "$db" "$pid"
wait_ready "$pid" redis-server
snapshot_now "$db"
alloc1=$(info allocator_allocated)
active1=$(info allocator_active)
kill -INT "$HAPID"
wait "$HAPID" || fail "heapattach exited $? on SIGINT: $(tail -3 "$HA_ERR")"
q() { sqlite3 -batch "$db" "$@" || fail "sqlite3 failed: $*"; }
sid=$(q "SELECT id FROM snapshots WHERE reason = 'signal' AND memory_rss_anon_bytes IS NOT NULL")
[ -n "$sid" ] || fail "no snapshot has a memory breakdown"
q -header -column "SELECT term, bytes FROM memory_terms WHERE snapshot_id = $sid" | sed 's/^/    /'
a=$(q "SELECT memory_allocator FROM snapshots WHERE id = $sid")
log "allocator: $a; redis: allocator_allocated $alloc0 .. $alloc1, allocator_active $active0 .. $active1"
case $a in "jemalloc (read by mallctl: "*) ;; *) fail "allocator line: $a" ;; esac
term() { q "SELECT bytes FROM memory_terms WHERE snapshot_id = $sid AND term = '$1'"; }
rss=$(q "SELECT memory_rss_anon_bytes FROM snapshots WHERE id = $sid")
sum=$(q "SELECT sum(bytes) FROM memory_terms WHERE snapshot_id = $sid")
[ "$sum" = "$rss" ] || fail "the terms add up to $sum, not RssAnon $rss"
unexp=$(term unexplained)
awk -v u="$unexp" -v r="$rss" 'BEGIN { if (u < 0) u = -u; exit !(u <= 0.05 * r + 4 * 1048576) }' ||
	fail "unexplained $unexp of RssAnon $rss (more than 5% + 4 MiB)"
live=$(($(term live_heap_sampled) + $(term live_heap_before_attach)))
awk -v g="$live" -v w="$alloc1" 'BEGIN { exit !(g >= 0.9 * w && g <= 1.1 * w) }' ||
	fail "live $live, not within 10% of redis's allocator_allocated $alloc1"
pinned=$(term allocator_free_pinned)
awk -v g="$pinned" -v w=$((active1 - alloc1)) 'BEGIN { exit !(g >= 0.75 * w - 1048576 && g <= 1.25 * w + 1048576) }' ||
	fail "pinned $pinned, not within 25% + 1 MiB of redis's allocator_active - allocator_allocated $((active1 - alloc1))"
log "live $live for $alloc1 (redis's allocator_allocated); pinned $pinned for $((active1 - alloc1))"
"$HA_BUILDDIR/src/heapdiff" --memory -f json "$db" | python3 -c '
import json, sys
a = json.load(sys.stdin)["memory"]["arenas"]
assert a and all("allocated_bytes" in x and "dirty_bytes" in x for x in a), a' ||
	fail "no jemalloc arenas in heapdiff --memory -f json"

# 600 values of 64 KiB (jemalloc's large blocks) made and deleted: their
# pages are dirty until jemalloc purges them (over 10 s): --trim does now.
[ "$(rc DEBUG POPULATE 600 big 65536)" = OK ] || fail "DEBUG POPULATE big refused"
rc EVAL "for i = 0, 599 do redis.call('DEL', 'big:' .. i) end" 0 >/dev/null
run_ha --trim "$pid"
[ "$HA_RC" = 0 ] || fail "--trim exited $HA_RC: $(tail -2 "$HA_ERR")"
sed 's/^/    /' "$HA_ERR"
read -r gave pred <<<"$(sed -n 's/.*gave back \(-*[0-9.]*\) MiB (predicted \([0-9.]*\) MiB.*/\1 \2/p' "$HA_ERR")"
[ -n "$pred" ] || fail "--trim: no 'gave back ... (predicted ...)' line"
awk -v g="$gave" -v p="$pred" 'BEGIN { exit !(g >= 0.75 * p - 2 && g <= 1.25 * p + 2) }' ||
	fail "--trim gave back $gave MiB for $pred MiB predicted (not within 25% + 2 MiB)"
check_alive "$pid"
echo "ok: redis-server: jemalloc read (live $live for $alloc1 allocated), --trim gave back $gave MiB for $pred MiB predicted"
