#!/bin/bash
# t_live_view: heapattach --live's view (src/live/live_view.c) in a real
# terminal, tmux, on tests/live_demo's made-up session (its rows are listed
# at the top of tests/live_demo.c), built with ASan and UBSan:
#  - at 80x24: the header (target, gauges with sparklines, sampling, sort,
#    kind, mark), the rows; every key: g/l/r sort (label and order), c
#    cycles the kinds (resident only with --rss), m counts growth from now
#    on, / filters (Backspace edits, Enter applies, Escape cancels and
#    clears), ? shows the help and any key closes it, the arrows and vi's
#    k (up) and j (down) move the selection, k leaving the kind as it was,
#    and Enter folds and unfolds its stack, s says a snapshot was
#    asked for, q and Ctrl-C exit 0 with the terminal as it was;
#  - f: functions; intern_key, the helper no call path of it shows (through
#    operator new, folded away), tops them with its flat and cumulative
#    growth and the call paths through it; the filter; Enter shows its
#    callers; f goes back;
#  - a resize to 120x40 is followed;
#  - hostile names (escape sequences, bell, newlines, invalid UTF-8, C1,
#    bidi overrides) reach the terminal as '?', never as control characters;
#    long names are cut to the width; double-width ones are kept in UTF-8;
#  - NO_COLOR=1 in a C locale: no colour, ASCII sparklines, the same rows;
#    TERM=dumb: plain text, the same rows and keys;
#  - not a terminal: one line, exit 1;
#  - the CPU of a refresh with 10,000 rows (printed; a loose bound).
. "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null 2>&1 || skip "tmux is not installed (build-aux/setup installs it)"
DEMO_SAN=$HA_BUILDDIR/tests/live_demo_san
DEMO=$HA_BUILDDIR/tests/live_demo
[ -x "$DEMO_SAN" ] && [ -x "$DEMO" ] || fail "tests/live_demo and live_demo_san are not built (make check builds them)"
UTF8=C.UTF-8
locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$' || skip "no C.UTF-8 locale"

