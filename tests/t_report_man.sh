#!/bin/bash
# t_report_man: the three man pages.  heapattach(1) lists exactly the
# options of `heapattach --help` (heapdiff(1) is checked by t_heapdiff_man);
# heapattach-db(5) documents every table and view of schema/schema.sql and
# every column of each (from SQLite's own table_info), and every view can
# be queried; all three pages format without groff warnings.
. "$(dirname "$0")/lib.sh"

FILL=$HA_BUILDDIR/tests/db_fill
MAN1=$HA_SRCDIR/man/heapattach.1
MAN5=$HA_SRCDIR/man/heapattach-db.5
[ -x "$HA" ] || fail "attacher not built: $HA"
[ -x "$FILL" ] || fail "db_fill not built: $FILL"
for m in "$MAN1" "$MAN5" "$HA_SRCDIR/man/heapdiff.1"; do [ -f "$m" ] || fail "missing $m"; done
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"

# ---- heapattach --help and heapattach(1)
"$HA" --help >"$W/help" 2>&1 || fail "heapattach --help failed"
help_opts=$(grep -E '^ +(-[a-zA-Z], )?--' "$W/help" | grep -oE -- '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' |
	grep -oE -- '--[a-z][a-z-]*' | sort -u)
man_opts=$(sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$MAN1" | grep -E '^\.(B|BI|BR) ' |
	grep -oE -- '\\-\\-[a-z][a-z\\-]*' | sed 's/\\//g; s/-$//' | sort -u)
if [ "$help_opts" != "$man_opts" ]; then
	echo "--help: $(echo $help_opts)"
	echo "man:    $(echo $man_opts)"
	fail "heapattach --help and man/heapattach.1 list different options"
fi
for s in $(grep -oE -- '^ +-[a-zA-Z],' "$W/help" | tr -d ' ,'); do
	grep -qE -- "^\\.BR \\\\$s " "$MAN1" || fail "heapattach.1 does not show $s"
done
for st in 0 1 2 3; do
	sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$MAN1" | grep -qx "\\.B $st" || fail "heapattach.1: no exit status $st"
	grep -qE "(^|[ ,])$st " <(sed -n '/^Exit status/,$p' "$W/help") || fail "heapattach --help: no exit status $st"
done
log "heapattach options: $(echo $help_opts)"
echo "ok: heapattach --help and heapattach(1) agree"

# ---- heapattach-db(5): every table, view and column; views queryable
db=$W/s.db
"$FILL" --series "$db" >/dev/null || fail "db_fill --series failed"
# section NAME: the lines of the page from ".SS NAME" to the next section.
section() { awk -v n="$1" '$1 == ".SS" { on = ($2 == n); next } /^\.SH/ { on = 0 } on' "$MAN5"; }
n=0
for obj in $(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"); do
	sec=$(section "$obj")
	[ -n "$sec" ] || fail "heapattach-db.5 has no section for $obj"
	for col in $(sqlite3 "$db" "SELECT name FROM pragma_table_info('$obj')"); do
		grep -qE "(^\\.B $col\$|\\\\fB$col\\\\fR)" <<<"$sec" || fail "heapattach-db.5 does not document column $obj.$col"
	done
	n=$((n + 1))
done
for v in $(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name"); do
	sqlite3 "$db" "SELECT * FROM $v LIMIT 3" >/dev/null 2>"$W/v.err" || fail "view $v: $(cat "$W/v.err")"
	section "$v" | grep -q "FROM $v\\b" || fail "heapattach-db.5 has no example query for $v"
	# The example queries of the page run.
	section "$v" | awk '/^\.nf/ { on = 1; q = ""; next } /^\.fi/ { on = 0; print q ";"; next } on { q = q " " $0 }' |
		sed 's/\\(aq/'"'"'/g; s/\\-/-/g; s/\\e/\\/g' >"$W/q.sql"
	sqlite3 "$db" <"$W/q.sql" >/dev/null 2>"$W/q.err" || fail "example query of $v fails: $(cat "$W/q.err"): $(cat "$W/q.sql")"
done
log "$n tables and views documented, every column"
echo "ok: heapattach-db(5) documents the schema; the views and their examples run"

if command -v groff >/dev/null; then
	for m in "$MAN1" "$MAN5" "$HA_SRCDIR/man/heapdiff.1"; do
		warn=$(LC_ALL=C groff -man -Tutf8 -ww -z "$m" 2>&1)
		[ -z "$warn" ] || fail "groff warnings in $m: $warn"
	done
	echo "ok: the pages format without warnings"
fi
echo ok
