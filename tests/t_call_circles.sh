#!/bin/bash
# t_call_circles: no file of src/ or agent/ calls a function of a file that
# calls it back, directly or round a longer loop (a helper does not call
# into the file that drives it: logging and test hooks live in files of
# their own).  From the symbols the built objects define and use
# (tests/call_circles.py), so a new circle fails here by name.
. "$(dirname "$0")/lib.sh"
command -v nm >/dev/null || skip "nm (binutils) is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"
cd "$HA_BUILDDIR" || fail "no build directory"
objs=()
for a in src/*/lib*.a; do
	case $a in *_san.a) ;; *) objs+=("$a") ;; esac
done
for o in agent/.libs/heapattach_agent_la-*.o src/heapattach-*.o src/heapdiff-*.o; do
	[ -f "$o" ] && objs+=("$o")
done
[ ${#objs[@]} -ge 10 ] || fail "only ${#objs[@]} libraries and objects found: is the tree built?"
python3 "$HA_SRCDIR/tests/call_circles.py" "${objs[@]}" >"$W/circles.out" 2>&1 ||
	{ cat "$W/circles.out"; fail "$(grep -c '^circle:' "$W/circles.out") call circles between files"; }
echo "ok: no call circles among the files of ${#objs[@]} libraries and objects"
