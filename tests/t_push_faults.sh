#!/bin/bash
# t_push_faults: a receiver that fails leaves the session and the database
# as they would be without --push, and heapattach says what became of the
# profiles:
#  - 503 twice, then 200: retried, every profile sent, "(2 retries)";
#  - the connection closed halfway through the first body: retried, sent;
#  - connection refused: nothing sent, every profile failed or not sent by
#    the end; on a terminal the status line counts the failures; the
#    snapshots fall when they always do (1, 2, 3, 5, 7 s, the last at the
#    --duration) and heapattach ends --push-timeout after the detach;
#  - a receiver that takes 5 s per request (--push-timeout 6): the target
#    answers a command while a request is held, the snapshots keep their
#    schedule, the detach comes at the --duration, the first profile is
#    sent and heapattach ends --push-timeout after the detach, the rest
#    counted as not sent; no -wal file is left;
#  - a stuck receiver and a snapshot every 0.05 s: the oldest profiles are
#    dropped for the newest (a queue of 16), each profile is either dropped
#    or not sent by the end;
#  - a second Ctrl-C while heapattach waits for a slow receiver ends the
#    wait at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_all leak_cmd leaky

# summary N_SENT N_QUEUED: the --push line of the attacher run last.
summary() {
	grep -E "^heapattach: --push $RURL: $1 of $2 profiles sent" "$HA_ERR" ||
		fail "no '--push $RURL: $1 of $2 profiles sent' line: $(grep -- '--push' "$HA_ERR")"
}
# (Profiles of the snapshots with call paths: schema version 14's totals-only
# ones have none; heapattach-db(5), Cadence.)
pushed() { sqlite3 "$1" "SELECT count(*) FROM snapshots WHERE reason <> 'attach' AND paths = 1"; }
db_ok() {
	[ "$(sqlite3 "$1" 'PRAGMA integrity_check')" = ok ] || fail "$1: integrity_check failed"
	[ ! -e "$1-wal" ] || fail "$1: a -wal file was left next to the database"
}
# A session of leak_cmd with one SIGUSR1 snapshot, detached by SIGINT.
session() {
	local db=$1
	shift
	start_profiled "leak$RANDOM" leak_cmd -q -s 3600 -o "$db" "$@"
	target_cmd "churn 20000"
	snapshot_now "$db"
}

# ---- 503, 503, then 200
start_receiver r503 --fail-first 2 --status 503
db=$W/503.db
session "$db" --push "$RURL"
wait_requests 3
detach_by_signal INT "$pid"
n=$(pushed "$db")
wait_requests $((n + 2))
summary "$n" "$n" | grep -q '(2 retries)' || fail "the summary does not count the 2 retries: $(summary "$n" "$n")"
[ "$(req 1 'r["status"]')/$(req 2 'r["status"]')/$(req 3 'r["status"]')" = 503/503/200 ] ||
	fail "the receiver answered $(req 1 'r["status"]'), $(req 2 'r["status"]'), $(req 3 'r["status"]')"
cmp -s "$RDIR/req-1.body" "$RDIR/req-3.body" || fail "the retry sent another body"
[ "$(req 1 'r["raw_query"]')" = "$(req 3 'r["raw_query"]')" ] || fail "the retry went to another URL"
db_ok "$db"
echo "ok: 503 twice: retried with the same request, $n of $n sent"

# ---- the connection closed halfway through the first body
start_receiver rcut --close-mid-body 1
db=$W/cut.db
session "$db" --push "$RURL"
detach_by_signal INT "$pid"
n=$(pushed "$db")
wait_requests "$n"
[ "$(cat "$RDIR/aborted")" = 1 ] || fail "the receiver did not cut a request"
summary "$n" "$n" | grep -q '(1 retries)' || fail "the summary does not count the retry: $(summary "$n" "$n")"
db_ok "$db"
echo "ok: a connection closed mid-body: retried, $n of $n sent"

