#!/bin/bash
# t_report_html: heapdiff --format html rendered by headless Chromium, on
# synthetic profiles (tests/db_fill): the page renders without a script
# error and marks itself rendered; it holds the chart (svg with the heap,
# mmap and RSS series, the baseline, the peak, A and B marked) and the
# flame graph (frame elements); the leak sites are named in the flame graph
# and in the tables; #view=peak shows the peak; a session written as the
# attacher writes one (an 'attach' baseline without rows, a 'peak' snapshot
# before the final one) gives the right peak and leak trend; fewer than 3
# snapshots say so instead of the leak table; a hostile function name and
# comm (markup, quotes, </script>, invalid UTF-8, put into the database
# with sqlite3) come out escaped and break nothing; 4096 call paths render
# in time (size and render time logged).  The page is self-contained: no
# reference to another file or host.  Skipped when Chromium is missing
# (build-aux/setup installs Debian's chromium).  No root, no target.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report_lib.sh"
command -v python3 >/dev/null || skip "python3 is not installed"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
require_chromium

# The static page: one file, no other file or host referenced.
self_contained() {
	head -c 15 "$1" | grep -q '<!DOCTYPE html>' || fail "$1 does not start with <!DOCTYPE html>"
	if grep -Eo '<(link|img|iframe|object|embed)\b|\b(src|href)=|@import|url\(["'"'"']?[a-z]+:' "$1" | head -n 3 | grep -q .; then
		fail "$1 refers to another resource: $(grep -Eo '<(link|img|iframe|object|embed)\b|\b(src|href)=|@import' "$1" | head -n 3)"
	fi
	grep -Eo 'https?://[^"'"'"' )]*' "$1" | grep -v '^http://www.w3.org/2000/svg$' | head -n 1 | grep -q . &&
		fail "$1 names a host: $(grep -Eo 'https?://[^"'"'"' )]*' "$1" | grep -v 'www.w3.org/2000/svg' | head -n 1)"
	return 0
}

# Names of the flame graph's frame elements in a DOM dump (a frame too
# narrow for its label keeps its name in data-name).
cat >"$W/pagelib.py" <<'PY'
import html, re
def frames(d, cls=''):
    out = []
    for c, attrs, text in re.findall(r'<div class="fr([^"]*)"([^>]*)>([^<]*)</div>', d):
        if cls and cls not in c.split():
            continue
        m = re.search(r'data-name="([^"]*)"', attrs)
        out.append(html.unescape(text) if text else html.unescape(m.group(1)) if m else '')
    return out
PY
export PYTHONPATH=$W

# ---- the synthetic profile: first -> last
db=$W/profile.db
"$FILL" "$db" >"$W/fill.out" 2>&1 || fail "db_fill failed: $(cat "$W/fill.out")"
hd -f html -o "$W/p.html" "$db" first last
self_contained "$W/p.html"
page_json "$W/p.html" >"$W/p.json" || fail "the embedded data is not JSON"
python3 - "$W/p.json" <<'PY' || fail "the embedded data is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert [v['key'] for v in d['views']] == ['diff', 'peak', 'b'], d['views']
assert d['a']['id'] == 1 and d['b']['id'] == 3, (d['a'], d['b'])
assert len(d['snaps']) == 3 and d['target']['comm'] == 'leaky' and d['target']['pid'] == 4242
diff = d['views'][0]
names = {d['frames'][r[3][0]][0]: r[1] for r in diff['rows']}
assert names['leak_grow'] == 3000000 and names['cache_fill'] == -500000, names
assert d['leaks']['nsnaps'] == 3
PY
dom "$W/p.html" "$W/p.dom"
ms=$(check_dom "$W/p.dom")
python3 - "$W/p.dom" <<'PY' || fail "the rendered page lacks the chart, the flame graph or the tables"
import re, sys
d = open(sys.argv[1], encoding='utf-8').read()
chart = re.search(r'<svg[^>]*id="hd-chart-svg".*?</svg>', d, re.S)
assert chart, 'no chart svg'
c = chart.group(0)
for s in ('heap', 'mmap', 'rss'):
    assert 'data-series="%s"' % s in c, 'no %s series in the chart' % s
