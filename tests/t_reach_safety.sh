#!/bin/bash
# t_reach_safety: the reachability scan never harms its target.
#  1. heapattach SIGKILLed at each step of a scan (HEAPATTACH_TEST_REACH_DIE_AT:
#     with the threads stopped; with a thread's registers set for the clone
#     in the agent's copy stub, not yet run; with the clone under way; with
#     the copy alive; with the copy killed and not reaped; with a thread set
#     for the wait4 that reaps it): the target runs on, its own check of its
#     blocks unchanged, none of its threads left stopped, and no child of it
#     alive (the copy died with the attacher: at most a zombie, which exited
#     0 (the stub's exit_group) or by SIGKILL, never by a fault).
#  2. A target reaping with waitpid(-1) in a SIGCHLD handler never sees a
#     copy, over several scans.
#  3. 100 scans of a target with 8 threads allocating and freeing without
#     end, on fewer CPUs (--reach=0.05): no deadlock, every scan stored, at
#     least 90 of each 100 made (the agent's park, agent/park.c: before it,
#     none), the others failing only for a safe point, the target's check
#     unchanged, heapattach detaches cleanly.
#  4. --reach with --rss: both recorded.
#  5. heapattach SIGKILLed while the busy threads wait in the park (not
#     stopped): every busy thread goes on (the target's progress, the
#     fewest rounds of any, moves), none left stopped, no copy, the check
#     unchanged.
#  6. A thread that allocates only inside a signal handler (so it parks
#     under a signal frame): the check, still run on the parked, refuses
#     every scan ("in a signal handler"), and the thread goes on.
# run-all-timeout: 400
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all reach_truth
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch -separator ' ' "$1" "$2" || fail "sqlite3 failed on: $2"; }

# live_children PID: children of PID that are not zombies.
live_children() { ps -o stat=,pid= --ppid "$1" | awk '$1 !~ /^Z/ { print $2 }'; }
# stopped_threads PID: threads of PID in a stopped or traced state.
stopped_threads() { ps -L -o stat= -p "$1" | grep -c '^[tT]'; }

# ---- 1. kill -9 at every step
# zombie_codes PID: the exit statuses (waitpid's form) of PID's zombie children
zombie_codes() {
	local c
	for c in $(ps -o stat=,pid= --ppid "$1" | awk '$1 ~ /^Z/ { print $2 }'); do
		awk '{ print $NF }' "/proc/$c/stat" 2>/dev/null
	done
}
for step in stopped clone_set cloning copy killed reap_set; do
	start_target "die_$step" reach_truth
	pid=$TPID
	target_cmd "build 50 4096"
	target_cmd check
	before=$(grep '^check ' "$TOUT" | tail -n 1)
	HEAPATTACH_TEST_REACH_DIE_AT=$step start_ha -q -s 3600 -o "$W/die_$step.db" "$pid"
	wait_ready "$pid" reach_truth
	kill -USR2 "$HAPID" || fail "heapattach is gone before SIGUSR2"
	wait_for 30 '! is_alive "$HAPID"' || fail "$step: heapattach did not kill itself at the step"
	wait "$HAPID"
	rc=$?
	[ "$rc" = 137 ] || fail "$step: heapattach exited $rc, expected 137 (SIGKILL at the step)"
	is_alive "$pid" || fail "$step: the target died with heapattach"
	wait_for 10 '[ "$(stopped_threads "$pid")" = 0 ]' ||
		fail "$step: threads of the target left stopped: $(ps -L -o tid,stat -p "$pid")"
	wait_for 10 '[ -z "$(live_children "$pid")" ]' ||
		fail "$step: a child of the target is alive: $(ps -o pid,stat,comm --ppid "$pid")"
	for code in $(zombie_codes "$pid"); do
		[ "$code" = 0 ] || [ "$code" = 9 ] ||
			fail "$step: a copy ended with status $code (0: the stub's exit_group, 9: SIGKILL)"
	done
	target_cmd check
	after=$(grep '^check ' "$TOUT" | tail -n 1)
	[ "$after" = "$before" ] || fail "$step: the target's check changed: '$before' then '$after'"
	log "killed at '$step': the target runs on ($after), children: $(ps -o stat= --ppid "$pid" | xargs), their statuses: $(zombie_codes "$pid" | xargs)"
done
echo "ok: heapattach SIGKILLed at each step of a scan: the target unharmed, no copy alive"

