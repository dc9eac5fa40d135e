/* ring_check -- the ring protocol (src/proto/ha_ring.h) under load: several
 * producer threads write numbered records of varying sizes through one
 * mapping of a memfd while the consumer reads through a second mapping, as
 * the agent and the attacher do.  Checks that every record arrives exactly
 * once and intact (the ring wraps hundreds of times: no stale record is taken
 * again), that drops are counted when the consumer is slow, that --block
 * mode loses nothing, that stale headers are not records, and that corrupt
 * headers are detected. */
#define _GNU_SOURCE
#include <pthread.h>
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
		ha_ring_publish(a->h, rec, at, len, HA_REC_FREE, 0);
		__atomic_fetch_add(&a->written, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int run(int block, int slow)
{
	int fd = memfd_create("ring_check", 0);
	if (fd < 0 || ftruncate(fd, HA_RING_HDR_SIZE + DATA_SIZE) != 0)
		return perror("memfd"), 1;
	struct ha_ring_hdr *prod_view = ha_ring_map(fd, DATA_SIZE);
	struct ha_ring_hdr *cons_view = ha_ring_map(fd, DATA_SIZE);
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
		ha_ring_publish(prod_view, next, at2, 32, HA_REC_FREE, 0);
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
	ha_ring_publish(prod_view, rec, at, 16, HA_REC_FREE, 0);
	__atomic_store_n(&((struct ha_rec_hdr *)rec)->len, 13u, __ATOMIC_RELEASE);
	int corrupt = 0;
	if (ha_ring_peek(cons_view, DATA_SIZE, pos, &corrupt) || !corrupt) {
		fprintf(stderr, "corrupt header not detected\n");
		return 1;
	}
	ha_ring_unmap(prod_view, DATA_SIZE);
	ha_ring_unmap(cons_view, DATA_SIZE);
	close(fd);
	return 0;
}

int main(void)
{
	int rc = run(0, 0) || run(0, 1) || run(1, 1);
	printf(rc ? "ring_check: FAILED\n" : "ring_check: ok\n");
	return rc;
}
