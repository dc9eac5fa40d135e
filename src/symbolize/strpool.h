/* strpool.h -- a pool of interned strings: each distinct string is stored
 * once and its address stays valid until the pool is freed, so callers
 * compare and keep names by pointer.  Owned by one thread (the
 * symbolizer's). */
#ifndef HA_STRPOOL_H
#define HA_STRPOOL_H

#include <stddef.h>
#include "arena.h"
#include "hashtab.h"

struct ha_strpool {
	struct ha_arena mem;     /* the strings, packed (zeroed: ready) */
	struct ha_hashtab tab;   /* the strings: slots are const char *, NULL = free */
};

/* The interned copy of s: never NULL ("" for NULL, "" or out of memory). */
const char *ha_strpool_intern(struct ha_strpool *p, const char *s);
/* Free every string; the pool is empty (and usable) again. */
void ha_strpool_free(struct ha_strpool *p);

#endif
