#!/bin/bash
# t_report_rss: heapdiff on a session recorded with heapattach --rss
# (tests/db_fill --rss: known heap, resident and swapped values), without a
# target: --kind rss and swap in every format (text and json with exact
# numbers, folded lines exactly, svg through python's XML parser, pprof's
# sample types and values decoded from the protobuf, and through go tool
# pprof when it is installed), --leaks and --peak of resident memory; the
# default output of every format the same with and without the rss and
# swap rows (they are never added to heap and mmap); --heap-vs-rss's
# numbers (each call path once per function), its filters and its refusal
# of sessions without resident memory (no --rss, no page attributed, a
# version-4 file); hostile names escaped; the html page's data, then the
# page rendered by headless Chromium (the chart's resident and RssAnon
# lines, the table by function; skipped at that point when Chromium is
# missing).  No root, no target.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report_lib.sh"
command -v python3 >/dev/null || skip "python3 is not installed"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"

same() {
	[ "$2" = "$3" ] && return 0
	printf 'got:\n%s\nwanted:\n%s\n' "$2" "$3"
	fail "$1"
}
# rows: "STACK BYTES PAGES" of each row of a text report (--bytes).
rows() { awk '$3 == "stack" && $4 ~ /^[0-9]+$/ { print $4, $1, $2 }'; }
# fns: "FUNCTION HEAP+MMAP RESIDENT SWAPPED" of each --heap-vs-rss row.
fns() { awk '/^ +HEAP\+MMAP/ { on = 1; next } on && NF >= 4 && $1 != "..." { print $4, $1, $2, $3 } /^$/ { on = 0 }'; }
MiB=1048576

db=$W/rss.db
"$FILL" --rss "$db" >"$W/fill.out" 2>&1 || fail "db_fill --rss failed: $(cat "$W/fill.out")"
same "db_fill --rss stack ids" "$(grep '^stack ' "$W/fill.out")" \
	"stack fill_touched heap 1 rss 2
stack reserve_untouched heap 3 rss 4
stack scratch_burst heap 5 rss 6
stack cold_cache heap 7 rss 8
stack parse_input heap 9 rss 10
stack session_cache heap 11 rss 12"

# ---- the default: heap and mmap only, whatever the rss and swap rows say
same "default first..last" "$(hd --bytes "$db" | rows)" "1 +67108864 +1
3 +67108864 +1
11 +33554432 +1
7 +16777216 +16"
same "default total" "$(hd --bytes "$db" | grep '^total')" \
	"total: live heap +$((176 * MiB)) (estimated; 4 callstacks changed, 4 shown); RSS +$((102 * MiB)); 180.0 s"
hd --bytes "$db" | grep -q 'page faults' && fail "the default report speaks of page faults"
same "default --peak" "$(hd --bytes --peak "$db" | head -n 1)" \
	"peak: snapshot 2 has the highest estimated live memory of session 1 ($((216 * MiB)), over 4 snapshots)"
hd --leaks "$db" | grep -q '^no leak suspects: no callstack.s or function.s live bytes grew steadily$' ||
	fail "default --leaks found suspects among heap and mmap: $(hd --leaks "$db")"
echo "ok: the default report is of heap and mmap only"

# The same default output in every format once the rss and swap rows are
# gone: they never entered it.
nodb=$W/nor.db   # as long a name as rss.db: the pprof comments compare
cp "$db" "$nodb"
sqlite3 "$nodb" "DELETE FROM buckets WHERE kind IN (2, 3); DELETE FROM session_stacks WHERE kind IN (2, 3);" ||
	fail "sqlite3 could not delete the rss rows"
