#!/bin/bash
# t_heapdiff: heapdiff on a synthetic profile with known values (tests/db_fill):
# ranking by live-byte growth with exact numbers, the symbolized stacks, the
# total line, single-snapshot mode, --top, --by, --session, operand forms,
# human units, a diff across two sessions, usage errors, --help/--version.
# No root, no target.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"

# run_hd ARGS...: HD_RC, HD_OUT (stdout file), HD_ERR (stderr file).
_nhd=0
run_hd() {
	_nhd=$((_nhd + 1))
	HD_OUT=$W/hd$_nhd.out
	HD_ERR=$W/hd$_nhd.err
	"$HD" "$@" >"$HD_OUT" 2>"$HD_ERR"
	HD_RC=$?
}
# ok_hd ARGS...: must exit 0 with nothing on stderr.
ok_hd() {
	run_hd "$@"
	[ "$HD_RC" = 0 ] || fail "heapdiff $* exited $HD_RC: $(cat "$HD_ERR")"
	[ ! -s "$HD_ERR" ] || fail "heapdiff $* wrote on stderr: $(cat "$HD_ERR")"
}
# rows FILE: "STACK BYTES OBJECTS [mmap]" for each callstack row (--bytes output).
rows() {
	awk '$3 == "stack" && $4 ~ /^[0-9]+$/ { printf "%s %s %s%s\n", $4, $1, $2, ($5 == "(mmap)" ? " mmap" : "") }' "$1"
}
# same WHAT GOT WANT
same() {
	[ "$2" = "$3" ] && return 0
	printf 'got:\n%s\nwanted:\n%s\n' "$2" "$3"
	fail "$1"
}
total_line() { grep '^total: ' "$1"; }
# frames FILE STACK: the frame lines under the row of STACK, leading blanks cut.
frames() {
	awk -v id="$2" '
		$3 == "stack" && $4 == id { on = 1; next }
		on && match($0, /^ +/) && RLENGTH >= 20 { sub(/^ +/, ""); print; next }
		{ on = 0 }' "$1"
}

db=$W/profile.db
"$FILL" "$db" >"$W/fill.out" 2>&1 || fail "db_fill failed: $(cat "$W/fill.out")"
grep -qx 'stack grow 1' "$W/fill.out" || fail "db_fill: unexpected stack ids: $(cat "$W/fill.out")"

# ---- first -> last: the growing stack first, exact bytes and objects
ok_hd --bytes "$db" first last
log "heapdiff --bytes DB first last:"
sed 's/^/    /' "$HD_OUT"
same "ranking first..last" "$(rows "$HD_OUT")" "1 +3000000 +300
4 +20000 +2000
3 -500000 -500"
same "total line first..last" "$(total_line "$HD_OUT")" \
	"total: live heap +2520000 (estimated; 3 callstacks changed, 3 shown); RSS +3200000; 20.0 s"
same "frames of the growing stack" "$(frames "$HD_OUT" 1)" \
	"leak_grow  /src/leaky/leaky.c:42  [leaky]  (inlined)
handle_request  /src/leaky/leaky.c:80  [leaky]
main  /src/leaky/leaky.c:120  [leaky]"
same "frames with an unknown function" "$(frames "$HD_OUT" 4)" \
	"mk_small  /src/leaky/small.c:7  [libsmall.so.1]
0x7f00
main  /src/leaky/leaky.c:130  [leaky]"
grep -q '^samples: 2500 taken, 5 dropped, 1 not unwound$' "$HD_OUT" || fail "no samples line"
grep -q 'dropped' "$HD_OUT" || fail "drops not reported"
echo "ok: first..last ranked with exact numbers"

# The same answer from every way of naming the snapshots.
ref=$HD_OUT
for args in "$db 1 3" "--db $db first last" "--db $db 1 last" "$db" "--session 1 $db first 3" \
	"$db --bytes 1 3"; do
	ok_hd --bytes $args
	cmp -s "$ref" "$HD_OUT" || fail "heapdiff --bytes $args differs from heapdiff --bytes DB first last"
done
ok_hd --bytes "$db" 2 3
same "ranking 2..3" "$(rows "$HD_OUT")" "1 +2000000 +200
4 +10000 +1000"
ok_hd --bytes "$db" 3 1
same "ranking 3..1 (backwards)" "$(rows "$HD_OUT")" "3 +500000 +500
4 -20000 -2000
1 -3000000 -300"
ok_hd --bytes "$db" 2 2
grep -q '^no callstack changed$' "$HD_OUT" || fail "2..2: no 'no callstack changed' line"
echo "ok: operand forms and other pairs"

# ---- single snapshot: the live heap at B
ok_hd --bytes "$db" 3
same "live heap at 3" "$(rows "$HD_OUT")" "1 4000000 400
2 500000 10 mmap
3 300000 300
4 20000 2000"
same "total at 3" "$(total_line "$HD_OUT")" \
	"total: live heap 4820000 (estimated; 4 callstacks, 4 shown); RSS 13200000"
ok_hd --bytes "$db" last
same "live heap at last" "$(rows "$HD_OUT")" "$(rows "$W/hd$((_nhd - 1)).out")"
ok_hd --bytes "$db" 1
same "live heap at 1" "$(rows "$HD_OUT")" "1 1000000 100
3 800000 800
2 500000 10 mmap"
ok_hd --bytes --by objects "$db" 3
same "live heap at 3 by objects" "$(rows "$HD_OUT")" "4 20000 2000
1 4000000 400
3 300000 300
2 500000 10 mmap"
echo "ok: single-snapshot mode"

