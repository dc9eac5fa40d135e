#!/bin/bash
# t_rss_limits: heapattach --rss where it cannot do everything.
#  1. perf_event_open refused (a seccomp filter, as in a container,
#     tests/deny_perf): one line says why, the heap profile goes on (heap
#     samples recorded, the session without an rss period, no rss rows),
#     exit 0, the target untouched afterwards.
#  2. More threads than the open files limit allows events for (one per
#     thread and CPU): one line says how many were left out and why, and
#     the session goes on with the others.
#  3. The target exits mid-session: heapattach ends with it, and the exit
#     snapshot keeps the resident memory of the last check (the process is
#     gone; nothing recorded is lost).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all touch_pages
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
DENY=$HA_BUILDDIR/tests/deny_perf
[ -x "$DENY" ] || fail "deny_perf not built: $DENY"


# ---- 1. perf events refused
start_target deny touch_pages 1
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
db=$W/deny.db
HA_WRAP=("$DENY")
start_ha --rss -q -s 0 -o "$db" "$pid"
HA_WRAP=()
wait_ready "$pid" touch_pages
target_cmd "touch 32"
kill -INT "$HAPID"
wait "$HAPID"
HA_RC=$?
sed 's/^/    /' "$HA_ERR"
[ "$HA_RC" = 0 ] || fail "heapattach --rss exited $HA_RC where perf events are refused"
n=$(grep -c '^heapattach: --rss: perf events are not allowed here (Permission denied; kernel.perf_event_paranoid is [-0-9]*, .*); going on without resident memory$' "$HA_ERR")
[ "$n" = 1 ] || fail "expected one line saying why --rss is off, found $n"
grep -q '^heapattach: --rss: [0-9]* page-fault samples' "$HA_ERR" && fail "an rss summary without rss"
[ "$(q "$db" 'SELECT rss_period FROM sessions')" = 0 ] || fail "the session records an rss period"
[ "$(q "$db" "SELECT count(*) FROM buckets WHERE kind >= 2")" = 0 ] || fail "rss rows without rss"
[ "$(q "$db" "SELECT count(*) FROM buckets WHERE kind < 2")" -gt 0 ] || fail "no heap rows: the heap profile did not go on"
check_alive "$pid"
send "$TFD" exit
wait_exit "$pid" 20
echo "ok: perf events refused: one line, the heap profile goes on"

# ---- 2. threads past the open files limit
NT=300
start_target many touch_pages $NT
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
db=$W/many.db
limit=512
HA_WRAP=(prlimit --nofile=$limit:$limit)
run_ha --rss -d 1 -q -o "$db" "$pid"
HA_WRAP=()
[ "$HA_RC" = 0 ] || fail "heapattach --rss with $NT threads exited $HA_RC"
line=$(grep '^heapattach: --rss: [0-9]* of [0-9]* threads left out: each thread needs one event per CPU ([0-9]* CPUs) and the open files limit is '"$limit"'; their page faults are not sampled$' "$HA_ERR")
[ -n "$line" ] || fail "no line saying how many threads were left out"
left=$(echo "$line" | awk '{ print $3 }')
all=$(echo "$line" | awk '{ print $5 }')
# main and the workers (the events are opened before the agent's thread
# exists: it inherits them from the thread that creates it)
[ "$all" = $((NT + 1)) ] || fail "the line counts $all threads, the target has $((NT + 1))"
[ "$left" -gt 0 ] && [ "$left" -lt "$all" ] || fail "$left of $all threads left out"
grep -q '^heapattach: --rss: [0-9]* page-fault samples' "$HA_ERR" || fail "no rss summary: the session did not go on with rss"
check_alive "$pid"
send "$TFD" exit
wait_exit "$pid" 30
echo "ok: $left of $all threads left out at $limit open files, said in one line"

# ---- 3. the target exits mid-session
start_target gone touch_pages 1
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
db=$W/gone.db
start_ha --rss -q -s 0 -o "$db" "$pid"
wait_ready "$pid" touch_pages
target_cmd "touch 64"
snapshot_now "$db"
before=$(q "$db" "SELECT printf('%.0f', resident_bytes) FROM snapshot_totals ORDER BY snapshot_id DESC LIMIT 1")
[ "$before" -gt $((48 << 20)) ] || fail "only $before bytes resident attributed after touching 64 MiB"
send "$TFD" exit
wait_exit "$pid" 20
wait_for 20 '! is_alive "$HAPID"' || fail "heapattach still runs 20 s after the target exited"
wait "$HAPID" || fail "heapattach exited $? when the target exited"
sed 's/^/    /' "$HA_ERR"
[ "$(q "$db" "SELECT reason FROM snapshots ORDER BY id DESC LIMIT 1")" = exit ] || fail "the last snapshot is not 'exit'"
after=$(q "$db" "SELECT printf('%.0f', resident_bytes) FROM snapshot_totals ORDER BY snapshot_id DESC LIMIT 1")
[ "$after" = "$before" ] || fail "the exit snapshot has $after bytes resident, the last check found $before"
echo "ok: the target exited: the exit snapshot keeps the last check's $((after >> 20)) MiB"
echo ok
