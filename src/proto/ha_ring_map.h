/*
 * ha_ring_map.h -- map and unmap the shared ring memfd with the layout of
 * ha_proto.h (header page, then the data area mapped twice back to back).
 * Used by the agent and the attacher alike, so the mapping is written once.
 * Only system calls: safe to use in the agent.
 */
#ifndef HA_RING_MAP_H
#define HA_RING_MAP_H

#include <stdint.h>
#include <sys/mman.h>
#include "ha_proto.h"

/* Total virtual size of a mapping of a ring whose data area is data_size. */
static inline size_t ha_ring_map_len(uint64_t data_size)
{
	return (size_t)HA_RING_HDR_SIZE + 2 * (size_t)data_size;
}

/* Map the memfd fd (HA_RING_HDR_SIZE + data_size bytes long).  Returns the
 * base (the header) or MAP_FAILED.  data_size must be a power of two and a
 * multiple of the page size; the caller checks that first. */
static inline void *ha_ring_map(int fd, uint64_t data_size)
{
	size_t len = ha_ring_map_len(data_size);
	char *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return MAP_FAILED;
	if (mmap(base, HA_RING_HDR_SIZE + data_size, PROT_READ | PROT_WRITE,
	         MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
	    mmap(base + HA_RING_HDR_SIZE + data_size, data_size, PROT_READ | PROT_WRITE,
	         MAP_SHARED | MAP_FIXED, fd, HA_RING_HDR_SIZE) == MAP_FAILED) {
		munmap(base, len);
		return MAP_FAILED;
	}
	return base;
}

static inline void ha_ring_unmap(void *base, uint64_t data_size)
{
	if (base && base != MAP_FAILED)
		munmap(base, ha_ring_map_len(data_size));
}

/* Is data_size acceptable?  (Power of two, page multiple, 64 KiB..1 GiB.) */
static inline int ha_ring_size_ok(uint64_t data_size)
{
	return data_size >= (64u << 10) && data_size <= (1ull << 30) &&
	       (data_size & (data_size - 1)) == 0;
}

#endif /* HA_RING_MAP_H */