# ---- connection refused, on a terminal (250 columns, so that the status
# line is not cut before its push counts): the status line counts failures
command -v script >/dev/null || skip "script (util-linux) is not installed"
RURL=http://127.0.0.1:$(free_port)
start_cmd leaky "$TARGETS/leaky"
wait_line "$TOUT" '^ready [0-9]+$'
pid=$TPID
db=$W/refused.db
_NHA=$((_NHA + 1))
HA_ERR=$W/ha$_NHA.err
t0=$(date +%s.%N)
( _close_fds; cd "$W" && exec timeout -s KILL 60 script -qec \
	"stty cols 250; $HA -d 8 -s 10 --push $RURL --push-timeout 1 -o $db $pid" "$W/typescript" ) >"$HA_ERR" 2>&1 </dev/null
rc=$?
t1=$(date +%s.%N)
[ "$rc" = 0 ] || fail "heapattach under script exited $rc: $(tail -n 5 "$HA_ERR")"
tr '\r' '\n' <"$W/typescript" | sed 's/\x1b\[K//g' >"$HA_ERR"
sed 's/^/    /' "$HA_ERR" | grep -v '^ *heapattach: [^-]*samples (' | head -n 20
grep -Eq 'pushed 0, [1-9][0-9]* failed, 0 dropped' "$HA_ERR" ||
	fail "the status line never counted a failed push: $(grep -m3 'pushed' "$HA_ERR")"
n=$(pushed "$db")
line=$(summary 0 "$n")
echo "$line" | grep -Eq 'failed, the last: snapshot [0-9]+: .*(onnect|refused).* \(after 4 attempts\)' ||
	fail "the summary does not say the connection was refused after 4 attempts: $line"
