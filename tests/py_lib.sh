# tests/py_lib.sh -- the CPythons the t_py_*.sh tests read (after lib.sh):
# the newest pyenv build of each of 3.8-3.13 (under $PYENV_ROOT, else
# `pyenv root`, else ~/.pyenv: builds with their internal headers, as
# build-aux/setup's pyenv makes them) and Debian's /usr/bin/python3.11 (a
# static executable that exports _PyRuntime).
#
# Also: py_attach_app (pyapp's server.py started and attached, the wrap of
# pymalloc awaited), py_snap (a snapshot on SIGUSR1, its id), line_of (the
# line of a "# @name" marker).
#
# py_collect: PY_LIST gets one "LABEL PYTHON PREFIX" line per interpreter
# found (PREFIX: the pyenv build's directory; "-" for Debian's), PY_MISSING
# the labels of those not installed, PY_FOUND their count.
PY_ROOT=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}

# py_prefix MINOR: the newest $PY_ROOT/versions/3.MINOR.N ("" if none).
py_prefix() {
	local v
	v=$(ls "$PY_ROOT/versions" 2>/dev/null | grep -E "^3\.$1\.[0-9]+$" | sort -t. -k3 -n | tail -n 1)
	[ -n "$v" ] && [ -x "$PY_ROOT/versions/$v/bin/python3.$1" ] && echo "$PY_ROOT/versions/$v"
}

py_collect() {
	local m p
	PY_LIST=""
	PY_MISSING=""
	PY_FOUND=0
	for m in 8 9 10 11 12 13; do
		p=$(py_prefix "$m")
		if [ -n "$p" ]; then
			PY_LIST+="3.$m $p/bin/python3.$m $p"$'\n'
			PY_FOUND=$((PY_FOUND + 1))
		else
			PY_MISSING+=" 3.$m"
		fi
	done
	if [ -x /usr/bin/python3.11 ]; then
		PY_LIST+="debian-3.11 /usr/bin/python3.11 -"$'\n'
		PY_FOUND=$((PY_FOUND + 1))
	else
		PY_MISSING+=" debian-3.11"
	fi
	[ -z "$PY_MISSING" ] || echo "# not installed, not checked:$PY_MISSING"
}

# py_snap DB: a snapshot on SIGUSR1 (not a periodic one in between); its
# id in SNAP.
py_snap() {
	local db=$1 before
	before=$(sqlite3 "$db" "SELECT count(*) FROM snapshots WHERE reason = 'signal'" 2>/dev/null || echo 0)
	kill -USR1 "$HAPID" || fail "heapattach $HAPID is gone"
	wait_for 20 '[ "$(sqlite3 "$db" "SELECT count(*) FROM snapshots WHERE reason = '"'signal'"'" 2>/dev/null || echo 0)" -gt "$before" ]' ||
		fail "no snapshot written within 20 s of SIGUSR1"
	SNAP=$(sqlite3 "$db" "SELECT max(id) FROM snapshots WHERE reason = 'signal'")
}

# py_attach_app LABEL PYTHON DB [heapattach options]: tests/targets/pyapp's
# server.py started under PYTHON and attached (-v -q, the options given);
# with --python all, the wrap of pymalloc awaited (the main thread runs
# Python for "small 1").  Sets pid (and what start_cmd and start_ha set).
py_attach_app() {
	local label=$1 py=$2 db=$3
	shift 3
	start_cmd "$label" "$py" -u "$HA_SRCDIR/tests/targets/pyapp/server.py"
	wait_target_ready
	pid=$TPID
	wait_syscall "$pid" "$pid" "$NR_READ"
	start_ha -v -q -s 3600 "$@" -o "$db" "$pid"
	wait_ready "$pid" "$(comm_of "$pid")"
	target_cmd "small 1"
	case " $* " in
	*" --python all "*) wait_for 10 'grep -q "^heapattach: Python frames and small objects on$" "$HA_ERR"' ||
		fail "$label: the wrap of pymalloc is not on: $(grep -i python "$HA_ERR" | tail -n 1)" ;;
	esac
}

# line_of FILE MARK: the line number of "# @MARK" in FILE.
line_of() { grep -n "# @$2\$" "$1" | cut -d: -f1; }
