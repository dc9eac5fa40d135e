# tests/push_lib.sh -- helpers for the tests of --push (tests/t_push*.sh), on
# top of lib.sh: the loopback receiver (tests/push_receiver.py), what it
# recorded, go tool pprof.

RECEIVER=$HA_SRCDIR/tests/push_receiver.py
command -v python3 >/dev/null || skip "python3 is not installed (the tests' receiver)"

# start_receiver LABEL [push_receiver.py options]: a receiver recording into
# $W/LABEL; sets RDIR, RPORT, RURL (http://127.0.0.1:PORT) and RPID.
start_receiver() {
	RDIR=$W/$1
	shift
	mkdir -p "$RDIR"
	python3 "$RECEIVER" "$RDIR" "$@" >"$RDIR/stdout" 2>"$RDIR/stderr" &
	RPID=$!
	_PIDS+=("$RPID")
	wait_for 10 '[ -s "$RDIR/port" ] || ! is_alive "$RPID"' || fail "the receiver did not start"
	[ -s "$RDIR/port" ] || fail "the receiver exited: $(cat "$RDIR/stderr")"
	RPORT=$(cat "$RDIR/port")
	RURL=http://127.0.0.1:$RPORT
	log "receiver $RDIR on port $RPORT (pid $RPID) $*"
}

# requests [DIR]: how many requests the receiver has recorded.
requests() {
	cat "${1:-$RDIR}/count" 2>/dev/null || echo 0
}

# wait_requests N [SECS] [DIR]: until the receiver has recorded N requests.
wait_requests() {
	local n=$1 dir=${3:-$RDIR}
	wait_for "${2:-20}" '[ "$(requests "$dir")" -ge "$n" ]' ||
		fail "the receiver recorded $(requests "$dir") requests after ${2:-20} s, expected $n"
}

# req N EXPR [DIR]: a python expression over request N's record r (the
# json of push_receiver.py), printed.
req() {
	python3 - "${3:-$RDIR}/req-$1.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(v if not isinstance(v, (dict, list)) else json.dumps(v, sort_keys=True))
PY
}

# require_go: go tool pprof, installed by build-aux/setup (golang-go); with
# its caches in $W.  Skips the test when it is missing.
require_go() {
	command -v go >/dev/null ||
		skip "go is not installed (build-aux/setup installs golang-go): the pushed profiles cannot be read by go tool pprof"
	export GOCACHE=$W/gocache GOPATH=$W/gopath HOME=$W
}

# pprof ARGS...: go tool pprof, which must succeed.
pprof() {
	go tool pprof -symbolize=none "$@" 2>"$W/pprof.err" || fail "go tool pprof $*: $(cat "$W/pprof.err")"
}

# free_port: a loopback TCP port nothing listens on (bound, then closed).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