unset TMUX
SOCK=$W/tmux.sock
tm() { tmux -u -S "$SOCK" -f /dev/null "$@"; }
at_exit "tmux -S '$SOCK' kill-server"
# An SGR sequence that sets a colour (as tmux's capture-pane -e writes them).
COLOUR=$'\e\\[([0-9]+;)*(3[0-7]|4[0-7]|9[0-7]|10[0-7]|38;|48;)[;m]'
export ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# start_view NAME COLS ROWS ENV-AND-COMMAND...: a tmux session whose one
# pane runs the command (through env), then records its exit status, the
# terminal's modes before and after, and stays open.
start_view() {
	local name=$1 cols=$2 rows=$3
	shift 3
	tm new-session -d -s "$name" -x "$cols" -y "$rows" \
		"stty -g >$W/$name.stty0; env $* 2>$W/$name.err; echo \$? >$W/$name.rc; stty -g >$W/$name.stty1; echo 'view closed'; exec sleep 600" ||
		fail "tmux new-session failed"
}
screen() { tm capture-pane -p -t "$1"; }
# The screen with its attributes (SGR sequences, as tmux writes them).
screen_attr() { tm capture-pane -p -e -t "$1"; }
keys() {
	local name=$1
	shift
	tm send-keys -t "$name" "$@"
	sleep 0.15
}
# wait_screen NAME EXTENDED-REGEX [SECS]
# (wait_for evals its condition in its own frame: the arguments are passed
# in variables.)
wait_screen() {
	_n=$1 _re=$2
	wait_for "${3:-10}" 'screen "$_n" | grep -Eq -- "$_re"' ||
		fail "timed out waiting for /$2/ on the screen of $1; it shows:
$(screen "$1")"
}
# gone NAME EXTENDED-REGEX: wait until no line matches.
wait_gone() {
	_n=$1 _re=$2
	wait_for "${3:-10}" '! screen "$_n" | grep -Eq -- "$_re"' ||
		fail "/$2/ still on the screen of $1:
$(screen "$1")"
}
# The body's rows: the lines that start with a growth figure.
rows() { screen "$1" | grep -E '^[ >][ +-]*[0-9][0-9.]* (B|KiB|MiB|GiB) '; }
# The leaf function of the first row.
top_fn() { rows "$1" | head -n 1 | grep -oE '(static_cache|leak_fast|mmap_arena|rss_pages|shrinker|late_symbols|intern_key|worker_[0-9]+)'; }
wait_top() {
	_n=$1 _fn=$2
	wait_for "${3:-10}" '[ "$(top_fn "$_n")" = "$_fn" ]' ||
		fail "the first row of $1 is '$(top_fn "$1")', expected $2; the screen:
$(screen "$1")"
}
# wait_closed NAME [plain]: the program has exited 0, its terminal restored
# (plain output leaves its last screen on the terminal: it has no other).
wait_closed() {
	_n=$1
	wait_for 10 '[ -s "$W/$_n.rc" ]' || fail "$1 did not exit; the screen:
$(screen "$1")"
	[ "$(cat "$W/$1.rc")" = 0 ] || fail "$1 exited $(cat "$W/$1.rc"): $(cat "$W/$1.err")"
	cmp -s "$W/$1.stty0" "$W/$1.stty1" || fail "$1 left the terminal modes changed: $(cat "$W/$1.stty0") -> $(cat "$W/$1.stty1")"
	wait_screen "$1" '^view closed'
	[ "${2:-}" = plain ] || ! screen "$1" | grep -q 'heapattach --live' ||
		fail "$1: the view is still on the screen after exit"
	[ "$(tm display -p -t "$1" '#{alternate_on} #{cursor_flag}')" = "0 1" ] ||
		fail "$1: alternate screen / cursor after exit: $(tm display -p -t "$1" '#{alternate_on} #{cursor_flag}')"
}
# no_controls NAME: what tmux shows holds no control character (a control
# character that reached the terminal would have been obeyed, not shown; one
# that was shown would be a bug of the capture) and no C1 code or bidi override.
no_controls() {
	local s
	s=$(screen "$1")
	! printf '%s' "$s" | LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' || fail "$1: a control character on screen"
	! printf '%s' "$s" | LC_ALL=C grep -qE $'\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]' ||
		fail "$1: a C1 code or bidi control on screen"
	case $(tm display -p -t "$1" '#{pane_title}') in
	*title*) fail "$1: a name's OSC sequence set the pane title" ;;
	esac
}

# ------------------------------------------------------------ not a terminal
"$DEMO_SAN" </dev/null >"$W/nottty.out" 2>"$W/nottty.err"
rc=$?
[ $rc = 1 ] || fail "stdin not a terminal: exit $rc, expected 1"
[ "$(wc -l <"$W/nottty.err")" = 1 ] && grep -q 'needs a terminal: standard input is not one' "$W/nottty.err" ||
	fail "stdin not a terminal: $(cat "$W/nottty.err")"
start_view pipe 80 24 "$DEMO_SAN >$W/pipe.out"
wait_for 10 '[ -s "$W/pipe.rc" ]' || fail "stdout not a terminal: no exit"
[ "$(cat "$W/pipe.rc")" = 1 ] && grep -q 'standard output is not one' "$W/pipe.err" && [ ! -s "$W/pipe.out" ] ||
	fail "stdout not a terminal: exit $(cat "$W/pipe.rc"): $(cat "$W/pipe.err")"
log "not a terminal: refused with one line"

