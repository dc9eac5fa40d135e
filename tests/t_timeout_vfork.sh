#!/bin/bash
# t_timeout_vfork: the target's only thread waits in vfork() for a child that
# blocks in read(): it cannot be stopped until the child exits.  heapattach
# --timeout 1 must give up in bounded time, with one line and exit 1, leaving
# the target untouched (no tracer, no agent); once the child exits the target
# goes on, and a later attach works.
. "$(dirname "$0")/lib.sh"
require_all forker

start_target fk forker
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
send "$TFD" vfork
wait_line "$TOUT" '^vforking$'
wait_for 10 '[ -n "$(cat "/proc/$pid/task/$pid/children" 2>/dev/null)" ]' || fail "no vfork child"
child=$(cat "/proc/$pid/task/$pid/children")
child=${child%% *}
wait_syscall "$child" "$child" "$NR_READ"
log "vfork child $child blocked in read()"

t0=$(date +%s%N)
run_ha --timeout 1 --duration 0.2 "$pid"
ms=$((($(date +%s%N) - t0) / 1000000))
log "heapattach gave up after $ms ms"
[ "$HA_RC" = 1 ] || fail "expected exit 1 (could not attach, target untouched), got $HA_RC"
[ "$(wc -l <"$HA_ERR")" = 1 ] || fail "expected one line on stderr, got $(wc -l <"$HA_ERR")"
grep -q '^heapattach: ' "$HA_ERR" || fail "the message does not start with 'heapattach: '"
[ "$ms" -lt 6000 ] || fail "heapattach --timeout 1 took $ms ms"
check_untouched "$pid"
tracer_free "$child" || fail "the vfork child is still traced"

send "$TFD" release
wait_line "$TOUT" '^vfork child exit=0$'
wait_syscall "$pid" "$pid" "$NR_READ"
attach_detach "$pid" 0.2
check_alive "$pid"
send "$TFD" fork
wait_line "$TOUT" '^round 1 child exit=0$'
grep -qx 'round 1 parent hooked=0' "$TOUT" || fail "the GOT is still hooked after the detach"
close_fd "$TFD"
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "forker exited $RC"
echo "ok"
