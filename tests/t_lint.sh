#!/bin/bash
# t_lint: cppcheck (warning and portability checks) finds nothing in src/
# and agent/.  Suppressed: ctuuninitvar, its cross-file guess that a buffer
# passed to be filled (process_vm_readv's iovec) is read uninitialized; a
# true finding of it (the live view passed a pointer in the same call that
# set it) was fixed.
. "$(dirname "$0")/lib.sh"
command -v cppcheck >/dev/null || skip "cppcheck is not installed (build-aux/setup installs it)"
cd "$HA_SRCDIR" || fail "no source directory"
inc=()
for d in src/*/ agent; do inc+=(-I "${d%/}"); done
cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
	--suppress=ctuuninitvar --std=c11 "${inc[@]}" -D__x86_64__ -D__linux__ src agent >"$W/cppcheck.out" 2>&1 ||
	{ cat "$W/cppcheck.out"; fail "cppcheck: $(grep -c 'error:\|warning:' "$W/cppcheck.out") findings"; }
echo "ok: cppcheck $(cppcheck --version) clean on src/ and agent/"
