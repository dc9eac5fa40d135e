#!/bin/bash
# t_refuse_noagent: a missing agent file (--agent, or $HEAPATTACH_AGENT) is
# refused with "not found" before anything touches the target; then a normal
# attach to the same target works (the refusal was about the agent only).
. "$(dirname "$0")/lib.sh"
require_all idle

start_target idle idle
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"

run_ha --agent /nonexistent/heapattach_agent.so "$pid"
check_refusal "not found"
check_untouched "$pid"

export HEAPATTACH_AGENT=/nonexistent/heapattach_agent.so
run_ha "$pid"
unset HEAPATTACH_AGENT
check_refusal "not found"
check_untouched "$pid"

attach_detach "$pid" 0.1
check_alive "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
echo "ok"
