#!/bin/bash
# t_py_lines: src/pyframes reads the code objects of a live CPython as that
# CPython sees them, for every 3.8-3.13 installed (tests/py_lib.sh) and
# Debian's python3.11: tests/py_lines_target.py prints, for each of its
# code objects (loops, functions of 400 lines, line jumps of 300 and 70000
# lines, 600 additions on one line, nested functions and classes, lambdas,
# comprehensions, generators, try/finally, with, decorators), its address,
# names, file and the line of every code unit by Python's own iteration
# and by PyCode_Addr2Line; tests/py_lines_check resolves each offset with
# ha_py_code_resolve and the scan ha_py_addr2line and compares (and the
# names, the file, the cache).  A version not installed is named and left
# out; skipped if none is.
. "$(dirname "$0")/lib.sh"
. "$HA_SRCDIR/tests/py_lib.sh"
require_root
prog=$HA_BUILDDIR/tests/py_lines_check
[ -x "$prog" ] || fail "not built: $prog (make check builds it)"
py_collect
[ "$PY_FOUND" -gt 0 ] || skip "no CPython 3.8-3.13 installed"
while read -r label python _; do
	[ -n "$label" ] || continue
	start_cmd "py-$label" "$python" "$HA_SRCDIR/tests/py_lines_target.py"
	wait_line "$TOUT" '^ready$' 60
	"$prog" "$TPID" "$TOUT" >"$W/check-$label.out" 2>&1
	rc=$?
	head -n 20 "$W/check-$label.out" | sed 's/^/    /'
	[ "$rc" = 0 ] || fail "$label: py_lines_check failed"
	close_fd "$TFD"
	wait_exit "$TPID"
	log "$label: ok ($python)"
done <<<"$PY_LIST"
echo "ok: $PY_FOUND interpreters: every offset on Python's line${PY_MISSING:+ (not installed:$PY_MISSING)}"
