#!/bin/bash
# t_memory: where RssAnon goes (issue 41), on tests/targets/mem_truth, which
# makes memory of known kinds: before the attach, 4 threads holding 8 MiB
# each in arenas of their own, 16 MiB of 2 KiB blocks with every other one
# freed (8 MiB of holes pinned beside live blocks), a written anonymous
# mapping of 32 MiB, 4 blocks of 8 MiB from malloc (mmapped chunks); after
# it, 16 MiB of 8 KiB blocks (sampled) and 32 MiB in blocks freed so that
# their pages empty entirely.  At the snapshot that follows, the terms of
# memory_terms add up to RssAnon with unexplained within 5% + 4 MiB; each
# term within 25% of what the target made; the arenas one main and four
# thread arenas of 8 MiB in use each; and
# heapattach --trim (malloc_trim(0) on the agent's thread) gives back what
# it predicted, within 25%, and leaves the pinned holes; --trim=predict
# changes nothing; reading a forked child's memory leaves its copy-on-write
# pages shared.  heapdiff
# --memory shows the same terms (text, json), and refuses a version-9 file
# in one line; the HTML report has them over time (drawn, in Chromium when
# installed, as ten stacked areas).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/report_lib.sh"
require_all mem_truth
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
MiB=1048576
db=$W/mem.db

start_target mt mem_truth
pid=$TPID
for c in "threads 4 8" "holes 16" "anon 32" "big 4 8"; do
	target_cmd "$c"
done
# Reading a process's memory must not un-share its copy-on-write pages
# (process_vm_readv's pin would, on Linux 5.19 on): a forked child's
# private dirty memory stays what it was after its breakdown is read.
target_cmd fork
child=$(sed -n 's/^truth child=//p' "$TOUT")
_PIDS+=("$child")
dirty() { awk '/^Private_Dirty:/ { print $2 }' "/proc/$child/smaps_rollup"; }
d0=$(dirty)
"$HA_BUILDDIR/tests/mem_view_check" "$child" >"$W/child.view" || fail "mem_view_check on the child failed"
d1=$(dirty)
[ "$d1" -le $((d0 + 1024)) ] || fail "reading the child's heap made $((d1 - d0)) KiB of it private (un-shared)"
log "the forked child's private dirty memory: $d0 KiB, after its breakdown $d1 KiB"
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -s 0 -i 65536 -o "$db" "$pid"
wait_ready "$pid" mem_truth
target_cmd "grow 16"
target_cmd "empty 32"
truth() { sed -n "s/^truth.* $1=\\([0-9]*\\).*/\\1/p; s/^truth $1=\\([0-9]*\\).*/\\1/p" "$TOUT" | head -1; }
pinned_truth=$(truth pinned)
freed_truth=$(truth freed)
snapshot_now "$db"
sid=$(q "$db" "SELECT max(id) FROM snapshots WHERE memory_rss_anon_bytes IS NOT NULL")
[ -n "$sid" ] || fail "no snapshot has a memory breakdown"
q -header -column "$db" "SELECT term, bytes FROM memory_terms WHERE snapshot_id = $sid" | sed 's/^/    /'
q -header -column "$db" "SELECT * FROM memory_arenas WHERE snapshot_id = $sid" | sed 's/^/    /'
term() { q "$db" "SELECT bytes FROM memory_terms WHERE snapshot_id = ${2:-$sid} AND term = '$1'"; }
near() { # near NAME GOT WANT PCT
	awk -v g="$2" -v w="$3" -v p="$4" 'BEGIN { exit !(g >= w * (1 - p / 100) && g <= w * (1 + p / 100)) }' ||
		fail "$1: $2 bytes, not within $4% of $3"
	log "$1: $2 bytes (truth $3)"
}
[ "$(q "$db" "SELECT memory_allocator FROM snapshots WHERE id = $sid")" = glibc ] || fail "glibc not read"
rss_anon=$(q "$db" "SELECT memory_rss_anon_bytes FROM snapshots WHERE id = $sid")
[ "$(q "$db" "SELECT sum(bytes) FROM memory_terms WHERE snapshot_id = $sid")" = "$rss_anon" ] ||
	fail "the terms do not add up to RssAnon $rss_anon"
