/* arena.c -- see arena.h: chunks in a list, the newest first; a piece is
 * cut from the newest chunk or starts a new one (the rest of the old one
 * is left: pieces are small next to a chunk).  Chunks start 16-byte
 * aligned, and every piece is rounded up to the alignment. */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>

#define ARENA_ALIGN 16
#define ARENA_DEFAULT_CHUNK 65536

struct ha_arena_chunk {
	struct ha_arena_chunk *next;
	size_t used, cap;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

void ha_arena_init(struct ha_arena *a, size_t chunk_bytes, size_t align)
{
	a->head = NULL;
	a->chunk = chunk_bytes ? chunk_bytes : ARENA_DEFAULT_CHUNK;
	a->align = align && align <= ARENA_ALIGN && !(align & (align - 1)) ? align : ARENA_ALIGN;
}

void *ha_arena_alloc(struct ha_arena *a, size_t n)
{
	if (n > SIZE_MAX - ARENA_ALIGN - sizeof(struct ha_arena_chunk))
		return NULL;
	size_t align = a->align ? a->align : 1;
	size_t chunk = a->chunk ? a->chunk : ARENA_DEFAULT_CHUNK;
	n = (n + align - 1) & ~(align - 1);
	struct ha_arena_chunk *k = a->head;
	if (!k || k->cap - k->used < n) {
		size_t cap = n > chunk ? n : chunk;
		k = malloc(sizeof *k + cap);
		if (!k)
			return NULL;
		k->cap = cap;
		k->used = 0;
		k->next = a->head;
		a->head = k;
	}
	k->used += n;
	return k->data + k->used - n;
}

void ha_arena_free(struct ha_arena *a)
{
	for (struct ha_arena_chunk *k = a->head, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	a->head = NULL;
}
