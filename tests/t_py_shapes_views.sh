#!/bin/bash
# t_py_shapes_views: Python frames through every view of heapdiff, a
# target that exits while attached, and --no-python; on Debian's
# python3.11 (skipped without it).
#   views   tests/targets/pyapp/server.py attached (-i 64K, the wrap of
#           pymalloc on) runs grow 200 100000 (make_blob, cache.py), small
#           20000 (remember_small, cache.py) and here 200 100000 (server.py
#           only); between two snapshots:
#             -f folded  a Python frame is "function (file.py:LINE)":
#                        "run (server.py:L);remember (cache.py:L);make_blob
#                        (cache.py:L)" on the grow's line;
#             -f json    make_blob's frame has its function, file, line and
#                        module "py"; every Python frame but "(code object
#                        gone)" has a file and a line;
#             -f pprof   decoded here (no protobuf module): make_blob's
#                        Function has its name and file name, its Line the
#                        line; a Python Function has no system name, so
#                        that go tool pprof (when installed) keeps
#                        <module> as it is (it drops a "<...>" of a name it
#                        takes for demangled C++: <module> came out empty);
#             -f svg     well-formed, a frame titled "make_blob
#                        (cache.py:L)", <module> escaped;
#             -f html    its data holds make_blob's file and line, <module>
#                        escaped; rendered by Chromium (when it can), the
#                        flame graph shows "make_blob (cache.py:L)";
#             --function cache.py / make_blob  only the rows with such a
#                        frame (the here row, the remember_small row left
#                        out), and every such row;
#             --by function  make_blob and here with their files, each's
#                        cumulative bytes within 25% of what it kept;
#   exit    a short python3 program, attached with the wrap on, keeps 30 MB
#           (fill, at @fill) and exits on its own: heapattach says "target
#           PID exited" and exits 0; the database holds fill's rows, at
#           its line under <module>, within 25% at the peak, which holds
#           (within 2%) all the session booked as allocated under fill
#           (one ring: the records in the order they were made);
#   --no-python  the same grow: no Python frame anywhere in the database,
#           no line of -v about Python frames or the wrap, sessions.python
#           empty, and the grow's row still within 25%, under native
#           frames.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/report_lib.sh"
. "$(dirname "$0")/py_lib.sh"
require_all
PY=/usr/bin/python3.11
[ -x "$PY" ] || skip "Debian's /usr/bin/python3.11 is not installed (Debian package python3.11)"
APP=$HA_SRCDIR/tests/targets/pyapp
CACHE=$APP/cache.py
SERVER=$APP/server.py
L_BLOB=$(line_of "$CACHE" make_blob)
L_REMEMBER=$(line_of "$CACHE" remember)
L_SMALL=$(line_of "$CACHE" remember_small)
L_RUN=$(line_of "$SERVER" run_grow)
L_HERE=$(line_of "$SERVER" here)
[ -n "$L_BLOB" ] && [ -n "$L_REMEMBER" ] && [ -n "$L_SMALL" ] && [ -n "$L_RUN" ] && [ -n "$L_HERE" ] ||
	fail "markers missing in $APP"

# ------------------------------------------------------------ the views
db=$W/views.db
py_attach_app views "$PY" "$db" -i 64K --block --python all
py_snap "$db"; a=$SNAP
target_cmd "grow 200 100000"
target_cmd "small 20000"
target_cmd "here 200 100000"
py_snap "$db"; b=$SNAP
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "python exited $RC after the detach"
grep -q '^heapattach: Python: .* 0 left native' "$HA_ERR" || fail "samples left native: $(grep '^heapattach: Python: ' "$HA_ERR")"

# folded
hd -f folded "$db" "$a" "$b" >"$W/v.folded"
want="run (server.py:$L_RUN);remember (cache.py:$L_REMEMBER);make_blob (cache.py:$L_BLOB);"
grep -qF -- "$want" "$W/v.folded" || fail "folded: no line through '$want': $(grep -m1 make_blob "$W/v.folded")"
grep -qF -- "here (server.py:$L_HERE);" "$W/v.folded" || fail "folded: no line through here (server.py:$L_HERE)"
grep -qF -- "<module> (server.py:" "$W/v.folded" || fail "folded: no <module> (server.py:LINE) frame"
log "folded: $(grep -F -- "$want" "$W/v.folded" | head -n 1 | sed 's/.*PyEval_EvalCode;//')"