[ "$(q "$db" "SELECT count(*) FROM memory_terms WHERE snapshot_id = $sid")" = 10 ] || fail "not 10 terms"
u=$(term unexplained)
awk -v u="$u" -v r="$rss_anon" -v m=$MiB 'BEGIN { exit !((u < 0 ? -u : u) <= r * 0.05 + 4 * m) }' ||
	fail "unexplained $u is more than 5% of RssAnon $rss_anon + 4 MiB"
near allocator_free_pinned "$(term allocator_free_pinned)" "$pinned_truth" 25
near allocator_free_trimmable "$(term allocator_free_trimmable)" "$freed_truth" 25
near mmap_chunks "$(term mmap_chunks)" $((32 * MiB)) 25
near other_anon "$(term other_anon)" $((32 * MiB)) 25
# 16 MiB of 8 KiB blocks and the 136 4 KiB blocks of `empty`, sampled at 64 KiB
near live_heap_sampled "$(term live_heap_sampled)" $((16 * MiB + 136 * 4096)) 25
# the threads' 32 MiB and the 8 MiB of live 2 KiB blocks of `holes`
near live_heap_before_attach "$(term live_heap_before_attach)" $((40 * MiB)) 25
[ "$(q "$db" "SELECT count(*) FROM memory_arenas WHERE snapshot_id = $sid AND is_main = 1")" = 1 ] ||
	fail "not one main arena"
[ "$(q "$db" "SELECT count(*) FROM memory_arenas WHERE snapshot_id = $sid AND is_main = 0
	AND in_use_bytes BETWEEN 8 * $MiB AND 9 * $MiB AND complete = 1")" = 4 ] ||
	fail "not 4 thread arenas of 8 MiB in use, walked whole"
echo "ok: the terms add up and each is within 25% of the truth"

# ---- heapdiff --memory: the same figures, text and json
HD=$HA_BUILDDIR/src/heapdiff
"$HD" --memory --bytes "$db" "$sid" >"$W/mem.txt" 2>&1 || fail "heapdiff --memory: $(cat "$W/mem.txt")"
sed 's/^/    /' "$W/mem.txt"
for t in live_heap_sampled live_heap_before_attach allocator_free_trimmable allocator_free_pinned \
	allocator_overhead mmap_chunks thread_stacks profiler other_anon unexplained; do
	grep -Eq "^  $t +$(term "$t") " "$W/mem.txt" || fail "heapdiff --memory: no line '$t $(term "$t")'"
done
grep -q "RssAnon $rss_anon, allocator glibc" "$W/mem.txt" || fail "heapdiff --memory: no RssAnon $rss_anon in the header"
[ "$(grep -cE '^  [0-9]+ +(yes)? +1 ' "$W/mem.txt")" = 5 ] || fail "heapdiff --memory: not 5 arena lines"
"$HD" --memory -f json "$db" "$sid" >"$W/mem.json" || fail "heapdiff --memory -f json failed"
python3 - "$W/mem.json" "$rss_anon" <<'PY' || fail "heapdiff --memory -f json: $(cat "$W/mem.json")"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
assert m["rss_anon_bytes"] == int(sys.argv[2]), m["rss_anon_bytes"]
assert len(m["terms"]) == 10 and sum(m["terms"].values()) == m["rss_anon_bytes"], m["terms"]
assert len(m["arenas"]) == 5 and sum(a["main"] for a in m["arenas"]) == 1, m["arenas"]
assert m["hint"] is None, m["hint"]  # 32 MiB trimmable: below what a hint needs (64 MiB)
PY
q "$db" ".backup $W/v9.db"
q "$W/v9.db" "DROP TABLE memory_terms; DROP TABLE memory_arenas; ALTER TABLE snapshots DROP COLUMN memory_allocator;
	ALTER TABLE snapshots DROP COLUMN memory_rss_anon_bytes; UPDATE meta SET value = '9' WHERE key = 'schema_version'"
