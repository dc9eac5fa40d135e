#!/bin/bash
# run-all-timeout: 900
# t_container_bullseye: a real Debian 11 root (glibc 2.31, its own
# python3.9; made once by debootstrap and cached, container_lib.sh's
# debian_root) runs python3.9 read-only, in mount and pid namespaces of its
# own (a tmpfs /tmp, a /proc of its own), growing a list of bytes objects.
# Attached from the host: the agent goes in through a memfd and loads under
# glibc 2.31 (it needs nothing newer than GLIBC_2.17, t_agent_imports.sh;
# dlsym and pthread_create come from the target's libdl and libpthread);
# the growth between two snapshots (1000 x 100 KB) shows up within 25% under
# CPython's eval loop, named from the container's own python3.9 (which the
# host does not have); python goes on after the detach; no file of the root
# changed (a listing with sizes, modes, times and checksums before and
# after).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all
require_cmd unshare util-linux
require_cmd sqlite3 sqlite3
debian_root bullseye
PYBIN=/usr/bin/python3.9
[ -x "$ROOT$PYBIN" ] || fail "no $PYBIN in $ROOT"
[ ! -e "$PYBIN" ] || log "note: the host has a $PYBIN too (the names must still come from the container's)"
root_listing "$ROOT" >"$W/before" || fail "cannot list $ROOT"

GROW=$(cat "$HA_SRCDIR/tests/targets/grow.py") || fail "no tests/targets/grow.py"

# The root read-only (a bind mount of it, in the new mount namespace only),
# a tmpfs on its /tmp (as a Kubernetes pod with a read-only root gets an
# emptyDir), its own /proc.
unshare -m -p -f --propagation private true 2>"$W/unshare.err" ||
	skip "unshare -m -p -f not possible here: $(tail -n 1 "$W/unshare.err")"
start_cmd py unshare -m -p -f --propagation private sh -c \
	'r=$1 && mount --bind "$r" "$r" && mount -o remount,bind,ro "$r" && mount -t proc proc "$r/proc" &&
	 mount -t tmpfs tmpfs "$r/tmp" && exec chroot "$r" python3.9 -u -c "$2"' sh "$ROOT" "$GROW"
wait_line "$TOUT" '^ready pid=1$' 30
pid=$(pgrep -P "$TPID" -x python3.9) || fail "no python3.9 under unshare $TPID: $(cat "$TERR")"
_PIDS+=("$pid")
wait_syscall "$pid" "$pid" "$NR_READ"
[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || fail "precondition: python is in our mount namespace"
[ "$(readlink "/proc/$pid/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] || fail "precondition: python is in our pid namespace"
grep -q 'libc-2\.31\.so' "/proc/$pid/maps" || fail "precondition: python does not run on the root's glibc 2.31"
touch "/proc/$pid/root/usr/.ha-probe" 2>/dev/null && fail "precondition: the root is writable for python"

db=$W/py.db
start_ha -v -q -s 3600 -o "$db" "$pid"
wait_ready "$pid" python3.9 30
grep -q "agent written into memfd" "$HA_ERR" || fail "the agent did not go through a memfd: $(grep -i agent "$HA_ERR" | head -n 3)"
grep -q '__libc_dlopen_mode\|libdl' "$HA_ERR" && log "$(grep -m1 'dlsym at' "$HA_ERR")"
snapshot_now "$db"
send "$TFD" "grow 1000 100000"
wait_line "$TOUT" '^done grow 1000 100000 total 1000 ok True$' 120
snapshot_now "$db"
detach_by_signal INT "$pid"
check_nothing_left "$pid"
send "$TFD" "grow 10 1000"
wait_line "$TOUT" '^done grow 10 1000 total 1010 ok False$' 30
send "$TFD" quit
wait_line "$TOUT" '^done quit$' 10
wait_exit "$TPID" 10 && [ "$RC" = 0 ] || fail "unshare (python) exited $RC: $(cat "$TERR")"

s1=$(snapshot_id "$db" 1)
s2=$(snapshot_id "$db" 2)
truth=100000000
py_growth "$db" "$s1" "$s2" "$truth"   # 1000 x 100000
named=$(sqlite3 "$db" "SELECT DISTINCT f.function FROM frames f JOIN modules m ON m.id = f.module_id
                       WHERE m.path LIKE '%python3.9' AND f.function <> '' ORDER BY 1")
printf '%s\n' "$named" | head -n 12 | sed 's/^/    python3.9 frame: /'
printf '%s\n' "$named" | grep -q '^PyEval_EvalCode$' ||
	fail "no PyEval_EvalCode named in the container's python3.9"
# Its Python frames, read from the container's python3.9 (3.9's frame
# objects and line table): the script's grow_list at its line.
sqlite3 "$db" "SELECT DISTINCT f.function || ' ' || f.file || ':' || f.line FROM frames f
               JOIN modules m ON m.id = f.module_id WHERE m.path = 'py'" | sed 's/^/    py frame: /'
[ "$(sqlite3 "$db" "SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id
                   WHERE m.path = 'py' AND f.function = 'grow_list' AND f.line > 0")" -ge 1 ] ||
	fail "no Python frame grow_list with its line from the container's python3.9"
sqlite3 "$db" "SELECT DISTINCT path FROM modules WHERE path LIKE '%python3%'" | sed 's/^/    module: /'

root_listing "$ROOT" >"$W/after" || fail "cannot list $ROOT"
diff "$W/before" "$W/after" >"$W/root.diff" || fail "the root changed: $(head -n 10 "$W/root.diff")"
echo "ok: Debian 11 python3.9 (glibc 2.31), read-only root in its own namespaces: growth $growth of $truth, named from its python3.9, root unchanged"
