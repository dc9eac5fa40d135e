/*
 * sref_check.h -- does this thread's live stack match one of the stack
 * references the attacher published in the ring's table (ha_proto.h,
 * struct ha_sref)?  Then the sample names it instead of copying the stack.
 * Read as a seqlock, bounded before any word of the stack is read; only
 * while the sample is in flight (the table lives in the ring's mapping).
 * Sits on tls; the sampler calls it.
 */
#ifndef HA_AGENT_SREF_CHECK_H
#define HA_AGENT_SREF_CHECK_H

#include <stdint.h>
#include "ha_proto.h"
#include "tls.h"

/* A published reference that holds for the stack at lo (len bytes up to
 * its outermost frame, frame pointer rbp): 1 and its slot and seq in out,
 * else 0. */
HA_HIDDEN int ha_sref_find(const struct ha_ring_hdr *ring, uint64_t lo, uint64_t len,
                           uint64_t rbp, struct ha_rec_sref *out);

#endif
