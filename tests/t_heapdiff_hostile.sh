#!/bin/bash
# run-all-timeout: 420
# t_heapdiff_hostile: the real heapdiff on a hostile database and on corrupt
# ones (what tests/fuzz/fuzz_db does in-process, here through the binary
# and real consumers).  The hostile file is a valid profile (tests/db_fill:
# three sessions, every kind, a peak, a series) whose values were then
# rewritten with sqlite3: names with markup (<script>, </script>, <img
# onerror>), quotes, backslashes, newlines, ESC and C1 sequences, invalid
# UTF-8, the folded format's ';'; counts at INT64_MAX and MIN, sizes that
# are negative or sum past DBL_MAX, NULLs; stack rows that point to no
# frame, buckets of no stack and of an unknown kind, a stack of 3000
# frames that are all the same frame.  Every report (A -> B and the live
# heap in every format, --peak, --leaks, --heap-vs-rss, each session) must
# exit 0, or 1 with exactly one line, within 60 s (nothing loops), and
# then: text with no ESC or other control byte (stderr too), json valid
# per python3 -m json.tool, svg per xml.dom.minidom, html with the tags of
# a clean page (no markup from a name) and a valid hd-data JSON, pprof read
# by go tool pprof -raw (skipped, said why, without go); heapdiff_san
# (ASan, UBSan) finds nothing in any format.  Corrupt files (a
# schema whose SQL holds ESC bytes, pages overwritten, a file cut short)
# must give exit 1 and one clean line.  No root, no target.
. "$(dirname "$0")/lib.sh"

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"

fill() {
	"$FILL" --rss "$1" >/dev/null && "$FILL" --series "$1" >/dev/null &&
		"$FILL" --attacher "$1" >/dev/null || fail "db_fill $1 failed"
}
clean=$W/clean.db
db=$W/hostile.db
fill "$clean"
fill "$db"

# ---- the hostile values: NOT NULL out of the schema first, as a crafted
# file may have it (heapdiff checks meta and application_id, not the SQL)
sqlite3 "$db" >"$W/sql.out" 2>&1 <<'SQL' || fail "sqlite3: $(cat "$W/sql.out")"
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table';
PRAGMA writable_schema = OFF;
SQL
sqlite3 "$db" >"$W/sql.out" 2>&1 <<'SQL' || fail "sqlite3: $(cat "$W/sql.out")"
BEGIN;
UPDATE frames SET function = '<script>alert(1)</script>' || id WHERE id % 7 = 0;
UPDATE frames SET function = '</script><img src=x onerror=alert(2)>' || id WHERE id % 7 = 1;
UPDATE frames SET function = CAST(X'1b5b324a1b5d303b7469746c65071b5b33316d' AS TEXT) || 'esc' || id WHERE id % 7 = 2;
UPDATE frames SET function = CAST(X'c29b33316dfffe' AS TEXT) || 'c1 and invalid' || id WHERE id % 7 = 3;
UPDATE frames SET function = 'quote" ''single'' back\slash' || char(10) || 'newline' || id WHERE id % 7 = 4;
UPDATE frames SET function = 'a;b;c ' || CAST(X'eda080' AS TEXT) || ' ]]> <!-- &amp; &#0;' || id WHERE id % 7 = 5;
UPDATE OR IGNORE frames SET function = NULL, file = NULL WHERE id % 7 = 6;
UPDATE OR IGNORE frames SET file = '</title><b>bold</b>' || char(13) || char(9), line = 9223372036854775807;
UPDATE OR IGNORE frames SET rel_pc = -1, inlined = 2 WHERE id % 3 = 0;
UPDATE modules SET path = '<svg onload=alert(3)>/lib"' || char(27) || id || '.so', build_id = NULL;
UPDATE sessions SET comm = '<b>comm</b>' || char(27) || '[2J', exe = NULL, pid = -1;
UPDATE sessions SET sample_interval = 9223372036854775807 WHERE id = 1;
UPDATE sessions SET sample_interval = -9223372036854775808 WHERE id = 2;
UPDATE snapshots SET samples = 9223372036854775807, drops = -9223372036854775808,
	unwind_failures = NULL, rss_bytes = -1, sample_interval = NULL;
UPDATE snapshots SET reason = '<i>' || char(27) || 'reason' WHERE id % 4 = 0;
UPDATE snapshots SET samples = -9223372036854775808, drops = 9223372036854775807,
	rss_samples = -9223372036854775808, rss_lost = 9223372036854775807 WHERE id % 2 = 0;