for m in ('baseline', 'A', 'B'):
    assert 'data-mark="%s"' % m in c, 'no %s marker' % m
assert re.search(r'data-mark="peak [^"]+"', c), 'no peak marker'
flame = re.search(r'<div id="hd-flame".*?</div></div>', d, re.S)
from pagelib import frames
fr = frames(d)
assert len(fr) >= 5, fr
assert 'leak_grow (inlined)' in fr and 'cache_fill' in fr and 'all' in fr and 'mk_small' in fr, fr
rows = re.search(r'<table class="rows" id="hd-rows">.*?</table>', d, re.S).group(0)
assert 'leak_grow' in rows and '+2.86 MiB' in rows, 'leak_grow not in the top table'
leaks = re.search(r'<section id="hd-leaks">.*?</section>', d, re.S).group(0)
assert 'id="hd-leak-table"' in leaks and 'leak_grow' in leaks, 'leak_grow not among the leak suspects'
assert re.search(r'<html[^>]*data-view="diff"', d)
PY
log "profile: rendered in $ms ms"
echo "ok: the page renders the chart, the flame graph, the tables"

# ---- interaction: a copy of the page with a script appended that clicks
# and hovers as a reader would, and leaves what it saw in data-test
python3 - "$W/p.html" "$W/pi.html" <<'PY' || fail "cannot write the interaction page"
import sys
s = open(sys.argv[1], encoding='utf-8').read()
probe = r"""<script>
(function () {
  var out = {};
  function ev(e, type, x, y) {
    e.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: x || 0, clientY: y || 0 }));
  }
  try {
    var row = document.querySelector('#hd-rows tr.row');
    ev(row, 'click');
    out.stack = row.nextSibling && row.nextSibling.className === 'stack' ? row.nextSibling.textContent : null;
    var fr = Array.prototype.filter.call(document.querySelectorAll('#hd-flame .fr'), function (e) {
      return e.textContent.indexOf('leak_grow') === 0; })[0];
    ev(fr, 'mousemove');
    out.details = document.getElementById('hd-details').textContent;
    var ft = document.querySelector('#hd-flame-title + section > .tip');
    out.ftip = ft && ft.style.display !== 'none' ? ft.textContent : null;
    ev(fr, 'click');
    out.hash = location.hash;
    out.anc = document.querySelectorAll('#hd-flame .fr.anc').length;
    out.reset = !document.querySelector('#hd-flame-title + section button:nth-of-type(4)').disabled;
    var ov = document.querySelector('#hd-chart-svg rect[fill="transparent"]'), r = ov.getBoundingClientRect();
    ev(ov, 'mousemove', r.right - 2, r.top + 10);
    out.tip = document.querySelector('#hd-chart .tip').textContent;
    var tb = Array.prototype.filter.call(document.querySelectorAll('.toolbar button'), function (b) {
      return b.textContent === 'Icicle'; })[0];
    ev(tb, 'click');
    out.icicle = location.hash;
  } catch (e) { out.error = String(e); }
  document.documentElement.setAttribute('data-test', JSON.stringify(out));
})();
</script>
"""
i = s.rindex('</body>')
open(sys.argv[2], 'w', encoding='utf-8').write(s[:i] + probe + s[i:])
PY
dom "$W/pi.html" "$W/pi.dom"
check_dom "$W/pi.dom" >/dev/null
python3 - "$W/pi.dom" <<'PY' || fail "clicking and hovering do not work"
import html, json, re, sys
d = open(sys.argv[1], encoding='utf-8').read()
t = json.loads(html.unescape(re.search(r'<html[^>]*data-test="([^"]*)"', d).group(1)))
print('    ', t)
assert 'error' not in t, t['error']
assert t['stack'] and 'handle_request' in t['stack'] and 'main' in t['stack'] and 'leaky.c:80' in t['stack'], t['stack']
det = t['details']
for w in ('leak_grow', '+2.86 MiB', '+300 objects', '/src/leaky/leaky.c:42', '/opt/leaky/bin/leaky'):
    assert w in det, (w, det)
