#!/bin/bash
# run-all-timeout: 900
# t_container_oldglibc: a glibc before 2.34 whose program has NOT loaded
# libdl and libpthread (issue 36).  Debian 11's dash (glibc 2.31; NEEDED
# libc.so.6 only) runs in the cached Debian 11 root (container_lib.sh's
# debian_root), read-only, as pid 1 of mount and pid namespaces of its own,
# growing a shell variable by 17 bytes a step.  Before the attach neither
# libdl nor libpthread is in its maps (checked: else this tests nothing).
# heapattach loads both with libc's __libc_dlopen_mode (its -v log says so),
# then the agent through a memfd with the new libdl's dlopen; with every
# allocation sampled (-i 1 --block), the live heap that grew under dash's
# frames between two snapshots is what the variable grew by (within 10%),
# and the call path that holds the most is x's: libc's strdup called from
# dash (its savestr), down to libc's __libc_start_main, holding x's bytes.  After the detach dash goes on (it grows
# the variable again and answers with its length), nothing of ours is left
# in its descriptors or file systems, and a second session reuses the
# dormant agent and the libraries (no second __libc_dlopen_mode).  With
# the root's libdl hidden, __libc_dlopen_mode cannot load it: refused, one
# line naming what was tried, the agent not loaded, dash goes on.
#
# Not tested here: glibc 2.17 (CentOS 7), the oldest the agent is built
# for; there is no root for it on these machines.  That the agent needs
# nothing newer than GLIBC_2.17 is checked by t_agent_imports.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all
require_cmd unshare util-linux
require_cmd sqlite3 sqlite3
debian_root bullseye
DASH=/bin/dash
[ -x "$ROOT$DASH" ] || fail "no $DASH in $ROOT"
needed=$(readelf -dW "$ROOT$DASH" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
[ "$needed" = "libc.so.6 " ] || fail "precondition: the root's dash needs '$needed', not libc.so.6 alone"

# One command a line on stdin: "grow N" appends N x 17 bytes to x and
# answers with x's length.
read -r -d '' GROW <<'SH'
echo "ready pid=$$"
x=
while read -r cmd n; do
	case $cmd in
	grow)
		i=0
		while [ "$i" -lt "$n" ]; do
			x="$x 0123456789abcdef"
			i=$((i + 1))
		done
		echo "done grow $n ${#x}" ;;
	quit)
		echo "done quit"
		exit 0 ;;
	esac
done
SH

