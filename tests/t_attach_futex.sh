#!/bin/bash
# t_attach_futex: 4 threads in a raw FUTEX_WAIT (the only threads blocked in a
# system call; the main thread spins polling stdin).  Attach + detach; the
# waiters must be back in their futex wait, then wake with the right value
# and no EINTR when the main thread, told by a line on stdin, changes the
# word and FUTEX_WAKEs.
. "$(dirname "$0")/lib.sh"
require_all futex_wait

N=4
start_target fw futex_wait "$N"
pid=$TPID
wait_for 10 '[ "$(grep -c "^waiter [0-9]* tid=" "$TOUT")" = "$N" ]' || fail "waiters did not start"
tids=$(sed -n 's/^waiter [0-9]* tid=//p' "$TOUT")
for tid in $tids; do wait_syscall "$pid" "$tid" "$NR_FUTEX"; done

for r in 1 2; do
	attach_detach "$pid" 0.3 -v
	check_alive "$pid"
	# (Informational: -v names the thread it hijacked; not part of the contract.)
	h=$(sed -n 's/.*hijacking thread \([0-9]*\).*/\1/p' "$HA_ERR" | tail -n 1)
	case " $(echo $tids) " in
	*" $h "*) log "round $r: a futex waiter ($h) was hijacked" ;;
	*) log "round $r: NOTE: the hijacked thread (${h:-unknown}) is not a futex waiter" ;;
	esac
	for tid in $tids; do wait_syscall "$pid" "$tid" "$NR_FUTEX" 5; done
done

send "$TFD" wake
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "futex_wait exited $RC"
n=$(grep -Ec '^waiter [0-9]+ woke value=42 eintr=0 spurious=[0-9]+ errors=0$' "$TOUT")
[ "$n" = "$N" ] || fail "$n of $N waiters woke cleanly with value 42"
grep -qx 'all ok' "$TOUT" || fail "futex_wait did not report 'all ok'"
echo "ok: $N waiters woke with value 42"
