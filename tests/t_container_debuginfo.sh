#!/bin/bash
# t_container_debuginfo: a stripped module's debug file found by build-id for
# a target in a container (issue 36).  A musl-gcc program (musl-tools) built
# with -g, its debug file kept apart (objcopy --only-keep-debug) and the
# program stripped: its leaking function is static, so neither its dynamic
# symbols nor anything else of the stripped file names it (checked), and
# only the debug file has its file:line.  It runs in a root holding only
# musl and itself, in mount and pid namespaces of its own, and leaks; one
# process, three sessions (the agent reused):
#   1. the debug file only inside the root, at
#      usr/lib/debug/.build-id/NN/REST.debug (read through /proc/PID/root):
#      heapdiff names the function with its file:line;
#   2. the debug file only in a directory of the host named by
#      HEAPATTACH_DEBUG_DIR (a .build-id tree, as /usr/lib/debug has): the
#      same (the host's /usr/lib/debug is never written);
#   3. the debug file nowhere: the function is not named (the stripped
#      program alone cannot name it: this is what 1 and 2 are checked
#      against).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all
require_cmd musl-gcc musl-tools
require_cmd unshare util-linux
for t in objcopy strip readelf; do
	command -v "$t" >/dev/null || skip "$t is not installed (binutils)"
done
LDMUSL=/lib/ld-musl-x86_64.so.1
[ -x "$LDMUSL" ] || skip "no $LDMUSL (Debian package musl)"
[ -f "$(dirname "$AGENT")/musl/heapattach_agent.so" ] ||
	fail "musl-gcc is installed but the musl agent was not built (configure again)"
export HEAPATTACH_CACHE=   # no debug info cache: each session finds the file itself