# ---- --top and --by
ok_hd --bytes --top 1 "$db" first last
same "--top 1" "$(rows "$HD_OUT")" "1 +3000000 +300"
grep -q '\.\.\. 2 more callstacks' "$HD_OUT" || fail "--top 1: no '... 2 more callstacks' line"
same "--top 1 total" "$(total_line "$HD_OUT")" \
	"total: live heap +2520000 (estimated; 3 callstacks changed, 1 shown); RSS +3200000; 20.0 s"
ok_hd --bytes -n 2 "$db" first last
same "-n 2" "$(rows "$HD_OUT" | cut -d' ' -f1)" "1
4"
ok_hd --bytes --top 0 "$db" first last
same "--top 0" "$(rows "$HD_OUT" | wc -l)" 3
ok_hd --bytes --by objects "$db" first last
same "--by objects" "$(rows "$HD_OUT")" "4 +20000 +2000
1 +3000000 +300
3 -500000 -500"
ok_hd --bytes --by bytes --top 2 "$db" 1 3
same "--by bytes --top 2" "$(rows "$HD_OUT" | cut -d' ' -f1)" "1
4"
echo "ok: --top and --by"

# ---- human units (the default)
ok_hd "$db" first last
grep -Eq '^ +\+2\.86 MiB +\+300  stack 1$' "$HD_OUT" || fail "human units: no '+2.86 MiB  +300  stack 1' row"
grep -Eq '^ +-488 KiB +-500  stack 3$' "$HD_OUT" || fail "human units: no '-488 KiB  -500  stack 3' row"
grep -q '^total: live heap +2.40 MiB (estimated; 3 callstacks changed, 3 shown); RSS +3.05 MiB; 20.0 s$' \
	"$HD_OUT" || fail "human units: total line: $(total_line "$HD_OUT")"
ok_hd "$db" 3
grep -Eq '^ +3\.81 MiB +400  stack 1$' "$HD_OUT" || fail "human units: no '3.81 MiB  400  stack 1' row"
grep -Eq '^ +19\.5 KiB +2000  stack 4$' "$HD_OUT" || fail "human units: no '19.5 KiB  2000  stack 4' row"
echo "ok: human units"

# ---- two sessions: first/last mean the latest session; --session; warning
db2=$W/two.db
"$FILL" --sessions 2 "$db2" >"$W/fill2.out" 2>&1 || fail "db_fill --sessions 2 failed: $(cat "$W/fill2.out")"
grep -qx 'stack s2 5' "$W/fill2.out" || fail "db_fill --sessions 2: unexpected ids: $(cat "$W/fill2.out")"
ok_hd --bytes "$db2" first last
same "latest session first..last" "$(rows "$HD_OUT")" "1 +8192 +2
5 +1000 +10"
ok_hd --bytes --session 1 "$db2" first last
same "--session 1 first..last" "$(rows "$HD_OUT")" "1 +3000000 +300
4 +20000 +2000
3 -500000 -500"
ok_hd --bytes --session 2 "$db2" last
same "--session 2 last" "$(rows "$HD_OUT")" "1 12288 3
5 1000 10"
run_hd --bytes "$db2" 3 5
[ "$HD_RC" = 0 ] || fail "3..5 across sessions exited $HD_RC: $(cat "$HD_ERR")"
grep -q '^heapdiff: warning: .*different sessions' "$HD_ERR" ||
	fail "no 'different sessions' warning on stderr: $(cat "$HD_ERR")"
same "warning is one line" "$(wc -l <"$HD_ERR")" 1
same "3..5 across sessions" "$(rows "$HD_OUT")" "5 +1000 +10
4 -20000 -2000
3 -300000 -300
2 -500000 -10 mmap
1 -3987712 -397"
same "3..5 total" "$(total_line "$HD_OUT")" \
	"total: live heap -4806712 (estimated; 5 callstacks changed, 5 shown); RSS +6900000; 90.0 s"
run_hd --bytes --session 3 "$db2" first last
[ "$HD_RC" = 1 ] || fail "--session 3: expected exit 1, got $HD_RC"
same "--session 3 message" "$(cat "$HD_ERR")" "heapdiff: $db2: no session 3 in DB (sessions 1..2)"
echo "ok: sessions"

# ---- usage errors: exit 2, a message on stderr, nothing on stdout
usage_error() {
	run_hd "$@"
	[ "$HD_RC" = 2 ] || fail "heapdiff $*: expected exit 2 (usage error), got $HD_RC"
	grep -q '^heapdiff: ' "$HD_ERR" || fail "heapdiff $*: no 'heapdiff: ' message on stderr"
	[ ! -s "$HD_OUT" ] || fail "heapdiff $*: wrote on stdout"
}
usage_error
usage_error --top 1
usage_error "$db" 1 2 3
usage_error "$db" foo
usage_error "$db" 0
usage_error "$db" -- -1
usage_error "$db" 1x
usage_error --by size "$db"
usage_error --top -1 "$db"
usage_error --top x "$db"
usage_error --session 0 "$db"
usage_error --no-such-option "$db"
usage_error "$db" --top
# Usage errors come before the database is looked at.
usage_error "$W/missing.db" foo
echo "ok: usage errors"

for o in -h --help; do
	ok_hd "$o"
	grep -q '^usage: heapdiff' "$HD_OUT" || fail "heapdiff $o: no usage line"
	for opt in --db --top --by --session --bytes --help --version; do
		grep -q -- "$opt" "$HD_OUT" || fail "heapdiff $o does not mention $opt"
	done
done
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$HA_BUILDDIR/Makefile")
for o in -V --version; do
	ok_hd "$o"
	grep -qF -- "$version" "$HD_OUT" || fail "heapdiff $o does not print the version $version"
done
echo "ok: --help and --version"
echo "ok"
