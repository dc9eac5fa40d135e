#!/bin/bash
# t_py_frames: Python frames in every stack, on every installed CPython
# 3.8-3.13 (pyenv builds) and Debian's python3.11 (a static executable
# without a full symbol table); those not installed are named and skipped.
# For each: tests/targets/pyapp/server.py runs attached (-i 64K), with the
# wrap of pymalloc in place ("Python frames and small objects on"), then
#   grow 300 100000   30 MB of bytes objects through a known call chain:
#                     the top row's Python frames are, leaf first,
#                     make_blob cache.py:L(@make_blob), remember
#                     cache.py:L(@remember), run server.py:L(@run_grow),
#                     each "[py]", in place of the eval loop's frames; its
#                     bytes within 25% of what the program kept;
#   small 60000       objects of ~100 bytes (pymalloc's arenas): the rows
#                     under remember_small add up to within 50% of what
#                     CPython says they keep (sys.getsizeof), and the row
#                     at L(@remember_small) is among the first three.
# Every sample with Python frames is merged (none left native), the
# session record (sessions.python) says so, and the service goes on after
# the detach.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/py_lib.sh"
require_all
APP=$HA_SRCDIR/tests/targets/pyapp
py_collect
[ "$PY_FOUND" -gt 0 ] || skip "no CPython 3.8-3.13 installed (pyenv builds, or Debian's python3.11)"

L_BLOB=$(line_of "$APP/cache.py" make_blob)
L_REMEMBER=$(line_of "$APP/cache.py" remember)
L_RUN=$(line_of "$APP/server.py" run_grow)
L_SMALL=$(line_of "$APP/cache.py" remember_small)
[ -n "$L_BLOB" ] && [ -n "$L_REMEMBER" ] && [ -n "$L_RUN" ] && [ -n "$L_SMALL" ] ||
	fail "markers missing in $APP"

# py_rows FILE: of heapdiff --bytes text output, one line per row:
# "BYTES FIRST-PY-FRAME" where FIRST-PY-FRAME is "function file:line" of the
# row's first [py] frame ("-" if none).
py_rows() {
	awk '
		/^ *[-+]?[0-9]+ +[-+]?[0-9]+ +stack [0-9]+$/ { if (row != "") print row " " (py == "" ? "-" : py); row = $1; py = ""; next }
		row != "" && py == "" && /  \[py\]$/ { l = $0; sub(/^ +/, "", l); sub(/  \[py\]$/, "", l); gsub(/  +/, " ", l); py = l }
		END { if (row != "") print row " " (py == "" ? "-" : py) }
	' "$1"
}

# py_frames_of_top FILE: the [py] frames of the first row, leaf first, one
# "function file:line" a line.
py_frames_of_top() {
	awk '
		/^ *[-+]?[0-9]+ +[-+]?[0-9]+ +stack [0-9]+$/ { if (seen) exit; seen = 1; next }
		seen && /  \[py\]$/ { l = $0; sub(/^ +/, "", l); sub(/  \[py\]$/, "", l); gsub(/  +/, " ", l); print l }
	' "$1"
}

checked=""
while read -r label py prefix; do
	[ -n "$label" ] || continue
	log "== $label: $py"
	db=$W/$label.db
	py_attach_app "$label" "$py" "$db" -i 64K --python all
	grep -q "^heapattach: Python 3\.[0-9]* (.*): Python frames in every stack$" "$HA_ERR" ||
		fail "$label: heapattach did not find its CPython: $(grep -i python "$HA_ERR")"
	# (the signals' snapshots by id: periodic ones come between them)
	py_snap "$db"; s1=$SNAP
	target_cmd "grow 300 100000"
	big=$(sed -n 's/^done grow kept [0-9]* added \([0-9]*\)$/\1/p' "$TOUT" | tail -n 1)
	py_snap "$db"; s2=$SNAP
	target_cmd "small 60000"
	small=$(sed -n 's/^done small kept [0-9]* added \([0-9]*\)$/\1/p' "$TOUT" | tail -n 1)
	py_snap "$db"; s3=$SNAP
	detach_by_signal INT "$pid"
	target_cmd "grow 1 10"
	send "$TFD" quit
	wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "$label: python exited $RC after the detach"
	grep -E "^heapattach: Python: " "$HA_ERR" | sed 's/^/    /'
	rec=$(sqlite3 "$db" "SELECT python FROM sessions ORDER BY id DESC LIMIT 1")
	log "sessions.python: $rec"
	case $rec in
	"Python 3."*": "*" samples with Python frames, 0 left native; frames and small objects on") ;;
	*) fail "$label: the session record says '$rec'" ;;
	esac
	grep -Eq "^heapattach: Python: [1-9][0-9]* samples with Python frames, [0-9]+ merged into their stacks, 0 left native" "$HA_ERR" ||
		fail "$label: samples with Python frames were left native: $(grep '^heapattach: Python: ' "$HA_ERR")"

	# The large objects: the top row, its Python frames in order.
	"$HA_BUILDDIR/src/heapdiff" --bytes "$db" "$s1" "$s2" >"$W/$label.grow" || fail "heapdiff failed"
	py_frames_of_top "$W/$label.grow" >"$W/$label.top"
	sed 's/^/    /' "$W/$label.top" | head -n 6
	want=$(printf '%s\n' "make_blob $APP/cache.py:$L_BLOB" "remember $APP/cache.py:$L_REMEMBER" \
		"run $APP/server.py:$L_RUN")
	[ "$(head -n 3 "$W/$label.top")" = "$want" ] ||
		fail "$label: the top row's Python frames are not make_blob, remember, run at their lines: $(head -n 3 "$W/$label.top" | tr '\n' '|')"
	got=$(heapdiff_rows "$W/$label.grow" | head -n 1 | cut -d' ' -f1)
	log "$label: grow: top row $got bytes, the program kept $big"
	within 25 "$got" "$big" || fail "$label: the top row holds $got bytes, the program kept $big (more than 25% apart)"

	# The small objects: every row under remember_small.
	"$HA_BUILDDIR/src/heapdiff" --bytes -n 0 "$db" "$s2" "$s3" >"$W/$label.small" || fail "heapdiff failed"
	py_rows "$W/$label.small" >"$W/$label.rows"
	sed 's/^/    /' "$W/$label.rows" | head -n 6
	sum=$(awk -v f="remember_small $APP/cache.py:" 'index($0, " " f) { s += $1 } END { print s + 0 }' "$W/$label.rows")
	log "$label: small: rows under remember_small $sum bytes, CPython counts $small"
	within 50 "$sum" "$small" || fail "$label: remember_small's rows hold $sum bytes, CPython counts $small (more than 50% apart)"
	head -n 3 "$W/$label.rows" | grep -q " remember_small $APP/cache.py:$L_SMALL\$" ||
		fail "$label: no row at remember_small's line $L_SMALL among the first three"
	checked+=" $label"
done <<<"$PY_LIST"
log "checked:$checked"
