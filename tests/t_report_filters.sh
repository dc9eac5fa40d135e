#!/bin/bash
# t_report_filters: heapdiff's filters (--module, --function, --kind,
# --min-bytes), the folding of allocator and C++ runtime frames (two stored
# callstacks that fold into one become one row; --all-frames shows them),
# --peak, and a diff across two database files whose callstacks have other
# ids (FILE:SNAPSHOT operands).  Synthetic profiles (tests/db_fill).
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"

same() {
	[ "$2" = "$3" ] && return 0
	printf 'got:\n%s\nwanted:\n%s\n' "$2" "$3"
	fail "$1"
}
hd() { "$HD" "$@" 2>"$W/hd.err" >"$W/hd.out" || fail "heapdiff $*: $(cat "$W/hd.err")"; cat "$W/hd.out"; }
# rows: "STACK BYTES OBJECTS LEAF [mmap]" of a --bytes text report.
rows() {
	awk '$3 == "stack" && $4 ~ /^[0-9]+$/ { r = $4 " " $1 " " $2; m = ($5 == "(mmap)") ? " mmap" : ""; want = 1; next }
	     want && /^                    / { sub(/^ +/, ""); split($0, f, "  "); print r " " f[1] m; want = 0 }'
}

db=$W/series.db
"$FILL" --series "$db" >"$W/fill.out" 2>&1 || fail "db_fill --series failed: $(cat "$W/fill.out")"

# ---- folding: operator new and std::__new_allocator are folded; the two
# Registry::add stacks (operator new, operator new[]) are one row
hd --bytes "$db" 6 >"$W/live6"
same "live at 6, folded" "$(rows <"$W/live6")" "6 500000 10 pool_init mmap
3 100000 10 app::Registry::add(int)
5 50000 50 cache_fill
1 30000 30 leak_steady
2 5000 5 app::Cache::grow()"
grep -q '(2 callstacks merged once folded)' "$W/live6" || fail "no 'merged' note"
grep -q 'allocator frames folded: operator new(unsigned long); --all-frames' "$W/live6" || fail "no 'folded' note"
same "live at 6, --all-frames" "$(hd --bytes --all-frames "$db" 6 | rows)" "6 500000 10 pool_init mmap
5 50000 50 cache_fill
3 50000 5 operator new(unsigned long)
4 50000 5 operator new[](unsigned long)
1 30000 30 leak_steady
2 5000 5 operator new(unsigned long)"
same "folded format, folded frames" "$(hd -f folded "$db" 6 | grep Cache)" "main;app::Cache::grow() 5000"
same "folded format, --all-frames" "$(hd -f folded --all-frames "$db" 6 | grep Cache)" \
	"main;app::Cache::grow();std::__new_allocator<int>::allocate(unsigned long, void const*)_[i];operator new(unsigned long) 5000"
echo "ok: allocator frames folded, --all-frames"

# ---- filters on the diff 1..6
same "no filter" "$(hd --bytes "$db" 1 6 | rows)" "5 +50000 +50 cache_fill
1 +30000 +30 leak_steady
2 +5000 +5 app::Cache::grow()"
same "--module libsmall" "$(hd --bytes --module libsmall "$db" 1 6 | rows)" "5 +50000 +50 cache_fill"
same "--function leak_" "$(hd --bytes --function leak_ "$db" 1 6 | rows)" "1 +30000 +30 leak_steady"
same "--function Cache --module app" "$(hd --bytes --function Cache --module /app "$db" 1 6 | rows)" \
	"2 +5000 +5 app::Cache::grow()"
same "--function operator (folded away)" "$(hd --bytes --function 'operator new' "$db" 1 6 | rows)" ""
same "--function operator --all-frames" "$(hd --bytes --all-frames --function 'operator new' "$db" 1 6 | rows)" \
	"2 +5000 +5 operator new(unsigned long)"