# json
hd -f json -n 0 "$db" "$a" "$b" >"$W/v.json"
python3 - "$W/v.json" "$CACHE" "$L_BLOB" <<'PY' || fail "json: Python frames not as expected"
import json, sys
d = json.load(open(sys.argv[1]))
blob = {"function": "make_blob", "file": sys.argv[2], "line": int(sys.argv[3]), "module": "py"}
seen = 0
for row in d["rows"]:
    for f in row["frames"]:
        if f["module"] != "py":
            continue
        if all(f[k] == v for k, v in blob.items()):
            seen += 1
        assert f["function"] == "(code object gone)" or (f["file"] and f["line"] > 0), f
assert seen, "no make_blob frame with its file and line"
print("json: make_blob at %s:%s in %d rows" % (sys.argv[2], sys.argv[3], seen))
PY

# pprof: the Functions and Lines, decoded here
hd -f pprof -o "$W/v.pb.gz" "$db" "$a" "$b"
python3 - "$W/v.pb.gz" >"$W/v.pprof" <<'PY' || fail "pprof: cannot decode the profile"
import gzip, sys
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        t = k & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        elif t == 1:
            v = b[i:i + 8]; i += 8
        elif t == 5:
            v = b[i:i + 4]; i += 4
        else:
            raise ValueError("wire type %d" % t)
        yield k >> 3, v
strings, funcs, lines = [], {}, []
for f, v in fields(gzip.decompress(open(sys.argv[1], "rb").read())):
    if f == 6:       # string_table
        strings.append(v.decode())
    elif f == 5:     # Function: id 1, name 2, system_name 3, filename 4
        m = dict(fields(v))
        funcs[m.get(1, 0)] = (m.get(2, 0), m.get(3, 0), m.get(4, 0))
    elif f == 4:     # Location: line 4 (Line: function_id 1, line 2)
        for g, w in fields(v):
            if g == 4:
                m = dict(fields(w))
                lines.append((m.get(1, 0), m.get(2, 0)))
for fid, line in lines:
    name, system, fname = funcs[fid]
    print("%s|%s|%d|%s" % (strings[name], strings[fname], line, strings[system]))
PY
grep -qxF -- "make_blob|$CACHE|$L_BLOB|" "$W/v.pprof" ||
	fail "pprof: no Line of make_blob at $CACHE:$L_BLOB (system name empty): $(grep make_blob "$W/v.pprof" | head -n 2)"
grep -qE -- "^<module>\|$SERVER\|[0-9]+\|\$" "$W/v.pprof" || fail "pprof: no <module> of server.py without a system name"
grep -E -- "^make_blob\||^<module>\|" "$W/v.pprof" | sort -u | sed 's/^/    pprof: /'
if command -v go >/dev/null; then
	export GOCACHE=$W/gocache GOPATH=$W/gopath HOME=$W
	go tool pprof -raw "$W/v.pb.gz" >"$W/v.raw" 2>"$W/pprof.err" || fail "go tool pprof -raw: $(cat "$W/pprof.err")"
	grep -qF -- " make_blob $CACHE:$L_BLOB " "$W/v.raw" || fail "go tool pprof -raw shows no make_blob $CACHE:$L_BLOB"
	go tool pprof -top -sample_index=inuse_space "$W/v.pb.gz" >"$W/v.top" 2>"$W/pprof.err" ||
		fail "go tool pprof -top: $(cat "$W/pprof.err")"
	grep -qE '  <module>$' "$W/v.top" || fail "go tool pprof -top does not show <module>: $(grep -c '\[py\]' "$W/v.top") frames named [py]"
	! grep -qE '  \[py\]$' "$W/v.top" || fail "go tool pprof -top shows a Python frame without its name ([py])"
	log "go tool pprof: make_blob at $CACHE:$L_BLOB, <module> named"
