#!/bin/bash
# t_heapdiff_man: man/heapdiff.1 and `heapdiff --help` describe the same
# options and exit statuses, the page's first example looks like what the
# program prints, and the page formats without groff warnings.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
MAN=$HA_SRCDIR/man/heapdiff.1
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -f "$MAN" ] || fail "missing $MAN"

"$HD" --help >"$W/help" 2>&1 || fail "heapdiff --help failed"

# Long options of --help (lines starting with an option) and of the man
# page's OPTIONS section.
help_opts=$(grep -E '^ +(-[a-zA-Z], )?--' "$W/help" | grep -oE -- '--[a-z][a-z-]*' | sort -u)
man_opts=$(sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$MAN" | grep -E '^\.(TP|B|BI|BR)|^\\f' |
	grep -oE -- '\\-\\-[a-z][a-z\\-]*' | sed 's/\\//g' | sort -u)
[ -n "$help_opts" ] || fail "no options found in --help"
[ -n "$man_opts" ] || fail "no options found in the man page"
if [ "$help_opts" != "$man_opts" ]; then
	echo "--help: $(echo $help_opts)"
	echo "man:    $(echo $man_opts)"
	fail "--help and man/heapdiff.1 list different options"
fi
log "options: $(echo $help_opts)"

# Short options.
for s in -n -h -V; do
	grep -qE -- "^ +$s, --" "$W/help" || fail "--help does not show $s"
	grep -qE -- "^\\.BR \\\\$s " "$MAN" || fail "the man page does not show $s"
done

# Defaults and exit statuses.
grep -q 'default 10' "$W/help" || fail "--help does not give the default of --top"
grep -q 'default 10' "$MAN" || fail "the man page does not give the default of --top"
for st in 0 1 2; do
	grep -qE "(^|[ ;])$st " <(sed -n '/^Exit status/,$p' "$W/help") || fail "--help does not describe exit status $st"
	sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$MAN" | grep -qx "\\.B $st" || fail "the man page does not describe exit status $st"
done
echo "ok: --help and the man page agree"

# The first example of EXAMPLES (heapdiff DB: what grew since the attach)
# has the shape of what the program prints on a session written as the
# attacher writes one (db_fill --attacher): the same lines in the same
# order (snapshot 1 the 'attach' baseline, the top functions, the call
# paths, the total), the fixed lines word for word; its numbers are the
# page's own.  note: lines depend on the data and are left out of both.
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"
"$FILL" --attacher "$W/a.db" >/dev/null || fail "db_fill --attacher failed"
"$HD" "$W/a.db" >"$W/real" 2>&1 || fail "heapdiff on db_fill --attacher: $(cat "$W/real")"
awk '/^\$ heapdiff heapattach\\-leaky\\-4242\.db$/ { on = 1; next } on && /^\.fi/ { exit } on' "$MAN" |
	sed 's/\\-/-/g; s/\\e/\\/g' >"$W/example"
[ -s "$W/example" ] || fail "no example of 'heapdiff heapattach-leaky-4242.db' in the man page"
# shape FILE: one word a line, or the line itself where it is fixed text.
shape() {
	awk -v B='[-+]?[0-9.]+ (B|KiB|MiB|GiB)' '
		/^note: / { next }
		{ k = "other: " $0 }
		/^$/ { k = "blank" }
		/^from snapshot [0-9]+: [0-9-]+ [0-9:]+, session [0-9]+ \(pid [0-9]+ [^)]*\), [a-z]+$/ { k = "from " $NF }
		/^  to snapshot [0-9]+: [0-9-]+ [0-9:]+, session [0-9]+ \(pid [0-9]+ [^)]*\), [a-z]+$/ { k = "to " $NF }
		/^samples: [0-9]+ taken, [0-9]+ dropped, [0-9]+ not unwound$/ { k = "samples" }
		/^top functions / || /^ +(FLAT|BYTES) / { k = $0; gsub(/ +/, " ", k) }
		$0 ~ "^ +" B " +[-+]?[0-9]+ +" B " +[0-9]+  [^ ]" { k = "function" }
		$0 ~ "^ +" B " +[-+]?[0-9]+  stack [0-9]+( \\([a-z]+\\))?$" { k = "stack" }
		/^                               [^ ]/ { k = "frame" }
		$0 ~ "^total: live heap " B " \\(estimated; [0-9]+ callstacks changed, [0-9]+ shown\\); RSS " B "; [0-9.]+ s$" { k = "total" }
		k != last { print k; last = k }
	' "$1"
}
if ! diff <(shape "$W/example") <(shape "$W/real") >"$W/shape.diff"; then
	cat "$W/shape.diff"
	fail "the man page's example of 'heapdiff DB' does not look like heapdiff's output (< the page, > the program)"
fi
echo "ok: the man page's example of 'heapdiff DB' has the program's shape"

if command -v groff >/dev/null; then
	warn=$(LC_ALL=C groff -man -Tutf8 -ww -z "$MAN" 2>&1)
	[ -z "$warn" ] || fail "groff warnings: $warn"
	echo "ok: the man page formats without warnings"
else
	log "groff not installed: formatting not checked"
fi
echo "ok"
