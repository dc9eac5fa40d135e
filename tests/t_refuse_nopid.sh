#!/bin/bash
# t_refuse_nopid: a PID that does not exist is refused with "no such process".
. "$(dirname "$0")/lib.sh"
require_all

pid=$(find_free_pid) || skip "no free pid found"
log "using free pid $pid"
run_ha "$pid"
check_refusal "no such process"
echo "ok"