# ---- 2. a target that reaps with waitpid(-1) never sees the copy
start_target reaper reach_truth
pid=$TPID
target_cmd "build 50 4096"
target_cmd reaper
db=$W/reaper.db
start_ha -q -s 3600 -o "$db" "$pid"
wait_ready "$pid" reach_truth
for i in 1 2 3; do
	kill -USR2 "$HAPID"
	wait_for 30 '[ "$(q "$db" "SELECT count(*) FROM reach_scans WHERE error = '"''"'" 2>/dev/null)" = $i ]' ||
		fail "scan $i not stored within 30 s: $(q "$db" "SELECT * FROM reach_scans")"
done
target_cmd reaped
[ "$(grep '^reaped ' "$TOUT" | tail -n 1)" = "reaped 0" ] ||
	fail "the target's SIGCHLD handler reaped a child: $(grep '^reaped ' "$TOUT")"
[ -z "$(ps -o pid= --ppid "$pid")" ] || fail "the target has children: $(ps -o pid,stat,comm --ppid "$pid")"
detach_by_signal INT "$pid"
echo "ok: 3 scans, the target's waitpid(-1) saw no copy, none left"

# ---- 3. 100 scans of a busy 8-thread target
start_target busy reach_truth
pid=$TPID
target_cmd "build 100 4096"
target_cmd check
before=$(grep '^check ' "$TOUT" | tail -n 1)
target_cmd "busy 8"
db=$W/busy.db
# --nice 0: the scans' walk competes with the 8 threads on equal terms
# (niced, each took seconds here and 100 did not fit in the time)
start_ha -q -s 3600 --reach=0.05 --nice 0 -i 64M -o "$db" "$pid"
wait_ready "$pid" reach_truth
wait_for 300 '[ "$(q "$db" "SELECT count(*) FROM reach_scans" 2>/dev/null || echo 0)" -ge 100 ]' ||
	fail "100 scans not done within 300 s: $(q "$db" "SELECT count(*), sum(error = '') FROM reach_scans")"
detach_by_signal INT "$pid"
ok=$(q "$db" "SELECT count(*) FROM reach_scans WHERE error = ''")
all=$(q "$db" "SELECT count(*) FROM reach_scans")
log "busy target: $ok of $all scans ran; pause ms min/avg/max: $(q "$db" "SELECT round(min(pause_ms), 2), round(avg(pause_ms), 2), round(max(pause_ms), 2) FROM reach_scans WHERE error = ''")"
log "errors: $(q "$db" "SELECT error, count(*) FROM reach_scans WHERE error != '' GROUP BY 1")"
[ "$(q "$db" "SELECT count(*) FROM reach_scans WHERE error != '' AND error NOT LIKE 'no safe point%'")" = 0 ] ||
	fail "scans of the busy target failed otherwise than for a safe point"
# The last scan is taken before the detach, the hooks still in: the park works for it too.
log "the last scan, before the detach: '$(q "$db" "SELECT error FROM reach_scans ORDER BY snapshot_id DESC LIMIT 1")' ('': it ran)"
[ $((ok * 100)) -ge $((all * 90)) ] || fail "only $ok of $all scans of the busy target ran (at least 90%)"
target_cmd check
after=$(grep '^check ' "$TOUT" | tail -n 1)
[ "$after" = "$before" ] || fail "the busy target's check changed: '$before' then '$after'"
[ -z "$(ps -o pid= --ppid "$pid")" ] || fail "the busy target has children: $(ps -o pid,stat,comm --ppid "$pid")"
echo "ok: $all scans of a busy 8-thread target, no deadlock, the target's output unchanged"

# ---- 4. --reach with --rss
start_target rss reach_truth
pid=$TPID
db=$W/rss.db
start_ha -q -s 3600 -i 4096 --reach --rss -o "$db" "$pid"
wait_ready "$pid" reach_truth
target_cmd "build 100 4096"
kill -USR2 "$HAPID"
wait_for 30 '[ "$(q "$db" "SELECT count(*) FROM reach_scans" 2>/dev/null)" = 1 ]' || fail "--reach --rss: no scan on SIGUSR2"
detach_by_signal INT "$pid"
[ "$(q "$db" "SELECT count(*) FROM reach_scans WHERE error = ''")" -ge 1 ] ||
	fail "--reach --rss: no scan ran: $(q "$db" "SELECT * FROM reach_scans")"
