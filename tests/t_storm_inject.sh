#!/bin/bash
# t_storm_inject: heapattach killed with SIGKILL during the injection (0-40
# ms after it starts, on tests/targets/storm's 64 busy threads) must leave
# the target running.  It does not yet: the hijacked thread is inside our
# call (dlopen of the agent, or its init) whose return address is 0, the
# injector's end-of-call stop; with the injector gone, the kernel delivers
# that SIGSEGV and the target dies (found by t_storm, 9 of 24 kills at 10-60
# ms here).  The fix -- return through a sigreturn frame holding the
# thread's own context, so that the thread resumes where it was whether the
# injector is there to catch the return or not -- is issue 16's.  Set
# HA_RUN_KNOWN_BUGS=1 to run it anyway.
. "$(dirname "$0")/lib.sh"
require_all storm
[ -n "${HA_RUN_KNOWN_BUGS:-}" ] ||
	skip "known bug: SIGKILL of heapattach during the injection crashes the target (return address 0); fix pending, issue 16"
start_cmd storm "$TARGETS/storm" 64 16000
pid=$TPID
wait_line "$TOUT" '^ready pid=[0-9]+$' 30
RANDOM=77
for ((i = 1; i <= 12; i++)); do
	wait_for 10 'tracer_free "$pid"' || fail "kill $i: the target is still traced"
	start_ha -q -s 0 -o "$W/k$i.db" "$pid"
	sleep "$(printf '0.%03d' $((5 + RANDOM % 40)))"
	kill -KILL "$HAPID" 2>/dev/null
	wait "$HAPID" 2>/dev/null
	is_alive "$pid" || wait_for 1 'is_alive "$pid"' || fail "the target died after heapattach was killed during injection $i"
done
echo ok