# ------------------------------------------------------------ 80x24, UTF-8, colours, --rss
start_view v 80 24 LC_ALL=$UTF8 TERM=screen "$DEMO_SAN" -r
wait_screen v '^heapattach --live  pid [0-9]+ demo\?\[7m  attached [0-9]+s'
wait_screen v '^heap +[0-9.]+ (KiB|MiB|GiB) [▁▂▃▄▅▆▇█]+ +mmap +[0-9.]+ (KiB|MiB|GiB) [▁▂▃▄▅▆▇█]+'
wait_screen v '^RSS +[0-9.]+ MiB [▁▂▃▄▅▆▇█]+ +resident +[0-9.]+ (KiB|MiB) [▁▂▃▄▅▆▇█]+'
wait_screen v '^samples [0-9.k]+/s  drops [0-9]+  interval 512 KiB  RssAnon'
wait_screen v '^sort growth  kind heap\+mmap  since attach [0-9]+s ago  [0-9]+ rows'
wait_screen v 'GROWTH +OBJECTS +RATE/MIN +LIVE KIND FUNCTION'
wait_screen v 'static_cache  worker\.c:2$'
wait_screen v 'leak_fast  worker\.c:3$'
wait_screen v '^q quit  g/l/r sort  c kind  f functions  m mark  / filter  Enter stack  \? help$'
[ "$(screen v | wc -l)" = 24 ] || fail "not 24 lines at 80x24"
[ "$(rows v | wc -l)" = 17 ] || fail "expected 17 rows at 80x24, saw $(rows v | wc -l)"
wait_top v static_cache # 50 MiB at once; leak_fast gains 1 MiB a second
wait_screen v '\(symbolizing\.\.\.\)$' # id 9, never symbolized
wait_screen v 'late_symbols  worker\.c:11$' # id 10, after 3 frames
screen_attr v | grep -Eq "$COLOUR" || fail "no colour without NO_COLOR (the NO_COLOR check below would prove nothing)"
no_controls v
log "80x24: header, gauges, rows"

# Sorts and the mark.
keys v l
wait_screen v '^sort live bytes  kind heap\+mmap'
wait_top v static_cache
keys v m
wait_screen v 'mark set: growth is counted from now on'
wait_screen v '^sort live bytes  kind heap\+mmap  since mark [0-9]+s ago'
keys v g
wait_screen v '^sort growth  kind heap\+mmap  since mark'
wait_top v leak_fast # static_cache has not grown since the mark
wait_gone v static_cache
growth=$(rows v | head -n 1 | awk '{ print $1 " " $2 }')
case $growth in
"+1.00 MiB" | "+2.00 MiB" | "+3.00 MiB") ;;
*) fail "leak_fast's growth since the mark is '$growth', expected 1-3 MiB" ;;
esac
keys v l
wait_top v static_cache
keys v r
wait_screen v '^sort rate  kind heap\+mmap  since mark'
wait_top v leak_fast
rows v | head -n 1 | grep -qE '^ +\+[0-9.]+ MiB +\+[0-9]+ +\+[0-9.]+ MiB ' || fail "leak_fast's rate: $(rows v | head -n 1)"
log "g, l, r, m: sort labels and orders, growth from the mark"

# Kinds: heap, mmap, resident (--rss), back to heap+mmap.
keys v g c
wait_screen v '^sort growth  kind heap  since'
wait_top v leak_fast
! screen v | grep -q 'mmap_arena' || fail "kind heap shows an mmap row"
wait_screen v 'GROWTH +OBJECTS +RATE/MIN +LIVE FUNCTION' # no kind column for one kind
keys v c
wait_screen v '^sort growth  kind mmap  since'
wait_top v mmap_arena
keys v c
wait_screen v '^sort growth  kind resident  since'
wait_top v rss_pages
keys v c
wait_screen v '^sort growth  kind heap\+mmap  since'
wait_top v leak_fast
log "c: heap, mmap, resident, heap+mmap"

