#!/bin/bash
# t_inject_mark: the end of each call on the hijacked thread is marked by a
# signal the thread sends itself (src/attach/inject_frame.c), one whose
# default is to be ignored and that the target has no handler for: SIGURG,
# else SIGWINCH, else SIGCHLD; with handlers for all three the calls end on
# system call stops instead.  Each way the attach works, the target's
# handlers never run and no signal is left pending.  The idle target
# catches the signals it is told to (catch=LIST) and counts what it caught.
. "$(dirname "$0")/lib.sh"
require_all idle

# pending PID: the pending signal sets of the process and its thread, ORed.
pending() {
	awk '/^(SigPnd|ShdPnd):/ { printf "%s ", $2 }' "/proc/$1/status"
}

# one LIST EXPECT: a target catching LIST; an attach must say EXPECT (ERE).
one() {
	local list=$1 expect=$2 args=() got
	[ -n "$list" ] && args=("catch=$list")
	start_target "idle-${list:-none}" idle "${args[@]}"
	local pid=$TPID fd=$TFD out=$TOUT
	wait_syscall "$pid" "$pid" "$NR_READ"
	run_ha -v --duration 0.2 "$pid"
	[ "$HA_RC" = 0 ] || fail "attach to idle catching '${list:-nothing}' exited $HA_RC"
	grep -Eq -- "$expect" "$HA_ERR" ||
		fail "attach to idle catching '${list:-nothing}': no line /$expect/"
	grep -q '^heapattach: attached to' "$HA_ERR" || fail "no attach line"
	check_alive "$pid"
	# answered only after every signal sent before it was handled
	send "$fd" caught
	wait_line "$out" '^caught=' 10
	got=$(grep '^caught=' "$out" | tail -n 1)
	[ "$got" = caught=0 ] || fail "idle catching '${list:-nothing}': its handlers ran ($got)"
	case $(pending "$pid") in
	*[1-9a-f]*) fail "idle catching '${list:-nothing}': signals left pending: $(pending "$pid")" ;;
	esac
	idle_check "$pid" "$fd" "$out" 0
	close_fd "$fd"
	wait_exit "$pid" 10
	[ "$RC" = 0 ] || fail "idle catching '${list:-nothing}' exited $RC"
	log "catching '${list:-nothing}': $(grep -Eo -- "$expect" "$HA_ERR" | head -n 1)"
}

one "" "the calls end on SIGURG"
one URG "the calls end on SIGWINCH"
one URG,WINCH "the calls end on SIGCHLD"
one URG,WINCH,CHLD "no mark: the calls end on system call stops"
# the fallback's calls: each ended on its rt_sigreturn's syscall stop
grep -Eq 'heapattach_agent_init: [0-9]+ syscall stops' "$HA_ERR" ||
	fail "the calls without a mark did not end on system call stops"
echo "ok: marks SIGURG, SIGWINCH, SIGCHLD as the handlers allow, system call stops without; no handler ran, nothing left pending"
