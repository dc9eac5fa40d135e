# bench/lib.sh -- shared by the benchmark scripts: run bench/malloc_bench
# plain, attached (tool started on its pid before it measures) or under a
# wrapper.  Needs BENCH, SECS and work (a scratch directory) set.

# Run the workload with THREADS, attaching TOOL (a command prefix taking the
# pid last) before it starts measuring.  Prints ops/s.
run_attached() {
	local threads=$1; shift
	local fifo=$work/in.$RANDOM out=$work/out.$RANDOM
	: >"$work/last_attach_failed"
	mkfifo "$fifo"
	"$BENCH" "$threads" "$SECS" wait <"$fifo" >"$out" &
	local pid=$!
	exec 7>"$fifo"
	until grep -q '^ready' "$out" 2>/dev/null; do kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
	local tpid=
	if [ "$#" -gt 0 ]; then
		# In a session of its own: heaptrack -p is a shell script whose
		# gdb and children must all get the SIGINT below.
		setsid "$@" "$pid" >"$work/tool.out" 2>&1 &
		tpid=$!
		# Wait until the tool says it is attached (each tool has its line).
		for _ in $(seq 1000); do
			grep -qE 'agent ready|heaptrack output will be written|injecting heaptrack' "$work/tool.out" && break
			sleep 0.01
		done
		[ "$1" = heaptrack ] && sleep 1 # gdb injection finishes after its message
		# A heapattach that did not attach (a bench agent of another
		# protocol, built before a change: make bench rebuilds them)
		# would measure the plain program: said, and no figure.
		if [ "$1" != heaptrack ] && ! grep -q 'agent ready' "$work/tool.out"; then
			grep '^heapattach: ' "$work/tool.out" | grep -v '^heapattach: \[' | tail -n 1 >"$work/last_attach_failed"
			[ -s "$work/last_attach_failed" ] || echo "heapattach: no 'agent ready'" >"$work/last_attach_failed"
		fi
	fi
	echo go >&7
	exec 7>&-
	wait "$pid"
	[ -n "$tpid" ] && { kill -INT -- "-$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null; }
	if [ -s "$work/last_attach_failed" ]; then
		echo "bench: not attached, no figure: $(cat "$work/last_attach_failed")" >&2
	else
		sed -n 's/^ops_per_sec=\([0-9]*\).*/\1/p' "$out"
	fi
	sed -n 's/.* plt_ns_per_op=\([0-9.]*\) direct_ns_per_op=\([0-9.]*\).*/\1 \2/p' "$out" >"$work/last_ab"
	# CPU nanoseconds per op, the target's own plus (attached) the
	# attacher's: a cost that other load on the machine blurs much less
	# than throughput does.
	local att=0
	[ -n "$tpid" ] && att=$(sed -n 's/.*(\([0-9.]*\) s in all).*/\1/p' "$work/tool.out" | head -n 1)
	sed -n 's/^ops_per_sec=\([0-9]*\).* seconds=\([0-9.]*\) cpu_seconds=\([0-9.]*\).*/\1 \2 \3/p' "$out" |
		awk -v a="${att:-0}" '{ if ($1 > 0) printf "%.2f\n", ($3 + a) * 1e9 / ($1 * $2) }' >"$work/last_cpu_ns"
	[ -n "$tpid" ] && { cp "$work/tool.out" "$work/last_tool.out"; grep -E 'samples|unwind' "$work/tool.out" >&2; }
	rm -f "$fifo" "$out"
}

# The in-process A/B (malloc_bench's MALLOC_BENCH_AB): THREADS threads
# alternate between the hooked PLT and libc's functions called directly
# while heapattach (the command prefix after THREADS) is attached.  Prints
# "RATIO ATTACHER_CPU_SECONDS ADDED_NS": direct / hooked time per op, i.e.
# the throughput ratio the hooks and the sampling path leave inside the
# target, measured at the same moments on the same threads (drift of the
# machine cancels out), the attacher's CPU over the run, and the time the
# hooks add per malloc+free (hooked minus direct, ns per op of a thread).
run_ab() {
	local threads=$1; shift
	MALLOC_BENCH_AB=1 run_attached "$threads" "$@" >/dev/null 2>&1
	if [ -s "$work/last_attach_failed" ]; then
		echo "bench: not attached, no figure: $(cat "$work/last_attach_failed")" >&2
		return 0
	fi
	local att
	att=$(sed -n 's/.*(\([0-9.]*\) s in all).*/\1/p' "$work/last_tool.out" | head -n 1)
	awk -v a="${att:-0}" '{ if ($2 > 0) printf "%.3f %s %.2f\n", $2 / $1, a, $1 - $2 }' "$work/last_ab"
}

# Run the workload from the start under a wrapper command (heaptrack's
# preload mode, valgrind).  Prints ops/s.
run_under() {
	local threads=$1; shift
	(cd "$work" && "$@" "$BENCH" "$threads" "$SECS" 2>/dev/null) | sed -n 's/^ops_per_sec=\([0-9]*\).*/\1/p'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }


median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
