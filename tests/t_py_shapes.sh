#!/bin/bash
# t_py_shapes: Python call chains of other shapes than plain calls, on
# the three frame layouts: pyenv's 3.10 (frame objects, a C call of the
# eval loop per Python call), Debian's python3.11 (_PyInterpreterFrame
# under a cframe, entry frames) and pyenv's 3.12 (shim frames); one not
# installed is named and skipped.  tests/targets/pyapp/server.py runs
# attached (-i 64K, the wrap of pymalloc on) and between snapshots:
#   gen 1200 20000    bytes made in a generator (_blobs, at @gen_blob) are
#                     under through_generator (@through_generator); those
#                     made in a coroutine (_async_blobs, at @async_blob)
#                     are under asyncio's event loop, which resumed it:
#                     Handle._run, then run_until_complete, and only then
#                     through_async (@through_async); each within 25% of
#                     what the program kept;
#   exec 60 10 20000  60 functions made by exec, each dropped as the next
#                     is made, so that their code objects (made_<j> and its
#                     <genexpr>) take the same two addresses in turn
#                     ("reuse" says so), faster than the collector names
#                     them; then 20 more, one a command, each named (a
#                     snapshot) before the next takes its place: a row
#                     names one j only (function made_<j>, file "<made j>")
#                     and holds the size made_<j> allocated (20000 + 1000 j
#                     + 33 bytes), or says "(code object gone)"; never
#                     another j; each of the last 20 is named;
#   deep 300 600 20000  recursion past what the agent records (128 frames)
#                     and past a stack's 128 pcs: the rows' Python frames
#                     are deep at @deep_bottom, then deep at @deep only;
#   raise 300000      a property that raises, called by hasattr from
#                     _raise_once (@raise_call): from 3.12 the eval loop of
#                     the property unlinks its frame before it clears it,
#                     and the clear makes _raise_once's frame object, an
#                     allocation of an eval loop with no Python frame left
#                     (an empty run): that eval frame stays native, just
#                     inside _raise_once (3.12: at least one such row; 3.10
#                     and 3.11 clear the frame after the eval loop returned:
#                     none); every Python frame inside _raise_once is the
#                     property's (@raise_inside);
#   sqlite 20000      a thread in sqlite3_step, the GIL released while the
#                     main thread waits in join: every row through
#                     sqlite3_step has the worker's _sqlite_work (at
#                     one of its statements: @sqlite_create, @sqlite_insert,
#                     @sqlite_select) as its first Python
#                     frame outside it and threading's _bootstrap further
#                     out, never a frame of the main thread (server.py,
#                     sqlite_thread).
# Every sample with Python frames is merged (the -v summary: 0 left
# native), and the service goes on after the detach.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/py_lib.sh"
require_all
APP=$HA_SRCDIR/tests/targets/pyapp
CACHE=$APP/cache.py

for m in gen_blob through_generator async_blob through_async deep deep_bottom deep_loop sqlite_create \
	sqlite_insert sqlite_select raise_call raise_inside; do
	v=$(line_of "$CACHE" "$m")
	[ -n "$v" ] || fail "no line marked @$m in $CACHE"
	printf -v "L_$m" '%s' "$v"
done

# The three layouts: pyenv's 3.10 and 3.12, Debian's 3.11.
PYS=""
missing=""
for m in 10 12; do
	p=$(py_prefix "$m")
	if [ -n "$p" ]; then PYS+="3.$m $p/bin/python3.$m"$'\n'; else missing+=" 3.$m (pyenv)"; fi
done
if [ -x /usr/bin/python3.11 ]; then PYS+="debian-3.11 /usr/bin/python3.11"$'\n'; else missing+=" /usr/bin/python3.11"; fi
[ -z "$missing" ] || log "not installed, not checked:$missing"
[ -n "$PYS" ] || skip "none of pyenv's 3.10 and 3.12 and Debian's python3.11 is installed"