# The filter.
keys v /
wait_screen v '^filter: ?$' # (tmux drops trailing blanks)
keys v w o r k e r _ 0 0 0 2 x BSpace
wait_screen v '^filter: worker_0002$'
keys v Enter
wait_screen v '^sort growth  kind heap\+mmap  since mark [0-9]+s ago  [0-9] rows?  filter worker_0002$'
n=$(rows v | wc -l)
[ "$n" -ge 1 ] && [ "$(rows v | grep -c 'worker_0002')" = "$n" ] || fail "the filter kept other rows: $(rows v)"
keys v Escape
wait_gone v 'filter worker_0002'
wait_for 5 '[ "$(rows v | wc -l)" = 17 ]' || fail "Escape did not clear the filter"
wait_screen v 'filter cleared'
keys v / l e a k
wait_screen v '^filter: leak$'
keys v Escape # cancels the prompt: no filter
wait_gone v '^filter: '
! screen v | grep -q ' filter leak' || fail "Escape in the prompt applied the filter"
keys v / D E M O _ S E R V I C E Enter # the module, whatever the case
wait_screen v 'filter DEMO_SERVICE$'
[ "$(rows v | wc -l)" = 17 ] || fail "a module filter (case insensitive) lost rows"
keys v / n o _ s u c h Enter
wait_screen v 'no row matches the filter'
keys v / Enter # an empty filter: none
wait_for 5 '[ "$(rows v | wc -l)" = 17 ]' || fail "an empty filter did not clear it"
log "/: typing, Backspace, Enter, Escape (prompt and screen), module and case, no match"

# Help.
keys v '?'
wait_screen v 'heapattach --live: keys'
wait_screen v 'press any key'
wait_screen v '│ f +functions, not call paths \(f again: back\): flat, what +│'
wait_screen v '│ c +next kind: heap\+mmap, heap, mmap, resident \(--rss\) +│'
wait_screen v '│ Up Down +move the selection \(also k j, and Ctrl-P Ctrl-N\) +│'
keys v c # closes the help, and only that
wait_gone v 'press any key'
screen v | grep -q '^sort growth  kind heap+mmap' || fail "the key that closed the help was acted on"
log "?: help shown, closed by a key"

# Selection and stacks.
keys v Home Enter
wait_screen v '^    #0  leak_fast  src/worker\.c:3  \[demo_service\]$'
wait_screen v '^    #1  (event_loop|serve|main|dispatch|handle_request)  src/service\.c:1[0-9]0  \[demo_service\]$'
keys v Enter
wait_gone v '^    #0  '
keys v Down Enter
wait_screen v '^    #0  mmap_arena  src/worker\.c:4'
keys v Enter Up j Up space
wait_screen v '^    #0  leak_fast  '
keys v space
wait_gone v '^    #0  '
# vi's k and j: from mmap_arena (the second row) k goes up to leak_fast, j
# down again; the kind stays.
keys v Down Enter
wait_screen v '^    #0  mmap_arena  src/worker\.c:4'
keys v Enter k space
wait_screen v '^    #0  leak_fast  '
screen v | grep -q '^sort growth  kind heap+mmap' || fail "k changed the kind: $(screen v | grep '^sort')"
keys v space j space
wait_screen v '^    #0  mmap_arena  src/worker\.c:4'
keys v Enter
wait_gone v '^    #0  '
log "selection: arrows, k and j; Enter and space expand and fold the stack"

# Hostile names.
keys v / e v i l Enter Home Enter
wait_screen v '^    #0  evil\?\[2J\?\[31mred\?bell\?newline\?cr\?x  /tmp/\?\]0;title\?x\.c:5  \[\?\[5mlib\.so\]$'
wait_screen v '^    #1  \(inlined\) caller\?\[H\?\[2Jwipe  ok\.c:6'
wait_screen v '^heapattach --live' # nothing cleared the screen
no_controls v
keys v / b a d Enter Home Enter
wait_screen v '^    #0  bad\?\? utf8\?31m c1 \?\? overlong  b\?1m\.c:7'
no_controls v
keys v / w i d e Enter Home Enter
wait_screen v '^    #0  wide_函数_e\?_\?desrever  w\.c:8'
no_controls v
keys v / v e r y _ l o n g Enter Home Enter
wait_screen v '^    #0  (very_long_function_name_)+very_long_fun.*…$'
wait_screen v '^    #1  '
[ "$(screen v | LC_ALL=$UTF8 wc -L)" -le 80 ] || fail "a line wider than 80 columns"
no_controls v
keys v Enter Escape # fold it, clear the filter
wait_gone v '^    #0  '
log "hostile names: replaced, cut, wide kept"

