#!/bin/bash
# t_reach_cxx_names: a reachability scan's holders with long C++ names
# (issue 40, holders): tests/targets/reach_cxx holds blocks only in a static
# member of a class template whose demangled name is ~500 bytes
# (registry_of_cached_entries<std::map<std::string, std::vector<long>>,
# char, 4096>::entries, in two namespaces) and only in a thread_local of the
# same namespaces.  The holders are named by their demangled symbols, whole
# (not cut at 127 bytes as before), with the file:line of their definitions
# and the module after them, and the thread for TLS: in SQL, in heapdiff
# --reach's text and JSON, and escaped in the HTML report's data ('<' never
# raw).  And the main thread's TLS is a root: the kernel merges the agent's
# .bss with the anonymous mapping after it (the main thread's TLS, ld.so's
# memory), and that whole mapping was skipped as the agent's (the blocks
# held there came out unreachable, leaked).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all reach_cxx
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
command -v c++filt >/dev/null || skip "c++filt (binutils) is not installed"

db=$W/reach.db
reach_scanned cxx reach_cxx "$db"
q() { sqlite3 -batch -separator ' ' "$db" "$1" || fail "sqlite3 failed on: $1"; }
holder() { # SITE: the root|name of its top holder at the last scan
	q "SELECT h.root || '|' || h.name FROM reach_holders h JOIN stack_text t ON t.stack_id = h.stack_id
	    WHERE h.snapshot_id = (SELECT max(snapshot_id) FROM reach_scans)
	      AND t.leaf_function LIKE '%$1%' ORDER BY h.bytes DESC LIMIT 1"
}
src=$HA_SRCDIR/tests/targets/reach_cxx.cc
line_of() { grep -n -F -- "$1" "$src" | head -n 1 | cut -d: -f1; }
l_entries=$(line_of 'Value *registry_of_cached_entries<Key, Value, N>::entries[N];')
l_tls=$(line_of 'thread_local char *t_cache[MAXN];')
[ -n "$l_entries" ] && [ -n "$l_tls" ] || fail "cannot find the definitions' lines in $src"
# The names as the demangler spells them (c++filt: the same libiberty).
sym=$(nm "$TARGETS/reach_cxx" | sed -n 's/.* \(_ZN.*registry_of_cached_entries.*7entriesE\)$/\1/p' | head -n 1)
[ -n "$sym" ] || fail "no symbol of registry<...>::entries in reach_cxx"
entries=$(c++filt "$sym")
[ ${#entries} -gt 300 ] || fail "the demangled name is only ${#entries} bytes: '$entries'"
tcache='heapattach_reach_test::a_rather_long_namespace_for_holder_names::t_cache'

g=$(holder cxx_global_site)
log "cxx_global_site held by $g (${#g} bytes)"
want="global|$entries (reach_cxx.cc:$l_entries) [reach_cxx]"
[ "$g" = "$want" ] || fail "cxx_global_site held by '$g', expected '$want'"
t=$(holder cxx_tls_site)
log "cxx_tls_site held by $t"
want="tls|$tcache (reach_cxx.cc:$l_tls) [reach_cxx] tid $pid"
[ "$t" = "$want" ] || fail "cxx_tls_site held by '$t', expected '$want'"
echo "ok: a ${#entries}-byte C++ global and a thread_local named whole, demangled, with their definitions"

HD=$HA_BUILDDIR/src/heapdiff
"$HD" --reach -n 0 "$db" >"$W/reach.txt" 2>&1 || fail "heapdiff --reach failed: $(cat "$W/reach.txt")"
grep -qF "global $entries (reach_cxx.cc:$l_entries) [reach_cxx]" "$W/reach.txt" ||
	fail "heapdiff --reach: no whole name of the global: $(grep -F registry "$W/reach.txt" | head -c 800)"
"$HD" --reach -f json "$db" >"$W/reach.json" 2>&1 || fail "heapdiff --reach -f json failed: $(head -c 600 "$W/reach.json")"
python3 - "$W/reach.json" "$entries (reach_cxx.cc:$l_entries) [reach_cxx]" <<'PY' || fail "heapdiff --reach -f json: the long name"
import json, sys
d = json.load(open(sys.argv[1]))["reach"]
names = [h["name"] for r in d["rows"] for h in r["held_by"]]
assert sys.argv[2] in names, names
PY
"$HD" -f html -o "$W/p.html" "$db" 2>"$W/html.err" || fail "heapdiff -f html failed: $(cat "$W/html.err")"
grep -qF 'registry_of_cached_entries<std::' "$W/p.html" && fail "the HTML report has the name's '<' raw"
# (the page's data is JSON in a script element, '<' written \u003c; the
# page's script makes text nodes of it: t_reach_views checks that in a browser)
grep -qF 'registry_of_cached_entries\u003cstd::map\u003cstd::__cxx11::basic_string\u003cchar' "$W/p.html" ||
	fail "the HTML report does not hold the long name escaped"
echo "ok: heapdiff --reach as text and JSON, the HTML report escaped"
