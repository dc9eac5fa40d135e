/*
 * sampler.h -- Poisson sampling of allocations inside the target, and the
 * set of sampled blocks still live (so that only their frees leave the
 * process).
 *
 * The path that does not sample is a handful of instructions on per-thread
 * state (initial-exec TLS): subtract the size from a countdown, test the
 * sign.  A free of a block that was never sampled costs one hash and one
 * load from a small occupancy table.  Nothing on those paths locks, and
 * nothing on any path allocates outside the re-entrancy guard.
 *
 * The ring is touched only while a thread holds an "in flight" count, so
 * ha_sampler_stop() can wait until nobody writes before the ring is unmapped.
 */
#ifndef HA_AGENT_SAMPLER_H
#define HA_AGENT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "ha_proto.h"

#define HA_HIDDEN __attribute__((visibility("hidden")))

struct ha_sampler_cfg {
	struct ha_ring_hdr *ring;
	uint64_t data_size;
	uint64_t interval;      /* mean bytes between samples; 1 = every call */
	uint32_t stack_bytes;   /* cap of each stack copy */
	int block;              /* wait when the ring is full */
};

/* Per-thread sampling state.  Zero-initialised TLS is "not set up yet". */
struct ha_tstate {
	int64_t countdown;      /* bytes until the next sample */
	uint64_t rng;
	uint64_t interval;      /* the mean the countdown was drawn with */
	uint64_t seq;           /* this thread's records so far */
	uint64_t stack_lo;      /* this thread's stack: [stack_lo, stack_hi) */
	uint64_t stack_hi;      /* (hi: its outermost frame), 0 = unknown */
	uint32_t tid;
	uint32_t session;       /* the session the countdown was drawn for */
	uint64_t samples;       /* records this thread wrote: samples, frees */
	uint64_t frees;
	uint64_t flushed_ns;    /* when its counts last went to the totals */
	uint32_t slot;          /* its in-flight slot + 1 (sampler.c); 0 = none yet */
	uint32_t slot_gen;      /* the slots' generation it was claimed in */
};
/* All the agent's per-thread state in one initial-exec block: the hooks
 * reach every field through one GOT load of its offset from %fs (separate
 * variables cost one GOT load each on the path that does not sample). */
struct ha_tls {
	int in_vfork;           /* a vfork() child may be running on this thread
	                         * (set by the vfork hook, hooks.c); offset 0 */
	int depth;              /* ha_depth: inside a hook (hooks.h) */
	int guard;              /* ha_hook_guard: inside our own sampling code */
	int dlopen_depth;       /* inside the dlopen hook */
	struct ha_tstate ts;
	uint64_t calls[6];      /* this thread's calls, by counter class (hooks.c) */
	uint64_t flushed[6];    /* ...of which already added to the shared totals */
};
extern HA_HIDDEN __thread struct ha_tls ha_tls __attribute__((tls_model("initial-exec")));
#define ha_ts (ha_tls.ts)
#define ha_depth (ha_tls.depth)
#define ha_hook_guard (ha_tls.guard)

/* The free filter: one bit per live-set bucket, set while a sampled block
 * may hash there -- the cheap negative answer for frees.  A bit per bucket
 * keeps the lines a heap's frees look at in the L1 cache next to the
 * allocator's own data (a byte per bucket, four times as many lines, made
 * the filter load the costliest instruction of the free hook).  Each
 * 64-bit word holds 32 buckets' bits in its low half and a version in its
 * high half that every change bumps, so that clearing a bit can never
 * undo a concurrent set (see filter_clear_if_empty in sampler.c).
 *
 * The buckets come in 2^HA_LS_SEG_BITS segments of 16384, one per 64 MiB of
 * address space (modulo their number): glibc gives each thread an arena of
 * its own (until there are 8 per core) made of 64 MiB-aligned heaps, so
 * the blocks of different threads tend to hash into different segments.
 * A sample's write to the filter then does not take away the line another
 * core's frees keep reading (at 64 KiB intervals that miss cost more than
 * the rest of the sampling: MALLOC_BENCH_AB 0.60 -> 0.67; 512 KiB 0.814 ->
 * 0.831), and a thread's frees look at 64 lines of the filter, not all.
 * The live set's table is 8 MiB of address space, of which a session
 * touches a page per bucket it uses. */
#define HA_LS_SEG_BITS 3
#define HA_LS_SEG_SHIFT 26
#define HA_LS_BUCKET_BITS 17
#define HA_LS_WAYS 8 /* words per bucket: a count and 7 addresses */
#define HA_LS_FILTER_WORDS ((1u << HA_LS_BUCKET_BITS) / 32)
extern HA_HIDDEN uint64_t ha_ls_filter[HA_LS_FILTER_WORDS];

