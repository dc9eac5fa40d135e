/* malloc_storm [N] -- N worker threads (default 32) plus the main thread do
 * malloc/calloc/realloc/free as fast as they can, with pattern checks: every
 * block is filled with a pattern derived from its slot and generation, and
 * verified before realloc (the preserved prefix, after) and before free;
 * calloc'ed memory must be zero.  A mismatch prints the details on stderr and
 * abort()s.  Sizes are mostly small, sometimes up to 64 KiB and rarely up to
 * 1 MiB (mmap'ed chunks).
 *
 * No thread blocks in a system call for long: the main thread works too and
 * polls stdin with poll(timeout 0) every few hundred operations.  At the first
 * line or EOF on stdin every thread stops; the program prints
 * "ready pid=N" at start and, at the end,
 * "total threads=T malloc=N calloc=N realloc=N free=N" and exits 0. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 128
#define MAXT 256

struct slot {
	unsigned char *p;
	size_t n;
	unsigned char tag;
};

struct stats {
	unsigned long m, c, r, f;
} __attribute__((aligned(64)));

static int stop;
static struct stats st[MAXT + 1];

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static size_t pick_size(uint64_t *s)
{
	uint64_t r = rnd(s);
	if ((r & 1023) == 0)
		return 128 * 1024 + (r >> 20) % (896 * 1024);  /* mmap'ed */
	if ((r & 63) == 0)
		return 4096 + (r >> 20) % (60 * 1024);
	return 1 + (r >> 20) % 2048;
}

static unsigned char pat(unsigned char tag, size_t i)
{
	return (unsigned char)(tag + i * 7 + (i >> 8));
}

static void fill(struct slot *sl)
{
	for (size_t i = 0; i < sl->n; i++)
		sl->p[i] = pat(sl->tag, i);
}

/* Verify the first n bytes (all of them up to 8 KiB, else a sample). */
static void verify(int t, const char *what, const struct slot *sl, size_t n)
{
	size_t step = n <= 8192 ? 1 : 61;
	for (size_t i = 0; i < n; i += step)
		if (sl->p[i] != pat(sl->tag, i)) {
			fprintf(stderr,
				"malloc_storm: thread %d: pattern mismatch %s: block %p size %zu byte %zu: %02x != %02x\n",
				t, what, (void *)sl->p, sl->n, i, sl->p[i], pat(sl->tag, i));
			abort();
		}
	if (n > 0 && sl->p[n - 1] != pat(sl->tag, n - 1)) {
		fprintf(stderr, "malloc_storm: thread %d: pattern mismatch %s at the last byte\n", t, what);
		abort();
	}
}

static void oom(int t)
{
	fprintf(stderr, "malloc_storm: thread %d: out of memory\n", t);
	abort();
}

/* One operation on a random slot.  Returns nothing; counts in *c. */
static void op(int t, struct slot *slots, uint64_t *s, struct stats *c, unsigned char *gen)
{
	struct slot *sl = &slots[rnd(s) % SLOTS];
	uint64_t r = rnd(s);

	if (!sl->p) {
		sl->n = pick_size(s);
		sl->tag = (*gen)++;
		if (r & 1) {
			sl->p = malloc(sl->n);
			if (!sl->p)
				oom(t);
			c->m++;
		} else {
			sl->p = calloc(1, sl->n);
			if (!sl->p)
				oom(t);
			c->c++;
			for (size_t i = 0; i < sl->n; i += sl->n <= 8192 ? 1 : 61)
				if (sl->p[i]) {
					fprintf(stderr, "malloc_storm: thread %d: calloc'ed block %p size %zu not zero at %zu\n",
						t, (void *)sl->p, sl->n, i);
					abort();
				}
		}
		fill(sl);
	} else if ((r & 3) == 0) {
		size_t nn = pick_size(s);
		unsigned char *np;

		verify(t, "before realloc", sl, sl->n);
		np = realloc(sl->p, nn);
		if (!np)
			oom(t);
		c->r++;
		sl->p = np;
		verify(t, "after realloc", sl, nn < sl->n ? nn : sl->n);
		sl->n = nn;
		fill(sl);
	} else {
		verify(t, "before free", sl, sl->n);
		free(sl->p);
		c->f++;
		sl->p = NULL;
	}
}

static void drain(struct slot *slots, struct stats *c, int t)
{
	for (int i = 0; i < SLOTS; i++)
		if (slots[i].p) {
			verify(t, "at the end", &slots[i], slots[i].n);
			free(slots[i].p);
			c->f++;
			slots[i].p = NULL;
		}
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;
	struct slot slots[SLOTS];
	uint64_t s = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(t + 1) * 0x100000001b3ull);
	unsigned char gen = (unsigned char)t;

	memset(slots, 0, sizeof slots);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		for (int k = 0; k < 64; k++)
			op(t, slots, &s, &st[t], &gen);
	drain(slots, &st[t], t);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 32;
	pthread_t th[MAXT];
	struct slot slots[SLOTS];
	struct pollfd p = {.fd = 0, .events = POLLIN};
	uint64_t s = 12345;
	unsigned char gen = 0xa5;
	struct stats tot = {0, 0, 0, 0};
	char buf[256];

	if (n < 1 || n > MAXT) {
		fprintf(stderr, "usage: malloc_storm [N<=%d]\n", MAXT);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(slots, 0, sizeof slots);
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(long)i) != 0) {
			fprintf(stderr, "malloc_storm: pthread_create failed\n");
			return 1;
		}
	printf("ready pid=%d\n", (int)getpid());
	for (;;) {
		int r = poll(&p, 1, 0);
		if (r > 0)
			break;
		for (int k = 0; k < 256; k++)
			op(MAXT, slots, &s, &st[MAXT], &gen);
	}
	if (read(0, buf, sizeof buf) < 0)
		perror("malloc_storm: read");
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	drain(slots, &st[MAXT], MAXT);
	for (int i = 0; i <= MAXT; i++) {
		tot.m += st[i].m;
		tot.c += st[i].c;
		tot.r += st[i].r;
		tot.f += st[i].f;
	}
	printf("total threads=%d malloc=%lu calloc=%lu realloc=%lu free=%lu\n", n + 1, tot.m, tot.c,
	       tot.r, tot.f);
	return 0;
}