# rows DB A B: every stack that allocated between snapshots A and B, one
# line a frame, leaf first: "stack|alloc bytes|alloc objects|live bytes|
# pos|function|file|line|module" (module "py": a Python frame).
rows() {
	sqlite3 "$1" "WITH g AS (SELECT stack_id, sum(alloc_bytes_delta) AS ab,
	       sum(alloc_count_delta) AS ac, sum(live_bytes_delta) AS lb FROM growth
	  WHERE from_snapshot = $2 AND to_snapshot = $3 GROUP BY stack_id HAVING ac > 0)
	SELECT g.stack_id, printf('%.1f', g.ab), printf('%.6f', g.ac), printf('%.1f', g.lb),
	       sf.pos, f.function, f.file, f.line, m.path
	  FROM g JOIN stack_frames sf ON sf.stack_id = g.stack_id
	  JOIN frames f ON f.id = sf.frame_id JOIN modules m ON m.id = f.module_id
	 ORDER BY g.stack_id, sf.pos" || fail "sqlite3 could not read $1"
}

# The rows grouped: each check's awk defines row() (called once a stack,
# with fn[], fl[], ln[], md[] 1..n; pi[1..np] the indexes of its Python
# frames, leaf first; ab, ac, lb) and done().
ROWS_AWK='
BEGIN { FS = "|" }
$1 != cur { if (cur != "") row(); cur = $1; ab = $2; ac = $3; lb = $4; n = 0; np = 0 }
{ n++; fn[n] = $6; fl[n] = $7; ln[n] = $8; md[n] = $9; if ($9 == "py") pi[++np] = n }
END { if (cur != "") row(); done() }
function at(i) { return fn[i] " " fl[i] ":" ln[i] }
function bad(why) { print "BAD stack " cur ": " why; nbad++ }
'

