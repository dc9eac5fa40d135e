#!/bin/bash
# demo.sh -- attach to the bundled leaky "service", profile it for a few
# seconds, detach, and show what heapdiff finds.  Run through `make demo`.
set -u
B=${HA_BUILDDIR:?run through make demo}
out=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$out"' EXIT

mkfifo "$out/ready"
"$B/tests/targets/leaky" >"$out/ready" &
pid=$!
read -r _ <"$out/ready"   # "ready PID": the service runs
echo "demo: leaky service running as pid $pid (it leaks 4 KiB per request in remember_request)"
echo "demo: \$ heapattach --duration 4 --snapshot-every 1 -o $out/demo.db $pid"
"$B/src/heapattach" --duration 4 --snapshot-every 1 -o "$out/demo.db" "$pid" || exit 1
kill -0 "$pid" && echo "demo: detached; the service goes on running (pid $pid)"
echo
echo "demo: \$ heapdiff --top 3 demo.db first last"
"$B/src/heapdiff" --top 3 "$out/demo.db" first last || exit 1
echo
echo "demo: \$ heapdiff --leaks demo.db     (steady growth over all 5 snapshots)"
"$B/src/heapdiff" --leaks "$out/demo.db" || exit 1
echo
echo "demo: the same from SQL: sqlite3 demo.db 'SELECT ... FROM growth_text ...'"
sqlite3 -header -column "$out/demo.db" "SELECT live_bytes_delta AS bytes, substr(stack, 1, 70) AS stack
	FROM growth_text
	WHERE from_snapshot = (SELECT min(id) FROM snapshots) AND to_snapshot = (SELECT max(id) FROM snapshots)
	ORDER BY live_bytes_delta DESC LIMIT 3"
