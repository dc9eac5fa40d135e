/* leak_trend -- a target with three kinds of memory behaviour, driven by
 * commands on stdin, for heapdiff --leaks (tests/t_leaks_pipeline.sh):
 *   pool        allocate a constant pool in pool_init() (kept, never grows)
 *   step I      one step: leak_step() keeps 32 more 2 KiB blocks (a steady
 *               leak); cache_step() adds 64 blocks of 1 KiB while I < 5 and
 *               frees 64 of them from then on (grows, then falls back to 0)
 *   quit        exit 0
 * Each command is acknowledged with "done CMD".  Prints "ready pid=N". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEAK_BLOCKS 32
#define LEAK_SIZE 2048
#define CACHE_BLOCKS 64
#define CACHE_SIZE 1024
#define POOL_BLOCKS 100
#define POOL_SIZE 4096

static void *pool[POOL_BLOCKS];
static void *cache[CACHE_BLOCKS * 16];
static size_t ncache;
static void **leaked;
static size_t nleaked, capleaked;

static void *touch(void *p, size_t n)
{
	if (!p)
		abort();
	memset(p, 0x5a, n);
	return p;
}

__attribute__((noinline)) static void pool_init(void)
{
	for (int i = 0; i < POOL_BLOCKS; i++)
		pool[i] = touch(malloc(POOL_SIZE), POOL_SIZE);
}

__attribute__((noinline)) static void leak_step(void)
{
	for (int i = 0; i < LEAK_BLOCKS; i++) {
		void *p = touch(malloc(LEAK_SIZE), LEAK_SIZE);
		if (nleaked == capleaked) {
			/* Book-keeping outside the leaking function: mmap'ed or
			 * realloc'ed arrays would be a second trend. */
			capleaked = capleaked ? capleaked * 2 : 4096;
			leaked = realloc(leaked, capleaked * sizeof *leaked);
			if (!leaked)
				abort();
		}
		leaked[nleaked++] = p;
	}
}

__attribute__((noinline)) static void cache_step(int i)
{
	if (i < 5) {
		for (int k = 0; k < CACHE_BLOCKS && ncache < sizeof cache / sizeof *cache; k++)
			cache[ncache++] = touch(malloc(CACHE_SIZE), CACHE_SIZE);
	} else {
		for (int k = 0; k < CACHE_BLOCKS && ncache > 0; k++)
			free(cache[--ncache]);
	}
}

int main(void)
{
	char line[128];
	int i;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The book-keeping array is allocated before any attach. */
	capleaked = 1 << 16;
	leaked = malloc(capleaked * sizeof *leaked);
	if (!leaked)
		abort();
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "pool", 4) == 0) {
			pool_init();
			printf("done pool\n");
		} else if (sscanf(line, "step %d", &i) == 1) {
			leak_step();
			cache_step(i);
			printf("done step %d\n", i);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	printf("leaked %zu cached %zu pool %p\n", nleaked, ncache, pool[0]);
	return 0;
}
