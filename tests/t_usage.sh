#!/bin/bash
# t_usage: usage errors exit 2 with a message; --help and --version exit 0.
# Runs without root and without a target.
. "$(dirname "$0")/lib.sh"
[ -x "$HA" ] || fail "attacher not built: $HA"

usage_error() {
	run_ha "$@"
	[ "$HA_RC" = 2 ] || fail "heapattach $*: expected exit 2 (usage error), got $HA_RC"
	[ -s "$HA_ERR" ] || fail "heapattach $*: no message on stderr"
}
usage_error
usage_error --no-such-option 1
usage_error notapid
usage_error 1 2
usage_error --duration
usage_error --duration abc 1
usage_error --timeout abc 1
usage_error --nice 40 1
usage_error --nice -1 1
usage_error --rings 3 1
usage_error --rings 32 1
usage_error --ring-size 65536 --rings 4 1
grep -q "cannot be split into 4 rings" "$HA_ERR" || fail "--ring-size 64K --rings 4: $(cat "$HA_ERR")"
[ "$(wc -l <"$HA_ERR")" = 1 ] || fail "--ring-size 64K --rings 4: more than one line"

for o in -h --help; do
	run_ha "$o"
	[ "$HA_RC" = 0 ] || fail "heapattach $o exited $HA_RC"
	grep -qi 'usage' "$HA_OUT" || fail "heapattach $o printed no usage on stdout"
	for opt in --duration --verbose --agent --timeout --nice --rings; do
		grep -q -- "$opt" "$HA_OUT" || fail "heapattach $o does not mention $opt"
	done
done

version=$(sed -n 's/^PACKAGE_VERSION = //p' "$HA_BUILDDIR/Makefile")
for o in -V --version; do
	run_ha "$o"
	[ "$HA_RC" = 0 ] || fail "heapattach $o exited $HA_RC"
	grep -qF -- "$version" "$HA_OUT" || fail "heapattach $o does not print the version $version"
done
echo "ok"