[ "$(q "$db" "SELECT count(*) FROM reach_rows WHERE unreachable_bytes > 0")" -ge 1 ] ||
	fail "--reach --rss: no unreachable row"
grep -q 'perf events' "$HA_ERR" ||
	[ "$(q "$db" "SELECT count(*) FROM buckets b JOIN kinds k ON k.id = b.kind WHERE k.name = 'rss'")" -ge 1 ] ||
	fail "--reach --rss: no resident-memory rows"
echo "ok: --reach with --rss"

# ---- 5. kill -9 while the busy threads wait in the park
start_target park reach_truth
pid=$TPID
target_cmd "build 50 4096"
target_cmd check
before=$(grep '^check ' "$TOUT" | tail -n 1)
target_cmd "busy 8"
HEAPATTACH_TEST_REACH_DIE_AT=parked start_ha -q -s 3600 --reach=0.05 --nice 0 -i 64M -o "$W/park.db" "$pid"
wait_for 60 '! is_alive "$HAPID"' || fail "parked: heapattach did not kill itself with threads in the park"
wait "$HAPID"
rc=$?
[ "$rc" = 137 ] || fail "parked: heapattach exited $rc, expected 137 (SIGKILL with threads in the park)"
wait_for 10 '[ "$(stopped_threads "$pid")" = 0 ]' ||
	fail "parked: threads of the target left stopped: $(ps -L -o tid,stat -p "$pid")"
target_cmd progress
p1=$(grep '^progress ' "$TOUT" | tail -n 1 | cut -d' ' -f2)
# Each waits at most HA_PARK_MAX_MS (100 ms) in the park, then goes on.
moved() { target_cmd progress; [ "$(grep '^progress ' "$TOUT" | tail -n 1 | cut -d' ' -f2)" -gt "$p1" ]; }
wait_for 10 moved || fail "parked: a busy thread made no progress after heapattach died: $(grep '^progress ' "$TOUT" | tail -n 3 | xargs)"
[ -z "$(live_children "$pid")" ] || fail "parked: a child of the target is alive: $(ps -o pid,stat,comm --ppid "$pid")"
target_cmd check
after=$(grep '^check ' "$TOUT" | tail -n 1)
[ "$after" = "$before" ] || fail "parked: the target's check changed: '$before' then '$after'"
log "killed with threads in the park: every busy thread went on ($(grep '^progress ' "$TOUT" | tail -n 1))"
echo "ok: heapattach SIGKILLed with threads in the park: they went on, the target unharmed"

# ---- 6. parked under a signal frame: the check still refuses the thread
start_target handler reach_truth
pid=$TPID
target_cmd "build 50 4096"
target_cmd check
before=$(grep '^check ' "$TOUT" | tail -n 1)
target_cmd inhandler
db=$W/handler.db
start_ha -v -v -s 3600 --reach=0.1 --nice 0 -i 64M -o "$db" "$pid"
wait_ready "$pid" reach_truth
wait_for 120 '[ "$(q "$db" "SELECT count(*) FROM reach_scans" 2>/dev/null || echo 0)" -ge 5 ]' ||
	fail "handler: 5 scans not done within 120 s: $(q "$db" "SELECT count(*) FROM reach_scans")"
target_cmd progress
p1=$(grep '^progress ' "$TOUT" | tail -n 1 | cut -d' ' -f2)
detach_by_signal INT "$pid"
all=$(q "$db" "SELECT count(*) FROM reach_scans")
[ "$(q "$db" "SELECT count(*) FROM reach_scans WHERE error NOT LIKE 'no safe point%'")" = 0 ] ||
	fail "handler: a scan ran (or failed otherwise) with a thread allocating in a signal handler: $(q "$db" "SELECT error, count(*) FROM reach_scans GROUP BY 1")"
grep -q 'reach: thread [0-9]* in a signal handler' "$HA_ERR" ||
	fail "handler: the check never named the signal handler"
wait_for 10 moved || fail "handler: the thread in its handler made no progress after the scans"
target_cmd check
after=$(grep '^check ' "$TOUT" | tail -n 1)
[ "$after" = "$before" ] || fail "handler: the target's check changed: '$before' then '$after'"
echo "ok: $all scans with a thread parked under a signal frame: all refused, the thread went on"
