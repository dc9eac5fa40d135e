#!/bin/bash
# t_agent_cookie: the agent maps the ring of a peer that knows the
# session's cookie only (ha_init_args.cookie, carried back in CONFIG).
# tests/cookie_check plays the attacher with the attacher's own session
# code against the real agent loaded in another process, once in our pid
# namespace and once as pid 1 of a namespace of its own (where the agent's
# SO_PEERCRED check can only want pid 0, which every process outside
# shows: HA_INIT_PEER_OUTSIDE).  CONFIG with another cookie and a pipe for
# the ring is refused by the cookie, before the descriptor is looked at;
# the right one gets READY and a clean detach.  And a stranger's descriptor
# whose close blocks (a lingering TCP socket) is not closed under the
# agent's fork lock: a fork() of the host meanwhile returns at once.
. "$(dirname "$0")/lib.sh"
require_root
[ -x "$HA_BUILDDIR/tests/cookie_check" ] || fail "tests/cookie_check is not built"
[ -f "$AGENT" ] || fail "no agent at $AGENT"
"$HA_BUILDDIR/tests/cookie_check" "$AGENT" >"$W/out" 2>&1
rc=$?
cat "$W/out"
[ "$rc" = 77 ] && skip "$(tail -n 1 "$W/out")"
[ "$rc" = 0 ] || fail "cookie_check exited $rc"
grep -q '^ok: ' "$W/out" || fail "cookie_check printed no ok line"
