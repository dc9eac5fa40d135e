#!/bin/bash
# t_inject_mark: the end of each call on the hijacked thread is marked by a
# signal the thread sends itself (src/inject/inject_frame.c), one whose
# default is to be ignored, that the target has no handler for and that the
# thread does not block: SIGURG, else SIGWINCH, else SIGCHLD; with none of
# them free the calls end on system call stops instead.  Each way the attach
# works, the target's handlers never run and no signal is left pending.  The
# idle target catches the signals it is told to (catch=LIST) and counts what
# it caught, or blocks them (block=LIST).  A target in a pid namespace of
# its own: the mark's sender is pid 1 there, still the mark.
. "$(dirname "$0")/lib.sh"
require_all idle

# pending PID: the pending signal sets of the process and its thread, ORed.
pending() {
	awk '/^(SigPnd|ShdPnd):/ { printf "%s ", $2 }' "/proc/$1/status"
}

# one ARG EXPECT: an idle target started with ARG (catch=LIST, block=LIST
# or nothing); an attach must say EXPECT (ERE).
one() {
	local arg=$1 expect=$2 args=() got
	[ -n "$arg" ] && args=("$arg")
	start_target "idle-${arg:-none}" idle "${args[@]}"
	local pid=$TPID fd=$TFD out=$TOUT
	wait_syscall "$pid" "$pid" "$NR_READ"
	run_ha -v --duration 0.2 "$pid"
	[ "$HA_RC" = 0 ] || fail "attach to idle ${arg:-plain} exited $HA_RC"
	grep -Eq -- "$expect" "$HA_ERR" || fail "attach to idle ${arg:-plain}: no line /$expect/"
	grep -q '^heapattach: attached to' "$HA_ERR" || fail "no attach line"
	check_alive "$pid"
	# answered only after every signal sent before it was handled
	send "$fd" caught
	wait_line "$out" '^caught=' 10
	got=$(grep '^caught=' "$out" | tail -n 1)
	[ "$got" = caught=0 ] || fail "idle ${arg:-plain}: its handlers ran ($got)"
	case $(pending "$pid") in
	*[1-9a-f]*) fail "idle ${arg:-plain}: signals left pending: $(pending "$pid")" ;;
	esac
	idle_check "$pid" "$fd" "$out" 0
	close_fd "$fd"
	wait_exit "$pid" 10
	[ "$RC" = 0 ] || fail "idle ${arg:-plain} exited $RC"
	log "idle ${arg:-plain}: $(grep -Eo -- "$expect" "$HA_ERR" | head -n 1)"
}

one "" "the calls end on SIGURG"
grep -Eq 'heapattach_agent_init: marked its end' "$HA_ERR" || fail "the init call's end was not its mark"
one catch=URG "the calls end on SIGWINCH"
one block=URG "the calls end on SIGWINCH"
one catch=URG,WINCH "the calls end on SIGCHLD"
one catch=URG,WINCH,CHLD "no mark: the calls end on system call stops"
# the fallback's calls: each ended on its rt_sigreturn's syscall stop
grep -Eq 'heapattach_agent_init: [0-9]+ syscall stops' "$HA_ERR" ||
	fail "the calls without a mark did not end on system call stops"
one block=URG,WINCH,CHLD "no mark: the calls end on system call stops"
grep -Eq 'heapattach_agent_init: [0-9]+ syscall stops' "$HA_ERR" ||
	fail "with every mark signal blocked the calls did not end on system call stops"

# In a pid namespace the mark's si_pid is the target's own view (1), not
# the pid we know it by.  (Here only the injection's calls are checked,
# and the target after them; t_attach_pidns profiles such a target.)
nsmsg="no pid namespace here"
if command -v unshare >/dev/null && unshare --pid --fork true 2>/dev/null; then
	start_cmd ns unshare --pid --fork "$TARGETS/idle"
	wait_line "$TOUT" '^ready pid=1$' 10
	pid=$(pgrep -P "$TPID" -x idle) || fail "no idle under unshare $TPID"
	fd=$TFD out=$TOUT
	wait_syscall "$pid" "$pid" "$NR_READ"
	run_ha -v --duration 0.2 "$pid"
	grep -q 'dlopen: marked its end' "$HA_ERR" && grep -q 'heapattach_agent_init: marked its end' "$HA_ERR" ||
		fail "in a pid namespace the calls did not end at their marks"
	check_alive "$pid"
	send "$fd" caught
	wait_line "$out" '^caught=' 10
	idle_check "$pid" "$fd" "$out" 0
	case $(pending "$pid") in
	*[1-9a-f]*) fail "idle in a pid namespace: signals left pending: $(pending "$pid")" ;;
	esac
	nsmsg="marks in a pid namespace too"
fi
echo "ok: marks SIGURG, SIGWINCH, SIGCHLD as the handlers and the mask allow, system call stops without; no handler ran, nothing left pending; $nsmsg"