assert t['ftip'] and t['ftip'].startswith('leak_grow (inlined)+2.86 MiB'), t['ftip']
assert 'zoom=' in t['hash'] and t['anc'] >= 3 and t['reset'], t
assert 'snapshot 3' in t['tip'] and 'RSS' in t['tip'] and '12.6 MiB' in t['tip'], t['tip']
assert 'mode=icicle' in t['icicle'], t['icicle']
PY
echo "ok: a row opens to its stack; hover and click on a frame; hover on the chart; icicle"

# ---- #view=peak and #search= reopen that view
dom "$W/p.html#view=peak&search=leak_" "$W/pk.dom"
check_dom "$W/pk.dom" >/dev/null
python3 - "$W/pk.dom" <<'PY' || fail "#view=peak&search= is not shown"
import re, sys
d = open(sys.argv[1], encoding='utf-8').read()
assert re.search(r'<html[^>]*data-view="peak"', d), 'the view is not peak'
assert re.search(r'<button[^>]*class="on"[^>]*data-view="peak"|<button[^>]*data-view="peak"[^>]*class="on"', d), 'the peak button is not on'
assert 'Live heap at the peak' in d
m = re.search(r'<span class="muted" id="hd-matched">([^<]*)</span>', d)
assert m and m.group(1).startswith('Matched: '), m and m.group(1)
from pagelib import frames
assert 'leak_grow (inlined)' in frames(d, 'match'), 'the match is not highlighted'
# The peak of the synthetic profile is snapshot 3 (the highest total).
assert 'snapshot 3' in re.search(r'<h2 id="hd-flame-title">([^<]*)</h2>', d).group(1)
PY
echo "ok: #view=peak&search=REGEX"

# ---- a session as the attacher writes it: baseline, peak snapshot, final
adb=$W/attacher.db
"$FILL" --attacher "$adb" >"$W/fill_a.out" 2>&1 || fail "db_fill --attacher failed: $(cat "$W/fill_a.out")"
# The leak series leave out the peak snapshot: a straight line, exact rate.
hd --leaks --bytes "$adb" >"$W/aleaks"
grep -Eq '^ +\+8000/min +\+56000 +56000 +1\.00  stack 1$' "$W/aleaks" ||
	fail "--leaks on the attacher's session: $(cat "$W/aleaks")"
grep -q '^1 suspect;' "$W/aleaks" || fail "--leaks: not exactly one suspect"
hd --peak --bytes "$adb" >"$W/apeak"
head -n 1 "$W/apeak" | grep -Eq '^peak: snapshot 8 (has|holds) the highest estimated live memory of session 1 \(2328000[,)]' ||
	fail "--peak: $(head -n 1 "$W/apeak")"
