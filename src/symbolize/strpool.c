/* strpool.c -- interned strings (see strpool.h): packed end to end in an
 * arena of 64 KiB chunks that are never moved (arena.h), and a hash table
 * (hashtab.h) of the strings in them. */
#include "strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;       /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static uint64_t str_hash(const void *ctx, const void *slot)
{
	const char *s = *(const char *const *)slot;
	(void)ctx;
	return hash_str(s, strlen(s));
}

static inline int str_eq(const void *ctx, const void *slot, const void *key)
{
	(void)ctx;
	return strcmp(*(const char *const *)slot, key) == 0;
}

static const struct ha_ht_type str_type = {
	.size = sizeof(const char *), .first_cap = 1024, .hash = str_hash, .eq = str_eq,
};

const char *ha_strpool_intern(struct ha_strpool *p, const char *s)
{
	size_t len;
	uint64_t h;
	const char **slot;
	char *d;

	if (!s || !*s)
		return "";
	len = strlen(s);
	if (ha_ht_fit(&p->tab, &str_type, NULL) < 0)
		return "";
	h = hash_str(s, len);
	slot = ha_ht_find(&p->tab, &str_type, NULL, h, s);
	const char *found = *slot;
	if (found)
		return found;
	d = ha_arena_alloc(&p->mem, len + 1);
	if (!d)
		return "";
	memcpy(d, s, len + 1);
	slot = ha_ht_add(&p->tab, &str_type, NULL, h, slot); /* room made above */
	*slot = d;
	return d;
}

void ha_strpool_free(struct ha_strpool *p)
{
	ha_arena_free(&p->mem);
	ha_ht_free(&p->tab);
	memset(p, 0, sizeof *p);
}
