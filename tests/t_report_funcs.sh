#!/bin/bash
# t_report_funcs: heapdiff --by function and --by cumulative on the
# synthetic profile of tests/db_fill (known values): the flat and
# cumulative values and their ranking in json (python3) and text, a
# recursive call path counted once, --min-bytes on functions, the text
# report's top functions, what each format does (pprof the same profile;
# folded, svg, --leaks and --heap-vs-rss refuse with one line), usage
# errors, and hostile names escaped in json and in the page's table.
# No root, no target.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report_lib.sh"

db=$W/p.db
"$FILL" "$db" >"$W/fill.out" 2>&1 || fail "db_fill failed: $(cat "$W/fill.out")"

same() {
	[ "$2" = "$3" ] && return 0
	printf 'got:\n%s\nwanted:\n%s\n' "$2" "$3"
	fail "$1"
}
# rows FILE: "function flat cum flat_paths cum_paths" of a --by json.
rows() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    print(r["function"], "%.0f" % r["flat_bytes"], "%.0f" % r["cum_bytes"], r["flat_paths"], r["cum_paths"])
' "$1"
}

# From 1 to 3 (db_fill.c): leak_grow +3000000 under handle_request under
# main, mk_small +20000 under an unknown frame (0x7f00) under main,
# cache_fill -500000 under main, pool_init unchanged.
hd -f json --by function "$db" 1 3 >"$W/f.json"
# Ranked by flat, then cumulative; pool_init, unchanged, is left out.
same "--by function" "$(rows "$W/f.json")" "leak_grow 3000000 3000000 1 1
mk_small 20000 20000 1 1
handle_request 0 3000000 0 1
main 0 2520000 0 3
0x7f00 0 20000 0 1
cache_fill -500000 -500000 1 1"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["by"] == "function" and d["mode"] == "diff", d["by"]
assert d["total"]["functions"] == 6 and d["total"]["live_bytes"] == 2520000, d["total"]
assert "callstacks" not in d["total"]
r = d["rows"][0]
assert r["module"] == "/opt/leaky/bin/leaky" and r["file"] == "/src/leaky/leaky.c", r
' "$W/f.json" || fail "--by function: the json's header or a row's names"
hd -f json --by cumulative "$db" 1 3 >"$W/c.json"
same "--by cumulative" "$(rows "$W/c.json" | cut -d' ' -f1,3)" "leak_grow 3000000
handle_request 3000000
main 2520000
mk_small 20000
0x7f00 20000
cache_fill -500000"
hd -f json --by function,objects "$db" 1 3 >"$W/o.json"
same "--by function,objects" "$(rows "$W/o.json" | head -n 2 | cut -d' ' -f1)" "mk_small
leak_grow"
hd -f json --by objects --by function --min-bytes 100000 "$db" 1 3 >"$W/m.json"
same "--min-bytes 100000" "$(rows "$W/m.json" | cut -d' ' -f1 | sort | tr '\n' ' ')" \
	"cache_fill handle_request leak_grow main "
hd -f json --by function "$db" 3 >"$W/live.json"
same "live at 3" "$(rows "$W/live.json" | head -n 1)" "leak_grow 4000000 4000000 1 1"
echo "ok: flat and cumulative values, rankings, --min-bytes, one snapshot"

# A recursive call path counts once in cumulative: handle_request renamed
# main makes leak_grow's stack leak_grow <- main <- main.
rdb=$W/rec.db
cp "$db" "$rdb"
sqlite3 "$rdb" "UPDATE frames SET function = 'main' WHERE function = 'handle_request'" ||
	fail "sqlite3 could not rename a frame"
hd -f json --by cumulative "$rdb" 1 3 >"$W/r.json"
same "recursion" "$(rows "$W/r.json" | grep '^main ')" "main 0 2520000 0 3"
echo "ok: recursion counted once"

# Text: the table of functions, and the default report's top functions.
hd --bytes --by function "$db" 1 3 >"$W/f.txt"
grep -Eq '^ +FLAT +OBJECTS +CUM +PATHS  FUNCTION \(by flat\)$' "$W/f.txt" || fail "no header: $(cat "$W/f.txt")"
grep -Eq '^ +\+3000000 +\+300 +\+3000000 +1  leak_grow  /src/leaky/leaky.c  \[leaky\]$' "$W/f.txt" ||
	fail "no leak_grow row: $(cat "$W/f.txt")"
