/* strpool.c -- interned strings (see strpool.h): chunks of 64 KiB that are
 * never moved, and a hash table (hashtab.h) of the strings in them. */
#include "strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

static uint64_t hash_str(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;       /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static char *pool_alloc(struct ha_strpool *p, size_t len)
{
	struct chunk *c = p->chunks;
	if (!c || c->cap - c->used < len) {
		size_t cap = len > 65536 ? len : 65536;
		c = malloc(sizeof *c + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = p->chunks;
		p->chunks = c;
	}
	c->used += len;
	return c->data + c->used - len;
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
	d = pool_alloc(p, len + 1);
	if (!d)
		return "";
	memcpy(d, s, len + 1);
	slot = ha_ht_add(&p->tab, &str_type, NULL, h, slot); /* room made above */
	*slot = d;
	return d;
}

void ha_strpool_free(struct ha_strpool *p)
{
	while (p->chunks) {
		struct chunk *c = p->chunks;
		p->chunks = c->next;
		free(c);
	}
	ha_ht_free(&p->tab);
	memset(p, 0, sizeof *p);
}