# Each case: options|snapshot operands.
for c in "|" "--bytes|3" "--bytes|2 3" "-f json|" "-f json|3" "-f folded|" "-f folded|3" "-f svg|" "-f svg|3" \
	"--leaks|" "--leaks -f json|" "--peak|" "--peak -f json|" "--kind heap|" "--kind mmap|3" "--function main|" "|3 peak"; do
	opts=${c%|*} ops=${c#*|}
	# shellcheck disable=SC2086
	hd $opts "$db" $ops >"$W/with"
	# shellcheck disable=SC2086
	hd $opts "$nodb" $ops >"$W/without"
	sed -i "s#$nodb#$db#g" "$W/without"
	cmp -s "$W/with" "$W/without" || { diff "$W/with" "$W/without" | head -n 20; fail "heapdiff $opts DB $ops: the rss rows change the default output"; }
done
hd -f pprof -o "$W/with.pb.gz" "$db"
hd -f pprof -o "$W/without.pb.gz" "$nodb"
python3 - "$W/with.pb.gz" "$W/without.pb.gz" "$db" "$nodb" <<'PY' || fail "pprof: the rss rows change the default profile"
import gzip, sys
a = gzip.decompress(open(sys.argv[1], 'rb').read())
b = gzip.decompress(open(sys.argv[2], 'rb').read())
# Only the comment names the file (names of the same length).
assert a.replace(sys.argv[3].encode(), b'DB') == b.replace(sys.argv[4].encode(), b'DB'), 'profiles differ'
PY
echo "ok: text, json, folded, svg, pprof, --leaks, --peak the same without the rss rows"

# ---- --kind rss: resident memory by first-touch call path
hd --bytes --kind rss "$db" >"$W/r.txt"
sed 's/^/    /' "$W/r.txt"
same "--kind rss first..last" "$(rows <"$W/r.txt")" "2 +67108864 +16384
12 +25165824 +6144
10 +8388608 +2048
8 +4194304 +1024
4 +4096 +1"
same "--kind rss total" "$(grep '^total' "$W/r.txt")" \
	"total: resident memory +$((100 * MiB + 4096)) (estimated; 5 callstacks changed, 5 shown); RssAnon +$((102 * MiB)); RSS +$((102 * MiB)); 180.0 s"
grep -qx 'page faults: 260 sampled (1 in 256), 3 lost' "$W/r.txt" || fail "--kind rss: no page-fault line"
grep -q '^note: page-fault samples were lost' "$W/r.txt" || fail "--kind rss: the lost samples are not noted"
grep -Eq '^ +BYTES +PAGES  STACK' "$W/r.txt" || fail "--kind rss: the counts are not called pages"
# The allocator frames of a first-touch path fold as those of an allocation.
grep -q '(allocator frames folded: malloc _int_malloc;' "$W/r.txt" || fail "--kind rss: _int_malloc not folded"
hd --bytes --kind rss "$db" 3 >"$W/r3.txt"
head -n 1 "$W/r3.txt" | grep -q '^resident memory at snapshot 3: ' || fail "--kind rss at 3: $(head -n 1 "$W/r3.txt")"
grep -Eq '^ +RESIDENT +PAGES  STACK' "$W/r3.txt" || fail "--kind rss at 3: no RESIDENT column"
same "--kind rss at 3" "$(rows <"$W/r3.txt")" "2 67108864 16384
6 33554432 8192
12 16777216 4096
8 8388608 2048
10 8388608 2048
4 4096 1"
same "--kind rss at 3 total" "$(grep '^total' "$W/r3.txt")" \
	"total: resident memory $((128 * MiB + 4096)) (estimated; 6 callstacks, 6 shown); RssAnon $((132 * MiB)); RSS $((136 * MiB))"
hd --bytes --kind swap "$db" >"$W/s.txt"
same "--kind swap" "$(rows <"$W/s.txt")" "8 +12582912 +3072"
same "--kind swap total" "$(grep '^total' "$W/s.txt")" \
	"total: swapped memory +$((12 * MiB)) (estimated; 1 callstacks changed, 1 shown); VmSwap +$((12 * MiB)); RSS +$((102 * MiB)); 180.0 s"
hd --kind swap "$db" 2 | grep -qx 'no swapped memory' || fail "--kind swap at 2: not 'no swapped memory'"
same "--peak --kind rss" "$(hd --bytes --peak --kind rss "$db" | head -n 1)" \
	"peak: snapshot 3 has the highest estimated resident memory of session 1 ($((128 * MiB + 4096)), over 4 snapshots)"
same "--peak --kind swap" "$(hd --bytes --peak --kind swap "$db" | head -n 1)" \
	"peak: snapshot 4 has the highest estimated swapped memory of session 1 ($((12 * MiB)), over 4 snapshots)"
hd --leaks --bytes --kind rss "$db" >"$W/l.txt"
head -n 1 "$W/l.txt" | grep -q '^leak suspects (resident memory) of session 1 ' || fail "--leaks --kind rss: $(head -n 1 "$W/l.txt")"
grep -Eq '^ +\+8388608/min +\+25165824 +25165824 +1\.00  stack 12 \(rss\)$' "$W/l.txt" ||
	fail "--leaks --kind rss: session_cache_put is not the suspect: $(cat "$W/l.txt")"
grep -q '^1 suspect;' "$W/l.txt" || fail "--leaks --kind rss: not one suspect"
echo "ok: --kind rss and swap as text, --peak and --leaks of resident memory"

hd -f json --kind rss "$db" >"$W/r.json"
python3 - "$W/r.json" <<'PY' || fail "--kind rss -f json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['kind'] == 'rss' and d['objects'] == 'pages' and d['mode'] == 'diff', (d['kind'], d['objects'])
t = d['total']
assert t['live_bytes'] == 100 * 2**20 + 4096 and t['live_objects'] == 25601, t
assert t['rss_anon_bytes'] == 102 * 2**20 and t['swap_bytes'] == 12 * 2**20 and t['callstacks'] == 5, t
assert d['to']['rss_period'] == 256 and d['to']['rss_samples'] == 260 and d['to']['rss_lost'] == 3, d['to']
assert d['to']['rss_anon_bytes'] == 104 * 2**20 and d['to']['swap_bytes'] == 12 * 2**20, d['to']
r = d['rows'][0]
assert r['kind'] == 'rss' and r['live_bytes'] == 64 * 2**20 and r['live_objects'] == 16384, r
assert [f['function'] for f in r['frames']] == ['__memset_avx2_unaligned_erms', 'fill_touched', 'main'], r['frames']
PY
hd -f json "$db" | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["kind"] == "heap+mmap" and d["objects"] == "objects", d["kind"]' ||
	fail "the default json does not say heap+mmap"
same "--kind rss -f folded at 3" "$(hd -f folded --kind rss "$db" 3 | sort)" \
	"[rss];main;cold_cache;cold_cache_load 8388608
[rss];main;fill_touched;__memset_avx2_unaligned_erms 67108864
[rss];main;parse_input;parse_line 8388608
[rss];main;reserve_untouched 4096
[rss];main;scratch_burst;__memset_avx2_unaligned_erms 33554432
[rss];main;session_cache;session_cache_put 16777216"
same "--kind swap -f folded" "$(hd -f folded --kind swap "$db")" "[swap];main;cold_cache;cold_cache_load 12582912"
hd -f svg --kind rss "$db" 3 >"$W/r.svg"
python3 - "$W/r.svg" <<'PY' || fail "--kind rss -f svg"
import sys, xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text or '' for t in root.iter(ns + 'text')]
assert any(t.startswith('heapdiff: resident memory at snapshot 3 (128 MiB, ') for t in texts), texts[:3]
titles = [g.find(ns + 'title').text for g in root.iter(ns + 'g') if g.get('class') == 'f']
assert 'fill_touched (64.0 MiB, 16384 pages, 50.00%)' in titles, titles
assert any(t.startswith('[rss] (128 MiB, 32769 pages') for t in titles), titles
PY
echo "ok: --kind rss as json, folded, svg"

