#!/bin/bash
# t_cover_life: process life while attached (--interval 1 --block, so every
# allocation is seen):
#  - 2000 threads alive at once, started and ended while attached: each
#    one's block is in the profile (thread_alloc holds exactly 2000 blocks);
#  - a fork() child and a vfork() child that allocate: never in the profile
#    (the vfork child shares the parent's memory, TLS and ring);
#  - allocations on a sigaltstack (signal handler) and on a makecontext()
#    coroutine stack, each 32 KiB with an inaccessible page above: the
#    process survives (the stack copy stops at their end) and every block is
#    in the profile under its function;
#  - signal handlers that allocate while the main thread is inside malloc:
#    the process survives and keeps answering, nothing is left live;
#  - blocks made on one thread and freed on another, 4 pairs of threads at
#    once: exactly the kept ones are live (no free of a sampled block is
#    missed by the free filter while other threads set and clear it);
#  - exec: the session ends (the agent's socket closes on exec), the
#    attacher leaves by itself with a final snapshot that has what was
#    allocated before the exec; the new program runs untouched.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all cover_alloc

db=$W/life.db
start_profiled life cover_alloc -q -i 1 --block -s 3600 -o "$db"
send "$TFD" "threads 2000 4096"
wait_line "$TOUT" '^done threads 2000 4096$' 60
grep -qx 'threads made 2000' "$TOUT" || fail "not all 2000 threads were made"
send "$TFD" fork
wait_line "$TOUT" '^done fork$'
send "$TFD" vfork
wait_line "$TOUT" '^done vfork$'
[ "$(grep -c '^child status 7$' "$TOUT")" = 2 ] || fail "a fork/vfork child did not exit 7"
send "$TFD" "stacks 50"
wait_line "$TOUT" '^done stacks 50$'
send "$TFD" "signals 300"
wait_line "$TOUT" '^done signals 300$' 60
grep '^handled' "$TOUT" | sed 's/^/    /'
send "$TFD" "handoff 4 20000"
wait_line "$TOUT" '^done handoff 4 20000$' 120
snapshot_now "$db"
check_alive "$pid"

got=$(live_under "$db" thread_alloc heap)
[ "$got" = "8192000 2000" ] || fail "thread_alloc holds '$got', expected '8192000 2000'"
log "2000 threads: thread_alloc 8192000 bytes in 2000 blocks: exact"
got=$(live_under "$db" altstack_alloc heap)
[ "$got" = "38850 50" ] || fail "altstack_alloc holds '$got', expected '38850 50'"
got=$(live_under "$db" coroutine_alloc heap)
[ "$got" = "44400 50" ] || fail "coroutine_alloc holds '$got', expected '44400 50'"
log "sigaltstack and coroutine stacks: 50 + 50 blocks, each under its function"
for fn in fork_child_alloc vfork_child_alloc; do
	got=$(alloc_under "$db" "$fn" heap)
	[ "$got" = "0 0" ] || fail "$fn (a child's allocation) is in the parent's profile: '$got'"
done
log "fork and vfork children: nothing in the profile"
got=$(live_under "$db" signal_alloc heap)
[ "$got" = "0 0" ] || fail "signal_alloc has live blocks: '$got'"
neg=$(sqlite3 "$db" 'SELECT count(*) FROM buckets WHERE live_bytes < 0 OR live_count < 0')
[ "$neg" = 0 ] || fail "$neg buckets with negative live values"
got=$(live_under "$db" handoff_alloc heap)
[ "$got" = "3200000 800" ] || fail "handoff_alloc holds '$got', expected the 800 kept blocks: '3200000 800'"
got=$(alloc_under "$db" handoff_alloc heap | cut -d' ' -f2)
[ "$got" = 80000 ] || fail "handoff_alloc: $got allocations seen, expected 80000"
log "handoff between threads: 80000 blocks, exactly the 800 kept ones live"
log "signal handlers allocating: survived, $(alloc_under "$db" signal_alloc heap | cut -d' ' -f2) handler allocations seen"

# exec: the attacher must leave by itself, with a final snapshot.
send "$TFD" "exec /bin/cat"
wait_line "$TOUT" '^done exec /bin/cat$'
wait_for 15 '! is_alive "$HAPID"' || fail "heapattach still attached 15 s after the target exec'd"
wait "$HAPID"
harc=$?
log "after exec: heapattach exit $harc; stderr:"
sed 's/^/    /' "$HA_ERR"
[ "$harc" = 0 ] || fail "heapattach exited $harc after the target's exec (expected a clean end, 0)"
grep -q "^heapattach: target $pid replaced its program (exec)" "$HA_ERR" ||
	fail "heapattach did not say that the target exec'd"
reason=$(sqlite3 "$db" 'SELECT reason FROM snapshots ORDER BY id DESC LIMIT 1')
[ "$reason" = exec ] || fail "the last snapshot's reason is '$reason', expected exec"
got=$(live_under "$db" before_exec_leak heap)
[ "$got" = "4194304 64" ] || fail "before_exec_leak holds '$got' in the final snapshot, expected '4194304 64'"
[ "$(readlink "/proc/$pid/exe")" = /bin/cat ] || [ "$(readlink "/proc/$pid/exe")" = /usr/bin/cat ] ||
	fail "pid $pid is not running cat after the exec"
tracer_free "$pid" || fail "cat is still traced"
send "$TFD" "still here"
wait_line "$TOUT" '^still here$'
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check failed"
log "exec: final snapshot with the pre-exec leak; cat runs untouched"
echo ok
