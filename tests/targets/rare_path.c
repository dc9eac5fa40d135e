/* rare_path -- a service-shaped target for stack references
 * (tests/t_rare_path.sh): 4,096 hot call paths that allocate and free,
 * and one rare call path that leaks, whose innermost 14 frames are those
 * of one hot path.
 *
 * A call path is main -> step -> lv0 .. lv11 -> in0 -> in1 -> malloc:
 * each of the 12 levels has two functions (an A and a B), and bit k of a
 * path's index picks the one at level k, so 4,096 indexes are 4,096 call
 * paths (of many stack lengths: a B function has a bigger frame than its
 * A).  hot_step() enters them with a random
 * index and frees the oldest of its blocks (a bounded churn); rare_step(),
 * a function of the same frame beside it in main's loop, enters the chain
 * with index RARE_IDX, one step in RARE_EVERY, and keeps what it got: its
 * stack is a hot path's but for the one frame near main.  Built without
 * frame pointers (Makefile.am), as distributions build most programs.
 *
 *   run MS      run the loop for MS milliseconds; answers
 *               "done run LEAKED" (bytes rare_step kept in that run)
 *   quit        exit 0
 * Prints "ready pid=N" first. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOT_SIZE 256
#define RARE_SIZE 2048
#define RARE_IDX 0x5a5u
#define RARE_EVERY 4096
#define CHURN 8192           /* hot blocks alive at once */

static volatile int marker;  /* stores that keep look-alike functions apart */

/* The two innermost frames every path shares. */
__attribute__((noinline)) static void *in1(size_t size)
{
	void *p = malloc(size);
	if (!p)
		abort();
	((volatile char *)p)[0] = 1;
	return p;
}
__attribute__((noinline)) static void *in0(size_t size)
{
	void *p = in1(size);
	marker = 14;
	return p;
}

/* Level k's A and B: the next level by bit k+1 of idx.  The store after
 * the call keeps it from being a tail call (one frame a level), and the
 * constants keep the 24 functions from being folded into one. */
#define LEVEL(k, next_a, next_b)                                                             \
	__attribute__((noinline)) static void *lv##k##a(unsigned idx, size_t size)           \
	{                                                                                        \
		void *p = (idx >> ((k) + 1) & 1) ? next_a(idx, size) : next_b(idx, size);   \
		marker = 2 * (k);                                                                \
		return p;                                                                        \
	}                                                                                        \
	__attribute__((noinline)) static void *lv##k##b(unsigned idx, size_t size)           \
	{                                                                                        \
		volatile char pad[16 * ((k) + 1)];                                               \
		pad[0] = (char)idx;                                                              \
		void *p = (idx >> ((k) + 1) & 1) ? next_a(idx, size) : next_b(idx, size);   \
		marker = 2 * (k) + 1 + pad[0];                                                   \
		return p;                                                                        \
	}

#define IN(idx, size) in0(size)
#define NEXT(k, j) LEVEL(k, lv##j##a, lv##j##b)
LEVEL(11, IN, IN) NEXT(10, 11) NEXT(9, 10) NEXT(8, 9) NEXT(7, 8) NEXT(6, 7)
NEXT(5, 6) NEXT(4, 5) NEXT(3, 4) NEXT(2, 3) NEXT(1, 2) NEXT(0, 1)

static void *enter(unsigned idx, size_t size)
{
	return (idx & 1) ? lv0a(idx, size) : lv0b(idx, size);
}

/* The two functions near main: the same frame, other return addresses. */
__attribute__((noinline)) static void *hot_step(unsigned idx)
{
	void *p = enter(idx, HOT_SIZE);
	marker = 100;
	return p;
}
__attribute__((noinline)) static void *rare_step(unsigned idx)
{
	void *p = enter(idx, RARE_SIZE);
	marker = 101;
	return p;
}

static void *churn[CHURN];
static void **kept;
static size_t nkept, capkept;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rng = 88172645463325252ull;
static unsigned next_idx(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 20) & 4095u;
}

static size_t run(double ms)
{
	size_t leaked = 0;
	double end = now_ms() + ms;
	for (unsigned long i = 0;; i++) {
		if (i % RARE_EVERY == RARE_EVERY - 1) {
			if (nkept == capkept) {
				capkept = capkept ? capkept * 2 : 4096;
				kept = realloc(kept, capkept * sizeof *kept);
				if (!kept)
					abort();
			}
			kept[nkept++] = rare_step(RARE_IDX);
			leaked += RARE_SIZE;
		} else {
			void **slot = &churn[i % CHURN];
			free(*slot);
			*slot = hot_step(next_idx());
		}
		if ((i & 1023) == 0 && now_ms() >= end)
			break;
	}
	return leaked;
}

int main(void)
{
	char cmd[16];
	double ms;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	/* "run MS" until "quit" or the end of the input */
	while (scanf("%15s", cmd) == 1 && strcmp(cmd, "quit") != 0) {
		if (strcmp(cmd, "run") == 0 && scanf("%lf", &ms) == 1)
			printf("done run %zu\n", run(ms));
		else
			printf("error: unknown command: %s\n", cmd);
	}
	return 0;
}
