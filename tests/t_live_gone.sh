#!/bin/bash
# t_live_gone: heapattach --live's view of a target that is gone (issue
# 39), in tmux, on tests/live_demo -g: from the frame the target went on
# the frames say its RSS could not be read and carry the last figure read.
# The view shows that figure, marked "(last read, target gone; read ...
# before)", and the RSS gauge keeps it: never 0, never a shrink the target
# did not make.  Before that frame, no mark.  Under ASan and UBSan.
. "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null 2>&1 || skip "tmux is not installed (build-aux/setup installs it)"
DEMO=$HA_BUILDDIR/tests/live_demo_san
[ -x "$DEMO" ] || fail "tests/live_demo_san is not built (make check builds it)"
locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$' || skip "no C.UTF-8 locale"

unset TMUX
SOCK=$W/tmux.sock
tm() { tmux -u -S "$SOCK" -f /dev/null "$@"; }
at_exit "tmux -S '$SOCK' kill-server"
export ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
screen() { tm capture-pane -p -t gone; }
# The RSS gauge's figure ("RSS      61.2 MiB ▁▂▃...").
gauge() { screen | grep -v 'target gone' | grep -oE '^RSS +[0-9.]+ (B|KiB|MiB|GiB)' | sed -E 's/^RSS +//'; }

# Frames every 300 ms; the target gone from frame 12 on.
tm new-session -d -s gone -x 100 -y 30 \
	"env LC_ALL=C.UTF-8 TERM=xterm-256color $DEMO -n 200 -i 300 -g 12 2>$W/gone.err; echo \$? >$W/gone.rc; exec sleep 600" ||
	fail "tmux new-session failed"
wait_for 10 'screen | grep -q "sort "' || fail "the view did not start: $(screen)"
screen | grep -q 'target gone' && fail "a target not gone yet is marked gone: $(screen)"
before=$(gauge)
[ -n "$before" ] || fail "no RSS gauge on the screen: $(screen)"
log "RSS while the target runs: $before"

wait_for 15 'screen | grep -q "target gone"' || fail "the view never said the target is gone: $(screen)"
sleep 1 # a few more frames of a gone target
line=$(screen | grep -E 'target gone')
log "$line"
grep -Eq '^RSS [0-9.]+ (B|KiB|MiB|GiB) \(last read, target gone; read [0-9]+s before\)' <<<"$line" ||
	fail "the mark of a gone target's RSS: '$line'"
shown=$(sed -E 's/^RSS ([0-9.]+ [KMG]?i?B) .*/\1/' <<<"$line")
after=$(gauge)
[ "$after" = "$shown" ] || fail "the gauge shows $after, the mark $shown"
case $shown in 0*) fail "a gone target's RSS shown as $shown" ;; esac
# The last figure read is the one of frame 11: it stays, frame after frame.
sleep 1
[ "$(gauge)" = "$shown" ] || fail "the RSS of a gone target changed from $shown to $(gauge)"
echo "ok: a gone target's RSS: $shown, marked as the last read, kept frame after frame"

tm send-keys -t gone q
wait_for 10 '[ -s "$W/gone.rc" ]' || fail "q did not close the view"
[ "$(cat "$W/gone.rc")" = 0 ] || fail "live_demo exited $(cat "$W/gone.rc"): $(cat "$W/gone.err")"
echo ok
