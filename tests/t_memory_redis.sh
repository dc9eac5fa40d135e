#!/bin/bash
# t_memory_redis: the memory breakdown on Debian's redis-server, linked with
# libjemalloc (issue 41): jemalloc named, with why its stats are not read,
# the terms add up to RssAnon, no glibc arena made up; skipped if
# redis-server is not installed.  It listens on a unix socket in the test's
# directory only (port 0), saves nothing.
. "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || skip "redis-server is not installed (apt-get install redis-server)"
CHECK=$HA_BUILDDIR/tests/mem_view_check
[ -x "$CHECK" ] || fail "mem_view_check not built: $CHECK"
start_cmd redis redis-server --port 0 --unixsocket "$W/redis.sock" --save '' --appendonly no --dir "$W"
pid=$TPID
wait_for 10 '[ -S "$W/redis.sock" ]' || fail "redis-server did not start: $(cat "$TERR" "$TOUT" | tail -5)"
grep -q libjemalloc "/proc/$pid/maps" || skip "this redis-server is not linked with libjemalloc"
"$CHECK" "$pid" >"$W/redis.view" || fail "mem_view_check on redis-server failed"
sed 's/^/    /' "$W/redis.view"
grep -qxF "allocator jemalloc (not read: its stats need mallctl() called in the target; its memory in other_anon)" "$W/redis.view" ||
	fail "redis-server: allocator line: $(grep allocator "$W/redis.view")"
grep -q '^arena ' "$W/redis.view" && fail "redis-server: a glibc arena was made up"
awk '$1 == "rss_anon" { r = $2 } $1 == "term" { s += $3 } END { exit !(s == r && r > 0) }' "$W/redis.view" ||
	fail "redis-server: the terms do not add up to RssAnon"
check_alive "$pid"
echo "ok: redis-server: jemalloc named as not read, the terms add up"
