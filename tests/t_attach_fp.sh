#!/bin/bash
# t_attach_fp: a tight floating-point loop (SSE2/AVX/x87 state in registers,
# non-default rounding modes) must compute exactly the same result (%a) with
# several attach/detach rounds during its run as in a plain run.
. "$(dirname "$0")/lib.sh"
require_all fp_loop

ITERS=600000000   # ~2.7 s on the 2-core reference VM, when idle
start_target plain fp_loop "$ITERS"
plain=$TPID plain_out=$TOUT
start_target fp fp_loop "$ITERS"
pid=$TPID

rounds=0 tries=0
while [ $rounds -lt 5 ] && [ $tries -lt 10 ] && is_alive "$pid"; do
	tries=$((tries + 1))
	run_ha --duration 0.2 "$pid"
	if grep -Eq -- "$(re_attached "$pid" fp_loop)" "$HA_ERR"; then
		[ "$HA_RC" = 0 ] || fail "heapattach exited $HA_RC"
		rounds=$((rounds + 1))
	elif is_alive "$pid"; then
		fail "heapattach did not attach to the running fp_loop (exit $HA_RC)"
	fi
done
[ $rounds -ge 3 ] || fail "only $rounds attach rounds while fp_loop ran (make ITERS larger)"
# (It may have finished meanwhile: its exit status and result say whether
# the rounds harmed it.)
log "$rounds attach/detach rounds done"

wait_exit "$plain" 60
[ "$RC" = 0 ] || fail "plain fp_loop exited $RC"
wait_exit "$pid" 60
[ "$RC" = 0 ] || fail "attached fp_loop exited $RC"
want=$(grep '^result ' "$plain_out")
got=$(grep '^result ' "$TOUT")
[ -n "$want" ] || fail "plain run printed no result"
log "plain:    $want"
log "attached: $got"
[ "$want" = "$got" ] || fail "the floating-point result changed after attach/detach"
echo "ok: same result after $rounds attach/detach rounds ($(grep '^avx=' "$TOUT"))"
