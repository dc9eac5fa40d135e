#!/bin/bash
# t_live: heapattach --live on a real target (tests/targets/leaky, which
# leaks 4 KiB a request in remember_request) in a real terminal (tmux,
# send-keys, capture-pane):
#   - the view shows the leak site within a few seconds, and the line of
#     where RssAnon went at the last snapshot (issue 41);
#   - / filters (a filter that matches nothing empties the list, Escape
#     brings the rows back), m marks, c cycles the kind, l sorts by live
#     bytes, s takes a snapshot that lands in the database (reason 'live');
#   - q detaches exactly as SIGINT: exit 0, the detach line and the summary
#     said once the view is gone, the session's last snapshot 'detach';
#   - the target runs on unharmed: its output equals a plain run's;
#   - without a terminal --live refuses with one line, the target untouched.
. "$(dirname "$0")/lib.sh"
require_all leaky
command -v tmux >/dev/null || skip "tmux is not installed (build-aux/setup installs it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
N=20000

# The plain run, for the output to compare with, alongside.
"$TARGETS/leaky" $N >"$W/plain.out" 2>&1 &
plain=$!
_PIDS+=("$plain")

start_cmd leaky "$TARGETS/leaky" $N
pid=$TPID
wait_line "$TOUT" '^ready [0-9]+$'

# ---- no terminal: refused before the target is touched
run_ha --live -o "$W/none.db" "$pid" </dev/null
[ "$HA_RC" = 1 ] || fail "--live without a terminal exited $HA_RC, expected 1"
[ "$(grep -c . "$HA_ERR")" = 1 ] && grep -qx 'heapattach: --live needs a terminal on standard input and output' "$HA_ERR" ||
	fail "--live without a terminal: $(cat "$HA_ERR")"
check_untouched "$pid"

# ---- the view, in tmux
db=$W/live.db
sock=$W/tmux.sock
T=(tmux -S "$sock")
at_exit "tmux -S '$sock' kill-server"
"${T[@]}" new-session -d -s live -x 100 -y 30 \
	"cd '$W' && '$HA' --live -o '$db' $pid 2>'$W/live.err'; echo \"exit=\$?\" >'$W/live.rc'; sleep 600"
pane() { "${T[@]}" capture-pane -p -t live; }
# see SECS REGEX: wait until the pane shows a line matching REGEX.
see() {
	local re=$2
	wait_for "$1" 'pane | grep -Eq -- "$re"' || { pane | sed 's/^/    | /'; fail "the view did not show /$re/ within $1 s"; }
}
gone() { # SECS REGEX: wait until no line matches
	local re=$2
	wait_for "$1" '! pane | grep -Eq -- "$re"' || { pane | sed 's/^/    | /'; fail "the view still shows /$re/ after $1 s"; }
}
key() { "${T[@]}" send-keys -t live "$@"; }

see 10 'remember_request'
log "the leak site is on the screen"
# Where RssAnon went at the last snapshot (issue 41; the first periodic one
# comes 1 s after the attach).
see 10 '^RssAnon [0-9.]+ [KMG]?i?B: live heap [0-9.]+ [KMG]?i?B  free trimmable .*  pinned .*  unexplained '
log "the memory line is on the screen"
pane | sed 's/^/    | /'
# No control character reaches the terminal from the view.
pane | grep -q $'[\x01-\x08\x0b-\x1f]' && fail "control characters on the screen"

key / && key -l zzz_no_such_function && key Enter
gone 5 'remember_request'
key / && key Escape
see 5 'remember_request'
echo "ok: filter"

before=$(q "$db" "SELECT count(*) FROM snapshots WHERE reason = 'live'")
key s
wait_for 10 '[ "$(q "$db" "SELECT count(*) FROM snapshots WHERE reason = '"'live'"'")" -gt "$before" ]' ||
	fail "s took no snapshot"
echo "ok: s took a snapshot"

# c: heap+mmap -> heap -> mmap (leaky maps nothing) -> heap+mmap (no --rss).
key c
see 5 'kind heap  '
see 5 'remember_request'
key c
see 5 'kind mmap  '
gone 5 'remember_request'
key c
see 5 'kind heap\+mmap'
see 5 'remember_request'
echo "ok: c cycles the kinds"
key l
see 5 'sort live bytes'
key g
see 5 'sort growth'
# m: growth from now on, then it grows again.
key m
see 5 'since mark'
see 10 '^ *\+[0-9.]+ [KM]iB .* remember_request'
echo "ok: sort and mark"
key '?'
see 5 '[Hh]elp'
key Escape
see 5 'remember_request'

key q
wait_for 30 '[ -s "$W/live.rc" ]' || { pane | sed 's/^/    | /'; fail "heapattach did not end after q"; }
grep -qx 'exit=0' "$W/live.rc" || fail "heapattach --live exited $(cat "$W/live.rc") after q"
grep -Eq -- "$(re_detached "$pid")" "$W/live.err" || fail "no detach line after the view closed: $(cat "$W/live.err")"
grep -q '^heapattach: [0-9]* samples, ' "$W/live.err" || fail "no summary after the view closed"
[ "$(q "$db" "SELECT reason FROM snapshots ORDER BY id DESC LIMIT 1")" = detach ] || fail "the last snapshot is not 'detach'"
echo "ok: q detached as SIGINT does"

check_alive "$pid"
wait_exit "$pid" 60
wait_exit "$plain" 60
diff <(grep -v '^ready' "$TOUT") <(grep -v '^ready' "$W/plain.out") >"$W/diff" ||
	fail "the target's output differs from a plain run's: $(cat "$W/diff")"
echo "ok: the target's output is a plain run's"
echo ok
