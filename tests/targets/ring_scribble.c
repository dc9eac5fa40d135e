/* ring_scribble.c -- a hostile target for tests/t_hostile_ring.sh: a
 * program that writes over the ring heapattach's agent shares with it,
 * while it allocates normally.  It finds the rings in its own maps (the
 * agent maps the memfd "heapattach-ring", each ring's header first and its
 * data twice), takes the one its own blocks' records go to (ha_ring_route),
 * and writes with its own code what a stray pointer or a deliberate
 * attacker would.
 *
 * Commands on stdin, one per line; each answers "done ..." on stdout, and
 * what it writes on stdout depends only on the commands (never on whether
 * or how it is profiled), so a run without heapattach prints the same:
 *   leak N WHERE    keep N blocks of 1000 bytes allocated by leak_WHERE()
 *                   (WHERE: before, between, after)
 *   forge KIND      reserve a record as the agent does and publish it with
 *                   a bad field: len7 (not a multiple of 8), len0, huge
 *                   (beyond what a producer may reserve), type (unknown),
 *                   stacklen (longer than the record), small (a sample
 *                   shorter than its fixed part)
 *   pos KIND        cons_ahead, prod_misalign, prod_ahead, prod_behind,
 *                   header (magic, version, data_size, interval, drops;
 *                   of the first ring too, whose interval is the session's)
 *   flood N         N "modules changed" records (the smallest there is,
 *                   each asking the attacher to read the maps again)
 *   chaos N SEED    N random writes of 1 or 8 bytes anywhere in a ring, any
 *                   of them (header and data, half of them around prod), at
 *                   least, and on while a second thread allocates and frees
 *                   20000 blocks; then waits (20 s at most) until the
 *                   consumer has caught up with every ring's prod; prints
 *                   their checksum
 *   quit            prints the checksum of the kept blocks and exits
 * On stderr: where the ring was found, or "no ring". */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ha_ring.h"
#include "ha_ring_map.h"

#define KEEP_MAX 100000

static void *keep[KEEP_MAX];
static int nkeep;

#define LEAK_FN(name)                                                          \
	__attribute__((noinline)) void *leak_##name(void)                      \
	{                                                                      \
		char *p = malloc(1000);                                        \
		if (p)                                                         \
			memset(p, (int)(nkeep & 0x7f), 1000);                  \
		__asm__ volatile("" ::: "memory");                             \
		return p;                                                      \
	}
LEAK_FN(before)
LEAK_FN(between)
LEAK_FN(after)

/* The rings as mapped here, the data size and their number from the
 * mapping itself (the header's own data_size is one of the things written
 * over): the first ring's header (the lowest mapping of the memfd's
 * start), and the end of the last one's second data copy. */
static char *ring_base;
static uint32_t ring_count;

/* The ring the records of this thread's blocks go to, or NULL. */
static struct ha_ring_hdr *find_ring(uint64_t *data_size)
{
	char line[512];
	unsigned long lo, hi, off, end = 0;
	ring_base = NULL;
	ring_count = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "memfd:heapattach-ring") &&
		    sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) == 3) {
			if (!ring_base && off == 0) {
				ring_base = (char *)lo;
				*data_size = hi - lo - HA_RING_HDR_SIZE;
			}
			if (hi > end)
				end = hi;
		}
	if (f)
		fclose(f);
	if (!ring_base) {
		fprintf(stderr, "no ring\n");
		return NULL;
	}
	ring_count = (uint32_t)((end - (unsigned long)ring_base) / ha_ring_map_len(*data_size));
	if (!ring_count)
		ring_count = 1;
	void *probe = malloc(1000);
	uint32_t mine = ring_count ? ha_ring_route((uint64_t)(uintptr_t)probe, ring_count) : 0;
	free(probe);
	struct ha_ring_hdr *h = ha_ring_at(ring_base, *data_size, mine);
	fprintf(stderr, "ring %u of %u at %p, data size %llu\n", (unsigned)mine, (unsigned)ring_count,
	        (void *)h, (unsigned long long)*data_size);
	return h;
}

static void forge(const char *kind)
{
	uint64_t ds, at;
	struct ha_ring_hdr *h = find_ring(&ds);
	if (!h)
		return;
	int stacklen = strcmp(kind, "stacklen") == 0;
	uint32_t n = stacklen ? (uint32_t)sizeof(struct ha_rec_sample) + 64 : 64;
	struct ha_rec_sample *r = ha_ring_reserve(h, ds, n, 0, &at, NULL);
	if (!r) {
		fprintf(stderr, "ring full\n");
		return;
	}
	memset(r, 0xa5, n);
	uint32_t len = n;
	uint16_t type = HA_REC_SAMPLE; /* "small": 64 bytes, less than a sample's fixed part */
	if (strcmp(kind, "len7") == 0)
		len = 7;
	else if (strcmp(kind, "len0") == 0)
		len = 0;
	else if (strcmp(kind, "huge") == 0)
		len = (uint32_t)ds;
	else if (strcmp(kind, "type") == 0)
		type = 0x1234;
	if (stacklen) {
		r->stack_len = 0xffffffffu;
		r->kind = HA_REC_KIND_HEAP;
	}
	ha_ring_publish(h, &h->consumer_waiting, r, at, len, type, 0);
}

/* n records saying "modules changed" (16 bytes each, the smallest
 * record), as fast as the ring takes them. */
static void flood(long n)
{
	uint64_t ds, at;
	struct ha_ring_hdr *h = find_ring(&ds);
	for (long i = 0; h && i < n; i++) {
		void *r = ha_ring_reserve(h, ds, sizeof(struct ha_rec_hdr), 0, &at, NULL);
		if (r)
			ha_ring_publish(h, &h->consumer_waiting, r, at, sizeof(struct ha_rec_hdr), HA_REC_MODULES, 0);
	}
}

