#!/bin/bash
# t_report_formats: every heapdiff --format read by a real consumer, on the
# synthetic profile of tests/db_fill (known values): folded lines checked
# exactly, json through `python3 -m json.tool` and python's json, svg as XML
# with python's xml.etree (well-formed, the leaking function and the
# shrinking one drawn distinctly; its script through `node --check` when
# node is there), pprof through `go tool pprof -top` and -diff_base
# (golang-go installed with apt-get if missing; skipped with the reason if
# that is impossible).  No root, no target.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"
command -v python3 >/dev/null || skip "python3 is not installed"

same() {
	[ "$2" = "$3" ] && return 0
	printf 'got:\n%s\nwanted:\n%s\n' "$2" "$3"
	fail "$1"
}
hd() { "$HD" "$@" 2>"$W/hd.err" || fail "heapdiff $*: $(cat "$W/hd.err")"; }

db=$W/profile.db
"$FILL" "$db" >"$W/fill.out" 2>&1 || fail "db_fill failed: $(cat "$W/fill.out")"

# ---- folded: root first, ';'-separated, value = bytes; a diff lists growth only
same "folded first..last" "$(hd --format folded "$db" first last | sort)" \
	"main;0x7f00;mk_small 20000
main;handle_request;leak_grow_[i] 3000000"
same "folded at 3" "$(hd -f folded "$db" 3 | sort)" \
	"[mmap];main;pool_init 500000
main;0x7f00;mk_small 20000
main;cache_fill 300000
main;handle_request;leak_grow_[i] 4000000"
echo "ok: folded"

# ---- json
hd --format json "$db" first last >"$W/d.json"
python3 -m json.tool "$W/d.json" >/dev/null || fail "python3 -m json.tool rejects the json output"
same "json rows" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "diff" and d["from"]["snapshot"] == 1 and d["to"]["snapshot"] == 3
print(d["total"]["live_bytes"], d["total"]["rss_bytes"])
for r in d["rows"]:
    print(r["stack_id"], r["kind"], r["live_bytes"], r["live_objects"], r["frames"][0]["function"], r["frames"][0]["rel_pc"], r["frames"][0]["inlined"])
' "$W/d.json")" "2520000 3200000
1 heap 3000000 300 leak_grow 0x1234 True
4 heap 20000 2000 mk_small 0x600 False
3 heap -500000 -500 cache_fill 0x500 False"
hd -f json --top 1 "$db" 3 | python3 -m json.tool >/dev/null || fail "json --top 1 is not JSON"
echo "ok: json"

# ---- svg
hd --format svg "$db" first last >"$W/d.svg"
python3 - "$W/d.svg" <<'PY' || fail "svg check failed"
import sys, xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + 'svg', root.tag
frames = {}
for g in root.iter(ns + 'g'):
    if g.get('class') != 'f':
        continue
    title = g.find(ns + 'title').text
    rect = g.find(ns + 'rect')
    frames[title.split(' (')[0]] = (title, rect.get('fill'))
assert 'leak_grow' in frames, frames.keys()
assert 'cache_fill' in frames, frames.keys()
def rgb(s): return [int(x) for x in s[4:-1].split(',')]
g, c = rgb(frames['leak_grow'][1]), rgb(frames['cache_fill'][1])
assert g[0] > g[2], ('growth is not warm', g)
assert c[2] > c[0], ('shrinkage is not blue', c)
assert '+2.86 MiB' in frames['leak_grow'][0] and '300 objects' in frames['leak_grow'][0], frames['leak_grow']
assert '-488 KiB' in frames['cache_fill'][0], frames['cache_fill']
scripts = list(root.iter(ns + 'script'))
assert scripts and 'zoom' in scripts[0].text and 'search' in scripts[0].text
open(sys.argv[1] + '.js', 'w').write(scripts[0].text)
PY
if command -v node >/dev/null; then
	node --check "$W/d.svg.js" || fail "the svg's script does not parse (node --check)"
	log "node --check: the script parses"
fi
hd -f svg "$db" 3 | python3 -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.stdin)' ||
	fail "svg of the live heap is not XML"
echo "ok: svg"

# ---- pprof: binary to a terminal is refused; go tool pprof reads it
if ! command -v go >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		log "installing golang-go"
		DEBIAN_FRONTEND=noninteractive timeout 150 apt-get install -y -q golang-go >"$W/apt.log" 2>&1 ||
			log "apt-get install golang-go failed: $(tail -n 2 "$W/apt.log")"
	fi
