/* mem_alloc.h -- another allocator's own figures (jemalloc, tcmalloc,
 * mimalloc), as the agent read them on its thread at a snapshot (ha_proto.h,
 * ALLOC_STATS; agent/alloc_stats.c), checked here, and how they map onto
 * the terms of RssAnon's breakdown (mem_view.c).  Everything in them came
 * from the target: each figure is bounded before it is kept. */
#ifndef HA_MEM_ALLOC_H
#define HA_MEM_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "ha_proto.h"
#include "mem_glibc.h"
#include "mem_terms.h"

/* Any byte figure above this (128 TiB, the x86-64 user address space) is
 * not believed. */
#define HA_ALLOC_BYTES_MAX (1ULL << 47)

struct ha_mem_je_arena {
	uint32_t index, threads;
	uint64_t active, allocated, dirty, muzzy;
};

struct ha_mem_alloc {
	int kind;                    /* enum ha_alloc_kind; NONE: nothing read */
	uint32_t have;               /* bit i: v[i] was read */
	uint64_t v[HA_ALLOC_VALUES]; /* HA_J_*, HA_T_*, HA_M_* (ha_proto.h) */
	uint32_t narenas;            /* jemalloc's arenas.narenas */
	size_t nsent;                /* arenas[] filled (the busy ones, at most 64) */
	struct ha_mem_je_arena arenas[HA_ALLOC_ARENAS_MAX];
	uint64_t ns;                 /* the reading's agent-thread CPU time */
};

/* The parts of one answer (ha_session_alloc_stats) into *a: 0, or -1 with
 * why (a figure out of bounds; then a->kind is NONE). */
int ha_mem_alloc_take(struct ha_mem_alloc *a, const struct ha_msg *parts, size_t n, char *why,
                      size_t whylen);

/* Its figures as terms, added to terms[] (live_heap_* with `sampled`, the
 * sampled live heap bytes outside glibc's heaps), and the bytes they claim
 * taken from terms[HA_MT_OTHER_ANON] (where an allocator's own mappings
 * fall), never below 0: a claim beyond what is there shows as a negative
 * unexplained.  name gets the allocator's line: what is read, what not. */
void ha_mem_alloc_terms(const struct ha_mem_alloc *a, double sampled, int64_t *terms, char *name,
                        size_t namelen);

/* jemalloc's arenas as rows of the arena table (is_main 0, heaps its
 * threads, addr its index, system/resident active+dirty+muzzy, in_use
 * allocated, free_bins dirty, top muzzy, trimmable dirty+muzzy, pinned
 * active-allocated).  Returns rows written, at most max. */
size_t ha_mem_alloc_arenas(const struct ha_mem_alloc *a, struct ha_mem_arena *rows, size_t max);

/* "jemalloc", "tcmalloc", "mimalloc", or NULL. */
const char *ha_mem_alloc_name(int kind);

#endif
