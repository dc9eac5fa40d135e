#!/bin/bash
# t_container_musl: a program built with musl-gcc (musl-tools), run in a
# root holding only musl (its loader, /lib/ld-musl-x86_64.so.1, which is its
# libc too, and the program) in mount and pid namespaces of its own, waiting
# in read() inside musl; heapattach takes the agent built for musl
# (agent/.libs/musl/), delivers it through a memfd, and the profile (every
# block, -i 1 --block) is exact: the malloc, calloc and posix_memalign leak
# sites named, each block counted once (musl's calloc calls malloc and its
# posix_memalign aligned_alloc through its own GOT, which the agent patches),
# and musl's own allocations for the program (strdup, through its GOT) seen
# once each too; and in a thread started before the attach and one after
# (TLS through descriptors in both).  musl's libc has neither unwind
# tables nor frame pointers: strdup's blocks are found under the program's
# caller too, through the call-site scan (src/unwind/unwind_scan.c).  Then
# the same program run on the host, where Debian's musl is mapped as
# .../x86_64-linux-musl/libc.so: attached, the same sites.
# Issue 36, step 2, musl.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cover_lib.sh"
. "$(dirname "$0")/container_lib.sh"
require_all
require_cmd musl-gcc musl-tools
LDMUSL=/lib/ld-musl-x86_64.so.1
[ -x "$LDMUSL" ] || skip "no $LDMUSL (Debian package musl)"
MUSL_AGENT=$(dirname "$AGENT")/musl/heapattach_agent.so
[ -f "$MUSL_AGENT" ] || fail "musl-gcc is installed but the musl agent was not built: $MUSL_AGENT (configure again)"

cat >"$W/mleak.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void *kept[7][100000];
__attribute__((noinline)) void musl_leak_here(int n, int size)
{
	for (int i = 0; i < n && i < 100000; i++)
		kept[0][i] = malloc(size);
}
__attribute__((noinline)) void musl_calloc_here(int n, int size)
{
	for (int i = 0; i < n && i < 100000; i++)
		kept[1][i] = calloc(1, size);
}
__attribute__((noinline)) void musl_memalign_here(int n, int size)
{
	for (int i = 0; i < n && i < 100000; i++)
		if (posix_memalign(&kept[2][i], 64, size) != 0)
			kept[2][i] = NULL;
}
__attribute__((noinline)) void musl_strdup_here(int n, int size)
{
	static char s[4096];
	memset(s, 'x', sizeof s - 1);
	s[size > 0 && size < (int)sizeof s ? size - 1 : 0] = '\0';
	for (int i = 0; i < n && i < 100000; i++)
		kept[3][i] = strdup(s);
}
/* getline is musl's tail call to getdelim (two moves and a jmp): the
 * scan follows the PLT call to getline into getdelim. */
__attribute__((noinline)) void musl_getline_here(int n, int size)
{
	static char text[4096];
	memset(text, 'y', sizeof text - 1);
	text[size > 1 && size < (int)sizeof text ? size - 1 : 1] = '\n';
	for (int i = 0; i < n && i < 100000; i++) {
		FILE *f = fmemopen(text, sizeof text, "r");
		char *line = NULL;
		size_t cap = 0;
		if (f && getline(&line, &cap, f) > 0)
			kept[6][i] = line;
		else
			free(line);
		if (f)
			fclose(f);
	}
}
/* Threads: one started before the attach (its TLS block is made by musl's
 * dlopen of the agent), one started after (made by pthread_create). */
static int pfd[2], tn, tsize;
__attribute__((noinline)) void musl_old_thread_here(int n, int size)
{
	for (int i = 0; i < n && i < 100000; i++)
		kept[4][i] = malloc(size);
}
__attribute__((noinline)) void musl_new_thread_here(int n, int size)
{
	for (int i = 0; i < n && i < 100000; i++)
		kept[5][i] = calloc(1, size);
}
static void *old_thread(void *arg)
{
	char c;
	(void)arg;
	while (read(pfd[0], &c, 1) == 1)
		musl_old_thread_here(tn, tsize);
	return NULL;
}
static void *new_thread(void *arg)
{
	(void)arg;
	musl_new_thread_here(tn, tsize);
	return NULL;
}
int main(void)
{
	char line[128];
	int n, size;
	pthread_t old, t;
	if (pipe(pfd) != 0 || pthread_create(&old, NULL, old_thread, NULL) != 0)
		return 1;
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "leak %d %d", &n, &size) == 2) {
			musl_leak_here(n, size);
			musl_calloc_here(n, size);
			musl_memalign_here(n, size);
			musl_strdup_here(n, size);
			musl_getline_here(n, size);
			printf("done leak %d %d\n", n, size);
		} else if (sscanf(line, "threads %d %d", &n, &size) == 2) {
			tn = n, tsize = size;
			if (write(pfd[1], "x", 1) != 1 ||
			    pthread_create(&t, NULL, new_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
				return 1;
			while (!__atomic_load_n(&kept[4][n - 1], __ATOMIC_ACQUIRE))   /* the old thread's last block */
				usleep(1000);
			printf("done threads %d %d\n", n, size);
		} else if (strncmp(line, "quit", 4) == 0) {
			printf("done quit\n");
			break;
		}
		fflush(stdout);
	}
	return 0;
}
C
musl-gcc -O2 -g -fno-omit-frame-pointer -o "$W/mleak" "$W/mleak.c" || fail "musl-gcc failed"
readelf -lW "$W/mleak" | grep -q "interpreter: $LDMUSL" || fail "mleak is not a dynamic musl program"

