#!/bin/bash
# t_container_killed: the container's process killed -- its pid namespace's
# init, so the whole namespace -- while heapattach injects the agent.
# HEAPATTACH_TEST_STOP_AT=POINT[:N] makes heapattach stop itself (SIGSTOP,
# after a -v line) the Nth time it passes POINT (src/inject/inject_log.c):
# the test then SIGKILLs the target, waits for it to be a zombie, and
# SIGCONTs heapattach.  Twice: as the target is about to dlopen the agent
# from its memfd, and, without /proc inside, from the copy in its /tmp (the
# second dlopen, after the memfd's failed; the copy is there when the
# target dies).  The container's /tmp, /var/tmp and /dev/shm are
# directories of ours (under the host's /var/tmp: the container's /tmp
# hides our $W) bound in, so they outlive it.  heapattach must exit 1 (as
# for any target gone before the agent is in: nothing was attached) with
# one line, "process PID was killed by SIGKILL during dlopen", and nothing
# of ours may be left in those directories.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all idle

base=$(mktemp -d /var/tmp/ha-t_container_killed.XXXXXX) || fail "mktemp in /var/tmp"
at_exit "rm -rf '$base'"
for way in memfd copy; do
	d=$base/$way
	mkdir -p "$d/tmp" "$d/var_tmp" "$d/shm" && chmod 1777 "$d/tmp" "$d/var_tmp" "$d/shm" ||
		fail "cannot make $d"
	setup="mount --bind $d/tmp /tmp && mount --bind $d/shm /dev/shm && mount --bind $d/var_tmp /var/tmp"
	point=dlopen
	if [ $way = copy ]; then
		setup+=" && mount -t tmpfs tmpfs /proc"
		point=dlopen:2
	fi
	container_start $way mnt+pid "$setup" idle
	HEAPATTACH_TEST_STOP_AT=$point start_ha -v "$pid"
	wait_line "$HA_ERR" "HEAPATTACH_TEST_STOP_AT=dlopen: stopping" 20
	wait_for 10 '[ "$(proc_state "$HAPID")" = T ]' || fail "heapattach did not stop at $point"
	if [ $way = copy ]; then
		grep -q "agent copied to /tmp/heapattach-" "$HA_ERR" || fail "precondition: no copy made"
		[ -n "$(find "$d/tmp" -name heapattach_agent.so)" ] ||
			fail "precondition: the copy is not in the container's /tmp while heapattach is stopped"
	else
		grep -q "agent written into memfd" "$HA_ERR" || fail "precondition: not through a memfd"
	fi
	kill -KILL "$pid"
	wait_for 10 '[ "$(proc_state "$pid")" = Z ]' || fail "the target $pid is not a zombie after SIGKILL"
	kill -CONT "$HAPID"
	wait_exit "$HAPID" 30 || fail "heapattach did not exit after its target died"
	log "heapattach exit $RC; stderr:"
	sed 's/^/    /' "$HA_ERR"
	[ "$RC" = 1 ] || fail "heapattach exited $RC after its target died during the $way way, expected 1"
	last=$(tail -n 1 "$HA_ERR")
	[ "$last" = "heapattach: process $pid was killed by SIGKILL during dlopen" ] ||
		fail "the last line does not say the target was killed: $last"
	others=$(head -n -1 "$HA_ERR" | grep -v '^heapattach: \[' | grep -Ei 'cannot|failed|error|warning')
	[ -z "$others" ] || fail "more than one line of failure: $others"
	wait_exit "$TPID" 10 || fail "unshare did not exit"
	left=$(find "$d" -mindepth 2)
	[ -z "$left" ] || fail "left in the container's /tmp, /var/tmp or /dev/shm: $left"
	log "the $way way: one line, exit 1, nothing left in $d"
done
echo "ok: the container killed during the memfd and the copy ways: exit 1, one line, nothing left"
