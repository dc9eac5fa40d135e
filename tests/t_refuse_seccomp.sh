#!/bin/bash
# t_refuse_seccomp: a process in seccomp strict mode (only read/write/exit
# allowed: any injected mmap or openat would kill it) is refused with
# "seccomp"; afterwards it still reads its input and exits 0.
. "$(dirname "$0")/lib.sh"
require_all seccomp_strict

start_target sc seccomp_strict
pid=$TPID
wait_line "$TOUT" '^strict$'
wait_syscall "$pid" "$pid" "$NR_READ"
grep -Eq '^Seccomp:[[:space:]]+1$' "/proc/$pid/status" || fail "precondition: the target is not in seccomp strict mode"

run_ha "$pid"
check_refusal seccomp
check_untouched "$pid"
send "$TFD" hello
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "seccomp_strict exited $RC (137 = killed by seccomp)"
grep -qx 'got hello' "$TOUT" || fail "seccomp_strict did not echo its input"
echo "ok"
