#!/bin/bash
# The agent's relocation parser and GOT patch/restore on modules built here:
# tests/reloc_lib.c with lazy binding, with -z now (GOT in RELRO), and with
# -fno-plt (GLOB_DAT calls); readelf says which slots of malloc, calloc and
# free each has; tests/reloc_check finds exactly those, patches them and
# restores every byte.
set -u
. "$HA_SRCDIR/tests/lib.sh"
prog=$HA_BUILDDIR/tests/reloc_check
[ -x "$prog" ] || fail "test program not built: $prog (make check builds it)"
command -v readelf >/dev/null || skip "readelf not installed"
CC=${CC:-cc}
command -v "$CC" >/dev/null || skip "no C compiler"
tmp=$W
rc=0
for variant in lazy now noplt; do
	case $variant in
	lazy) flags="-Wl,-z,lazy -Wl,-z,relro"; lazy=1 ;;
	now) flags="-Wl,-z,now -Wl,-z,relro"; lazy=0 ;;
	noplt) flags="-fno-plt -Wl,-z,now -Wl,-z,relro"; lazy=0 ;;
	esac
	so=$tmp/libreloc_$variant.so
	# shellcheck disable=SC2086
	$CC -O1 -fPIC -shared $flags -o "$so" "$HA_SRCDIR/tests/reloc_lib.c" || fail "cannot build $so"
	readelf -rW "$so" | awk '$3 ~ /^R_X86_64_(JUMP_SLO|GLOB_DAT)/ { n = $5; sub(/@.*/, "", n);
		if (n == "malloc" || n == "calloc" || n == "free") print $1, $3, n }' >"$tmp/$variant.want"
	echo "== $variant: readelf lists"
	cat "$tmp/$variant.want"
	"$prog" "$so" "$tmp/$variant.want" "$lazy" || { echo "FAIL: $variant"; rc=1; }
done
exit $rc