# Functions.  Each call path of intern_key grows as little as a worker's,
# and none is near the top; together they grow several times faster than
# leak_fast.
keys v g / i n t e r n _ k e y Enter
wait_screen v 'filter intern_key$'
[ "$(rows v | wc -l)" = 17 ] && [ "$(rows v | grep -c ' intern_key  intern\.c:42$')" = 17 ] ||
	fail "intern_key's call paths (operator new folded away) do not fill the screen: $(rows v)"
keys v Escape
wait_for 5 '[ "$(rows v | wc -l)" = 17 ]' || fail "the filter was not cleared"
! rows v | head -n 3 | grep -q intern_key || fail "an intern_key call path is in the first three: $(rows v)"
keys v f
wait_screen v '^sort growth  kind heap\+mmap  since mark [0-9]+s ago  [0-9]+ functions$'
wait_screen v '^    GROWTH       CUM       LIVE       CUM PATHS FUNCTION  FILE$'
wait_screen v '^q quit  g/l/r sort  c kind  f paths  m mark  / filter  Enter callers  \? help$'
wait_top v intern_key
# flat = cum (it calls nothing that allocates), and 165 paths through it
# have grown (every 8th of the 2000 rows, less those that only stay live).
rows v | head -n 1 | awk '!($1 $2 == $3 $4 && $9 == 165 && $10 == "intern_key" && $11 == "intern.c") { exit 1 }' ||
	fail "intern_key's row: $(rows v | head -n 1)"
rows v | sed -n 2p | grep -Eq '^ +\+[0-9.]+ MiB +\+[0-9.]+ MiB +[0-9.]+ MiB +[0-9.]+ MiB +1 leak_fast  worker\.c$' ||
	fail "leak_fast is not second, with one path: $(rows v | sed -n 2p)"
# Its callers, each with its share.
keys v Home Enter
wait_for 5 '[ "$(screen v | grep -cE "^ +[0-9]+% +\+[0-9.]+ MiB +[0-9]+ paths  <- (parse_header|parse_cookie|load_route)  parse\.c$")" = 3 ]' ||
	fail "intern_key's three callers are not shown: $(screen v)"
keys v Enter
wait_gone v ' <- '
keys v Down Enter # leak_fast: one path, from event_loop
wait_screen v '^ +100% +\+[0-9.]+ MiB +1 path   <- event_loop  service\.c$'
keys v Enter
# The filter applies to a function's name, file and module: parse_header
# and parse_cookie by name, load_route by its file; none allocates itself.
keys v / p a r s e Enter
wait_screen v 'since mark [0-9]+s ago  3 functions  filter parse$'
[ "$(rows v | grep -cE '^ +0 B +\+[0-9.]+ MiB +0 B +[0-9.]+ MiB +[0-9]+ (parse_header|parse_cookie|load_route)  parse\.c$')" = 3 ] ||
	fail "the filtered functions: $(rows v)"
keys v Escape l
wait_screen v '^sort live bytes  kind heap\+mmap  since mark [0-9]+s ago  [0-9]+ functions$'
keys v g f
wait_screen v '^sort growth  kind heap\+mmap  since mark [0-9]+s ago  [0-9]+ rows$'
wait_screen v 'FUNCTION \(leaf\)  FILE:LINE$'
wait_top v leak_fast
log "f: functions, intern_key on top with flat, cum and paths; its callers; the filter; back to call paths"

# Snapshot, resize.
keys v s
wait_screen v '^snapshot requested'
tm resize-window -t v -x 120 -y 40
wait_for 5 '[ "$(screen v | wc -l)" = 40 ] && [ "$(rows v | wc -l)" = 33 ]' ||
	fail "after the resize to 120x40: $(screen v | wc -l) lines, $(rows v | wc -l) rows"
wait_screen v '^heapattach --live .{50,} \? help  q quit$'
wait_screen v '^q quit  g/l/r sort  c kind  f functions  m mark  s snapshot  / filter  Enter stack  \? help$'
screen v | head -n 1 | awk 'length($0) != 120 { exit 1 }' || fail "the title line does not reach column 120"
log "s: message; resize to 120x40 followed"

