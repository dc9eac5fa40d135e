#!/bin/bash
# t_attach_sleep: a thread in nanosleep (syscall 35) and one in
# clock_nanosleep (230), each in its own process; attach + detach (with -v)
# during the sleep.  Each must sleep its full time (not less, and not much
# more: an interrupted sleep restarts with the remaining time) and exit 0.
. "$(dirname "$0")/lib.sh"
require_all sleeper

SECS=4
start_target s1 sleeper "$SECS"
p1=$TPID o1=$TOUT
start_target s2 sleeper "$SECS" clock
p2=$TPID o2=$TOUT
wait_syscall "$p1" "$p1" "$NR_NANOSLEEP"
wait_syscall "$p2" "$p2" "$NR_CLOCK_NANOSLEEP"

attach_detach "$p1" 0.2 -v
[ "$(wc -l <"$HA_ERR")" -gt 2 ] || fail "-v printed no progress lines"
check_alive "$p1"
attach_detach "$p2" 0.2
check_alive "$p2"
# Back asleep: in nanosleep, or in restart_syscall (219) after an interruption.
for p in "$p1" "$p2"; do
	wait_for 5 'case $(thread_syscall "$p" "$p") in 35 | 219 | 230) true ;; *) ! is_alive "$p" ;; esac' ||
		fail "sleeper $p is not sleeping after the detach (syscall: $(thread_syscall "$p" "$p"))"
done

for p in "$p1:$o1" "$p2:$o2"; do
	pid=${p%%:*} out=${p#*:}
	wait_exit "$pid" $((SECS + 10))
	[ "$RC" = 0 ] || fail "sleeper $pid exited $RC: $(cat "$out")"
	ms=$(sed -n 's/^slept_ms=//p' "$out")
	[ -n "$ms" ] || fail "sleeper $pid printed no slept_ms line"
	log "sleeper $pid slept $ms ms (asked $((SECS * 1000)))"
	awk -v ms="$ms" -v s="$SECS" 'BEGIN { exit !(ms >= s * 1000 && ms <= s * 1000 + 1500) }' ||
		fail "sleeper $pid slept $ms ms, expected $((SECS * 1000)) to $((SECS * 1000 + 1500))"
done
echo "ok: both sleeps took their full time"
