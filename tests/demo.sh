#!/bin/bash
# demo.sh -- attach to the bundled leaky "service", profile it for a few
# seconds, detach, and show what was found.  Run through `make demo`.
set -u
B=${HA_BUILDDIR:?run through make demo}
out=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$out"' EXIT

"$B/tests/targets/leaky" >"$out/leaky.out" &
pid=$!
for _ in $(seq 100); do grep -q ready "$out/leaky.out" && break; sleep 0.05; done
echo "demo: leaky service running as pid $pid (leaks 4 KiB per request in remember_request)"
echo "demo: \$ heapattach --duration 3 $pid"
"$B/src/heapattach" --duration 3 "$pid" || exit 1
echo "demo: the service goes on after detach:"
kill -TERM "$pid"
wait "$pid"
cat "$out/leaky.out"
