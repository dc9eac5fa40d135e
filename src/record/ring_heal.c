/* ring_heal.c -- getting the consumer past what a target wrote over its
 * ring (see ring_heal.h).  Only the consumer's side of ha_ring.h is used;
 * positions are compared as distances, since the target chooses them and
 * they wrap at 2^64. */
#include "ring_heal.h"

#include "ha_ring.h"

int ha_ring_heal_positions(struct ha_ring_heal *st, struct ha_ring_hdr *h, uint64_t data_size,
                           uint64_t interval, uint64_t *pos, uint64_t *rpos)
{
	int moved = 0;
	uint64_t iv = __atomic_load_n(&h->interval, __ATOMIC_RELAXED);
	if (iv != interval) {
		__atomic_store_n(&h->interval, interval, __ATOMIC_RELAXED);
		st->repairs += iv != 0;
	}
	uint64_t prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	if (prod % HA_RING_ALIGN) {
		/* Every later reservation would be misaligned, every record
		 * corrupt: round it up (a producer's CAS in between wins, and
		 * the next check sees its prod). */
		uint64_t up = (prod + HA_RING_ALIGN - 1) & ~(uint64_t)(HA_RING_ALIGN - 1);
		if (__atomic_compare_exchange_n(&h->prod, &prod, up, 0, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			prod = up;
		st->repairs++;
	}
	if (prod % HA_RING_ALIGN == 0 && prod - *pos > data_size) {
		/* Producers reserve from prod: ahead of the window, or behind
		 * cons (where they would spin).  Follow them.  (What lay
		 * between was never theirs: nothing is counted as skipped.) */
		*pos = *rpos = prod;
		st->have_corrupt = 0;
		st->repairs++;
		moved = 1;
	}
	if (__atomic_load_n(&h->cons, __ATOMIC_RELAXED) != *pos) {
		ha_ring_consume(h, *pos, 0);
		st->repairs++;
	}
	return moved;
}

int ha_ring_heal_corrupt(struct ha_ring_heal *st, struct ha_ring_hdr *h, uint64_t data_size,
                         uint64_t pos, uint64_t *rpos, double now, double wait_ms)
{
	int first = !st->have_corrupt || st->corrupt_pos != *rpos;
	if (first) {
		st->corrupt++;
		st->have_corrupt = 1;
		st->corrupt_pos = *rpos;
		st->corrupt_since = now;
	} else if (now - st->corrupt_since < wait_ms) {
		return 0; /* looked already: wait for the producers */
	}
	uint64_t prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	uint64_t next = ha_ring_find_next(h, data_size, *rpos, prod);
	if (!next && !first && prod % HA_RING_ALIGN == 0 && prod - *rpos <= data_size &&
	    prod != *rpos)
		next = prod;    /* nothing published after it all this time */
	if (!next || next - pos > data_size)
		return 0;
	st->skipped += next - *rpos;
	*rpos = next;
	st->have_corrupt = 0;
	return 1;
}
