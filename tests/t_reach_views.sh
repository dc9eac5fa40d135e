#!/bin/bash
# t_reach_views: what a reachability scan found, in heapdiff's views other
# than --reach (issue 40), on a synthetic profile (tests/db_fill) with one
# scan put into it with sqlite3 at its last snapshot: leak_grow's call path
# mostly unreachable (900 blocks, 3.6 MB) with a part held through a heap
# array by a global, mk_small's held by a global and a thread's stack.
#   - heapdiff --leaks -f json: "reach_scan" and, on each call-path
#     suspect the scan saw, unreachable_bytes/_objects, reachable_bytes/
#     _objects and held_by [{root, name, bytes, objects, hops}];
#   - the HTML report rendered by headless Chromium: the leak table's
#     column of what the scan found of each suspect (a leak, or held by
#     whom), and the "Leaked or held" section (per call path live,
#     unreachable, reachable, held by; the scan's figures; a row opens to
#     its stack); a holder's hostile name comes out as text;
#   - a profile without a scan: "reach_scan": null and no reach fields in
#     --leaks -f json, "reach": null in the page, whose section says how
#     to make one.
# The scan itself on a live target: t_reach_truth, t_reach_live.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report_lib.sh"
command -v python3 >/dev/null || skip "python3 is not installed"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"

db=$W/scan.db
"$FILL" "$db" >"$W/fill.out" 2>&1 || fail "db_fill failed: $(cat "$W/fill.out")"
cp "$db" "$W/plain.db"
# Stacks of db_fill: 1 leak_grow (heap), 2 pool_init (mmap), 3 cache_fill,
# 4 mk_small; snapshot 3 is the last.
sqlite3 "$db" "INSERT INTO reach_scans VALUES (3, 1.25, 40.5, 1048576, 65536, 900, 320, '');
INSERT INTO reach_rows VALUES (3, 1, 0, 3600000, 900, 400000, 100, 0, 0),
                              (3, 4, 0, 0, 0, 20000, 5, 0, 0),
                              (3, 2, 1, 0, 0, 500000, 1, 0, 0);
INSERT INTO reach_holders VALUES (3, 1, 0, 'global', 'g_requests [leaky]', 400000, 100, 1),
                                 (3, 4, 0, 'global', 'g_cache [libsmall.so.1]', 15000, 4, 0),
                                 (3, 4, 0, 'stack', 'tid 4243', 5000, 1, 0),
                                 (3, 2, 1, 'global', '<img src=x onerror=alert(1)></script>&amp;', 500000, 1, 0);" ||
	fail "sqlite3 could not store the scan"

# ---- --leaks -f json
hd --leaks -f json "$db" >"$W/leaks.json"
python3 - "$W/leaks.json" <<'PY' || fail "--leaks -f json: $(head -c 800 "$W/leaks.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['reach_scan'] == 3, d['reach_scan']
s = {x['frames'][0]['function']: x for x in d['suspects'] if x['what'] == 'stack'}
g = s['leak_grow']
assert (g['unreachable_bytes'], g['unreachable_objects'], g['reachable_bytes'], g['reachable_objects']) == \
    (3600000, 900, 400000, 100), g
assert g['held_by'] == [{'root': 'global', 'name': 'g_requests [leaky]', 'bytes': 400000, 'objects': 100, 'hops': 1}], g['held_by']
m = s['mk_small']
assert m['unreachable_bytes'] == 0 and m['reachable_bytes'] == 20000, m
assert [(h['root'], h['name'], h['bytes']) for h in m['held_by']] == \
    [('global', 'g_cache [libsmall.so.1]', 15000), ('stack', 'tid 4243', 5000)], m['held_by']
PY
hd --leaks -f json "$W/plain.db" >"$W/plain.json"
python3 - "$W/plain.json" <<'PY' || fail "--leaks -f json without a scan: $(head -c 800 "$W/plain.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['reach_scan'] is None, d['reach_scan']
assert d['suspects'] and all('unreachable_bytes' not in x and 'held_by' not in x for x in d['suspects'])
PY
echo "ok: --leaks -f json has each suspect's unreachable and reachable bytes and objects and its holders"

