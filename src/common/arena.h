/*
 * arena.h -- memory handed out in pieces that are never moved or freed one
 * by one, only all at once: interned strings (src/symbolize/strpool.c),
 * heapdiff's frames and stacks (src/report/stack_cache.c).
 *
 * Pieces are aligned as the arena was told (1 for strings packed end to
 * end, 16 for structures).  A piece larger than the arena's chunk size
 * gets a chunk of its own.  Not thread-safe: an arena belongs to one
 * thread, as everything else does.
 */
#ifndef HA_ARENA_H
#define HA_ARENA_H

#include <stddef.h>

struct ha_arena_chunk;

struct ha_arena {
	struct ha_arena_chunk *head; /* the chunk pieces come from; older ones after it */
	size_t chunk;                /* bytes a new chunk holds, at least */
	size_t align;                /* a power of two, at most 16 */
};

/* An empty arena whose chunks hold chunk_bytes (0: 64 KiB), its pieces
 * aligned to align (1, 2, 4, 8 or 16).  A zeroed struct ha_arena is an
 * empty one of 64 KiB chunks and pieces packed end to end (align 1). */
void ha_arena_init(struct ha_arena *a, size_t chunk_bytes, size_t align);

/* n bytes, aligned, kept until ha_arena_free; NULL when out of
 * memory (the arena is unchanged). */
void *ha_arena_alloc(struct ha_arena *a, size_t n);

/* Every chunk given back; the arena is empty and may be used again. */
void ha_arena_free(struct ha_arena *a);

#endif
