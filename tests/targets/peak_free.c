/* peak_free -- grows to a known high-water mark at a known site, then
 * frees everything, as an interpreter does at exit; for the true peak
 * (tests/t_peak.sh).  Commands on stdin, each answered "done CMD":
 *   grow N SIZE   grow_to_peak() allocates N blocks of SIZE bytes, written
 *   churn N       churn() allocates and frees N blocks of 1 KiB (no growth)
 *   free          release_all() frees every block grown so far
 *   exit          release_all(), then exit 0 at once (no further command)
 * EOF exits too.  Prints "ready pid=N". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void **blocks;
static size_t nblocks, capblocks;

__attribute__((noinline)) static void grow_to_peak(size_t n, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		void *p = malloc(size);
		if (!p)
			abort();
		memset(p, 0x5a, size);
		blocks[nblocks++] = p;
	}
}

__attribute__((noinline)) static unsigned churn(size_t n)
{
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char *p = malloc(1024);
		if (!p)
			abort();
		p[i % 1024] = (unsigned char)i;
		sum += p[i % 1024];
		free(p);
	}
	return sum;
}

__attribute__((noinline)) static void release_all(void)
{
	while (nblocks > 0)
		free(blocks[--nblocks]);
}

int main(void)
{
	char line[128];
	size_t n, size;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The book-keeping array exists before any attach: only the blocks
	 * grow while attached. */
	capblocks = 1 << 20;
	blocks = malloc(capblocks * sizeof *blocks);
	if (!blocks)
		abort();
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "grow %zu %zu", &n, &size) == 2 && n <= capblocks - nblocks) {
			grow_to_peak(n, size);
			printf("done grow %zu %zu\n", n, size);
		} else if (sscanf(line, "churn %zu", &n) == 1) {
			printf("done churn %zu %u\n", n, churn(n));
		} else if (strncmp(line, "free", 4) == 0) {
			release_all();
			printf("done free\n");
		} else if (strncmp(line, "exit", 4) == 0) {
			release_all();
			printf("done exit\n");
			return 0;
		}
	}
	release_all();
	return 0;
}