/* On every free: keep it short.  The address is taken at 64-byte
 * granularity: neighbouring small blocks share a bucket (its ways absorb
 * them: sampled blocks are sparse), so a heap's frees look at fewer
 * filter lines.  Blocks of one size class sit at a fixed stride; the top
 * bits of a product with 2^64/phi (Fibonacci hashing) spread arithmetic
 * progressions over the buckets, though not all strides evenly: with 8192
 * buckets per segment, blocks 1008 bytes apart (malloc(1000)) used a ninth
 * of them (t_profile_shlib lost 14% of its blocks to full buckets); with
 * 16384, of the strides from 16 bytes to 1 MiB we simulated (5000 blocks
 * each) one crowded into a fifth of the buckets and 4% of its blocks found
 * theirs full, no other overflowed.  A shift-xor before the multiply
 * spreads them all evenly but cost 2% of the speed of the free hook
 * (MALLOC_BENCH_AB without sampling: 0.877 -> 0.855): every instruction
 * here shows in a 13 ns malloc+free.  (This hash replaced two shift-xor
 * folds and a mask: 0.853 -> 0.875.) */
static inline uint32_t ha_ls_bucket(const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	enum { IN_SEG_BITS = HA_LS_BUCKET_BITS - HA_LS_SEG_BITS };
	uint32_t in_seg = (uint32_t)(((a >> 6) * 0x9e3779b97f4a7c15ull) >> (64 - IN_SEG_BITS));
	uint32_t seg = (uint32_t)(a >> HA_LS_SEG_SHIFT) & ((1u << HA_LS_SEG_BITS) - 1);
	return seg << IN_SEG_BITS | in_seg;
}

/* Could p be a live sampled block?  (False positives allowed, never false
 * negatives while a session is active.) */
static inline int ha_ls_maybe(const void *p)
{
	uint32_t b = ha_ls_bucket(p);
	uint32_t bits = (uint32_t)__atomic_load_n(&ha_ls_filter[b >> 5], __ATOMIC_RELAXED);
	return (bits >> (b & 31)) & 1;
}

/* Account size bytes; nonzero when this allocation is to be sampled. */
static inline int ha_sampler_due(size_t size)
{
	ha_ts.countdown -= (int64_t)size;
	return __builtin_expect(ha_ts.countdown < 0, 0);
}

/* The allocation that made the countdown run out: record it (or, outside a
 * session or inside the guard, just draw a new countdown).  errno is kept. */
HA_HIDDEN void ha_sample_alloc(void *p, size_t size, enum ha_alloc_func fn, unsigned kind);

/* A mapping (kind HA_REC_KIND_MMAP) was sampled in this session: munmap
 * then has to look for sampled mappings inside the range it unmaps. */
extern HA_HIDDEN uint32_t ha_mmap_seen;
static inline int ha_sampler_mmap_seen(void)
{
	return __atomic_load_n(&ha_mmap_seen, __ATOMIC_RELAXED) != 0;
}

/* Add this thread's call counts to the shared totals (hooks.c).  Called on
 * the sampling path, never on the fast path. */
HA_HIDDEN void ha_hooks_flush_counts(void);

/* A session may write to the ring right now. */
HA_HIDDEN int ha_sampler_active(void);

/* We are not a vfork() child running on this thread's stack and TLS (the
 * vfork hook marks the thread; no system call). */
static inline int ha_sampler_same_process(void)
{
	return !__atomic_load_n(&ha_tls.in_vfork, __ATOMIC_RELAXED);
}

/* p, for which ha_ls_maybe() said yes, is being freed or moved: if it was a
 * live sampled block, send its free.  Call before the real free. */
HA_HIDDEN void ha_sample_free(void *p);

/* Tell the attacher that the set of loaded modules changed (a record of
 * type HA_REC_MODULES), so that it reads the maps again before it unwinds
 * the samples that follow.  No-op outside a session. */
HA_HIDDEN void ha_sampler_note_modules(void);

/* Start a session (the ring is mapped, hooks not yet installed). */
HA_HIDDEN void ha_sampler_start(const struct ha_sampler_cfg *cfg);
/* Stop: no thread writes to the ring after this returns; the live set is
 * emptied.  Call after the hooks are restored, before unmapping the ring. */
HA_HIDDEN void ha_sampler_stop(void);

/* In a fork()ed child: stop at once, without waiting (async-signal-safe). */
HA_HIDDEN void ha_sampler_fork_child(void);

/* Samples taken and sampled frees sent in this session. */
HA_HIDDEN void ha_sampler_counters(uint64_t *samples, uint64_t *frees, uint64_t *untracked);

#endif /* HA_AGENT_SAMPLER_H */
