#!/bin/bash
# t_debuginfod: names for a fully stripped program from a real debuginfod on
# loopback (Debian's debuginfod, `debuginfod -F DIR`), and after the fact
# (issue 38).  A program built with -g, its debug file kept apart (objcopy
# --only-keep-debug) and the program stripped (--strip-all): its leaking
# function is static, so only the debug file names it (checked).
#   1. recorded with DEBUGINFOD_URLS set: the attacher's fetcher thread
#      gets the debug file while the session goes on (-v says so), and the
#      frames of the database itself (sqlite3, no heapdiff) name the
#      function with its file:line;
#   2. recorded without it (another cache): the database has no name for
#      it; heapdiff says, in one line, which module lacks names (path,
#      build-id) and how to get them; then heapdiff names it with
#      DEBUGINFOD_URLS set, and with --debug-dir DIR (DIR/NAME.debug, no
#      server) -- the database byte for byte as it was;
#   3. a dead server (nothing listens) and a silent one (accepts, never
#      answers): heapdiff ends within its bound (DEBUGINFOD_MAXTIME=3) with
#      one line naming the module and why; a session recorded against the
#      silent one detaches at once (the fetch cancelled, -v says so), its
#      snapshots whole; in a terminal (tmux) its status line shows the
#      fetch that waits;
#   4. a stripped Debian program (dash): the line names its package.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all
require_cmd debuginfod debuginfod
require_cmd sqlite3 sqlite3
for t in objcopy readelf gcc python3; do
	command -v "$t" >/dev/null || skip "$t is not installed"
done
HD=$HA_BUILDDIR/src/heapdiff

