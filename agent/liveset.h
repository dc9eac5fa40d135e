/*
 * liveset.h -- the set of sampled blocks still live, and its free filter
 * (liveset.c holds the storage).
 *
 * The set answers one question on every free: "could this address be a
 * sampled block?".  The filter gives the cheap negative answer (a shift, a
 * mask, one load); only when it says maybe does the free look at the set itself.
 * Nothing here locks or allocates; the functions below are inline because
 * the sampler's record path and the free hook use them (sampler.c,
 * hooks.c): keep their inlining as it is.
 *
 * The free filter: a byte per 4 KiB page of address space (modulo 512
 * MiB: HA_LS_PAGE_SLOTS of them), the number of live sampled blocks that
 * start in the pages it stands for.  The free hook's test is then a shift,
 * a mask and a byte load (8 instructions with the jump on; the hashed
 * filter of one bit per bucket it replaced took 14, and cost the hooks 4
 * points of the unhooked speed more in bench/run's in-process A/B: 0.887
 * against 0.924, the floor being 0.936).  A thread's frees touch the bytes
 * of the pages its blocks are on, a line per 256 KiB of heap, and glibc's
 * per-thread arenas, 64 MiB apart, fall on different lines for up to 8 of
 * them (512 MiB), so that a sample's write to the filter does not take away
 * a line another core's frees keep reading.
 *
 * False positives: a free of an unsampled block on a page where a sampled
 * one starts.  Where the heap is many small blocks, each sampled with
 * probability size/interval, a page holds a sampled block with
 * probability 1 - exp(-4096/interval): 0.8% at the default 512 KiB, 6% at
 * 64 KiB, about what the hashed filter gave at the same densities
 * (agent/liveset_test.c measures both, for every stride).  Denser sampling
 * (intervals of a few KiB) marks most pages, and most frees then look at
 * the set itself: a cache line.
 *
 * A count, not a bit, so that a remove knows when the page has no sampled
 * block left without looking at the set; the count saturates at 255 and
 * then stays (more than 255 live samples on one page, only at intervals of
 * a few bytes): a false positive for the rest of the session, never a
 * false negative.  A free never misses a sampled block: the insert counts
 * before malloc returns the block to the program, and only the free of a
 * counted block uncounts it.
 *
 * A bucket is one cache line of HA_LS_WAYS words: words 1.. hold the
 * addresses (word 0 is unused: it counted the entries once, a locked
 * operation of every sample that the ways themselves make needless).  One
 * line: a sample and the free of a sampled block each move one line of
 * the set between cores, not two.  A block whose bucket is full is not
 * tracked (ha_ls_insert returns 0; the sampler counts it as untracked, a
 * drop).  The buckets come in 2^HA_LS_SEG_BITS segments of 16384, one per
 * 64 MiB of address space (modulo their number), so that the blocks of
 * different glibc arenas tend to fall in different segments.  The table
 * is 8 MiB of address space, of which a session touches a page per bucket
 * it uses.
 */
#ifndef HA_AGENT_LIVESET_H
#define HA_AGENT_LIVESET_H

#include <stddef.h>
#include <stdint.h>

#include "tls.h"

#define HA_LS_SEG_BITS 3
#define HA_LS_SEG_SHIFT 26
#define HA_LS_BUCKET_BITS 17
#define HA_LS_WAYS 8 /* words per bucket: one unused and 7 addresses */
#define HA_LS_FIRST_WAY 1
#define HA_LS_PAGE_SHIFT 12
#define HA_LS_PAGE_SLOTS (1u << 17) /* bytes of the filter: 512 MiB of pages */
#define HA_LS_COUNT_STUCK 255       /* a saturated count: never lowered */

/* Static (no pointer to load on every free), page-aligned (ha_ls_clear
 * gives its pages back); a page of it never written costs no memory where
 * the kernel maps the zero page for a read. */
extern HA_HIDDEN uint8_t ha_ls_filter[HA_LS_PAGE_SLOTS];
/* (1 << HA_LS_BUCKET_BITS) buckets of HA_LS_WAYS words; NULL until the
 * first session (ha_ls_setup).  Never unmapped: a free hook may read it at
 * any time, even long after a session. */
extern HA_HIDDEN uint64_t *ha_ls_table;

/* The set's bucket of p (the slow path's only: the free hook looks at the
 * filter).  Blocks of one size class sit at a fixed stride; the top bits
 * of the 64-bit product of the address with 2^64/phi (Fibonacci hashing)
 * spread arithmetic progressions over the buckets, though not all strides
 * evenly (agent/liveset_test.c measures every stride from 16 B to 1 MiB
 * for full buckets). */
