#!/bin/bash
# t_refuse_static: a statically linked binary (no dynamic loader, no dlopen)
# is refused with "static"; the target is untouched and keeps working.
. "$(dirname "$0")/lib.sh"
require_all static_target

start_target st static_target
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
# Precondition: the target really is static (no ld.so, no libc.so mapped).
if grep -Eq '/ld-linux|/libc\.so' "/proc/$pid/maps"; then
	fail "tests/targets/static_target is dynamically linked: libtool drops a plain -static for programs; Makefile.am needs tests_targets_static_target_LDFLAGS = -all-static"
fi

run_ha "$pid"
check_refusal static
check_untouched "$pid"
send "$TFD" hello
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "static_target exited $RC"
grep -qx 'got hello' "$TOUT" || fail "static_target did not echo its input"
echo "ok"
