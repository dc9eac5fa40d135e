/* reach_heap.c -- glibc's chunks in use, from the copy's memory.
 *
 * A chunk at c: prev_size at c, size at c + 8 (flags in the low bits:
 * PREV_INUSE 1, IS_MMAPPED 2, NON_MAIN_ARENA 4), the user's bytes from
 * c + 16; the next chunk at c + size says in its PREV_INUSE whether c is
 * in use.  The heaps:
 *  - the main arena's, the [heap] mapping, first chunk at its start;
 *  - each thread arena's heaps: mappings at 64 MiB boundaries (HEAP_MAX)
 *    starting with a heap_info (ar_ptr, prev, size, ...); the first heap
 *    of an arena holds the arena's malloc_state after it, so the first
 *    chunk is found by trying the 16-byte aligned places after the header
 *    and keeping the one whose walk ends exactly at the heap's end;
 *  - mmapped chunks: anonymous mappings starting with prev_size 0 and a
 *    page-multiple size with IS_MMAPPED (adjacent ones merge into one
 *    mapping: walked one after another).
 * A chunk of 0x290 bytes laid out as a tcache (64 counts, then 64 entries,
 * a count 0 exactly where an entry is NULL) is the allocator's own: its
 * entries point at free chunks, so it is never scanned.  Free chunks are
 * left out (their old bytes would hold stale pointers); a chunk's bytes
 * are [c + 16, c + size): a pointer to a chunk's header (the bins') is no
 * pointer into the chunk before it.  Sizes that do not add up end the walk
 * of that heap (a corrupt or foreign heap is never followed outside it). */
#include "reach_int.h"

#include <stdlib.h>
#include <string.h>

#define PREV_INUSE     1u
#define IS_MMAPPED     2u
#define HEAP_MAX       (64ull << 20)
#define TCACHE_CHUNK   0x290u
#define MIN_CHUNK      32u

int reach_heap_add(struct reach_heap *h, uint64_t lo, uint64_t hi, int noscan)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 4096;
		struct reach_chunk *v = realloc(h->v, cap * sizeof *v);
		if (!v)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n++] = (struct reach_chunk){ .lo = lo, .hi = hi, .noscan = (uint8_t)noscan };
	return 0;
}

