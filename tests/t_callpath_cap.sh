#!/bin/bash
# t_callpath_cap: a target that makes a new call path for every allocation
# (tests/targets/forge_paths: 2^20 distinct paths) cannot grow the
# attacher past --max-callpaths (issue 39).  Every allocation sampled
# (-i 1, --block: none dropped); with a cap of 2,000 and 30,000 forged
# paths (within what the agent's live set tracks at -i 1):
#   - the database holds at most the cap's stacks, plus one per module and
#     kind for the rest: "(other call paths, past --max-callpaths)" of the
#     module of their leaf (forge_paths), which holds every sample past
#     the cap; the samples of both add up to every block the program kept
#     (nothing lost, nothing counted twice);
#   - -v's summary says how many samples were booked so, and heapdiff shows
#     the row;
#   - the attacher's peak RSS stays under 100 MiB (without the cap it
#     would keep a bucket, a callstack and its names for each path);
#   - the target goes on after the detach.
# And --max-callpaths refuses what is not a count, with one line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
TARGET=$HA_BUILDDIR/tests/targets/forge_paths
[ -x "$TARGET" ] || fail "forge_paths not built: $TARGET (make check builds it)"
OTHER="(other call paths, past --max-callpaths)"

"$HA_BUILDDIR/src/heapattach" --max-callpaths -5 1 >"$W/bad.out" 2>"$W/bad.err"
rc=$?
[ "$rc" = 2 ] || [ "$rc" = 1 ] || fail "--max-callpaths -5: exit $rc"
[ "$(wc -l <"$W/bad.err")" = 1 ] && grep -q "^heapattach: --max-callpaths wants a count" "$W/bad.err" ||
	fail "--max-callpaths -5: $(cat "$W/bad.err")"

start_cmd forge "$TARGET"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
CAP=2000 N=30000 SIZE=64
db=$W/cap.db
start_ha -v -q -s 3600 -i 1 --block --max-callpaths "$CAP" -o "$db" "$pid"
wait_ready "$pid" forge_paths
snapshot_now "$db"
send "$TFD" "forge $N $SIZE"
wait_line "$TOUT" "^done forge $N $SIZE" 120
snapshot_now "$db"
detach_by_signal INT "$pid"
check_session "$HA_ERR" "$pid" forge_paths
check_alive "$pid"

stacks=$(sqlite3 "$db" "SELECT count(*) FROM stacks")
other=$(sqlite3 "$db" "SELECT count(DISTINCT sf.stack_id) FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
                        JOIN modules m ON m.id = f.module_id
                       WHERE f.function = '$OTHER' AND m.path LIKE '%/forge_paths'")
log "stacks in the database: $stacks (cap $CAP); stacks of '$OTHER' in forge_paths: $other"
[ "$stacks" -le $((CAP + 10)) ] || fail "$stacks stacks in the database, past the cap of $CAP"
[ "$other" -ge 1 ] || fail "no stack '$OTHER' of module forge_paths"
# The blocks: every sample of the session's last snapshot, under
# keep_block or the leaf module's other bucket.
q="SELECT CAST(sum(b.alloc_count) AS INTEGER) FROM bucket_at b
     WHERE b.snapshot_id = (SELECT max(id) FROM snapshots) AND b.stack_id IN
       (SELECT sf.stack_id FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id WHERE f.function = '%s')"
# shellcheck disable=SC2059
kb=$(sqlite3 "$db" "$(printf "$q" keep_block)")
# shellcheck disable=SC2059
ob=$(sqlite3 "$db" "$(printf "$q" "$OTHER")")
log "blocks under keep_block: $kb; under '$OTHER': $ob; the program kept $N"
[ $((kb + ob)) = "$N" ] || fail "keep_block's $kb and the other bucket's $ob blocks are not the $N the program kept"
[ "$ob" -ge $((N - CAP)) ] || fail "the other bucket holds $ob blocks, fewer than the $((N - CAP)) past the cap"
grep -q "^heapattach: [0-9]* samples of call paths past the cap of $CAP (--max-callpaths) booked under their leaf's module" "$HA_ERR" ||
	fail "-v does not say what was booked past the cap: $(grep -i cap "$HA_ERR")"
rss=$(sed -n 's/.*max RSS \([0-9]*\) KiB.*/\1/p' "$HA_ERR" | tail -n 1)
[ -n "$rss" ] || fail "no 'max RSS' in -v's summary"
log "the attacher's peak RSS: $rss KiB"
[ "$rss" -lt $((100 * 1024)) ] || fail "the attacher's peak RSS $rss KiB is past 100 MiB with the cap"
"$HA_BUILDDIR/src/heapdiff" --bytes "$db" >"$W/r.txt" 2>"$W/r.err" || fail "heapdiff failed: $(cat "$W/r.err")"
grep -qF "$OTHER" "$W/r.txt" || fail "heapdiff does not show the other call paths' row"
send "$TFD" quit
wait_line "$TOUT" '^done quit$' 10
echo "ok: $N forged call paths, cap $CAP: $stacks stacks, $ob blocks under the module's other bucket, $kb under their own, attacher peak RSS $rss KiB"