else
	log "go is not installed: the profile was decoded here only"
fi

# svg
hd -f svg "$db" "$a" "$b" >"$W/v.svg"
python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$W/v.svg" ||
	fail "svg: not well-formed XML"
grep -qF -- "<title>make_blob (cache.py:$L_BLOB) (+" "$W/v.svg" || fail "svg: no frame titled make_blob (cache.py:$L_BLOB)"
grep -qF -- "<title>&lt;module&gt; (server.py:" "$W/v.svg" || fail "svg: <module> not there, or not escaped"
! grep -qF -- "<module>" "$W/v.svg" || fail "svg: <module> not escaped"

# html
hd -f html -o "$W/v.html" "$db" "$a" "$b"
! grep -qF -- "<module>" "$W/v.html" || fail "html: <module> not escaped"
page_json "$W/v.html" | python3 -c '
import json, sys
d = json.load(sys.stdin)
want = ["make_blob", sys.argv[1], int(sys.argv[2]), "py"]
def find(x):
    if isinstance(x, list):
        if x[:4] == want:
            return True
        return any(find(y) for y in x)
    if isinstance(x, dict):
        return any(find(y) for y in x.values())
    return False
assert find(d), "no frame " + repr(want)
' "$CACHE" "$L_BLOB" || fail "html: no make_blob frame with its file and line in the page's data"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROMIUM" ]; then
	dom "$W/v.html" "$W/v.dom"
	check_dom "$W/v.dom" >/dev/null
	grep -qF -- ">make_blob (cache.py:$L_BLOB)<" "$W/v.dom" || fail "html: the flame graph shows no make_blob (cache.py:$L_BLOB)"
	log "html: rendered by Chromium, make_blob (cache.py:$L_BLOB) in its flame graph"
else
	log "chromium is not installed: the page was not rendered"
fi

# --function: every row with such a frame, and only those
# rows_text FILE: each row of heapdiff --bytes text output on one line,
# "BYTES|frame|frame|...|", leaf first.
rows_text() {
	awk '/^ *[-+]?[0-9]+ +[-+]?[0-9]+ +stack [0-9]+$/ { if (r != "") print r; r = ($1 + 0) "|"; next }
	     r != "" && match($0, /^ +/) && RLENGTH >= 20 { l = $0; sub(/^ +/, "", l); r = r l "|" }
	     END { if (r != "") print r }' "$1"
}
hd --bytes -n 0 "$db" "$a" "$b" >"$W/all.txt"
rows_text "$W/all.txt" >"$W/all.rows"
for filter in cache.py make_blob; do
	hd --bytes -n 0 --function "$filter" "$db" "$a" "$b" >"$W/f.txt"
	rows_text "$W/f.txt" >"$W/f.rows"
	case $filter in
	cache.py) re="  $CACHE:[0-9]+  \\[py\\]\\|" ;;
	make_blob) re="\\|make_blob  " ;;
	esac
	grep -vE -- "$re" "$W/f.rows" | head -n 3 | grep . && fail "--function $filter: rows without such a frame (above)"
	n=$(wc -l <"$W/f.rows")
	m=$(grep -cE -- "$re" "$W/all.rows")
	[ "$n" = "$m" ] || fail "--function $filter: $n rows, of the $m with such a frame"
	[ "$n" -ge 1 ] && [ "$n" -lt "$(wc -l <"$W/all.rows")" ] || fail "--function $filter: $n rows of $(wc -l <"$W/all.rows"): nothing filtered"
	log "--function $filter: $n of $(wc -l <"$W/all.rows") rows"
done
grep -qE "\\|here  $SERVER:$L_HERE  \\[py\\]\\|" "$W/all.rows" || fail "no row of here at server.py:$L_HERE"
! grep -q "remember_small" "$W/f.rows" || fail "--function make_blob kept a row of remember_small"