static inline uint32_t ha_ls_bucket(const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	enum { IN_SEG_BITS = HA_LS_BUCKET_BITS - HA_LS_SEG_BITS };
	uint32_t in_seg = (uint32_t)((a * 0x9e3779b97f4a7c15ull) >> (64 - IN_SEG_BITS));
	/* the segment's bits moved straight to the top of the index */
	uint32_t seg = (uint32_t)(a >> (HA_LS_SEG_SHIFT - IN_SEG_BITS)) &
	               (((1u << HA_LS_SEG_BITS) - 1) << IN_SEG_BITS);
	return seg | in_seg;
}

/* The filter's count for p's page. */
static inline uint8_t *ha_ls_count_of(const void *p)
{
	return &ha_ls_filter[((uintptr_t)p >> HA_LS_PAGE_SHIFT) & (HA_LS_PAGE_SLOTS - 1)];
}

/* On every free: keep it short (every instruction shows in a 10 ns
 * malloc+free).  Could p be a live sampled block?  (False positives
 * allowed, never false negatives while a session is active.) */
static inline int ha_ls_maybe(const void *p)
{
	return __atomic_load_n(ha_ls_count_of(p), __ATOMIC_RELAXED) != 0;
}

/* A block on p's page entered (+1) or left (-1) the set.  A CAS loop, so
 * that a saturated count stays (see above). */
static inline void ha_ls_count_move(const void *p, int by)
{
	uint8_t *c = ha_ls_count_of(p);
	uint8_t old = __atomic_load_n(c, __ATOMIC_RELAXED);
	while (old != HA_LS_COUNT_STUCK && (by > 0 || old > 0) &&
	       !__atomic_compare_exchange_n(c, &old, (uint8_t)(old + by), 1, __ATOMIC_SEQ_CST,
	                                    __ATOMIC_RELAXED))
		;
}

/* Add p (ha_ls_table set up).  1, or 0 if its bucket is full (not
 * counted: the filter counts what the set holds).  Two locked operations:
 * the way, then the page's count. */
static inline int ha_ls_insert(const void *p)
{
	uint32_t b = ha_ls_bucket(p);
	uint64_t *way = ha_ls_table + (size_t)b * HA_LS_WAYS;
	/* Fill first, count after: the block is in its way before a free can
	 * find the count. */
	for (int i = HA_LS_FIRST_WAY; i < HA_LS_WAYS; i++) {
		uint64_t expect = 0;
		if (__atomic_load_n(&way[i], __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&way[i], &expect, (uint64_t)(uintptr_t)p, 0,
		                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			ha_ls_count_move(p, +1);
			return 1;
		}
	}
	return 0;
}

/* Read-only look-up: is p in the set?  What a free the filter let through
 * does first, so that a false positive of the filter (another block of
 * the page was sampled) costs one cache line read, not the shared
 * in-flight count. */
static inline int ha_ls_contains(const void *p)
{
	if (!ha_ls_table)
		return 0;
	const uint64_t *way = ha_ls_table + (size_t)ha_ls_bucket(p) * HA_LS_WAYS;
	for (int i = HA_LS_FIRST_WAY; i < HA_LS_WAYS; i++)
		if (__atomic_load_n(&way[i], __ATOMIC_RELAXED) == (uint64_t)(uintptr_t)p)
			return 1;
	return 0;
}

/* Remove p (ha_ls_table set up).  1 if it was there. */
static inline int ha_ls_remove(const void *p)
{
	uint32_t b = ha_ls_bucket(p);
	uint64_t *way = ha_ls_table + (size_t)b * HA_LS_WAYS;
	for (int i = HA_LS_FIRST_WAY; i < HA_LS_WAYS; i++) {
		uint64_t expect = (uint64_t)(uintptr_t)p;
		if (__atomic_load_n(&way[i], __ATOMIC_RELAXED) == expect &&
		    __atomic_compare_exchange_n(&way[i], &expect, 0, 0, __ATOMIC_SEQ_CST,
		                                __ATOMIC_RELAXED)) {
			ha_ls_count_move(p, -1);
			return 1;
		}
	}
	return 0;
}

/* Map the table if not yet (agent thread, no session active).  0, or -1
 * (no live set: a session then samples nothing). */
HA_HIDDEN int ha_ls_setup(void);

/* Empty the set and the filter (no session active; in a fork() child too:
 * no allocation, no lock). */
HA_HIDDEN void ha_ls_clear(void);

#endif /* HA_AGENT_LIVESET_H */
