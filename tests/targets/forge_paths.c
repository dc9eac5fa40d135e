/* forge_paths -- a target that makes distinct call paths without end, as a
 * hostile or merely unusual program (deep recursion patterns, generated
 * code) can: each allocation's stack spells the next number of a counter
 * in binary, 20 levels of a choice between two functions (lv_0, lv_1)
 * that recurse into each other, so 2^20 distinct call paths, none seen
 * twice until the counter wraps.  Neither is a tail call (each adds its
 * own mark after the call) and the two differ, so that the compiler keeps
 * both and every level leaves its own return address.
 *
 * Commands on stdin (each acknowledged with "done CMD ..."):
 *   forge N SIZE   N blocks of SIZE bytes, kept, each on the next path
 *   quit           exit 0
 * Prints "ready pid=N" first. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEVELS 20

static volatile unsigned long sink;
static void **kept;
static size_t nkept, capkept;

__attribute__((noinline, noclone)) static void keep_block(size_t size)
{
	char *p = malloc(size);
	if (!p)
		abort();
	p[0] = 1;
	if (nkept == capkept) {
		capkept = capkept ? capkept * 2 : 1 << 16;
		kept = realloc(kept, capkept * sizeof *kept);
		if (!kept)
			abort();
	}
	kept[nkept++] = p;
}

static void lv_1(unsigned idx, int level, size_t size);

__attribute__((noinline, noclone)) static void lv_0(unsigned idx, int level, size_t size)
{
	if (level == LEVELS)
		keep_block(size);
	else if ((idx >> level) & 1)
		lv_1(idx, level + 1, size);
	else
		lv_0(idx, level + 1, size);
	sink += 1;
}

__attribute__((noinline, noclone)) static void lv_1(unsigned idx, int level, size_t size)
{
	if (level == LEVELS)
		keep_block(size);
	else if ((idx >> level) & 1)
		lv_1(idx, level + 1, size);
	else
		lv_0(idx, level + 1, size);
	sink += 2;
}

int main(void)
{
	char line[128];
	unsigned next = 0;
	unsigned long n, size;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Room for a million blocks before the attach: keep_block's only
	 * allocation is then the block itself. */
	capkept = 1 << 20;
	if (!(kept = malloc(capkept * sizeof *kept)))
		abort();
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "forge %lu %lu", &n, &size) == 2) {
			for (unsigned long i = 0; i < n; i++)
				lv_0(next++, 0, size);
			printf("done forge %lu %lu kept %zu\n", n, size, nkept);
		} else if (strncmp(line, "quit", 4) == 0) {
			printf("done quit\n");
			return 0;
		} else {
			printf("error %s", line);
		}
	}
	return 0;
}
