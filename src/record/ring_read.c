/* ring_read.c -- reading one ring (see ring_read.h).
 *
 * The records were written on other cores, and each header tells where the
 * next one starts: read one after the other, every header is a cache miss
 * waiting for the previous one.  The lines ahead are asked for early
 * (RING_PREFETCH) so that the misses overlap; never past prod (lines still
 * being written stay with their writer). */
#define _GNU_SOURCE
#include "ring_read.h"

#include <string.h>

#include "ha_ring.h"
#include "rec_check.h"
#include "util.h"

#define RING_PREFETCH 8192    /* published bytes asked for ahead of the reader */

void ha_reader_init(struct ha_ring_reader *r, struct ha_ring_hdr *h, uint64_t data_size)
{
	memset(r, 0, sizeof *r);
	r->h = h;
	r->data_size = data_size;
	r->pos = r->rpos = __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE);
	r->stuck_pos = r->rpos + 1;
}

void ha_reader_heal(struct ha_ring_reader *r, uint64_t interval)
{
	if (ha_ring_heal_positions(&r->heal, r->h, r->data_size, interval, &r->pos, &r->rpos))
		r->stuck_pos = r->rpos + 1;
}

/* Copy out and check the record h of len bytes (len already checked
 * against the ring): rec_check.h. */
static void take_record(struct ha_rec_item *it, const struct ha_rec_hdr *h, uint32_t len,
                        struct ha_collector_stats *st)
{
	it->n = 0;
	it->sref_seq = 0;
	it->flags = __atomic_load_n(&h->flags, __ATOMIC_RELAXED);
	it->ok = ha_rec_take(h, len, &it->type, &it->s, &it->stack, &it->addr);
	if (!it->ok)
		st->corrupt_records++;
	it->py = NULL;
	if (it->ok && it->type == HA_REC_SAMPLE &&
	    !ha_rec_py_take(h, len, &it->s, &it->py, &it->py_n, &it->py_flags))
		it->py = NULL;
}

static void prefetch_ring(struct ha_ring_reader *r, uint64_t upto)
{
	const char *data = ha_ring_data(r->h);
	uint64_t mask = r->data_size - 1;
	/* Compared as distances from rpos: positions wrap at 2^64 (a target
	 * can start its ring there), and a pf < upto loop then ran for ever. */
	if (upto - r->rpos > r->pf_limit - r->rpos)
		upto = r->pf_limit;
	if ((int64_t)(r->pf - r->rpos) < 0)
		r->pf = r->rpos & ~(uint64_t)63;
	for (; (int64_t)(upto - r->pf) > 0; r->pf += 64)
		__builtin_prefetch(data + (r->pf & mask));
}

int ha_reader_skip_to_next(struct ha_ring_reader *r, struct ha_collector_stats *st)
{
	uint64_t prod = __atomic_load_n(&r->h->prod, __ATOMIC_ACQUIRE);
	uint64_t next = ha_ring_find_next(r->h, r->data_size, r->rpos, prod);
	if (!next || next - r->pos > r->data_size)
		return 0;
	st->abandoned++;
	r->rpos = next;
	r->stuck_pos = next + 1; /* not stuck at next (yet) */
	return 1;
}

/* Framing found no published record at rpos.  A writer that never comes
 * back to its reserved record (a longjmp out of a signal handler in the
 * middle of a sample) would stall the session for good: when nothing has
 * been published at rpos for HA_ABANDONED_MS while a later record has
 * been, go on from that one (the skipped space is consumed with the rest).
 * Returns 1 if rpos moved.  A writer only stopped for that long (SIGSTOP)
 * loses its record. */
static int skip_abandoned(struct ha_ring_reader *r, struct ha_collector_stats *st)
{
	double now = ha_now_ms();
	if (r->stuck_pos != r->rpos) {
		r->stuck_pos = r->rpos;
		r->stuck_since = now;
		return 0;
	}
	int hostile = r->heal.corrupt || r->heal.repairs || st->corrupt_records;
	if (now - r->stuck_since < (hostile ? HA_ABANDONED_HOSTILE_MS : HA_ABANDONED_MS))
		return 0;
	return ha_reader_skip_to_next(r, st);
}

int ha_reader_frame(struct ha_ring_reader *r, struct ha_rec_item *batch, int max,
                    struct ha_collector_stats *st)
{
	int k = 0;
	/* Only a bound for hints: a wrong prod from the target costs nothing. */
	r->pf_limit = __atomic_load_n(&r->h->prod, __ATOMIC_RELAXED);
	if (r->pf_limit - r->rpos > r->data_size)
		r->pf_limit = r->rpos;
	while (k < max) {
		int corrupt;
		const struct ha_rec_hdr *h = ha_ring_peek(r->h, r->data_size, r->rpos, &corrupt);
		uint32_t len = 0;
		if (h) {
			/* peek checked its own load of len; this one is what we use. */
			len = __atomic_load_n(&h->len, __ATOMIC_RELAXED);
			corrupt = len % HA_RING_ALIGN || len < sizeof *h ||
			          r->rpos + len - r->pos > r->data_size ||
			          !ha_ring_covers(r->h, r->data_size, r->rpos, r->rpos + len,
			                          &r->pf_limit);
		}
		if (corrupt) {
			/* A record we cannot frame (the target wrote over its
			 * ring): counted, and got past when that can be done. */
			uint64_t seen = r->heal.corrupt;
			int moved = ha_ring_heal_corrupt(&r->heal, r->h, r->data_size, r->pos, &r->rpos,
			                                 ha_now_ms(), HA_ABANDONED_MS);
			st->corrupt_records += r->heal.corrupt - seen;
			if (moved)
				continue;
			break;
		}
		if (!h) {
			if (skip_abandoned(r, st))
				continue;
			break;
		}
		prefetch_ring(r, r->rpos + len + RING_PREFETCH);
		struct ha_rec_item *it = &batch[k++];
		take_record(it, h, len, st);
		r->rpos += len;
		st->records++;
		st->ring_bytes += len;
		if (it->type == HA_REC_MODULES)
			break;
	}
	return k;
}

void ha_reader_consume(struct ha_ring_reader *r)
{
	if (r->rpos != r->pos)
		r->pos = ha_ring_consume(r->h, r->pos, r->rpos - r->pos);
}

uint64_t ha_reader_fill(const struct ha_ring_reader *r)
{
	return __atomic_load_n(&r->h->prod, __ATOMIC_RELAXED) - r->pos;
}

int ha_reader_stuck_on_corrupt(const struct ha_ring_reader *r)
{
	return r->heal.have_corrupt && r->heal.corrupt_pos == r->pos;
}