# start_dash LABEL [SETUP]: dash in the root, read-only (a bind mount of it in
# the new mount namespace only), with a tmpfs /tmp and its own /proc; SETUP:
# more mounts first.  Checks it has neither libdl nor libpthread.  Sets pid.
start_dash() {
	start_cmd "$1" unshare -m -p -f --propagation private sh -c \
		'r=$1 && mount --bind "$r" "$r" && mount -o remount,bind,ro "$r" && mount -t proc proc "$r/proc" &&
		 mount -t tmpfs tmpfs "$r/tmp" && '"${2:-true}"' && exec chroot "$r" /bin/dash -c "$2"' sh "$ROOT" "$GROW"
	wait_line "$TOUT" '^ready pid=1$' 30
	pid=$(pgrep -P "$TPID" -x dash) || fail "no dash under unshare $TPID: $(cat "$TERR")"
	_PIDS+=("$pid")
	wait_syscall "$pid" "$pid" "$NR_READ"
	[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || fail "precondition: dash is in our mount namespace"
	[ "$(readlink "/proc/$pid/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] || fail "precondition: dash is in our pid namespace"
	grep -q 'libc-2\.31\.so' "/proc/$pid/maps" || fail "precondition: dash does not run on the root's glibc 2.31"
	! grep -Eq 'libdl|libpthread' "/proc/$pid/maps" ||
		fail "precondition: dash has libdl or libpthread loaded already (this would test nothing): $(grep -E 'libdl|libpthread' "/proc/$pid/maps" | head -n 2)"
}

unshare -m -p -f --propagation private true 2>"$W/unshare.err" ||
	skip "unshare -m -p -f not possible here: $(tail -n 1 "$W/unshare.err")"
start_dash dash

db=$W/dash.db
start_ha -v -q -s 3600 -i 1 --block -o "$db" "$pid"
wait_ready "$pid" dash 30
grep -q 'without libdl libpthread: to load first with __libc_dlopen_mode' "$HA_ERR" ||
	fail "heapattach did not plan to load libdl and libpthread: $(grep -i 'libc\|dlsym' "$HA_ERR" | head -n 3)"
for lib in libdl.so.2 libpthread.so.0; do
	grep -q "__libc_dlopen_mode(\"$lib\"" "$HA_ERR" || fail "no __libc_dlopen_mode call for $lib in the log"
	grep -q "__libc_dlopen_mode $lib returned" "$HA_ERR" || fail "the __libc_dlopen_mode call for $lib did not return"
done
grep -q 'dlopen at 0x[0-9a-f]* and dlsym at 0x[0-9a-f]* now from .*libdl-2\.31\.so' "$HA_ERR" || fail "the agent was not loaded with the new libdl's dlopen"
grep -q "agent written into memfd" "$HA_ERR" || fail "the agent did not go through a memfd"
for lib in 'libdl-2\.31\.so' 'libpthread-2\.31\.so'; do
	grep -q "$lib" "/proc/$pid/maps" || fail "$lib is not mapped in dash after the attach"
done

snapshot_now "$db"
N=4000
send "$TFD" "grow $N"
wait_line "$TOUT" "^done grow $N $((N * 17))\$" 120
snapshot_now "$db"
detach_by_signal INT "$pid"
check_session "$HA_ERR" "$pid" dash
check_alive "$pid"
check_nothing_left "$pid"
send "$TFD" "grow 10"
wait_line "$TOUT" "^done grow 10 $((N * 17 + 170))\$" 30

# The growth under dash's frames (dash is stripped: they have no names,
# only their module), and the call path that holds x: its leaf is libc's
# strdup (dash's savestr) or a malloc caller in dash, called from dash.
s1=$(snapshot_id "$db" 1)
s2=$(snapshot_id "$db" 2)
in_dash="m.path LIKE '%/dash'"
read -r b1 _ < <(bucket_sum "$db" live heap "$s1" "$in_dash")
read -r b2 c2 < <(bucket_sum "$db" live heap "$s2" "$in_dash")
truth=$((N * 17))
log "live under dash's frames: $b1 bytes, then $b2 ($c2 blocks); x grew by $truth bytes"
within 10 "$((b2 - b1))" "$truth" ||
	fail "the live heap under dash's frames grew by $((b2 - b1)) bytes, not within 10% of $truth"
read -r top top_bytes < <(sqlite3 -separator ' ' "$db" "SELECT stack_id, CAST(round(live_bytes) AS INTEGER)
	FROM bucket_at WHERE snapshot_id = $s2 AND kind = 'heap' ORDER BY live_bytes DESC LIMIT 1")
path=$(sqlite3 -separator ' ' "$db" "SELECT sf.pos, CASE WHEN f.function = '' THEN '?' ELSE f.function END, m.path
	FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id JOIN modules m ON m.id = f.module_id
	WHERE sf.stack_id = $top ORDER BY sf.pos")
printf '%s\n' "$path" | head -n 4 | sed 's/^/    top stack frame: /'
within 10 "$top_bytes" "$truth" || fail "the top call path holds $top_bytes bytes, not x's $truth (within 10%)"
printf '%s\n' "$path" | awk 'NR == 1 { ok = ($2 == "__strdup" || $2 == "strdup") && $3 ~ /libc-2\.31\.so$/ || $3 ~ /\/dash$/ }
	NR == 2 { ok = ok && $3 ~ /\/dash$/ } END { exit !ok }' ||
	fail "the top call path is not a malloc caller in dash (or libc's strdup called from dash)"
printf '%s\n' "$path" | grep -q '^[0-9]* __libc_start_main .*libc-2\.31\.so$' ||
	fail "the top call path does not go down to libc's __libc_start_main"

# A second session: the agent and the libraries are there, no call for them.
run_ha -v -q --duration 0.2 -o "$db" "$pid"
[ "$HA_RC" = 0 ] || fail "a second session exited $HA_RC: $(tail -n 3 "$HA_ERR")"
! grep -q '__libc_dlopen_mode' "$HA_ERR" || fail "the second session called __libc_dlopen_mode again"
[ "$(agent_loads "$pid")" = 1 ] || fail "the agent is loaded $(agent_loads "$pid") times after a second session"
check_nothing_left "$pid"

send "$TFD" quit
wait_line "$TOUT" '^done quit$' 10
wait_exit "$TPID" 10 && [ "$RC" = 0 ] || fail "unshare (dash) exited $RC: $(cat "$TERR")"

# The same root with its libdl hidden (/dev/null over it, in that
# namespace only): __libc_dlopen_mode loads libpthread but not libdl, and
# heapattach refuses in one line naming what it tried; the agent is not
# loaded and dash goes on.
LIBDL=$(cd "$ROOT" && ls usr/lib/x86_64-linux-gnu/libdl-2.31.so lib/x86_64-linux-gnu/libdl-2.31.so 2>/dev/null | head -n 1)
[ -n "$LIBDL" ] || fail "no libdl-2.31.so in $ROOT"
start_dash nodl "mount --bind /dev/null \"\$r/$LIBDL\""
run_ha "$pid"
check_refusal "__libc_dlopen_mode tried: libdl.so.2 not loaded, libpthread.so.0 loaded (the agent needs dlsym, pthread_create)"
check_untouched "$pid"
send "$TFD" "grow 10"
wait_line "$TOUT" '^done grow 10 170$' 30
echo "ok: Debian 11 dash (glibc 2.31, no libdl, no libpthread): both loaded with __libc_dlopen_mode, growth $((b2 - b1)) of $truth under dash's frames, held by strdup from dash; dash goes on; a reattach loads nothing; libdl hidden: refused in one line"
