#!/bin/bash
# t_refuse_permission: heapattach run as nobody against a root-owned process
# is refused with a reason mentioning "permission"; the target is untouched.
. "$(dirname "$0")/lib.sh"
require_all idle

command -v setpriv >/dev/null || skip "setpriv not installed"
AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${AS_NOBODY[@]}" test -x "$HA" ||
	skip "user nobody cannot execute $HA (build directory not accessible to others)"

start_target idle idle
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"

HA_WRAP=("${AS_NOBODY[@]}")
run_ha "$pid"
HA_WRAP=()
check_refusal permission
check_untouched "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
echo "ok"
