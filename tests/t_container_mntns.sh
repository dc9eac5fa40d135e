#!/bin/bash
# t_container_mntns: the target lives in its own mount namespace, where a
# tmpfs hides the agent's directory and /tmp is its own: the agent goes in
# through a memfd.  The profile is exact (interval 1, --block); after the
# detach the agent stays loaded once (dormant, GOT unhooked), as on the
# host, no descriptor or file of ours is left, and a second session reuses
# the agent.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all leak_cmd

N=3000 SIZE=200
container_start ct mnt "" leak_cmd
container_profile_exact "$pid" "$W/ct.db"
grep -q '/memfd:heapattach_agent\.so' "/proc/$pid/maps" || fail "no memfd agent in the target's maps"
[ "$(agent_loads "$pid")" = 1 ] || fail "the agent is loaded $(agent_loads "$pid") times after the detach"
check_nothing_left "$pid"

container_reattach "$pid" "$W/ct2.db"
send "$TFD" quit
wait_exit "$pid" 10 || fail "leak_cmd did not exit after quit"
[ "$RC" = 0 ] || fail "leak_cmd exited $RC"
echo "ok: in its own mount namespace, through a memfd: $N blocks of $SIZE bytes exact, nothing left"