cat >"$W/dbgleak.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
void *kept[3][10000];   /* not static: its stores (and the mallocs) stay */
__attribute__((noinline)) static void dbg_static_leak(int round, int n, int size)
{
	for (int i = 0; i < n && i < 10000; i++)
		kept[round][i] = malloc(size); /* THE LEAK */
}
int main(void)
{
	char line[128];
	int round = 0, n, size;
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "leak %d %d", &n, &size) == 2 && round < 3) {
			dbg_static_leak(round++, n, size);
			printf("done leak %d %d\n", n, size);
		} else if (strncmp(line, "quit", 4) == 0) {
			printf("done quit\n");
			break;
		}
		fflush(stdout);
	}
	return 0;
}
C
LINE=$(grep -n 'THE LEAK' "$W/dbgleak.c" | cut -d: -f1)
musl-gcc -O1 -g -fno-omit-frame-pointer -Wl,--build-id -o "$W/dbgleak" "$W/dbgleak.c" || fail "musl-gcc failed"
objcopy --only-keep-debug "$W/dbgleak" "$W/dbgleak.debug" || fail "objcopy --only-keep-debug failed"
strip --strip-all "$W/dbgleak" || fail "strip failed"
id=$(readelf -n "$W/dbgleak" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
[ -n "$id" ] || fail "dbgleak has no build-id note"
readelf -sW "$W/dbgleak.debug" | grep -q ' dbg_static_leak$' || fail "precondition: the debug file lacks dbg_static_leak"
! readelf -sW --dyn-syms "$W/dbgleak" | grep -q dbg_static_leak || fail "precondition: the stripped program names dbg_static_leak"
! readelf -SW "$W/dbgleak" | grep -q '\.debug_\|\.symtab' || fail "precondition: the stripped program has DWARF or a symbol table"
! grep -q dbg_static_leak "$W/dbgleak" || fail "precondition: the stripped program holds the name dbg_static_leak"
DEBUG_REL=usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
[ ! -e "/$DEBUG_REL" ] || fail "precondition: the host's /$DEBUG_REL exists (its debug file would be found there)"
log "build-id $id; the leak at dbgleak.c:$LINE"

# A root with musl and the program, and the debug file by its build-id.
R=$W/root
mkdir -p "$R/lib" "$R/bin" "$R/proc" "$R/tmp" "$(dirname "$R/$DEBUG_REL")" || fail "mkdir $R"
cp "$LDMUSL" "$R/lib/" && cp "$W/dbgleak" "$R/bin/" && cp "$W/dbgleak.debug" "$R/$DEBUG_REL" || fail "cannot fill $R"
start_cmd dbgleak unshare -m -p -f --propagation private sh -c \
	'r=$1 && mount -t proc proc "$r/proc" && exec chroot "$r" /bin/dbgleak' sh "$R"
wait_line "$TOUT" '^ready pid=1$' 10
pid=$(pgrep -P "$TPID" -x dbgleak) || fail "no dbgleak under unshare $TPID"
_PIDS+=("$pid")
wait_syscall "$pid" "$pid" "$NR_READ"
[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || fail "precondition: dbgleak is in our mount namespace"
[ ! -e "/$DEBUG_REL" ] || fail "precondition: the debug file is visible at /$DEBUG_REL from the host"

N=500 SIZE=1000
# session N: attach, leak N blocks, detach; heapdiff's live heap in $W/sN.txt.
session() {
	local n=$1
	start_ha -v -q -s 3600 -i 1 --block -o "$W/s$n.db" "$pid"
	wait_ready "$pid" dbgleak
	send "$TFD" "leak $N $SIZE"
	wait_line "$TOUT" "^done leak $N $SIZE" 30
	snapshot_now "$W/s$n.db"
	detach_by_signal INT "$pid"
	check_session "$HA_ERR" "$pid" dbgleak
	check_alive "$pid"
	"$HA_BUILDDIR/src/heapdiff" --bytes "$W/s$n.db" >"$W/s$n.txt" || fail "heapdiff of session $n failed"
	sed 's/^/    /' "$W/s$n.txt" | sed -n '/STACK/,$p' | head -n 8
}
# named N WHERE: session N's report names dbg_static_leak at dbgleak.c:LINE,
# in the stripped module, holding every block.
named() {
	grep -Eq "dbg_static_leak  .*dbgleak\\.c:$LINE  \\[dbgleak\\]" "$W/s$1.txt" ||
		fail "session $1 (the debug file $2): dbg_static_leak at dbgleak.c:$LINE not named: $(grep -m3 dbgleak "$W/s$1.txt")"
	read -r bytes count < <(live_under "$W/s$1.db" dbg_static_leak heap)
	[ "$count" = "$N" ] && [ "$bytes" = $((N * SIZE)) ] ||
		fail "session $1: dbg_static_leak holds $count blocks, $bytes bytes; expected $N, $((N * SIZE))"
	log "session $1 (the debug file $2): dbg_static_leak at dbgleak.c:$LINE, $count blocks"
}

session 1
named 1 "in the container's /$DEBUG_REL"

rm "$R/$DEBUG_REL" || fail "cannot remove the root's debug file"
HOST_DEBUG=$W/hostdebug/${DEBUG_REL#usr/lib/debug/}
mkdir -p "$(dirname "$HOST_DEBUG")" && mv "$W/dbgleak.debug" "$HOST_DEBUG" || fail "cannot make the host's debug directory"
export HEAPATTACH_DEBUG_DIR=$W/hostdebug
session 2
unset HEAPATTACH_DEBUG_DIR
named 2 "in HEAPATTACH_DEBUG_DIR on the host"

rm -r "$W/hostdebug" || fail "cannot remove the host's debug directory"
session 3
! grep -q 'dbg_static_leak\|dbgleak\.c' "$W/s3.txt" ||
	fail "without its debug file the stripped program's function is named all the same: $(grep -m1 dbg_static_leak "$W/s3.txt")"
grep -q '\[dbgleak\]' "$W/s3.txt" || fail "session 3 has no frame of dbgleak at all"
log "session 3 (no debug file): dbg_static_leak not named"

check_nothing_left "$pid"
send "$TFD" quit
wait_line "$TOUT" '^done quit$' 10
wait_exit "$TPID" 10 && [ "$RC" = 0 ] || fail "unshare (dbgleak) exited $RC"
echo "ok: a stripped musl program in a container: its static function and file:line named from the debug file in the container's /usr/lib/debug/.build-id, then from HEAPATTACH_DEBUG_DIR on the host; not without it"
