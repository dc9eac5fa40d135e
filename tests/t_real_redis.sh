#!/bin/bash
# t_real_redis: Debian's redis-server (on jemalloc: checked in its maps and
# logged) on 127.0.0.1 with a non-default port, under redis-benchmark load
# while attached at the default interval: every answer stays right
# (redis-benchmark without errors, redis-cli reads back what it wrote), the
# growth of 50000 keys of 1000 bytes written between two snapshots shows in
# heapdiff under redis' own frames (processInputBuffer: the protocol parser
# makes the value strings, setCommand keeps them and adds the keys), within
# 30% of redis' own used_memory growth, and the server runs on after the detach.
# Logged, not asserted: redis-benchmark requests/s attached vs plain.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all
require_cmd redis-server redis-server
require_cmd redis-cli redis-tools
require_cmd redis-benchmark redis-tools

PORT=$((20000 + RANDOM % 20000))
cli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }
start_cmd redis redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--daemonize no --protected-mode yes --logfile "$W/redis.log"
pid=$TPID
wait_for 20 '[ "$(cli ping 2>/dev/null)" = PONG ]' || fail "redis-server does not answer on port $PORT"
if grep -q 'libjemalloc' "/proc/$pid/maps"; then
	log "redis-server allocates with jemalloc: $(grep -o '/[^ ]*libjemalloc[^ ]*' "/proc/$pid/maps" | head -n 1)"
else
	log "redis-server does not map libjemalloc: $(cli info memory | grep -i mem_allocator | tr -d '\r')"
fi
cli info memory | grep -i mem_allocator | tr -d '\r' | sed 's/^/    /'

# bench: requests/s of SET and GET ("SET GET").
bench() {
	redis-benchmark -h 127.0.0.1 -p "$PORT" -q -n 100000 -c 20 -t set,get --csv >"$W/bench.csv" 2>&1 ||
		fail "redis-benchmark failed: $(tail -n 3 "$W/bench.csv")"
	awk -F'"' '$2 == "SET" { s = $4 } $2 == "GET" { g = $4 } END { print s + 0, g + 0 }' "$W/bench.csv"
}
read -r set_plain get_plain < <(bench)

db=$W/redis.db
start_ha -q -s 3600 -o "$db" "$pid"
wait_ready "$pid" redis-server 30
read -r set_att get_att < <(bench)
[ "$(cli ping)" = PONG ] || fail "redis-server stopped answering under load while attached"
log "slowdown (default interval 512 KiB): redis-benchmark -n 100000 -c 20: SET $set_plain -> $set_att req/s, GET $get_plain -> $get_att req/s (plain -> attached)"
cli flushall >/dev/null
u1=$(cli info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
snapshot_now "$db"
# 50000 keys of 1000 bytes, through the protocol in one pipe.
val=$(head -c 1000 /dev/zero | tr '\0' v)
awk -v v="$val" 'BEGIN { for (i = 0; i < 50000; i++) printf "SET key:%d %s\n", i, v }' |
	redis-cli -h 127.0.0.1 -p "$PORT" --pipe >"$W/pipe.out" 2>&1 || fail "redis-cli --pipe failed: $(tail -n 3 "$W/pipe.out")"
grep -q 'errors: 0, replies: 50000' "$W/pipe.out" || fail "the pipe did not get 50000 clean replies: $(tail -n 2 "$W/pipe.out")"
[ "$(cli dbsize)" = 50000 ] || fail "dbsize is $(cli dbsize), expected 50000"
[ "$(cli get key:31337)" = "$val" ] || fail "key:31337 does not read back"
u2=$(cli info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
snapshot_now "$db"
detach_by_signal INT "$pid"
[ "$(cli ping)" = PONG ] || fail "redis-server does not answer after the detach"
[ "$(cli get key:49999)" = "$val" ] || fail "key:49999 does not read back after the detach"
cli shutdown nosave >/dev/null 2>&1
wait_exit "$pid" 20

s1=$(snapshot_id "$db" 1)
s2=$(snapshot_id "$db" 2)
"$HA_BUILDDIR/src/heapdiff" --bytes "$db" "$s1" "$s2" >"$W/diff" || fail "heapdiff failed: $(cat "$W/diff")"
sed 's/^/    /' "$W/diff" | head -n 40
read -r g1 _ < <(live_under "$db" '%' heap "$s1")
read -r g2 _ < <(live_under "$db" '%' heap "$s2")
growth=$((g2 - g1)) truth=$((u2 - u1))
log "heap growth in the profile: $growth bytes; redis used_memory grew by $truth ($u1 -> $u2)"
within 30 "$growth" "$truth" || fail "the profile's growth $growth is not within 30% of redis' own $truth"
# The values are the strings the protocol parser made (sdssplitargs under
# processInlineBuffer), kept by setCommand; both run under processInputBuffer.
read -r c1 _ < <(live_under "$db" processInputBuffer heap "$s1")
read -r c2 _ < <(live_under "$db" processInputBuffer heap "$s2")
log "growth under redis' processInputBuffer: $((c2 - c1)) bytes"
within 30 "$((c2 - c1))" "$truth" || fail "growth under processInputBuffer $((c2 - c1)) is not within 30% of $truth"
grep -q 'setCommand' "$W/diff" || fail "heapdiff does not show setCommand"
echo ok