grep -q '^total: live heap +2520000 (estimated; 6 functions changed, 6 shown); RSS +3200000; 20.0 s$' "$W/f.txt" ||
	fail "total line: $(tail -n 1 "$W/f.txt")"
hd --bytes "$db" 1 3 >"$W/d.txt"
awk '/^top functions / { getline; getline; print $5; exit }' "$W/d.txt" | grep -qx leak_grow ||
	fail "the default report's top function is not leak_grow: $(cat "$W/d.txt")"
# The call paths follow, parsed as before (tests/profile_lib.sh).
. "$(dirname "$0")/profile_lib.sh"
same "call paths after the functions" "$(heapdiff_rows "$W/d.txt")" "+3000000 +300 leak_grow
+20000 +2000 mk_small
-500000 -500 cache_fill"
echo "ok: text"

# Formats: pprof is the same profile; folded and svg refuse.
hd -f pprof -o "$W/s.pb.gz" "$db" 1 3
hd -f pprof --by function -o "$W/f.pb.gz" "$db" 1 3
cmp -s "$W/s.pb.gz" "$W/f.pb.gz" || fail "-f pprof --by function is not the same profile"
hd -f html --by function -o "$W/f.html" "$db" 1 3
page_json "$W/f.html" >"$W/page.json" || fail "the page's data is not JSON"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["function"] for r in d["top_functions"]][:2] == ["leak_grow", "mk_small"], d["top_functions"]
' "$W/page.json" || fail "the page's top functions"
refused() {
	local want=$1
	shift
	"$HD" "$@" >"$W/r.out" 2>"$W/r.err"
	local rc=$?
	[ "$rc" = 2 ] || fail "heapdiff $*: exit $rc, expected 2"
	[ ! -s "$W/r.out" ] || fail "heapdiff $*: wrote a report"
	grep -q -- "$want" "$W/r.err" || fail "heapdiff $*: unclear error: $(cat "$W/r.err")"
	[ "$(grep -vc '^Try ' "$W/r.err")" = 1 ] || fail "heapdiff $*: not one line: $(cat "$W/r.err")"
}
refused "a flame graph (folded) is made of call paths" -f folded --by function "$db"
refused "a flame graph (svg) is made of call paths" -f svg --by cumulative "$db"
refused "no --by function" --leaks --by function "$db"
refused "no --by stack" --heap-vs-rss --by stack "$db"
refused "bad --by 'flat'" --by flat "$db"
refused "--by function and --by stack exclude each other" --by function --by stack "$db"
refused "bad --by ','" --by , "$db"
echo "ok: pprof, html; folded, svg, --leaks, --heap-vs-rss and bad values refused"

# Hostile names: json escapes them; in the page they stay inside the data.
hdb=$W/hostile.db
cp "$db" "$hdb"
hostile_hex=$(printf '%s' "</script><img src=x onerror=\"alert(1)\">\\\"q" | od -An -tx1 | tr -d ' \n')fffe
sqlite3 "$hdb" "UPDATE frames SET function = CAST(X'$hostile_hex' AS TEXT) WHERE function = 'leak_grow'" ||
	fail "sqlite3 could not store the hostile name"
hd -f json --by function "$hdb" 1 3 >"$W/h.json"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["rows"][0]["function"] == "</script><img src=x onerror=\"alert(1)\">\\\"q??", d["rows"][0]
' "$W/h.json" || fail "the hostile name in json"
hd -f html -o "$W/h.html" "$hdb" 1 3
n=$(grep -o '</script>' "$W/h.html" | wc -l)
[ "$n" = 3 ] || fail "the page has $n </script> (expected 3): a name broke out"
page_json "$W/h.html" >"$W/hp.json" || fail "the page's data with a hostile name is not JSON"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["top_functions"][0]["function"].startswith("</script><img"), d["top_functions"][0]
' "$W/hp.json" || fail "the hostile name in the page's top functions"
hd --by function "$hdb" 1 3 >"$W/h.txt"
grep -q '</script><img src=x onerror="alert(1)">\\"q??  /src/leaky/leaky.c' "$W/h.txt" ||
	fail "the hostile name in text is not cleaned as names are: $(cat "$W/h.txt")"
echo "ok: hostile names"

san_clean "--by function $hdb 1 3" "-f json --by cumulative $rdb 1 3" "--leaks $db" \
	"-f html -o $W/san.html $hdb 1 3"
echo ok