cat >"$W/dbgleak.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void *kept[4][10000];
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
		if (sscanf(line, "leak %d %d", &n, &size) == 2 && round < 4) {
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
sed -i '1i #include <unistd.h>' "$W/dbgleak.c"
LINE=$(grep -n 'THE LEAK' "$W/dbgleak.c" | cut -d: -f1)
gcc -O1 -g -fno-omit-frame-pointer -Wl,--build-id -o "$W/dbgleak" "$W/dbgleak.c" || fail "gcc failed"
mkdir -p "$W/srv" "$W/dir"
objcopy --only-keep-debug "$W/dbgleak" "$W/srv/dbgleak.debug" || fail "objcopy --only-keep-debug failed"
cp "$W/srv/dbgleak.debug" "$W/dir/dbgleak.debug"
objcopy --strip-all "$W/dbgleak" || fail "objcopy --strip-all failed"
id=$(readelf -n "$W/dbgleak" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
[ -n "$id" ] || fail "dbgleak has no build-id note"
! readelf -SW "$W/dbgleak" | grep -q '\.debug_\|\.symtab' || fail "precondition: the stripped program has DWARF or a symbol table"
! grep -q dbg_static_leak "$W/dbgleak" || fail "precondition: the stripped program holds the name dbg_static_leak"
[ ! -e "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ] || fail "precondition: the host has its debug file"
log "build-id $id; the leak at dbgleak.c:$LINE"

# A free port: bound by nobody now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT=$(free_port)
debuginfod -F -p "$PORT" -d "$W/debuginfod.sqlite" -t 0 "$W/srv" >"$W/debuginfod.log" 2>&1 &
SRV=$!
_PIDS+=("$SRV")
URL=http://127.0.0.1:$PORT
wait_for 30 'curl -sf -o /dev/null "$URL/buildid/$id/debuginfo"' ||
	fail "debuginfod on $URL does not serve $id within 30 s: $(tail -n 5 "$W/debuginfod.log")"
log "debuginfod on $URL serves the debug file"

start_cmd dbgleak "$W/dbgleak"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
N=400 SIZE=1000

# session N [env...]: attach with the environment given, leak N blocks,
# snapshot, detach.
session() {
	local n=$1
	shift
	env "$@" "$HA_BUILDDIR/src/heapattach" -v -q -s 3600 -i 1 --block -o "$W/s$n.db" "$pid" \
		>"$W/ha$n.out" 2>"$W/ha$n.err" &
	HAPID=$!
	HA_ERR=$W/ha$n.err
	_PIDS+=("$HAPID")
	wait_ready "$pid" dbgleak
	send "$TFD" "leak $N $SIZE"
	wait_line "$TOUT" "^done leak $N $SIZE" 30
	snapshot_now "$W/s$n.db"
}
# db_names DB: the frames of DB naming dbg_static_leak at its line.
db_names() {
	sqlite3 "$1" "SELECT count(*) FROM frames WHERE function = 'dbg_static_leak' AND line = $LINE AND file LIKE '%dbgleak.c'"
}

# ---- 1. recorded with DEBUGINFOD_URLS
session 1 DEBUGINFOD_URLS="$URL" HEAPATTACH_CACHE="$W/cache1"
detach_by_signal INT "$pid"
check_alive "$pid"
grep -q "^heapattach: debuginfod: $W/dbgleak: debug file fetched" "$W/ha1.err" ||
	fail "session 1: -v does not say the debug file was fetched: $(grep -i debuginfod "$W/ha1.err")"
[ -s "$W/cache1/debuginfod/$id/debuginfo" ] || fail "session 1: the debug file is not in the cache beside heapattach's ($W/cache1/debuginfod)"
[ "$(db_names "$W/s1.db")" -ge 1 ] || fail "session 1: the database names no frame dbg_static_leak at dbgleak.c:$LINE"
log "1: fetched while attached; the database itself names dbg_static_leak at dbgleak.c:$LINE"

# ---- 2. recorded without: named after the fact
session 2 -u DEBUGINFOD_URLS HEAPATTACH_CACHE="$W/cache2"
detach_by_signal INT "$pid"
[ "$(db_names "$W/s2.db")" = 0 ] || fail "session 2: named without a debug file"
sha=$(sha256sum <"$W/s2.db")
env -u DEBUGINFOD_URLS HEAPATTACH_CACHE="$W/cache2" "$HD" --bytes "$W/s2.db" >"$W/r2.txt" 2>"$W/r2.err" ||
	fail "heapdiff of session 2 failed: $(cat "$W/r2.err")"
! grep -q dbg_static_leak "$W/r2.txt" || fail "2: heapdiff names dbg_static_leak with no debug file anywhere"
grep -q "^heapdiff: [0-9]* frames of $W/dbgleak (build-id $id) have no names; its debug file: a debuginfod server (set DEBUGINFOD_URLS), or --debug-dir DIR$" "$W/r2.err" ||
	fail "2: no line saying which module lacks names and how to get them: $(cat "$W/r2.err")"
[ "$(grep -c "frames of $W/dbgleak " "$W/r2.err")" = 1 ] || fail "2: the module is told more than once: $(cat "$W/r2.err")"
grep -q "^note: no names for frames of $W/dbgleak (build-id $id): " "$W/r2.txt" ||
	fail "2: the text report does not say which module has no names"
# The page says it too, rendered (headless Chromium, where installed).
env -u DEBUGINFOD_URLS HEAPATTACH_CACHE="$W/cache2" "$HD" -f html -o "$W/r2nn.html" "$W/s2.db" 2>/dev/null ||
	fail "heapdiff -f html of session 2 failed"
if CHROMIUM=$(command -v chromium); then
	. "$(dirname "$0")/report_lib.sh"
	dom "$W/r2nn.html" "$W/r2nn.dom"
	grep -q "id=\"hd-names\"[^>]*>No names for the frames of $W/dbgleak (build-id $id): " "$W/r2nn.dom" ||
		fail "2: the rendered page does not say which module has no names: $(grep -o 'hd-names[^<]*' "$W/r2nn.dom")"
	log "2: the page: $(grep -o 'No names for the frames of [^<]*' "$W/r2nn.dom" | cut -c1-160)"
fi
log "2: $(grep "frames of $W/dbgleak" "$W/r2.err")"
named() { # FILE WHAT: the report names the leak at its line, in dbgleak
	grep -Eq "dbg_static_leak  .*dbgleak\\.c:$LINE  \\[dbgleak\\]" "$1" ||
		fail "$2: dbg_static_leak at dbgleak.c:$LINE not named: $(grep -m3 dbgleak "$1")"
}
env DEBUGINFOD_URLS="$URL" HEAPATTACH_CACHE="$W/cache2" "$HD" --bytes "$W/s2.db" >"$W/r2b.txt" 2>"$W/r2b.err" ||
	fail "heapdiff with DEBUGINFOD_URLS failed: $(cat "$W/r2b.err")"
named "$W/r2b.txt" "2, heapdiff with DEBUGINFOD_URLS"
grep -q "^heapdiff: [0-9]* frames of $W/dbgleak named from " "$W/r2b.err" || fail "2: heapdiff does not say where the names came from: $(cat "$W/r2b.err")"
# (Under ASan and UBSan where built: the frames replaced by their chains.)
HDSAN=$HA_BUILDDIR/src/heapdiff_san
[ -x "$HDSAN" ] || HDSAN=$HD
env -u DEBUGINFOD_URLS HEAPATTACH_CACHE="$W/cache3" ASAN_OPTIONS=detect_leaks=1:exitcode=99 \
	"$HDSAN" --bytes --debug-dir "$W/dir" "$W/s2.db" >"$W/r2c.txt" 2>"$W/r2c.err" ||
	fail "heapdiff --debug-dir failed: $(cat "$W/r2c.err")"
named "$W/r2c.txt" "2, heapdiff --debug-dir"
# A filter on the name found late: it matches (not "no frame matches").
env -u DEBUGINFOD_URLS HEAPATTACH_CACHE="$W/cache3" "$HD" --bytes --debug-dir "$W/dir" --function dbg_static_leak "$W/s2.db" >"$W/r2f.txt" 2>"$W/r2f.err" ||
	fail "heapdiff --function on a late name failed: $(cat "$W/r2f.err")"
named "$W/r2f.txt" "2, heapdiff --function dbg_static_leak --debug-dir"
# A typo is still refused in one line, though unnamed frames could be named.
env -u DEBUGINFOD_URLS HEAPATTACH_CACHE="$W/cache3" "$HD" --bytes --debug-dir "$W/dir" --function dbg_statik_leak "$W/s2.db" >"$W/r2t.txt" 2>"$W/r2t.err" &&
	fail "heapdiff --function with a typo succeeded: $(cat "$W/r2t.txt")"
grep -q "no frame matches --function 'dbg_statik_leak'" "$W/r2t.err" ||
	fail "heapdiff --function with a typo: not the one line: $(cat "$W/r2t.err")"
for fmt in folded json html; do
	env -u DEBUGINFOD_URLS HEAPATTACH_CACHE="$W/cache3" "$HD" -f "$fmt" --debug-dir "$W/dir" "$W/s2.db" >"$W/r2.$fmt" 2>/dev/null ||
		fail "heapdiff -f $fmt --debug-dir failed"
	grep -q dbg_static_leak "$W/r2.$fmt" || fail "2: -f $fmt does not name dbg_static_leak"
done
[ "$(sha256sum <"$W/s2.db")" = "$sha" ] || fail "2: heapdiff changed the database"
[ "$(db_names "$W/s2.db")" = 0 ] || fail "2: the database was written"
log "2: named after the fact by DEBUGINFOD_URLS and by --debug-dir (text, folded, json, html); the database unchanged"

# ---- 3. a dead server and a silent one
DEAD=http://127.0.0.1:$(free_port)
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    c, _ = s.accept(); held.append(c)   # never an answer
' >"$W/silent.port" 2>/dev/null &
_PIDS+=($!)
wait_for 10 '[ -s "$W/silent.port" ]' || fail "the silent server did not start"
SILENT=http://127.0.0.1:$(cat "$W/silent.port")
for srv in "$DEAD" "$SILENT"; do
	t0=$(date +%s.%N)
	env DEBUGINFOD_URLS="$srv" DEBUGINFOD_MAXTIME=3 HEAPATTACH_CACHE="$W/cache4" "$HD" --bytes "$W/s2.db" >"$W/r3.txt" 2>"$W/r3.err" ||
		fail "heapdiff against $srv failed: $(cat "$W/r3.err")"
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	awk -v s="$secs" 'BEGIN { exit !(s < 20) }' || fail "3: heapdiff against $srv took $secs s (bound: 3 s a file)"
	[ "$(grep -c "frames of $W/dbgleak (build-id $id) have no names; its debug file: a debuginfod server (asked: " "$W/r3.err")" = 1 ] ||
		fail "3: against $srv, no one line saying why: $(cat "$W/r3.err")"
	log "3: $srv: $secs s; $(grep -o 'asked: [^)]*' "$W/r3.err")"
done
# A session against the silent server: its snapshots on time, the detach at once.
session 3 DEBUGINFOD_URLS="$SILENT" HEAPATTACH_CACHE="$W/cache5"
t0=$(date +%s.%N)
detach_by_signal INT "$pid"
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || fail "3: the detach took $secs s with a silent debuginfod"
grep -q "^heapattach: debuginfod: $W/dbgleak: cancelled at the session's end" "$W/ha3.err" ||
	fail "3: the session does not say the fetch was cancelled: $(grep -i debuginfod "$W/ha3.err")"
snaps=$(sqlite3 "$W/s3.db" "SELECT count(*) FROM snapshots WHERE reason IN ('signal', 'detach')")
[ "$snaps" = 2 ] || fail "3: the session against the silent server has $snaps of its signal and detach snapshots"
log "3: a session against the silent server detached in $secs s, its snapshots whole"
check_alive "$pid"
# The status line in a terminal: the fetch that waits on the silent server.
if command -v tmux >/dev/null; then
	unset TMUX
	SOCK=$W/tmux.sock
	tm() { tmux -u -S "$SOCK" -f /dev/null "$@"; }
	at_exit "tmux -S '$SOCK' kill-server"
	tm new-session -d -s st -x 200 -y 10 \
		"env DEBUGINFOD_URLS=$SILENT HEAPATTACH_CACHE=$W/cache6 $HA_BUILDDIR/src/heapattach -s 3600 -o $W/s4.db $pid; exec sleep 600" ||
		fail "tmux new-session failed"
	wait_for 20 'tm capture-pane -p -t st | grep -Eq "debuginfod: dbgleak for [0-9]+ s \(1 of 1\)"' ||
		fail "3: the status line does not show the waiting fetch: $(tm capture-pane -p -t st)"
	log "3: the status line: $(tm capture-pane -p -t st | grep -o 'debuginfod: dbgleak for [0-9]* s ([^)]*)' | tail -n 1)"
	pkill -INT -f "heapattach -s 3600 -o $W/s4.db" || fail "no heapattach in tmux"
	wait_for 10 '! pgrep -f "heapattach -s 3600 -o $W/s4.db" >/dev/null' || fail "3: heapattach in tmux did not end within 10 s of SIGINT"
	check_alive "$pid"
else
	log "3: no tmux: the status line not checked"
fi

# ---- 4. a stripped Debian program: the package named
DASH=$(readlink -f "$(command -v dash)")
# (usrmerge: dpkg lists /bin/dash where the maps say /usr/bin/dash.)
pkg=$( (dpkg -S "$DASH" || dpkg -S "${DASH#/usr}") 2>/dev/null | cut -d: -f1 | head -n 1)
if [ -n "$pkg" ]; then
	start_cmd dash "$DASH"
	wait_syscall "$TPID" "$TPID" "$NR_READ"
	dpid=$TPID
	start_ha -v -q -s 3600 -i 1 -o "$W/dash.db" "$dpid"
	wait_ready "$dpid" dash
	send "$TFD" 'x=$(printf "%0100000d" 0); echo "done $#"'
	wait_line "$TOUT" '^done 0$' 10
	snapshot_now "$W/dash.db"
	detach_by_signal INT "$dpid"
	env -u DEBUGINFOD_URLS "$HD" --bytes "$W/dash.db" >/dev/null 2>"$W/r4.err" || fail "heapdiff of dash failed"
	grep -q "frames of $DASH (build-id [0-9a-f]*) have no names; its debug file: apt install $pkg-dbgsym (Debian's debug archive), " "$W/r4.err" ||
		fail "4: the line for dash does not name its package $pkg: $(cat "$W/r4.err")"
	log "4: $(grep "frames of $DASH" "$W/r4.err")"
else
	log "4: no dash owned by a Debian package: not checked"
fi
send "$TFD" quit 2>/dev/null
echo "ok: debuginfod on loopback names a stripped program while attached and after the fact; --debug-dir too; dead and silent servers bounded; the missing module told once with its package"
