#!/bin/bash
# t_tidy: clang-tidy's bugprone-* and cert-* checks (less what .clang-tidy
# at the top of the tree leaves out, and why) find nothing in the .c files
# of src/ and agent/ and the headers of theirs they include.  Each file is
# checked with the flags the build compiles it with, which `make
# tidy-flags` prints (Makefile.am); a .c file no target names fails the
# test, so that none goes unchecked.  Two files at a time (xargs -P2):
# about 10 s on two idle cores.  Findings in a header are listed once.
. "$(dirname "$0")/lib.sh"
command -v clang-tidy >/dev/null || skip "clang-tidy is not installed (build-aux/setup installs it)"
[ -f "$HA_SRCDIR/.clang-tidy" ] || fail "no .clang-tidy in $HA_SRCDIR"
make -s -C "$HA_BUILDDIR" tidy-flags >"$W/words" 2>"$W/make.log" ||
	{ cat "$W/make.log"; fail "make tidy-flags failed"; }

# One flags file per target, and "TARGET FILE" for each of its .c files.
n=0 mode=none
: >"$W/units"
while IFS= read -r w; do
	case $mode:$w in
	*:@sources) n=$((n + 1)); mode=sources; : >"$W/flags.$n" ;;
	*:@flags) mode=flags ;;
	sources:*.c) echo "$n $w" >>"$W/units" ;;
	flags:*) printf '%s\n' "$w" >>"$W/flags.$n" ;;
	esac
done <"$W/words"
[ "$n" -gt 0 ] || fail "make tidy-flags printed no target"

# Every .c file of src/ and agent/ but those the build generates.
cd "$HA_SRCDIR" || fail "no source directory"
find src agent -name '*.c' | sort | while read -r f; do
	head -n 1 "$f" | grep -q 'do not edit' || echo "$f"
done >"$W/all"
cut -d' ' -f2 "$W/units" | sort -u >"$W/named"
missing=$(comm -23 "$W/all" "$W/named")
[ -z "$missing" ] || fail "in no target of make tidy-flags (Makefile.am): $missing"

# Relative -I paths are the build directory's: run from there.
cd "$HA_BUILDDIR" || fail "no build directory"
start=$(date +%s)
export W HA_SRCDIR
awk '{ print NR, $1, $2 }' "$W/units" | xargs -P2 -L1 bash -c '
	mapfile -t fl <"$W/flags.$1"
	clang-tidy --quiet "$HA_SRCDIR/$2" -- "${fl[@]}" >"$W/tidy.$0.log" 2>&1
	echo "exit $?" >>"$W/tidy.$0.log"'
secs=$(($(date +%s) - start))
cat "$W"/tidy.*.log >"$W/tidy.log"
grep -E ': (warning|error): ' "$W/tidy.log" | sed "s|^$HA_SRCDIR/||; s|^\./||" | sort -u >"$W/findings"
if [ -s "$W/findings" ] || grep -qv '^exit 0$' <(grep '^exit ' "$W/tidy.log"); then
	cat "$W/findings"
	grep '^exit [^0]' "$W/tidy.log" | sort | uniq -c
	fail "clang-tidy: $(wc -l <"$W/findings") findings (listed above)"
fi
echo "ok: $(clang-tidy --version | grep -o 'LLVM version [0-9.]*') clang-tidy clean on" \
	"$(wc -l <"$W/units") files of src/ and agent/ in ${secs}s"