# pprof: the sample types say what they are; decoded here, and by go tool
# pprof when it is there.
hd -f pprof --kind rss -o "$W/r.pb.gz" "$db"
hd -f pprof --kind swap -o "$W/s.pb.gz" "$db" 3
gzip -t "$W/r.pb.gz" || fail "--kind rss -f pprof is not gzip"
cat >"$W/pb.py" <<'PY'
import gzip
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i
def fields(b):
    i, out = 0, []
    while i < len(b):
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0: v, i = varint(b, i)
        elif w == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        else: raise ValueError('wire type %d' % w)
        out.append((f, v))
    return out
def profile(path):
    top = fields(gzip.decompress(open(path, 'rb').read()))
    strings = [v.decode() for f, v in top if f == 6]
    def vtype(m): d = dict(fields(m)); return strings[d.get(1, 0)], strings[d.get(2, 0)]
    types = [vtype(v) for f, v in top if f == 1]
    period_type = [vtype(v) for f, v in top if f == 11][0]
    period = dict((f, v) for f, v in top if f == 12).get(12, 0)
    default = strings[dict((f, v) for f, v in top if f == 14)[14]]
    samples = []
    for f, v in top:
        if f != 2: continue
        vals = []
        for sf, sv in fields(v):
            if sf == 2:
                j = 0
                while j < len(sv):
                    x, j = varint(sv, j); vals.append(x - (1 << 64) if x >= 1 << 63 else x)
        samples.append(vals)
    return types, period_type, period, default, samples