static void positions(const char *kind)
{
	uint64_t ds;
	struct ha_ring_hdr *h = find_ring(&ds);
	if (!h)
		return;
	uint64_t prod = __atomic_load_n(&h->prod, __ATOMIC_RELAXED);
	if (strcmp(kind, "cons_ahead") == 0)
		__atomic_store_n(&h->cons, prod + 8 * 4096, __ATOMIC_RELAXED);
	else if (strcmp(kind, "prod_misalign") == 0)
		__atomic_store_n(&h->prod, prod + 3, __ATOMIC_RELAXED);
	else if (strcmp(kind, "prod_ahead") == 0)
		__atomic_store_n(&h->prod, prod + 3 * ds, __ATOMIC_RELAXED);
	else if (strcmp(kind, "prod_behind") == 0)
		__atomic_store_n(&h->prod, prod - 4096, __ATOMIC_RELAXED);
	else if (strcmp(kind, "header") == 0) {
		struct ha_ring_hdr *first = (struct ha_ring_hdr *)ring_base;
		for (struct ha_ring_hdr *x = h;; x = first) {
			x->magic = 0;
			x->version = 99;
			x->data_size = 1;
			__atomic_store_n(&x->interval, 1ull << 39, __ATOMIC_RELAXED);
			__atomic_store_n(&x->drops, 1ull << 62, __ATOMIC_RELAXED);
			if (x == first)
				break;
		}
	}
}

/* ------------------------------------------------------------ chaos */

static uint64_t rng;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t churn_sum;
static int churn_done;

static void *churn(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	for (int i = 0; i < 20000; i++) {
		size_t n = 16 + (size_t)(i % 61) * 8;
		unsigned char *p = malloc(n);
		if (!p)
			continue;
		for (size_t k = 0; k < n; k++)
			p[k] = (unsigned char)(i + k);
		for (size_t k = 0; k < n; k += 7)
			sum += p[k];
		free(p);
	}
	churn_sum = sum;
	__atomic_store_n(&churn_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void chaos(long n, unsigned long seed)
{
	uint64_t ds;
	pthread_t th;
	struct ha_ring_hdr *h = find_ring(&ds);
	rng = seed ? seed : 1;
	churn_done = 0;
	int started = pthread_create(&th, NULL, churn, NULL) == 0;
	if (h && started) {
		/* At least n writes, and on while the other thread allocates
		 * (into the ring of its own arena, maybe another one). */
		size_t len = HA_RING_HDR_SIZE + 2 * ds;
		for (long i = 0; i < n || !__atomic_load_n(&churn_done, __ATOMIC_ACQUIRE); i++) {
			if (i % 64 == 0)
				sched_yield();
			h = ha_ring_at(ring_base, ds, (uint32_t)(next_rand() % ring_count));
			uint64_t r = next_rand(), off = r % len;
			if (r & 1) {
				/* Half of them where records are being written and
				 * read: around prod, in the data area. */
				uint64_t prod = __atomic_load_n(&h->prod, __ATOMIC_RELAXED);
				off = HA_RING_HDR_SIZE + ((prod + (r >> 8) % 65536 - 32768) & (ds - 1));
			}
			if (r >> 63) /* an aligned word: a header field, a stamp */
				__atomic_store_n((uint64_t *)((char *)h + (off & ~7ull)), next_rand(),
				                 __ATOMIC_RELAXED);
			else
				*((volatile char *)h + off) = (char)next_rand();
		}
	}
	if (started)
		pthread_join(th, NULL);
	else
		churn(NULL);
	/* Until the consumer has read (or got past) everything published
	 * meanwhile, for at most 20 s: what comes next is then never behind
	 * a record the chaos damaged. */
	for (int i = 0; h && i < 2000; i++) {
		uint32_t behind = 0;
		for (uint32_t k = 0; k < ring_count; k++) {
			struct ha_ring_hdr *x = ha_ring_at(ring_base, ds, k);
			uint64_t prod = __atomic_load_n(&x->prod, __ATOMIC_ACQUIRE);
			behind += __atomic_load_n(&x->cons, __ATOMIC_ACQUIRE) != prod;
		}
		if (!behind)
			break;
		struct timespec t = { 0, 10 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	printf("done chaos sum=%llu\n", (unsigned long long)churn_sum);
}

int main(void)
{
	char line[256], word[64];
	long n;
	unsigned long seed;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "leak %ld %63s", &n, word) == 2) {
			void *(*fn)(void) = strcmp(word, "before") == 0    ? leak_before
			                    : strcmp(word, "between") == 0 ? leak_between
			                                                   : leak_after;
			for (long i = 0; i < n && nkeep < KEEP_MAX; i++)
				keep[nkeep++] = fn();
			printf("done leak %ld %s\n", n, word);
		} else if (sscanf(line, "forge %63s", word) == 1) {
			forge(word);
			printf("done forge %s\n", word);
		} else if (sscanf(line, "pos %63s", word) == 1) {
			positions(word);
			printf("done pos %s\n", word);
		} else if (sscanf(line, "flood %ld", &n) == 1) {
			flood(n);
			printf("done flood %ld\n", n);
		} else if (sscanf(line, "chaos %ld %lu", &n, &seed) == 2) {
			chaos(n, seed);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	uint64_t sum = 0;
	for (int i = 0; i < nkeep; i++) {
		sum += keep[i] ? ((unsigned char *)keep[i])[999] : 0;
		free(keep[i]);
	}
	printf("bye kept=%d sum=%llu\n", nkeep, (unsigned long long)sum);
	return 0;
}
