#!/bin/bash
# t_real_python: Debian's python3 runs a script that grows a list of large
# bytes objects (1000 x 100 KB) while attached at the default interval.  The
# growth between two snapshots shows up (within 25%) under the interpreter's
# own frames (python3 module, bytes allocation and the eval loop), the
# script's answers are right, and python exits normally after the detach.
# Logged, not asserted: the slowdown of a fixed workload, attached vs plain.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all
PY=/usr/bin/python3
[ -x "$PY" ] || skip "/usr/bin/python3 is not installed (Debian package python3; build-aux/setup installs it)"


# best_work FD OUT LABEL: run the workload 3 times, print the best time.
best_work() {
	local fd=$1 out=$2 i before
	for i in 1 2 3; do
		before=$(grep -c '^work ' "$out")
		send "$fd" work
		wait_for 120 '[ "$(grep -c "^work " "$out")" -gt "$before" ]' || fail "python did not finish its workload"
	done
	grep '^work ' "$out" | tail -n 3 | awk '{ print $2 }' | sort -n | head -n 1
}

start_cmd plain "$PY" -u "$HA_SRCDIR/tests/targets/grow.py"
wait_target_ready
t_plain=$(best_work "$TFD" "$TOUT")
send "$TFD" quit
wait_exit "$TPID" 10

db=$W/py.db
start_cmd py "$PY" -u "$HA_SRCDIR/tests/targets/grow.py"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -s 3600 -o "$db" "$pid"
wait_ready "$pid" python3
t_att=$(best_work "$TFD" "$TOUT")
snapshot_now "$db"
send "$TFD" "grow 1000 100000"
wait_line "$TOUT" '^done grow 1000 100000 total 1000 ok True$' 60
snapshot_now "$db"
detach_by_signal INT "$pid"
send "$TFD" "grow 10 1000"
wait_line "$TOUT" '^done grow 10 1000 total 1010 ok False$' 30
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "python exited $RC"

log "slowdown (default interval 512 KiB): workload best of 3: plain ${t_plain}s, attached ${t_att}s ($(awk -v a="$t_att" -v p="$t_plain" 'BEGIN { printf "%.2fx", a / p }'))"
s1=$(snapshot_id "$db" 1)
s2=$(snapshot_id "$db" 2)
"$HA_BUILDDIR/src/heapdiff" --bytes "$db" "$s1" "$s2" >"$W/diff" || fail "heapdiff failed: $(cat "$W/diff")"
sed 's/^/    /' "$W/diff" | head -n 30
truth=100000000
# Growth between the snapshots in stacks through the script's grow_list
# (a Python frame, in place of the eval loop's).
py_growth "$db" "$s1" "$s2" "$truth"
sqlite3 "$db" "SELECT DISTINCT f.function FROM frames f JOIN modules m ON m.id = f.module_id
               WHERE m.path LIKE '%python3%' AND f.function <> '' LIMIT 12" | sed 's/^/    python frame: /'
echo ok
