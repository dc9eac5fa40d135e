/* ring_test -- the ring protocol (src/proto/ha_ring.h) under load: several
 * producer threads write numbered records of varying sizes through one
 * mapping of a memfd while the consumer reads through a second mapping, as
 * the agent and the attacher do.  Checks that every record arrives exactly
 * once and intact (the ring wraps hundreds of times: no stale record is taken
 * again), that drops are counted when the consumer is slow, that --block
 * mode loses nothing, that stale headers are not records, and that corrupt
 * headers are detected.  Then several rings in one memfd, read one after
 * the other: the records of each "block" arrive in order, and a record in
 * any ring wakes the consumer. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ha_ring.h"
#include "ha_ring_map.h"

#define NPROD 4
#define PER_PROD 200000
#define DATA_SIZE (64u << 10)

struct prod_arg {
	struct ha_ring_hdr *h;
	uint32_t id;
	int block;
	uint64_t written;
};

static void *producer(void *p)
{
	struct prod_arg *a = p;
	/* Half the producers keep their own copy of cons, as the agent does. */
	uint64_t cons_seen = 0;
	for (uint32_t i = 0; i < PER_PROD; i++) {
		uint32_t body = 8 + (i * 7 + a->id * 13) % 200;
		uint32_t len = ha_ring_round((uint32_t)sizeof(struct ha_rec_hdr) + 8 + body);
		uint64_t at;
		char *rec = ha_ring_reserve(a->h, DATA_SIZE, len, a->block, &at, a->id & 1 ? &cons_seen : NULL);
		if (!rec)
			continue;
		uint32_t tag[2] = { a->id, i };
		memcpy(rec + sizeof(struct ha_rec_hdr), tag, sizeof tag);
		memset(rec + sizeof(struct ha_rec_hdr) + 8, (int)((a->id + i) & 0xff), len - sizeof(struct ha_rec_hdr) - 8);
		ha_ring_publish(a->h, &a->h->consumer_waiting, rec, at, len, HA_REC_FREE, 0);
		__atomic_fetch_add(&a->written, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int run(int block, int slow)
{
	int fd = memfd_create("ring_test", 0);
	if (fd < 0 || ftruncate(fd, HA_RING_HDR_SIZE + DATA_SIZE) != 0)
		return perror("memfd"), 1;
	struct ha_ring_hdr *prod_view = ha_ring_map(fd, DATA_SIZE, 1);
	struct ha_ring_hdr *cons_view = ha_ring_map(fd, DATA_SIZE, 1);
	if (prod_view == MAP_FAILED || cons_view == MAP_FAILED)
		return perror("map"), 1;
	cons_view->data_size = DATA_SIZE;

	struct prod_arg args[NPROD];
	pthread_t th[NPROD];
	for (uint32_t i = 0; i < NPROD; i++) {
		args[i] = (struct prod_arg){ prod_view, i, block, 0 };
		pthread_create(&th[i], NULL, producer, &args[i]);
	}
	uint32_t next[NPROD] = { 0 };
	uint64_t got = 0, pos = 0, known_prod = 0, want_min = block ? (uint64_t)NPROD * PER_PROD : 1;
	int done = 0, errors = 0;
	while (!done) {
		int corrupt;
		const struct ha_rec_hdr *r = ha_ring_peek(cons_view, DATA_SIZE, pos, &corrupt);
		if (corrupt) {
			fprintf(stderr, "corrupt ring at %llu\n", (unsigned long long)pos);
			return 1;
		}
		if (!r) {
			uint64_t written = 0;
			for (int i = 0; i < NPROD; i++)
				written += __atomic_load_n(&args[i].written, __ATOMIC_SEQ_CST);
			uint64_t drops = __atomic_load_n(&cons_view->drops, __ATOMIC_SEQ_CST);
			if (written + drops == (uint64_t)NPROD * PER_PROD && got == written)
				done = 1;
			else
				ha_ring_wait(cons_view, DATA_SIZE, pos, 10);
			continue;
		}
		if (!ha_ring_covers(cons_view, DATA_SIZE, pos, pos + r->len, &known_prod)) {
			fprintf(stderr, "published record at %llu beyond prod\n", (unsigned long long)pos);
			return 1;
		}
		uint32_t tag[2];
		memcpy(tag, (const char *)r + sizeof *r, sizeof tag);
		const unsigned char *body = (const unsigned char *)r + sizeof *r + 8;
		for (uint32_t k = 0; k < r->len - sizeof *r - 8; k++)
			if (body[k] != ((tag[0] + tag[1]) & 0xff)) {
				errors++;
				break;
			}
		if (tag[0] >= NPROD || tag[1] < next[tag[0]])
			errors++; /* duplicate or out of order within a producer */
		else
			next[tag[0]] = tag[1] + 1;
		got++;
		if (slow && got % 64 == 0)
			usleep(50); /* make the consumer slow so that the ring fills */
		pos = ha_ring_consume(cons_view, pos, r->len);
	}
	for (int i = 0; i < NPROD; i++)
		pthread_join(th[i], NULL);
	uint64_t drops = cons_view->drops;
	printf("block=%d slow=%d: %llu records received, %llu dropped, %d errors\n", block, slow,
	       (unsigned long long)got, (unsigned long long)drops, errors);
	if (errors || got < want_min || (block && drops) || got + drops != (uint64_t)NPROD * PER_PROD)
		return 1;
	if (slow && !block && drops == 0) {
		fprintf(stderr, "a slow consumer should have caused drops\n");
		return 1;
	}

	/* Whatever an earlier lap left at the next position is not a record,
	 * even a header whose stamp is the position itself or the stamp of the
	 * position one lap earlier, with a valid length. */
	struct ha_rec_hdr *stale = (struct ha_rec_hdr *)(ha_ring_data(prod_view) + (pos & (DATA_SIZE - 1)));
	uint64_t fakes[] = { pos, ha_ring_stamp(pos - DATA_SIZE), 0 };
	__atomic_fetch_add(&prod_view->prod, 32, __ATOMIC_SEQ_CST); /* as if reserved */
	for (unsigned i = 0; i < sizeof fakes / sizeof fakes[0]; i++) {
		stale->len = 32;
		stale->type = HA_REC_FREE;
		__atomic_store_n(&stale->stamp, fakes[i], __ATOMIC_RELEASE);
		int c = 0;
		if (ha_ring_peek(cons_view, DATA_SIZE, pos, &c) || c) {
			fprintf(stderr, "stale header %u taken for a record\n", i);
			return 1;
		}
	}
	__atomic_fetch_sub(&prod_view->prod, 32, __ATOMIC_SEQ_CST);

	/* A record stamped for its position but never reserved (prod short of
	 * it): peek may take it, covers must refuse it, so that cons never
	 * passes prod (a producer would then spin on a stale prod). */
	stale->len = 32;
	__atomic_store_n(&stale->stamp, ha_ring_stamp(pos), __ATOMIC_RELEASE);
	{
		int c = 0;
		uint64_t kp = pos;
		const struct ha_rec_hdr *f = ha_ring_peek(cons_view, DATA_SIZE, pos, &c);
		if (c || (f && ha_ring_covers(cons_view, DATA_SIZE, pos, pos + f->len, &kp))) {
			fprintf(stderr, "an unreserved record was taken\n");
			return 1;
		}
	}
	__atomic_store_n(&stale->stamp, 0, __ATOMIC_RELEASE);

	/* A record reserved and never published (its writer longjmp'ed away):
	 * nothing to take at its position; with nothing published after it,
	 * nowhere to go on from; once a later record is published, that one is
	 * where the consumer goes on (and only that one: the space between is
	 * not taken for records). */
	{
		uint64_t at1 = 0, at2 = 0;
		char *lost = ha_ring_reserve(prod_view, DATA_SIZE, 96, 0, &at1, NULL);
		int c = 0;
		if (!lost || at1 != pos || ha_ring_peek(cons_view, DATA_SIZE, pos, &c) || c) {
			fprintf(stderr, "an unpublished reservation was taken for a record\n");
			return 1;
		}
		uint64_t prod = __atomic_load_n(&cons_view->prod, __ATOMIC_ACQUIRE);
		if (ha_ring_find_next(cons_view, DATA_SIZE, pos, prod) != 0) {
			fprintf(stderr, "a record was found after an abandoned one where none was published\n");
			return 1;
		}
		char *next = ha_ring_reserve(prod_view, DATA_SIZE, 32, 0, &at2, NULL);
		if (!next)
			return fprintf(stderr, "no room for the record after the abandoned one\n"), 1;
		ha_ring_publish(prod_view, &prod_view->consumer_waiting, next, at2, 32, HA_REC_FREE, 0);
		prod = __atomic_load_n(&cons_view->prod, __ATOMIC_ACQUIRE);
		uint64_t found = ha_ring_find_next(cons_view, DATA_SIZE, pos, prod);
		if (found != at2 || at2 != pos + 96) {
			fprintf(stderr, "going on past an abandoned record: found %llu, expected %llu\n",
			        (unsigned long long)found, (unsigned long long)at2);
			return 1;
		}
		const struct ha_rec_hdr *r = ha_ring_peek(cons_view, DATA_SIZE, found, &c);
		if (!r || c || r->len != 32)
			return fprintf(stderr, "the record after the abandoned one is unreadable\n"), 1;
		pos = ha_ring_consume(cons_view, pos, found + r->len - pos);
	}

	/* A corrupt header (odd length) must be reported, not followed. */
	uint64_t at = 0;
	char *rec = ha_ring_reserve(prod_view, DATA_SIZE, 16, 0, &at, NULL);
	ha_ring_publish(prod_view, &prod_view->consumer_waiting, rec, at, 16, HA_REC_FREE, 0);
	__atomic_store_n(&((struct ha_rec_hdr *)rec)->len, 13u, __ATOMIC_RELEASE);
	int corrupt = 0;
	if (ha_ring_peek(cons_view, DATA_SIZE, pos, &corrupt) || !corrupt) {
		fprintf(stderr, "corrupt header not detected\n");
		return 1;
	}
	ha_ring_unmap(prod_view, DATA_SIZE, 1);
	ha_ring_unmap(cons_view, DATA_SIZE, 1);
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Several rings in one memfd (ha_proto.h, section 4)                  */
/* ------------------------------------------------------------------ */

#define NRINGS 4
#define BLOCKS 64               /* "addresses" the producers write about */
#define PER_BLOCK 20000

struct block_arg {
	struct ha_ring_hdr *base;
	uint32_t id;
};

/* The address of block b: 64 MiB apart, so that they fall in every ring,
 * and two producers write about each block (the even and the odd
 * events of it, as a sample and its free come from two threads). */
static uint64_t block_addr(uint32_t b)
{
	return 0x7f0000000000ull + ((uint64_t)b << HA_RING_ROUTE_SHIFT) + (uint64_t)16 * b;
}

/* Producer id (0 or 1) writes the events id, id + 2, id + 4... of every
 * block, in turns with the other producer, as a sample and its free come
 * from two threads; an event waits until the block's previous one was
 * published (what a free waits for: the malloc that returned the block). */
static uint32_t published[BLOCKS];

static void *block_producer(void *p)
{
	struct block_arg *a = p;
	uint64_t cons_seen[NRINGS] = { 0 };
	for (uint32_t e = a->id; e < PER_BLOCK; e += 2)
		for (uint32_t b = 0; b < BLOCKS; b++) {
			while (__atomic_load_n(&published[b], __ATOMIC_ACQUIRE) != e)
				__builtin_ia32_pause();
			uint32_t r = ha_ring_route(block_addr(b), NRINGS);
			struct ha_ring_hdr *h = ha_ring_at(a->base, DATA_SIZE, r);
			uint64_t at;
			struct ha_rec_free *f = ha_ring_reserve(h, DATA_SIZE, sizeof *f, 1, &at,
			                                        &cons_seen[r]);
			f->addr = block_addr(b);
			f->seq = e;
			ha_ring_publish(h, &a->base->consumer_waiting, f, at, sizeof *f, HA_REC_FREE, 0);
			__atomic_store_n(&published[b], e + 1, __ATOMIC_RELEASE);
		}
	return NULL;
}

/* Once the consumer thread sleeps in the kernel with its flags set,
 * records to the last ring, 64 bytes each, never consumed, until the
 * consumer says it woke up. */
struct wake_arg {
	struct ha_ring_hdr *base, *last;
	pid_t consumer;
	int woken;
};

/* The state letter of thread tid of this process ('S': asleep), or 0. */
static char thread_state(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		(void)fclose(f);
	buf[n] = 0;
	char *e = strrchr(buf, ')'); /* the name may hold anything */
	if (e && e[1] == ' ')
		return e[2];
	return 0;
}

static void *wake_main(void *p)
{
	struct wake_arg *a = p;
	uint64_t at;
	while (!__atomic_load_n(&a->base->consumer_waiting, __ATOMIC_ACQUIRE) ||
	       thread_state(a->consumer) != 'S')
		sched_yield();
	while (!__atomic_load_n(&a->woken, __ATOMIC_ACQUIRE)) {
		void *r = ha_ring_reserve(a->last, DATA_SIZE, 64, 0, &at, NULL);
		if (r)
			ha_ring_publish(a->last, &a->base->consumer_waiting, r, at, 64, HA_REC_PAD, 0);
		else
			__builtin_ia32_pause();
	}
	return NULL;
}

/* Every block's events arrive once and in their order, though the rings
 * are read one after the other; the addresses of 64 MiB blocks fall in
 * every ring; a record in the last ring wakes a consumer that sleeps on
 * the first ring's word. */
static int run_rings(void)
{
	int fd = memfd_create("ring_test", 0);
	if (fd < 0 || ftruncate(fd, (off_t)ha_rings_file_size(DATA_SIZE, NRINGS)) != 0)
		return perror("memfd"), 1;
	struct ha_ring_hdr *prod_view = ha_ring_map(fd, DATA_SIZE, NRINGS);
	struct ha_ring_hdr *cons_view = ha_ring_map(fd, DATA_SIZE, NRINGS);
	if (prod_view == MAP_FAILED || cons_view == MAP_FAILED)
		return perror("map"), 1;
	struct ha_ring_hdr *rings[NRINGS];
	uint64_t pos[NRINGS] = { 0 }, per_ring[NRINGS] = { 0 };
	for (uint32_t i = 0; i < NRINGS; i++) {
		rings[i] = ha_ring_at(cons_view, DATA_SIZE, i);
		rings[i]->data_size = DATA_SIZE; /* what a producer wakes by */
	}
	for (uint32_t b = 0; b < BLOCKS; b++)
		per_ring[ha_ring_route(block_addr(b), NRINGS)]++;
	for (uint32_t i = 0; i < NRINGS; i++)
		if (per_ring[i] != BLOCKS / NRINGS)
			return fprintf(stderr, "ring %u has %llu of the blocks\n", i,
			               (unsigned long long)per_ring[i]), 1;

	struct block_arg args[2] = { { prod_view, 0 }, { prod_view, 1 } };
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, block_producer, &args[i]);
	uint32_t next[BLOCKS] = { 0 };
	uint64_t got = 0;
	int errors = 0;
	while (got < (uint64_t)BLOCKS * PER_BLOCK && !errors) {
		uint64_t before = got;
		for (uint32_t i = 0; i < NRINGS; i++) {
			/* A ring at a time, as far as it goes: the other rings
			 * run ahead meanwhile. */
			for (;;) {
				int corrupt;
				const struct ha_rec_hdr *r = ha_ring_peek(rings[i], DATA_SIZE, pos[i], &corrupt);
				if (corrupt)
					return fprintf(stderr, "corrupt ring %u\n", i), 1;
				if (!r)
					break;
				const struct ha_rec_free *f = (const struct ha_rec_free *)r;
				uint64_t b = (f->addr - 0x7f0000000000ull) >> HA_RING_ROUTE_SHIFT;
				if (b >= BLOCKS || ha_ring_route(f->addr, NRINGS) != i || f->seq != next[b]) {
					fprintf(stderr, "ring %u: block %llu event %llu, expected %u\n", i,
					        (unsigned long long)b, (unsigned long long)f->seq,
					        b < BLOCKS ? next[b] : 0);
					errors++;
					break;
				}
				next[b]++;
				got++;
				pos[i] = ha_ring_consume(rings[i], pos[i], r->len);
			}
		}
		if (got == before)
			ha_rings_wait(rings, pos, NRINGS, DATA_SIZE, 10);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("rings=%d: %llu records in order, %d errors\n", NRINGS, (unsigned long long)got,
	       errors);
	if (errors)
		return 1;

	/* The wake-up: the consumer sleeps (10 s at most) on the first ring's
	 * word; records go to the last ring until it wakes.  Without the wake
	 * it would sleep the whole 10 s. */
	struct wake_arg wa = { prod_view, ha_ring_at(prod_view, DATA_SIZE, NRINGS - 1),
	                       (pid_t)syscall(SYS_gettid), 0 };
	struct timespec t0, t1;
	pthread_t waker;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&waker, NULL, wake_main, &wa);
	ha_rings_wait(rings, pos, NRINGS, DATA_SIZE, 10000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	__atomic_store_n(&wa.woken, 1, __ATOMIC_RELEASE);
	pthread_join(waker, NULL);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	printf("a record in ring %d woke the consumer in %.1f ms\n", NRINGS - 1, ms);
	if (ms > 5000)
		return fprintf(stderr, "the consumer was not woken\n"), 1;
	ha_ring_unmap(prod_view, DATA_SIZE, NRINGS);
	ha_ring_unmap(cons_view, DATA_SIZE, NRINGS);
	close(fd);
	return 0;
}

int main(void)
{
	int rc = run(0, 0) || run(0, 1) || run(1, 1) || run_rings();
	printf(rc ? "ring_test: FAILED\n" : "ring_test: ok\n");
	return rc;
}
