/*
 * ha_ring.h -- the ring protocol of ha_proto.h as code: reserve/publish for
 * the producers (threads of the target, inside the agent's hooks) and
 * peek/consume for the single consumer (the attacher).  Kept in one header
 * so that both sides run the very same protocol.
 *
 * Producers: a CAS on prod reserves len bytes if they fit behind cons; the
 * record is written in place and published by a release store of its
 * header's stamp.  Consumer: an acquire load of the stamp at cons; anything
 * but the stamp of that position means reserved but not published yet.
 * After use it advances cons (release); it never writes to the data.
 *
 * A session has several such rings (ha_proto.h, section 4); each one
 * works as described here, apart from the wake-up word, which is the first
 * ring's for all (ha_ring_publish, ha_rings_wait).
 *
 * Wake-ups are batched: the consumer, finding the ring empty, sleeps on the
 * consumer_waiting futex for a short while (it polls); a producer makes the
 * FUTEX_WAKE system call only when the flag is set AND the ring is a quarter
 * full, so a target thread almost never enters the kernel for us.  The flag
 * is read without a fence: a wake-up may be missed, the poll period bounds
 * what that costs.  With
 * --block, a producer facing a full ring sleeps on the low word of cons
 * until the consumer moves it.
 *
 * Only atomics and raw system calls: usable inside the agent's hooks.
 */
#ifndef HA_RING_H
#define HA_RING_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "ha_proto.h"

static inline char *ha_ring_data(struct ha_ring_hdr *h)
{
	return (char *)h + HA_RING_HDR_SIZE;
}

static inline uint32_t ha_ring_round(uint32_t len)
{
	return (len + HA_RING_ALIGN - 1) & ~(HA_RING_ALIGN - 1);
}

static inline long ha_futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	/* Shared (not FUTEX_PRIVATE): the word lives in memory of two processes. */
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

/* Reserve len bytes (already rounded).  Returns where to write the record
 * (and its position in *at, for ha_ring_publish), or NULL when the ring is
 * full and block is 0 (the drop is counted).
 *
 * cons_seen (NULL: none) is the caller's own copy of cons, from an earlier
 * reservation on this ring, or 0.  cons only grows, so a record that fits
 * behind that copy fits behind cons itself: the load of cons, a line the
 * consumer writes after every batch (a miss across cores whenever it did),
 * is made only when the copy says the ring may be full. */
static inline void *ha_ring_reserve(struct ha_ring_hdr *h, uint64_t data_size, uint32_t len,
                                    int block, uint64_t *at, uint64_t *cons_seen)
{
	uint64_t pos = __atomic_load_n(&h->prod, __ATOMIC_RELAXED);
	if (len == 0 || len > data_size / 2)
		goto drop;
	for (;;) {
		uint64_t cons = cons_seen ? *cons_seen : 0;
		if (!cons_seen || (int64_t)(cons - pos) > 0 || pos + len - cons > data_size) {
			cons = __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE);
			if (cons_seen)
				*cons_seen = cons;
		}
		if ((int64_t)(cons - pos) > 0) {
			/* pos is stale (this thread was preempted after loading it
			 * while the consumer moved past it): not a full ring. */
			pos = __atomic_load_n(&h->prod, __ATOMIC_RELAXED);
			continue;
		}
		if (pos + len - cons > data_size) {
			if (!block)
				goto drop;
			struct timespec ts = { 0, 10L * 1000 * 1000 };
			__atomic_fetch_add(&h->producers_waiting, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&h->cons, __ATOMIC_SEQ_CST) == cons)
				ha_futex((uint32_t *)&h->cons, FUTEX_WAIT, (uint32_t)cons, &ts);
			__atomic_fetch_sub(&h->producers_waiting, 1, __ATOMIC_SEQ_CST);
			pos = __atomic_load_n(&h->prod, __ATOMIC_RELAXED);
			continue;
		}
		if (__atomic_compare_exchange_n(&h->prod, &pos, pos + len, 1, __ATOMIC_ACQ_REL,
		                                __ATOMIC_RELAXED)) {
			*at = pos;
			return ha_ring_data(h) + (pos & (data_size - 1));
		}
	}