same "--min-bytes 10000" "$(hd --bytes --min-bytes 10000 "$db" 1 6 | rows)" "5 +50000 +50 cache_fill
1 +30000 +30 leak_steady"
same "--kind heap at 6" "$(hd --bytes --kind heap "$db" 6 | rows | cut -d' ' -f1)" "3
5
1
2"
same "--kind mmap at 6" "$(hd --bytes --kind mmap "$db" 6 | rows)" "6 500000 10 pool_init mmap"
hd --kind mmap "$db" 1 6 | grep -q '^no callstack changed$' || fail "--kind mmap 1..6: something changed"
same "--kind mmap total" "$(hd --bytes --kind mmap "$db" 6 | grep '^total')" \
	"total: live heap 500000 (estimated; 1 callstacks, 1 shown); RSS 20050000"
echo "ok: --module, --function, --kind, --min-bytes"

# ---- --peak: the highest estimated live total is at snapshot 6
hd --bytes --peak "$db" >"$W/peak"
same "--peak line" "$(head -n 1 "$W/peak")" \
	"peak: snapshot 6 has the highest estimated live memory of session 1 (685000, over 10 snapshots)"
same "--peak rows" "$(rows <"$W/peak")" "$(rows <"$W/live6")"
same "--peak --kind heap" "$(hd --bytes --peak --kind heap "$db" | head -n 1)" \
	"peak: snapshot 6 has the highest estimated live heap of session 1 (185000, over 10 snapshots)"
hd --peak -f json "$db" | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["to"]["snapshot"] == 6' ||
	fail "--peak -f json does not give snapshot 6"
echo "ok: --peak"

# ---- across two files: the same callstacks under other ids
a=$W/a.db b=$W/b.db
"$FILL" "$a" >/dev/null || fail "db_fill a"
"$FILL" --offset-ids "$b" >"$W/fillb.out" || fail "db_fill --offset-ids b"
grep -qx 'stack grow 2' "$W/fillb.out" || fail "--offset-ids did not shift the ids: $(cat "$W/fillb.out")"
hd --bytes "$a:last" "$b:last" | grep -q '^no callstack changed$' || fail "a:last b:last differ: $(cat "$W/hd.out")"
same "a:1 -> b:3 (ids of b)" "$(hd --bytes "$a:1" "$b:3" | rows)" "2 +3000000 +300 leak_grow
5 +20000 +2000 mk_small
4 -500000 -500 cache_fill"
grep -q "^from snapshot 1: .*, $a\$" "$W/hd.out" || fail "the header does not name the first file"
grep -q "^  to snapshot 3: .*, $b\$" "$W/hd.out" || fail "the header does not name the second file"
same "a.db b:3 (database operand, then FILE:SNAP)" "$(hd --bytes "$a" 1 "$b:3" | rows | cut -d' ' -f1-3)" "2 +3000000 +300
5 +20000 +2000
4 -500000 -500"
same "--db a 1 b:3" "$(hd --bytes --db "$a" 1 "$b:3" | rows | cut -d' ' -f1)" "2
5
4"
same "pprof across files" "$(hd -f folded "$a:1" "$b:3" | sort)" "main;0x7f00;mk_small 20000
main;handle_request;leak_grow_[i] 3000000"
run() { "$HD" "$@" >"$W/r.out" 2>"$W/r.err"; echo $?; }
same "missing second file" "$(run "$a:1" "$W/nope.db:3")" 1
grep -q "nope.db: No such file" "$W/r.err" || fail "missing file: $(cat "$W/r.err")"
same "no such snapshot in the second file" "$(run "$a:1" "$b:9")" 1
grep -q "no snapshot 9 in DB" "$W/r.err" || fail "missing snapshot: $(cat "$W/r.err")"
same "FILE:bad" "$(run "$a:1" "$b:x")" 2
echo "ok: across two files"

# ---- usage errors of the new options
for args in "--format xml $db" "--kind stack $db" "--min-bytes -1 $db" "--leaks --peak $db" \
	"--leaks -f svg $db" "--leaks $db 1" "--peak $db 1 2" "-o"; do
	rc=$(run $args)
	[ "$rc" = 2 ] || fail "heapdiff $args: exit $rc, expected 2"
done
echo ok