# A root with only musl in it.
R=$W/root
mkdir -p "$R/lib" "$R/bin" "$R/proc" "$R/tmp" || fail "mkdir $R"
cp "$LDMUSL" "$R/lib/" && cp "$W/mleak" "$R/bin/" || fail "cannot fill $R"
start_cmd mleak unshare -m -p -f --propagation private sh -c \
	'r=$1 && mount -t proc proc "$r/proc" && exec chroot "$r" /bin/mleak' sh "$R"
wait_line "$TOUT" '^ready pid=1$' 10
pid=$(pgrep -P "$TPID" -x mleak) || fail "no mleak under unshare $TPID"
_PIDS+=("$pid")
grep -q 'ld-musl' "/proc/$pid/maps" || fail "precondition: mleak does not run on musl"
! grep -q 'libc\.so\.6\|libc-2' "/proc/$pid/maps" || fail "precondition: glibc in mleak"
send "$TFD" "leak 10 100"
wait_line "$TOUT" '^done leak 10 100$' 10
wait_syscall "$pid" "$pid" "$NR_READ"

# Without the musl agent beside the glibc one: refused, the target untouched.
mkdir -p "$W/only" && cp "$AGENT" "$W/only/" || fail "cannot copy the agent"
run_ha --agent "$W/only/heapattach_agent.so" "$pid"
check_refusal "runs on musl, and the agent for musl is not there: $W/only/musl/heapattach_agent.so"
check_untouched "$pid"

N=2000 SIZE=200
DB=$W/musl.db
start_ha -v -q -s 3600 -i 1 --block -o "$DB" "$pid"
wait_ready "$pid" mleak
grep -q "agent written into memfd" "$HA_ERR" || fail "the agent did not go through a memfd"
grep -q "/musl/heapattach_agent.so" "$HA_ERR" || { cat "$HA_ERR"; fail "heapattach did not take the musl agent"; }
send "$TFD" "leak $N $SIZE"
wait_line "$TOUT" "^done leak $N $SIZE" 60
send "$TFD" "threads $N $SIZE"
wait_line "$TOUT" "^done threads $N $SIZE" 60
snapshot_now "$DB"
detach_by_signal INT "$pid"
check_session "$HA_ERR" "$pid" mleak
check_alive "$pid"
read -r bytes count < <(live_under "$DB" musl_getline_here heap)
[ "$count" = "$N" ] || fail "musl_getline_here holds $count blocks, expected $N (getline's lines, through getdelim)"
grep -Eq '^heapattach: [1-9][0-9]* of [0-9]+ frames found by a call-site scan' "$HA_ERR" ||
	fail "no frames found by the call-site scan: $(grep frames "$HA_ERR")"
# musl's libc has no unwind tables (nor frame pointers): the walk steps
# over strdup by the return address of the call that reached it
# (src/unwind/unwind_scan.c), so strdup's blocks are found under
# musl_strdup_here too, once each.
for f in musl_leak_here musl_calloc_here musl_memalign_here strdup musl_strdup_here musl_old_thread_here musl_new_thread_here; do
	read -r bytes count < <(live_under "$DB" "$f" heap)
	log "$f: $count blocks, $bytes bytes live"
	[ "$count" = "$N" ] && [ "$bytes" = $((N * SIZE)) ] ||
		fail "$f holds $count blocks, $bytes bytes; expected $N, $((N * SIZE)) (each block once)"
done
check_nothing_left "$pid"
send "$TFD" quit
wait_line "$TOUT" '^done quit$' 10
wait_exit "$TPID" 10 || fail "unshare did not exit after mleak's quit"
[ "$RC" = 0 ] || fail "mleak (under unshare) exited $RC"
# The same program on the host, as Debian's musl runs it: its loader
# /lib/ld-musl-x86_64.so.1 is a link to /usr/lib/x86_64-linux-musl/libc.so,
# the name its maps show (it was refused as "no C library" once).
start_cmd hostmleak "$W/mleak"
wait_target_ready
hpid=$TPID
grep -q 'x86_64-linux-musl/libc.so' "/proc/$hpid/maps" ||
	log "note: this musl's maps do not name .../x86_64-linux-musl/libc.so: $(grep -m1 musl "/proc/$hpid/maps")"
wait_syscall "$hpid" "$hpid" "$NR_READ"
DB2=$W/host.db
start_ha -q -s 3600 -i 1 --block -o "$DB2" "$hpid"
wait_ready "$hpid" mleak
send "$TFD" "leak 500 100"
wait_line "$TOUT" "^done leak 500 100" 60
snapshot_now "$DB2"
detach_by_signal INT "$hpid"
check_session "$HA_ERR" "$hpid" mleak
for f in musl_leak_here musl_strdup_here; do
	read -r bytes count < <(live_under "$DB2" "$f" heap)
	[ "$count" = 500 ] && [ "$bytes" = 50000 ] ||
		fail "on the host, $f holds $count blocks, $bytes bytes; expected 500, 50000"
done
send "$TFD" quit
wait_line "$TOUT" '^done quit$' 10
echo "ok: a musl program in a root holding only musl: the musl agent through a memfd; malloc, calloc, posix_memalign and strdup exact (strdup under its caller), each block once, in old and new threads too; and on the host through Debian's musl path"
