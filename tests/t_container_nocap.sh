#!/bin/bash
# t_container_nocap: heapattach without CAP_SYS_ADMIN and
# CAP_CHECKPOINT_RESTORE (root in a `kubectl debug` container, a
# restricted node agent), which /proc/PID/map_files needs: the agent it
# delivers into a container through a memfd has no path there, so its
# symbols (the init call, its state on a reattach) and unwind tables are
# read from our own agent file, the very file we delivered (checked by its
# build-id against the target's memory).  The profile is exact, with no
# unwind failure; a reattach finds the dormant agent's state.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all leak_cmd
[ "$(id -u)" = 0 ] || skip "needs root"
HA_WRAP=(setpriv --bounding-set=-sys_admin,-checkpoint_restore)
"${HA_WRAP[@]}" true 2>/dev/null || skip "setpriv cannot drop capabilities here"

N=3000 SIZE=200
container_start ct mnt+pid "" leak_cmd
e=$(ls "/proc/$pid/map_files" | head -n 1)
"${HA_WRAP[@]}" head -c 4 "/proc/$pid/map_files/$e" >/dev/null 2>&1 &&
	fail "precondition: map_files is readable without CAP_SYS_ADMIN"
container_profile_exact "$pid" "$W/ct.db"
grep -q " 0 unwind failures" "$HA_ERR" || fail "unwind failures: $(grep 'unwind failures' "$HA_ERR")"
# Before: the init symbol was not found in the memfd (map_files refused),
# the memfd stayed mapped and a copy in /tmp was loaded besides; the
# agent's frames had no unwind tables.
! grep -q "trying a copy" "$HA_ERR" || fail "the memfd was given up: $(grep 'trying a copy' "$HA_ERR")"
! grep -q "found by frame pointer" "$HA_ERR" || fail "frames without unwind tables: $(grep 'frame pointer' "$HA_ERR")"
[ "$(agent_loads "$pid")" = 1 ] || fail "the agent is loaded $(agent_loads "$pid") times"
check_nothing_left "$pid"
container_reattach "$pid" "$W/ct2.db"
send "$TFD" quit
wait_exit "$TPID" 10 || fail "unshare did not exit after leak_cmd's quit"
echo "ok: without CAP_SYS_ADMIN, the memfd agent's symbols from our own file: exact, reattached"
