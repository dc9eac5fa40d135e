#!/bin/bash
# t_target_exit: the target exits while attached, once normally (exit 0 at
# EOF) and once killed by SIGKILL; heapattach must say
# "heapattach: target PID exited" and exit 0.
. "$(dirname "$0")/lib.sh"
require_all idle

for how in eof kill; do
	start_target "idle-$how" idle
	pid=$TPID
	wait_syscall "$pid" "$pid" "$NR_READ"
	start_ha "$pid"
	wait_ready "$pid" idle
	if [ $how = eof ]; then
		close_fd "$TFD"
		wait_exit "$pid" 10
		[ "$RC" = 0 ] || fail "idle exited $RC while attached (expected a normal exit 0)"
		grep -qx bye "$TOUT" || fail "idle did not finish normally"
	else
		kill -KILL "$pid"
		wait_exit "$pid" 10
	fi
	wait_for 10 '! is_alive "$HAPID"' || fail "heapattach still running 10 s after the target exited ($how)"
	wait "$HAPID"
	rc=$?
	log "heapattach exit $rc; stderr:"
	sed 's/^/    /' "$HA_ERR"
	[ "$rc" = 0 ] || fail "heapattach exited $rc after the target exited ($how)"
	grep -qx "heapattach: target $pid exited" "$HA_ERR" ||
		fail "no 'heapattach: target $pid exited' line ($how)"
done
echo "ok"
