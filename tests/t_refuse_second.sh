#!/bin/bash
# t_refuse_second: while one heapattach profiles a process, a second one is
# refused with "already being profiled" without disturbing the first session;
# SIGINT then detaches the first one cleanly (exit 0).
. "$(dirname "$0")/lib.sh"
require_all idle

start_target idle idle
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"

start_ha --duration 60 "$pid"
first=$HAPID first_err=$HA_ERR
wait_ready "$pid" idle

run_ha "$pid"
check_refusal "already being profiled"
is_alive "$first" || fail "the first heapattach died when the second one was refused"
idle_check "$pid" "$TFD" "$TOUT" 1

HAPID=$first HA_ERR=$first_err
detach_by_signal INT "$pid"
check_alive "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
echo "ok"