# --by function: the Python functions with their files, cumulative bytes
hd --by function --bytes -n 0 "$db" "$a" "$b" >"$W/fn.txt"
for fw in "make_blob $CACHE 20000000" "here $SERVER 20000000"; do
	read -r fname ffile kept <<<"$fw"
	cum=$(awk -v f="$fname" -v file="$ffile" '$5 == f && $6 == file && $7 == "[py]" { print $3 + 0 }' "$W/fn.txt")
	[ -n "$cum" ] || fail "--by function: no line for $fname $ffile [py]"
	log "--by function: $fname ($ffile): cumulative $cum bytes, kept $kept"
	within 25 "$cum" "$kept" || fail "--by function: $fname's cumulative $cum bytes, it kept $kept"
done

# ------------------------------------------------------------ the exit
cat >"$W/exits.py" <<'PYSRC'
import os, sys
print("ready pid=%d" % os.getpid(), flush=True)
keep = []
def fill(n, size):
    for i in range(n):
        keep.append(b"q" * size)  # @fill
for line in sys.stdin:
    if line.strip() == "go":
        fill(300, 100000)
        break
    print("done " + line.strip(), flush=True)
PYSRC
L_FILL=$(line_of "$W/exits.py" fill)
db=$W/exit.db
start_cmd exits "$PY" -u "$W/exits.py"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
# One ring: the records in the order they were made.  (With rings by
# address, a heap that spans two 64 MiB regions has its blobs' samples and
# frees in two rings, booked one ring after the other: the total the peak
# follows then never holds both halves at once.)
start_ha -v -q -i 64K --block --rings 1 --python all -o "$db" "$pid"
wait_ready "$pid" "$(comm_of "$pid")"
target_cmd "wrap"
wait_for 10 'grep -q "^heapattach: Python frames and small objects on$" "$HA_ERR"' ||
	fail "exit: the wrap of pymalloc is not on"
send "$TFD" go
wait_exit "$pid" 20
[ "$RC" = 0 ] || fail "exit: python exited $RC while attached"
wait_for 20 '! is_alive "$HAPID"' || fail "exit: heapattach still running 20 s after the target exited"
wait "$HAPID"
rc=$?
sed 's/^/    /' "$HA_ERR" | grep -E 'exited|Python|snapshot' | head -n 8
[ "$rc" = 0 ] || fail "exit: heapattach exited $rc after the target exited"
grep -qx "heapattach: target $pid exited" "$HA_ERR" || fail "exit: no 'heapattach: target $pid exited' line"
hd --bytes --peak -n 0 "$db" >"$W/exit.txt"
rows_text "$W/exit.txt" | grep -E "\\|fill  $W/exits.py:$L_FILL  \\[py\\]\\|<module>  $W/exits.py:[0-9]+  \\[py\\]\\|" >"$W/exit.rows" ||
	fail "exit: no row of fill at $W/exits.py:$L_FILL under <module> at the peak"
bytes=$(head -n 1 "$W/exit.rows" | cut -d'|' -f1)
# Every sampled blob was live at the top, before the exit freed them: the
# peak holds what the session booked as allocated under fill.
fillq="SELECT sum(b.%s) FROM bucket_at b WHERE b.snapshot_id = (SELECT id FROM snapshots WHERE reason = '%s')
        AND b.stack_id IN (SELECT sf.stack_id FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
                            WHERE f.function = 'fill')"
# shellcheck disable=SC2059
alloc=$(sqlite3 "$db" "$(printf "$fillq" alloc_bytes exit)")
# shellcheck disable=SC2059
peak=$(sqlite3 "$db" "$(printf "$fillq" live_bytes peak)")
log "exit: fill's row at the peak holds $bytes bytes (kept 30000000); under fill: $peak live at the peak, $alloc allocated in the session"
within 25 "$bytes" 30000000 || fail "exit: fill's row holds $bytes bytes at the peak, the program kept 30000000"
within 2 "$peak" "$alloc" || fail "exit: the peak holds $peak bytes under fill, the session allocated $alloc there, none freed before the exit"
rec=$(sqlite3 "$db" "SELECT python FROM sessions ORDER BY id DESC LIMIT 1")
log "exit: sessions.python: $rec"
[[ $rec == "Python 3.11 (/usr/bin/python3.11): "* ]] || fail "exit: the session record says '$rec'"

