#!/bin/bash
# t_attach_malloc_storm: 32 threads (and the main thread) busy in
# malloc/calloc/realloc/free with pattern checks, none of them blocked in a
# system call for long.  20 attach/detach rounds: each must exit 0 with the
# agent having counted malloc calls; no deadlock, no corruption; then the
# target must stop cleanly and exit 0.
. "$(dirname "$0")/lib.sh"
require_all malloc_storm

ROUNDS=20
# Niced: 33 always-runnable threads would otherwise starve this script and the
# attacher (on 2 cores each round took seconds); they still run whenever a CPU
# is free, so they are still busy in the allocator when the attacher stops one.
start_cmd ms nice -n 19 "$TARGETS/malloc_storm" 32
wait_target_ready
pid=$TPID

for ((r = 1; r <= ROUNDS; r++)); do
	log "round $r"
	attach_detach "$pid" 0.2 -v
	m=$(ha_counter "$HA_ERR" malloc)
	[ -n "$m" ] && [ "$m" -gt 0 ] || fail "round $r: malloc=${m:-?}: the hooks counted no malloc calls"
	check_alive "$pid"
done
[ "$(agent_loads "$pid")" = 1 ] || fail "agent loaded $(agent_loads "$pid") times (expected once, reused)"

send "$TFD" stop
wait_exit "$pid" 30
[ "$RC" = 0 ] || fail "malloc_storm exited $RC: $(tail -n 3 "$TERR")"
grep -Eq '^total threads=33 malloc=[1-9][0-9]* calloc=[0-9]+ realloc=[0-9]+ free=[0-9]+$' "$TOUT" ||
	fail "malloc_storm printed no totals"
log "$(grep '^total' "$TOUT")"
echo "ok: $ROUNDS rounds"
