#!/bin/bash
# t_attach_read: the target's only thread is blocked in read() on a pipe
# (stdin, a fifo this test holds).  Attach + detach while it is blocked, and
# once more while data arrives; every byte written must arrive intact, the
# read() must restart transparently (no EINTR), and the target must exit 0.
. "$(dirname "$0")/lib.sh"
require_all blocked_read

start_target br blocked_read
pid=$TPID
fd=$TFD
wait_syscall "$pid" "$pid" "$NR_READ"

# Session 1: the thread is blocked in read() with nothing to read.
attach_detach "$pid" 0.3
check_alive "$pid"
[ "$(agent_loads "$pid")" = 1 ] ||
	fail "the agent should stay loaded exactly once after detach, found $(agent_loads "$pid") loads"
wait_syscall "$pid" "$pid" "$NR_READ" 5

# Session 2: data arrives while attached, and after the detach.
# (Each part is smaller than the pipe buffer, so writing never blocks.)
head -c 20000 /dev/urandom >"$W/part1"
head -c 20000 /dev/urandom >"$W/part2"
start_ha "$pid"
wait_ready "$pid" blocked_read
cat "$W/part1" >&"$fd" || fail "write part 1"
detach_by_signal INT "$pid"
check_alive "$pid"
cat "$W/part2" >&"$fd" || fail "write part 2"
close_fd "$fd"

wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "blocked_read exited $RC: $(cat "$TERR")"
{ echo "ready pid=$pid"; cat "$W/part1" "$W/part2"; } >"$W/expected"
cmp "$W/expected" "$TOUT" || fail "the data read by the target differs from what was written"
log "$(cat "$TERR")"
echo "ok: 40000 bytes arrived intact"
