/* mem_pin.h -- which call paths pin the holes (issue 41, heapdiff --memory
 * --by-stack).  The free bytes of a resident page that also holds blocks in
 * use cannot be given back while those blocks live: they are charged to
 * the blocks on the page, each in proportion to its bytes there, as
 * tcmalloc charges a span's free space to the objects on it.  Only sampled
 * blocks are known by call path: a sampled block's charge times its sample
 * weight estimates what its call path's blocks pin (unbiased as the live
 * estimate is).  What no sampled block is charged (blocks from before
 * attach, a page holding only a free chunk's header) is the pinned total
 * minus the charges. */
#ifndef HA_MEM_PIN_H
#define HA_MEM_PIN_H

#include <stddef.h>
#include <stdint.h>

#include "mem_glibc.h"

/* The charge of one call path (a bucket of the caller's book). */
struct ha_mem_pin {
	uint32_t bucket;
	double bytes;           /* pinned bytes charged (estimate) */
	double blocks;          /* blocks charged (estimate: their weights) */
};

struct ha_mem_pin_acc {
	const struct ha_mem_pin_page *pages; /* the walk's, sorted */
	size_t npages;
	double *bytes, *blocks;              /* by bucket */
	size_t cap;
	int oom;
};

/* Charge the block [addr, addr + size) of bucket, sampled with weight. */
void ha_mem_pin_block(struct ha_mem_pin_acc *a, uint64_t addr, uint64_t size, double weight,
                      uint32_t bucket);
/* The charges, by bucket (those charged something), into *out (malloc'ed,
 * NULL when none); the accumulator is freed.  Returns the count. */
size_t ha_mem_pin_take(struct ha_mem_pin_acc *a, struct ha_mem_pin **out);

#endif
