/* reach_mark_test.c -- the chunk walk and the mark on a heap laid out in
 * the test's own memory, as glibc lays out its chunks: blocks held by a
 * global, through a heap array (by a pointer into the middle of a block),
 * a dropped parent with its child, a dropped cycle, a block pointed to
 * only by a free chunk, one only by a tcache, and the header pointers the
 * bins hold (no reference to the chunk before).  The origins and hops the
 * mark gives each are checked too. */
#include "reach_int.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static uint8_t heap[1 << 16] __attribute__((aligned(64)));
static uint64_t globals[16];
static size_t used;

static long read_local(void *ctx, uint64_t addr, void *buf, size_t len, int whole)
{
	(void)ctx;
	(void)whole;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return (long)len;
}

/* A chunk of csize bytes (16-multiple) at the end: its user address.
 * The previous chunk is in use unless prev_free. */
static uint64_t chunk(size_t csize, int prev_free)
{
	uint64_t c = (uint64_t)(uintptr_t)heap + used;
	uint64_t size = csize | (prev_free ? 0 : 1);
	memcpy(heap + used + 8, &size, 8);
	used += csize;
	return c + 16;
}

static void put(uint64_t at, uint64_t v)
{
	memcpy((void *)(uintptr_t)at, &v, 8);
}

int main(void)
{
	uint64_t a = chunk(64, 0);      /* held by globals[0] */
	uint64_t arr = chunk(80, 0);    /* held by globals[1]: holds b */
	uint64_t b = chunk(128, 0);     /* held through arr, by a pointer into its middle */
	uint64_t parent = chunk(48, 0); /* dropped: holds child */
	uint64_t child = chunk(48, 0);
	uint64_t cyc1 = chunk(32, 0);   /* a dropped cycle */
	uint64_t cyc2 = chunk(32, 0);
	uint64_t freed = chunk(64, 0);  /* free: holds orphan; globals[2] points at it */
	uint64_t orphan = chunk(64, 1); /* its PREV_INUSE is 0: freed is free */
	uint64_t tc = chunk(0x290, 0);  /* a tcache: entry 0 points at cached */
	uint64_t cached = chunk(64, 0);
	uint64_t after_bin = chunk(64, 0); /* globals[4] points at its header */
	uint64_t top = chunk(sizeof heap - used, 0);
	(void)top;

	put(arr + 24, b + 40);
	put(parent + 8, child);
	put(cyc1, cyc2);
	put(cyc2, cyc1 + 8);
	put(freed + 16, orphan);
	uint16_t one = 1;
	memcpy((void *)(uintptr_t)tc, &one, 2);
	put(tc + 128, cached);
	globals[0] = a;
	globals[1] = arr;
	globals[2] = freed;
	globals[3] = tc;
	globals[4] = after_bin - 16; /* a bin's pointer: the chunk's header */

	struct reach_range ranges[2] = {
		{ (uint64_t)(uintptr_t)heap, (uint64_t)(uintptr_t)heap + sizeof heap, 0 },
		{ (uint64_t)(uintptr_t)globals, (uint64_t)(uintptr_t)globals + sizeof globals, 0 },
	};
	if (ranges[0].lo > ranges[1].lo) {
		struct reach_range t = ranges[0];
		ranges[0] = ranges[1];
		ranges[1] = t;
	}
	struct reach_mem m = { .read = read_local, .ranges = ranges, .nranges = 2 };
	struct reach_heap h = { 0 };
	reach_heap_walk_one(&m, (uint64_t)(uintptr_t)heap, (uint64_t)(uintptr_t)heap + sizeof heap, &h);
	reach_heap_sort(&h);
	EXPECT(h.n == 11, "chunks in use: %zu, want 11 (freed and top left out)", h.n);
	EXPECT(reach_heap_find(&h, freed) == NULL, "the free chunk is not a block");
	EXPECT(reach_heap_find(&h, b + 100) && reach_heap_find(&h, b + 100)->lo == b,
	       "an interior address finds its chunk");
	EXPECT(reach_heap_find(&h, b - 16) == NULL, "a header address finds no chunk");
	struct reach_chunk *tcc = reach_heap_find(&h, tc);
	EXPECT(tcc && tcc->noscan, "the tcache is recognised as the allocator's");

	struct reach_marker k = { .h = &h, .m = &m };
	reach_mark_range(&k, (uint64_t)(uintptr_t)globals, (uint64_t)(uintptr_t)(globals + 16),
	                 REACH_ROOT_GLOBAL, 0);
	reach_mark_drain(&k);

	struct {
		const char *what;
		uint64_t addr;
		int reached;
		int hops;
		uint64_t root_at;
	} want[] = {
		{ "a (global)", a, 1, 0, (uint64_t)(uintptr_t)&globals[0] },
		{ "arr (global)", arr, 1, 0, (uint64_t)(uintptr_t)&globals[1] },
		{ "b (through arr, interior)", b, 1, 1, (uint64_t)(uintptr_t)&globals[1] },
		{ "parent (dropped)", parent, 0, 0, 0 },
		{ "child of a dropped parent", child, 0, 0, 0 },
		{ "cycle 1", cyc1, 0, 0, 0 },
		{ "cycle 2", cyc2, 0, 0, 0 },
		{ "orphan (only a free chunk held it)", orphan, 0, 0, 0 },
		{ "tcache", tc, 1, 0, (uint64_t)(uintptr_t)&globals[3] },
		{ "cached (only a tcache held it)", cached, 0, 0, 0 },
		{ "after_bin (only its header pointed at)", after_bin, 0, 0, 0 },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct reach_chunk *c = reach_heap_find(&h, want[i].addr);
		EXPECT(c != NULL, "%s: no chunk", want[i].what);
		if (!c)
			continue;
		EXPECT(!!c->origin == want[i].reached, "%s: reached %d, want %d", want[i].what,
		       !!c->origin, want[i].reached);
		if (!c->origin || !want[i].reached)
			continue;
		EXPECT(c->hops == want[i].hops, "%s: hops %u, want %d", want[i].what, c->hops,
		       want[i].hops);
		const struct reach_origin *o = &k.orig[c->origin - 1];
		EXPECT(o->kind == REACH_ROOT_GLOBAL && o->at == want[i].root_at,
		       "%s: origin kind %d at %#llx, want global at %#llx", want[i].what, o->kind,
		       (unsigned long long)o->at, (unsigned long long)want[i].root_at);
	}

	/* A register holding a pointer into the dropped parent reaches it and
	 * its child, one hop on. */
	reach_mark_value(&k, parent + 4, REACH_ROOT_REGISTER, 42, 10);
	reach_mark_drain(&k);
	struct reach_chunk *pc = reach_heap_find(&h, parent), *cc = reach_heap_find(&h, child);
	EXPECT(pc && pc->origin && k.orig[pc->origin - 1].kind == REACH_ROOT_REGISTER &&
	               k.orig[pc->origin - 1].tid == 42,
	       "parent reached from tid 42's register");
	EXPECT(cc && cc->origin == pc->origin && cc->hops == 1, "child reached one hop on");
	EXPECT(k.bytes_scanned > 0, "bytes scanned counted");

	reach_marker_free(&k);
	reach_heap_free(&h);
	reach_mem_free(&m);
	return UNIT_RESULT("glibc's chunks walked, the mark from roots through interior pointers, "
	                   "free chunks and tcaches never scanned");
}