"$HD" --memory "$W/v9.db" >"$W/v9.out" 2>&1 && fail "heapdiff --memory on a version-9 file succeeded"
grep -qx "heapdiff: $W/v9.db: no memory breakdown: the file was written before schema version 10" "$W/v9.out" ||
	fail "heapdiff --memory on a version-9 file: $(cat "$W/v9.out")"
echo "ok: heapdiff --memory, text and json; a version-9 file refused in one line"

# ---- the HTML report: the terms over time, stacked under the heap chart
"$HD" -f html -o "$W/mem.html" "$db" || fail "heapdiff -f html failed"
page_json "$W/mem.html" >"$W/mem.page.json" || fail "no data in the page"
python3 - "$W/mem.page.json" "$sid" "$rss_anon" <<'PY' || fail "the page's memory data: $(head -c 600 "$W/mem.page.json")"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
assert len(m["terms"]) == 10 and m["terms"][-1] == "unexplained", m["terms"]
assert len(m["rows"]) >= 2, m["rows"]
assert any(r[1] == int(sys.argv[3]) and sum(r[2:]) == r[1] for r in m["rows"]), m["rows"]
PY
if command -v chromium >/dev/null; then
	( require_chromium ) && {
		CHROMIUM=$(command -v chromium)
		dom "$W/mem.html" "$W/mem.dom"
		check_dom "$W/mem.dom" >/dev/null
		[ "$(grep -o '<polygon[^>]*data-term=' "$W/mem.dom" | wc -l)" = 10 ] ||
			fail "the page does not draw the 10 terms"
		echo "ok: the page draws the terms (Chromium)"
	}
fi
echo "ok: the HTML report has the terms over time"

kill -INT "$HAPID"
wait "$HAPID" || fail "heapattach exited $? on SIGINT"

# ---- heapattach --trim: predicted, then given back; the holes kept
mib() { awk -v m="$1" 'BEGIN { printf "%.0f", m * 1048576 }'; }
predicted=$(term allocator_free_trimmable)
maps_before=$(cat "/proc/$pid/maps")
run_ha --trim=predict "$pid"
[ "$HA_RC" = 0 ] || fail "--trim=predict exited $HA_RC"
[ "$(cat "/proc/$pid/maps")" = "$maps_before" ] || fail "--trim=predict changed the target's mappings"
p=$(sed -n 's/.*malloc_trim(0) would give back \([0-9.]*\) MiB.*/\1/p' "$HA_ERR")
[ -n "$p" ] || fail "--trim=predict: no prediction line"
near "--trim=predict" "$(mib "$p")" "$predicted" 5
run_ha --trim "$pid"
[ "$HA_RC" = 0 ] || fail "--trim exited $HA_RC"
read -r gave pred <<<"$(sed -n 's/.*gave back \(-*[0-9.]*\) MiB (predicted \([0-9.]*\) MiB.*/\1 \2/p' "$HA_ERR")"
[ -n "$pred" ] || fail "--trim: no 'gave back ... (predicted ...)' line"
near "RssAnon given back by --trim" "$(mib "$gave")" "$(mib "$pred")" 25
grep -Eq "$(re_detached "$pid")" "$HA_ERR" || fail "--trim did not detach"
run_ha --trim=predict "$pid"
p=$(sed -n 's/.*would give back \([0-9.]*\) MiB.*/\1/p' "$HA_ERR")
pinned=$(sed -n 's/.* \([0-9.]*\) MiB free beside live blocks stays.*/\1/p' "$HA_ERR")
awk -v p="$p" 'BEGIN { exit !(p < 1) }' || fail "trimmable after --trim: $p MiB"
near "pinned after --trim" "$(mib "$pinned")" "$pinned_truth" 25
echo "ok: --trim gave back what it predicted, the pinned holes stayed"
check_alive "$pid"
echo ok
