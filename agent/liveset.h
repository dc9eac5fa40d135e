/*
 * liveset.h -- the set of sampled blocks still live, and its free filter
 * (liveset.c holds the storage).
 *
 * The set answers one question on every free: "could this address be a
 * sampled block?".  The filter gives the cheap negative answer (one hash,
 * one load); only when it says maybe does the free look at the set itself.
 * Nothing here locks or allocates; the functions below are inline because
 * the sampler's record path and the free hook use them (sampler.c,
 * hooks.c): keep their inlining as it is.
 *
 * The free filter: one bit per live-set bucket, set while a sampled block
 * may hash there.  A bit per bucket keeps the lines a heap's frees look at
 * in the L1 cache next to the allocator's own data (a byte per bucket, four
 * times as many lines, made the filter load the costliest instruction of
 * the free hook).  Each 64-bit word holds 32 buckets' bits in its low half
 * and a version in its high half that every change bumps, so that clearing
 * a bit can never undo a concurrent set (see ha_ls_filter_clear_if_empty).
 *
 * The buckets come in 2^HA_LS_SEG_BITS segments of 16384, one per 64 MiB of
 * address space (modulo their number): glibc gives each thread an arena of
 * its own (until there are 8 per core) made of 64 MiB-aligned heaps, so the
 * blocks of different threads tend to hash into different segments.  A
 * sample's write to the filter then does not take away the line another
 * core's frees keep reading (at 64 KiB intervals that miss cost more than
 * the rest of the sampling), and a thread's frees look at 64 lines of the
 * filter, not all.  The live set's table is 8 MiB of address space, of
 * which a session touches a page per bucket it uses.
 *
 * A bucket is one cache line of HA_LS_WAYS words: words 1.. hold the
 * addresses (word 0 is unused: it counted the entries once, a locked
 * operation of every sample that the ways themselves make needless; the
 * filter's bit is derived from them).  One line: a sample and the free of
 * a sampled block each move one line of the set between cores, not two.  A block whose bucket is
 * full is not tracked (ha_ls_insert returns 0; the sampler counts it as
 * untracked, a drop).
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
#define HA_LS_FILTER_WORDS ((1u << HA_LS_BUCKET_BITS) / 32)
#define HA_LS_FIRST_WAY 1
#define HA_LS_FILTER_VERSION (1ull << 32)

extern HA_HIDDEN uint64_t ha_ls_filter[HA_LS_FILTER_WORDS];
/* (1 << HA_LS_BUCKET_BITS) buckets of HA_LS_WAYS words; NULL until the
 * first session (ha_ls_setup).  Never unmapped: a free hook may read it at
 * any time, even long after a session. */
extern HA_HIDDEN uint64_t *ha_ls_table;

/* On every free: keep it short (every instruction shows in a 13 ns
 * malloc+free).  Blocks of one size class sit at a fixed stride; the top
 * bits of the 64-bit product of the address with 2^64/phi (Fibonacci
 * hashing) spread arithmetic progressions over the buckets, though not
 * all strides evenly (tests/liveset_check.c measures every stride from
 * 16 B to 1 MiB; the 32-bit product of the low half, one instruction
 * shorter, let 1 MiB strides pile up to 38% false positives).  Four
 * instructions fewer on the free hook than the same product of the
 * address at 64-byte granularity it replaced (measured alone, in one A/B:
 * the hooks alone went from 0.835 to 0.863 of the unhooked speed); the
 * granularity bought nothing there, since a thread's frees touch all of
 * its segment's filter lines either way. */
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

/* Could p be a live sampled block?  (False positives allowed, never false
 * negatives while a session is active.) */
static inline int ha_ls_maybe(const void *p)
{
	uint32_t b = ha_ls_bucket(p);
	uint32_t bits = (uint32_t)__atomic_load_n(&ha_ls_filter[b >> 5], __ATOMIC_RELAXED);
	return ((bits >> (b & 31)) & 1) != 0;
}

/* Bucket b holds an entry: set its bit (the version moves even when the
 * bit was set already: see ha_ls_filter_clear_if_empty). */
static inline void ha_ls_filter_set(uint32_t b)
{
	uint64_t *w = &ha_ls_filter[b >> 5];
	uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(w, &old, (old | 1ull << (b & 31)) + HA_LS_FILTER_VERSION, 1,
	                                    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

/* Does bucket b hold an entry?  Its ways, one cache line. */
static inline int ha_ls_bucket_used(uint32_t b)
{
	const uint64_t *way = ha_ls_table + (size_t)b * HA_LS_WAYS;
	uint64_t any = 0;
	for (int i = HA_LS_FIRST_WAY; i < HA_LS_WAYS; i++)
		any |= __atomic_load_n(&way[i], __ATOMIC_SEQ_CST);
	return any != 0;
}

/* Bucket b may have become empty: clear its bit unless it holds an entry.
 * Why a concurrent insert is never undone: the inserter fills its way
 * before its CAS on the filter word; a clear succeeds only with the word
 * value loaded after that CAS (the version moved), and the ways are read
 * after that load, so they show the entry and the bit stays.  Out of line
 * (the rare path of a remove). */
__attribute__((noinline, unused)) static void ha_ls_filter_clear_if_empty(uint32_t b)
{
	uint64_t *w = &ha_ls_filter[b >> 5];
	uint64_t old = __atomic_load_n(w, __ATOMIC_SEQ_CST);
	for (;;) {
		if (ha_ls_bucket_used(b))
			return;
		if (__atomic_compare_exchange_n(w, &old, (old & ~(1ull << (b & 31))) + HA_LS_FILTER_VERSION,
		                                0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return;
	}
}

/* Add p (ha_ls_table set up).  1, or 0 if its bucket is full.  Two locked
 * operations: the way, then the filter word (a count of the bucket's
 * entries first, as there used to be, was a third on every sample). */
static inline int ha_ls_insert(const void *p)
{
	uint32_t b = ha_ls_bucket(p);
	uint64_t *way = ha_ls_table + (size_t)b * HA_LS_WAYS;
	/* Fill first, filter bit after: the block is in its way before a free
	 * can find the bit. */
	for (int i = HA_LS_FIRST_WAY; i < HA_LS_WAYS; i++) {
		uint64_t expect = 0;
		if (__atomic_load_n(&way[i], __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&way[i], &expect, (uint64_t)(uintptr_t)p, 0,
		                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			ha_ls_filter_set(b);
			return 1;
		}
	}
	return 0;
}

/* Read-only look-up: is p in the set?  What a free the filter let through
 * does first, so that a false positive of the filter (many live samples in
 * a big heap make them common) costs one cache line read, not the shared
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
			if (!ha_ls_bucket_used(b))
				ha_ls_filter_clear_if_empty(b);
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
