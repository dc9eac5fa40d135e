/* mem_pin.c -- the pinned bytes of each page charged to the sampled blocks
 * on it (mem_pin.h).  The walk gives, for each resident page with pinned
 * free bytes, those bytes and the bytes of chunks in use on the page (all
 * of them, sampled or not); a sampled block holding k of the page's in-use
 * bytes is charged pinned x k / in_use of it, times its weight. */
#include "mem_pin.h"

#include <stdlib.h>
#include <string.h>

#define PG 4096ULL
#define BUCKETS_MAX (1u << 24)

/* The first page at or after addr's page. */
static size_t first_page(const struct ha_mem_pin_acc *a, uint64_t addr)
{
	uint64_t p = addr & ~(PG - 1);
	size_t lo = 0, hi = a->npages;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->pages[mid].page < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int grow(struct ha_mem_pin_acc *a, uint32_t bucket)
{
	if (bucket < a->cap)
		return 0;
	if (bucket >= BUCKETS_MAX)
		return -1;
	size_t cap = a->cap ? a->cap : 1024;
	while (cap <= bucket)
		cap *= 2;
	double *b = realloc(a->bytes, cap * sizeof *b);
	if (b)
		a->bytes = b;
	double *c = b ? realloc(a->blocks, cap * sizeof *c) : NULL;
	if (!c) {
		a->oom = 1;
		return -1;
	}
	a->blocks = c;
	memset(a->bytes + a->cap, 0, (cap - a->cap) * sizeof *b);
	memset(a->blocks + a->cap, 0, (cap - a->cap) * sizeof *c);
	a->cap = cap;
	return 0;
}

void ha_mem_pin_block(struct ha_mem_pin_acc *a, uint64_t addr, uint64_t size, double weight,
                      uint32_t bucket)
{
	if (!a->npages || size == 0 || addr + size < addr || a->oom)
		return;
	double charge = 0;
	uint64_t end = addr + size;
	for (size_t i = first_page(a, addr); i < a->npages && a->pages[i].page < end; i++) {
		const struct ha_mem_pin_page *p = &a->pages[i];
		uint64_t s = addr > p->page ? addr : p->page;
		uint64_t e = end < p->page + PG ? end : p->page + PG;
		if (e > s && p->in_use)
			charge += (double)p->pinned * (double)(e - s) / (double)p->in_use;
	}
	if (charge <= 0 || grow(a, bucket) != 0)
		return;
	a->bytes[bucket] += weight * charge;
	a->blocks[bucket] += weight;
}

size_t ha_mem_pin_take(struct ha_mem_pin_acc *a, struct ha_mem_pin **out)
{
	size_t n = 0;
	*out = NULL;
	for (size_t k = 0; k < a->cap; k++)
		n += a->bytes[k] > 0;
	if (n && !a->oom)
		*out = malloc(n * sizeof **out);
	n = 0;
	for (size_t k = 0; *out && k < a->cap; k++)
		if (a->bytes[k] > 0)
			(*out)[n++] = (struct ha_mem_pin){ (uint32_t)k, a->bytes[k], a->blocks[k] };
	free(a->bytes);
	free(a->blocks);
	memset(a, 0, sizeof *a);
	return n;
}