drop:
	__atomic_fetch_add(&h->drops, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Publish a record written at rec, reserved at position at; wake the
 * consumer if it sleeps and the ring is a quarter full.  It sleeps on
 * wake, the first ring's consumer_waiting (ha_rings_wait), whichever ring
 * it waits for: a ring of its own clears that word too, so that a consumer
 * just going to sleep on it does not.  Only a record
 * that crosses a quarter of the ring looks: the flag shares a line with
 * what the consumer writes whenever it goes to sleep or wakes, a miss
 * across cores for every record that read it.  Between two looks at most
 * another quarter is written, so a sleeping consumer is woken by half
 * full at the latest (its poll period bounds a missed wake-up anyway). */
static inline void ha_ring_publish(struct ha_ring_hdr *h, uint32_t *wake, void *rec, uint64_t at,
                                   uint32_t len, uint16_t type, uint16_t flags)
{
	struct ha_rec_hdr *r = rec;
	r->len = len;
	r->type = type;
	r->flags = flags;
	__atomic_store_n(&r->stamp, ha_ring_stamp(at), __ATOMIC_RELEASE);
	/* No fence between the store and the load below: a full fence would
	 * make this thread wait until every line of the record it just wrote is
	 * its own (measured: 36% of the time of a sample write).  Without it a
	 * wake-up can be missed when the consumer is just going to sleep; it
	 * then sleeps at most its poll period, never misses a record. */
	uint64_t quarter = h->data_size / 4;
	if (((at + len) & (quarter - 1)) >= len)
		return; /* within one quarter */
	if (__atomic_load_n(&h->consumer_waiting, __ATOMIC_RELAXED)) {
		uint64_t fill = __atomic_load_n(&h->prod, __ATOMIC_RELAXED) -
		                __atomic_load_n(&h->cons, __ATOMIC_RELAXED);
		if (fill >= quarter &&
		    __atomic_exchange_n(&h->consumer_waiting, 0, __ATOMIC_SEQ_CST)) {
			if (wake != &h->consumer_waiting)
				__atomic_store_n(wake, 0, __ATOMIC_SEQ_CST);
			ha_futex(wake, FUTEX_WAKE, 1, NULL);
		}
	}
}

/* Consumer: the next published record at pos, or NULL (empty or not yet
 * published).  The stamp alone says whether it is there: the consumer does
 * not read prod per record, which would pull the line every producer's CAS
 * needs back and forth between the cores once per record.  Everything in
 * the ring is untrusted: a position that is not a multiple of HA_RING_ALIGN
 * (cons as the target left it: a header there would be misaligned), or a
 * length that is not one, shorter than a header or longer than a producer
 * may reserve sets *corrupt.  The caller still has to check that prod covers the record
 * (ha_ring_covers) before it gives the space back: a forged stamp must not
 * move cons past prod. */
static inline const struct ha_rec_hdr *ha_ring_peek(struct ha_ring_hdr *h, uint64_t data_size,
                                                    uint64_t pos, int *corrupt)
{
	*corrupt = pos % HA_RING_ALIGN != 0;
	if (*corrupt)
		return NULL;
	const struct ha_rec_hdr *r =
		(const struct ha_rec_hdr *)(ha_ring_data(h) + (pos & (data_size - 1)));
	if (__atomic_load_n(&r->stamp, __ATOMIC_ACQUIRE) != ha_ring_stamp(pos))
		return NULL;
	uint32_t len = __atomic_load_n(&r->len, __ATOMIC_RELAXED);
	if (len % HA_RING_ALIGN || len < sizeof *r || len > data_size / 2) {
		*corrupt = 1;
		return NULL;
	}
	return r;
}

/* Consumer: the position of the first published record after pos, below
 * prod, or 0 if there is none -- to go on past a record that was reserved
 * at pos and is never going to be published (its writer left the sample
 * path through a longjmp out of a signal handler).  A stamp matches only
 * its own position, so data an earlier lap left in between is never taken
 * for a record. */
static inline uint64_t ha_ring_find_next(struct ha_ring_hdr *h, uint64_t data_size, uint64_t pos,
                                         uint64_t prod)
{
	if (prod - pos > data_size)
		return 0;
	/* Distances from pos, not positions: these wrap at 2^64 (the target
	 * chooses them), and a p < prod loop then ran for ever. */
	for (uint64_t d = HA_RING_ALIGN; d < prod - pos; d += HA_RING_ALIGN) {
		uint64_t p = pos + d;
		int corrupt;
		const struct ha_rec_hdr *r = ha_ring_peek(h, data_size, p, &corrupt);
		if (r && prod - p >= __atomic_load_n(&r->len, __ATOMIC_RELAXED))
			return p;
	}
	return 0;
}

/* Consumer: does prod (loaded again only when *known_prod falls short)
 * reach end, for records from pos on?  A producer advances prod before it
 * stamps its record, and the stamp was loaded with acquire: for a genuine
 * record the fresh prod always covers it; 0 means a forged record. */
static inline int ha_ring_covers(struct ha_ring_hdr *h, uint64_t data_size, uint64_t pos,
                                 uint64_t end, uint64_t *known_prod)
{
	if (end - pos <= *known_prod - pos && *known_prod - pos <= data_size)
		return 1;
	uint64_t prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	if (prod - pos > data_size)
		return 0;
	*known_prod = prod;
	return end - pos <= prod - pos;
}

/* Consumer: done with len bytes at pos; move cons, wake blocked
 * producers.  Returns the new position. */
static inline uint64_t ha_ring_consume(struct ha_ring_hdr *h, uint64_t pos, uint64_t len)
{
	__atomic_store_n(&h->cons, pos + len, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&h->producers_waiting, __ATOMIC_SEQ_CST))
		ha_futex((uint32_t *)&h->cons, FUTEX_WAKE, INT32_MAX, NULL);
	return pos + len;
}

/* Consumer: sleep until one of n rings fills to a quarter or timeout_ms
 * passes (the poll period: what bounds the delay of a record).  Ring i is
 * rings[i], consumed up to pos[i]; the sleep is on the first ring's word
 * (ha_ring_publish).  Returns at once if a record is published at one of
 * the positions. */
static inline void ha_rings_wait(struct ha_ring_hdr *const *rings, const uint64_t *pos,
                                 uint32_t n, uint64_t data_size, int timeout_ms)
{
	int corrupt, ready = 0;
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
	for (uint32_t i = 0; i < n; i++)
		__atomic_store_n(&rings[i]->consumer_waiting, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < n && !ready; i++)
		ready = ha_ring_peek(rings[i], data_size, pos[i], &corrupt) || corrupt;
	if (!ready)
		ha_futex(&rings[0]->consumer_waiting, FUTEX_WAIT, 1, &ts);
	for (uint32_t i = 0; i < n; i++)
		__atomic_store_n(&rings[i]->consumer_waiting, 0, __ATOMIC_RELAXED);
}

/* The same for a single ring. */
static inline void ha_ring_wait(struct ha_ring_hdr *h, uint64_t data_size, uint64_t pos,
                                int timeout_ms)
{
	ha_rings_wait(&h, &pos, 1, data_size, timeout_ms);
}

#endif /* HA_RING_H */
