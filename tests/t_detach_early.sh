#!/bin/bash
# t_detach_early: a Ctrl-C (SIGINT) that comes before or during the attach
# (issue 38), each delivered at a known point, no timing involved:
#  1. before any code of ours runs: heapattach is exec'ed with a SIGINT
#     pending and blocked (a python3 wrapper blocks it, sends it to itself,
#     then execs heapattach; both the mask and the pending signal survive
#     execve).  heapattach must say in one line that it was interrupted and
#     that nothing was done to the target, and exit 130; the target is
#     untouched (no tracer, agent never mapped, its GOT as it was), no
#     socket directory is left in /tmp, no database was made;
#  2. in the middle of the injection: heapattach stops itself at the
#     injector's "saved" point (HEAPATTACH_TEST_STOP_AT, the registers of
#     the hijacked thread saved), gets a SIGINT there, then a SIGCONT.  The
#     injection runs to its end, a line says it was interrupted while
#     attaching, and it detaches at once, cleanly (exit 0, the attached and
#     detached lines, the GOT restored); the target runs on.
. "$(dirname "$0")/lib.sh"
require_all idle
command -v python3 >/dev/null || skip "python3 is not installed (build-aux/setup installs it)"

start_target idle idle
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"

# ---- 1. a SIGINT before main
cat >"$W/pending.py" <<'EOF'
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
os.kill(os.getpid(), signal.SIGINT)
os.execv(sys.argv[1], sys.argv[1:])
EOF
HA_WRAP=(python3 "$W/pending.py")
run_ha -o "$W/early.db" "$pid"
HA_WRAP=()
[ "$HA_RC" = 130 ] || fail "heapattach with a SIGINT pending from the start exited $HA_RC, expected 130"
[ "$(wc -l <"$HA_ERR")" = 1 ] || fail "expected one line on stderr, got: $(cat "$HA_ERR")"
grep -qx "heapattach: interrupted (SIGINT) before attaching: nothing was done to $pid (idle)" "$HA_ERR" ||
	fail "the line does not say it was interrupted and nothing was done: $(cat "$HA_ERR")"
check_untouched "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
ls -d /tmp/heapattach-"$pid"-* 2>/dev/null && fail "a socket directory was left in /tmp"
[ ! -e "$W/early.db" ] || fail "a database was made although nothing was recorded"
echo "ok: a SIGINT before the attach: one line, exit 130, the target untouched"

# ---- 2. a SIGINT in the middle of the injection
HA_WRAP=(env HEAPATTACH_TEST_STOP_AT=saved)
start_ha -v -o "$W/mid.db" "$pid"
HA_WRAP=()
wait_for 15 '[ "$(proc_state "$HAPID")" = T ] || ! is_alive "$HAPID"' ||
	fail "heapattach did not stop at the injector's 'saved' point"
[ "$(proc_state "$HAPID")" = T ] || { wait "$HAPID"; fail "heapattach exited ($?) before the 'saved' point: $(cat "$HA_ERR")"; }
[ "$(agent_maps "$pid")" = 0 ] || fail "the agent is mapped before the injection's call"
kill -INT "$HAPID" || fail "heapattach $HAPID vanished"
kill -CONT "$HAPID" || fail "heapattach $HAPID vanished"
wait_for 20 '! is_alive "$HAPID"' || fail "heapattach did not end after the SIGINT mid-injection"
wait "$HAPID"
rc=$?
log "heapattach exit $rc; stderr:"
sed 's/^/    /' "$HA_ERR"
[ "$rc" = 0 ] || fail "a SIGINT mid-injection: exit $rc, expected 0 (a clean detach)"
check_session "$HA_ERR" "$pid" idle
grep -qx 'heapattach: interrupted (SIGINT) while attaching: the injection does not stop half-way; detaching at once' "$HA_ERR" ||
	fail "no line saying the SIGINT came while attaching"
# In that order: attached, interrupted, detached.
order=$(grep -oE '^heapattach: (attached|interrupted|detached)' "$HA_ERR" | cut -d' ' -f2 | tr '\n' ' ')
[ "$order" = "attached interrupted detached " ] || fail "the lines come in the order '$order'"
check_alive "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
send "$TFD" "still here"
wait_line "$TOUT" '^echo still here$' 5
echo "ok: a SIGINT mid-injection: said, the injection finished, a clean detach at once"
close_fd "$TFD"
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "idle exited $RC"
echo "ok"