# ------------------------------------------------------------ --no-python
db=$W/nopy.db
py_attach_app nopy "$PY" "$db" -i 64K --block --no-python
py_snap "$db"; a=$SNAP
target_cmd "grow 200 100000"
py_snap "$db"; b=$SNAP
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "--no-python: python exited $RC after the detach"
grep -q "^heapattach: --python off: no Python frames$" "$HA_ERR" ||
	fail "--no-python: -v does not say the frames are off"
! grep -q "in every stack\|small objects\|^heapattach: Python" "$HA_ERR" ||
	fail "--no-python: Python frames or the wrap said on: $(grep -i python "$HA_ERR")"
n=$(sqlite3 "$db" "SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id WHERE m.path = 'py'")
[ "$n" = 0 ] || fail "--no-python: $n Python frames in the database"
rec=$(sqlite3 "$db" "SELECT python FROM sessions ORDER BY id DESC LIMIT 1")
[ -z "$rec" ] || fail "--no-python: the session record says '$rec'"
hd --bytes "$db" "$a" "$b" >"$W/nopy.txt"
! grep -q '\[py\]' "$W/nopy.txt" || fail "--no-python: heapdiff shows [py] frames"
got=$(heapdiff_rows "$W/nopy.txt" | head -n 1 | cut -d' ' -f1)
log "--no-python: the top row holds $got bytes (kept 20000000), native frames only"
within 25 "$got" 20000000 || fail "--no-python: the top row holds $got bytes, the program kept 20000000"

# ------------------------------------------------------------ the default
# Python frames without the wrap (--python frames, the default): the large
# objects named as with it, the small ones seen only as pymalloc's arenas
# (few mappings, not the objects, booked to remember_small, the only code
# allocating then: within 50% of what it kept), no wrap said on, and the
# record saying so.
db=$W/frames.db
py_attach_app frames "$PY" "$db" -i 64K --block
py_snap "$db"; a=$SNAP
target_cmd "grow 200 100000"
target_cmd "small 40000"
small=$(sed -n 's/^done small kept [0-9]* added \([0-9]*\)$/\1/p' "$TOUT" | tail -n 1)
py_snap "$db"; b=$SNAP
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "default: python exited $RC after the detach"
grep -q "^heapattach: Python 3\.11 (.*): Python frames in every stack$" "$HA_ERR" ||
	fail "default: no Python frames said on"
! grep -q "small objects on\|small objects: waiting" "$HA_ERR" || fail "default: the wrap said: $(grep 'small objects' "$HA_ERR")"
rec=$(sqlite3 "$db" "SELECT python FROM sessions ORDER BY id DESC LIMIT 1")
log "default: sessions.python: $rec"
[[ $rec == "Python 3.11 (/usr/bin/python3.11): "*"; frames on; small objects as pymalloc's arenas" ]] ||
	fail "default: the session record says '$rec'"
hd --bytes -n 0 "$db" "$a" "$b" >"$W/frames.txt"
grep -q "^ *make_blob  $APP/cache.py:$L_BLOB  \[py\]$" "$W/frames.txt" ||
	fail "default: no make_blob frame at its line"
read -r objs arena <<<"$(awk '
	/^ *[-+]?[0-9]+ +[-+]?[0-9]+ +stack [0-9]+( \(mmap\))?$/ { b = $1; o = $2; hit = 0; next }
	/^ +remember_small  .*\[py\]$/ && !hit { n += o; s += b; hit = 1 }
	END { print n + 0, s + 0 }' "$W/frames.txt")"
log "default: under remember_small: $objs objects allocated (the program made 40000 entries), $arena bytes (it kept $small)"
[ "$objs" -lt 4000 ] || fail "default: $objs objects under remember_small: small objects were sampled one by one"
within 50 "$arena" "$small" || fail "default: remember_small's rows hold $arena bytes (its arenas), it kept $small"
echo "ok"

