#!/bin/bash
# t_live_trim: --live's t key (issue 41): on tests/targets/mem_truth with
# 32 MiB freed in whole pages before the attach, t in a real terminal (tmux)
# predicts what malloc_trim(0) gives back, has the agent call it on its
# thread, and shows predicted against measured in the view's message line:
# the drop of RssAnon within 25% of the prediction (at least 20 MiB
# predicted); the session goes on, q detaches with exit 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all mem_truth
command -v tmux >/dev/null || skip "tmux is not installed (build-aux/setup installs it)"

start_target mt mem_truth
pid=$TPID
target_cmd "holes 16"
target_cmd "empty 32"
wait_syscall "$pid" "$pid" "$NR_READ"
db=$W/live.db
sock=$W/tmux.sock
T=(tmux -S "$sock")
at_exit "tmux -S '$sock' kill-server"
"${T[@]}" new-session -d -s live -x 200 -y 30 \
	"cd '$W' && '$HA' --live -o '$db' $pid 2>'$W/live.err'; echo \"exit=\$?\" >'$W/live.rc'; sleep 600"
pane() { "${T[@]}" capture-pane -p -t live; }
see() {
	local re=$2
	wait_for "$1" 'pane | grep -Eq -- "$re"' || { pane | sed 's/^/    | /'; fail "the view did not show /$re/ within $1 s"; }
}
see 10 '^RssAnon [0-9.]+ [KMG]?i?B: live heap'
"${T[@]}" send-keys -t live t
see 20 '^trim: malloc_trim\(0\) ran [0-9.]+ ms: RssAnon [0-9.]+ MiB -> [0-9.]+ MiB, gave back -?[0-9.]+ MiB \(predicted [0-9.]+ MiB'
line=$(pane | grep -E '^trim: malloc_trim')
log "$line"
read -r gave pred <<<"$(sed -n 's/.*gave back \(-*[0-9.]*\) MiB (predicted \([0-9.]*\) MiB.*/\1 \2/p' <<<"$line")"
awk -v p="$pred" 'BEGIN { exit !(p >= 20) }' || fail "predicted $pred MiB, not the 32 MiB freed in whole pages"
awk -v g="$gave" -v p="$pred" 'BEGIN { exit !(g >= p * 0.75 && g <= p * 1.25) }' ||
	fail "gave back $gave MiB, not within 25% of the $pred MiB predicted"
echo "ok: t: gave back $gave MiB, predicted $pred MiB"
"${T[@]}" send-keys -t live q
wait_for 20 '[ -s "$W/live.rc" ]' || fail "q did not end heapattach"
[ "$(cat "$W/live.rc")" = exit=0 ] || fail "heapattach --live: $(cat "$W/live.rc"): $(cat "$W/live.err")"
check_alive "$pid"
echo ok