static int add_area(struct reach_heap *h, uint64_t lo, uint64_t hi)
{
	if (h->nareas == h->capareas) {
		size_t cap = h->capareas ? h->capareas * 2 : 64;
		struct reach_range *v = realloc(h->areas, cap * sizeof *v);
		if (!v)
			return -1;
		h->areas = v;
		h->capareas = cap;
	}
	h->areas[h->nareas++] = (struct reach_range){ lo, hi, 0 };
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct reach_chunk *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int area_by_lo(const void *a, const void *b)
{
	const struct reach_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void reach_heap_sort(struct reach_heap *h)
{
	/* (qsort's array must not be NULL, even for no element) */
	if (h->n)
		qsort(h->v, h->n, sizeof *h->v, by_lo);
	if (h->nareas)
		qsort(h->areas, h->nareas, sizeof *h->areas, area_by_lo);
}

struct reach_chunk *reach_heap_find(const struct reach_heap *h, uint64_t addr)
{
	size_t lo = 0, hi = h->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->v[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->n && h->v[lo].lo <= addr && addr < h->v[lo].hi)
		return &h->v[lo];
	return NULL;
}

void reach_heap_free(struct reach_heap *h)
{
	free(h->v);
	free(h->areas);
	memset(h, 0, sizeof *h);
}

/* Is the chunk with user bytes at user a tcache_perthread_struct? */
static int is_tcache(struct reach_mem *m, uint64_t user)
{
	size_t len;
	const uint8_t *p = reach_mem_get(m, user, TCACHE_CHUNK - 16, &len);
	if (!p || len < 64 * 2 + 64 * 8)
		return 0;
	for (int i = 0; i < 64; i++) {
		uint16_t count;
		uint64_t entry;
		memcpy(&count, p + 2 * (size_t)i, 2);
		memcpy(&entry, p + 128 + 8 * (size_t)i, 8);
		if ((count == 0) != (entry == 0) || count > 0x7fff)
			return 0;
	}
	return 1;
}

/* Does a walk from first end exactly at end?  (The check of a first chunk.) */
static int walk_ends_at(struct reach_mem *m, uint64_t first, uint64_t end)
{
	uint64_t c = first;
	for (int steps = 0; c < end && steps < 1000000; steps++) {
		uint64_t size;
		if (reach_mem_word(m, c + 8, &size) != 0)
			return 0;
		size &= ~7ull;
		if (size < MIN_CHUNK || size % 16 || size > end - c)
			return 0;
		c += size;
	}
	return c == end;
}

void reach_heap_walk_one(struct reach_mem *m, uint64_t first, uint64_t end, struct reach_heap *h)
{
	uint64_t c = first, size;
	if (reach_mem_word(m, c + 8, &size) != 0)
		return;
	for (;;) {
		uint64_t csize = size & ~7ull;
		if (csize < MIN_CHUNK || csize % 16 || csize > end - c)
			return;
		uint64_t next = c + csize;
		if (next + 16 > end)
			return; /* c is the top chunk: free */
		uint64_t nsize;
		if (reach_mem_word(m, next + 8, &nsize) != 0)
			return;
		if (nsize & PREV_INUSE) {
			int own = csize == TCACHE_CHUNK && is_tcache(m, c + 16);
			if (reach_heap_add(h, c + 16, next, own) != 0)
				return;
		}
		c = next;
		size = nsize;
	}
}

/* A thread arena's heap at [lo, hi): its first chunk, 0 if none fits. */
static uint64_t arena_first_chunk(struct reach_mem *m, uint64_t lo, uint64_t end)
{
	uint64_t ar_ptr;
	if (reach_mem_word(m, lo, &ar_ptr) != 0)
		return 0;
	/* The first heap of an arena: malloc_state (about 2200 bytes on
	 * x86_64) right after the header; another heap: the chunks right
	 * after the header (32 or 48 bytes). */
	uint64_t from = lo + 32, to = lo + 64;
	if (ar_ptr > lo && ar_ptr < lo + 128) {
		from = ar_ptr + 1024;
		to = ar_ptr + 4096;
	}
	for (uint64_t c = from; c <= to && c < end; c += 16)
		if (walk_ends_at(m, c, end))
			return c;
	return 0;
}

static void walk_mmapped(struct reach_mem *m, const struct ha_map *e, struct reach_heap *h)
{
	uint64_t c = e->start;
	while (c + 16 <= e->end) {
		uint64_t prev, size;
		if (reach_mem_word(m, c, &prev) != 0 || reach_mem_word(m, c + 8, &size) != 0)
			return;
		uint64_t csize = size & ~7ull;
		if (prev != 0 || (size & 7) != IS_MMAPPED || csize % 4096 || csize == 0 ||
		    csize > e->end - c)
			return;
		if (reach_heap_add(h, c + 16, c + csize, 0) != 0 || add_area(h, c, c + csize) != 0)
			return;
		c += csize;
	}
}

int reach_heap_walk(struct reach_mem *m, const struct ha_maps *maps, struct reach_heap *h)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct ha_map *e = &maps->v[i];
		if (e->shared || (e->prot & 3) != 3)
			continue;
		if (strcmp(e->path, "[heap]") == 0) {
			reach_heap_walk_one(m, e->start, e->end, h);
			if (add_area(h, e->start, e->end) != 0)
				return -1;
		} else if (e->path[0] == '\0' && e->start % HEAP_MAX == 0 &&
		           e->end - e->start <= HEAP_MAX) {
			uint64_t hsize;
			uint64_t first = 0;
			if (reach_mem_word(m, e->start + 16, &hsize) == 0 && hsize >= 4096 &&
			    hsize <= e->end - e->start)
				first = arena_first_chunk(m, e->start, e->start + hsize);
			if (first) {
				reach_heap_walk_one(m, first, e->start + hsize, h);
				if (add_area(h, e->start, e->end) != 0)
					return -1;
			} else {
				walk_mmapped(m, e, h);
			}
		} else if (e->path[0] == '\0') {
			walk_mmapped(m, e, h);
		}
	}
	reach_heap_sort(h);
	return 0;
}