PY
PYTHONPATH=$W python3 - "$W/r.pb.gz" "$W/s.pb.gz" <<'PY' || fail "--kind rss|swap -f pprof: the profile"
import sys
from pb import profile
types, pt, period, default, samples = profile(sys.argv[1])
assert types == [('touched_pages', 'count'), ('touched_space', 'bytes'), ('resident_pages', 'count'),
                 ('resident_space', 'bytes')], types
assert pt == ('page_faults', 'count') and period == 256 and default == 'resident_space', (pt, period, default)
assert sum(s[3] for s in samples) == 100 * 2**20 + 4096 and sum(s[2] for s in samples) == 25601, samples
assert max(s[3] for s in samples) == 64 * 2**20, samples
types, pt, period, default, samples = profile(sys.argv[2])
assert [t for t, u in types] == ['swapped_out_pages', 'swapped_out_space', 'swapped_pages', 'swapped_space'], types
assert default == 'swapped_space' and samples == [[2048, 8 * 2**20, 2048, 8 * 2**20]], (default, samples)
PY
PYTHONPATH=$W python3 -c '
import sys
from pb import profile
types, pt, period, default, s = profile(sys.argv[1])
assert default == "inuse_space" and pt == ("space", "bytes") and period == 524288, (default, pt, period)
' "$W/with.pb.gz" || fail "the default pprof profile is not a heap profile"
if command -v go >/dev/null; then
	export GOCACHE=$W/gocache GOPATH=$W/gopath HOME=$W
	go tool pprof -top -symbolize=none -unit=B "$W/r.pb.gz" >"$W/top" 2>"$W/pprof.err" || fail "go tool pprof: $(cat "$W/pprof.err")"
	grep -q '^Type: resident_space$' "$W/top" || fail "go tool pprof: the type is not resident_space: $(head -n 5 "$W/top")"
	grep -Eq '^ +67108864B .* __memset_avx2_unaligned_erms$' "$W/top" || fail "go tool pprof -top: $(cat "$W/top")"
	go tool pprof -top -symbolize=none -unit=B -sample_index=touched_space "$W/r.pb.gz" 2>/dev/null |
		grep -Eq '^ +25165824B .* session_cache_put$' || fail "go tool pprof -sample_index=touched_space"
	log "go tool pprof reads the resident profile"
else
	log "go is not installed: the profile checked by the decoder above only"
fi
echo "ok: --kind rss and swap as pprof"

# ---- --heap-vs-rss: heap and mmap against resident and swapped, by function
hd --heap-vs-rss --bytes "$db" >"$W/v.txt"
sed 's/^/    /' "$W/v.txt"
same "--heap-vs-rss first..last" "$(fns <"$W/v.txt")" "main +184549376 +104861696 +12582912
fill_touched +67108864 +67108864 0
reserve_untouched +67108864 +4096 0
__memset_avx2_unaligned_erms 0 +67108864 0
session_cache +33554432 +25165824 0
session_cache_put 0 +25165824 0
cold_cache +16777216 +4194304 +12582912
cold_cache_load 0 +4194304 +12582912
parse_input 0 +8388608 0
parse_line 0 +8388608 0"
same "--heap-vs-rss total" "$(grep '^total' "$W/v.txt")" \
	"total: heap+mmap +184549376, resident +104861696, swapped +12582912 (estimated; 10 functions changed, 10 shown); RssAnon +106954752; VmSwap +12582912; RSS +106954752; 180.0 s"
