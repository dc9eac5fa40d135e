#!/bin/bash
# t_container_rotmp: a container whose /tmp is read-only, where the
# attacher cannot make the agent's socket directory.  The socket goes in
# the next writable directory of its root (/dev/shm, a tmpfs of its own
# here, noexec as Docker mounts it: a socket needs no exec), the profile is
# exact, nothing is left.  With /dev/shm, /var/tmp and /run read-only too,
# in our network namespace: an abstract socket, no file at all.  In a
# network namespace of its own as well: refused, one line naming each
# directory tried and why, the target untouched.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all leak_cmd idle

N=3000 SIZE=200
rotmp='mount -o remount,ro /tmp && mount -t tmpfs -o noexec tmpfs /dev/shm'
container_start shm mnt+pid "$rotmp" leak_cmd
[ -w "/proc/$pid/root/tmp" ] && touch "/proc/$pid/root/tmp/probe" 2>/dev/null &&
	fail "precondition: the target's /tmp is writable"
container_profile_exact "$pid" "$W/shm.db"
grep -q "the agent's socket is /proc/$pid/root/dev/shm/heapattach-$pid-.* (/proc/$pid/root/tmp: Read-only file system)" "$HA_ERR" ||
	fail "the socket was not made in the target's /dev/shm"
check_nothing_left "$pid"
send "$TFD" quit
wait_exit "$TPID" 10 || fail "unshare did not exit after leak_cmd's quit"

allro="$rotmp"' && mount -o remount,ro /dev/shm && mount -t tmpfs -o ro tmpfs /var/tmp && mount -t tmpfs -o ro tmpfs /run'
container_start abs mnt+pid "$allro" leak_cmd
container_profile_exact "$pid" "$W/abs.db"
grep -q "the agent's socket is @heapattach-$pid-[0-9a-f]*, an abstract name" "$HA_ERR" ||
	fail "no abstract socket"
check_nothing_left "$pid"
send "$TFD" quit
wait_exit "$TPID" 10 || fail "unshare did not exit after leak_cmd's quit"

container_start none mnt+pid+net "$allro" idle
run_ha "$pid"
check_refusal "cannot create a socket directory in"
for why in "root/tmp: Read-only" "root/dev/shm: Read-only" "root/var/tmp: Read-only" "root/run: Read-only" \
	"nor an abstract socket: the target is in another network namespace"; do
	grep -qF -- "$why" "$HA_ERR" || fail "the refusal does not say '$why'"
done
check_untouched "$pid"
check_nothing_left "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
echo "ok: read-only /tmp: the socket in /dev/shm; all read-only: abstract; own network too: one line"
