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

usage_error --python bogus 1
grep -q "^heapattach: --python wants all, frames or off, not 'bogus'$" "$HA_ERR" || fail "--python bogus: $(cat "$HA_ERR")"

# An agent not found: one line, exit 1, saying where it was looked for and
# how to say where it is (a copy of the binary, away from the build tree,
# looks in the installed place).  The pid is never looked at.
cp "$HA" "$W/heapattach-copy" || fail "cp $HA"
nopid=$(find_free_pid)
agent_missing() {
	local out
	out=$(env -u HEAPATTACH_AGENT "$@" "$nopid" 2>&1 >/dev/null)
	rc=$?
	[ "$rc" = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "$*: expected exit 1 and one line, got $rc: $out"
	printf '%s\n' "$out"
}
installed=$(strings "$HA" | grep -m1 '^/.*/heapattach_agent\.so$')
if [ -n "$installed" ] && [ -e "$installed" ]; then
	log "an agent is installed at $installed: the copied binary would find it, not checked"
else
	line=$(agent_missing "$W/heapattach-copy")
	[[ $line == "heapattach: agent not found: "*"/heapattach_agent.so: No such file or directory (not installed there: give its path with --agent PATH or HEAPATTACH_AGENT)" ]] ||
		fail "a copied binary: $line"
fi
line=$(agent_missing "$HA" --agent "$W/none.so")
[ "$line" = "heapattach: agent not found: $W/none.so (from --agent): No such file or directory" ] || fail "--agent: $line"
line=$(agent_missing env HEAPATTACH_AGENT="$W/none.so" "$HA")
[ "$line" = "heapattach: agent not found: $W/none.so (from HEAPATTACH_AGENT): No such file or directory" ] ||
	fail "HEAPATTACH_AGENT: $line"
echo "ok: an agent not found says where it was looked for and how to give it"

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
