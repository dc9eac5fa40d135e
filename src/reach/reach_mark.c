/* reach_mark.c -- the mark: from the roots through the heap's chunks.
 *
 * Every aligned word of a root that points into a chunk's bytes (its
 * start or anywhere inside: interior pointers count) reaches that chunk,
 * if nothing reached it before; the chunk remembers the root (an origin:
 * kind, thread, the root word's address or register) and its hops from
 * it.  Then breadth first: each chunk reached is read and its words reach
 * further chunks with the same origin and one hop more, so a block's hops
 * are the fewest from the first root that reached it.  A chunk the
 * allocator owns (noscan: a tcache) is reached but never read. */
#include "reach_int.h"

#include <stdlib.h>
#include <string.h>

static uint32_t new_origin(struct reach_marker *k, int kind, pid_t tid, int reg, uint64_t at)
{
	if (k->norig == k->caporig) {
		size_t cap = k->caporig ? k->caporig * 2 : 1024;
		struct reach_origin *v = realloc(k->orig, cap * sizeof *v);
		if (!v) {
			k->oom = 1;
			return 0;
		}
		k->orig = v;
		k->caporig = cap;
	}
	k->orig[k->norig] = (struct reach_origin){ .kind = (uint8_t)kind, .reg = (uint8_t)reg,
	                                           .tid = tid, .at = at };
	return (uint32_t)++k->norig;
}

static void push(struct reach_marker *k, uint32_t idx)
{
	if (k->qtail == k->qcap) {
		/* drop what was popped, then grow */
		if (k->qhead > 0) {
			memmove(k->queue, k->queue + k->qhead, (k->qtail - k->qhead) * sizeof *k->queue);
			k->qtail -= k->qhead;
			k->qhead = 0;
		}
		if (k->qtail == k->qcap) {
			size_t cap = k->qcap ? k->qcap * 2 : 4096;
			uint32_t *v = realloc(k->queue, cap * sizeof *v);
			if (!v) {
				k->oom = 1;
				return;
			}
			k->queue = v;
			k->qcap = cap;
		}
	}
	k->queue[k->qtail++] = idx;
}

/* v reaches its chunk (if any, not reached yet) from origin o (0: make
 * one from kind/tid/reg/at) at hops. */
static void reach_one(struct reach_marker *k, uint64_t v, uint32_t *o, int kind, pid_t tid,
                      int reg, uint64_t at, uint16_t hops)
{
	struct reach_chunk *c = reach_heap_find(k->h, v);
	if (!c || c->origin)
		return;
	if (!*o)
		*o = new_origin(k, kind, tid, reg, at);
	if (!*o)
		return;
	c->origin = *o;
	c->hops = hops;
	push(k, (uint32_t)(c - k->h->v));
}

void reach_mark_value(struct reach_marker *k, uint64_t v, int kind, pid_t tid, int reg)
{
	uint32_t o = 0;
	reach_one(k, v, &o, kind, tid, reg, 0, 0);
}

/* Scan [lo, hi): each word's target reached from origin o (0: a new one
 * per root word) at hops. */
static void scan(struct reach_marker *k, uint64_t lo, uint64_t hi, uint32_t o, int kind,
                 pid_t tid, uint16_t hops)
{
	lo = (lo + 7) & ~7ull;
	while (lo + 8 <= hi) {
		size_t len;
		const uint8_t *p = reach_mem_get(k->m, lo, hi - lo, &len);
		if (!p) {
			lo += len;
			lo = (lo + 7) & ~7ull;
			continue;
		}
		size_t words = len / 8;
		k->bytes_scanned += words * 8;
		for (size_t i = 0; i < words; i++) {
			uint64_t v;
			memcpy(&v, p + 8 * i, 8);
			if (v < 4096)
				continue;
			uint32_t oo = o;
			reach_one(k, v, &oo, kind, tid, 0, lo + 8 * i, hops);
		}
		if (words == 0)
			break;
		lo += words * 8;
	}
}

void reach_mark_range(struct reach_marker *k, uint64_t lo, uint64_t hi, int kind, pid_t tid)
{
	scan(k, lo, hi, 0, kind, tid, 0);
}

void reach_mark_drain(struct reach_marker *k)
{
	while (k->qhead < k->qtail && !k->oom) {
		uint32_t idx = k->queue[k->qhead++];
		struct reach_chunk *c = &k->h->v[idx];
		if (c->noscan)
			continue;
		uint16_t hops = c->hops < UINT16_MAX ? (uint16_t)(c->hops + 1) : UINT16_MAX;
		scan(k, c->lo, c->hi, c->origin, 0, 0, hops);
	}
}

void reach_marker_free(struct reach_marker *k)
{
	free(k->orig);
	free(k->queue);
	k->orig = NULL;
	k->queue = NULL;
}