hd -f html -o "$W/a.html" "$adb"
self_contained "$W/a.html"
page_json "$W/a.html" >"$W/a.json"
python3 - "$W/a.json" <<'PY' || fail "the attacher's session in the data"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['peak']['id'] == 8 and d['peak']['live'] == 2328000 and d['peak']['reason'] == 'peak', d['peak']
snaps = {s[0]: s for s in d['snaps']}
assert len(snaps) == 9 and snaps[1][2] == 'attach' and snaps[1][4] + snaps[1][5] == 0, snaps[1]
assert snaps[8][4] == 2028000 and snaps[8][5] == 300000, snaps[8]     # heap, mmap at the peak
assert snaps[9][4] == 56000, snaps[9]                                 # the final rewrote the burst
L = d['leaks']
assert L['nsnaps'] == 8 and len(L['suspects']) == 1, L
s = L['suspects'][0]
assert d['frames'][s['frames'][0]][0] == 'leak_attach' and s['rate'] == 8000, s
assert s['series'] == [0, 8000, 16000, 24000, 32000, 40000, 48000, 56000], s['series']
peak = [v for v in d['views'] if v['key'] == 'peak'][0]
assert any(d['frames'][r[3][0]][0] == 'burst_fill' and r[1] == 2000000 for r in peak['rows']), peak
PY
dom "$W/a.html#view=peak" "$W/a.dom"
ms=$(check_dom "$W/a.dom")
python3 - "$W/a.dom" <<'PY' || fail "the attacher's session is not drawn right"
import re, sys
d = open(sys.argv[1], encoding='utf-8').read()
c = re.search(r'<svg[^>]*id="hd-chart-svg".*?</svg>', d, re.S).group(0)
assert 'data-mark="peak 2.22 MiB"' in c, 'the peak is not marked with its value'
assert len(re.findall(r'class="ival"', c)) == 1, 'not one sampling-interval mark'
assert len(re.findall(r'class="drop"', c)) == 1, 'not one drop mark'
# Points in time order: the peak (t0 + 210) between snapshots 4 and 5.
pts = re.search(r'<polyline points="([^"]*)" class="rss"', c).group(1).split()
xs = [float(p.split(',')[0]) for p in pts]
assert xs == sorted(xs) and len(xs) == 9, xs
from pagelib import frames
assert 'burst_fill' in frames(d), frames(d)
assert re.search(r'<html[^>]*data-view="peak"', d)
leaks = re.search(r'<section id="hd-leaks">.*?</section>', d, re.S).group(0)
assert 'leak_attach' in leaks and '+7.81 KiB/min' in leaks and 'burst_fill' not in leaks, leaks
assert 'recorded by the attacher' in d
note = re.search(r'<div class="warn" id="hd-note"[^>]*>([^<]*)</div>', d)
assert note and 'peaked at 2.22 MiB (snapshot 8) and is 348 KiB at snapshot 9' in note.group(1), note and note.group(1)
PY
log "attacher's session: rendered in $ms ms"
# 'peak' as a snapshot operand: the growth from the baseline to the peak.
hd -f html -o "$W/ap.html" "$adb" first peak
page_json "$W/ap.html" >"$W/ap.json"
python3 - "$W/ap.json" <<'PY' || fail "first -> peak: the diff is not baseline -> peak"
import json, sys
d = json.load(open(sys.argv[1]))
v = d['views'][0]
assert v['key'] == 'diff' and v['from'] == 1 and v['to'] == 8 and v['total'] == 2328000, (v['from'], v['to'], v['total'])
assert d['frames'][v['rows'][0][3][0]][0] == 'burst_fill', v['rows'][0]
PY
echo "ok: baseline, peak snapshot, final: the peak, the chart in time order, the leak trend; first -> peak"

# ---- fewer than 3 snapshots (the peak not counted): said instead of the table
fdb=$W/few.db
cp "$adb" "$fdb"
sqlite3 "$fdb" "DELETE FROM buckets WHERE snapshot_id BETWEEN 2 AND 7; DELETE FROM snapshots WHERE id BETWEEN 2 AND 7;" ||
	fail "sqlite3 could not thin out the snapshots"
hd -f html -o "$W/few.html" "$fdb"
dom "$W/few.html" "$W/few.dom"
check_dom "$W/few.dom" >/dev/null
grep -q 'Too few snapshots for a trend: leak suspects need at least 3 snapshots of the session (not counting the peak snapshot), and this one has 2.' "$W/few.dom" ||
	fail "a session of 2 snapshots (and a peak) does not say why there is no leak table"
grep -q 'id="hd-leak-table"' "$W/few.dom" && fail "a leak table for 2 snapshots"
echo "ok: too few snapshots for leaks said so"

# ---- hostile names: markup, quotes, </script>, invalid UTF-8
hdb=$W/hostile.db
cp "$db" "$hdb"
# leak_grow becomes: </script><script>document.title='pwned'</script><img src=x onerror="alert(1)">&amp;'"<!-- \xff\xfe
hostile_hex=$(printf '%s' "</script><script>document.title='pwned'</script><img src=x onerror=\"alert(1)\">&amp;'\"<!-- " | od -An -tx1 | tr -d ' \n')fffe
sqlite3 "$hdb" "UPDATE frames SET function = CAST(X'$hostile_hex' AS TEXT) WHERE function = 'leak_grow';
                UPDATE sessions SET comm = '<b>x</b></title><script>alert(2)</script>', exe = '/x/</script>&lt;';
                UPDATE modules SET path = '/opt/</script><i>m' WHERE path LIKE '%leaky/bin/leaky';" ||
	fail "sqlite3 could not store the hostile names"
