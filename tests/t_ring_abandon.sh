#!/bin/bash
# t_ring_abandon: a record reserved in the ring and never written (as when
# a thread leaves the sampling code through a longjmp out of a signal
# handler) does not stall the session: the attacher goes on from the next
# published record, says so, and the samples after it are in the profile.
# The target plays the vanishing writer itself: it finds the rings in its
# own maps and reserves a record it never publishes, in the ring its own
# blocks' records go to (ha_ring_route), before the ones that follow.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all

cat >"$W/ab.c" <<'SRC'
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ha_ring.h"
#include "ha_ring_map.h"
static void *keep[4096];
static int nkeep;
__attribute__((noinline)) void *ab_leak_here(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 3, n);
	return p;
}
/* Reserve a record in heapattach's ring and never publish it. */
static int abandon(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo = 0, a, b, end = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "memfd:heapattach-ring") && sscanf(line, "%lx-%lx", &a, &b) == 2) {
			if (!lo)
				lo = a;
			if (b > end)
				end = b;
		}
	if (f)
		fclose(f);
	if (!lo)
		return -1;
	struct ha_ring_hdr *h = (struct ha_ring_hdr *)lo;
	if (h->magic != HA_RING_MAGIC)
		return -1;
	uint32_t rings = (uint32_t)((end - lo) / ha_ring_map_len(h->data_size));
	void *probe = ab_leak_here(1000);
	h = ha_ring_at(h, h->data_size, ha_ring_route((uint64_t)(uintptr_t)probe, rings ? rings : 1));
	free(probe);
	uint64_t at;
	if (h->magic != HA_RING_MAGIC || !ha_ring_reserve(h, h->data_size, 64, 0, &at, NULL))
		return -1;
	printf("abandoned at %llu\n", (unsigned long long)at);
	return 0;
}
int main(void)
{
	char line[64];
	int n;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "leak %d", &n) == 1) {
			for (int i = 0; i < n && nkeep < 4096; i++)
				keep[nkeep++] = ab_leak_here(1000);
			printf("done leak %d\n", n);
		} else if (strncmp(line, "abandon", 7) == 0) {
			if (abandon() != 0)
				printf("no ring\n");
		} else if (strncmp(line, "quit", 4) == 0)
			break;
	}
	return keep[0] == NULL;
}
SRC
compile_c "$W/ab" "$W/ab.c" -I"$HA_SRCDIR/src/proto"

db=$W/ab.db
start_cmd ab "$W/ab"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -v -q -i 1 -s 3600 -o "$db" "$pid"
wait_ready "$pid" ab
send "$TFD" "leak 100"
wait_line "$TOUT" '^done leak 100$'
send "$TFD" abandon
wait_line "$TOUT" '^(abandoned at [0-9]+|no ring)$'
grep -q '^no ring' "$TOUT" && fail "the target did not find the ring in its maps"
send "$TFD" "leak 1000"
wait_line "$TOUT" '^done leak 1000$'

# The collector goes on past the hole after a second: until then snapshots
# hold only the first 100 blocks.
objects() {
	"$HA_BUILDDIR/src/heapdiff" --bytes "$db" last >"$W/live" 2>&1 || return 1
	heapdiff_rows "$W/live" | awk '$3 == "ab_leak_here" { print $2 }' | head -n 1
}
for ((i = 0; i < 20; i++)); do
	snapshot_now "$db"
	[ "$(objects)" = 1100 ] && break
	sleep 0.5
done
[ "$(objects)" = 1100 ] ||
	fail "ab_leak_here holds $(objects) objects in the last snapshot, expected 1100 (the samples after the abandoned record)"
detach_by_signal INT "$pid"
grep -Eq '^heapattach: 1 records were reserved in the ring and never written' "$HA_ERR" ||
	fail "no line about the skipped record"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "ab did not exit cleanly ($RC)"
echo ok
