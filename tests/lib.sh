# tests/lib.sh -- shared helpers for the heapattach test scripts (bash).
#
# Every t_*.sh does:   . "$(dirname "$0")/lib.sh"
# and runs with HA_BUILDDIR and HA_SRCDIR set (tests/run-all does that).
# Exit status of a test: 0 pass, 77 skip (reason on the last line), other: fail.
#
# Conventions:
#  - every process a test starts is recorded and killed in the EXIT trap;
#  - targets read stdin from a fifo the test holds open (fd in $TFD), write
#    stdout to $W/<label>.out and stderr to $W/<label>.err;
#  - no sleeps for synchronisation: wait_for polls a condition, bounded.

set -u
set -o pipefail

: "${HA_BUILDDIR:?HA_BUILDDIR must be set (run the tests with tests/run-all or make check)}"
HA_SRCDIR=${HA_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export HA_BUILDDIR HA_SRCDIR

HA=$HA_BUILDDIR/src/heapattach
AGENT=$HA_BUILDDIR/agent/.libs/heapattach_agent.so
TARGETS=$HA_BUILDDIR/tests/targets
TEST_NAME=$(basename "$0" .sh)
# Tests use the default agent lookup (next to the binary in the build tree)
# unless they pass --agent themselves.
unset HEAPATTACH_AGENT
# No debug info cache (src/symbolize/debugcache.h) unless a test asks for one: every
# session reads the debug files as found, and nothing is written to $HOME.
export HEAPATTACH_CACHE=

# Syscall numbers (x86_64) as shown in /proc/PID/task/TID/syscall.
NR_READ=0
NR_NANOSLEEP=35
NR_FUTEX=202
NR_CLOCK_NANOSLEEP=230

W=$(mktemp -d "${TMPDIR:-/tmp}/ha-$TEST_NAME.XXXXXX") || { echo "mktemp failed"; exit 1; }
chmod 755 "$W"
_PIDS=()        # targets and other helpers: SIGKILLed at exit
_HAPIDS=()      # background heapattach processes: SIGKILLed at exit, after the targets
_NHA=0          # heapattach runs so far (names their output files)
HA_WRAP=()      # command prefix for run_ha (e.g. setpriv ...)
_FDS=()         # write ends of the targets' stdin fifos

log() { printf '# %s\n' "$*"; }

_dump_workdir() {
	local f
	for f in "$W"/*.out "$W"/*.err; do
		[ -f "$f" ] || continue
		echo "---- ${f#"$W"/} (last 15 lines)"
		tail -n 15 "$f" | cut -c1-300
	done
}

# fail MESSAGE: print the message and the outputs collected so far, exit 1.
fail() {
	echo "FAIL: $*"
	_dump_workdir
	echo "FAIL: $*"
	exit 1
}

# skip REASON: exit 77 with the reason as the last line.
skip() {
	echo "skipped: $*"
	exit 77
}

# at_exit COMMAND: run COMMAND (a shell string) when the test ends, whatever
# the outcome (after its processes are killed, before $W goes).
_AT_EXIT=()
at_exit() {
	_AT_EXIT+=("$1")
}

_cleanup() {
	local rc=$? p
	trap - EXIT
	# A bug of ours that heapattach caught and said (never aborting mid-
	# injection): any test whose heapattach said one fails.
	if [ "$rc" -eq 0 ] && grep -s "internal error" "$W"/ha*.err; then
		echo "FAIL: heapattach reported an internal error"
		rc=1
	fi
	for p in "${_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	for p in "${_HAPIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	for p in "${_PIDS[@]}" "${_HAPIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	# The socket directory of a heapattach SIGKILLed before its agent
	# connected (tests that kill it mid-injection do that on purpose) stays
	# in the target's /tmp: the targets are gone now, their pids free for
	# another test's target to take (whose check of "nothing left" would
	# find it).  Only those of this test's targets, on the host's /tmp.
	for p in "${_PIDS[@]}"; do
		[[ $p =~ ^[0-9]+$ ]] && rm -rf /tmp/heapattach-"$p"-* 2>/dev/null
	done
	# A test's own undo steps (at_exit), last registered first.
	for ((p = ${#_AT_EXIT[@]} - 1; p >= 0; p--)); do
		eval "${_AT_EXIT[p]}" 2>/dev/null
	done
	if [ -n "${HA_KEEP_WORKDIR:-}" ]; then
		echo "# work directory kept: $W"
	else
		rm -rf "$W"
	fi
	exit "$rc"
}
trap _cleanup EXIT
trap 'echo "interrupted (SIGINT)"; exit 130' INT
trap 'echo "interrupted (SIGTERM, timed out?)"; exit 143' TERM

# ------------------------------------------------------------ requirements

require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (ptrace of non-child processes)"
}

# The attacher and the agent must have been built: a missing binary is a
# failure, not a skip.
require_ha() {
	[ -x "$HA" ] || fail "attacher not built: $HA"
	[ -f "$AGENT" ] || fail "agent not built: $AGENT"
}

require_target() {
	[ -x "$TARGETS/$1" ] || fail "test target not built: $TARGETS/$1 (make check builds it)"
}

# Common prologue of tests that attach.
require_all() {
	require_root
	require_ha
	local t
	for t in "$@"; do require_target "$t"; done
}

# ------------------------------------------------------------ waiting

# wait_for SECS 'shell condition': poll until the condition holds; 1 on timeout.
# (Its locals have odd names so that they do not hide the caller's variables
# the condition refers to.)
wait_for() {
	local _wf_cond=$2 _wf_i _wf_n
	_wf_n=$(awk -v s="$1" 'BEGIN { printf "%d", s * 50 }')
	for ((_wf_i = 0; _wf_i <= _wf_n; _wf_i++)); do
		eval "$_wf_cond" && return 0
		sleep 0.02
	done
	return 1
}

# wait_line FILE EXTENDED-REGEX [SECS]: wait until FILE has a matching line.
wait_line() {
	local f=$1 re=$2 secs=${3:-10}
	wait_for "$secs" 'grep -Eq -- "$re" "$f" 2>/dev/null' ||
		fail "timed out after ${secs}s waiting for /$re/ in ${f#"$W"/}"
}

# proc_state PID: the state letter from /proc/PID/stat ("" if gone).
proc_state() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) }
	printf '%s' "${s%% *}"
}

# is_alive PID: exists and is neither a zombie nor dead.
is_alive() {
	local s
	s=$(proc_state "$1")
	[ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}

# thread_syscall PID TID: first field of /proc/PID/task/TID/syscall
# (a number, "running", or "" if unreadable).
thread_syscall() {
	local f
	read -r f _ <"/proc/$1/task/$2/syscall" 2>/dev/null || true
	printf '%s' "${f:-}"
}

# wait_syscall PID TID NR [SECS]: wait until the thread is blocked in syscall NR.
wait_syscall() {
	local pid=$1 tid=$2 nr=$3 secs=${4:-10}
	wait_for "$secs" '[ "$(thread_syscall "$pid" "$tid")" = "$nr" ]' ||
		fail "thread $tid of $pid not blocked in syscall $nr after ${secs}s (now: $(thread_syscall "$pid" "$tid"))"
}

# wait_exit PID [SECS]: wait until a child of this shell has exited; its exit
# status in $RC (128+N if killed by signal N).
wait_exit() {
	local pid=$1 secs=${2:-20}
	wait_for "$secs" '! is_alive "$pid"' || fail "process $pid still running after ${secs}s"
	wait "$pid"
	RC=$?
}

# ------------------------------------------------------------ targets

# start_cmd LABEL CMD [ARGS...]: start CMD with stdin from a fifo this shell
# holds open for writing.  Sets TPID (the command's pid), TFD (write end of
# its stdin), TOUT/TERR (its stdout/stderr files).  CMD is exec'ed by the
# background child, so TPID is the command itself (or what it exec's).
start_cmd() {
	local label=$1
	shift
	local fifo=$W/$label.in
	TOUT=$W/$label.out
	TERR=$W/$label.err
	mkfifo "$fifo" || fail "mkfifo $fifo"
	(
		_close_fds
		exec "$@"
	) <"$fifo" >"$TOUT" 2>"$TERR" &
	TPID=$!
	_PIDS+=("$TPID")
	# Opening the write end blocks until the child opened the read end.
	exec {TFD}>"$fifo"
	_FDS+=("$TFD")
	log "started $label: pid $TPID: $*"
}

# start_target LABEL NAME [ARGS...]: start $TARGETS/NAME and wait for its
# "ready pid=N" line (checking N is TPID).
start_target() {
	local label=$1 name=$2
	shift 2
	start_cmd "$label" "$TARGETS/$name" "$@"
	wait_target_ready
}

# wait_target_ready: wait for the "ready pid=N" line of the target started
# last (N must be TPID: whatever wrapper started it exec'ed it).
wait_target_ready() {
	wait_line "$TOUT" '^ready pid=[0-9]+$'
	grep -qx "ready pid=$TPID" "$TOUT" ||
		fail "the ready line names another pid than $TPID: $(grep '^ready' "$TOUT")"
}

# _close_fds: in a child, close the write ends of the targets' stdin fifos
# (otherwise a target would never see EOF while that child lives).
_close_fds() {
	local fd
	for fd in "${_FDS[@]}"; do
		exec {fd}>&-
	done 2>/dev/null
}

# send FD LINE: write one line to a target's stdin.
send() {
	printf '%s\n' "$2" >&"$1" || fail "could not write to fd $1"
}

# close_fd FD: close a target's stdin (EOF for the target).
close_fd() {
	local fd=$1
	exec {fd}>&-
}

# idle_check PID FD OUT EXPECTED: ask an idle/forker-like target whether its
# GOT slot of malloc is patched ("check" -> "hooked=N"); expect EXPECTED.
idle_check() {
	local pid=$1 fd=$2 out=$3 want=$4 before
	before=$(grep -c '^hooked=' "$out")
	send "$fd" check
	wait_for 10 '[ "$(grep -c "^hooked=" "$out")" -gt "$before" ]' ||
		fail "target $pid did not answer 'check'"
	local got
	got=$(grep '^hooked=' "$out" | tail -n 1)
	[ "$got" = "hooked=$want" ] || fail "target $pid reports $got, expected hooked=$want"
	log "target $pid: $got"
}

# ------------------------------------------------------------ "target untouched"

# tracer_free PID: TracerPid is 0 in every /proc/PID/task/*/status.
tracer_free() {
	local bad
	bad=$(grep -H '^TracerPid:' /proc/"$1"/task/*/status 2>/dev/null | grep -v ':[[:space:]]*0$')
	[ -z "$bad" ] && return 0
	echo "$bad" | sed 's/^/  /'
	return 1
}

# agent_maps PID: number of mappings of heapattach_agent.so in the target.
agent_maps() {
	grep -c 'heapattach_agent\.so' "/proc/$1/maps" 2>/dev/null || true
}

# agent_loads PID: number of times the agent is loaded (its offset-0 mappings).
agent_loads() {
	awk '$6 ~ /heapattach_agent\.so$/ && $3 == "00000000" { n++ } END { print n + 0 }' "/proc/$1/maps"
}

# check_alive PID: still running, no tracer left.
check_alive() {
	is_alive "$1" || fail "target $1 is not running any more (state '$(proc_state "$1")')"
	tracer_free "$1" || fail "target $1 is still ptrace-attached"
}

# check_untouched PID: alive, no tracer, agent never mapped.
check_untouched() {
	check_alive "$1"
	[ "$(agent_maps "$1")" = 0 ] || fail "the agent was mapped into target $1 although heapattach refused"
	log "target $1 untouched (running, no tracer, agent not mapped)"
}

# ------------------------------------------------------------ heapattach

# run_ha [heapattach args...]: run the attacher in the foreground (killed with
# SIGKILL after 60 s: a hang is a failure, never a clean detach).
# Sets HA_RC, HA_OUT, HA_ERR.
run_ha() {
	_NHA=$((_NHA + 1))
	HA_OUT=$W/ha$_NHA.out
	HA_ERR=$W/ha$_NHA.err
	log "run: heapattach $*"
	(
		_close_fds
		cd "$W" || exit 1   # whatever it writes (a profile database) stays in $W
		exec timeout -s KILL 60 "${HA_WRAP[@]}" "$HA" "$@"
	) >"$HA_OUT" 2>"$HA_ERR"
	HA_RC=$?
	log "heapattach exit $HA_RC; stderr:"
	sed 's/^/    /' "$HA_ERR" | head -n 40
	[ "$HA_RC" != 137 ] || fail "heapattach hung (killed after 60 s): heapattach $*"
}

# start_ha [heapattach args...]: run the attacher in the background with the
# default dispositions of SIGINT/SIGTERM (an async command of a script would
# otherwise inherit SIGINT ignored), under the wrapper command in HA_WRAP if
# any (as run_ha).  Sets HAPID, HA_OUT, HA_ERR.
start_ha() {
	_NHA=$((_NHA + 1))
	HA_OUT=$W/ha$_NHA.out
	HA_ERR=$W/ha$_NHA.err
	(
		_close_fds
		cd "$W" || exit 1
		exec env --default-signal=INT,TERM "${HA_WRAP[@]}" "$HA" "$@"
	) >"$HA_OUT" 2>"$HA_ERR" &
	HAPID=$!
	_HAPIDS+=("$HAPID")
	log "started heapattach $* (pid $HAPID)"
}

# re_attached PID COMM / re_detached PID: the contract's stderr lines.
re_attached() {
	printf '^heapattach: attached to %s \\(%s\\): agent ready in [0-9]+(\\.[0-9]+)? ms$' "$1" "$2"
}
re_detached() {
	printf '^heapattach: detached from %s in [0-9]+(\\.[0-9]+)? ms: malloc=[0-9]+ calloc=[0-9]+ realloc=[0-9]+ slots=[0-9]+$' "$1"
}

comm_of() { cat "/proc/$1/comm"; }

# wait_ready PID COMM [SECS]: wait for the "agent ready" line of the
# background attacher started last.
wait_ready() {
	local secs=${3:-15}
	local re
	re=$(re_attached "$1" "$2")
	wait_for "$secs" 'grep -Eq -- "$re" "$HA_ERR" || ! is_alive "$HAPID"' ||
		fail "no 'agent ready' line from heapattach after ${secs}s"
	grep -Eq -- "$re" "$HA_ERR" || {
		wait "$HAPID"
		fail "heapattach exited ($?) before the agent was ready"
	}
	log "$(grep -E -- "$re" "$HA_ERR")"
}

# check_session ERRFILE PID COMM: exactly one attached and one detached line.
check_session() {
	local err=$1 pid=$2 comm=$3 n
	n=$(grep -Ec -- "$(re_attached "$pid" "$comm")" "$err")
	[ "$n" = 1 ] || fail "expected one 'attached to $pid ($comm): agent ready in X ms' line, found $n"
	n=$(grep -Ec -- "$(re_detached "$pid")" "$err")
	[ "$n" = 1 ] || fail "expected one 'detached from $pid in Y ms: malloc=...' line, found $n"
}

# ha_counter ERRFILE NAME: a counter of the detached line (malloc, free, ...).
ha_counter() {
	sed -n "s/^heapattach: detached from .*[: ]$2=\\([0-9][0-9]*\\).*/\\1/p" "$1" | tail -n 1
}

# attach_detach PID SECS [heapattach options...]: one foreground session with
# --duration SECS; must exit 0 with both lines.
attach_detach() {
	local pid=$1 secs=$2 comm
	shift 2
	comm=$(comm_of "$pid")
	run_ha --duration "$secs" "$@" "$pid"
	[ "$HA_RC" = 0 ] || fail "heapattach --duration $secs $* $pid exited $HA_RC"
	check_session "$HA_ERR" "$pid" "$comm"
}

# detach_by_signal SIG PID: the background attacher gets SIG; it must detach
# cleanly (detached line) and exit 0 within 10 s.
detach_by_signal() {
	local sig=$1 pid=$2
	log "sending SIG$sig to heapattach $HAPID"
	kill -"$sig" "$HAPID" || fail "heapattach $HAPID vanished before SIG$sig"
	wait_for 10 '! is_alive "$HAPID"' || fail "heapattach did not exit within 10 s of SIG$sig"
	wait "$HAPID"
	local rc=$?
	log "heapattach exit $rc; stderr:"
	sed 's/^/    /' "$HA_ERR" | head -n 40
	[ "$rc" = 0 ] || fail "heapattach exited $rc after SIG$sig (expected a clean detach, 0)"
	grep -Eq -- "$(re_detached "$pid")" "$HA_ERR" || fail "no 'detached from $pid' line after SIG$sig"
}

# check_refusal KEYWORD: the last run_ha refused: exit 1, exactly one stderr
# line, starting with "heapattach: ", containing KEYWORD (case-insensitive).
check_refusal() {
	local kw=$1 n
	[ "$HA_RC" = 1 ] || fail "expected exit status 1 (refusal), got $HA_RC"
	n=$(wc -l <"$HA_ERR")
	[ "$n" = 1 ] || fail "expected exactly one line on stderr, got $n"
	grep -q '^heapattach: ' "$HA_ERR" || fail "the refusal does not start with 'heapattach: '"
	grep -qi -- "$kw" "$HA_ERR" || fail "the refusal does not mention '$kw'"
	log "refused as expected: $(cat "$HA_ERR")"
}

# find_free_pid: a pid that no process or thread uses right now.
find_free_pid() {
	local max p
	max=$(cat /proc/sys/kernel/pid_max)
	for ((p = max - 1; p > 300; p--)); do
		[ -e "/proc/$p" ] || { echo "$p"; return 0; }
	done
	return 1
}

# detach_by_signal_test SIG: the body of t_detach_sigint / t_detach_sigterm.
detach_by_signal_test() {
	local sig=$1 pid
	start_target idle idle
	pid=$TPID
	wait_syscall "$pid" "$pid" "$NR_READ"
	start_ha "$pid"
	wait_ready "$pid" idle
	idle_check "$pid" "$TFD" "$TOUT" 1
	detach_by_signal "$sig" "$pid"
	check_alive "$pid"
	idle_check "$pid" "$TFD" "$TOUT" 0
	send "$TFD" "still here"
	wait_line "$TOUT" '^echo still here$' 5
	close_fd "$TFD"
	wait_exit "$pid" 10
	[ "$RC" = 0 ] || fail "idle exited $RC"
	grep -qx bye "$TOUT" || fail "idle did not finish normally"
	echo "ok: SIG$sig detached cleanly"
}
