#!/bin/bash
# t_profile_kill9: heapattach killed with SIGKILL mid-run: the target goes on
# and finishes correctly (the agent restores itself on hang-up), and the
# database opens with every completed snapshot.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all leak_cmd

db=$W/k9.db
# (Directories of a pid's earlier life -- a test that SIGKILLs heapattach
# mid-injection leaves one, and pids are reused -- are not ours: only those
# made after this mark count.)
touch "$W/mark"
start_profiled leak leak_cmd -q -i 4096 -s 0.2 -o "$db"
send "$TFD" "churn 200000"
wait_for 30 '[ "$(snapshots "$db")" -ge 3 ]' || fail "fewer than 3 snapshots after 30 s"
kill -KILL "$HAPID"
wait "$HAPID" 2>/dev/null
wait_line "$TOUT" '^done churn 200000'
send "$TFD" "leak 10 100"
wait_line "$TOUT" '^done leak 10 100'
wait_for 10 'tracer_free "$pid"' || fail "target still traced"
# The agent noticed the hang-up and went dormant: a new session can start.
wait_for 10 'run_ha -q --duration 0.2 -o "$W/again.db" "$pid"; [ "$HA_RC" = 0 ]' ||
	fail "cannot attach again after kill -9 of the first attacher"
send "$TFD" quit
wait_exit "$pid" 10 || fail "leak_cmd did not exit after quit"
[ "$RC" = 0 ] || fail "leak_cmd exited $RC"
grep -q '^kept 10 blocks$' "$TOUT" || fail "leak_cmd's result is wrong: $(tail -n 1 "$TOUT")"

# The socket's name was removed once the agent connected: nothing stale in
# the target's /tmp.
stale=$(find /tmp -maxdepth 1 -name "heapattach-$pid-*" -newer "$W/mark" 2>/dev/null)
[ -z "$stale" ] || fail "kill -9 left the socket directory behind: $stale"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check failed after kill -9"
n=$(snapshots "$db")
[ "$n" -ge 3 ] || fail "only $n snapshots survived"
"$HA_BUILDDIR/src/heapdiff" --bytes "$db" first last >"$W/diff" || fail "heapdiff cannot read the database: $(cat "$W/diff")"
log "$n snapshots readable after kill -9"
echo ok