grep -qx 'page faults: 260 sampled (1 in 256), 3 lost' "$W/v.txt" || fail "--heap-vs-rss: no page-fault line"
# At 3: parse_input freed its heap, its pages stay resident; scratch_burst
# touched its mapping.
same "--heap-vs-rss at 3" "$(hd --heap-vs-rss --bytes --top 0 "$db" 3 | fns | grep -E '^(parse_input|scratch_burst|reserve_untouched) ')" \
	"reserve_untouched 67108864 4096 0
scratch_burst 33554432 33554432 0
parse_input 0 8388608 0"
same "--heap-vs-rss 2..3" "$(hd --heap-vs-rss --bytes "$db" 2 3 | fns)" "main -8388608 +33554432 +8388608
__memset_avx2_unaligned_erms 0 +33554432 0
scratch_burst 0 +33554432 0
cold_cache 0 -8388608 +8388608
cold_cache_load 0 -8388608 +8388608
parse_input -8388608 0 0
session_cache 0 +8388608 0
session_cache_put 0 +8388608 0"
hd --heap-vs-rss --bytes --top 3 "$db" >"$W/v3.txt"
[ "$(fns <"$W/v3.txt" | wc -l)" = 3 ] || fail "--heap-vs-rss --top 3: not 3 rows"
grep -q '\.\.\. 7 more functions (--top 0 shows all)' "$W/v3.txt" || fail "--heap-vs-rss --top 3: no '7 more functions'"
same "--heap-vs-rss --function cold" "$(hd --heap-vs-rss --bytes --function cold "$db" | fns | cut -d' ' -f1)" "cold_cache
main
cold_cache_load"
same "--heap-vs-rss --min-bytes" "$(hd --heap-vs-rss --bytes --min-bytes 20000000 "$db" | fns | wc -l)" 6
hd --heap-vs-rss --bytes --all-frames --top 0 "$db" | fns | grep -q '^malloc ' || fail "--heap-vs-rss --all-frames: no malloc row"
hd --heap-vs-rss --bytes --top 0 "$db" | fns | grep -q "^malloc " && fail "--heap-vs-rss: malloc not folded"
# A function twice on one call path counts it once.
rec=$W/recursive.db
cp "$db" "$rec"
sqlite3 "$rec" "UPDATE frames SET function = 'fill_touched', module_id = (SELECT module_id FROM frames WHERE function = 'fill_touched' LIMIT 1)
                 WHERE function = '__memset_avx2_unaligned_erms';" || fail "sqlite3 could not rename memset"
same "--heap-vs-rss: each call path once" "$(hd --heap-vs-rss --bytes "$rec" 3 | fns | grep '^fill_touched ')" \
	"fill_touched 67108864 100663296 0"
hd -f json --heap-vs-rss "$db" >"$W/v.json"
python3 - "$W/v.json" <<'PY' || fail "--heap-vs-rss -f json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['mode'] == 'heap-vs-rss' and d['diff'] is True and d['from']['snapshot'] == 1 and d['to']['snapshot'] == 4
t = d['total']
assert (t['heap_mmap_bytes'], t['resident_bytes'], t['swapped_bytes']) == (176 * 2**20, 100 * 2**20 + 4096, 12 * 2**20), t
assert (t['rss_anon_bytes'], t['swap_bytes'], t['rss_bytes'], t['functions'], t['shown']) == (102 * 2**20, 12 * 2**20, 102 * 2**20, 10, 10), t
f = {r['function']: r for r in d['functions']}
assert (f['reserve_untouched']['heap_mmap_bytes'], f['reserve_untouched']['resident_bytes']) == (64 * 2**20, 4096)
assert f['parse_input']['paths'] == [1, 1, 0] and f['parse_line']['paths'] == [0, 1, 0], (f['parse_input'], f['parse_line'])
assert f['cold_cache']['paths'] == [1, 1, 1] and f['main']['paths'] == [6, 6, 1], (f['cold_cache'], f['main'])
assert f['fill_touched']['module'] == '/opt/rssapp/bin/rssapp' and f['fill_touched']['file'] == '/src/rssapp/rssapp.c'
PY
hd -f json --heap-vs-rss "$db" 3 | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["diff"] is False and d["from"] is None' ||
	fail "--heap-vs-rss at 3 -f json"
