#!/bin/bash
# t_reach_stripped: a reachability scan's holders named from a debug file
# alone (issue 40, holders): tests/targets/reach_truth stripped of every
# symbol, its DWARF in reach_truth.debug beside it (.gnu_debuglink).  The
# global holding global_site's blocks has no ELF symbol any more, so the
# scan names it by module and offset; the writer's symbolizer finds the
# debug file and names the variable and its definition's line from DWARF
# ("g_held (reach_truth.c:34) [reach_truth+0x...]"); the blocked thread's
# locals are held "in holder_thread" at its line, from the same file; its
# TLS array, which no STT_TLS symbol names any more ("tls+0x10
# [reach_truth] tid N"), by DWARF's TLS variable ("t_held (reach_truth.c:43)
# [reach_truth] tid N").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all reach_truth
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
command -v objcopy >/dev/null || skip "objcopy (binutils) is not installed"

mkdir -p "$W/bin" || fail "mkdir"
objcopy --only-keep-debug "$TARGETS/reach_truth" "$W/bin/reach_truth.debug" &&
	objcopy --strip-all --add-gnu-debuglink="$W/bin/reach_truth.debug" \
		"$TARGETS/reach_truth" "$W/bin/reach_truth" || fail "objcopy failed"
nm "$W/bin/reach_truth" 2>&1 | grep -q g_held && fail "the stripped copy still has g_held's symbol"
nm -D "$W/bin/reach_truth" 2>/dev/null | grep -q g_held && skip "g_held is a dynamic symbol here"
TARGETS=$W/bin

db=$W/reach.db
reach_scanned truth reach_truth "$db"
q() { sqlite3 -batch -separator ' ' "$db" "$1" || fail "sqlite3 failed on: $1"; }
holder() { # SITE: the root|name of its top holder at the scan
	q "SELECT h.root || '|' || h.name FROM reach_holders h JOIN stack_text t ON t.stack_id = h.stack_id
	    WHERE h.snapshot_id = (SELECT max(snapshot_id) FROM reach_scans)
	      AND t.leaf_function = '$1' ORDER BY h.bytes DESC LIMIT 1"
}
src=$HA_SRCDIR/tests/targets/reach_truth.c
l_held=$(grep -n -F 'void *g_held[MAXN];' "$src" | cut -d: -f1)
l_read=$(grep -n -F 'while (read(pipe_fds[0], &c, 1) < 0)' "$src" | cut -d: -f1)
g=$(holder global_site)
log "global_site held by $g"
[[ $g =~ ^global\|g_held\ \(reach_truth\.c:$l_held\)\ \[reach_truth\+0x[0-9a-f]+\]$ ]] ||
	fail "global_site held by '$g', expected 'global|g_held (reach_truth.c:$l_held) [reach_truth+0x...]'"
l_tls=$(grep -n -F '__thread void *t_held[MAXN];' "$src" | cut -d: -f1)
t=$(holder tls_site)
log "tls_site held by $t"
[[ $t =~ ^tls\|t_held\ \(reach_truth\.c:$l_tls\)\ \[reach_truth\]\ (tid\ [0-9]+)$ ]] ||
	fail "tls_site held by '$t', expected 'tls|t_held (reach_truth.c:$l_tls) [reach_truth] tid N'"
tid=${BASH_REMATCH[1]}
s=$(holder thread_site)
log "thread_site held by $s"
[ "$s" = "stack|$tid in holder_thread (reach_truth.c:$l_read)" ] ||
	fail "thread_site held by '$s', expected 'stack|$tid in holder_thread (reach_truth.c:$l_read)'"
echo "ok: a stripped module's global and TLS variable named from its debug file (variable, definition's line), the holding frame too"
