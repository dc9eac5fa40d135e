#!/bin/bash
# demo.sh -- the path a newcomer takes, on two bundled programs: attach to
# a leaky "service" for a few seconds and ask what grew since attach and
# what leaks; attach to a "batch job" that grows to a peak, frees
# everything and exits, and find its peak; write the HTML report.  Run
# through `make demo`.
set -u
B=${HA_BUILDDIR:?run through make demo}
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
say() { printf '\ndemo: %s\n' "$*"; }
run() { printf 'demo: $ %s\n' "$*"; "$@"; }

# ---- a service that leaks
mkfifo "$out/ready"
"$B/tests/targets/leaky" >"$out/ready" &
pid=$!
pids+=("$pid")
read -r _ <"$out/ready" # "ready PID": the service runs
say "a leaky service runs as pid $pid (it leaks 4 KiB per request in remember_request)"
cd "$out" || exit 1
run "$B/src/heapattach" --duration 4 -o demo.db "$pid" || exit 1
kill -0 "$pid" && say "detached; the service goes on running (pid $pid)"
say "what grew since the attach (snapshots at attach, 1, 2 and 3 s, and at detach):"
run "$B/src/heapdiff" --top 3 demo.db || exit 1
say "what leaks: callstacks whose live heap grows steadily over the session:"
run "$B/src/heapdiff" --leaks --top 3 demo.db || exit 1

# ---- a batch job that peaks and exits
mkfifo "$out/job.in"
"$B/tests/targets/peak_free" <"$out/job.in" >"$out/job.out" &
job=$!
pids+=("$job")
exec 7>"$out/job.in"
until grep -q '^ready' "$out/job.out" 2>/dev/null; do sleep 0.01; done
say "a batch job runs as pid $job; it will build 100 MiB in grow_to_peak, free it all and exit"
printf 'demo: $ %s\n' "$B/src/heapattach -o job.db $job    (until the job exits)"
"$B/src/heapattach" -o job.db "$job" 2>"$out/job.err" &
hapid=$!
pids+=("$hapid")
until grep -q 'agent ready' "$out/job.err" 2>/dev/null; do kill -0 "$hapid" || { cat "$out/job.err"; exit 1; }; sleep 0.01; done
echo "grow 25600 4096" >&7
echo exit >&7
exec 7>&-
wait "$hapid"
cat "$out/job.err"
say "the job freed everything before it exited, so nothing grew from attach to exit; heapdiff says where to look:"
run "$B/src/heapdiff" --top 3 job.db || exit 1
say "the peak, kept by heapattach as it happened:"
run "$B/src/heapdiff" --peak --top 1 job.db || exit 1

say "one page to look at in a browser: memory over time, flame graphs of the growth, the peak and the live heap, the top call paths and the leak suspects:"
run "$B/src/heapdiff" --format html -o demo.html demo.db || exit 1
html=${HEAPATTACH_DEMO_HTML:-/tmp/heapattach-demo.html}
cp demo.html "$html" && echo "demo: the page is $html (self-contained: open it from the file, or mail it)"

say "the same data from SQL:"
run sqlite3 -header -column demo.db "SELECT printf('%.0f', live_bytes_delta) AS bytes, substr(stack, 1, 60) AS stack
	FROM growth_text
	WHERE from_snapshot = (SELECT min(id) FROM snapshots) AND to_snapshot = (SELECT max(id) FROM snapshots)
	ORDER BY live_bytes_delta DESC LIMIT 3"
