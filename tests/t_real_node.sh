#!/bin/bash
# t_real_node: Debian's node (/usr/bin/node) with --perf-basic-prof (and
# --interpreted-frames-native-stack, so that interpreted functions have
# their own code too) runs a script that grows Buffers from one named JS
# function.  Asserted: at least 90% of the live bytes are in stacks that
# name that function as the perf map does (JS:...leakBuffers
# .../grow.js:LINE, marked [jit]) and go on to node::Start and libc's
# start (the frames of V8's JIT code and builtins walked through by the
# frame-pointer fallback); the detach summary counts frames found by frame
# pointer and frames named by the perf map; the script's answers are right
# and node exits normally after the detach.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all
NODE=/usr/bin/node
[ -x "$NODE" ] || skip "/usr/bin/node is not installed (Debian package nodejs)"

cat >"$W/grow.js" <<'JS'
const readline = require('readline');
console.log(`ready pid=${process.pid}`);
const keep = [];
function leakBuffers(n, size) {
  for (let i = 0; i < n; i++) keep.push(Buffer.allocUnsafeSlow(size));
  return keep.length;
}
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const c = line.split(' ');
  if (c[0] === 'grow') {
    const t = leakBuffers(+c[1], +c[2]);
    const ok = keep.every((b) => b.length === +c[2]);
    console.log(`done grow ${t} ok ${ok}`);
  } else if (c[0] === 'quit') {
    console.log('done quit');
    process.exit(0);
  }
});
JS

db=$W/node.db
# node writes its V8 log files into its working directory: $W
start_cmd node env -C "$W" "$NODE" --perf-basic-prof --interpreted-frames-native-stack "$W/grow.js"
wait_target_ready
pid=$TPID
# the main thread waits in epoll_pwait (281) or epoll_wait (232)
wait_for 20 'case "$(thread_syscall "$pid" "$pid")" in 281|232) true ;; *) false ;; esac' ||
	fail "node is not waiting in epoll (syscall now: $(thread_syscall "$pid" "$pid"))"
start_ha -q -v --block -i 65536 -s 3600 -o "$db" "$pid"
wait_ready "$pid" node
send "$TFD" "grow 2000 100000"
wait_line "$TOUT" '^done grow 2000 ok true$' 60
detach_by_signal INT "$pid"
send "$TFD" quit
wait_line "$TOUT" '^done quit$'
wait_exit "$pid" 20 && [ "$RC" = 0 ] || fail "node did not exit cleanly ($RC)"

"$HA_BUILDDIR/src/heapdiff" --bytes "$db" last >"$W/live" || fail "heapdiff failed"
sed 's/^/    /' "$W/live" | head -n 40
# per stack: its bytes, whether it names leakBuffers from the perf map, and
# whether it reaches node::Start then libc's start
read -r total good depth < <(awk '
	function flush() { if (row) { total += bytes; if (jit && start) { good += bytes; if (n > depth) depth = n } } }
	/^ *[-+]?[0-9]+ +[-+]?[0-9]+ +stack [0-9]+$/ { flush(); row = 1; bytes = $1; jit = 0; start = 0; sawnode = 0; n = 0; next }
	row && match($0, /^ +/) && RLENGTH >= 20 {
		n++
		if ($0 ~ /JS:[*~^+]?leakBuffers .*grow\.js:[0-9]+.*\[jit\]$/) jit = 1
		if ($0 ~ /node::Start\(int, char\*\*\)/) sawnode = 1
		if (sawnode && $0 ~ /__libc_start_call_main/) start = 1
	}
	END { flush(); printf "%d %d %d\n", total, good, depth }
' "$W/live")
log "live bytes $total, in stacks through JS:leakBuffers [jit] to node::Start: $good; deepest $depth frames"
[ "$total" -gt 100000000 ] || fail "only $total live bytes estimated, expected about 200 MB"
awk -v g="$good" -v t="$total" 'BEGIN { exit !(g >= 0.9 * t) }' ||
	fail "only $good of $total live bytes are in stacks naming JS leakBuffers [jit] and reaching node::Start"
fpn=$(sed -n 's/^heapattach: \([0-9]*\) of \([0-9]*\) frames found by frame pointer.*/\1 \2/p' "$HA_ERR")
jit=$(sed -n 's/^heapattach: \([0-9]*\) frames of new callstacks named by the perf map.*/\1/p' "$HA_ERR")
log "frames found by frame pointer (of all): ${fpn:-none}; named by the perf map: ${jit:-none}"
[ -n "$fpn" ] && [ -n "$jit" ] || fail "the detach summary lacks the frame-pointer or the perf-map count"
echo ok
