#!/bin/bash
# t_refuse_32bit: a 32-bit (i386) process is refused with "32-bit"; it is
# untouched and keeps working.  The target is idle.c built with gcc -m32 at
# test time; skipped if that cannot link (CI may install gcc-multilib), or
# if this kernel cannot run it (a guest without 32-bit user code: exec
# fails with ENOEXEC, "Exec format error").
. "$(dirname "$0")/lib.sh"
require_all

bin=$HA_BUILDDIR/tests/idle32
mkdir -p "$HA_BUILDDIR/tests"
if ! ${CC:-gcc} -m32 -O2 -o "$bin" "$HA_SRCDIR/tests/targets/idle.c" >"$W/cc32.err" 2>&1; then
	cat "$W/cc32.err" | tail -n 3
	skip "gcc -m32 cannot link a 32-bit program (install gcc-multilib)"
fi
# idle.c with no stdin waits; with /dev/null it sees end of input and exits.
if ! "$bin" </dev/null >"$W/run32.out" 2>"$W/run32.err"; then
	if grep -q "Exec format error" "$W/run32.err"; then
		skip "this kernel cannot run 32-bit programs (Exec format error): no 32-bit process to refuse"
	fi
fi

start_cmd idle32 "$bin"
pid=$TPID
wait_target_ready
wait_for 10 '[ -n "$(thread_syscall "$pid" "$pid")" ] && [ "$(thread_syscall "$pid" "$pid")" != running ]' ||
	fail "idle32 is not blocked in a system call"

run_ha "$pid"
check_refusal 32-bit
check_untouched "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
close_fd "$TFD"
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "idle32 exited $RC"
echo "ok"
