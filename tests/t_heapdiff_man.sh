#!/bin/bash
# t_heapdiff_man: man/heapdiff.1 and `heapdiff --help` describe the same
# options and exit statuses, and the page formats without groff warnings.
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

if command -v groff >/dev/null; then
	warn=$(LC_ALL=C groff -man -Tutf8 -ww -z "$MAN" 2>&1)
	[ -z "$warn" ] || fail "groff warnings: $warn"
	echo "ok: the man page formats without warnings"
else
	log "groff not installed: formatting not checked"
fi
echo "ok"
