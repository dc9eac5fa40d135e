#!/bin/bash
# t_container_noexec: vm.memfd_noexec=2 in the target's own pid namespace
# (set there before the target is exec'd; the sysctl is per pid namespace,
# Linux >= 6.3), so no memfd may be executed: the memfd way fails and the
# agent goes in as a copy in the container's /tmp -- the profile is exact
# (leak_cmd, --block -i 1) and nothing of ours is left.  Then the same
# sysctl in a container where the copy cannot work either (no /proc;
# /tmp, /dev/shm and its working directory noexec, /var/tmp read-only):
# one line names both failures; the target untouched, nothing left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all leak_cmd idle

[ -e /proc/sys/vm/memfd_noexec ] || skip "this kernel has no vm.memfd_noexec (Linux < 6.3)"
noexec='sysctl -q -w vm.memfd_noexec=2'
N=3000 SIZE=200
container_start copy mnt+pid "$noexec" leak_cmd
# (the sysctl reads as the reader's pid namespace's: read it from inside)
[ "$(nsenter -t "$pid" -p -m cat /proc/sys/vm/memfd_noexec)" = 2 ] ||
	fail "precondition: vm.memfd_noexec is not 2 in the target's pid namespace"
[ "$(cat /proc/sys/vm/memfd_noexec)" != 2 ] || fail "precondition: vm.memfd_noexec is 2 here too"
container_profile_exact "$pid" "$W/ct.db" "agent written into memfd\|agent copied to /tmp/heapattach-"
if grep -q "agent written into memfd" "$HA_ERR"; then
	# Linux >= 6.6: MFD_EXEC refused, a memfd made without it sealed
	# noexec (no x bit, F_SEAL_EXEC); executable mappings of it still work.
	map=$(awk '/\/memfd:heapattach_agent\.so/ && $2 ~ /x/ {print $1; exit}' "/proc/$pid/maps")
	[ -n "$map" ] || fail "no executable mapping of the memfd agent in the target"
	mode=$(stat -L -c %a "/proc/$pid/map_files/$map") || fail "cannot stat the mapped memfd"
	[ $((8#$mode & 8#111)) = 0 ] ||
		fail "the memfd agent is mode $mode: made with MFD_EXEC despite vm.memfd_noexec=2"
	log "through a memfd sealed noexec (mode $mode), mapped executable"
else
	# Linux 6.3 to 6.5 without MFD_NOEXEC_SEAL, or a policy: the copy.
	grep -q "memfd: .*; trying a copy" "$HA_ERR" || fail "no failed memfd way before the copy"
	! grep -q '/memfd:heapattach' "/proc/$pid/maps" || fail "a memfd agent is mapped in the target"
fi
[ "$(agent_loads "$pid")" = 1 ] || fail "the agent is loaded $(agent_loads "$pid") times after the detach"
check_nothing_left "$pid"
log "$(grep 'memfd:\|copied' "$HA_ERR")"
send "$TFD" quit
wait_exit "$TPID" 10 || fail "unshare did not exit after leak_cmd's quit"
[ "$RC" = 0 ] || fail "leak_cmd (under unshare) exited $RC"

container_start none mnt+pid "$noexec"' && mount -t tmpfs tmpfs /proc && mount -o remount,noexec /tmp && mount -t tmpfs -o ro tmpfs /var/tmp && mount -t tmpfs -o noexec tmpfs /dev/shm && cd /tmp' idle
run_ha "$pid"
check_refusal "cannot load the agent"
for why in "memfd: " "copy: " "/tmp noexec" "/var/tmp read-only" "/dev/shm noexec"; do
	grep -qF -- "$why" "$HA_ERR" || fail "the refusal does not say '$why'"
done
check_untouched "$pid"
check_nothing_left "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
echo "ok: vm.memfd_noexec=2 in its pid namespace: a copy, exact, nothing left; with no copy possible either, one line naming both"