keys v q
wait_closed v
[ ! -s "$W/v.err" ] || fail "the sanitizers or the view said: $(head -n 20 "$W/v.err")"
log "q: exit 0, terminal restored, no sanitizer report"

# ------------------------------------------------------------ NO_COLOR, C locale, no --rss
# (SIGWINCH blocked and read from a signalfd, as heapattach does, and no
# refresh for a minute: a resize must still be followed at once.)
start_view nc 80 24 NO_COLOR=1 LC_ALL=C TERM=screen "$DEMO_SAN" -w -i 60000
wait_screen nc 'static_cache  worker\.c:2$'
tm resize-window -t nc -x 100 -y 30
wait_for 5 '[ "$(screen nc | wc -l)" = 30 ] && [ "$(rows nc | wc -l)" = 23 ]' ||
	fail "nc: after the resize to 100x30: $(screen nc | wc -l) lines, $(rows nc | wc -l) rows"
tm resize-window -t nc -x 80 -y 24
wait_for 5 '[ "$(rows nc | wc -l)" = 17 ]' || fail "nc: not back to 17 rows at 80x24"
wait_screen nc '^heap +[0-9.]+ (KiB|MiB|GiB) [_.=#-]+ +mmap'
! screen_attr nc | grep -Eq "$COLOUR" || fail "colours despite NO_COLOR"
! screen nc | grep -q 'resident' || fail "resident memory shown without --rss"
keys nc c c c
wait_screen nc '^sort growth  kind heap\+mmap' # heap, mmap, heap+mmap: no resident
keys nc / w i d e Enter Home Enter
wait_screen nc '^    #0  wide_\?\?_e\?_\?desrever  w\.c:8' # one '?' a character outside ASCII
no_controls nc
keys nc C-c
wait_closed nc
[ ! -s "$W/nc.err" ] || fail "nc: $(head -n 20 "$W/nc.err")"
log "NO_COLOR, C locale: no colour, ASCII, no resident kind; Ctrl-C exits 0"

# ------------------------------------------------------------ TERM=dumb
start_view dumb 80 24 LC_ALL=$UTF8 TERM=dumb "$DEMO_SAN"
wait_screen dumb '^heapattach --live  pid'
wait_screen dumb '^>\+50\.0 MiB +\+1600 .* static_cache  worker\.c:2$'
wait_screen dumb '^heap +[0-9.]+ (KiB|MiB|GiB) [_.=#-]+ +mmap'
[ "$(rows dumb | wc -l)" = 17 ] || fail "TERM=dumb: rows missing: $(screen dumb)"
! screen dumb | LC_ALL=C grep -q $'[\x80-\xff]' || fail "TERM=dumb: not ASCII"
keys dumb l
wait_screen dumb '^sort live bytes'
keys dumb / e v i l Enter
wait_screen dumb 'evil\?\[2J\?\[31mred\?bell'
no_controls dumb
keys dumb q
wait_closed dumb plain
[ ! -s "$W/dumb.err" ] || fail "dumb: $(head -n 20 "$W/dumb.err")"
log "TERM=dumb: plain text, rows and keys"

# ------------------------------------------------------------ cost
start_view cost 80 24 LC_ALL=$UTF8 TERM=screen "$DEMO" -n 10000 -v
wait_screen cost 'static_cache'
sleep 5
keys cost q
wait_closed cost
cpu=$(sed -n 's/.* \([0-9.]*\) ms of CPU a refresh.*/\1/p' "$W/cost.err")
[ -n "$cpu" ] || fail "no figure from live_demo -v: $(cat "$W/cost.err")"
log "$(cat "$W/cost.err")"
awk -v c="$cpu" 'BEGIN { exit !(c < 50) }' || fail "a refresh with 10,000 rows costs $cpu ms of CPU (more than 50)"
echo "ok: the live view under tmux: every key, resize, hostile names, NO_COLOR, TERM=dumb; $cpu ms of CPU a refresh with 10,000 rows"
