#!/bin/bash
# t_cover_jemalloc: a program on jemalloc (Debian's libjemalloc.so.2, linked
# directly) allocating with jemalloc's non-standard API: mallocx, rallocx
# (moves a block), xallocx (resizes in place) and freeing with sdallocx and
# dallocx.  With --interval 1 --block each caller holds exactly its bytes,
# and after the frees nothing is live.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all
JE=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null) ||
	skip "libjemalloc.so.2 is not installed (Debian package libjemalloc2, a dependency of redis-server)"

cat >"$W/je.c" <<'SRC'
#include <stdio.h>
#include <string.h>
#include <unistd.h>
void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
void sdallocx(void *ptr, size_t size, int flags);
void dallocx(void *ptr, int flags);
#define N 200
static void *a[N], *b[N], *c[N];
__attribute__((noinline)) void *use_mallocx(void) { return mallocx(3000, 0); }
__attribute__((noinline)) void *use_rallocx(void) { void *p = mallocx(100, 0); return rallocx(p, 20000, 0); }
static size_t xsize;
__attribute__((noinline)) void *use_xallocx(void)
{
	/* Resize in place: whatever size jemalloc can give there is the new
	 * size of the block (the hook records what xallocx returns). */
	void *p = mallocx(65536, 0);
	size_t r = xallocx(p, 40000, 0, 0);
	if (xsize && r != xsize)
		return NULL;
	xsize = r;
	return p;
}
int main(void)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "alloc", 5) == 0) {
			int bad = 0;
			for (int i = 0; i < N; i++) {
				a[i] = use_mallocx();
				b[i] = use_rallocx();
				c[i] = use_xallocx();
				bad += !a[i] || !b[i] || !c[i];
			}
			printf("xsize %zu\n", xsize);
			printf("done alloc %d\n", bad);
		} else if (strncmp(line, "free", 4) == 0) {
			for (int i = 0; i < N; i++) {
				sdallocx(a[i], 3000, 0);
				dallocx(b[i], 0);
				sdallocx(c[i], xsize, 0);
			}
			printf("done free\n");
		} else if (strncmp(line, "quit", 4) == 0)
			break;
	}
	return 0;
}
SRC
compile_c "$W/je" "$W/je.c" "$JE" -fno-optimize-sibling-calls

db=$W/je.db
start_cmd je "$W/je"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
grep -q libjemalloc "/proc/$pid/maps" || fail "the test program does not map libjemalloc"
start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
wait_ready "$pid" je
send "$TFD" alloc
wait_line "$TOUT" '^done alloc 0$'
snapshot_now "$db"
send "$TFD" free
wait_line "$TOUT" '^done free$'
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "je exited $RC"

s1=$(snapshot_id "$db" 1)
xsize=$(sed -n 's/^xsize //p' "$TOUT")
log "xallocx(p, 40000) on a 65536-byte block gave $xsize bytes"
for x in "use_mallocx 600000" "use_rallocx 4000000" "use_xallocx $((200 * xsize))"; do
	set -- $x
	got=$(live_under "$db" "$1" heap "$s1")
	[ "$got" = "$2 200" ] || fail "$1 holds '$got', expected '$2 200'"
	got=$(live_under "$db" "$1" heap)
	[ "$got" = "0 0" ] || fail "$1 still holds '$got' after sdallocx/dallocx"
	log "$1: $2 bytes in 200 blocks, then freed: exact"
done
echo ok