echo "ok: --heap-vs-rss as text and json, filters, each call path once"

# Refused, one line and exit 1, on sessions without resident memory.
refused() {
	local what=$1 file=$2 want=$3
	"$HD" --heap-vs-rss "$file" >"$W/ref.out" 2>"$W/ref.err"
	local rc=$?
	[ "$rc" = 1 ] || fail "--heap-vs-rss on $what: exit $rc, expected 1 ($(cat "$W/ref.err"))"
	[ "$(wc -l <"$W/ref.err")" = 1 ] || fail "--heap-vs-rss on $what: not one line: $(cat "$W/ref.err")"
	grep -q "^heapdiff: $file: no resident memory: $want" "$W/ref.err" || fail "--heap-vs-rss on $what: $(cat "$W/ref.err")"
	[ ! -s "$W/ref.out" ] || fail "--heap-vs-rss on $what wrote a report"
	log "refused on $what: $(cat "$W/ref.err")"
}
plain=$W/plain.db
"$FILL" "$plain" >/dev/null 2>&1 || fail "db_fill failed"
refused "a session without --rss" "$plain" "session 1 was recorded without heapattach --rss$"
refused "an --rss session without rss rows" "$nodb" "session 1 (heapattach --rss) has no page attributed to a call path$"
zero=$W/zero.db
cp "$db" "$zero"
sqlite3 "$zero" "UPDATE sessions SET rss_period = 0" || fail "sqlite3 could not reset rss_period"
refused "rss rows in a session without --rss" "$zero" "session 1 was recorded without heapattach --rss$"
v4=$W/v4.db
cp "$db" "$v4"
sqlite3 "$v4" "DELETE FROM buckets WHERE kind IN (2, 3); DELETE FROM session_stacks WHERE kind IN (2, 3);
               DELETE FROM kinds WHERE id >= 2; DROP VIEW snapshot_totals;
               ALTER TABLE sessions DROP COLUMN rss_period;
               ALTER TABLE snapshots DROP COLUMN rss_anon_bytes; ALTER TABLE snapshots DROP COLUMN swap_bytes;
               ALTER TABLE snapshots DROP COLUMN rss_samples; ALTER TABLE snapshots DROP COLUMN rss_lost;
               CREATE VIEW snapshot_totals AS SELECT s.id AS snapshot_id, s.rss_bytes FROM snapshots s;
               UPDATE meta SET value = '4' WHERE key = 'schema_version'; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null ||
	fail "sqlite3 could not make a version-4 file"
rm -f "$v4-wal" "$v4-shm"
cp "$v4" "$W/v4.before"
refused "a version-4 file" "$v4" "the file was written before heapattach --rss (schema version 4 or older)$"
hd --kind rss "$v4" | grep -qx 'no callstack changed' || fail "--kind rss on a version-4 file"
hd --kind rss "$v4" 3 | grep -qx 'no resident memory' || fail "--kind rss at 3 on a version-4 file"
hd -f html -o "$W/v4.html" "$v4"
cmp -s "$v4" "$W/v4.before" || fail "heapdiff modified the version-4 file"
for args in "--kind rss" "-f svg" "--leaks" "--peak" "--by objects" "-f html"; do
	# shellcheck disable=SC2086
	"$HD" --heap-vs-rss $args "$db" >/dev/null 2>"$W/u.err"
	rc=$?
	[ "$rc" = 2 ] || fail "--heap-vs-rss $args: exit $rc, expected 2 (usage)"
done
"$HD" --kind resident "$db" >/dev/null 2>"$W/u.err"
[ $? = 2 ] && grep -q "bad --kind 'resident' (heap, mmap, rss or swap)" "$W/u.err" || fail "--kind resident: $(cat "$W/u.err")"
echo "ok: --heap-vs-rss refused without resident memory (no --rss, no page, version 4); usage errors"

