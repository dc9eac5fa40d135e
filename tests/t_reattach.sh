#!/bin/bash
# t_reattach: attach/detach twice on one target.  The second session reuses
# the agent the first one loaded: it stays mapped exactly once, at the same
# addresses.  The GOT is hooked only while attached.
. "$(dirname "$0")/lib.sh"
require_all idle

start_target idle idle
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
idle_check "$pid" "$TFD" "$TOUT" 0

attach_detach "$pid" 0.2
check_alive "$pid"
loads=$(agent_loads "$pid")
[ "$loads" = 1 ] || fail "after the first session the agent is loaded $loads times (expected 1)"
grep 'heapattach_agent\.so' "/proc/$pid/maps" >"$W/maps1"
idle_check "$pid" "$TFD" "$TOUT" 0

start_ha "$pid"
wait_ready "$pid" idle
idle_check "$pid" "$TFD" "$TOUT" 1
detach_by_signal INT "$pid"
check_alive "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0

loads=$(agent_loads "$pid")
[ "$loads" = 1 ] || fail "after the second session the agent is loaded $loads times (expected 1)"
grep 'heapattach_agent\.so' "/proc/$pid/maps" >"$W/maps2"
diff "$W/maps1" "$W/maps2" || fail "the agent's mappings changed between the sessions (loaded again?)"

close_fd "$TFD"
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "idle exited $RC"
echo "ok: second session reused the loaded agent"
