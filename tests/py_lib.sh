# tests/py_lib.sh -- the CPythons the t_py_*.sh tests read (after lib.sh):
# the newest pyenv build of each of 3.8-3.13 (under $PYENV_ROOT, else
# `pyenv root`, else ~/.pyenv: builds with their internal headers, as
# build-aux/setup's pyenv makes them) and Debian's /usr/bin/python3.11 (a
# static executable that exports _PyRuntime).
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