# ---- hostile names in the reports of resident memory
hdb=$W/hostile.db
cp "$db" "$hdb"
sqlite3 "$hdb" "UPDATE frames SET function = '</script><b>x</b>\"&''fill' WHERE function = 'fill_touched';" ||
	fail "sqlite3 could not store a hostile name"
evil="</script><b>x</b>\"&'fill"
hd -f json --heap-vs-rss "$hdb" | python3 -c 'import json, sys; d = json.load(sys.stdin); assert sys.argv[1] in [f["function"] for f in d["functions"]]' "$evil" ||
	fail "--heap-vs-rss -f json: the hostile name is not escaped"
hd -f json --kind rss "$hdb" | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["rows"][0]["frames"][1]["function"] == sys.argv[1]' "$evil" ||
	fail "--kind rss -f json: the hostile name is not escaped"
hd -f svg --kind rss "$hdb" | python3 -c 'import sys, xml.etree.ElementTree as ET; r = ET.parse(sys.stdin).getroot(); assert any(sys.argv[1] in (t.text or "") for t in r.iter("{http://www.w3.org/2000/svg}title"))' "$evil" ||
	fail "--kind rss -f svg: the hostile name is not escaped"
hd -f html -o "$W/h.html" "$hdb"
[ "$(grep -o '</script>' "$W/h.html" | wc -l)" = 3 ] || fail "the html page has a name that ends its script"
echo "ok: hostile names escaped"

# ---- html: the data
hd -f html -o "$W/p.html" "$db"
hd -f html -o "$W/k.html" --kind rss "$db"
hd -f html -o "$W/n.html" "$nodb"
page_json "$W/p.html" >"$W/p.json" || fail "the page's data is not JSON"
page_json "$W/k.html" >"$W/k.json" || fail "the --kind rss page's data is not JSON"
page_json "$W/n.html" >"$W/n.json" || fail "the page's data without rss rows is not JSON"
python3 - "$W/p.json" "$W/k.json" "$W/n.json" <<'PY' || fail "the html page's data"
import json, sys
M = 2**20
p, k, n = (json.load(open(a)) for a in sys.argv[1:4])
assert p['kind'] == 'heap+mmap' and p['session']['rss'] == 1 and p['session']['rss_period'] == 256, p['session']
s = {x[0]: x for x in p['snaps']}
# [id, time, reason, rss, heap, mmap, samples, drops, interval, resident, swapped, rss_anon, vmswap]
assert [s[i][4] + s[i][5] for i in (1, 2, 3, 4)] == [0, 216 * M, 208 * M, 176 * M], s
assert [s[i][9] for i in (1, 2, 3, 4)] == [0, 96 * M + 4096, 128 * M + 4096, 100 * M + 4096], s
assert [s[i][10] for i in (1, 2, 3, 4)] == [0, 0, 8 * M, 12 * M], s
assert [s[i][11] for i in (1, 2, 3, 4)] == [2 * M, 100 * M, 132 * M, 104 * M], s
assert [s[i][12] for i in (1, 2, 3, 4)] == [0, 0, 8 * M, 12 * M], s
assert p['b']['live'] == 176 * M and p['b']['resident'] == 100 * M + 4096 and p['b']['rss_anon'] == 104 * M, p['b']
assert p['peak']['id'] == 2 and p['peak']['live'] == 216 * M, p['peak']
assert p['views'][0]['total'] == 176 * M, p['views'][0]['total']
f = {r['function']: r for r in p['functions']}
assert len(p['functions']) == 10 and p['functions'][0]['function'] == 'main', p['functions'][0]
assert f['reserve_untouched']['resident_bytes'] == 4096 and f['parse_line']['paths'] == [0, 1, 0], f
# --kind rss: the views, the peak and the leaks are of resident memory.
assert k['kind'] == 'rss' and k['what'] == 'resident memory' and k['objects'] == 'pages', (k['kind'], k['what'])
assert k['peak']['id'] == 3 and k['peak']['live'] == 128 * M + 4096, k['peak']
assert k['views'][0]['total'] == 100 * M + 4096 and k['views'][0]['title'].startswith('Resident memory growth'), k['views'][0]['title']
assert all(r[0] == 2 for v in k['views'] for r in v['rows']), 'a row of another kind with --kind rss'
assert len(k['leaks']['suspects']) == 1 and k['leaks']['suspects'][0]['stack'] == 12, k['leaks']
# Without rss rows: the same views, leaks and peak; no resident memory.
assert n['session']['rss'] == 0 and n['functions'] == [], n['session']
for key in ('views', 'leaks', 'peak'):
    assert p[key] == n[key], key
