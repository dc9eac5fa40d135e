#!/bin/bash
# t_writer_behind: a database writer slower than --snapshot-every (a short
# period, a slow disk) cannot make heapattach's memory grow without end:
# while two periodic snapshots wait for the writer, the next periodic one
# is skipped and its changes go with the one after (issue 39, found by
# bench/soak: 920 MiB of queued snapshots after 27 simulated hours).  The
# writer is made slow on purpose (HEAPATTACH_TEST_SLOW_WRITER_MS=400, a
# test hook) with -s 0.1 for about 6 s of a leaking target:
#   - -v says how many periodic snapshots were skipped (most of them), and
#     the file holds those written, not one per period;
#   - the snapshot asked for with SIGUSR1 is never skipped;
#   - nothing is lost: the last snapshot holds every block the target kept
#     (-i 1: each one sampled).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all leak_cmd
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
start_cmd leak "$HA_BUILDDIR/tests/targets/leak_cmd"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
db=$W/behind.db
export HEAPATTACH_TEST_SLOW_WRITER_MS=400
start_ha -v -q -i 1 --block -s 0.1 -o "$db" "$pid"
unset HEAPATTACH_TEST_SLOW_WRITER_MS
wait_ready "$pid" leak_cmd
leak_paced 6
rounds=$ROUNDS
kill -USR1 "$HAPID"
wait_for 20 '[ "$(sqlite3 "$db" "SELECT count(*) FROM snapshots WHERE reason = '"'signal'"'" 2>/dev/null || echo 0)" = 1 ]' ||
	fail "the snapshot asked for with SIGUSR1 was not written"
detach_by_signal INT "$pid"
check_alive "$pid"
skipped=$(sed -n 's/^heapattach: \([0-9]*\) periodic snapshots skipped while the database writer was behind.*/\1/p' "$HA_ERR")
written=$(sqlite3 "$db" "SELECT count(*) FROM snapshots WHERE reason = 'periodic'")
log "$rounds leak commands; $written periodic snapshots written, ${skipped:-0} skipped"
[ -n "$skipped" ] && [ "$skipped" -ge 10 ] || fail "periodic snapshots were not skipped while the writer was behind: $(grep -i skipped "$HA_ERR")"
[ "$written" -le 30 ] || fail "$written periodic snapshots written by a writer that takes 0.4 s each in about 6 s"
leak_paced_kept "$db" "the last snapshot"
send "$TFD" quit
echo "ok: a writer 0.4 s a snapshot at -s 0.1: $skipped periodic snapshots skipped, $written written, the SIGUSR1 one written, every block in the last"