# Every profile failed or was not sent; nothing else happened to them.
f=$(echo "$line" | sed -n 's/.*; \([0-9]*\) failed.*/\1/p')
u=$(echo "$line" | sed -n 's/.*; \([0-9]*\) not sent by the end.*/\1/p')
[ $((${f:-0} + ${u:-0})) = "$n" ] || fail "$n profiles, ${f:-0} failed and ${u:-0} not sent: $line"
# The session as always: the snapshots at 1, 2, 3, 5, 7 s and the last at 8.
sched=$(sqlite3 "$db" "SELECT group_concat(reason || '@' || printf('%.0f', time - (SELECT min(time) FROM snapshots)), ' ')
                         FROM (SELECT * FROM snapshots WHERE reason <> 'peak' ORDER BY id)")
[ "$sched" = "attach@0 periodic@1 periodic@2 periodic@3 periodic@5 periodic@7 detach@8" ] ||
	fail "the snapshots fell at $sched"
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
awk -v s="$secs" 'BEGIN { exit !(s < 8 + 1 + 3) }' || fail "heapattach took $secs s for -d 8 and --push-timeout 1"
db_ok "$db"
kill "$pid"
echo "ok: connection refused: $line; the snapshots at their times ($sched), $secs s in all"

# ---- a slow receiver: 5 s per request
start_receiver rslow --delay 5
db=$W/slow.db
start_profiled slow leak_cmd -q -s 1 -d 4 --push-timeout 6 -o "$db" --push "$RURL"
wait_for 10 '[ "$(cat "$RDIR/arrived" 2>/dev/null)" -ge 1 ]' || fail "no request reached the slow receiver"
# The target works while a request is held.
target_cmd "churn 200000" 4
[ "$(requests)" = 0 ] || fail "the slow receiver answered before the target's command was done (cannot tell)"
log "the target answered 'churn 200000' while the receiver held a request"
wait_line "$HA_ERR" "$(re_detached "$pid")" 10
t_det=$(date +%s.%N)
wait_for 10 '! is_alive "$HAPID"' || fail "heapattach still runs 10 s after the detach"
t_end=$(date +%s.%N)
wait "$HAPID"
[ "$?" = 0 ] || fail "heapattach exited non-zero with a slow receiver"
after=$(awk -v a="$t_det" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')
awk -v s="$after" 'BEGIN { exit !(s <= 6 + 1.5) }' || fail "heapattach ended $after s after the detach (--push-timeout 6)"
n=$(pushed "$db")
sched=$(sqlite3 "$db" "SELECT group_concat(reason || '@' || printf('%.0f', time - (SELECT min(time) FROM snapshots)), ' ')
                         FROM (SELECT * FROM snapshots WHERE reason <> 'peak' ORDER BY id)")
[ "$sched" = "attach@0 periodic@1 periodic@2 periodic@3 detach@4" ] || fail "the snapshots fell at $sched"
# The first request (the snapshot at 1 s) is answered at 6 s, within its
# --push-timeout of 6; the next, at 11 s, would come after the end, 6 s
# after the detach at 4.
line=$(grep -E "^heapattach: --push $RURL: [1-9][0-9]* of $n profiles sent" "$HA_ERR") ||
	fail "no summary with a profile sent: $(grep -- --push "$HA_ERR")"
echo "$line" | grep -Eq 'not sent by the end \(--push-timeout\)' || fail "the summary has nothing not sent: $line"
db_ok "$db"
send "$TFD" quit
echo "ok: a slow receiver: the target not held, snapshots at $sched, the end $after s after the detach; $line"

# ---- a stuck receiver and a snapshot every 0.05 s (call paths every 0.6 s
# after the first 0.6: some 24 profiles in 8 s): the queue keeps the 16
# newest, the older are dropped and counted; every profile is accounted for.
start_receiver rfull --delay 30
db=$W/full.db
start_profiled full leak_cmd -q -s 0.05 -d 8 --push-timeout 0.5 -o "$db" --push "$RURL"
wait_for 20 '! is_alive "$HAPID"' || fail "heapattach still runs after -d 8 and --push-timeout 0.5"
wait "$HAPID"
[ "$?" = 0 ] || fail "heapattach exited non-zero with a stuck receiver"
n=$(pushed "$db")
[ "$n" -ge 19 ] || fail "only $n snapshots with call paths in 8 s at -s 0.05"
line=$(summary 0 "$n")
d=$(echo "$line" | sed -n 's/.*; \([0-9]*\) dropped (the queue of 16 was full).*/\1/p')
u=$(echo "$line" | sed -n 's/.*; \([0-9]*\) not sent by the end.*/\1/p')
# (One in flight may fail first: its tries time out while the session runs.)
f=$(echo "$line" | sed -n 's/.*; \([0-9]*\) failed, the last.*/\1/p')
[ -n "$d" ] && [ "$d" -gt 0 ] || fail "nothing dropped with $n snapshots for a stuck receiver: $line"
[ "${f:-0}" -le 1 ] || fail "more than the one in flight failed: $line"
[ $((d + ${u:-0} + ${f:-0})) = "$n" ] || fail "$n profiles, $d dropped, ${u:-0} not sent and ${f:-0} failed: $line"
[ "${u:-0}" -le 17 ] || fail "more not sent (${u:-0}) than the queue and the one in flight hold: $line"
db_ok "$db"
send "$TFD" quit
echo "ok: a full queue: $line"

# ---- a second Ctrl-C ends the wait for a slow receiver
start_receiver rstuck --delay 30
db=$W/stuck.db
session "$db" --push "$RURL" --push-timeout 60
wait_for 10 '[ "$(cat "$RDIR/arrived" 2>/dev/null)" -ge 1 ]' || fail "no request reached the receiver"
kill -INT "$HAPID"
wait_line "$HA_ERR" "$(re_detached "$pid")" 10
# The summary lines come before the wait for the receivers.
wait_line "$HA_ERR" '^heapattach: [0-9]+ samples' 10
t_sig=$(date +%s.%N)
kill -INT "$HAPID"
wait_for 5 '! is_alive "$HAPID"' || fail "heapattach did not end within 5 s of a second SIGINT"
wait "$HAPID"
[ "$?" = 0 ] || fail "heapattach exited non-zero after the second SIGINT"
grep -q 'not sent by the end' "$HA_ERR" || fail "no 'not sent' in the summary: $(grep -- --push "$HA_ERR")"
db_ok "$db"
echo "ok: a second SIGINT ended the wait for a stuck receiver in $(awk -v a="$t_sig" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
echo ok
