/* mem_view.h -- where the target's RssAnon goes (issue 41): at a snapshot,
 * RssAnon (smaps_rollup's Anonymous) broken down into the terms of
 * mem_terms.h, from /proc/PID/smaps (each mapping's Anonymous), the
 * allocator's own view (mem_glibc.h: its arenas walked, their free
 * memory's resident pages from pagemap) and the live blocks sampled since
 * attach (handed in by the caller, the collector's book).  The terms add up
 * to RssAnon by construction; what no term explains is `unexplained`. */
#ifndef HA_MEM_VIEW_H
#define HA_MEM_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mem_alloc.h"
#include "mem_cpus.h"
#include "mem_glibc.h"
#include "mem_pin.h"
#include "mem_terms.h"

/* The live sampled blocks of kind heap: live calls each(ctx, addr, size,
 * sample weight, the caller's bucket of its call path) once per block. */
typedef void (*ha_mem_each_fn)(void *ctx, uint64_t addr, uint64_t size, double weight,
                               uint32_t bucket);
typedef void (*ha_mem_live_fn)(void *arg, ha_mem_each_fn each, void *ctx);

struct ha_mem_view {
	uint64_t rss_anon;             /* smaps_rollup's Anonymous */
	int64_t terms[HA_MT_COUNT];    /* bytes; they add up to rss_anon */
	char allocator[160];           /* "glibc", or "unknown (...)": no arena read */
	struct ha_mem_arena *arenas;   /* malloc'ed; main arena first */
	size_t narenas;
	struct ha_mem_pin *pins;       /* malloc'ed: the pinned bytes charged by bucket */
	size_t npins;                  /* (mem_pin.h; none without live) */
	struct ha_mem_cpus cpus;       /* the CPUs it may use (the arena hint) */
	uint64_t cost_ns;              /* the whole reading */
	uint64_t walk_ns;              /* ...of which the arenas' walk */
	int alloc_kind;                /* another allocator's figures used (enum
	                                * ha_alloc_kind; NONE: none) */
	uint64_t alloc_ns;             /* their reading's agent-thread CPU time */
	size_t alloc_arenas;           /* arenas[] of theirs (jemalloc's), after glibc's */
};

/* Read it now.  alloc: another allocator's figures, read by the agent at
 * this snapshot (mem_alloc.h), or NULL.  0, or -1 when the target cannot
 * be read (gone): then *out is empty.  An allocator that cannot be read is
 * said in out->allocator, and the other terms are kept. */
int ha_mem_view_read(pid_t pid, ha_mem_live_fn live, void *live_arg,
                     const struct ha_mem_alloc *alloc, struct ha_mem_view *out);
void ha_mem_view_free(struct ha_mem_view *v);

#endif
