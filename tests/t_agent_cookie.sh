#!/bin/bash
# t_agent_cookie: the agent maps the ring of a peer that knows the
# session's cookie only (ha_init_args.cookie, carried back in CONFIG):
# tests/cookie_check plays the attacher with the attacher's own session
# code against the real agent loaded in a child, and sends CONFIG with
# another cookie (refused, named, nothing mapped), the same with
# HA_INIT_PEER_OUTSIDE (the pid-0 peer check of a target in a pid
# namespace below ours, where the cookie is what tells the attacher from
# any other process outside), then the right one (READY, detach).
. "$(dirname "$0")/lib.sh"
require_root
[ -x "$HA_BUILDDIR/tests/cookie_check" ] || fail "tests/cookie_check is not built"
[ -f "$AGENT" ] || fail "no agent at $AGENT"
"$HA_BUILDDIR/tests/cookie_check" "$AGENT" >"$W/out" 2>&1
rc=$?
cat "$W/out"
[ "$rc" = 0 ] || fail "cookie_check exited $rc"
grep -q '^ok: ' "$W/out" || fail "cookie_check printed no ok line"
