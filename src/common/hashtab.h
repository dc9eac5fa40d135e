/* hashtab.h -- the one open-addressing hash table of the attacher and of
 * heapdiff (book.c's callstacks and live blocks, rss_pages.c's pages,
 * strpool.c, symbolize.c's pc cache, db_write.c's stack and module caches,
 * report_util.c's hd_map, live_funcs.c's functions).
 *
 * What it is: an array of slots with linear probing, configured by a type
 * (struct ha_ht_type, as Redis's dict by its dictType): the size of a slot,
 * the hash of the key a slot holds and the equality of a slot and a key.
 * A slot is the caller's own struct: most tables keep in it the number of
 * an entry of their own dense array (index + 1, a uint32_t), and compare
 * keys through that array; a few keep the whole entry in the slot (book.c's
 * live blocks, the pc cache), where one cache line holds key and value.
 * The table never looks inside a slot except through the type.
 *
 * The contract:
 *   - A slot of all zero bytes is empty; a slot the caller fills must not
 *     be (an entry number counts from 1, an address is not 0, ...).
 *   - The caller owns the keys and whatever a slot points to: the table
 *     copies slots around (grow, delete) and frees only its slot array.
 *     type->hash must give, for a filled slot, the hash its key was looked
 *     up and added with: a slot moves by it.
 *   - ha_ht_find gives the slot holding the key, or the empty slot ending
 *     its chain; ha_ht_add turns that empty slot into a filled one (it may
 *     grow the table first and then gives the key's empty slot in the new
 *     array).  Any grow or delete moves slots: a slot pointer is good only
 *     until the next ha_ht_add, ha_ht_fit or ha_ht_delete.
 *   - Deletion is backward-shift (no tombstones): later slots of the chain
 *     move back into the hole, so every other key stays findable.  The
 *     entry numbers inside slots never change: a caller whose dense array
 *     moves its last entry into a freed place finds that entry's slot by
 *     its key and rewrites the number (rss_pages.c forget()).
 *   - The table grows by doubling when an addition would take it past
 *     type->load quarters full (2: half, the default), from type->first_cap
 *     slots; sizes are checked (no overflow); out of memory is returned
 *     (-1 / NULL) and the table stays as it was, valid and usable.
 *   - One thread at a time; no locking.
 *
 * Why open addressing with linear probing: the hot tables (the attacher's
 * per-sample callstack intern and live-block lookup) want one cache miss a
 * lookup, and a slot of 4 or 32 bytes in one flat array gives that without
 * a pointer per entry; deletions are rare or cheap enough (backward shift)
 * that tombstones are not needed.
 *
 * Speed: ha_ht_find, ha_ht_add and ha_ht_delete are static inline; given
 * a pointer to a static const type, the compiler folds the type's size and
 * inlines its hash and eq as if the caller had written the loop itself
 * (declare eq `static inline`: GCC then inlines it into the probe loop).
 * The same table layout as each table had before: the home slot of hash h
 * is h & (cap - 1), so iteration order (hd_map_free) is what it was. */
#ifndef HA_HASHTAB_H
#define HA_HASHTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct ha_ht_type {
	size_t size;             /* bytes a slot (at most HA_HT_SLOT_MAX) */
	size_t first_cap;        /* slots at the first addition: a power of two >= 4 */
	unsigned load;           /* grow past load / 4 full: 2 or 3 (0 = 2) */
	/* The hash of the key in a filled slot. */
	uint64_t (*hash)(const void *ctx, const void *slot);
	/* Does the filled slot hold key (the caller's own key type)? */
	int (*eq)(const void *ctx, const void *slot, const void *key);
	/* Optional: is the slot filled (one field's test, cheaper than
	 * comparing the whole slot with zero bytes)?  An empty slot is all
	 * zero bytes either way. */
	int (*used)(const void *slot);
};

#define HA_HT_SLOT_MAX 64

struct ha_hashtab {
	void *slots;             /* cap slots; NULL while cap = 0 */
	size_t mask;             /* cap - 1, 0 while cap = 0 */
	size_t cap, n;           /* slots, filled slots */
};

/* What ha_ht_find gives while a table has no slots: one empty slot,
 * read-only (ha_ht_add replaces it). */
extern const unsigned char ha_ht_none[HA_HT_SLOT_MAX];

/* An empty table (no allocation until the first addition); a table of
 * zero bytes (calloc) is one too. */
void ha_ht_init(struct ha_hashtab *t);
/* Free the slot array; the table is empty (and usable) again. */
void ha_ht_free(struct ha_hashtab *t);
/* Empty every slot, keeping the array (to fill it anew: ha_ht_hole and
 * ha_ht_add, which does not grow while n stays under what it was). */
