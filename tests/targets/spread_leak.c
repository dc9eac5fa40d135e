/* spread_leak -- the commonest leak shape heapdiff must name (issue 34): one
 * helper, keep_block(), that keeps what it allocates, reached from 256
 * distinct call paths, so that each path holds little and is noise; beside
 * it three churning call paths, churn_a/b/c(), that allocate and free at a
 * high rate into bounded caches (their live total wobbles and grows a
 * little as each cache fills, in its first 3 s), so that a ranking of
 * exact call paths shows the churners first and no path of the helper.
 *
 * The 256 paths: a chain of 8 levels, each a choice between two noinline
 * functions (lvN_0, lvN_1) by bit N of the path's index; every function
 * does some work after its call, so that no call is a tail call and every
 * level leaves its own return address on the stack.
 *
 * Commands on stdin (each acknowledged with "done CMD"):
 *   start KBPS   start the worker: every 10 ms it keeps KBPS/100 KiB through
 *                keep_block (blocks of 4 KiB, each on the next path in
 *                turn) and churns; it
 *                paces itself by the clock (this is the workload, not a
 *                test's synchronisation)
 *   stop         stop the worker (answers with the totals kept)
 *   quit         exit 0
 * Prints "ready pid=N" first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEVELS 8
#define PATHS (1 << LEVELS)
#define BLOCK 4096                /* keep_block's block size */
#define CHURN_OPS 150             /* malloc/free pairs per churner per tick */

static volatile unsigned long sink;
static void **kept;
static size_t nkept, capkept;
static atomic_int running;
static size_t bytes_per_tick;

__attribute__((noinline, noclone)) static void keep_block(size_t size)
{
	char *p = malloc(size);
	if (!p)
		abort();
	memset(p, 0x6b, size);
	if (nkept == capkept) {
		capkept = capkept ? capkept * 2 : 1 << 16;
		kept = realloc(kept, capkept * sizeof *kept);
		if (!kept)
			abort();
	}
	kept[nkept++] = p;
}

/* One level: lvN_B calls the next level chosen by bit N+1 of idx, then
 * adds its own mark (so that it is no tail call, and no two functions are
 * identical for the compiler to merge). */
#define LEVEL(n, b, next)                                                             \
	__attribute__((noinline, noclone)) static void lv##n##_##b(unsigned idx, size_t size) \
	{                                                                             \
		(void)idx;                                                            \
		next;                                                                 \
		sink += (n) * 2 + (b) + 1;                                            \
	}
#define NEXT(n) ((idx >> (n)) & 1 ? lv##n##_1(idx, size) : lv##n##_0(idx, size))

LEVEL(7, 0, keep_block(size))
LEVEL(7, 1, keep_block(size))
LEVEL(6, 0, NEXT(7))
LEVEL(6, 1, NEXT(7))
LEVEL(5, 0, NEXT(6))
LEVEL(5, 1, NEXT(6))
LEVEL(4, 0, NEXT(5))
LEVEL(4, 1, NEXT(5))
LEVEL(3, 0, NEXT(4))
LEVEL(3, 1, NEXT(4))
LEVEL(2, 0, NEXT(3))
LEVEL(2, 1, NEXT(3))
LEVEL(1, 0, NEXT(2))
LEVEL(1, 1, NEXT(2))
LEVEL(0, 0, NEXT(1))
LEVEL(0, 1, NEXT(1))

__attribute__((noinline, noclone)) static void spread(unsigned idx, size_t size)
{
	NEXT(0);
	sink++;
}

/* A bounded cache: each op replaces a random slot with a block of a random
 * size; slots in use grow by FILL per tick up to the cache's size (full in
 * under 3 s: then it only wobbles). */
#define FILL 16
struct cache {
	void **slot;
	size_t nslots, used;
	size_t min, span;          /* block sizes: min .. min + span */
	unsigned seed;
};

/* The body of a churner: a macro, so that the churner itself allocates
 * (its own leaf frame, not one shared function's). */
#define CHURN(c)                                                               \
	do {                                                                   \
		(c)->used = (c)->used + FILL < (c)->nslots ? (c)->used + FILL : (c)->nslots; \
		for (int i_ = 0; i_ < CHURN_OPS; i_++) {                       \
			size_t k_ = (size_t)rand_r(&(c)->seed) % (c)->used;    \
			free((c)->slot[k_]);                                   \
			size_t n_ = (c)->min + (size_t)rand_r(&(c)->seed) % (c)->span; \
			if (!((c)->slot[k_] = malloc(n_)))                     \
				abort();                                       \
			memset((c)->slot[k_], 0x63, 64);                       \
		}                                                              \
	} while (0)

__attribute__((noinline, noclone)) static void churn_a(struct cache *c) { CHURN(c); sink += 101; }
__attribute__((noinline, noclone)) static void churn_b(struct cache *c) { CHURN(c); sink += 102; }
__attribute__((noinline, noclone)) static void churn_c(struct cache *c) { CHURN(c); sink += 103; }

static void *worker(void *arg)
{
	/* Caches of 8, 7 and 6 MiB when full (slots x mean size): at the
	 * default sampling interval a churner's estimate wobbles by a few
	 * MiB and stays above any one path of keep_block's. */
	static struct cache ca = { NULL, 2048, 0, 2048, 4096, 1 };
	static struct cache cb = { NULL, 1792, 0, 2048, 4096, 2 };
	static struct cache cc = { NULL, 1536, 0, 2048, 4096, 3 };
	struct cache *all[3] = { &ca, &cb, &cc };
	struct timespec next;
	unsigned path = 0;
	size_t credit = 0;          /* bytes owed to keep_block */
	(void)arg;
	for (int i = 0; i < 3; i++)
		if (!all[i]->slot && !(all[i]->slot = calloc(all[i]->nslots, sizeof(void *))))
			abort();
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (atomic_load(&running)) {
		for (credit += bytes_per_tick; credit >= BLOCK; credit -= BLOCK)
			spread(path++ % PATHS, BLOCK);
		churn_a(&ca);
		churn_b(&cb);
		churn_c(&cc);
		next.tv_nsec += 10 * 1000 * 1000;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return NULL;
}

int main(void)
{
	char line[128];
	unsigned kbps;
	pthread_t th;
	int started = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "start %u", &kbps) == 1 && !started) {
			bytes_per_tick = (size_t)kbps * 1024 / 100;
			atomic_store(&running, 1);
			if (pthread_create(&th, NULL, worker, NULL) != 0)
				abort();
			started = 1;
			printf("done start\n");
		} else if (strncmp(line, "stop", 4) == 0 && started) {
			atomic_store(&running, 0);
			pthread_join(th, NULL);
			started = 0;
			printf("done stop kept=%zu bytes=%zu\n", nkept, nkept * (size_t)BLOCK);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	return 0;
}
