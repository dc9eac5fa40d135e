# tests/report_lib.sh -- helpers for the tests of heapdiff's reports, on
# top of lib.sh: running heapdiff, the data of an HTML page, the page
# rendered by headless Chromium, heapdiff under the sanitizers.

HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL (make check builds it)"

# hd ARGS...: heapdiff, which must succeed (its stderr in $W/hd.err).
hd() { "$HD" "$@" 2>"$W/hd.err" || fail "heapdiff $*: $(cat "$W/hd.err")"; }

# page_json PAGE: the data of a page as JSON (what its script reads).
page_json() {
	python3 - "$1" <<'PY'
import json, re, sys
s = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'<script type="application/json" id="hd-data">\n(.*?)\n</script>', s, re.S)
assert m, 'no data element'
json.dump(json.loads(m.group(1)), sys.stdout)
PY
}

# require_chromium: sets CHROMIUM, or skips when Chromium is missing or
# cannot render a trivial page headless here (no sandbox support, no
# shared memory...: a skip, not a failure of the report).
require_chromium() {
	CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
	[ -n "$CHROMIUM" ] || skip "chromium is not installed (build-aux/setup installs it: apt-get install chromium)"
	printf '<!DOCTYPE html><p id="probe">ok</p>\n' >"$W/probe.html"
	local probe
	probe=$(mktemp -d "$W/chromium.XXXXXX")
	timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$probe" --dump-dom "file://$W/probe.html" >"$W/probe.dom" 2>"$W/chromium.log"
	grep -q '<p id="probe">ok</p>' "$W/probe.dom" ||
		skip "chromium cannot render a page headless here: $(grep -v dbus "$W/chromium.log" | tail -n 1)"
	rm -rf "$probe"
}

# dom PAGE[#HASH] OUT: the DOM after the page's scripts ran.
dom() {
	local prof
	prof=$(mktemp -d "$W/chromium.XXXXXX")
	timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$prof" --dump-dom "file://$1" >"$2" 2>"$W/chromium.log" ||
		fail "chromium --dump-dom $1 failed: $(tail -n 5 "$W/chromium.log")"
	rm -rf "$prof"
	[ -s "$2" ] || fail "chromium dumped no DOM for $1: $(tail -n 5 "$W/chromium.log")"
}

# check_dom DOM: rendered, no script error; prints the render time (ms).
check_dom() {
	python3 - "$1" <<'PY' || fail "$1: the page did not render cleanly"
import re, sys
d = open(sys.argv[1], encoding='utf-8', errors='replace').read()
m = re.search(r'<html[^>]*>', d)
assert m, 'no <html> element'
html = m.group(0)
err = re.search(r'data-errors="([^"]*)"', html)
assert not err, 'script error: ' + err.group(1)
assert re.search(r'<pre id="hd-errors" hidden="">\s*</pre>', d), 'the error box is not empty'
r = re.search(r'data-rendered="([0-9.]+)"', html)
assert r, 'no data-rendered marker: the script did not finish'
print(r.group(1))
PY
}

# san_clean "ARGS"...: each argument list (split on blanks) run through
# heapdiff_san (ASan, UBSan, LSan) must exit 0; nothing when it is not
# built.
san_clean() {
	local args
	[ -x "$HA_BUILDDIR/src/heapdiff_san" ] || return 0
	printf 'leak:libsqlite3\n' >"$W/lsan.supp"
	for args in "$@"; do
		# shellcheck disable=SC2086
		ASAN_OPTIONS=abort_on_error=0:exitcode=99:detect_leaks=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99 \
		LSAN_OPTIONS=suppressions=$W/lsan.supp \
			"$HA_BUILDDIR/src/heapdiff_san" $args >"$W/san.out" 2>&1 ||
			fail "heapdiff_san $args: $(tail -n 20 "$W/san.out")"
	done
	log "heapdiff_san: clean ($# runs)"
}