fi
hd -f pprof "$db" first last >"$W/d.pb.gz"
gzip -t "$W/d.pb.gz" || fail "the pprof output is not gzip"
hd -f pprof -o "$W/o.pb.gz" "$db" first last
cmp -s "$W/d.pb.gz" "$W/o.pb.gz" || fail "-o FILE and standard output differ"
command -v go >/dev/null || skip "go is not installed and cannot be installed here (apt-get install golang-go): pprof not checked by go tool pprof"
export GOCACHE=$W/gocache GOPATH=$W/gopath HOME=$W
top() { go tool pprof -top -symbolize=none -unit=B "$@" 2>"$W/pprof.err" || fail "go tool pprof $*: $(cat "$W/pprof.err")"; }
top "$W/d.pb.gz" >"$W/top"
sed 's/^/    /' "$W/top"
grep -Eq '^ +3000000B .* leak_grow' "$W/top" || fail "pprof -top: no 3000000B leak_grow line"
grep -Eq '^ +-500000B .* cache_fill' "$W/top" || fail "pprof -top: no -500000B cache_fill line"
grep -q 'Type: inuse_space' "$W/top" || fail "pprof: the default sample type is not inuse_space"
for t in alloc_objects alloc_space inuse_objects inuse_space; do
	top -sample_index="$t" "$W/d.pb.gz" >/dev/null
done
top -sample_index=alloc_space "$W/d.pb.gz" | grep -Eq '^ +3500000B .* leak_grow' ||
	fail "pprof alloc_space: leak_grow did not allocate 3500000B"
# -diff_base: the live heap at 3 minus at 1 is the diff 1..3.
hd -f pprof "$db" 1 >"$W/a.pb.gz"
hd -f pprof "$db" 3 >"$W/b.pb.gz"
top -diff_base "$W/a.pb.gz" "$W/b.pb.gz" >"$W/dtop"
grep -Eq '^ +3000000B .* leak_grow' "$W/dtop" || fail "pprof -diff_base: no 3000000B leak_grow line: $(cat "$W/dtop")"
# One snapshot: inuse_* at it, alloc_* over its period, since the snapshot
# before it (2): leak_grow allocated 4500000 - 2000000 in it.
top -sample_index=inuse_space "$W/b.pb.gz" | grep -Eq '^ +4000000B .* leak_grow' ||
	fail "pprof of snapshot 3: leak_grow does not hold 4000000B"
top -sample_index=alloc_space "$W/b.pb.gz" | grep -Eq '^ +2500000B .* leak_grow' ||
	fail "pprof of snapshot 3: leak_grow did not allocate 2500000B in its period"
# A call path that allocated and freed everything within the period is
# there, with inuse 0 (db_fill --attacher: burst_fill between snapshots 4
# and 5); the peak's period ends at the peak and starts at the snapshot
# before it by time (4, at T0 + 180, though the peak's id is 8).
"$FILL" --attacher "$W/att.db" >/dev/null || fail "db_fill --attacher failed"
hd -f pprof -o "$W/s5.pb.gz" "$W/att.db" 5
top -sample_index=alloc_space "$W/s5.pb.gz" | grep -Eq '^ +2000000B .* burst_fill' ||
	fail "pprof of snapshot 5: burst_fill did not allocate 2000000B in its period"
top -sample_index=inuse_space "$W/s5.pb.gz" | grep -q burst_fill &&
	fail "pprof of snapshot 5: burst_fill holds memory (it freed all of it)"
hd -f pprof -o "$W/s8.pb.gz" --peak "$W/att.db"
top -nodefraction=0 -sample_index=alloc_space "$W/s8.pb.gz" | grep -Eq '^ +4000B .* leak_attach' ||
	fail "pprof of the peak: leak_attach did not allocate 28000 - 24000 B in its period"
go tool pprof -raw -symbolize=none "$W/s8.pb.gz" 2>&1 | grep -q '^Duration: 30s' ||
	fail "pprof of the peak: its duration is not its period (30 s): $(go tool pprof -raw -symbolize=none "$W/s8.pb.gz" 2>&1 | head -n 5)"
# Mappings with build-ids, functions with file and line.
go tool pprof -raw -symbolize=none "$W/b.pb.gz" >"$W/raw" 2>&1 || fail "pprof -raw failed"
grep -q '/opt/leaky/bin/leaky 5f3c9a0e1b2d4c6e8f90a1b2c3d4e5f60718293a' "$W/raw" || fail "pprof: no mapping with the build-id"
grep -q 'leak_grow /src/leaky/leaky.c:42' "$W/raw" || fail "pprof: no leak_grow with file:line"
echo "ok: pprof read by go tool pprof (-top, -sample_index, -diff_base, -raw; one snapshot's period)"
echo ok
