# tests/container_lib.sh -- helpers for the tests of targets in containers
# (namespaces of their own), on top of lib.sh.

# container_start LABEL NS SETUP TARGET [ARGS...]: start $TARGETS/TARGET in a
# new mount namespace ("mnt"), or mount and pid namespaces with their own
# /proc ("mnt+pid"), where a tmpfs hides the agent's directory and /tmp is
# a tmpfs of the target's own; SETUP is more shell run there first (mounts).
# Waits for its ready line and for it to block reading stdin.  Sets pid (the
# target's pid here), TPID (what to wait for), TFD, TOUT.
container_start() {
	local label=$1 ns=$2 setup=$3 target=$4 sh
	shift 4
	command -v unshare >/dev/null || skip "unshare is not installed (util-linux)"
	sh='mount -t tmpfs tmpfs "$1" && mount -t tmpfs tmpfs /tmp && '"${setup:-true}"' && t=$2 && shift 2 && exec "$t" "$@"'
	case $ns in
	mnt) unshare -m --propagation private sh -c "$sh" sh "$(dirname "$AGENT")" true >"$W/unshare.err" 2>&1 ||
		{ tail -n 2 "$W/unshare.err"; skip "unshare -m / mount tmpfs not possible here"; }
		start_cmd "$label" unshare -m --propagation private sh -c "$sh" sh "$(dirname "$AGENT")" "$TARGETS/$target" "$@"
		wait_target_ready
		pid=$TPID ;;
	mnt+pid) unshare -m -p -f --mount-proc --propagation private true >"$W/unshare.err" 2>&1 ||
		{ tail -n 2 "$W/unshare.err"; skip "unshare -m -p -f --mount-proc not possible here"; }
		start_cmd "$label" unshare -m -p -f --mount-proc --propagation private sh -c "$sh" sh "$(dirname "$AGENT")" "$TARGETS/$target" "$@"
		wait_line "$TOUT" '^ready pid=1$' 10
		pid=$(pgrep -P "$TPID" -x "$target") || fail "no $target under unshare $TPID" ;;
	*) fail "container_start: unknown namespaces '$ns'" ;;
	esac
	wait_syscall "$pid" "$pid" "$NR_READ"
	[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] ||
		fail "precondition: the target is in our mount namespace"
	[ ! -e "/proc/$pid/root$AGENT" ] || fail "precondition: the agent is visible in the target's namespace"
	[ -e "$AGENT" ] || fail "the agent vanished from our own namespace"
}

# check_nothing_left PID: no descriptor of ours in the target's table (a
# memfd of the agent), nothing of ours in its /tmp, /var/tmp, /dev/shm.
check_nothing_left() {
	local pid=$1 left
	left=$(ls -l "/proc/$pid/fd" | grep -F 'memfd:heapattach') &&
		fail "descriptors of ours left in $pid: $left"
	left=$(find "/proc/$pid/root/tmp" "/proc/$pid/root/var/tmp" "/proc/$pid/root/dev/shm" \
	       -xdev -name 'heapattach*' 2>/dev/null)
	[ -z "$left" ] || fail "files of ours left in the target's file system: $left"
	log "nothing of ours left in $pid's descriptors, /tmp, /var/tmp, /dev/shm"
}

# container_profile_exact PID DB: one session with --block -i 1 through a
# memfd; the target leaks N blocks of SIZE bytes (leak_cmd): exact.
container_profile_exact() {
	local pid=$1 db=$2 bytes count
	start_ha -v -q -s 3600 -i 1 --block -o "$db" "$pid"
	wait_ready "$pid" leak_cmd
	grep -q "agent written into memfd" "$HA_ERR" || fail "the agent did not go through a memfd"
	send "$TFD" "leak $N $SIZE"
	wait_line "$TOUT" "^done leak $N $SIZE" 60
	snapshot_now "$db"
	detach_by_signal INT "$pid"
	check_session "$HA_ERR" "$pid" leak_cmd
	check_alive "$pid"
	# leak_here's blocks, and the array that keeps them (4,096 pointers).
	read -r bytes count < <(live_under "$db" leak_here heap)
	[ "$count" = $((N + 1)) ] && [ "$bytes" = $((N * SIZE + 4096 * 8)) ] ||
		fail "leak_here holds $count blocks, $bytes bytes; expected $((N + 1)), $((N * SIZE + 4096 * 8))"
}
