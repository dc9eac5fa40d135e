#!/bin/bash
# t_leaks: heapdiff --leaks on a synthetic session (tests/db_fill --series:
# a steady leak, a C++ leak through operator new, a cache that grows and
# falls back, a constant pool, a constant mmap): exactly the two leaks,
# ranked by growth per minute, with exact rates; the same answer from the
# leak_suspects view in sqlite3; json through python3; filters; function
# trends (tests/db_fill --spread): a helper over many wobbling call paths,
# a caller's cumulative trend, their callers named as via, not listed; too
# few snapshots is an error.  No root, no target.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"

same() {
	[ "$2" = "$3" ] && return 0
	printf 'got:\n%s\nwanted:\n%s\n' "$2" "$3"
	fail "$1"
}
hd() { "$HD" "$@" 2>"$W/hd.err" >"$W/hd.out" || fail "heapdiff $*: $(cat "$W/hd.err")"; cat "$W/hd.out"; }
# suspects: "STACK RATE TREND LIVE LEAF" of a --leaks --bytes report.
suspects() {
	awk '$5 == "stack" { r = $6 " " $1 " " $2 " " $3; want = 1; next }
	     want && /^                    / { sub(/^ +/, ""); split($0, f, "  "); print r " " f[1]; want = 0 }'
}

db=$W/series.db
"$FILL" --series "$db" >"$W/fill.out" 2>&1 || fail "db_fill --series failed: $(cat "$W/fill.out")"

hd --leaks --bytes "$db" >"$W/leaks"
sed 's/^/    /' "$W/leaks"
same "suspects" "$(suspects <"$W/leaks")" "1 +6000/min +54000 54000 leak_steady
2 +1000/min +9000 9000 app::Cache::grow()"
grep -q '^2 suspects; 0 other callstacks grew' "$W/leaks" || fail "no summary line"
grep -q '10 snapshots over 9.0 min, 6 callstacks' "$W/leaks" || fail "no header line"
echo "ok: the two leaks, not the cache, the pools"

# The view gives the same suspects and rates.
same "leak_suspects view" "$(sqlite3 -separator ' ' "$db" "SELECT stack_id, printf('%+.0f/min', bytes_per_minute),
	printf('%+.0f', trend_bytes), printf('%.0f', last_bytes) FROM leak_suspects WHERE session_id = 1
	ORDER BY bytes_per_minute DESC")" "$(suspects <"$W/leaks" | cut -d' ' -f1-4)"
same "leak_trend of the cache" "$(sqlite3 -separator ' ' "$db" "SELECT kind, printf('%.2f', retained), printf('%.1f', steady)
	FROM leak_trend WHERE stack_id = 5")" "heap 0.00 0.5"
echo "ok: the leak_suspects view agrees"

# Human units, json, filters, --top.
hd --leaks "$db" | grep -Eq '^ +\+5\.86 KiB/min +\+52\.7 KiB +52\.7 KiB +1\.00  stack 1$' ||
	fail "human units: $(cat "$W/hd.out")"
hd --leaks -f json "$db" >"$W/l.json"
python3 -m json.tool "$W/l.json" >/dev/null || fail "--leaks -f json is not JSON"
same "json" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["mode"], d["snapshots"], d["callstacks"])
for s in d["suspects"]:
    print(s["stack_id"], s["bytes_per_minute"], s["trend_bytes"], s["fit"], s["frames"][0]["function"])
' "$W/l.json")" "leaks 10 6
1 6000.0 54000 1.0 leak_steady
2 1000.0 9000 1.0 app::Cache::grow()"
same "--function Cache" "$(hd --leaks --bytes --function Cache "$db" | suspects | cut -d' ' -f1)" 2
same "--module libstdc++ (folded away)" "$(hd --leaks --bytes --module libstdc "$db" | suspects)" ""
same "--module libstdc++ --all-frames" "$(hd --leaks --bytes --all-frames --module libstdc "$db" | suspects | cut -d' ' -f1,5-)" \
	"2 operator new(unsigned long)"
