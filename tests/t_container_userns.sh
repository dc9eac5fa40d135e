#!/bin/bash
# t_container_userns: a rootless container -- a target started by an
# unprivileged user (65534) in user, mount and pid namespaces of its own,
# root inside, 65534 from here; heapattach runs as root on the host.  The
# agent goes in through a memfd, the agent's connection passes the peer
# check, the profile is exact, the detach leaves the target as it was (a
# second session reuses the dormant agent), nothing of ours is left in its
# /tmp.  Without /proc inside, the copy fallback works there too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all leak_cmd idle
[ "$(id -u)" = 0 ] || skip "needs root (the attacher profiles another user's container)"

N=3000 SIZE=200
container_start ct user+mnt+pid "" leak_cmd
[ "$(awk '{print $1, $2, $3}' "/proc/$pid/uid_map")" = "0 65534 1" ] ||
	fail "precondition: the target is not root inside its user namespace"
container_profile_exact "$pid" "$W/ct.db"
check_nothing_left "$pid"
idle_maps=$(agent_loads "$pid")
[ "$idle_maps" = 1 ] || fail "the agent is loaded $idle_maps times after the detach"
container_reattach "$pid" "$W/ct2.db"
send "$TFD" quit
wait_exit "$TPID" 10 || fail "unshare did not exit after leak_cmd's quit"
[ "$RC" = 0 ] || fail "leak_cmd (under unshare) exited $RC"

# Without /proc inside, the agent goes in as a copy in the container's
# /tmp: a tmpfs of its user namespace, where root's uid has no mapping, so
# the copy is made as the target's uid; gone right after the dlopen.
container_start copy user+mnt+pid 'mount -t tmpfs tmpfs /proc' idle
[ ! -e "/proc/$pid/root/proc/self" ] || fail "precondition: /proc is mounted in the target's namespace"
start_ha -v "$pid"
wait_ready "$pid" idle
grep -q "agent copied to /tmp/heapattach-" "$HA_ERR" || fail "the agent was not copied to /tmp"
idle_check "$pid" "$TFD" "$TOUT" 1
detach_by_signal INT "$pid"
check_alive "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
check_nothing_left "$pid"
close_fd "$TFD"
wait_exit "$TPID" 10 || fail "idle did not exit"
echo "ok: a rootless container (uid 65534 here, root inside): exact, reattached, nothing left; the copy without /proc too"
