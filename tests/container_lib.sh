# tests/container_lib.sh -- helpers for the tests of targets in containers
# (namespaces of their own), on top of lib.sh.

# container_start LABEL NS SETUP TARGET [ARGS...]: start $TARGETS/TARGET in a
# new mount namespace ("mnt"), or mount and pid namespaces with their own
# /proc ("mnt+pid"; "mnt+pid+net": a network namespace too), or those and a
# user namespace made by an unprivileged user, root inside and uid 65534
# from here ("user+mnt+pid"), where a tmpfs hides the agent's directory and
# /tmp is a tmpfs of the target's own; SETUP is more shell run there first
# (mounts).  Waits for its ready line and for it to block reading stdin.
# Sets pid (the target's pid here), TPID (what to wait for), TFD, TOUT.
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
	mnt+pid | mnt+pid+net)
		local own=(unshare -m -p -f --mount-proc --propagation private)
		[ "$ns" = mnt+pid ] || own+=(-n)
		"${own[@]}" true >"$W/unshare.err" 2>&1 ||
		{ tail -n 2 "$W/unshare.err"; skip "${own[*]} not possible here"; }
		start_cmd "$label" "${own[@]}" sh -c "$sh" sh "$(dirname "$AGENT")" "$TARGETS/$target" "$@"
		wait_line "$TOUT" '^ready pid=1$' 10
		pid=$(pgrep -P "$TPID" -x "$target") || fail "no $target under unshare $TPID" ;;
	user+mnt+pid)
		# A rootless container: made by an unprivileged user (65534 here),
		# root inside its own user namespace, 65534 from ours.
		command -v setpriv >/dev/null || skip "setpriv is not installed (util-linux)"
		local rootless=(setpriv --reuid=65534 --regid=65534 --clear-groups
		                unshare -U -r -m -p -f --mount-proc --propagation private)
		"${rootless[@]}" true >"$W/unshare.err" 2>&1 ||
			{ tail -n 2 "$W/unshare.err"; skip "an unprivileged user cannot unshare -U -r -m -p -f here"; }
		start_cmd "$label" "${rootless[@]}" sh -c "$sh" sh "$(dirname "$AGENT")" "$TARGETS/$target" "$@"
		wait_line "$TOUT" '^ready pid=1$' 10
		pid=$(pgrep -P "$TPID" -x "$target") || fail "no $target under unshare $TPID"
		[ "$(readlink "/proc/$pid/ns/user")" != "$(readlink /proc/self/ns/user)" ] ||
			fail "precondition: the target is in our user namespace"
		[ "$(awk '/^Uid:/{print $2}' "/proc/$pid/status")" = 65534 ] ||
			fail "precondition: the target is not uid 65534 from here" ;;
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
	left=$(find "/proc/$pid/root/tmp" "/proc/$pid/root/var/tmp" "/proc/$pid/root/dev/shm" "/proc/$pid/root/run" \
	       -xdev -name 'heapattach*' 2>/dev/null)
	[ -z "$left" ] || fail "files of ours left in the target's file system: $left"
	log "nothing of ours left in $pid's descriptors, /tmp, /var/tmp, /dev/shm, /run"
}

# container_profile_exact PID DB [WAY]: one session with --block -i 1
# through a memfd (or WAY, a pattern of the -v line of the delivery; or the
# dormant agent of a session before); the target leaks N blocks of SIZE
# bytes (leak_cmd): exact.
container_profile_exact() {
	local pid=$1 db=$2 way=${3:-agent written into memfd} bytes count loaded
	loaded=$(agent_loads "$pid")
	start_ha -v -q -s 3600 -i 1 --block -o "$db" "$pid"
	wait_ready "$pid" leak_cmd
	[ "$loaded" != 0 ] || grep -q "$way" "$HA_ERR" ||
		fail "the agent did not go in the expected way ('$way')"
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

# container_reattach PID DB: a second, short session reuses the dormant
# agent (found by its memfd name): loaded once still, nothing of ours left.
container_reattach() {
	local pid=$1 db=$2
	run_ha -q --duration 0.2 -o "$db" "$pid"
	[ "$HA_RC" = 0 ] || fail "a second session exited $HA_RC: $(cat "$HA_ERR")"
	[ "$(agent_loads "$pid")" = 1 ] || fail "the agent is loaded $(agent_loads "$pid") times after a second session"
	check_nothing_left "$pid"
}

# debian_root SUITE: a Debian root of SUITE (debootstrap --variant=minbase
# --include=python3), made once and cached outside the clone in
# $HA_TEST_CACHE (default /var/cache/heapattach-tests)/SUITE; sets ROOT.
# Made under a lock (concurrent tests wait for one another) in a temporary
# directory renamed into place when complete: a root left half made by an
# interrupted run is never used (it is removed by the next).  Skips when
# debootstrap is missing or the Debian registry cannot be reached.
debian_root() {
	local suite=$1 cache=${HA_TEST_CACHE:-/var/cache/heapattach-tests} mirror=http://deb.debian.org/debian tmp
	ROOT=$cache/$suite
	mkdir -p "$cache" || fail "cannot make the test cache $cache"
	exec {lockfd}>"$cache/$suite.lock" || fail "cannot open $cache/$suite.lock"
	log "waiting for the lock of $ROOT"
	flock -w 900 "$lockfd" || fail "no lock on $cache/$suite.lock in 15 minutes"
	if [ ! -x "$ROOT/usr/bin/python3" ]; then
		require_cmd debootstrap debootstrap
		rm -rf "$cache/$suite".tmp.*
		curl -fsS --max-time 20 -o /dev/null "$mirror/dists/$suite/Release" 2>"$W/mirror.err" ||
			skip "the Debian registry is unreachable ($mirror: $(tail -n 1 "$W/mirror.err"))"
		tmp=$(mktemp -d "$cache/$suite.tmp.XXXXXX") || fail "mktemp in $cache"
		log "making a Debian $suite root in $tmp (once; minutes)"
		if ! debootstrap --variant=minbase --include=python3 "$suite" "$tmp" "$mirror" \
			>"$W/debootstrap.log" 2>&1; then
			tail -n 5 "$W/debootstrap.log"
			rm -rf "$tmp"
			grep -Eqi 'resolve|connect|timed out|unreachable|Failed getting' "$W/debootstrap.log" &&
				skip "the Debian registry is unreachable (debootstrap failed to download)"
			fail "debootstrap $suite failed"
		fi
		mv "$tmp" "$ROOT" || fail "cannot rename $tmp to $ROOT"
	fi
	exec {lockfd}>&-
	[ -x "$ROOT/usr/bin/python3" ] || fail "no python3 in the cached root $ROOT"
	log "Debian $suite root: $ROOT"
}

# root_listing ROOT: every file of ROOT (its own file system) with its type,
# size, mode, times of change, and the checksum of each regular file under
# tmp, var/tmp, dev/shm, etc and root; sorted.
root_listing() {
	local r=$1
	(cd "$r" && find . -xdev -printf '%y %s %m %T@ %C@ %p\n' | sort &&
		find ./tmp ./var/tmp ./dev/shm ./etc ./root -xdev -type f -print0 2>/dev/null |
		sort -z | xargs -0 -r sha256sum)
}
