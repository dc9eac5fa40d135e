#!/bin/bash
# t_storm_inject: heapattach killed with SIGKILL during the injection (5-45
# ms after it starts, on tests/targets/storm's 64 busy threads) must leave
# the target running.  Before the signal frame (src/inject/inject_frame.c)
# the hijacked thread was left inside our call, whose return address was 0,
# and died of that SIGSEGV (9 of 24 kills at 10-60 ms); t_inject_killed
# kills heapattach at each step on purpose, this one at random moments.
. "$(dirname "$0")/lib.sh"
require_all storm
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
