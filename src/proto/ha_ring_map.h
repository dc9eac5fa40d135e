/*
 * ha_ring_map.h -- map and unmap the shared ring memfd with the layout of
 * ha_proto.h: rings units one after the other in the file, each mapped as
 * its header page and table, then its data area twice back to back.  Used
 * by the agent and the attacher alike, so the mapping is written once.
 * Only system calls: safe to use in the agent.
 */
#ifndef HA_RING_MAP_H
#define HA_RING_MAP_H

#include <stdint.h>
#include <sys/mman.h>
#include "ha_proto.h"

/* Virtual size of the mapping of one ring whose data area is data_size
 * (also the distance between two rings in a mapping). */
static inline size_t ha_ring_map_len(uint64_t data_size)
{
	return (size_t)HA_RING_HDR_SIZE + 2 * (size_t)data_size;
}

/* ...and of all rings of a memfd. */
static inline size_t ha_rings_map_len(uint64_t data_size, uint32_t rings)
{
	return (size_t)rings * ha_ring_map_len(data_size);
}

/* Size of the memfd that holds rings rings of data_size. */
static inline uint64_t ha_rings_file_size(uint64_t data_size, uint32_t rings)
{
	return (uint64_t)rings * (HA_RING_HDR_SIZE + data_size);
}

/* Ring i of a mapping made by ha_ring_map. */
static inline struct ha_ring_hdr *ha_ring_at(void *base, uint64_t data_size, uint32_t i)
{
	return (struct ha_ring_hdr *)((char *)base + (size_t)i * ha_ring_map_len(data_size));
}

/* The drops of all rings of a mapping (each counts its own). */
static inline uint64_t ha_rings_drops(void *base, uint64_t data_size, uint32_t rings)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < rings; i++)
		n += __atomic_load_n(&ha_ring_at(base, data_size, i)->drops, __ATOMIC_RELAXED);
	return n;
}

/* Map the memfd fd (ha_rings_file_size bytes long).  Returns the base (the
 * first ring's header) or MAP_FAILED.  data_size and rings must pass
 * ha_ring_size_ok and ha_rings_ok, and data_size be a multiple of the page
 * size; the caller checks that first. */
static inline void *ha_ring_map(int fd, uint64_t data_size, uint32_t rings)
{
	size_t len = ha_rings_map_len(data_size, rings);
	char *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return MAP_FAILED;
	for (uint32_t i = 0; i < rings; i++) {
		char *r = (char *)ha_ring_at(base, data_size, i);
		off_t off = (off_t)(i * (HA_RING_HDR_SIZE + data_size));
		if (mmap(r, HA_RING_HDR_SIZE + data_size, PROT_READ | PROT_WRITE,
		         MAP_SHARED | MAP_FIXED, fd, off) == MAP_FAILED ||
		    mmap(r + HA_RING_HDR_SIZE + data_size, data_size, PROT_READ | PROT_WRITE,
		         MAP_SHARED | MAP_FIXED, fd, off + HA_RING_HDR_SIZE) == MAP_FAILED) {
			munmap(base, len);
			return MAP_FAILED;
		}
	}
	return base;
}

static inline void ha_ring_unmap(void *base, uint64_t data_size, uint32_t rings)
{
	if (base && base != MAP_FAILED)
		munmap(base, ha_rings_map_len(data_size, rings));
}

/* Is data_size acceptable?  (Power of two, page multiple, 64 KiB..1 GiB.) */
static inline int ha_ring_size_ok(uint64_t data_size)
{
	return data_size >= (64u << 10) && data_size <= (1ull << 30) &&
	       (data_size & (data_size - 1)) == 0;
}

/* Is a count of rings acceptable?  (A power of two, 1..HA_RINGS_MAX.) */
static inline int ha_rings_ok(uint64_t rings)
{
	return rings >= 1 && rings <= HA_RINGS_MAX && (rings & (rings - 1)) == 0;
}

#endif /* HA_RING_MAP_H */
