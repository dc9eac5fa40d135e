#!/bin/bash
# t_attach_fork: a process that forks while attached.  The parent's GOT slot
# of malloc is hooked, the child's must be clean (the agent restores it in
# the child) and the child must malloc/free and exit 0.  Before the attach
# and after the detach nothing is hooked.
. "$(dirname "$0")/lib.sh"
require_all forker

start_target fk forker
pid=$TPID
fd=$TFD

# round N: fork; expect the parent's hooked value and a clean child.
fork_round() {
	local r=$1 want=$2
	send "$fd" "fork $r"
	wait_line "$TOUT" "^round $r child exit=" 10
	grep -qx "round $r child ok" "$TOUT" ||
		fail "round $r: the child did not report 'child ok': $(grep "^round $r " "$TOUT" | tr '\n' ' ')"
	grep -qx "round $r child exit=0" "$TOUT" || fail "round $r: $(grep "^round $r child exit" "$TOUT")"
	grep -qx "round $r parent hooked=$want" "$TOUT" ||
		fail "round $r: expected 'parent hooked=$want', got '$(grep "^round $r parent" "$TOUT")'"
	log "round $r: parent hooked=$want, child ok, exit 0"
}

wait_syscall "$pid" "$pid" "$NR_READ"
fork_round 1 0
start_ha "$pid"
wait_ready "$pid" forker
fork_round 2 1
fork_round 3 1
detach_by_signal INT "$pid"
check_alive "$pid"
fork_round 4 0

close_fd "$fd"
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "forker exited $RC"
grep -qx bye "$TOUT" || fail "forker did not finish"
echo "ok"