# ---- the HTML report
require_chromium
hd -f html -o "$W/p.html" "$db"
page_json "$W/p.html" >"$W/p.json" || fail "the embedded data is not JSON"
python3 - "$W/p.json" <<'PY' || fail "the page's data has no reach"
import json, sys
d = json.load(open(sys.argv[1]))
R = d['reach']
assert R['snapshot'] == 3 and R['count'] == 3 and R['unreachable'] == 3600000 and R['reachable'] == 920000, R
assert abs(R['pause_ms'] - 1.25) < 1e-9 and R['blocks'] == 320, R
rows = {d['frames'][r[2][0]][0] if r[2] else '': r for r in R['rows']}
assert rows['leak_grow'][1][:5] == [3600000, 900, 400000, 100, 0], rows['leak_grow']
assert rows['leak_grow'][1][5] == [['global', 'g_requests [leaky]', 400000, 100, 1]], rows['leak_grow']
L = d['leaks']
assert L['scan'] == 3
s = [x for x in L['suspects'] if d['frames'][x['frames'][0]][0] == 'leak_grow'][0]
assert s['reach'][0] == 3600000 and s['reach'][2] == 400000, s['reach']
PY
dom "$W/p.html" "$W/p.dom"
ms=$(check_dom "$W/p.dom")
python3 - "$W/p.dom" <<'PY' || fail "the rendered page does not show the scan"
import html, re, sys
d = open(sys.argv[1], encoding='utf-8').read()
def text(x):
    return html.unescape(re.sub(r'<[^>]+>', ' ', x))
leaks = re.search(r'<section id="hd-leaks">.*?</section>', d, re.S).group(0)
assert 'at the scan of snapshot 3' in leaks, 'no reach column in the leak table'
lt = ' '.join(text(leaks).split())
assert '3.43 MiB unreachable, 391 KiB reachable, held by global g_requests [leaky] (391 KiB, 1 hop)' in lt, lt
assert '19.5 KiB reachable, held by global g_cache [libsmall.so.1] (14.6 KiB); 1 more (growth, not a leak)' in lt, lt
sec = re.search(r'<section id="hd-reach">.*?</section>', d, re.S)
assert sec, 'no Leaked or held section'
assert 'Leaked or held: the reachability scan of snapshot 3' in d
t = ' '.join(text(sec.group(0)).split())
assert 'the target paused 1.25 ms' in t and '3.43 MiB of the sampled live heap unreachable (80%' in t, t
table = re.search(r'<table class="rows" id="hd-reach-table">.*?</table>', sec.group(0), re.S).group(0)
rows = re.findall(r'<tr class="row">(.*?)</tr>', table, re.S)
assert len(rows) == 3, len(rows)
cells = [' '.join(text(c).split()) for c in re.findall(r'<td[^>]*>(.*?)</td>', rows[0], re.S)]
assert cells[:4] == ['1', '3.81 MiB', '3.43 MiB', '391 KiB'] and cells[4] == 'global g_requests [leaky] (391 KiB, 1 hop)' \
    and cells[5].startswith('leak_grow'), cells
mk = [r for r in rows if 'mk_small' in r][0]
assert 'global g_cache [libsmall.so.1] (14.6 KiB); stack tid 4243 (4.88 KiB)' in ' '.join(text(mk).split()), text(mk)
# the hostile holder's name: text, never markup
assert '<img' not in d and '&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;&amp;amp;' in sec.group(0), 'the hostile name'
PY
log "rendered in $ms ms"

# a row of the section opens to its stack
python3 - "$W/p.html" "$W/pi.html" <<'PY' || fail "cannot write the interaction page"
import sys
s = open(sys.argv[1], encoding='utf-8').read()
probe = r"""<script>
(function () {
  var out = {};
  try {
    var row = document.querySelector('#hd-reach-table tr.row');
    row.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    out.stack = row.nextSibling && row.nextSibling.className === 'stack' ? row.nextSibling.textContent : null;
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
python3 - "$W/pi.dom" <<'PY' || fail "a row of the reach table does not open to its stack"
import html, json, re, sys
d = open(sys.argv[1], encoding='utf-8').read()
t = json.loads(html.unescape(re.search(r'<html[^>]*data-test="([^"]*)"', d).group(1)))
assert 'error' not in t, t['error']
assert t['stack'] and 'handle_request' in t['stack'] and 'leaky.c:80' in t['stack'], t['stack']
PY
echo "ok: the HTML report shows the scan: the leak table's column, the Leaked or held section"

# ---- no scan: said, nothing made up
hd -f html -o "$W/plain.html" "$W/plain.db"
page_json "$W/plain.html" >"$W/plain_p.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["reach"] is None and d["leaks"]["scan"] is None and all(s["reach"] is None for s in d["leaks"]["suspects"])' \
	"$W/plain_p.json" || fail "a page without a scan has reach data"
dom "$W/plain.html" "$W/plain.dom"
check_dom "$W/plain.dom" >/dev/null
grep -q 'No reachability scan in this session up to snapshot 3: heapattach --reach (or SIGUSR2 to heapattach) makes one.' "$W/plain.dom" ||
	fail "a page without a scan does not say how to make one"
grep -q '<th>at the scan of snapshot' "$W/plain.dom" && fail "a reach column without a scan"
san_clean "-f html -o $W/san.html $db" "--leaks -f json $db"
echo "ok: without a scan the page says how to make one"
echo ok
