#!/bin/bash
# t_py_offsets: the CPython offsets of src/pyframes, for every 3.8-3.13
# installed (tests/py_lib.sh) and Debian's python3.11:
#  - the committed table (src/pyframes/py_offsets_table.h) is what
#    tools/pyoffsets/generate.sh makes from each installed version's own
#    headers, entry by entry (the release in its comment aside);
#  - on a live interpreter running tests/py_offsets_target.py,
#    tests/py_offsets_check finds it (ha_py_detect: module, version by
#    each way that applies, 3.13 through its _Py_DebugOffsets, which must
#    equal the table's entry), walks its frame chain with the agent's
#    offsets to the code objects and lines Python gives, and reads its
#    strings, bytes and a code object back;
#  - at its exit the interpreter itself checks the _finalizing offset: the
#    word there is its own thread state while it finalizes.
# A version not installed is named and left out; skipped if none is.
. "$(dirname "$0")/lib.sh"
. "$HA_SRCDIR/tests/py_lib.sh"
require_root
prog=$HA_BUILDDIR/tests/py_offsets_check
[ -x "$prog" ] || fail "not built: $prog (make check builds it)"
py_collect
[ "$PY_FOUND" -gt 0 ] || skip "no CPython 3.8-3.13 installed"
table=$HA_SRCDIR/src/pyframes/py_offsets_table.h

# entry MINOR: the entry for 3.MINOR on stdin, without its comment line.
entry() {
	awk -v m="$1" '
		/^\t\{ \/\*/ { blk = ""; on = 1; next }
		on { blk = blk $0 "\n" }
		on && /^\t\},/ { if (blk ~ ("\\.minor = " m ",")) printf "%s", blk; on = 0 }'
}

while read -r label python prefix; do
	[ -n "$label" ] || continue
	if [ "$prefix" != - ]; then
		m=${label#3.}
		sh "$HA_SRCDIR/tools/pyoffsets/generate.sh" --entry "$prefix" >"$W/gen-$label" ||
			fail "generate.sh --entry $prefix failed"
		entry "$m" <"$W/gen-$label" >"$W/new-$label"
		entry "$m" <"$table" >"$W/old-$label"
		[ -s "$W/old-$label" ] || fail "the committed table has no entry for $label"
		diff -u "$W/old-$label" "$W/new-$label" ||
			fail "the committed entry for $label differs from its headers' (tools/pyoffsets/generate.sh)"
		log "$label: the committed entry is the headers' ($(head -n 1 "$W/gen-$label" | tr -d '\t'))"
	fi
	start_cmd "py-$label" "$python" "$HA_SRCDIR/tests/py_offsets_target.py"
	wait_line "$TOUT" '^ready$'
	"$prog" "$TPID" "$TOUT" >"$W/check-$label.out" 2>&1
	rc=$?
	sed 's/^/    /' "$W/check-$label.out"
	[ "$rc" = 0 ] || fail "$label: py_offsets_check failed"
	send "$TFD" "$(grep '^fin ' "$W/check-$label.out")"
	close_fd "$TFD"
	wait_exit "$TPID"
	grep -qx "finalizing ok" "$TOUT" ||
		fail "$label: at its exit, _finalizing was not its thread state ($(tail -n 1 "$TOUT"))"
	log "$label: ok ($python)"
done <<<"$PY_LIST"
echo "ok: $PY_FOUND interpreters agree with the table${PY_MISSING:+ (not installed:$PY_MISSING)}"
