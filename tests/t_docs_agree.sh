#!/bin/bash
# t_docs_agree: the documentation a newcomer reads names every option the
# program has (issue 38).  For heapattach and heapdiff, every long option
# that `--help` lists (one that begins a line of its option list):
#  - is in the OPTIONS section of the command's man page (man/heapattach.1,
#    man/heapdiff.1; roff's \- read as -);
#  - is in the README's usage block of that command (under "## Usage": the
#    heapattach block from its "heapattach [options] PID" line to the first
#    heapdiff line, the heapdiff block from there to the end of the
#    indented text);
# and every long option a README usage block names is one of its command's.
# No root, no target.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
[ -x "$HA" ] || fail "attacher not built: $HA"
[ -x "$HD" ] || fail "heapdiff not built: $HD"
README=$HA_SRCDIR/README.md
[ -f "$README" ] || fail "missing $README"

# The README's usage section, indented lines only, split by command.
awk '/^## Usage$/ { on = 1; next } on && /^## / { exit } on' "$README" >"$W/usage"
awk '/^    heapattach / { on = 1 } /^    heapdiff / { exit } on' "$W/usage" >"$W/readme.heapattach"
awk '/^    heapdiff / { on = 1 } on && /^[^ ]/ { exit } on' "$W/usage" >"$W/readme.heapdiff"
for c in heapattach heapdiff; do
	[ -s "$W/readme.$c" ] || fail "README.md has no usage block of $c under '## Usage'"
done

# has FILE OPTION: FILE names --OPTION as a whole word.
has() { grep -qE -- "--$2([^a-z-]|\$)" "$1"; }

errors=0
for c in heapattach heapdiff; do
	bin=$HA
	[ "$c" = heapdiff ] && bin=$HD
	"$bin" --help >"$W/help.$c" 2>&1 || fail "$c --help failed"
	opts=$(grep -oE -- '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' "$W/help.$c" | grep -oE -- '--[a-z][a-z-]*' |
		sed 's/^--//' | sort -u)
	[ "$(wc -w <<<"$opts")" -ge 10 ] || fail "$c --help: too few options found: $(echo $opts)"
	sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$HA_SRCDIR/man/$c.1" | sed 's/\\-/-/g' >"$W/man.$c"
	[ -s "$W/man.$c" ] || fail "man/$c.1 has no OPTIONS section"
	for o in $opts; do
		has "$W/man.$c" "$o" || { echo "NOT IN man/$c.1 OPTIONS: --$o"; errors=$((errors + 1)); }
		has "$W/readme.$c" "$o" || { echo "NOT IN README.md's usage of $c: --$o"; errors=$((errors + 1)); }
	done
	for o in $(grep -oE -- '--[a-z][a-z-]*' "$W/readme.$c" | sed 's/^--//' | sort -u); do
		grep -qx -- "$o" <<<"$opts" || { echo "README.md's usage of $c names --$o, which $c --help does not list"; errors=$((errors + 1)); }
	done
	log "$c: $(wc -w <<<"$opts") options"
done
[ "$errors" = 0 ] || fail "$errors differences between --help, the man pages and README.md's usage"
echo "ok: every option of heapattach --help and heapdiff --help is in its man page and the README's usage"
