/*
 * sampler.h -- Poisson sampling of allocations inside the target
 * (sampler.c): the countdown (draws in countdown.h), stack capture, the
 * sample and free records, and the in-flight count that lets a session
 * stop.  Which sampled blocks are still live is liveset.h's, so that only
 * their frees leave the process.
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
#include "tls.h"

struct ha_sampler_cfg {
	struct ha_ring_hdr *ring;  /* the first ring (ha_ring_map's base) */
	uint64_t data_size;        /* each ring's */
	uint32_t rings;            /* how many (ha_proto.h, section 4) */
	uint64_t interval;      /* mean bytes between samples; 1 = every call */
	uint32_t stack_bytes;   /* cap of each stack copy */
	int block;              /* wait when the ring is full */
	struct ha_py_walk py;   /* the target's CPython (pywalk.h) */
};

/* Account size bytes; nonzero when this allocation is to be sampled. */
static inline int ha_sampler_due(size_t size)
{
	ha_ts.countdown -= (int64_t)size;
	return __builtin_expect(ha_ts.countdown < 0, 0) != 0;
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

/* A session may write to the ring right now. */
HA_HIDDEN int ha_sampler_active(void);

/* The first ring's header, held as a record is (ha_sampler_stop waits
 * until it is released): NULL outside a session.  For the park (hooks.c). */
HA_HIDDEN struct ha_ring_hdr *ha_sampler_hold(void);
HA_HIDDEN void ha_sampler_release(void);

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

/* The program is about to take [addr, addr + len) away (munmap, mmap
 * MAP_FIXED, mremap: the hooks ask ha_sampler_ring_overlaps first): if that
 * is the ring's, ha_sampler_ring_taken stops every write to it before the
 * call is made (the session is over: the agent thread ends it, and must not
 * unmap what the program now owns).  ha_sampler_ring_lost: what the
 * program did to the ring (enum ha_ring_taken), and for HA_RING_TAKEN_ONCE
 * the part it took in [*lo, *hi). */
enum ha_ring_taken {
	HA_RING_OURS,            /* nothing: the ring is ours */
	HA_RING_TAKEN_ONCE,      /* one call took [lo, hi) of it */
	HA_RING_TAKEN_MORE,      /* more than one (or the one being recorded) */
};
HA_HIDDEN int ha_sampler_ring_overlaps(const void *addr, size_t len);
HA_HIDDEN void ha_sampler_ring_taken(const void *addr, size_t len);
HA_HIDDEN int ha_sampler_ring_lost(uintptr_t *lo, uintptr_t *hi);

/* In a fork()ed child: stop at once, without waiting (async-signal-safe). */
HA_HIDDEN void ha_sampler_fork_child(void);

/* Samples taken and sampled frees sent in this session. */
HA_HIDDEN void ha_sampler_counters(uint64_t *samples, uint64_t *frees, uint64_t *untracked);

#endif /* HA_AGENT_SAMPLER_H */
