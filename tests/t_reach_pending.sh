#!/bin/bash
# t_reach_pending: what issue 40 asks and is not built yet, skipped with
# the reason until it is: the HTML report's reach column (heapdiff -f html
# shows no scan), the reach fields of heapdiff --leaks -f json's suspects
# (the text has them), and a test of --reach with --live (run by hand: the
# view and the scans share nothing but the collector).
. "$(dirname "$0")/lib.sh"
HD=$HA_BUILDDIR/src/heapdiff
[ -x "$HD" ] || fail "heapdiff not built: $HD"
grep -q 'reach' "$HA_SRCDIR/src/render/report_html.c" ||
	skip "not built yet: the HTML report's reach column, --leaks -f json's reach fields, a --reach --live test (issue 40)"
echo "ok: the HTML report has its reach column"
