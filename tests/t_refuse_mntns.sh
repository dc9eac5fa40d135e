#!/bin/bash
# t_refuse_mntns: the target lives in its own mount namespace where a tmpfs
# hides the agent's directory: refused with "mount namespace"; untouched.
. "$(dirname "$0")/lib.sh"
require_all idle

command -v unshare >/dev/null || skip "unshare not installed"
dir=$(dirname "$AGENT")
unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs "$1" && test ! -e "$2"' sh "$dir" "$AGENT" \
	>"$W/unshare.err" 2>&1 || { tail -n 2 "$W/unshare.err"; skip "unshare -m / mount tmpfs not possible here"; }

start_cmd idle unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs "$1" && exec "$2"' sh "$dir" "$TARGETS/idle"
pid=$TPID
wait_target_ready
wait_syscall "$pid" "$pid" "$NR_READ"
[ -e "$AGENT" ] || fail "the agent vanished from our own namespace"
[ ! -e "/proc/$pid/root$AGENT" ] || fail "precondition: the agent is visible in the target's namespace"
[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || fail "precondition: same mount namespace"

run_ha --agent "$AGENT" "$pid"
check_refusal "mount namespace"
check_untouched "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
echo "ok"
