/* sref_check.c -- the check of a live stack against the published stack
 * references (see sref_check.h). */
#include "sref_check.h"

#include <string.h>

/* A published stack reference that holds for this thread's stack at lo
 * (len bytes up to its outermost frame, the frame pointer rbp): its slot
 * and seq, or 0 (see struct ha_sref: the entry is the attacher's, read as
 * a seqlock, and bounded here before any word of the stack is read).
 * Only while in flight: the table lives in the ring's mapping. */
int ha_sref_find(const struct ha_ring_hdr *ring, uint64_t lo, uint64_t len, uint64_t rbp,
                 struct ha_rec_sref *out)
{
	const struct ha_sref *tab = (const struct ha_sref *)((const char *)ring + HA_SREF_OFF);
	uint16_t gen = (uint16_t)__atomic_load_n(&ring->modules_gen, __ATOMIC_RELAXED);
	uint32_t group = ha_sref_group(len);
	for (uint32_t slot = group; slot < group + HA_SREF_WAYS; slot++) {
		const struct ha_sref *e = &tab[slot];
		uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if (!seq || (seq & 1) || __atomic_load_n(&e->len, __ATOMIC_RELAXED) != len ||
		    __atomic_load_n(&e->gen, __ATOMIC_RELAXED) != gen)
			continue;
		uint32_t n = __atomic_load_n(&e->nchk, __ATOMIC_RELAXED);
		uint8_t low = __atomic_load_n(&e->rsp_low, __ATOMIC_RELAXED);
		if (n > HA_SREF_CHECKS || len < 8 || (low != 0xff && (lo & 7) != low) ||
		    (__atomic_load_n(&e->uses_rbp, __ATOMIC_RELAXED) &&
		     rbp - lo != __atomic_load_n(&e->rbp_rel, __ATOMIC_RELAXED)))
			continue;
		uint32_t k;
		for (k = 0; k < n; k++) {
			uint32_t off = __atomic_load_n(&e->chk[k].off, __ATOMIC_RELAXED);
			if (off > len - 8)
				break;
			uint64_t w;
			memcpy(&w, (const char *)(uintptr_t)lo + off, sizeof w);
			if (__atomic_load_n(&e->chk[k].rel, __ATOMIC_RELAXED))
				w -= lo;
			if (w != __atomic_load_n(&e->chk[k].val, __ATOMIC_RELAXED))
				break;
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (k == n && __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq) {
			out->slot = slot;
			out->seq = seq;
			return 1;
		}
	}
	return 0;
}