void ha_ht_clear(struct ha_hashtab *t, const struct ha_ht_type *ty);
/* Allocate the first slot array now (so that an allocation failure shows
 * at creation, as it did for book.c and rss_pages.c).  0 or -1. */
int ha_ht_alloc(struct ha_hashtab *t, const struct ha_ht_type *ty);
/* Make room for one more filled slot: grow if an addition would take the
 * table past its load.  0 = there was room, 1 = it grew (slot pointers are
 * stale), -1 = out of memory (or too big), nothing changed. */
int ha_ht_fit(struct ha_hashtab *t, const struct ha_ht_type *ty, const void *ctx);

static inline void *ha_ht_slot(const struct ha_hashtab *t, const struct ha_ht_type *ty, size_t i)
{
	return (char *)t->slots + i * ty->size;
}

static inline int ha_ht_empty(const struct ha_ht_type *ty, const void *slot)
{
	return ty->used ? !ty->used(slot) : memcmp(slot, ha_ht_none, ty->size) == 0;
}

/* Ready-made eq and used for a slot that begins with its key, a uint64_t
 * that is never 0 (an address, a page number): key points to a uint64_t. */
static inline int ha_ht_u64_eq(const void *ctx, const void *slot, const void *key)
{
	uint64_t a;
	(void)ctx;
	memcpy(&a, slot, sizeof a);
	return a == *(const uint64_t *)key;
}

static inline int ha_ht_u64_used(const void *slot)
{
	uint64_t a;
	memcpy(&a, slot, sizeof a);
	return a != 0;
}

/* The first empty slot of the chain of hash h. */
static inline void *ha_ht_hole(const struct ha_hashtab *t, const struct ha_ht_type *ty, uint64_t h)
{
	if (!t->cap)
		return (void *)ha_ht_none;
	size_t i = (size_t)h & t->mask;
	while (!ha_ht_empty(ty, ha_ht_slot(t, ty, i)))
		i = (i + 1) & t->mask;
	return ha_ht_slot(t, ty, i);
}

/* The slot holding key (of hash h), or the empty slot ending its chain
 * (read-only while the table has no slots: ha_ht_add replaces it). */
static inline void *ha_ht_find(const struct ha_hashtab *t, const struct ha_ht_type *ty,
                               const void *ctx, uint64_t h, const void *key)
{
	if (!t->cap)
		return (void *)ha_ht_none;
	for (size_t i = (size_t)h & t->mask;; i = (i + 1) & t->mask) {
		void *s = ha_ht_slot(t, ty, i);
		if (ha_ht_empty(ty, s) || ty->eq(ctx, s, key))
			return s;
	}
}

/* Count hole (the empty slot ha_ht_find gave for a key of hash h) as
 * filled, growing the table first if it must; the caller then writes the
 * slot it returns (never all zero).  NULL when out of memory: nothing
 * changed. */
static inline void *ha_ht_add(struct ha_hashtab *t, const struct ha_ht_type *ty, const void *ctx,
                              uint64_t h, void *hole)
{
	int r = ha_ht_fit(t, ty, ctx);
	if (r < 0)
		return NULL;
	if (r > 0)
		hole = ha_ht_hole(t, ty, h);
	t->n++;
	return hole;
}

/* ha_ht_add for a key known not to be in the table. */
static inline void *ha_ht_add_new(struct ha_hashtab *t, const struct ha_ht_type *ty, const void *ctx,
                                  uint64_t h)
{
	return ha_ht_add(t, ty, ctx, h, ha_ht_hole(t, ty, h));
}

/* Empty the filled slot s, backward-shift style: a later slot of the chain
 * whose home is not in the gap moves back into the hole, so every other
 * key stays findable without tombstones. */
static inline void ha_ht_delete(struct ha_hashtab *t, const struct ha_ht_type *ty, const void *ctx,
                                void *s)
{
	size_t mask = t->mask, i = (size_t)((char *)s - (char *)t->slots) / ty->size;
	for (size_t j = (i + 1) & mask; !ha_ht_empty(ty, ha_ht_slot(t, ty, j)); j = (j + 1) & mask) {
		size_t home = (size_t)ty->hash(ctx, ha_ht_slot(t, ty, j)) & mask;
		/* Move j into the hole at i if its home is not in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			memcpy(ha_ht_slot(t, ty, i), ha_ht_slot(t, ty, j), ty->size);
			i = j;
		}
	}
	memset(ha_ht_slot(t, ty, i), 0, ty->size);
	t->n--;
}

#endif
