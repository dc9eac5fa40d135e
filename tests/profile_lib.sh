# tests/profile_lib.sh -- helpers for the tests of real profiles,
# on top of lib.sh: snapshots on demand, heapdiff output parsing.

# start_profiled LABEL TARGET [heapattach args...]: start $TARGETS/TARGET,
# wait until it is blocked reading its stdin, attach heapattach in the
# background with the given arguments and wait for "agent ready".  Sets pid
# (and TPID, TFD, TOUT, HAPID, HA_ERR as start_target and start_ha do).
start_profiled() {
	local label=$1 target=$2
	shift 2
	start_target "$label" "$target"
	pid=$TPID
	wait_syscall "$pid" "$pid" "$NR_READ"
	start_ha "$@" "$pid"
	wait_ready "$pid" "$target"
}

# reach_scanned LABEL TARGET DB: TARGET (reach_truth's command set) run
# with 200 blocks of 4 KiB at each site under heapattach --reach into DB,
# then detached (its last scan taken before the detach); fails if
# heapattach said a scan failed.
reach_scanned() {
	start_profiled "$1" "$2" --reach -i 4096 --block -q -s 3600 -o "$3"
	target_cmd "build 200 4096"
	detach_by_signal INT "$pid"
	! grep -q 'reachability scan' "$HA_ERR" || fail "heapattach said a scan failed: $(grep 'reachability scan' "$HA_ERR")"
}

# leak_paced SECS: leak_cmd (TFD, TOUT) keeps 10 blocks of 1000 bytes
# about every 0.1 s for SECS seconds, each command answered before the next
# (the sleep is the workload's own pace, not a wait for anything); the
# commands sent in ROUNDS.
leak_paced() {
	local t0
	t0=$(date +%s)
	ROUNDS=0
	while [ $(($(date +%s) - t0)) -lt "$1" ]; do
		send "$TFD" "leak 10 1000"
		ROUNDS=$((ROUNDS + 1))
		wait_for 10 '[ "$(grep -c "^done leak 10 1000" "$TOUT")" -ge "$ROUNDS" ]' || fail "leak_cmd did not answer"
		sleep 0.1
	done
}

# leak_paced_kept DB WHAT: the last snapshot of DB holds under leak_here
# every block leak_paced kept (-i 1: each one sampled), and leak_cmd's own
# array of their pointers, which leak_here grows by realloc (a few blocks
# more); fails saying WHAT otherwise.
leak_paced_kept() {
	local bytes count
	read -r bytes count < <(live_under "$1" leak_here heap)
	[ "$count" -ge $((ROUNDS * 10)) ] && [ "$count" -le $((ROUNDS * 10 + 4)) ] &&
		[ "$bytes" -ge $((ROUNDS * 10000)) ] ||
		fail "$2: leak_here holds $count blocks, $bytes bytes at the end; the program kept $((ROUNDS * 10)) of 1000 bytes and its array"
}

# snapshots DB: number of snapshots written so far.
snapshots() {
	sqlite3 "$1" 'SELECT count(*) FROM snapshots' 2>/dev/null || echo 0
}

# snapshot_now DB: ask the background heapattach for a snapshot (SIGUSR1)
# and wait until it is in the database.
snapshot_now() {
	local db=$1 before
	before=$(snapshots "$db")
	kill -USR1 "$HAPID" || fail "heapattach $HAPID is gone"
	wait_for 20 '[ "$(snapshots "$db")" -gt "$before" ]' ||
		fail "no snapshot written within 20 s of SIGUSR1"
}

# heapdiff_rows FILE: "BYTES OBJECTS LEAF-FUNCTION" for each row of a
# heapdiff --bytes output, in order.
heapdiff_rows() {
	awk '
		/^ *[-+]?[0-9]+ +[-+]?[0-9]+ +stack [0-9]+$/ { if (row) print row; row = $1 " " $2; leaf = 1; next }
		row && leaf && match($0, /^ +/) && RLENGTH >= 20 { sub(/^ +/, ""); split($0, f, "  "); row = row " " f[1]; leaf = 0; next }
		END { if (row) print row }
	' "$1"
}

# within PCT VALUE TRUTH: |VALUE - TRUTH| <= PCT% of TRUTH.
within() {
	awk -v p="$1" -v v="$2" -v t="$3" 'BEGIN { e = (v - t) / t; if (e < 0) e = -e; exit !(e <= p / 100) }'
}

# rss_anon_bytes PID: the process's RssAnon (/proc/PID/status) in bytes.
rss_anon_bytes() {
	awk '/^RssAnon:/ { print $2 * 1024 }' "/proc/$1/status"
}

# compile_c OUT SRC [gcc args...]: build a helper program at test time.
compile_c() {
	local out=$1 src=$2
	shift 2
	gcc -O2 -g -fno-omit-frame-pointer -o "$out" "$src" "$@" || fail "cannot compile $src"
}

# target_cmd LINE [SECS]: send LINE to the target started last and wait for
# its answer, its next line starting "done " (tests/targets/touch_pages and
# the like); a line starting "error" fails the test.
target_cmd() {
	local before
	before=$(grep -c '^done ' "$TOUT")
	send "$TFD" "$1"
	wait_for "${2:-60}" '[ "$(grep -c "^done " "$TOUT")" -gt "$before" ]' ||
		fail "the target did not answer '$1'"
	! grep -q '^error' "$TOUT" || fail "the target: $(grep '^error' "$TOUT")"
}

# stack_of FUNC FILE: of heapdiff's text output in FILE, the frames of the
# first stack holding FUNC, leaf first, one "function [module]" a line.
stack_of() {
	awk -v f="$1" '
		/^ *[-+]?[0-9]+ +[-+]?[0-9]+ +stack [0-9]+$/ { if (hit) exit; n = 0; next }
		match($0, /^ +/) && RLENGTH >= 20 { line = $0; sub(/^ +/, "", line); split(line, p, "  "); m = line; sub(/.*\[/, "[", m)
		            s[++n] = p[1] " " m; if (p[1] == f) hit = 1 }
		END { if (hit) for (i = 1; i <= n; i++) print s[i] }
	' "$2"
}

# finish_live PID WAITPID NAME DB OUT [LINES]: detach from PID by SIGINT, let
# the target quit (WAITPID: what to wait for, e.g. its unshare) and check it
# exited 0, then write the live heap at the last snapshot (heapdiff --bytes)
# to OUT and show its first LINES lines (24).
finish_live() {
	local pid=$1 waitpid=$2 name=$3 db=$4 out=$5 lines=${6:-24}
	detach_by_signal INT "$pid"
	send "$TFD" quit
	wait_exit "$waitpid" 10 && [ "$RC" = 0 ] || fail "$name did not exit cleanly ($RC)"
	"$HA_BUILDDIR/src/heapdiff" --bytes "$db" last >"$out" || fail "heapdiff failed"
	sed 's/^/    /' "$out" | head -n "$lines"
}

# jit_go_name_go FRESH: jit_tramp (attached) runs its JIT code 2000 times,
# names its slot B FRESH (a perf map or jitdump entry written now), and
# runs it 3000 times more.
jit_go_name_go() {
	send "$TFD" "go A 2000"
	wait_line "$TOUT" '^done go A 2000$'
	send "$TFD" "name B $1"
	wait_line "$TOUT" "^done name B $1\$"
	send "$TFD" "go B 3000"
	wait_line "$TOUT" '^done go B 5000$'
}
