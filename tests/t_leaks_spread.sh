#!/bin/bash
# t_leaks_spread: a leak spread over many call paths is named (issue 34).
# tests/targets/spread_leak keeps what keep_block() allocates, reached
# through 256 call paths (each holds little: noise, or not sampled at
# all), beside three churners whose bounded caches hold more than any one
# of those paths.  Two real sessions at the default sampling interval, side
# by side: 10 s at 2.4 MB/s (about the issue's 19 MB in 12 s) and 3 min at
# 0.2 MB/s.  Of each: the call paths ranked alone show the churners first (the
# problem); the default text report's top function, and the first suspect
# of --leaks, is keep_block, and --leaks lists none of its callers as a
# cumulative suspect for its growth (they are its "via").  Of the short one
# also: --by function and --leaks in json (python3), the HTML page's top
# functions and leak table (its data; its DOM when Chromium is here), and
# what `go tool pprof -top` reads in -f pprof (when go is installed).
# run-all-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/report_lib.sh"
require_all spread_leak

# Both sessions attach before their workload starts (the baseline holds
# nothing of it); each detaches by itself (--duration).
start_profiled short spread_leak -q -d 10 -s 1 -o "$W/short.db"
s_pid=$pid s_fd=$TFD s_out=$TOUT s_ha=$HAPID s_err=$HA_ERR
start_profiled long spread_leak -q -d 180 -s 5 -o "$W/long.db"
l_pid=$pid l_fd=$TFD l_out=$TOUT l_ha=$HAPID l_err=$HA_ERR
send "$s_fd" "start 2400"
send "$l_fd" "start 200"
wait_line "$s_out" '^done start$'
wait_line "$l_out" '^done start$'

# end_session HAPID ERR PID FD OUT SECS: heapattach detached by itself,
# cleanly; the target is stopped and quits.
end_session() {
	local es_ha=$1
	wait_for "$6" '! is_alive "$es_ha"' || fail "heapattach $1 did not detach within $6 s"
	wait "$1" || fail "heapattach $1 exited $?: $(cat "$2")"
	grep -Eq -- "$(re_detached "$3")" "$2" || fail "no detached line from heapattach $1"
	send "$4" stop
	wait_line "$5" '^done stop kept=[0-9]+' 20
	send "$4" quit
	wait_exit "$3" 10
	[ "$RC" = 0 ] || fail "spread_leak $3 exited $RC"
	log "$(grep '^done stop' "$5")"
}

# first_function FILE: the function of the first line of the text report's
# top functions (with --bytes: FLAT OBJECTS CUM PATHS FUNCTION ...).
first_function() {
	awk '/^top functions / { getline; getline; print $5; exit }' "$1"
}
# path_leaves FILE: the leaf function of each call path of a text report.
path_leaves() {
	heapdiff_rows "$1" | awk '{ print $3 }'
}
# first_suspect FILE: "WHAT NAME" of the first suspect of --leaks --bytes
# text: "function keep_block", "cumulative main", "stack leaf".
first_suspect() {
	awk '$5 == "function" || $5 == "cumulative" || $5 == "stack" { w = $5; getline; print w, $1; exit }' "$1"
}
# cum_suspects FILE: "FUNCTION PATHS" of each cumulative suspect.
cum_suspects() {
	awk '$5 == "cumulative" { n = $0; sub(/ call paths?\)$/, "", n); sub(/.* /, "", n); getline; print $1, n }' "$1"
}