# gen: the rows of large objects (the blobs, 20033 bytes; the small ones
# made at the await, or in asyncio.sleep, are not looked at) through _blobs
# or _async_blobs; prints "gen BYTES async BYTES" after any BAD lines.
CHECK_GEN='
function row(  f, i, k, r, u, g) {
	for (k = 1; k <= np; k++) if (fn[pi[k]] ~ /^_(async_)?blobs$/) g = 1
	if (!g || ab / ac < 10000) return
	f = pi[1]
	if (fn[f] == "_blobs") {
		if (fl[f] != cache || ln[f] != l_gen) bad("_blobs at " fl[f] ":" ln[f] ", not @gen_blob " l_gen)
		i = pi[2]
		if (fn[i] != "through_generator" || fl[i] != cache || ln[i] != l_tgen) bad("_blobs under " at(i) ", not through_generator at " l_tgen)
		gen += lb
	} else if (fn[f] == "_async_blobs") {
		if (fl[f] != cache || ln[f] != l_async) bad("_async_blobs at " fl[f] ":" ln[f] ", not @async_blob " l_async)
		# Resumed by the event loop (a task step, in C): its callers are
		# the loop'"'"'s frames, through_async only beyond them.
		i = pi[2]
		if (fn[i] !~ /(^|\.)_run$/ || fl[i] !~ /asyncio\/events\.py$/) bad("_async_blobs under " at(i) ", not the event loop'"'"'s Handle._run")
		for (k = 3; k <= np; k++) {
			if (fn[pi[k]] ~ /(^|\.)run_until_complete$/ && fl[pi[k]] ~ /asyncio\/base_events\.py$/) r = k
			if (fn[pi[k]] == "through_async" && fl[pi[k]] == cache && ln[pi[k]] == l_tasync) u = k
		}
		if (!r || !u || u < r) bad("no run_until_complete, then through_async at " l_tasync ", outside _async_blobs")
		async += lb
	} else
		bad("large objects of _blobs or _async_blobs under " at(f))
}
function done() { printf "gen %.0f async %.0f\n", gen, async }
'

# exec: prints "ok ROWS js DISTINCT late LATE gone ROWS" after any BAD
# lines (LATE: of the j >= 60, those named with their blobs).
CHECK_EXEC='
function row(  k, s, j, js, nj, want, r, g) {
	nj = 0; g = 0
	for (k = 1; k <= np; k++) {
		s = fn[pi[k]]
		if (s == "(code object gone)") { g++; continue }
		if (match(s, /made_[0-9]+/)) { j = substr(s, RSTART + 5, RLENGTH - 5); if (!(j in js)) { js[j]; nj++ } }
		s = fl[pi[k]]
		if (match(s, /^<made [0-9]+>$/)) { j = substr(s, 7, RLENGTH - 7); if (!(j in js)) { js[j]; nj++ } }
	}
	if (nj == 0) { if (g) gone++; return }
	if (nj > 1) { bad("names more than one made_<j>: " names()); return }
	for (j in js) ;
	r = ab / ac
	want = size + 1000 * j + 33
	# Large objects: made_<j>'"'"'s blobs, their size exactly (every sample of
	# the row the same size); small ones (the list, the generator) only
	# named.
	if (r > 1000 && (r < want * 0.995 || r > want * 1.005)) {
		bad(sprintf("named made_%d (blobs of %d bytes) but holds objects of %.1f bytes: %s", j, want, r, names()))
		return
	}
	ok++
	if (r > 1000) seen[j]
}
function names(  k, s) { s = ""; for (k = 1; k <= np; k++) s = s at(pi[k]) "; "; return s }
function done(  j, c, l) { for (j in seen) { c++; if (j + 0 >= 60) l++ }; printf "ok %d js %d late %d gone %d\n", ok, c, l, gone }
'

# deep: the rows through deep.  Those of the blobs (20033 bytes) are made
# at @deep_bottom, 300 deep, and every outer Python frame they show is
# deep at @deep; other objects (3.10's frame objects, 3.12's 16 KiB chunks
# of its frame stack) are made at @deep too, in a call, at any depth:
# outside the deep frames, run of server.py; the loop's ints (28 bytes,
# past the small-int cache) at @deep_loop.
# Prints "rows R bytes B frames MIN MAX" of the blobs' rows.
CHECK_DEEP='
function row(  k, f, d, blob) {
	d = 0
	for (k = 1; k <= np; k++) if (fn[pi[k]] == "deep") d++
	if (!d) return
	blob = ab / ac > 20033 * 0.98 && ab / ac < 20033 * 1.02
	f = pi[1]
	if (fn[f] != "deep" || fl[f] != cache ||
	    (ln[f] != l_bottom && (blob || (ln[f] != l_deep && ln[f] != l_loop))))
		bad(sprintf("leaf Python frame %s of objects of %.0f bytes, not deep at @deep_bottom %d", at(f), ab / ac, l_bottom))
	for (k = 2; k <= np; k++)
		if (fn[pi[k]] != "deep" || fl[pi[k]] != cache || ln[pi[k]] != l_deep) break
	if (k <= np && (blob || fn[pi[k]] != "run" || fl[pi[k]] !~ /\/server\.py$/))
		bad(sprintf("Python frame %d of objects of %.0f bytes is %s, not deep at @deep %d", k, ab / ac, at(pi[k]), l_deep))
	if (!blob) return
	rows++
	if (min == "" || d < min) min = d
	if (d > max) max = d
	bytes += lb
}
function done() { printf "rows %d bytes %.0f frames %d %d\n", rows, bytes, min, max }
'

# sqlite: rows through sqlite3_step; prints "rows R bytes B".
CHECK_SQLITE='
function row(  k, s, p, boot) {
	s = 0
	for (k = 1; k <= n; k++) if (fn[k] == "sqlite3_step") s = k
	if (!s) return
	rows++
	bytes += ab
	for (k = 1; k <= np; k++) {
		if (pi[k] > s && !p) p = pi[k]
		if (fl[pi[k]] ~ /\/server\.py$/ || fn[pi[k]] == "sqlite_thread") bad("a frame of the main thread: " at(pi[k]))
		if (fn[pi[k]] ~ /(^|\.)_bootstrap$/ && fl[pi[k]] ~ /\/threading\.py$/) boot = 1
	}
	if (!p) { bad("no Python frame outside sqlite3_step"); return }
	if (fn[p] != "_sqlite_work" || fl[p] != cache || (ln[p] != l_cre && ln[p] != l_ins && ln[p] != l_sel))
		bad("sqlite3_step under " at(p) ", not _sqlite_work at one of its statements, " l_cre ", " l_ins ", " l_sel)
	if (!boot) bad("no threading _bootstrap outside _sqlite_work")
}
function done() { printf "rows %d bytes %.0f\n", rows, bytes }
'

# raise: rows through _raise_once; prints "rows R empty E" (E: those with
# a native eval frame kept just inside _raise_once, an empty run).
CHECK_RAISE='
function row(  k, r, e, i) {
	r = 0
	for (k = 1; k <= np; k++) if (fn[pi[k]] == "_raise_once") { r = pi[k]; break }
	if (!r) return
	rows++
	if (fl[r] != cache || ln[r] != l_call) bad("_raise_once at " fl[r] ":" ln[r] ", not @raise_call " l_call)
	for (i = 1; i < k; i++)
		if (fn[pi[i]] !~ /(^|\.)value$/ || fl[pi[i]] != cache || ln[pi[i]] != l_inside)
			bad("inside _raise_once: " at(pi[i]) ", not the property at @raise_inside " l_inside)
	e = 0
	for (i = r - 1; i >= 1 && md[i] != "py"; i--) if (fn[i] == "_PyEval_EvalFrameDefault") e = 1
	if (e && k > 1) bad("an eval frame kept native inside the property'"'"'s frames")
	empty += e
}
function done() { printf "rows %d empty %d\n", rows, empty }
'

# left_native DB: up to 3 stacks that kept a native eval frame, one line
# each, leaf first (what to look at when samples were left native).
left_native() {
	sqlite3 "$1" "SELECT sf.stack_id, group_concat(f.function || ':' || f.line, ' < ')
	  FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
	 WHERE sf.stack_id IN (SELECT sf2.stack_id FROM stack_frames sf2 JOIN frames f2 ON f2.id = sf2.frame_id
	                        WHERE f2.function = '_PyEval_EvalFrameDefault' LIMIT 3)
	 GROUP BY sf.stack_id" | cut -c1-2000 | sed 's/^/    /'
}

# verdict LABEL WHAT FILE: the check's BAD lines fail the test.
verdict() {
	if grep -q '^BAD' "$3"; then
		head -n 20 "$3" | sed 's/^/    /'
		fail "$1: $2: $(grep -c '^BAD' "$3") wrong rows (above)"
	fi
}

checked=""
while read -r label py; do
	[ -n "$label" ] || continue
	log "== $label: $py"
	db=$W/$label.db
	# --block: no sample dropped, when the ring fills with 3.10's deep
	# stacks (a C frame of the eval loop a Python call).
	py_attach_app "$label" "$py" "$db" -i 64K --block --python all
	py_snap "$db"; s0=$SNAP
	target_cmd "gen 1200 20000"
	py_snap "$db"; s1=$SNAP
	target_cmd "exec 60 10 20000"
	for ((j = 60; j < 80; j++)); do
		target_cmd "exec 1 30 20000"
		py_snap "$db"
	done
	s2=$SNAP
	target_cmd "deep 300 600 20000"
	py_snap "$db"; s3=$SNAP
	target_cmd "sqlite 20000"
	py_snap "$db"; s4=$SNAP
	target_cmd "raise 300000"
	py_snap "$db"; s5=$SNAP
	target_cmd reuse
	reuse=$(grep '^done reuse ' "$TOUT" | tail -n 1)
	detach_by_signal INT "$pid"
	target_cmd "grow 1 10"
	send "$TFD" quit
	wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "$label: python exited $RC after the detach"
	summary=$(grep '^heapattach: Python: ' "$HA_ERR")
	log "$label: $summary"
	case $summary in
	*" 0 left native "*) ;;
	*) left_native "$db"
		fail "$label: samples with Python frames were left native: $summary (stacks with an eval frame above)" ;;
	esac

	# Generators and coroutines.
	rows "$db" "$s0" "$s1" | awk -v cache="$CACHE" -v l_gen="$L_gen_blob" -v l_tgen="$L_through_generator" \
		-v l_async="$L_async_blob" -v l_tasync="$L_through_async" "$ROWS_AWK $CHECK_GEN" >"$W/$label.gen"
	verdict "$label" "gen" "$W/$label.gen"
	read -r _ gen _ async <"$W/$label.gen"
	log "$label: gen: under _blobs $gen bytes, under _async_blobs $async (each kept 24000000)"
	within 25 "$gen" 24000000 || fail "$label: _blobs's rows hold $gen bytes, the generator kept 24000000"
	within 25 "$async" 24000000 || fail "$label: _async_blobs's rows hold $async bytes, the coroutine kept 24000000"
	"$HA_BUILDDIR/src/heapdiff" --bytes -n 2 "$db" "$s0" "$s1" | grep -E 'stack [0-9]|\[py\]' | head -n 24 | sed 's/^/    /'

	# Code objects made by exec, their addresses reused.
	log "$label: exec: $reuse"
	[[ $reuse =~ ^done\ reuse\ made\ 160\ at\ ([0-9]+)\ addresses$ ]] ||
		fail "$label: the service did not answer 'reuse' as expected: $reuse"
	[ "${BASH_REMATCH[1]}" -lt 80 ] || fail "$label: the code objects made by exec hardly shared addresses ($reuse): nothing tested"
	rows "$db" "$s1" "$s2" | awk -v size=20000 "$ROWS_AWK $CHECK_EXEC" >"$W/$label.exec"
	verdict "$label" "exec" "$W/$label.exec"
	read -r _ ok _ js _ late _ gone <"$W/$label.exec"
	log "$label: exec: $ok rows named one made_<j> rightly (blobs of $js distinct j, $late of the 20 named before the next), $gone rows of code objects gone"
	[ "$late" = 20 ] || fail "$label: only $late of the 20 made_<j> named before the next one took their place were named with their blobs"

	# Recursion past the caps.
	rows "$db" "$s2" "$s3" | awk -v cache="$CACHE" -v l_bottom="$L_deep_bottom" -v l_deep="$L_deep" -v l_loop="$L_deep_loop" \
		"$ROWS_AWK $CHECK_DEEP" >"$W/$label.deep"
	verdict "$label" "deep" "$W/$label.deep"
	read -r _ drows _ dbytes _ dmin dmax <"$W/$label.deep"
	log "$label: deep: $drows rows, $dbytes bytes (kept 12000000), $dmin to $dmax deep frames a row"
	[ "$drows" -ge 1 ] || fail "$label: no row through deep"
	[ "$dmin" -ge 30 ] || fail "$label: a row through deep has only $dmin deep frames"
	within 40 "$dbytes" 12000000 || fail "$label: deep's rows hold $dbytes bytes, it kept 12000000"

	# A thread in sqlite3_step without the GIL.
	rows "$db" "$s3" "$s4" | awk -v cache="$CACHE" -v l_cre="$L_sqlite_create" -v l_ins="$L_sqlite_insert" -v l_sel="$L_sqlite_select" \
		"$ROWS_AWK $CHECK_SQLITE" >"$W/$label.sqlite"
	verdict "$label" "sqlite" "$W/$label.sqlite"
	read -r _ srows _ sbytes <"$W/$label.sqlite"
	log "$label: sqlite: $srows rows through sqlite3_step, $sbytes bytes allocated, each under the worker's _sqlite_work"
	[ "$srows" -ge 2 ] && [ "$sbytes" -ge 1000000 ] ||
		fail "$label: too little through sqlite3_step ($srows rows, $sbytes bytes): is sqlite3_step named?"

	# An eval loop whose frames are gone.
	rows "$db" "$s4" "$s5" | awk -v cache="$CACHE" -v l_call="$L_raise_call" -v l_inside="$L_raise_inside" \
		"$ROWS_AWK $CHECK_RAISE" >"$W/$label.raise"
	verdict "$label" "raise" "$W/$label.raise"
	read -r _ rrows _ rempty <"$W/$label.raise"
	log "$label: raise: $rrows rows through _raise_once, $rempty with the empty run's eval frame kept"
	[ "$rrows" -ge 2 ] || fail "$label: too few rows through _raise_once ($rrows)"
	case $label in
	3.1[0-1] | debian-3.11) [ "$rempty" = 0 ] || fail "$label: an eval frame kept inside _raise_once, where the frame is cleared after the eval loop" ;;
	*) [ "$rempty" -ge 1 ] || fail "$label: no row with the empty run's eval frame (the caller's frame object made as the property's frame is cleared)" ;;
	esac
	checked+=" $label"
done <<<"$PYS"
log "checked:$checked"