assert [x[:9] for x in p['snaps']] == [x[:9] for x in n['snaps']]
PY
echo "ok: the html page's data"

# ---- sanitizers: the rss paths clean under ASan and UBSan
san_clean "--heap-vs-rss $db" "--heap-vs-rss -f json $hdb 2 3" "--heap-vs-rss --all-frames $rec 3" \
	"--kind rss -f html -o $W/san.html $hdb" "-f html -o $W/san.html $db 2" "--kind swap -f pprof -o $W/san.pb $db" \
	"--leaks --kind rss $db" "--kind rss -f svg $v4 3" "-f html -o $W/san.html $v4"

# ---- html: rendered (the last part: skipped here without Chromium)
require_chromium
dom "$W/p.html" "$W/p.dom"
dom "$W/k.html" "$W/k.dom"
dom "$W/n.html" "$W/n.dom"
dom "$W/h.html" "$W/h.dom"
for d in p k n h; do check_dom "$W/$d.dom" >/dev/null; done
python3 - "$W/p.dom" "$W/k.dom" "$W/n.dom" "$W/h.dom" <<'PY' || fail "the rendered pages"
import re, sys
p, k, n, h = (open(a, encoding='utf-8').read() for a in sys.argv[1:5])
chart = re.search(r'<svg[^>]*id="hd-chart-svg".*?</svg>', p, re.S).group(0)
for series in ('heap', 'mmap', 'rss', 'resident', 'rss_anon', 'swapped'):
    assert 'data-series="%s"' % series in chart, 'no %s series in the chart' % series
nchart = re.search(r'<svg[^>]*id="hd-chart-svg".*?</svg>', n, re.S).group(0)
assert 'data-series="resident"' not in nchart and 'data-series="rss"' in nchart, 'the chart without resident memory changed'
assert 'id="hd-vs-table"' not in n and 'id="hd-vs-table"' in p
vs = re.search(r'<table class="rows" id="hd-vs-table">.*?</table>', p, re.S).group(0)
rows = re.findall(r'<tr>(.*?)</tr>', vs)
cells = [re.findall(r'<td[^>]*>(.*?)</td>', r) for r in rows[1:]]
def name(c): return re.sub(r'<[^>]*>', '', c[4]).split()[0]
got = {name(c): (c[1], c[2], c[3], c[5]) for c in cells}
assert got['fill_touched'] == ('+64.0 MiB', '+64.0 MiB', '0 B', 'touched and kept'), got['fill_touched']
assert got['reserve_untouched'] == ('+64.0 MiB', '+4.00 KiB', '0 B', 'allocated, mostly never touched'), got['reserve_untouched']
assert got['parse_input'][3] == 'resident, no longer on the heap (freed into the allocator)', got['parse_input']
assert got['__memset_avx2_unaligned_erms'][3].startswith('touches memory allocated on other call paths'), got
assert got['cold_cache'][3] == 'touched and kept; partly swapped out', got['cold_cache']
assert len(cells) == 10, len(cells)
assert 'Resident at the peak' in k and 'Top growing call paths' in k
krows = re.search(r'<table class="rows" id="hd-rows">.*?</table>', k, re.S).group(0)
assert '<th class="n">pages</th>' in krows and '__memset_avx2_unaligned_erms' in krows, krows[:300]
assert 'whose resident memory grew steadily' in k
evil = '&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;"&amp;\'fill'
hv = re.search(r'<table class="rows" id="hd-vs-table">.*?</table>', h, re.S).group(0)
assert evil in hv and '<b>x</b>' not in h, 'the hostile name is not text in the table'
PY
echo "ok: the pages render: resident and RssAnon in the chart, the table by function"
echo ok
