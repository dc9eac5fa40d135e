/* strpool.c -- interned strings (see strpool.h): chunks of 64 KiB that are
 * never moved, and an open-addressing table of the strings in them. */
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

static int pool_grow(struct ha_strpool *p)
{
	size_t ncap = p->cap ? p->cap * 2 : 1024;
	const char **ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return -1;
	for (size_t i = 0; i < p->cap; i++) {
		const char *s = p->slots[i];
		if (!s)
			continue;
		size_t j = hash_str(s, strlen(s)) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = s;
	}
	free(p->slots);
	p->slots = ns;
	p->cap = ncap;
	return 0;
}

const char *ha_strpool_intern(struct ha_strpool *p, const char *s)
{
	size_t len, j;
	char *d;

	if (!s || !*s)
		return "";
	len = strlen(s);
	if ((p->n + 1) * 2 > p->cap && pool_grow(p) != 0)
		return "";
	j = hash_str(s, len) & (p->cap - 1);
	while (p->slots[j]) {
		if (strcmp(p->slots[j], s) == 0)
			return p->slots[j];
		j = (j + 1) & (p->cap - 1);
	}
	d = pool_alloc(p, len + 1);
	if (!d)
		return "";
	memcpy(d, s, len + 1);
	p->slots[j] = d;
	p->n++;
	return d;
}

void ha_strpool_free(struct ha_strpool *p)
{
	while (p->chunks) {
		struct chunk *c = p->chunks;
		p->chunks = c->next;
		free(c);
	}
	free(p->slots);
	memset(p, 0, sizeof *p);
}