UPDATE buckets SET live_bytes = 1.7e308, alloc_bytes = 1.7e308 WHERE stack_id % 2 = 0;
UPDATE buckets SET live_bytes = -1e18, live_count = -5 WHERE stack_id % 5 = 1;
UPDATE buckets SET live_count = NULL, alloc_count = 9.2e18 WHERE stack_id % 5 = 2;
INSERT OR IGNORE INTO stack_frames (stack_id, pos, frame_id)
	SELECT id, 90, 999999 FROM stacks;
INSERT OR IGNORE INTO buckets SELECT session_id, 424242, kind, snapshot_id, alloc_count,
	alloc_bytes, free_count, free_bytes, live_count, live_bytes FROM buckets;
INSERT OR IGNORE INTO session_stacks SELECT session_id, 424242, kind, first_snapshot_id
	FROM session_stacks;
INSERT OR IGNORE INTO buckets SELECT session_id, stack_id, 99, snapshot_id, alloc_count,
	alloc_bytes, free_count, free_bytes, live_count, live_bytes FROM buckets WHERE stack_id = 3;
INSERT OR IGNORE INTO session_stacks SELECT session_id, stack_id, 99, first_snapshot_id
	FROM session_stacks WHERE stack_id = 3;
DELETE FROM stack_frames WHERE stack_id = 1;
INSERT INTO stack_frames (stack_id, pos, frame_id)
	WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 2999)
	SELECT 1, i, (SELECT min(id) FROM frames) FROM k;
UPDATE stacks SET depth = 3000 WHERE id = 1;
COMMIT;
SQL

have_go=1
command -v go >/dev/null || have_go=0
[ "$have_go" = 1 ] || log "go is not installed: pprof output not read by go tool pprof (only its exit status and error line are checked)"

# A clean page's tags, to compare every hostile page with.
tags_of() {
	python3 - "$1" <<'PY'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
    def handle_starttag(self, tag, attrs): self.tags.append(tag)
    def handle_endtag(self, tag): self.tags.append('/' + tag)
p = P()
p.feed(open(sys.argv[1], encoding='utf-8').read())
print(' '.join(p.tags))
PY
}
"$HD" -f html -o "$W/clean.html" "$clean" first last 2>"$W/clean.err" ||
	fail "heapdiff -f html on the clean file: $(cat "$W/clean.err")"
clean_tags=$(tags_of "$W/clean.html") || fail "python cannot parse the clean page"

# no_control FILE WHAT: no byte below 0x20 but newline and tab, no DEL, no
# C1 control (U+0080..U+009F), valid UTF-8.
no_control() {
	python3 - "$1" 2>"$W/ctl.err" <<'PY' || fail "$2: $(cat "$W/ctl.err")"
import sys
b = open(sys.argv[1], 'rb').read()
try:
    s = b.decode('utf-8')
except UnicodeDecodeError as e:
    sys.exit('not UTF-8: %s' % e)
bad = [c for c in s if (ord(c) < 0x20 and c not in '\n\t') or 0x7f <= ord(c) <= 0x9f]
if bad:
    sys.exit('control characters %r' % bad[:5])
PY
}

runs=0
# check FORMAT LABEL ARGS...: heapdiff ARGS in FORMAT, checked.
check() {
	local fmt=$1 label=$2 out=$W/out err=$W/err rc
	shift 2
	runs=$((runs + 1))
	timeout 60 "$HD" -f "$fmt" -o "$out" "$@" 2>"$err"
	rc=$?
	[ "$rc" != 124 ] || fail "$label: heapdiff $* did not end within 60 s"
	no_control "$err" "$label: stderr"
	if [ "$rc" = 1 ]; then
		[ "$(wc -l <"$err")" = 1 ] && grep -q '^heapdiff: ' "$err" ||
			fail "$label: exit 1 without exactly one error line: $(cat "$err")"
		log "$label: refused: $(cat "$err")"
		return
	fi
	[ "$rc" = 0 ] || fail "$label: heapdiff $* exited $rc: $(cat "$err")"
	case $fmt in
	text|folded) no_control "$out" "$label: output" ;;
	json) python3 -m json.tool "$out" >/dev/null 2>"$W/json.err" ||
		fail "$label: not JSON: $(cat "$W/json.err")" ;;
	svg) python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$out" \
		2>"$W/xml.err" || fail "$label: not XML: $(tail -n 1 "$W/xml.err")" ;;
	html)
		[ "$(tags_of "$out")" = "$clean_tags" ] ||
			fail "$label: the page's tags are not the clean page's (markup from a name)"
		python3 - "$out" <<'PY' || fail "$label: the page's hd-data is not JSON"
