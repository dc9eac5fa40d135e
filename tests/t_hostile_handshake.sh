#!/bin/bash
# t_hostile_handshake: the target's side of the handshake lies.  A fake
# agent (tests/targets/fake_agent.c, built here, injected with --agent)
# answers with wrong magic, versions and pids, messages too short and too
# long, 200 descriptors on every message, an ERROR full of escapes and
# markup without its NUL, a message of an unknown type, counters of 2^64-1,
# an unsolicited ERROR, silence, no connection at all, a forked child
# speaking first, an init that returns nonsense.  For each: heapattach
# exits in bounded time with the status and the one reason expected, holds
# none of the descriptors, prints no control byte; the target runs on,
# untouched, to the end.  And a real agent's state word in the target lying
# about its version and owner is refused with one clean line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
require_all idle

mkdir -p "$W/fake" && chmod 755 "$W/fake"
fake=$W/fake/heapattach_agent.so
gcc -shared -fPIC -O2 -Wall -Wextra -Werror -I"$HA_SRCDIR/src/proto" -o "$fake" \
	"$HA_SRCDIR/tests/targets/fake_agent.c" -lpthread || fail "cannot build the fake agent"
mode=$W/mode
echo "passed descriptor" >"$mode.fd"
chmod 644 "$fake" "$mode.fd"

start_cmd idle env FAKE_AGENT_MODE_FILE="$mode" "$TARGETS/idle"
pid=$TPID
wait_target_ready
wait_syscall "$pid" "$pid" "$NR_READ"

# lie MODE STATUS REGEX: one foreground attach with the fake agent saying
# MODE; heapattach exits STATUS and its stderr has a line matching REGEX.
lie() {
	local m=$1 want=$2 re=$3 t0 t1
	echo "$m" >"$mode"
	t0=$(date +%s)
	run_ha -q --timeout 5 -d 2 --agent "$fake" -o "$W/$m.db" "$pid"
	t1=$(date +%s)
	[ "$HA_RC" = "$want" ] || fail "$m: heapattach exited $HA_RC, expected $want"
	grep -Eq -- "$re" "$HA_ERR" || fail "$m: no line matching /$re/ on heapattach's stderr"
	[ $((t1 - t0)) -le 20 ] || fail "$m: heapattach took $((t1 - t0)) s"
	no_controls "$HA_ERR" "heapattach's stderr ($m)"
	no_controls "$HA_OUT" "heapattach's stdout ($m)"
	is_alive "$pid" || fail "$m: the target died"
	tracer_free "$pid" || fail "$m: the target is still traced"
	send "$TFD" "after $m"
	wait_line "$TOUT" "^echo after $m\$" 5
	log "$m: exit $HA_RC, $(grep -E -- "$re" "$HA_ERR" | head -n 1)"
}

hs='handshake with the agent in [0-9]+ failed: '
lie bad_magic 3 "${hs}malformed message from the agent \\(136 bytes\\)"
lie bad_version 3 "${hs}malformed message from the agent \\(136 bytes\\)"
lie agent_version 3 "${hs}the agent speaks protocol 99, not [0-9]+"
lie wrong_pid 3 "${hs}the agent says it runs in pid 1, not $pid"
lie short 3 "${hs}malformed message from the agent \\(10 bytes\\)"
lie huge 3 "${hs}malformed message from the agent"
lie error_text 3 "${hs}the agent failed: \\?\\[2J\\?\\]52;c;aGVsbG8=\\?<script>alert\\(1\\)</script>&\"'\\?\\?\\?\\?31mred A+ \\(Input/output error\\)$"
lie wrong_type 3 "${hs}unexpected message 999 from the agent"
lie silent 3 "${hs}the agent did not answer in time"
lie no_connect 3 "${hs}.*(did not connect|could not connect)"
lie initret 1 "refused to start \\(code 77\\)"
lie unsolicited_error 3 "^heapattach: the agent failed: \\?\\[2J"
grep -q "lost the agent in $pid" "$HA_ERR" || fail "unsolicited_error: no 'lost the agent' line"
lie ready_huge 0 "^heapattach: detached from $pid in [0-9.]+ ms: malloc=18446744073709551615 calloc=18446744073709551615 realloc=18446744073709551615 slots=18446744073709551615$"
lie child_first 0 "^heapattach: detached from $pid in"

# 200 descriptors on every message: the session goes on, and heapattach
# never holds one of them.
echo fds >"$mode"
start_ha -q --timeout 5 --agent "$fake" -o "$W/fds.db" "$pid"
wait_ready "$pid" idle
held=$(for f in /proc/"$HAPID"/fd/*; do readlink "$f"; done 2>/dev/null | grep -c "$mode.fd")
[ "$held" = 0 ] || fail "heapattach holds $held descriptors the agent passed it"
detach_by_signal INT "$pid"
no_controls "$HA_ERR" "heapattach's stderr (fds)"
log "fds: 200 descriptors with every message, none kept"

check_alive "$pid"
idle_check "$pid" "$TFD" "$TOUT" 0
close_fd "$TFD"
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "idle exited $RC"
grep -qx bye "$TOUT" || fail "idle did not finish normally"

# A loaded "agent" whose state word lies: another version, and busy for a
# live attacher (pid 1) -- each refused in one line, the target untouched.
cat >"$W/state.c" <<'SRC'
#include <stdlib.h>
#include "ha_proto.h"
struct ha_agent_state heapattach_agent_state = { HA_PROTO_MAGIC, HA_PROTO_VERSION, 0, 0, 0 };
__attribute__((constructor)) static void lie(void)
{
	const char *m = getenv("STATE_LIE");
	if (m && m[0] == 'v')
		heapattach_agent_state.version = 0xffffffffu;
	if (m && m[0] == 'b') {
		heapattach_agent_state.state = HA_STATE_ACTIVE;
		heapattach_agent_state.attacher_pid = 1;
	}
}
SRC
mkdir -p "$W/lib" && chmod 755 "$W/lib"
gcc -shared -fPIC -O2 -I"$HA_SRCDIR/src/proto" -o "$W/lib/heapattach_agent.so" "$W/state.c" ||
	fail "cannot build the lying state word"
for m in version busy; do
	start_cmd "state-$m" env STATE_LIE="$m" LD_PRELOAD="$W/lib/heapattach_agent.so" "$TARGETS/idle"
	wait_target_ready
	wait_syscall "$TPID" "$TPID" "$NR_READ"
	run_ha -q --timeout 5 -o "$W/state-$m.db" "$TPID"
	case $m in
	version) check_refusal "another heapattach version loaded (protocol 4294967295" ;;
	busy) check_refusal "already being profiled by heapattach 1" ;;
	esac
	no_controls "$HA_ERR" "heapattach's stderr (state $m)"
	check_alive "$TPID"
done
echo ok
