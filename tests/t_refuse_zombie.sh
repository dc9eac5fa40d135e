#!/bin/bash
# t_refuse_zombie: a zombie is refused with "zombie"; it stays a zombie and its
# parent is untouched.
. "$(dirname "$0")/lib.sh"
require_all idle

start_target idle idle zombie
parent=$TPID
z=$(sed -n 's/^zombie pid=//p' "$TOUT")
[ -n "$z" ] || fail "idle printed no zombie pid"
wait_for 10 '[ "$(proc_state "$z")" = Z ]' || fail "child $z did not become a zombie ($(proc_state "$z"))"

run_ha "$z"
check_refusal zombie
[ "$(proc_state "$z")" = Z ] || fail "the zombie $z changed state: '$(proc_state "$z")'"
check_untouched "$parent"
idle_check "$parent" "$TFD" "$TOUT" 0
echo "ok"
