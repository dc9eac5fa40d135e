# tests/hostile_lib.sh -- what every test of a hostile target checks
# (tests/t_hostile_*.sh), on top of lib.sh and profile_lib.sh: no control
# byte of the target's reaches our terminal, and every report heapdiff
# writes of the profile is valid in its format, whatever names the target
# gave its modules, functions and files.

# no_controls FILE WHAT: FILE holds no C0 control but newline and tab, no
# DEL, no C1 control (raw or UTF-8 encoded; U+009B is CSI to some
# terminals) and nothing that is not UTF-8.
no_controls() {
	python3 - "$1" <<'PY' || fail "$2 holds bytes a terminal would obey ($1): $(tail -n 1 "$W/controls")"
import sys
data = open(sys.argv[1], 'rb').read()
bad = [i for i, b in enumerate(data) if (b < 0x20 and b not in (9, 10)) or b == 0x7f]
try:
    text = data.decode('utf-8')
    bad += [i for i, c in enumerate(text) if 0x80 <= ord(c) <= 0x9f]
except UnicodeDecodeError as e:
    bad.append(e.start)
if bad:
    i = min(bad)
    open(sys.argv[1].rsplit('/', 1)[0] + '/controls', 'w').write('byte %d: %r\n' % (i, data[max(0, i - 20):i + 20]))
    sys.exit(1)
PY
}

# check_reports DB LABEL [heapdiff args...]: heapdiff in every format on
# DB: each exits 0; json parses; svg is well-formed XML; html has no raw
# markup of the target's (the marker '<b>hostile' of the names in
# t_hostile_names, never written as such) and its embedded JSON parses;
# text and folded hold no control bytes; pprof is gzip.
check_reports() {
	local db=$1 label=$2 f out
	shift 2
	for f in text folded json svg html pprof; do
		out=$W/$label.$f
		"$HA_BUILDDIR/src/heapdiff" -f "$f" -n 0 "$@" "$db" >"$out" 2>"$out.err" ||
			fail "heapdiff -f $f $* on $label failed: $(head -n 3 "$out.err")"
		no_controls "$out.err" "heapdiff -f $f's stderr"
		case $f in
		text | folded) no_controls "$out" "heapdiff -f $f" ;;
		json) python3 -m json.tool "$out" >/dev/null 2>"$out.check" ||
			fail "heapdiff -f json on $label is not JSON: $(tail -n 1 "$out.check")" ;;
		svg) python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$out" 2>"$out.check" ||
			fail "heapdiff -f svg on $label is not well-formed XML: $(tail -n 1 "$out.check")" ;;
		html)
			! grep -aq '<b>hostile' "$out" || fail "heapdiff -f html on $label holds the target's markup unescaped"
			no_controls "$out" "heapdiff -f html"
			python3 - "$out" <<'PY' 2>"$out.check" || fail "heapdiff -f html on $label: $(tail -n 1 "$out.check")"
import json, re, sys
page = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'<script type="application/json" id="hd-data">\n(.*?)\n</script>', page, re.S)
assert m, 'no embedded JSON data'
json.loads(m.group(1))
PY
			;;
		pprof) gzip -t "$out" 2>"$out.check" || fail "heapdiff -f pprof on $label is not gzip" ;;
		esac
	done
	for f in text json; do
		out=$W/$label.leaks.$f
		"$HA_BUILDDIR/src/heapdiff" --leaks -f "$f" "$db" >"$out" 2>"$out.err" ||
			fail "heapdiff --leaks -f $f on $label failed: $(head -n 3 "$out.err")"
		[ "$f" = json ] && { python3 -m json.tool "$out" >/dev/null || fail "heapdiff --leaks -f json on $label is not JSON"; }
		no_controls "$out" "heapdiff --leaks -f $f"
	done
	log "heapdiff on $label: text, folded, json, svg, html, pprof and --leaks are valid"
}
