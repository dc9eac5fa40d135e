#!/bin/bash
# t_readme_layout: the README's layout table and the tree agree, so that the
# table a newcomer reads first cannot drift from the code:
#  - every path the table names exists;
#  - every top-level folder of the repository, every folder of src/ and
#    every file directly in src/ has a row;
#  - agent/ and every folder of src/ have a README.md that names each of
#    their .c files;
#  - tests/README.md names every t_*.sh and every other file git tracks
#    directly in tests/, and tests/targets/README.md every program there
#    (.c, .cc).
. "$(dirname "$0")/lib.sh"
cd "$HA_SRCDIR" || fail "no source directory $HA_SRCDIR"

table=$(awk '/^## Layout/ { on = 1; next } on && /^## / { exit } on && /^\| `/' README.md)
[ -n "$table" ] || fail "README.md has no layout table under '## Layout'"
paths=$(printf '%s\n' "$table" | sed -n 's/^| `\([^`]*\)`.*/\1/p')
errors=0
for p in $paths; do
	if [ ! -e "$p" ]; then
		echo "MISSING: the layout table names '$p', which does not exist"
		errors=$((errors + 1))
	fi
done
# (A here-string, not a pipe: grep -q may exit before printf has written,
# and pipefail would make that SIGPIPE a missing row.)
has_row() { grep -qxF -- "$1" <<<"$paths"; }
for d in $(git ls-files | grep / | cut -d/ -f1 | sort -u); do
	case $d in .*) continue ;; esac
	[ "$d" = build-aux ] && d=build-aux/setup
	has_row "$d/" || has_row "$d" || { echo "NO ROW: top-level '$d/'"; errors=$((errors + 1)); }
done
for d in agent/ src/*/; do
	has_row "$d" || { echo "NO ROW: folder '$d'"; errors=$((errors + 1)); }
	if [ ! -f "$d/README.md" ]; then
		echo "NO README: $d"
		errors=$((errors + 1))
		continue
	fi
	for f in "$d"*.c; do
		[ -f "$f" ] || continue
		[ "$(basename "$f")" = schema_sql.c ] && continue # generated
		grep -qF -- "$(basename "$f")" "$d/README.md" ||
			{ echo "NOT IN $d/README.md: $(basename "$f")"; errors=$((errors + 1)); }
	done
done
for f in src/*.c src/*.h; do
	[ -f "$f" ] || continue
	has_row "$f" || { echo "NO ROW: '$f'"; errors=$((errors + 1)); }
done
# names_all README FILE...: README names each FILE by its basename, as a
# word (lib.sh is not named by profile_lib.sh).
names_all() {
	local readme=$1 f
	shift
	if [ ! -f "$readme" ]; then
		echo "NO README: $readme"
		errors=$((errors + 1))
		return
	fi
	for f in "$@"; do
		[ -f "$f" ] || continue
		grep -qwF -- "$(basename "$f")" "$readme" ||
			{ echo "NOT IN $readme: $(basename "$f")"; errors=$((errors + 1)); }
	done
}
# shellcheck disable=SC2046 # a name a word: no tracked name has a space
names_all tests/README.md tests/t_*.sh \
	$(git ls-files tests | grep -v '^tests/.*/' | grep -v '^tests/t_.*\.sh$' | grep -vx tests/README.md)
names_all tests/targets/README.md tests/targets/*.c tests/targets/*.cc
[ "$errors" = 0 ] || fail "$errors differences between README.md's layout and the tree"
echo "ok: $(printf '%s\n' "$paths" | wc -l) rows, all present; every folder and command has its row"
echo "ok: tests/README.md and tests/targets/README.md name every file of theirs"