import json, re, sys
s = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'<script type="application/json" id="hd-data">(.*?)</script>', s, re.S)
json.loads(m.group(1))
PY
		! grep -qF -e '<script>alert' -e '<img src' -e '<svg onload' -e '<b>' "$out" ||
			fail "$label: a name's markup is in the page unescaped" ;;
	pprof)
		if [ "$have_go" = 1 ]; then
			go tool pprof -raw -symbolize=none "$out" >"$W/raw" 2>"$W/pprof.err" ||
				fail "$label: go tool pprof -raw: $(tail -n 2 "$W/pprof.err")"
		fi ;;
	esac
}

for s in 1 2 3; do
	for fmt in text folded json svg pprof html; do
		check "$fmt" "session $s, first..last, $fmt" --session "$s" "$db" first last
		check "$fmt" "session $s, at last, $fmt" --session "$s" "$db" last
	done
	for fmt in text json svg; do
		check "$fmt" "session $s, --peak, $fmt" --peak --session "$s" "$db"
		check "$fmt" "session $s, --kind rss, $fmt" --kind rss --all-frames --session "$s" "$db" first last
	done
	for fmt in text json; do
		check "$fmt" "session $s, --leaks, $fmt" --leaks --session "$s" "$db"
		check "$fmt" "session $s, --heap-vs-rss, $fmt" --heap-vs-rss --session "$s" "$db" first last
	done
done
echo "ok: $runs reports of the hostile file: exit 0 or one error line, each format well formed"

# ---- the same through heapdiff under ASan and UBSan (any report of either
# stops it with exit 1 and its report on stderr)
SAN=$HA_BUILDDIR/src/heapdiff_san
if [ -x "$SAN" ]; then
	export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	for s in 1 2 3; do
		for fmt in text folded json svg pprof html; do
			timeout 120 "$SAN" -f "$fmt" -o "$W/out" --session "$s" "$db" first last 2>"$W/err"
			rc=$?
			! grep -qE 'runtime error|AddressSanitizer' "$W/err" ||
				fail "heapdiff_san, session $s, $fmt: $(grep -E -m 3 'runtime error|ERROR' "$W/err")"
			[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "heapdiff_san, session $s, $fmt: exit $rc"
		done
	done
	echo "ok: heapdiff_san found nothing in the hostile file"
else
	log "no $SAN (make check builds it): the sanitizers' pass skipped"
fi

# ---- corrupt files: exit 1, one clean line
# refused FILE LABEL: every format of heapdiff FILE refused so.
refused() {
	local fmt rc
	for fmt in text json svg pprof html; do
		timeout 60 "$HD" -f "$fmt" -o "$W/out" "$1" first last 2>"$W/err"
		rc=$?
		[ "$rc" = 1 ] || fail "$2, $fmt: exit $rc, expected 1: $(cat "$W/err")"
		[ "$(wc -l <"$W/err")" = 1 ] || fail "$2, $fmt: not one error line: $(cat "$W/err")"
		no_control "$W/err" "$2, $fmt: the error line"
	done
	log "$2: $(cat "$W/err")"
}
cp "$clean" "$W/schema.db"
sqlite3 "$W/schema.db" >"$W/sql.out" 2>&1 <<'SQL' || fail "sqlite3: $(cat "$W/sql.out")"
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = 'CREATE VIEW growth AS SELECT ' || char(27) || '[2J' || char(27)
	|| ']0;owned' || char(7) || CAST(X'c29bff' AS TEXT) || ' FROM'
	WHERE name = 'growth';
SQL
refused "$W/schema.db" "a schema whose SQL holds ESC, C1 and invalid bytes"
grep -q 'malformed database schema' "$W/err" || fail "the schema error is not SQLite's: $(cat "$W/err")"

size=$(stat -c %s "$clean")
cp "$clean" "$W/pages.db"
# every page but the first (the schema) overwritten in its middle
for ((off = 4096 + 1024; off < size; off += 4096)); do
	printf 'garbage%.0s' {1..64} | dd of="$W/pages.db" bs=1 seek="$off" conv=notrunc status=none
done
refused "$W/pages.db" "every page overwritten"
head -c $((size / 2)) "$clean" >"$W/cut.db"
refused "$W/cut.db" "a file cut in half"
echo "ok: corrupt files refused with one clean line"