# check_named LABEL DB: what every report of DB must say.
check_named() {
	local label=$1 db=$2
	hd --bytes "$db" >"$W/$label.txt"
	sed 's/^/    /' "$W/$label.txt" | head -n 30
	hd --bytes --top 3 "$db" >"$W/$label.top3"
	local leaves
	leaves=$(path_leaves "$W/$label.top3" | sort | tr '\n' ' ')
	[ "$leaves" = "churn_a churn_b churn_c " ] ||
		fail "$label: the 3 first call paths end in '$leaves', expected the churners (else the target has not the shape)"
	[ "$(first_function "$W/$label.txt")" = keep_block ] ||
		fail "$label: the top function is '$(first_function "$W/$label.txt")', expected keep_block"
	# keep_block's row adds up many call paths (PATHS, the 4th column).
	local paths
	paths=$(awk '/^top functions / { getline; getline; print $4; exit }' "$W/$label.txt")
	[ "$paths" -ge 10 ] || fail "$label: keep_block adds up $paths call paths, expected many"
	echo "ok: $label: the churners lead the call paths; keep_block ($paths call paths) leads the functions"

	hd --leaks --bytes "$db" >"$W/$label.leaks"
	sed 's/^/    /' "$W/$label.leaks"
	[ "$(first_suspect "$W/$label.leaks")" = "function keep_block" ] ||
		fail "$label: the first suspect is '$(first_suspect "$W/$label.leaks")', expected function keep_block"
	# Functions whose call paths all end in keep_block are only via; its
	# outer callers (on the churners' paths too) may be listed only for
	# what grows on the churners' 3 call paths, never for keep_block's.
	local cum
	cum=$(cum_suspects "$W/$label.leaks" | awk '$1 ~ /^(keep_block|spread|lv[0-7]_[01])$/ ||
		($1 ~ /^(worker|start_thread|__clone3)$/ && $2 > 3)')
	[ -z "$cum" ] || fail "$label: callers of keep_block listed as cumulative suspects: $(echo $cum)"
	grep -Eq '^ {53}via .*(worker|spread)' "$W/$label.leaks" ||
		fail "$label: keep_block's suspect line names no via callers"
	echo "ok: $label: --leaks names keep_block first, its callers only as via"
}

end_session "$s_ha" "$s_err" "$s_pid" "$s_fd" "$s_out" 40
check_named short "$W/short.db"
sdb=$W/short.db

# json: --by function rows, --by cumulative, --leaks.
hd -f json --by function --top 0 "$sdb" >"$W/f.json"
hd -f json --by cumulative "$sdb" >"$W/c.json"
hd -f json --leaks "$sdb" >"$W/l.json"
python3 - "$W/f.json" "$W/c.json" "$W/l.json" <<'PY' || fail "the json reports do not name keep_block as they should"
import json, sys
f, c, l = (json.load(open(p)) for p in sys.argv[1:4])
assert f['by'] == 'function' and f['total']['functions'] == len(f['rows']), (f['by'], f['total'])
top = f['rows'][0]
assert top['function'] == 'keep_block' and top['flat_paths'] >= 10, top
flat = [r['flat_bytes'] for r in f['rows']]
assert flat == sorted(flat, reverse=True), 'not ranked by flat'
by = {r['function']: r for r in f['rows']}
# Every call path through spread ends in keep_block: its cumulative is
# keep_block's flat; worker's holds the churners' too.
assert by['spread']['flat_bytes'] == 0 and abs(by['spread']['cum_bytes'] - top['flat_bytes']) <= 1, by['spread']
assert by['worker']['cum_bytes'] > top['flat_bytes'], by['worker']
total = f['total']['live_bytes']
assert abs(sum(r['flat_bytes'] for r in f['rows']) - total) <= max(len(f['rows']), total / 1000), 'flat does not add up to the total'
assert c['by'] == 'cumulative'
cum = [r['cum_bytes'] for r in c['rows']]
assert cum == sorted(cum, reverse=True), 'not ranked by cumulative'
s = l['suspects'][0]
assert s['what'] == 'function' and s['function'] == 'keep_block' and s['paths'] >= 10, s
# spread's cumulative trend is keep_block's flat one (all its call paths
# end there): always a via; worker's holds the churners' wobble too.
assert 'spread' in s['via'], s['via']
assert not [x for x in l['suspects'] if x['what'] == 'cumulative' and x['function'] in s['via']]
PY
echo "ok: json: --by function, --by cumulative and --leaks agree"

# html: the page's top functions and leak table.
hd -f html -o "$W/r.html" "$sdb"
page_json "$W/r.html" >"$W/r.json" || fail "the page's data is not JSON"
python3 - "$W/r.json" <<'PY' || fail "the html page does not name keep_block"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['top_functions'][0]['function'] == 'keep_block', d['top_functions'][:3]
sus = d['leaks']['suspects'][0]
assert sus['what'] == 'function' and d['frames'][sus['frames'][0]][0] == 'keep_block', sus
PY
CHROMIUM=$(command -v chromium || true)
if [ -n "$CHROMIUM" ]; then
	dom "$W/r.html" "$W/r.dom"
	check_dom "$W/r.dom" >/dev/null
	python3 - "$W/r.dom" <<'PY' || fail "the rendered page does not show keep_block first"
import re, sys
d = open(sys.argv[1], encoding='utf-8').read()
t = re.search(r'<table class="rows" id="hd-funcs">.*?</table>', d, re.S).group(0)
first = re.search(r'<tbody><tr><td class="n">1</td>.*?<span class="mono">([^<]*)</span>', t, re.S).group(1)
assert first == 'keep_block', first
leaks = re.search(r'<section id="hd-leaks">.*?</section>', d, re.S).group(0)
assert 'keep_block' in leaks and 'via ' in leaks, 'the leak table'
PY
	log "html page rendered by chromium: keep_block first in the top functions and the leak table"
fi
echo "ok: html names keep_block"

# pprof: go tool pprof adds the call paths up by function itself.
hd -f pprof -o "$W/p.pb.gz" "$sdb"
if command -v go >/dev/null; then
	HOME=$W GOCACHE=$W/gocache GOFLAGS= go tool pprof -top -sample_index=inuse_space "$W/p.pb.gz" \
		>"$W/pprof.top" 2>"$W/pprof.err" || fail "go tool pprof -top failed: $(cat "$W/pprof.err")"
	sed 's/^/    /' "$W/pprof.top" | head -n 12
	# The first row after the header: flat flat% sum% cum cum% NAME.
	top=$(awk 'h { print $6; exit } $1 == "flat" && $2 == "flat%" { h = 1 }' "$W/pprof.top")
	[ "$top" = keep_block ] || fail "go tool pprof -top names '$top' first, expected keep_block"
	echo "ok: go tool pprof -top names keep_block first"
else
	log "go is not installed: the pprof profile is not read back"
fi

end_session "$l_ha" "$l_err" "$l_pid" "$l_fd" "$l_out" 200
check_named long "$W/long.db"
echo ok
