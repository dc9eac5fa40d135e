#!/bin/bash
# t_memory_arena_hint: heapdiff --memory's MALLOC_ARENA_MAX hint counts the
# CPUs the target may use (issue 41): mem_truth pinned to one CPU (taskset)
# with 12 threads that each leave 16 MiB free in their arena: the hint names
# the thread arenas and their free bytes, MALLOC_ARENA_MAX=2, the host's
# online CPUs and the 1 CPU of its affinity; the json has "cpus"; glibc
# made more than 8 arenas (it counts the host's CPUs, not the affinity).  Where a
# cgroup-v1 cpu hierarchy can be written (root), the target then moved into
# a cgroup with a quota of half a CPU: the hint says so (0.5, its cgroup's
# CPU quota).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all mem_truth
command -v taskset >/dev/null || skip "taskset is not installed (util-linux)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
HD=$HA_BUILDDIR/src/heapdiff
db=$W/hint.db
online=$(getconf _NPROCESSORS_ONLN)

start_cmd mt taskset -c 0 "$TARGETS/mem_truth"
wait_target_ready
pid=$TPID
target_cmd "churn 12 16"
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -s 0 -o "$db" "$pid"
wait_ready "$pid" mem_truth
snapshot_now "$db"
sid=$(q "$db" "SELECT max(id) FROM snapshots WHERE memory_rss_anon_bytes IS NOT NULL")
"$HD" --memory "$db" "$sid" >"$W/m.txt" 2>&1 || fail "heapdiff --memory: $(cat "$W/m.txt")"
sed 's/^/    /' "$W/m.txt"
hint=$(sed -n 's/^hint: //p' "$W/m.txt")
[ -n "$hint" ] || fail "no hint for $(grep -c '^  [0-9]' "$W/m.txt") arenas holding the threads' free memory"
grep -Eq '^[0-9]+ thread arenas hold [0-9.]+ MiB free' <<<"$hint" || fail "the hint does not name the arenas' free bytes: $hint"
grep -q 'MALLOC_ARENA_MAX=2 ' <<<"$hint" || fail "the hint does not say MALLOC_ARENA_MAX=2: $hint"
grep -q "the host has $online online CPUs, it may use 1 (its affinity)" <<<"$hint" ||
	fail "the hint does not count the host's $online CPUs and the 1 of the affinity: $hint"
"$HD" --memory -f json "$db" "$sid" >"$W/m.json" || fail "heapdiff --memory -f json failed"
python3 - "$W/m.json" "$online" <<'PY' || fail "json: $(head -c 600 "$W/m.json")"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
assert m["cpus"] == {"online": int(sys.argv[2]), "allowed": 1, "quota": 0}, m["cpus"]
assert "MALLOC_ARENA_MAX=2" in m["hint"], m["hint"]
assert int(sys.argv[2]) < 2 or sum(1 for a in m["arenas"] if not a["main"]) > 8, m["arenas"]
PY
echo "ok: $hint"

# ---- a cgroup's CPU quota (v1's cpu hierarchy, where it can be written)
base=/sys/fs/cgroup/cpu
rel=$(sed -n 's/^[0-9]*:\([^:]*,\)*cpu\(,[^:]*\)*:\(.*\)$/\3/p' "/proc/$pid/cgroup" | head -1)
cg=$base${rel%/}/heapattach_t$$
if [ -f "$base/cpu.cfs_quota_us" ] && [ -n "$rel" ] && mkdir "$cg" 2>/dev/null; then
	at_exit "cat '$cg/cgroup.procs' 2>/dev/null | while read -r p; do echo \$p >'$base$rel/cgroup.procs'; done 2>/dev/null; rmdir '$cg' 2>/dev/null"
	if echo 100000 >"$cg/cpu.cfs_period_us" && echo 50000 >"$cg/cpu.cfs_quota_us" &&
		echo "$pid" >"$cg/cgroup.procs"; then
		snapshot_now "$db"
		sid=$(q "$db" "SELECT max(id) FROM snapshots WHERE memory_rss_anon_bytes IS NOT NULL")
		"$HD" --memory "$db" "$sid" >"$W/q.txt" 2>&1 || fail "heapdiff --memory: $(cat "$W/q.txt")"
		hint=$(sed -n 's/^hint: //p' "$W/q.txt")
		grep -q "the host has $online online CPUs, it may use 0.5 (its cgroup's CPU quota)" <<<"$hint" ||
			fail "in a cgroup of half a CPU: $hint"
		[ "$(q "$db" "SELECT memory_cpu_quota FROM snapshots WHERE id = $sid")" = 0.5 ] ||
			fail "snapshots.memory_cpu_quota: $(q "$db" "SELECT memory_cpu_quota FROM snapshots WHERE id = $sid")"
		echo "ok: in a cgroup of half a CPU: $hint"
	else
		log "cannot set a quota on $cg or move the target in: its part not run"
	fi
else
	log "no writable cgroup-v1 cpu hierarchy here: the quota's part not run"
fi
check_alive "$pid"
echo ok
