#!/bin/bash
# t_attach_signals: signals keep arriving while heapattach attaches and
# detaches (3 rounds): a queued real-time signal (SIGRTMIN, handled with
# SA_RESTART) is sent thousands of times; each one must be delivered exactly
# once -- the injector may delay signals while it holds the thread, but must
# re-deliver every one it sees, never swallow it.
. "$(dirname "$0")/lib.sh"
require_all idle

start_target idle idle
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"

(
	_close_fds
	n=0
	while [ ! -e "$W/stop" ]; do
		kill -s RTMIN "$pid" 2>/dev/null || break
		n=$((n + 1))
		[ $((n % 20)) = 0 ] && sleep 0.002
	done
	echo "$n" >"$W/sent"
) &
sender=$!
_PIDS+=("$sender")
# Signals are flowing (ask until the target has handled some).
wait_for 5 'grep -q "^signals=[1-9]" "$TOUT" || { send "$TFD" signals; false; }' ||
	fail "the target handles no SIGRTMIN"

for r in 1 2 3; do
	attach_detach "$pid" 0.2
	check_alive "$pid"
done
touch "$W/stop"
wait "$sender"
sent=$(cat "$W/sent")
[ "${sent:-0}" -gt 100 ] || fail "only ${sent:-0} signals sent"

n=$(grep -c '^signals=' "$TOUT")
send "$TFD" signals
wait_for 10 '[ "$(grep -c "^signals=" "$TOUT")" -gt "$n" ]' || fail "idle did not answer 'signals'"
got=$(grep '^signals=' "$TOUT" | tail -n 1 | sed 's/^signals=//')
log "sent $sent SIGRTMIN, the target handled $got"
[ "$got" = "$sent" ] || fail "sent $sent SIGRTMIN but the target handled $got: signals were lost or duplicated"
idle_check "$pid" "$TFD" "$TOUT" 0
echo "ok: $sent signals, all delivered once"