same "--kind mmap" "$(hd --leaks --bytes --kind mmap "$db" | suspects)" ""
hd --leaks --kind mmap "$db" | grep -q '^no leak suspects' || fail "--kind mmap: no 'no leak suspects' line"
same "--min-bytes 10000" "$(hd --leaks --bytes --min-bytes 10000 "$db" | suspects | cut -d' ' -f1)" 1
same "--top 1" "$(hd --leaks --bytes --top 1 "$db" | suspects | cut -d' ' -f1)" 1
grep -q '1 more suspect' "$W/hd.out" || fail "--top 1: no '1 more suspect' line"
echo "ok: json, filters, --top"

# Function trends (tests/db_fill --spread): keep_block's 8 call paths and
# parse's 2 each wobble, their sums grow in a line.  keep_block is a flat
# suspect with its callers serve and main as via; parse a cumulative one
# (nothing narrower explains it) with main as via; main is never listed.
sdb=$W/spread.db
"$FILL" --spread "$sdb" >"$W/fill.out" 2>&1 || fail "db_fill --spread failed: $(cat "$W/fill.out")"
hd --leaks --bytes "$sdb" >"$W/sp"
sed 's/^/    /' "$W/sp"
same "function suspects" "$(awk '$5 == "function" || $5 == "cumulative" || $5 == "stack" { r = $5 " " $1 " " $2 " " $3; getline; print r, $1 }
	/^ +via / { sub(/^ +/, ""); print }' "$W/sp")" "function +8000/min +72000 96000 keep_block
via main, serve (the callers whose cumulative growth this explains)
cumulative +2000/min +18000 24000 parse
via main (the callers whose cumulative growth this explains)"
grep -q '11 callstacks, 15 functions$' "$W/sp" || fail "no count of functions in the header"
grep -q '^2 suspects; 10 other callstacks grew' "$W/sp" || fail "summary line: $(tail -n 1 "$W/sp")"
hd --leaks -f json "$sdb" >"$W/sp.json"
same "json" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["functions"], d["unfitted"], d["approx"])
for s in d["suspects"]:
    print(s["what"], s["function"], s["paths"], s["bytes_per_minute"], s["trend_bytes"], s["last_bytes"], ",".join(s["via"]))
' "$W/sp.json")" "15 0 False
function keep_block 8 8000.0 72000 96000 main,serve
cumulative parse 2 2000.0 18000 24000 main"
same "--function parse" "$(hd --leaks --bytes --function parse "$sdb" | awk '$5 == "cumulative" { getline; print $1 }')" parse
same "--function caller_3: one wobbling path" "$(hd --leaks --bytes --function caller_3 "$sdb" | grep -c '^ .*  \(stack\|function\|cumulative\) ')" 0
same "--min-bytes 20000" "$(hd --leaks --bytes --min-bytes 20000 "$sdb" | awk '$5 == "function" || $5 == "cumulative" { getline; print $1 }')" keep_block
same "--top 1" "$(hd --leaks --bytes --top 1 "$sdb" | grep -c 'more suspect')" 1
echo "ok: function trends: a flat suspect, a cumulative one, their callers as via"

# Too few snapshots.
"$FILL" "$W/three.db" >/dev/null && sqlite3 "$W/three.db" 'DELETE FROM buckets WHERE snapshot_id = 3; DELETE FROM snapshots WHERE id = 3' ||
	fail "cannot prepare three.db"
"$HD" --leaks "$W/three.db" >"$W/o" 2>"$W/e"
[ $? = 1 ] || fail "--leaks with 2 snapshots: expected exit 1"
grep -q 'needs at least 3 snapshots in session 1 (it has 2)' "$W/e" || fail "unclear error: $(cat "$W/e")"
echo ok