hd -f html -o "$W/h.html" "$hdb" first last
n=$(grep -o '</script>' "$W/h.html" | wc -l)
[ "$n" = 3 ] || fail "the page has $n </script> (expected 3: the error hook, the data, the script): a name broke out"
grep -q "document.title='pwned'" "$W/h.html" && ! grep -q "\\\\u003c/script\\\\u003e\\\\u003cscript\\\\u003edocument.title='pwned'" "$W/h.html" &&
	fail "the hostile name is not escaped in the data"
grep -q '<title>heapdiff: &lt;b&gt;x&lt;/b&gt;&lt;/title&gt;&lt;script&gt;alert(2)&lt;/script&gt; (pid 4242)</title>' "$W/h.html" ||
	fail "the comm is not escaped in <title>: $(grep -o '<title>.*</title>' "$W/h.html")"
page_json "$W/h.html" >"$W/h.json" || fail "the data with hostile names is not JSON"
dom "$W/h.html#search=%3C%2Fscript" "$W/h.dom"
check_dom "$W/h.dom" >/dev/null
python3 - "$W/h.dom" "$W/h.json" <<'PY' || fail "a hostile name broke the page"
import json, re, sys
d = open(sys.argv[1], encoding='utf-8').read()
j = json.load(open(sys.argv[2]))
want = "</script><script>document.title='pwned'</script><img src=x onerror=\"alert(1)\">&amp;'\"<!-- ??"
assert want in [f[0] for f in j['frames']], [f[0] for f in j['frames']]
assert '<title>heapdiff: &lt;b&gt;x&lt;/b&gt;' in d, re.search(r'<title>.*?</title>', d).group(0)
assert 'pwned' not in re.search(r'<title>.*?</title>', d).group(0)
assert '<img' not in d and '<i>' not in d and '<b>' not in d, 'markup from a name became an element'
esc = "&lt;/script&gt;&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x onerror=\"alert(1)\"&gt;&amp;amp;'\"&lt;!-- ??"
from pagelib import frames
assert want + ' (inlined)' in frames(d), frames(d)
rows = re.search(r'<table class="rows" id="hd-rows">.*?</table>', d, re.S).group(0)
assert esc in rows, 'the hostile name is not in the table as text'
assert want + ' (inlined)' in frames(d, 'match'), 'the search for </script did not match it'
assert '/x/&lt;/script&gt;&amp;lt;' in d, 'the exe is not shown as text'
PY
echo "ok: hostile names come out as text; the page is intact"

# ---- sanitizers: the html writer clean under ASan and UBSan
san_clean "-f html -o $W/san.html $hdb first last" "-f html -o $W/san.html $adb" \
	"-f html -o $W/san.html $fdb" "-f html -o $W/san.html $db 2"

# ---- 4096 call paths
mdb=$W/many.db
"$FILL" --many 4096 "$mdb" >"$W/fill_m.out" 2>&1 || fail "db_fill --many failed: $(cat "$W/fill_m.out")"
start=$(date +%s%N)
hd -f html -o "$W/m.html" "$mdb"
gen=$((($(date +%s%N) - start) / 1000000))
size=$(stat -c %s "$W/m.html")
start=$(date +%s%N)
dom "$W/m.html" "$W/m.dom"
wall=$((($(date +%s%N) - start) / 1000000))
ms=$(check_dom "$W/m.dom")
nfr=$(grep -o 'class="fr' "$W/m.dom" | wc -l)
log "4096 call paths: page $size bytes (written in $gen ms), rendered in $ms ms (chromium run $wall ms), $nfr frame elements"
python3 -c 'import sys; ms = float(sys.argv[1]); sys.exit(0 if ms < 10000 else 1)' "$ms" ||
	fail "4096 call paths took $ms ms to render (bound 10000)"
[ "$nfr" -ge 100 ] || fail "only $nfr frame elements for 4096 call paths"
grep -q 'many_leak_7' "$W/m.dom" || fail "the 4096-path page does not name many_leak_7"
echo "ok: 4096 call paths ($size bytes, $ms ms)"
echo ok
