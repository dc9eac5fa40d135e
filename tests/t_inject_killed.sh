#!/bin/bash
# t_inject_killed: heapattach killed (SIGKILL) at each step of the injection
# leaves the target exactly as it was.  HEAPATTACH_TEST_DIE_AT=POINT[:N]
# makes heapattach kill itself the Nth time it passes POINT
# (src/inject/inject.c): once the thread's state is saved, as dlopen of the
# agent starts, at the mark of its end (the signal the thread sends itself,
# src/inject/inject_frame.c), at its 3rd and 20th system call stop (a
# syscall@ point makes the calls run on system call stops, as they do when
# the target has a handler for every mark signal; the agent needs only libc,
# so its dlopen makes about 13 system calls, 26 stops), as the agent's init
# starts, at its mark, at its 20th system call stop, on the way to the final
# stop, and in the middle of the restore.  The hijacked thread then returns
# through the signal frames our calls return into.  Three targets, each
# through every point:
#   fp_loop   its FP/SSE/AVX/x87 registers and control words must survive:
#             the same exact result as a plain run (on a CPU with AMX,
#             the frame's XSAVE size must be the thread's own, not the
#             ptrace regset's: src/inject/inject_frame.c);
#   idle      blocked in read(); must go on answering lines, its GOT slot
#             back as it was (the agent of a dead attacher restores itself);
#             it catches SIGURG, so the mark is SIGWINCH, and its handler
#             never runs (the mark of a dead attacher is dropped unseen);
#   sleeper   in clock_nanosleep (a restart-block system call); must sleep
#             at least its time and exit 0.  One sleeper a point: once
#             interrupted, a sleep goes on in restart_syscall, whose original
#             call a frame cannot name; our death then makes it fail with
#             EINTR (see inject_frame.c).
# (The agent stays loaded after the kill in dlopen, so fp_loop and idle do
# not reach the dlopen points after that one: a point not reached is a
# failure, so they skip them; each sleeper is fresh and dlopens.)
# After the kills a normal attach of each must work.  Before the frame, the
# kills from "dlopen" on crashed the target (SIGSEGV at rip 0).
. "$(dirname "$0")/lib.sh"
require_all fp_loop idle sleeper

POINTS=(saved dlopen mark@dlopen syscall@dlopen:3 syscall@dlopen:20 heapattach_agent_init
	mark@heapattach_agent_init syscall@heapattach_agent_init:20 end restore)
ITERS=3500000000
SLEEP_S=8

# die_at PID POINT: run heapattach on PID to die at POINT; it must die so
# (exit 137), and leave PID untraced and alive.
die_at() {
	local pid=$1 point=$2 rc
	(
		_close_fds
		cd "$W" || exit 1
		HEAPATTACH_TEST_DIE_AT=$point exec timeout -s KILL 60 "$HA" -v -o "$W/k.db" "$pid"
	) >"$W/k.out" 2>"$W/k.err"
	rc=$?
	rm -f "$W"/k.db*
	[ "$rc" = 137 ] && grep -q "HEAPATTACH_TEST_DIE_AT=${point%%:*}: dying" "$W/k.err" || {
		tail -n 20 "$W/k.err" | sed 's/^/    /'
		fail "heapattach did not die at $point on $pid (exit $rc)"
	}
	wait_for 10 'tracer_free "$pid" >/dev/null' || fail "$pid still traced after the kill at $point"
	is_alive "$pid" || fail "the target $pid died after heapattach was killed at $point"
}

start_target plain fp_loop "$ITERS"
plain=$TPID plain_out=$TOUT
start_target fp fp_loop "$ITERS"
fp=$TPID fp_out=$TOUT
start_target idle idle catch=URG
idle=$TPID idle_fd=$TFD idle_out=$TOUT
sls=() sl_outs=()

n=0 k=0
for point in "${POINTS[@]}"; do
	start_target "sl$((k + 1))" sleeper "$SLEEP_S" clock
	sl=$TPID k=$((k + 1))
	sls+=("$TPID") sl_outs+=("$TOUT")
	wait_syscall "$sl" "$sl" "$NR_CLOCK_NANOSLEEP"
	# the sleeper first: its sleep must still run when heapattach dies
	# (on a loaded machine the kills of the other two took over 3 s)
	pids=("$sl" "$fp" "$idle")
	case $point in syscall@dlopen* | mark@dlopen) pids=("$sl") ;; esac
	for pid in "${pids[@]}"; do
		is_alive "$pid" || fail "target $pid ended before the kill at $point (make ITERS larger?)"
		die_at "$pid" "$point"
		n=$((n + 1))
	done
	send "$idle_fd" "after $point"
	wait_line "$idle_out" "^echo after $point\$" 10
	wait_for 10 'idle_check "$idle" "$idle_fd" "$idle_out" 0 >/dev/null 2>&1' ||
		idle_check "$idle" "$idle_fd" "$idle_out" 0
	log "killed at $point: the three targets are fine"
done

for pid in "$fp" "$idle"; do
	run_ha --duration 0.3 "$pid"
	[ "$HA_RC" = 0 ] || fail "a normal attach of $pid after the kills exited $HA_RC"
	grep -Eq -- "$(re_attached "$pid" "$(comm_of "$pid" 2>/dev/null || echo '[^)]*')")" "$HA_ERR" ||
		grep -q '^heapattach: attached to' "$HA_ERR" || fail "no attach of $pid after the kills"
done

mss=
for ((k = 0; k < ${#sls[@]}; k++)); do
	wait_exit "${sls[$k]}" 60
	[ "$RC" = 0 ] || fail "sleeper killed at ${POINTS[$k]} exited $RC: $(cat "${sl_outs[$k]}")"
	ms=$(sed -n 's/^slept_ms=//p' "${sl_outs[$k]}")
	[ -n "$ms" ] && awk -v ms="$ms" -v want="$SLEEP_S" 'BEGIN { exit !(ms >= want * 1000) }' ||
		fail "sleeper killed at ${POINTS[$k]} slept ${ms:-?} ms, asked $((SLEEP_S * 1000))"
	mss="$mss ${ms%.*}"
done
send "$idle_fd" caught
wait_line "$idle_out" '^caught=' 10
[ "$(grep '^caught=' "$idle_out")" = caught=0 ] ||
	fail "idle's SIGURG handler ran: $(grep '^caught=' "$idle_out")"
close_fd "$idle_fd"
wait_exit "$idle" 20
[ "$RC" = 0 ] || fail "idle exited $RC"
wait_exit "$plain" 120
wait_exit "$fp" 120
[ "$RC" = 0 ] || fail "fp_loop exited $RC"
want=$(grep '^result ' "$plain_out")
got=$(grep '^result ' "$fp_out")
[ -n "$want" ] && [ "$want" = "$got" ] || fail "fp_loop's result changed: plain '$want', killed attaches '$got'"
echo "ok: $n kills at ${#POINTS[@]} points of the injection; fp result exact, read and sleep restarted, sleepers slept$mss ms"
