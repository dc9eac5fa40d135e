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
db=$W/ct.db
start_ha -v -q -s 3600 -i 1 --block -o "$db" "$pid"
wait_ready "$pid" leak_cmd
grep -q "agent written into memfd" "$HA_ERR" || fail "the agent did not go through a memfd"
send "$TFD" "leak $N $SIZE"
wait_line "$TOUT" "^done leak $N $SIZE" 60
snapshot_now "$db"
detach_by_signal INT "$pid"
check_session "$HA_ERR" "$pid" leak_cmd
check_alive "$pid"
read -r bytes count < <(live_under "$db" leak_here heap)
[ "$count" = $((N + 1)) ] && [ "$bytes" = $((N * SIZE + 4096 * 8)) ] ||
	fail "leak_here holds $count blocks, $bytes bytes; expected $((N + 1)), $((N * SIZE + 4096 * 8))"
check_nothing_left "$pid"
send "$TFD" quit
wait_exit "$TPID" 10 || fail "unshare did not exit after leak_cmd's quit"
[ "$RC" = 0 ] || fail "leak_cmd (under unshare) exited $RC"
echo "ok: pid 1 of its own mount and pid namespaces, through a memfd: exact, nothing left"
