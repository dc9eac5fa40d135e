#!/bin/bash
# t_demo_quiet: `make demo`, the README's first command after
# build-aux/setup, shows the demo, not the compiler (issue 38):
#  - the configured build has automake's silent rules on by default
#    (AM_DEFAULT_VERBOSITY = 0 in the Makefile: "CC file", not the
#    compiler's command line);
#  - with a compiler that fails (CC=false) and a program of the demo to
#    rebuild, make demo exits non-zero, shows the end of the build's output
#    and names the file that holds all of it (DEMO_LOG);
#  - with that program to rebuild and a working compiler, make demo prints
#    one line (and the demo's own blank one) before the demo begins, no
#    line of the compiler's or make's, the build's output is in DEMO_LOG,
#    and the demo runs to its end (exit 0: the leak since the attach, the
#    leak suspects, the job's peak, the HTML page).
# A program to rebuild: tests/targets/leaky.c made newer than its object
# for the test, its time put back at the end (rebuilding the tree from
# clean would take minutes; one program shows where the compiler's lines
# go).  The demo attaches to its programs: root.
. "$(dirname "$0")/lib.sh"
require_all leaky peak_free
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed (the demo's last step)"
command -v make >/dev/null || skip "make is not installed"
MK=$HA_BUILDDIR/Makefile
[ -f "$MK" ] || fail "no Makefile in $HA_BUILDDIR"

grep -qx 'AM_DEFAULT_VERBOSITY = 0' "$MK" ||
	fail "the build is not quiet by default: $(grep '^AM_DEFAULT_VERBOSITY' "$MK" || echo 'no silent rules')"
echo "ok: silent rules by default"

src=$HA_SRCDIR/tests/targets/leaky.c
old=$(stat -c %y "$src") || fail "stat $src"
at_exit "touch -d '$old' '$src'"
touch "$src" || fail "touch $src"
# make demo as a newcomer runs it, in the build tree, outside any other make.
demo() {
	(cd "$HA_BUILDDIR" && exec env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		HEAPATTACH_DEMO_HTML="$W/demo.html" nice -n 19 make demo "$@")
}

# ---- the build fails
demo CC=false DEMO_LOG="$W/fail.log" >"$W/fail.out" 2>&1
rc=$?
[ "$rc" != 0 ] || fail "make demo CC=false exited 0: $(cat "$W/fail.out")"
grep -qx "demo: the build failed; the whole of its output is in $W/fail.log" "$W/fail.out" ||
	fail "make demo CC=false does not name the build's log: $(cat "$W/fail.out")"
grep -q 'leaky' "$W/fail.log" || fail "the build's log does not hold the failed build: $(cat "$W/fail.log")"
! grep -q '^demo: a leaky service' "$W/fail.out" || fail "the demo ran although its build failed"
echo "ok: a failed build: its end, the log named, exit $rc"

# ---- the demo
demo DEMO_LOG="$W/build.log" >"$W/demo.out" 2>&1
rc=$?
[ "$rc" = 0 ] || fail "make demo exited $rc: $(tail -n 30 "$W/demo.out")"
before=$(awk '/^demo: a leaky service runs as pid/ { exit } { print }' "$W/demo.out")
log "before the demo: $(printf '%s\n' "$before" | sed 's/^/    | /')"
grep -q '^demo: a leaky service runs as pid' "$W/demo.out" || fail "the demo did not begin: $(head -n 20 "$W/demo.out")"
[ "$(printf '%s\n' "$before" | grep -c .)" -le 1 ] || fail "more than one line before the demo: $before"
! printf '%s\n' "$before" | grep -Eq 'gcc|cc1|libtool|  CC|CCLD|make(\[[0-9]+\])?:' ||
	fail "the compiler's or make's lines before the demo: $before"
grep -q 'CC .*tests/targets/leaky' "$W/build.log" || fail "the build's log does not hold the rebuild of leaky: $(cat "$W/build.log")"
for re in '^demo: what leaks' '^total: live heap \+' '^peak: snapshot [0-9]+ holds the highest' '^demo: the page is '; do
	grep -Eq "$re" "$W/demo.out" || fail "the demo's output has no /$re/: $(tail -n 30 "$W/demo.out")"
done
[ -s "$W/demo.html" ] || fail "the demo wrote no HTML page"
echo "ok: make demo: one line, then the demo, to its end"
