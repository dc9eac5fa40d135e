#!/bin/bash
# t_attach_pidns: a target in a pid namespace of its own (a container's
# view: it is pid 1 there) is profiled like any other.  The attacher has no
# pid in that namespace, so the agent sees it through SO_PEERCRED as pid 0
# (HA_INIT_PEER_OUTSIDE), and the agent's HELLO names the target by its
# own pid, 1.  The profile is exact (interval 1, --block), the detach
# clean, and the target goes on.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all leak_cmd
command -v unshare >/dev/null || skip "unshare is not installed (util-linux)"
unshare --pid --fork true 2>/dev/null || skip "cannot make a pid namespace here (unshare --pid)"

N=3000 SIZE=200
start_cmd ns unshare --pid --fork "$TARGETS/leak_cmd"
wait_line "$TOUT" '^ready pid=1$' 10
pid=$(pgrep -P "$TPID" -x leak_cmd) || fail "no leak_cmd under unshare $TPID"
grep -Eq '^NSpid:[[:space:]]+'"$pid"'[[:space:]]+1$' "/proc/$pid/status" ||
	fail "leak_cmd is not pid 1 of a namespace below ours: $(grep NSpid "/proc/$pid/status")"
wait_syscall "$pid" "$pid" "$NR_READ"
db=$W/ns.db
# Our agent's path is visible there (the same mount namespace): by path.
container_profile_exact "$pid" "$db" "attached to"
# The target goes on after the detach, and a second session works too.
send "$TFD" "leak 10 $SIZE"
wait_line "$TOUT" "^done leak 10 $SIZE" 10
run_ha -q --duration 0.2 -o "$W/ns2.db" "$pid"
[ "$HA_RC" = 0 ] || fail "a second session on the namespaced target exited $HA_RC: $(cat "$HA_ERR")"
send "$TFD" quit
wait_exit "$TPID" 10 || fail "unshare did not exit after leak_cmd's quit"
[ "$RC" = 0 ] || fail "leak_cmd (under unshare) exited $RC"
echo "ok: pid $pid (1 in its namespace): $N blocks of $SIZE bytes exact, detached, a second session too"
