#!/bin/bash
# t_code_size: rooms a newcomer can read.  No committed .c or .h file of
# src/, agent/ or tests/ over 800 lines (generated files aside), and no
# folder of src/ over 5,000 lines of C: a file or folder that grows past
# them is split by what it does (src/README.md says where things go).
. "$(dirname "$0")/lib.sh"
cd "$HA_SRCDIR" || fail "no source directory $HA_SRCDIR"
command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 ||
	skip "not a git checkout: which files are committed is unknown"
errors=0
while read -r n f; do
	[ "$f" = total ] && continue
	if [ "$n" -gt 800 ]; then
		echo "TOO LONG: $f has $n lines (at most 800)"
		errors=$((errors + 1))
	fi
done < <(git ls-files -- 'src/*.[ch]' 'agent/*.[ch]' 'tests/*.[ch]' | xargs wc -l)
for d in src/*/; do
	n=$(git ls-files -- "$d*.[ch]" | xargs -r cat | wc -l)
	if [ "$n" -gt 5000 ]; then
		echo "TOO BIG: $d holds $n lines of C (at most 5,000)"
		errors=$((errors + 1))
	fi
done
[ "$errors" -eq 0 ] || fail "$errors files or folders over their size"
echo "ok: every file at most 800 lines, every folder of src/ at most 5,000"
