#!/bin/bash
# t_container_pidns: a container's view -- its own mount and pid namespaces
# (pid 1 there, its own /proc), the agent's directory hidden, /tmp its own:
# the agent goes in through a memfd, the profile is exact, the detach
# clean, nothing of ours is left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all leak_cmd

N=3000 SIZE=200
container_start ct mnt+pid "" leak_cmd
container_profile_exact "$pid" "$W/ct.db"
check_nothing_left "$pid"
send "$TFD" quit
wait_exit "$TPID" 10 || fail "unshare did not exit after leak_cmd's quit"
[ "$RC" = 0 ] || fail "leak_cmd (under unshare) exited $RC"
echo "ok: pid 1 of its own mount and pid namespaces, through a memfd: exact, nothing left"
