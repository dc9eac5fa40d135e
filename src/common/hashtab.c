/* hashtab.c -- the table's allocation and growth (see hashtab.h: the
 * contract, and the probing, addition and deletion, inline there). */
#include "hashtab.h"

#include <stdlib.h>

const unsigned char ha_ht_none[HA_HT_SLOT_MAX];

void ha_ht_init(struct ha_hashtab *t)
{
	t->slots = NULL;
	t->mask = t->cap = t->n = 0;
}

void ha_ht_free(struct ha_hashtab *t)
{
	free(t->slots);
	ha_ht_init(t);
}

void ha_ht_clear(struct ha_hashtab *t, const struct ha_ht_type *ty)
{
	if (t->cap)
		memset(t->slots, 0, t->cap * ty->size);
	t->n = 0;
}

/* Move every filled slot of t into a new array of cap slots, in the order
 * of the old array. */
static int rehash(struct ha_hashtab *t, const struct ha_ht_type *ty, const void *ctx, size_t cap)
{
	if (ty->size == 0 || ty->size > HA_HT_SLOT_MAX || cap < 4 || (cap & (cap - 1)) ||
	    cap > SIZE_MAX / ty->size)
		return -1;
	struct ha_hashtab nt = { calloc(cap, ty->size), cap - 1, cap, t->n };
	if (!nt.slots)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		const void *s = ha_ht_slot(t, ty, i);
		if (!ha_ht_empty(ty, s))
			memcpy(ha_ht_hole(&nt, ty, ty->hash(ctx, s)), s, ty->size);
	}
	free(t->slots);
	*t = nt;
	return 0;
}

int ha_ht_alloc(struct ha_hashtab *t, const struct ha_ht_type *ty)
{
	return t->cap ? 0 : rehash(t, ty, NULL, ty->first_cap);
}

int ha_ht_fit(struct ha_hashtab *t, const struct ha_ht_type *ty, const void *ctx)
{
	size_t load = ty->load >= 1 && ty->load <= 3 ? ty->load : 2; /* never full */
	if (t->n + 1 <= (t->cap >> 2) * load)
		return 0;
	if (!t->cap)
		return rehash(t, ty, ctx, ty->first_cap) ? -1 : 1;
	if (t->cap > SIZE_MAX / 2)
		return -1;
	return rehash(t, ty, ctx, t->cap * 2) ? -1 : 1;
}
