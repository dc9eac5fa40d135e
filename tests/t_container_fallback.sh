#!/bin/bash
# t_container_fallback: a container without /proc inside (a tmpfs over it),
# so the target cannot dlopen /proc/self/fd/N of the memfd: the agent goes
# in as a copy in its /tmp, removed right after the dlopen -- the session
# works and nothing of ours is left, during it or after.  Then a container
# where nothing can work (no /proc; /tmp, /dev/shm and its working
# directory noexec, /var/tmp read-only): refused with one line naming each
# way and why it failed; the target untouched, nothing left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all idle

noproc='mount -t tmpfs tmpfs /proc'
container_start copy mnt+pid "$noproc" idle
[ ! -e "/proc/$pid/root/proc/self" ] || fail "precondition: /proc is mounted in the target's namespace"
start_ha -v "$pid"
wait_ready "$pid" idle
grep -q "memfd: dlopen /proc/self/fd/[0-9]*: .*trying a copy" "$HA_ERR" ||
	fail "no failed memfd dlopen before the copy"
grep -q "agent copied to /tmp/heapattach-" "$HA_ERR" || fail "the agent was not copied to /tmp"
left=$(find "/proc/$pid/root/tmp" -name 'heapattach_agent*')
[ -z "$left" ] || fail "the copy is still there during the session: $left"
idle_check "$pid" "$TFD" "$TOUT" 1
detach_by_signal INT "$pid"
check_alive "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
[ "$(agent_loads "$pid")" = 1 ] || fail "the agent is loaded $(agent_loads "$pid") times after the detach"
check_nothing_left "$pid"
close_fd "$TFD"
wait_exit "$TPID" 10 || fail "idle did not exit"

container_start none mnt+pid "$noproc"' && mount -o remount,noexec /tmp && mount -t tmpfs -o ro tmpfs /var/tmp && mount -t tmpfs -o noexec tmpfs /dev/shm && cd /tmp' idle
run_ha "$pid"
check_refusal "cannot load the agent"
for why in "memfd: dlopen /proc/self/fd/" "/tmp noexec" "/var/tmp read-only" "/dev/shm noexec"; do
	grep -qF -- "$why" "$HA_ERR" || fail "the refusal does not say '$why'"
done
check_untouched "$pid"
check_nothing_left "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
echo "ok: without /proc inside, a copy in /tmp, gone at once; with nothing usable, one line"
